/* "N[K|M|G]" sizes (size_parse.h). */
#include "size_parse.h"

#include <errno.h>

#if defined(__GNUC__)
__attribute__((no_instrument_function))
#endif
int st__parse_size(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t n = 0;
    unsigned shift = 0;
    int over = 0;

    if (*s < '0' || *s > '9')
        return -EINVAL;
    for (; *s >= '0' && *s <= '9'; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (n > (UINT64_MAX - d) / 10)
            over = 1;
        else
            n = n * 10 + d;
    }
    switch (*s) {
    case 'k': case 'K': shift = 10; s++; break;
    case 'm': case 'M': shift = 20; s++; break;
    case 'g': case 'G': shift = 30; s++; break;
    default: break;
    }
    if (*s)
        return -EINVAL;
    if (over || n > max >> shift)
        return -ERANGE;
    *out = n << shift;
    return 0;
}
