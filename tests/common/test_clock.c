/*
 * The clock module (src/common/clock.h): the piecewise-linear conversion
 * driven with made-up knots, so every expectation is exact arithmetic
 * (exact at knots, the right segment for each value, determinism while a
 * segment is kept, roll-off, refused knots, force, identity for ns), then
 * the real clocks: sampling, the first update's 1 ms, update_past.
 */
#include "tap.h"

#include "clock.h"

#include <stdbool.h>

#define MS UINT64_C(1000000)

/* A knot sequence with known rates: segment i runs SEG ticks at rate[i] ns per tick. */
#define SEG UINT64_C(4000000)
#define R0 UINT64_C(1000000000)
#define N0 UINT64_C(5000000000)

static struct st__clock_anchor knot_at(uint64_t raw, uint64_t ns)
{
    return (struct st__clock_anchor){.raw = raw, .ns = ns};
}

/* |got - want| <= tol, with a diagnostic. */
static int near(uint64_t got, double want, double tol, const char *what)
{
    double d = (double)got - want;

    if (!ok(d <= tol && d >= -tol, "%s", what))
        diag("got %llu, want %.1f", (unsigned long long)got, want);
    return d <= tol && d >= -tol;
}

static void test_identity(void)
{
    struct st__clock_conv zero = {0}, ns;
    bool same = true;

    for (uint64_t v = 0; v < UINT64_C(1) << 62; v = v * 3 + 7)
        same &= st__clock_conv(&zero, v) == v;
    ok(same, "identity: a zeroed conversion returns its input");

    st__clock_conv_init(&ns, false, knot_at(123, 123));
    same = true;
    for (uint64_t v = 1; v < UINT64_C(1) << 62; v = v * 5 + 1)
        same &= st__clock_conv(&ns, v) == v;
    ok(same, "identity: raw values that are ns convert to themselves");
    ok(!st__clock_conv_add(&ns, knot_at(10 * R0, 10 * R0), 0, true), "identity: no knots are taken for ns values");
    st__clock_conv_update(&ns);
    st__clock_conv_update_past(&ns, UINT64_MAX - 1);
    is_int(ns.nknots, 1, "identity: update and update_past leave an ns conversion alone");
}

static void test_first_segment(void)
{
    struct st__clock_conv cv;

    st__clock_conv_init(&cv, true, knot_at(R0, N0));
    is_u64(st__clock_conv(&cv, R0 + 12345), N0, "one knot: no rate yet, every value is the knot's ns");
    ok(!st__clock_conv_add(&cv, knot_at(R0 - 1, N0 + 2 * MS), 0, false), "refused: a knot not later in raw");
    ok(!st__clock_conv_add(&cv, knot_at(R0 + 2 * MS, N0 + MS - 1), 0, false), "refused: 1 ns under 1 ms");
    ok(st__clock_conv_add(&cv, knot_at(R0 + MS / 2, N0 + MS / 4), 0, true),
       "force: the second knot is taken under 1 ms");
    is_int(cv.nknots, 2, "force: two knots");
    is_u64(st__clock_conv(&cv, R0 + MS / 4), N0 + MS / 8, "force: its segment is used (rate 1/2)");
    ok(!st__clock_conv_add(&cv, knot_at(R0 + MS, N0 + MS / 4 + MS / 4), 0, true),
       "force: ignored from the third knot on (under 1 ms is refused)");

    st__clock_conv_init(&cv, true, knot_at(R0, N0));
    ok(st__clock_conv_add(&cv, knot_at(R0 + 2 * MS, N0 + MS), 0, false), "exactly 1 ms: taken");
}

/*
 * Knots 0..n-1 at raw R0 + i * SEG; segment i takes seg_ns(i) ns, rates
 * alternating between 1/2 and 0.5005 ns per tick (0.1% apart: plausible,
 * taken without force; 0.5005 is not exact in fixed point).
 */
static uint64_t seg_ns(unsigned seg)
{
    return seg % 2 ? 2002000 : 2000000;
}

static double rate_of(unsigned seg)
{
    return (double)seg_ns(seg) / (double)SEG;
}

static uint64_t ns_of(unsigned i)
{
    uint64_t ns = N0;

    for (unsigned s = 0; s < i; s++)
        ns += seg_ns(s);
    return ns;
}

static void build(struct st__clock_conv *cv, unsigned n)
{
    st__clock_conv_init(cv, true, knot_at(R0, ns_of(0)));
    for (unsigned i = 1; i < n; i++)
        if (!st__clock_conv_add(cv, knot_at(R0 + i * SEG, ns_of(i)), 0, false))
            diag("knot %u refused", i);
}

