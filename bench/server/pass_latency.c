/*
 * What a drain pass on the tracing thread costs the call that runs it
 * (bench/server/run.sh prints it beside the server's figures): one thread
 * traces N records of 40 bytes (the server's srv_request_begin), each call
 * timed; the calls that ran a pass stand out (over 2 us: a record alone
 * takes tens of ns). Prints the number of such calls, the bytes written
 * per pass, their duration (p50, p99, max) and the mean cost of every
 * other call, under the writer= SIMPLETRACE gives.
 *
 *   pass_latency N     (SIMPLETRACE names the file and writer=)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <simpletrace/simpletrace.h>

#include TRACE_HEADER

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 2000000;
    uint64_t *slow = malloc(n * sizeof *slow), nslow = 0, fast_ns = 0, nfast = 0;
    struct st_stats st = {.struct_size = sizeof st};

    if (!slow)
        return 1;
    for (unsigned long i = 0; i < n; i++) {
        uint64_t t0 = now_ns(), dt;
        trace_srv_request_begin((int)i, i);
        dt = now_ns() - t0;
        if (dt > 2000) {
            slow[nslow++] = dt;
        } else {
            fast_ns += dt;
            nfast++;
        }
    }
    st_trace_file_flush();
    st_stats_get(&st);
    qsort(slow, nslow, sizeof *slow, cmp);
    printf("calls %lu over_2us %llu bytes_per_slow %.0f slow_us p50 %.1f p99 %.1f max %.1f other_ns %.1f dropped %llu\n", n,
           (unsigned long long)nslow, nslow ? (double)st.bytes_written / (double)nslow : 0.0,
           nslow ? (double)slow[nslow / 2] / 1000.0 : 0.0, nslow ? (double)slow[nslow * 99 / 100] / 1000.0 : 0.0,
           nslow ? (double)slow[nslow - 1] / 1000.0 : 0.0, nfast ? (double)fast_ns / (double)nfast : 0.0,
           (unsigned long long)st.dropped);
    return 0;
}
