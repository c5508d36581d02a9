/*
 * The writeout thread starved: more threads than CPUs trace flat out at
 * nice 0 into small buffers (64 KiB). The writer must still make progress
 * while they spin (records reach the file during the run, not only at the
 * end), the overflow is dropped and counted, and at the end the file holds
 * each thread's records in order and everything adds up exactly.
 */
#include <pthread.h>
#include <time.h>

#include "fault_test.h"

static uint64_t produced;
static int stop;

static void *spin(void *arg)
{
    uint64_t th = (uint64_t)(uintptr_t)arg, seq = 0;

    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
        ft_trace(th, seq++, &produced);
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void)
{
    pthread_t th[16];
    struct st_stats st = {.struct_size = sizeof st};
    struct ft_sum s;
    char cfg[1400];
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = (unsigned)(ncpu > 0 ? 2 * ncpu + 2 : 4), samples = (unsigned)test_scale(10, 5), grew = 0;
    uint64_t last = 0, first_written = 0;

    if (n > 16)
        n = 16;
    test_tmpdir();
    snprintf(cfg, sizeof cfg, "ft_*,bufsize=64K,file=%s", test_path("starve.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure with 64 KiB buffers");
    for (unsigned i = 0; i < n; i++)
        pthread_create(&th[i], NULL, spin, (void *)(uintptr_t)i);
    /* Sample the writer's progress every 100 ms while every thread spins. */
    for (unsigned i = 0; i < samples; i++) {
        sleep_ms(100);
        st_stats_get(&st);
        if (i == 0)
            first_written = st.written;
        grew += st.written > last;
        last = st.written;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    diag("%u spinning threads on %ld CPUs; writer progressed in %u of %u 100 ms samples", n, ncpu, grew, samples);
    ok(last > first_written, "the writer wrote records while every thread spun");
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    /* Sanitizers slow every thread (TSan ~10x) and the 100 ms samples are then too coarse to ask more. */
    ok(grew >= 1, "and did so in at least one sample (sanitizer build)");
#else
    ok(grew * 2 >= samples, "and did so in at least half of the samples");
#endif
    is_int(st_trace_file_flush(), 0, "flush");
    st_stats_get(&st);
    diag("dropped %llu of %llu", (unsigned long long)st.dropped, (unsigned long long)st.produced);
    ft_sum_init(&s);
    ft_sum_file(&s, test_path("starve.trace"), 0);
    ft_check("starved writer", &s, produced);
    st_trace_file_set_enabled(false);
    return done_testing();
}
