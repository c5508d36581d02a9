/*
 * Timestamps: the one clock module of the runtime, the function tracer and
 * recover. Trace files carry CLOCK_MONOTONIC nanoseconds; the question is
 * only who pays for reading that clock.
 *
 * Where the CPU has a counter that user space reads in a few ns, ticking
 * at one rate in every C-state and in step on every core, and the kernel
 * trusts it as its clocksource, a tracing thread stores the raw counter
 * value (a fraction of a clock_gettime call) and whoever writes the record
 * out converts it. The counters: x86-64's invariant TSC (rdtsc), aarch64's
 * virtual counter CNTVCT_EL0 (the ARM generic timer, which the kernel's
 * vDSO reads too; its frequency is in CNTFRQ_EL0). "tsc" in the names
 * below stands for either. Elsewhere the raw value is
 * clock_gettime(CLOCK_MONOTONIC) itself and the conversion is the identity.
 *
 * Conversion is piecewise linear between knots, (ticks, ns) pairs sampled
 * together by the converting thread at least 1 ms apart; the last
 * ST_CLOCK_KNOTS are kept:
 *
 *        ns ^                          k2        a value between two knots is on
 *           |                  ____----*           their segment, counted from the
 *           |        k1 ___----                    older knot; past the newest knot,
 *           |   ___---*                            on the newest segment (extrapolated);
 *           |--*  k0                               before the oldest, on the oldest
 *           +---------------------------> raw
 *
 * A value is always computed from the start knot of its segment, so it
 * converts to the same ns for as long as its segment is kept: two views of
 * the same records agree to the nanosecond when a knot was taken after
 * their newest record (st__clock_conv_update_past). Slopes are fixed-point
 * multipliers (ST_CLOCK_SHIFT bits of fraction, error under 1 ns for
 * deltas up to 2^41 ticks), so a conversion is one compare and one
 * 64x64->128-bit multiply, inline below, for values on the newest segment.
 *
 * A knot is the tightest of a few (counter, clock_gettime, counter)
 * brackets, taken at their midpoint. One whose bracket was wide (the thread
 * was preempted) or that implies a rate change no real clock makes (an
 * invariant counter against CLOCK_MONOTONIC, slewed by at most 500 ppm) is
 * refused, unless three in a row say so (then the old rate was the bad
 * one). The first segment is at least 1 ms long: the first update sleeps
 * out the rest if needed, once.
 */
#ifndef ST_COMMON_CLOCK_H
#define ST_COMMON_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC now, in ns. */
#if defined(__GNUC__)
__attribute__((no_instrument_function))
#endif
static inline uint64_t st__clock_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/*
 * True where st__clock_ticks() reads a CPU counter: the TSC on x86-64,
 * CNTVCT_EL0 on aarch64. ST_CLOCK_COUNTER is its name in a trace's
 * description (clock=, meta_format.h) and in clock= settings.
 */
#if defined(__x86_64__)
#define ST_CLOCK_HAVE_COUNTER 1
#define ST_CLOCK_COUNTER "tsc"
#elif defined(__aarch64__)
#define ST_CLOCK_HAVE_COUNTER 1
#define ST_CLOCK_COUNTER "cntvct"
#else
#define ST_CLOCK_HAVE_COUNTER 0
#define ST_CLOCK_COUNTER "none"
#endif

/*
 * The counter now; CLOCK_MONOTONIC ns where there is none. On aarch64 the
 * isb keeps the read after the instructions before it (a counter read may
 * otherwise be taken early, out of order even with an earlier read), as
 * the kernel's own reads do; rdtsc is ordered enough for timestamps.
 */
#if defined(__GNUC__)
__attribute__((no_instrument_function, always_inline))
#endif
static inline uint64_t st__clock_ticks(void)
{
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    uint64_t v;

    __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
    return v;
#else
    return st__clock_mono_ns();
#endif
}

/*
 * The counter's frequency as the hardware states it (aarch64: CNTFRQ_EL0,
 * set by the firmware); 0 where it states none (the TSC's is measured).
 */
uint64_t st__clock_counter_hz(void);

/*
 * True when timestamps may be counter ticks. x86-64: the kernel reports
 * constant_tsc and nonstop_tsc (else CPUID's invariant-TSC bit, when
 * /proc/cpuinfo cannot be read) and still lists the TSC among the usable
 * clocksources. aarch64: the kernel's current clocksource is the generic
 * timer (arch_sys_counter; trusted when that cannot be read) and
 * CNTFRQ_EL0 is set. Reads /proc and /sys: call it once, at start-up.
 */
