/*
 * Timestamps: what the hot path stores (raw) and how the writeout thread
 * turns it into CLOCK_MONOTONIC nanoseconds. See clock.c for the design.
 */
#ifndef ST_RUNTIME_CLOCK_H
#define ST_RUNTIME_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/*
 * Non-zero when the hot path stores raw TSC values. Changed only while no
 * thread buffer exists (buffer.c), so no record ever mixes the two kinds;
 * relaxed atomics only keep the writeout thread's reads race-free.
 */
extern int st__clock_use_tsc;

/* CLOCK_MONOTONIC now, in ns. */
static inline uint64_t st__clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* The raw timestamp the hot path stores in a record. */
static inline uint64_t st__clock_raw(void)
{
#if defined(__x86_64__)
    if (__builtin_expect(__atomic_load_n(&st__clock_use_tsc, __ATOMIC_RELAXED), 1))
        return __builtin_ia32_rdtsc();
#endif
    return st__clock_mono_ns();
}

/*
 * The clock the fast path of st__simple_begin() reads without testing the
 * mode: the TSC on x86-64, clock_gettime elsewhere. A buffer created in the
 * other mode sends every event to the slow path, which uses st__clock_raw().
 */
#if defined(__x86_64__)
#define ST_CLOCK_FAST_IS_TSC true
static inline uint64_t st__clock_raw_fast(void)
{
    return __builtin_ia32_rdtsc();
}
#else
#define ST_CLOCK_FAST_IS_TSC false
static inline uint64_t st__clock_raw_fast(void)
{
    return st__clock_mono_ns();
}
#endif

/* Detects an invariant TSC and takes the first anchor. Called by st__init. */
void st__clock_init(void);

/* True when this machine has an invariant TSC the runtime can use. */
bool st__clock_tsc_available(void);

/* Current mode: true = TSC. */
bool st__clock_is_tsc(void);

/* Switches mode; only legal while no thread buffer exists (buffer.c checks). */
void st__clock_set_tsc(bool tsc);

/* One (raw, ns) sample pair. */
struct st_clock_anchor {
    uint64_t raw;
    uint64_t ns;
};

/* Bits of fraction in the fixed-point slopes (see st__clock_conv). */
#define ST_CLOCK_SHIFT 40

/*
 * Conversion state, owned by its user (the writeout thread; the monitor
 * keeps its own). Two anchors a (older) and b (newer); slope_cur = ns per
 * raw tick between them, slope_prev of the segment that ended at a. The
 * mult fields are the same slopes in fixed point (<< ST_CLOCK_SHIFT), which
 * is what st__clock_conv() uses. Zero-initialised it converts nothing
 * (identity) until st__clock_conv_update() takes anchors.
 */
struct st_clock_conv {
    struct st_clock_anchor a, b;
    double slope_prev, slope_cur;
    uint64_t mult_prev, mult_cur;
    unsigned rejected; /* anchors refused in a row (see clock.c) */
    bool ready;        /* anchors taken */
    bool tsc;          /* raw values are TSC ticks and ready: convert them */
};

/* The anchor taken at start-up, and a fresh (raw, ns) sample (crash.c). */
struct st_clock_anchor st__clock_start_anchor(void);
struct st_clock_anchor st__clock_sample(void);

/* Samples a new anchor if the last one is at least 1 ms old (per pass). */
void st__clock_conv_update(struct st_clock_conv *cv);

/*
 * Converts a raw timestamp to CLOCK_MONOTONIC ns. Inline: the writer calls
 * it once per record. ns = a.ns + (raw - a.raw) * slope, in 64x64->128-bit
 * fixed point, with the older slope for raw values before a.
 */
static inline uint64_t st__clock_conv(const struct st_clock_conv *cv, uint64_t raw)
{
    if (!cv->tsc)
        return raw;
#if defined(__SIZEOF_INT128__)
    {
        __extension__ typedef unsigned __int128 u128;
        uint64_t d = raw - cv->a.raw, off;

        if ((int64_t)d >= 0)
            return cv->a.ns + (uint64_t)(((u128)d * cv->mult_cur) >> ST_CLOCK_SHIFT);
        off = (uint64_t)(((u128)(0 - d) * cv->mult_prev) >> ST_CLOCK_SHIFT);
        return off > cv->a.ns ? 0 : cv->a.ns - off;
    }
#else
    {
        /* Deltas stay small (seconds of ticks), so the double keeps them exact. */
        int64_t d = (int64_t)(raw - cv->a.raw);
        double off = (double)d * (d >= 0 ? cv->slope_cur : cv->slope_prev);

        if (off < 0 && (uint64_t)(-off) > cv->a.ns)
            return 0;
        return (uint64_t)((int64_t)cv->a.ns + (int64_t)off);
    }
#endif
}

#endif /* ST_RUNTIME_CLOCK_H */
