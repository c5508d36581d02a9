/* Durations as people read them: "850 ns", "12.500 us", "3.210 ms", "1.500 s". */
#ifndef ST_COMMON_DURATION_H
#define ST_COMMON_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* Writes ns (negative too) into buf with the largest unit below it, 3 decimals; returns buf. */
const char *st__duration_text(char *buf, size_t len, int64_t ns);

#endif /* ST_COMMON_DURATION_H */