static void test_knots_and_segments(void)
{
    struct st__clock_conv cv;
    bool exact = true, right = true;

    build(&cv, 11);
    is_int(cv.nknots, 11, "segments: eleven plausible knots taken");
    for (unsigned i = 0; i + 1 < cv.nknots; i++)
        exact &= st__clock_conv(&cv, R0 + i * SEG) == ns_of(i);
    ok(exact, "knots: every knot that starts a segment converts to its ns exactly");
    near(st__clock_conv(&cv, R0 + 10 * SEG), (double)ns_of(10), 1,
         "knots: the newest knot (end of a segment, rate inexact in fixed point) within 1 ns");
    /* The middle of each segment is on that segment's line: a neighbour's rate is 0.1% (1000 ns) off. */
    for (unsigned i = 0; i + 1 < cv.nknots; i++) {
        uint64_t got = st__clock_conv(&cv, R0 + i * SEG + SEG / 2);
        double want = (double)ns_of(i) + (double)seg_ns(i) / 2;
        right &= (double)got >= want - 1 && (double)got <= want + 1;
    }
    ok(right, "segments: a value between two knots is on their segment (binary search for old ones)");
    near(st__clock_conv(&cv, R0 + 12 * SEG), (double)ns_of(10) + 2 * (double)seg_ns(9), 2,
         "segments: past the newest knot, the newest segment extrapolated");
    near(st__clock_conv(&cv, R0 - SEG), (double)ns_of(0) - (double)seg_ns(0), 1,
         "segments: before the oldest knot, the oldest segment extrapolated back");
    st__clock_conv_init(&cv, true, knot_at(R0, 1000));
    st__clock_conv_add(&cv, knot_at(R0 + SEG, 1000 + SEG / 2), 0, false);
    is_u64(st__clock_conv(&cv, 0), 0, "segments: extrapolating back below 0 ns gives 0");
}

static void test_determinism(void)
{
    struct st__clock_conv cv;
    uint64_t vals[12], before[12];
    bool same = true, kept = true, mono = true;
    uint64_t prev = 0;

    build(&cv, 4);
    /* Values on every segment kept so far, strictly before the newest knot. */
    for (unsigned i = 0; i < 12; i++) {
        vals[i] = R0 + i * (3 * SEG / 12) + 977;
        before[i] = st__clock_conv(&cv, vals[i]);
    }
    for (unsigned i = 4; i < ST_CLOCK_KNOTS; i++) {
        st__clock_conv_add(&cv, knot_at(R0 + i * SEG, ns_of(i)), 0, false);
        for (unsigned j = 0; j < 12; j++)
            same &= st__clock_conv(&cv, vals[j]) == before[j];
    }
    is_int(cv.nknots, ST_CLOCK_KNOTS, "determinism: the history is full");
    ok(same, "determinism: values convert identically while their segment is kept (12 knots added)");

    /* One more knot: the oldest segment goes, its values are extrapolated back from the new oldest knot. */
    ok(st__clock_conv_add(&cv, knot_at(R0 + ST_CLOCK_KNOTS * SEG, ns_of(ST_CLOCK_KNOTS)), 0, false),
       "roll-off: a knot past a full history is taken");
    is_int(cv.nknots, ST_CLOCK_KNOTS, "roll-off: still ST_CLOCK_KNOTS knots");
    is_u64(cv.k[0].raw, R0 + SEG, "roll-off: the oldest knot went");
    is_u64(st__clock_conv(&cv, R0 + SEG), ns_of(1), "roll-off: the new oldest knot is exact");
    near(st__clock_conv(&cv, vals[1]), (double)ns_of(1) - rate_of(1) * (double)(R0 + SEG - vals[1]), 1.5,
         "roll-off: an old value is extrapolated back on the oldest kept segment");
    ok(st__clock_conv(&cv, vals[1]) != before[1], "roll-off: so it no longer converts as before (rates differ)");
    for (unsigned j = 0; j < 12; j++) {
        uint64_t ns = st__clock_conv(&cv, vals[j]);
        mono &= ns >= prev;
        prev = ns;
        if (vals[j] >= R0 + SEG)
            kept &= ns == before[j];
    }
    ok(kept, "roll-off: values on segments still kept are unchanged");
    ok(mono, "roll-off: conversion stays increasing across the old and kept segments");
}

