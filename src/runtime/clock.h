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

/*
 * Conversion state, owned by the writeout thread. Two anchors a (older) and
 * b (newer); slope_cur = ns per raw tick between them, slope_prev of the
 * segment that ended at a.
 */
struct st_clock_conv {
    struct st_clock_anchor a, b;
    double slope_prev, slope_cur;
    unsigned rejected; /* anchors refused in a row (see clock.c) */
    bool ready;
};

/* Samples a new anchor if the last one is at least 1 ms old (writer, per pass). */
void st__clock_conv_update(struct st_clock_conv *cv);

/* Converts a raw timestamp to CLOCK_MONOTONIC ns. */
uint64_t st__clock_conv(const struct st_clock_conv *cv, uint64_t raw);

#endif /* ST_RUNTIME_CLOCK_H */
