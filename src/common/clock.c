/*
 * Counter detection (TSC, CNTVCT_EL0), knot sampling and the conversion's
 * knots (the design is at the top of clock.h). Nothing here runs on a
 * tracing hot path.
 */
#include "clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* A segment shorter than this measures the rate too coarsely. */
#define MIN_SEGMENT_NS UINT64_C(1000000)
/* A knot whose bracket was wider than this was disturbed. */
#define MAX_GAP_NS 20000.0
/* No real pair of clocks changes rate by more than this between knots. */
#define MAX_RATE_CHANGE 0.002
/* Refusals in a row after which the new rate is believed. */
#define MAX_REJECTS 3

#define NI __attribute__((no_instrument_function))

#if defined(__x86_64__)
/* The kernel's view: "flags" of /proc/cpuinfo; -1 when it cannot be read. */
NI static int cpuinfo_invariant_tsc(void)
{
    FILE *f = fopen("/proc/cpuinfo", "re");
    char *line = NULL;
    size_t cap = 0;
    int constant = 0, nonstop = 0, found = 0;

    if (!f)
        return -1;
    while (getline(&line, &cap, f) > 0) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        found = 1;
        for (char *save = NULL, *w = strtok_r(line, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
            constant |= strcmp(w, "constant_tsc") == 0;
            nonstop |= strcmp(w, "nonstop_tsc") == 0;
        }
        break;
    }
    free(line);
    fclose(f);
    return found ? constant && nonstop : -1;
}

/* CPUID leaf 0x80000007, EDX bit 8: the TSC is invariant. */
NI static bool cpuid_invariant_tsc(void)
{
    unsigned a, b, c, d;

    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return false;
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d))
        return false;
    return (d >> 8) & 1u;
}

/* False once the kernel dropped the TSC as a clocksource (it found the cores' TSCs out of step). */
NI static bool kernel_lists_tsc(void)
{
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/available_clocksource", "re");
    char buf[256] = "";
    bool ok;

    if (!f)
        return true; /* cannot tell: trust the CPU flags */
    ok = fgets(buf, sizeof buf, f) == NULL || strstr(buf, "tsc") != NULL;
    fclose(f);
    return ok;
}
#endif

#if defined(__aarch64__)
/* The kernel's clocksource is the generic timer; true when that cannot be read. */
NI static bool kernel_uses_arch_counter(void)
{
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
    char buf[64] = "";
    bool ok;

    if (!f)
        return true; /* no /sys: the architecture's counter, as the vDSO reads it */
    ok = fgets(buf, sizeof buf, f) == NULL || strncmp(buf, "arch_sys_counter", 16) == 0;
    fclose(f);
    return ok;
}
#endif

NI uint64_t st__clock_counter_hz(void)
{
#if defined(__aarch64__)
    uint64_t hz;

    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(hz));
    return hz & UINT64_C(0xffffffff); /* the upper half is reserved */
#else
    return 0;
#endif
}

NI bool st__clock_counter_usable(void)
{
#if defined(__x86_64__)
    int flags = cpuinfo_invariant_tsc();

    return (flags < 0 ? cpuid_invariant_tsc() : flags == 1) && kernel_lists_tsc();
#elif defined(__aarch64__)
    return st__clock_counter_hz() != 0 && kernel_uses_arch_counter();
#else
    return false;
#endif
}

NI bool st__clock_counter_forcible(void)
{
#if defined(__aarch64__)
    return st__clock_counter_hz() != 0;
#else
    return false;
#endif
}

NI struct st__clock_anchor st__clock_sample(bool tsc, uint64_t *gap)
{
    struct st__clock_anchor best;
    uint64_t best_gap = UINT64_MAX;

    if (!tsc || !ST_CLOCK_HAVE_COUNTER) {
        best.ns = best.raw = st__clock_mono_ns();
        if (gap)
            *gap = 0;
        return best;
    }
    best.raw = best.ns = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t t1 = st__clock_ticks();
        uint64_t ns = st__clock_mono_ns();
        uint64_t t2 = st__clock_ticks();
        if (t2 >= t1 && t2 - t1 < best_gap) {
            best_gap = t2 - t1;
            best.raw = t1 + (t2 - t1) / 2;
            best.ns = ns;
        }
    }
    if (best_gap == UINT64_MAX) { /* the ticks went backwards every time: keep something sane */
        best.raw = st__clock_ticks();
        best.ns = st__clock_mono_ns();
    }
    if (gap)
        *gap = best_gap;
    return best;
}

