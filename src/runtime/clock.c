/*
 * Timestamps. Trace files carry CLOCK_MONOTONIC nanoseconds (the format and
 * QEMU say so); the question is only who pays for reading that clock.
 *
 * Mode "monotonic": the hot path calls clock_gettime(CLOCK_MONOTONIC) (a
 * vDSO call, ~15-25 ns) and stores ns; conversion is the identity.
 *
 * Mode "tsc" (default on x86-64 when /proc/cpuinfo lists both constant_tsc
 * and nonstop_tsc, i.e. the TSC ticks at a fixed rate in every C-state and
 * is synchronised across cores): the hot path stores the raw rdtsc value
 * (~7 ns) and the writeout thread converts it when it writes the record.
 *
 * Conversion is piecewise linear between anchors, pairs (raw, ns) sampled
 * by the writeout thread at a pass when the previous anchor is at least
 * 1 ms old (shorter segments measure the rate too coarsely; a pass inside
 * that window keeps extrapolating the current segment):
 *
 *        ns ^                         b        record raw >= a.raw:
 *           |                 ____----*           line through a and b
 *           |        a  ___---   slope_cur        (extrapolated past b)
 *           |   ___--*                         record raw < a.raw:
 *           |--- slope_prev                       line through a with
 *           +--------------------------> raw      the older slope
 *
 * The slopes are kept as 64-bit fixed-point multipliers (ST_CLOCK_SHIFT
 * bits of fraction, error under 1 ns for deltas up to 2^41 ticks), so the
 * per-record conversion is one 64x64->128-bit multiply, inline in clock.h.
 *
 * So a timestamp is exact at anchors, the function is continuous and
 * increasing, and records produced while the file was off (older than a)
 * still land near the right time. Because a record may be converted with
 * a newer segment than an earlier record of the same thread, the writer
 * also clamps each thread's timestamps to be non-decreasing (writer.c).
 *
 * A sample pair is the best of five (rdtsc, clock_gettime, rdtsc) reads,
 * taking the midpoint of the tightest bracket, which keeps its error to a
 * few tens of ns. An anchor whose sample was disturbed (preempted) or that
 * implies a rate change no real clock makes is skipped, so one bad sample
 * cannot bend a segment. The first segment runs from the anchor taken at
 * start-up to the writer's first pass (the writer sleeps out the rest of
 * 1 ms if needed, once per process).
 */
#include "runtime/clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int st__clock_use_tsc;

static bool tsc_available;
static struct st_clock_anchor start_anchor; /* taken at st__clock_init */

#define MIN_SEGMENT_NS UINT64_C(1000000)

/* True when the first "flags" line of /proc/cpuinfo has both words. */
static bool cpuinfo_has_invariant_tsc(void)
{
    FILE *f = fopen("/proc/cpuinfo", "re");
    char *line = NULL;
    size_t cap = 0;
    bool constant = false, nonstop = false;

    if (!f)
        return false;
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        for (char *save = NULL, *w = strtok_r(line, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
            constant |= strcmp(w, "constant_tsc") == 0;
            nonstop |= strcmp(w, "nonstop_tsc") == 0;
        }
        break;
    }
    free(line);
    fclose(f);
    return constant && nonstop;
}

/*
 * A (raw TSC, monotonic ns) pair taken as close together as we can: the
 * tightest of a few (rdtsc, clock_gettime, rdtsc) brackets. *gap gets that
 * bracket's width in ticks (large when every try was preempted).
 */
static struct st_clock_anchor sample_pair(uint64_t *gap)
{
    struct st_clock_anchor best = {0, 0};
#if defined(__x86_64__)
    uint64_t best_gap = UINT64_MAX;

    for (int i = 0; i < 5; i++) {
        uint64_t t1 = __builtin_ia32_rdtsc();
        uint64_t ns = st__clock_mono_ns();
        uint64_t t2 = __builtin_ia32_rdtsc();
        if (t2 - t1 < best_gap) {
            best_gap = t2 - t1;
            best.raw = t1 + (t2 - t1) / 2;
            best.ns = ns;
        }
    }
    *gap = best_gap;
#else
    best.ns = st__clock_mono_ns();
    best.raw = best.ns;
    *gap = 0;
#endif
    return best;
}

