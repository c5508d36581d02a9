/*
 * Clock source choice and the tick -> CLOCK_MONOTONIC conversion (see
 * clock.h for the design). Nothing here runs on the tracing hot path except
 * st__ftclock_raw(), which is inline in the header.
 */
#include "ft_clock.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

__extension__ typedef unsigned __int128 st__u128;

ST__NI __attribute__((noinline)) uint64_t st__ftclock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* True when the kernel still lists the TSC as a usable clocksource (or we
 * cannot tell); it drops it when it finds the TSCs of the CPUs out of sync. */
ST__NI static bool kernel_accepts_tsc(void)
{
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/available_clocksource", "re");
    if (!f)
        return true;
    char buf[256] = "";
    bool ok = fgets(buf, sizeof buf, f) == NULL || strstr(buf, "tsc") != NULL;
    fclose(f);
    return ok;
}

ST__NI static bool cpu_has_invariant_tsc(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return false;
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d))
        return false;
    return (d >> 8) & 1u;
#else
    return false;
#endif
}

ST__NI bool st__ftclock_choose(const char *force)
{
#if defined(__x86_64__)
    if (force && strcmp(force, "tsc") == 0)
        return true;
#endif
    if (force && strcmp(force, "monotonic") == 0)
        return false;
    return cpu_has_invariant_tsc() && kernel_accepts_tsc();
}

ST__NI void st__ftclock_sample(bool use_tsc, struct st__ftclock_knot *out)
{
    if (!use_tsc) {
        out->raw = out->ns = st__ftclock_raw(false);
        return;
    }
    /* Bracket clock_gettime between two tick reads and keep the tightest of
     * a few tries: the knot is then exact to about half that window. */
    uint64_t best_window = UINT64_MAX;
    for (int i = 0; i < 4; i++) {
        uint64_t t1 = st__ftclock_raw(true);
        uint64_t ns = st__ftclock_raw(false);
        uint64_t t2 = st__ftclock_raw(true);
        if (t2 >= t1 && t2 - t1 < best_window) {
            best_window = t2 - t1;
            out->raw = t1 + (t2 - t1) / 2;
            out->ns = ns;
        }
    }
    if (best_window == UINT64_MAX) { /* ticks went backwards: keep something sane */
        out->raw = st__ftclock_raw(true);
        out->ns = st__ftclock_raw(false);
    }
}

/* ns per tick between two knots, 32.32 fixed point. */
ST__NI static uint64_t segment_mult(struct st__ftclock_knot a, struct st__ftclock_knot b)
{
    uint64_t dt = b.raw - a.raw, dns = b.ns - a.ns;
    st__u128 m = ((st__u128)dns << 32) / dt;
    return m > UINT64_MAX ? UINT64_MAX : (uint64_t)m;
}

ST__NI void st__ftclock_map_init(struct st__ftclock_map *map, bool use_tsc, struct st__ftclock_knot first)
{
    memset(map, 0, sizeof *map);
    map->use_tsc = use_tsc;
    map->nknots = 1;
    map->k[0] = first;
}

ST__NI bool st__ftclock_map_add(struct st__ftclock_map *map, struct st__ftclock_knot knot, uint64_t min_gap_ns)
{
    if (!map->use_tsc)
        return false;
    struct st__ftclock_knot last = map->k[map->nknots - 1];
    if (knot.raw <= last.raw)
        return false;
    if (knot.ns < last.ns) /* keep the mapping monotonic whatever the samples say */
        knot.ns = last.ns;
    if (map->nknots >= 2 && knot.ns - last.ns < min_gap_ns)
        return false;
    if (map->nknots == 3) { /* drop the oldest segment */
        map->k[0] = map->k[1];
        map->k[1] = map->k[2];
        map->mult[0] = map->mult[1];
        map->nknots = 2;
    }
    /* mult[i] is the slope of the segment k[i] -> k[i+1]. */
    map->mult[map->nknots - 1] = segment_mult(map->k[map->nknots - 1], knot);
    map->k[map->nknots++] = knot;
    return true;
}

ST__NI uint64_t st__ftclock_map_ns(const struct st__ftclock_map *map, uint64_t raw)
{
    if (!map->use_tsc)
        return raw;
    if (map->nknots < 2)
        return map->k[0].ns;
    /* The segment ending at the newest knot serves everything at or after
     * its start; older values use the segment before it. */
    unsigned seg = map->nknots == 3 && raw < map->k[1].raw ? 0 : map->nknots - 2;
    struct st__ftclock_knot base = map->k[seg];
    uint64_t mult = map->mult[seg];
    if (raw >= base.raw)
        return base.ns + (uint64_t)(((st__u128)(raw - base.raw) * mult) >> 32);
    uint64_t back = (uint64_t)(((st__u128)(base.raw - raw) * mult) >> 32);
    return back > base.ns ? 0 : base.ns - back;
}