NI void st__clock_conv_init(struct st__clock_conv *cv, bool tsc, struct st__clock_anchor first)
{
    memset(cv, 0, sizeof *cv);
    cv->tsc = tsc;
    cv->k[0] = first;
    cv->nknots = 1;
}

/* The segment a-b as a fixed-point multiplier. */
NI static uint64_t segment_mult(struct st__clock_anchor a, struct st__clock_anchor b)
{
    __extension__ typedef unsigned __int128 u128;
    u128 m = ((u128)(b.ns - a.ns) << ST_CLOCK_SHIFT) / (b.raw - a.raw);

    return m > UINT64_MAX ? UINT64_MAX : (uint64_t)m;
}

NI bool st__clock_conv_add(struct st__clock_conv *cv, struct st__clock_anchor knot, uint64_t gap, bool force)
{
    struct st__clock_anchor last;
    double rate;

    if (!cv->tsc || cv->nknots == 0)
        return false;
    last = cv->k[cv->nknots - 1];
    if (knot.raw <= last.raw)
        return false;
    if (knot.ns < last.ns)
        knot.ns = last.ns; /* keep the mapping increasing whatever the samples say */
    if (knot.ns - last.ns < MIN_SEGMENT_NS && !(force && cv->nknots == 1))
        return false;
    rate = (double)(knot.ns - last.ns) / (double)(knot.raw - last.raw);
    if (cv->rate > 0) {
        if ((double)gap * cv->rate > MAX_GAP_NS)
            return false;
        if ((rate > cv->rate * (1 + MAX_RATE_CHANGE) || rate < cv->rate * (1 - MAX_RATE_CHANGE)) &&
            ++cv->rejected < MAX_REJECTS)
            return false;
    }
    cv->rejected = 0;
    if (cv->nknots == ST_CLOCK_KNOTS) { /* the oldest segment goes */
        memmove(cv->k, cv->k + 1, (ST_CLOCK_KNOTS - 1) * sizeof cv->k[0]);
        memmove(cv->mult, cv->mult + 1, (ST_CLOCK_KNOTS - 2) * sizeof cv->mult[0]);
        cv->nknots--;
    }
    cv->mult[cv->nknots - 1] = segment_mult(last, knot);
    cv->k[cv->nknots++] = knot;
    cv->rate = rate;
    return true;
}

NI unsigned st__clock_conv_segment(const struct st__clock_conv *cv, uint64_t raw)
{
    unsigned lo = 0, hi = cv->nknots - 2; /* the answer: the last knot at or below raw, else 0 */

    while (lo < hi) {
        unsigned mid = (lo + hi + 1) / 2;
        if (cv->k[mid].raw <= raw)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Sleeps until CLOCK_MONOTONIC reaches ns. */
NI static void sleep_until(uint64_t ns)
{
    uint64_t now = st__clock_mono_ns();
    struct timespec ts;

    if (now >= ns)
        return;
    ts.tv_sec = (time_t)((ns - now) / 1000000000u);
    ts.tv_nsec = (long)((ns - now) % 1000000000u);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

NI void st__clock_conv_update(struct st__clock_conv *cv)
{
    struct st__clock_anchor s;
    uint64_t gap;

    if (!cv->tsc || cv->nknots == 0)
        return;
    if (cv->nknots == 1) /* the first segment: long enough to measure the rate, once per converter */
        sleep_until(cv->k[0].ns + MIN_SEGMENT_NS);
    s = st__clock_sample(true, &gap);
    st__clock_conv_add(cv, s, gap, false);
}

NI void st__clock_conv_update_past(struct st__clock_conv *cv, uint64_t raw)
{
    struct st__clock_anchor s;
    uint64_t gap;

    if (!cv->tsc || cv->nknots == 0)
        return;
    for (int tries = 0; tries < 8 && cv->k[cv->nknots - 1].raw <= raw; tries++) {
        sleep_until(cv->k[cv->nknots - 1].ns + MIN_SEGMENT_NS);
        s = st__clock_sample(true, &gap);
        st__clock_conv_add(cv, s, gap, false);
    }
}