static void test_refusals(void)
{
    struct st__clock_conv cv;
    uint64_t r, n;

    build(&cv, 3); /* rates 0.5 then 0.5005: the current rate is 0.5005 */
    r = cv.k[2].raw;
    n = cv.k[2].ns;
    ok(!st__clock_conv_add(&cv, knot_at(r + SEG, n + SEG / 2 + MS), 0, false),
       "rate: a knot implying a clock half again as fast is refused");
    ok(!st__clock_conv_add(&cv, knot_at(r + 2 * SEG, n + SEG + 2 * MS), 0, false), "rate: a second one too");
    ok(st__clock_conv_add(&cv, knot_at(r + 3 * SEG, n + 3 * SEG / 2 + 3 * MS), 0, false),
       "rate: the third in a row is believed");
    is_int(cv.nknots, 4, "rate: only the believed knot was added");
    r = cv.k[3].raw;
    n = cv.k[3].ns;
    ok(!st__clock_conv_add(&cv, knot_at(r + SEG, n + SEG / 4), 0, false), "rate: a jump down is refused");
    ok(st__clock_conv_add(&cv, knot_at(r + 2 * SEG, n + 2 * SEG * 3 / 4), 0, false),
       "rate: a plausible knot is taken and resets the count");
    r = cv.k[4].raw;
    n = cv.k[4].ns;
    ok(!st__clock_conv_add(&cv, knot_at(r + SEG, n + SEG), 0, false) &&
           !st__clock_conv_add(&cv, knot_at(r + 2 * SEG, n + 2 * SEG), 0, false),
       "rate: after the reset, two implausible knots are refused again");

    build(&cv, 3);
    r = cv.k[2].raw;
    n = cv.k[2].ns;
    /* 20 us of bracket at 0.5005 ns per tick is 39960 ticks. */
    ok(!st__clock_conv_add(&cv, knot_at(r + SEG, n + seg_ns(1)), 40000, false),
       "gap: a knot whose bracket was over 20 us wide is refused");
    ok(st__clock_conv_add(&cv, knot_at(r + SEG, n + seg_ns(1)), 39000, false),
       "gap: the same knot with a narrow bracket is taken");
    ok(!st__clock_conv_add(&cv, knot_at(cv.k[3].raw + SEG, cv.k[3].ns + MS - 1), 0, true),
       "force: no effect once there are two knots (1 ns under 1 ms refused)");
}

static void test_real_clock(void)
{
    struct st__clock_anchor a;
    struct st__clock_conv cv;
    uint64_t gap = 99, t0, t1, raw;
    bool tsc = ST_CLOCK_HAVE_COUNTER;

    diag("counter (%s) usable here: %s; forcible: %s; stated frequency %llu Hz", ST_CLOCK_COUNTER,
         st__clock_counter_usable() ? "yes" : "no", st__clock_counter_forcible() ? "yes" : "no",
         (unsigned long long)st__clock_counter_hz());
    ok(ST_CLOCK_HAVE_COUNTER || (!st__clock_counter_usable() && !st__clock_counter_forcible()),
       "counter_usable, counter_forcible: never without a counter");
#if defined(__aarch64__)
    ok(st__clock_counter_hz() >= 1000000 && st__clock_counter_hz() <= UINT64_C(10000000000),
       "CNTFRQ_EL0: a frequency between 1 MHz and 10 GHz (%llu)", (unsigned long long)st__clock_counter_hz());
    {
        /* The stated frequency is the rate the counter ticks at against CLOCK_MONOTONIC (within 1%). */
        struct st__clock_anchor b0 = st__clock_sample(true, NULL), b1;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
        b1 = st__clock_sample(true, NULL);
        double hz = (double)(b1.raw - b0.raw) * 1e9 / (double)(b1.ns - b0.ns);
        ok(hz > 0.99 * (double)st__clock_counter_hz() && hz < 1.01 * (double)st__clock_counter_hz(),
           "CNTVCT_EL0 ticks at CNTFRQ_EL0 (measured %.0f Hz)", hz);
    }
#else
    ok(st__clock_counter_hz() == 0, "no stated counter frequency off aarch64");
#endif
    t0 = st__clock_mono_ns();
    a = st__clock_sample(false, &gap);
    t1 = st__clock_mono_ns();
    ok(a.raw == a.ns && gap == 0 && a.ns >= t0 && a.ns <= t1, "sample without tsc: (ns, ns), gap 0");
    if (!tsc) {
        printf("ok %d - # SKIP no counter on this architecture\n", ++tap__count);
        return;
    }
    t0 = st__clock_mono_ns();
    a = st__clock_sample(true, &gap);
    t1 = st__clock_mono_ns();
    ok(a.ns >= t0 && a.ns <= t1 && gap < UINT64_C(100000000), "sample with tsc: ns taken inside, gap %llu ticks",
       (unsigned long long)gap);

    st__clock_conv_init(&cv, true, a);
    st__clock_conv_update(&cv);
    t1 = st__clock_mono_ns();
    ok(t1 >= a.ns + MS && cv.nknots == 2 && cv.k[1].ns >= a.ns + MS,
       "update: the first one waits out 1 ms after the first knot, then takes a knot");
    raw = st__clock_ticks();
    st__clock_conv_update_past(&cv, raw);
    ok(cv.k[cv.nknots - 1].raw > raw, "update_past: a knot now lies after the value");
    t0 = st__clock_mono_ns();
    raw = st__clock_ticks();
    t1 = st__clock_mono_ns();
    st__clock_conv_update_past(&cv, raw);
    {
        uint64_t ns = st__clock_conv(&cv, raw);
        ok(ns + 20000 >= t0 && ns <= t1 + 20000, "conversion: a tick read converts between the ns read around it "
                                                 "(within 20 us)");
    }
}

int main(void)
{
    test_identity();
    test_first_segment();
    test_knots_and_segments();
    test_determinism();
    test_refusals();
    test_real_clock();
    return done_testing();
}
