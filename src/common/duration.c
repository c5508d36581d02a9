#include "duration.h"

#include <stdio.h>

const char *st__duration_text(char *buf, size_t len, int64_t ns)
{
    const char *sign = ns < 0 ? "-" : "";
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (a < 1000)
        snprintf(buf, len, "%s%llu ns", sign, (unsigned long long)a);
    else if (a < 1000000)
        snprintf(buf, len, "%s%.3f us", sign, (double)a / 1e3);
    else if (a < 1000000000)
        snprintf(buf, len, "%s%.3f ms", sign, (double)a / 1e6);
    else
        snprintf(buf, len, "%s%.3f s", sign, (double)a / 1e9);
    return buf;
}