bool st__clock_counter_usable(void);

/*
 * True when an explicit request (clock=cntvct) may use the counter although
 * st__clock_counter_usable() said no: on aarch64 the generic timer is
 * architecturally one counter for every core at a fixed rate, so a kernel
 * that chose another clocksource (or the x86-64 kernel under qemu-user)
 * does not make it wrong. Never for the TSC, whose rate and step the
 * kernel's doubts are about.
 */
bool st__clock_counter_forcible(void);

/* One (raw, ns) pair: a raw timestamp and the CLOCK_MONOTONIC ns it stands for. */
struct st__clock_anchor {
    uint64_t raw;
    uint64_t ns;
};

/*
 * A pair sampled now: with tsc, the tightest of a few (counter,
 * clock_gettime, counter) brackets, *gap (may be NULL) getting its width in
 * ticks; without, (ns, ns) and a gap of 0.
 */
struct st__clock_anchor st__clock_sample(bool tsc, uint64_t *gap);

/* Bits of fraction of the fixed-point slopes. */
#define ST_CLOCK_SHIFT 40

/* Knots a conversion keeps. */
#define ST_CLOCK_KNOTS 16

/*
 * Conversion state, owned by one converter at a time (see the top). A
 * zeroed one converts nothing (identity) until st__clock_conv_init().
 */
struct st__clock_conv {
    struct st__clock_anchor k[ST_CLOCK_KNOTS]; /* knots, oldest first; nknots of them */
    uint64_t mult[ST_CLOCK_KNOTS - 1];        /* ns per tick << ST_CLOCK_SHIFT of segment k[i]-k[i+1] */
    double rate;                              /* ns per tick of the newest segment (0 before there is one) */
    unsigned nknots;
    unsigned rejected;                        /* knots refused in a row */
    bool tsc;                                 /* raw values are ticks: convert them */
};

/* Starts a conversion of raw values of the given kind, with its first knot (for ticks). */
void st__clock_conv_init(struct st__clock_conv *cv, bool tsc, struct st__clock_anchor first);

/*
 * Offers a knot taken later than the last one (gap: its bracket's width in
 * ticks, 0 if unknown). True when it was taken; false when it was too close
 * to the last knot (under 1 ms, unless it is the second and force is set),
 * disturbed or implausible (see the top).
 */
bool st__clock_conv_add(struct st__clock_conv *cv, struct st__clock_anchor knot, uint64_t gap, bool force);

/*
 * Samples a knot now and offers it; the first time, it sleeps out the rest
 * of 1 ms after the first knot so the first segment is long enough. Nothing
 * for ns raw values.
 */
void st__clock_conv_update(struct st__clock_conv *cv);

/*
 * The same, making sure a knot lies after raw (the newest value about to be
 * converted), sleeping out the rest of 1 ms after the last knot if needed:
 * for views, which must convert each value as every later view will.
 */
void st__clock_conv_update_past(struct st__clock_conv *cv, uint64_t raw);

/* The segment a value older than the newest segment's start lies on (clock.c). */
unsigned st__clock_conv_segment(const struct st__clock_conv *cv, uint64_t raw);

/*
 * Converts a raw timestamp to CLOCK_MONOTONIC ns (see the top). Inline: the
 * writeout thread calls it once per record.
 */
#if defined(__GNUC__)
__attribute__((no_instrument_function))
#endif
static inline uint64_t st__clock_conv(const struct st__clock_conv *cv, uint64_t raw)
{
    __extension__ typedef unsigned __int128 st__u128;
    unsigned seg;
    struct st__clock_anchor base;
    uint64_t back;

    if (!cv->tsc)
        return raw;
    if (cv->nknots < 2)
        return cv->nknots ? cv->k[0].ns : 0; /* no rate known yet: cannot happen after an update */
    seg = cv->nknots - 2;
    if (__builtin_expect(raw < cv->k[seg].raw, 0))
        seg = st__clock_conv_segment(cv, raw);
    base = cv->k[seg];
    if (raw >= base.raw)
        return base.ns + (uint64_t)(((st__u128)(raw - base.raw) * cv->mult[seg]) >> ST_CLOCK_SHIFT);
    back = (uint64_t)(((st__u128)(base.raw - raw) * cv->mult[seg]) >> ST_CLOCK_SHIFT);
    return back > base.ns ? 0 : base.ns - back;
}

#endif /* ST_COMMON_CLOCK_H */
