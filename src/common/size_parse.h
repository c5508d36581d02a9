/*
 * Sizes as users write them: N, NK, NM or NG (binary units, case-insensitive),
 * for configuration keys and environment variables alike.
 */
#ifndef ST_COMMON_SIZE_PARSE_H
#define ST_COMMON_SIZE_PARSE_H

#include <stdint.h>

/* Parses "N[K|M|G]" into *out: 0, -EINVAL when s is not of that form, -ERANGE above max. */
int st__parse_size(const char *s, uint64_t max, uint64_t *out);

#endif /* ST_COMMON_SIZE_PARSE_H */
