/* UTC ISO 8601 times with nanoseconds (wall_time.h). */
#include "wall_time.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

char *st__put_utc_ns(char *p, int64_t wall_ns)
{
    int64_t sec = wall_ns / 1000000000, ns = wall_ns % 1000000000;
    struct tm tm;
    time_t t;
    char buf[ST__UTC_ROOM];

    if (ns < 0) { /* before the epoch: the fraction counts up from the second before */
        ns += 1000000000;
        sec--;
    }
    t = (time_t)sec;
    if (!gmtime_r(&t, &tm))
        memset(&tm, 0, sizeof tm);
    int n = snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)ns);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof buf)
        n = (int)sizeof buf - 1;
    memcpy(p, buf, (size_t)n);
    return p + n;
}