void st__clock_init(void)
{
    uint64_t gap;

#if defined(__x86_64__)
    tsc_available = cpuinfo_has_invariant_tsc();
#endif
    __atomic_store_n(&st__clock_use_tsc, tsc_available, __ATOMIC_RELAXED);
    start_anchor = sample_pair(&gap);
}

struct st_clock_anchor st__clock_start_anchor(void)
{
    return start_anchor;
}

struct st_clock_anchor st__clock_sample(void)
{
    uint64_t gap;
    return sample_pair(&gap);
}

bool st__clock_tsc_available(void)
{
    return tsc_available;
}

bool st__clock_is_tsc(void)
{
    return __atomic_load_n(&st__clock_use_tsc, __ATOMIC_RELAXED) != 0;
}

void st__clock_set_tsc(bool tsc)
{
    __atomic_store_n(&st__clock_use_tsc, tsc && tsc_available, __ATOMIC_RELAXED);
}

/* A slope in ns per tick as the fixed-point multiplier st__clock_conv() uses. */
static uint64_t slope_mult(double slope)
{
    return (uint64_t)(slope * (double)((uint64_t)1 << ST_CLOCK_SHIFT) + 0.5);
}

/* Precomputes what st__clock_conv() needs from the slopes. */
static void conv_fix(struct st_clock_conv *cv)
{
    cv->mult_cur = slope_mult(cv->slope_cur);
    cv->mult_prev = slope_mult(cv->slope_prev);
    cv->tsc = cv->ready;
}

static double slope_between(struct st_clock_anchor a, struct st_clock_anchor b)
{
    if (b.raw <= a.raw || b.ns <= a.ns)
        return 0.0;
    return (double)(b.ns - a.ns) / (double)(b.raw - a.raw);
}

/* First segment: from the start-up anchor to now, at least 1 ms long. */
static void conv_start(struct st_clock_conv *cv)
{
    uint64_t gap;
    struct st_clock_anchor s = sample_pair(&gap);

    if (s.ns - start_anchor.ns < MIN_SEGMENT_NS) {
        uint64_t left = MIN_SEGMENT_NS - (s.ns - start_anchor.ns);
        struct timespec ts = {0, (long)left};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        s = sample_pair(&gap);
    }
    cv->a = start_anchor;
    cv->b = s;
    cv->slope_cur = slope_between(cv->a, cv->b);
    if (cv->slope_cur <= 0.0) /* TSC did not move: cannot happen with an invariant TSC */
        cv->slope_cur = 1.0;
    cv->slope_prev = cv->slope_cur;
    cv->rejected = 0;
    cv->ready = true;
    conv_fix(cv);
}

/*
 * A new anchor is refused when its sample was disturbed (bracket wider than
 * MAX_GAP_NS) or when the rate it implies differs from the current one by
 * more than MAX_RATE_CHANGE: an invariant TSC and CLOCK_MONOTONIC (slewed by
 * at most 500 ppm) never do that, a preempted sample does. After a few
 * refusals in a row the new rate is believed (the old one was the bad one).
 */
#define MAX_GAP_NS 20000.0
#define MAX_RATE_CHANGE 0.002
#define MAX_REJECTS 3

void st__clock_conv_update(struct st_clock_conv *cv)
{
    struct st_clock_anchor s;
    uint64_t gap;
    double slope;

    if (!st__clock_is_tsc()) {
        cv->tsc = false; /* raw values are ns already */
        return;
    }
    if (!cv->ready) {
        conv_start(cv);
        return;
    }
    cv->tsc = true; /* back from clock=monotonic: the anchors still hold */
    s = sample_pair(&gap);
    if (s.ns - cv->b.ns < MIN_SEGMENT_NS || (double)gap * cv->slope_cur > MAX_GAP_NS)
        return;
    slope = slope_between(cv->b, s);
    if (slope <= 0.0)
        return;
    if ((slope > cv->slope_cur * (1 + MAX_RATE_CHANGE) || slope < cv->slope_cur * (1 - MAX_RATE_CHANGE)) &&
        ++cv->rejected < MAX_REJECTS)
        return;
    cv->rejected = 0;
    cv->a = cv->b;
    cv->b = s;
    cv->slope_prev = cv->slope_cur;
    cv->slope_cur = slope;
    conv_fix(cv);
}
