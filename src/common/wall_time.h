/*
 * Wall-clock times of trace records: a trace's description pairs a
 * CLOCK_MONOTONIC and a CLOCK_REALTIME reading taken together
 * (meta_format.h), so a record's wall time is
 * anchor_real_ns + (ts - anchor_mono_ns), written as UTC ISO 8601 with
 * nanoseconds: 2026-11-24T19:36:37.123456789Z.
 */
#ifndef ST_COMMON_WALL_TIME_H
#define ST_COMMON_WALL_TIME_H

#include <stdint.h>

/* Room st__put_utc_ns() needs (a 5-digit year, a sign, scratch included). */
#define ST__UTC_ROOM 48

/* The wall time of monotonic timestamp ts, in ns since the epoch (may be negative before 1970). */
static inline int64_t st__wall_ns(uint64_t anchor_mono_ns, uint64_t anchor_real_ns, uint64_t ts)
{
    return (int64_t)(anchor_real_ns + (ts - anchor_mono_ns)); /* wraps as two's complement: ts may precede the anchor */
}

/* Writes wall_ns as "YYYY-MM-DDTHH:MM:SS.NNNNNNNNNZ" at p (room ST__UTC_ROOM); returns the end (no NUL). */
char *st__put_utc_ns(char *p, int64_t wall_ns);

#endif /* ST_COMMON_WALL_TIME_H */
