/*
 * The cost of a traced call: CALLS calls of a tiny leaf function, timed
 * inside the program, so the figure is what the traced thread pays
 * (entry + exit hooks), not start-up or the final write-out.
 *
 *   bench_calls [CALLS]      prints "calls N loop_ns T"
 *
 * Built several ways by meson.build (plain, -finstrument-functions with
 * libsimpletrace-func, -finstrument-functions alone for `uftrace record`,
 * -pg); run.sh runs them side by side.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long __attribute__((noinline)) leaf(long x)
{
    __asm__ volatile("" : "+r"(x)); /* keep the call and its argument */
    return x + 1;
}

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    long calls = argc > 1 ? atol(argv[1]) : 10000000;
    long s = 0;
    unsigned long long t0 = now_ns();
    for (long i = 0; i < calls; i++)
        s = leaf(s);
    unsigned long long t1 = now_ns();
    printf("calls %ld loop_ns %llu\n", s, t1 - t0);
    return s == calls ? 0 : 1;
}
