/*
 * Timestamps for the function tracer: a cheap raw counter read on the hot
 * path, converted later (by whoever writes the records out) to the
 * CLOCK_MONOTONIC nanoseconds uftrace expects.
 *
 * Two sources, chosen once at start-up (st__ftclock_choose):
 * - TSC (x86-64 only): used when CPUID reports an invariant TSC and the
 *   kernel has not rejected the TSC as a clocksource. `rdtsc` costs a
 *   fraction of a vDSO clock_gettime. Raw values are ticks.
 * - CLOCK_MONOTONIC via clock_gettime everywhere else (or when forced with
 *   SIMPLETRACE_FUNC_CLOCK=monotonic). Raw values are already nanoseconds.
 *
 * Conversion (TSC only) is piecewise linear between knots: (tick, ns) pairs
 * sampled together, one at start-up and one per write-out pass. A raw value
 * between two knots is interpolated, so it is exact (to the sampling jitter,
 * tens of ns) at every knot and never drifts; no start-up calibration delay
 * is needed. Records are converted after the knot that follows them was
 * sampled, except stragglers committed during a pass, which use the nearest
 * segment extrapolated; callers clamp per thread so a file's times never go
 * backwards (see writer.c).
 *
 * Invariants: knots are strictly increasing in ticks and non-decreasing in
 * ns; the mapping is monotonic in the raw value.
 */
#ifndef ST_FUNCTRACE_FT_CLOCK_H
#define ST_FUNCTRACE_FT_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#ifndef ST__NI
#define ST__NI __attribute__((no_instrument_function))
#endif

/* CLOCK_MONOTONIC in ns; out of line so the hooks' TSC path stays small. */
uint64_t st__ftclock_mono_ns(void);

/* Raw timestamp: ticks when use_tsc, else CLOCK_MONOTONIC ns. */
static inline __attribute__((no_instrument_function, always_inline)) uint64_t
st__ftclock_raw(bool use_tsc)
{
#if defined(__x86_64__)
    if (__builtin_expect(use_tsc, 1))
        return __rdtsc();
#else
    (void)use_tsc;
#endif
    return st__ftclock_mono_ns();
}

/*
 * Decides the source: true for TSC. force is NULL/"" (auto), "tsc" or
 * "monotonic"; "tsc" is honoured only where rdtsc exists.
 */
bool st__ftclock_choose(const char *force);

/* One knot: a raw value and the CLOCK_MONOTONIC ns it corresponds to. */
struct st__ftclock_knot {
    uint64_t raw;
    uint64_t ns;
};

/* The conversion state: the last three knots (two segments). */
struct st__ftclock_map {
    bool use_tsc;                 /* false: raw is ns, conversion is identity */
    unsigned nknots;              /* knots held, at most 3 */
    struct st__ftclock_knot k[3];   /* oldest first */
    uint64_t mult[2];             /* ns per tick of segment k0-k1, k1-k2, 32.32 fixed point */
};

/* Samples a (raw, ns) pair as close together as it can. */
void st__ftclock_sample(bool use_tsc, struct st__ftclock_knot *out);

/* Starts a map with its first knot. */
void st__ftclock_map_init(struct st__ftclock_map *map, bool use_tsc, struct st__ftclock_knot first);

/*
 * Adds a knot later than the last one. Knots closer than min_gap_ns to the
 * previous one are ignored once the map has a segment (a short baseline
 * gives a noisy slope). Returns true when the knot was added.
 */
bool st__ftclock_map_add(struct st__ftclock_map *map, struct st__ftclock_knot knot, uint64_t min_gap_ns);

/* Converts a raw value to ns with the map (interpolating, or extrapolating
 * with the nearest segment outside the knots). */
uint64_t st__ftclock_map_ns(const struct st__ftclock_map *map, uint64_t raw);

#endif /* ST_FUNCTRACE_FT_CLOCK_H */
