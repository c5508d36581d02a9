/*
 * One contestant of the race (run.sh): the same loop traced by whichever
 * backend its trace header was generated for (TRACE_HEADER; RACE_SIMPLE
 * when it is the simple backend, whose runtime counters we can read).
 *
 *   race THREADS EVENTS [RATE]
 *
 * Each of THREADS threads calls trace_race_tick() EVENTS times, as fast as
 * it can or paced to RATE events per second per thread, and times its
 * loop. Prints one line:
 *
 *   threads T events N ns_per_event X [produced P written W dropped D
 *     drain_cpu_ns_per_event C zstd_frames F zstd_fast_frames G]
 *
 * ns_per_event is the mean over threads of loop time / EVENTS, so it is
 * the cost one traced call adds to its thread. The bracketed counters are
 * the simple runtime's own (after a flush); for LTTng run.sh counts what
 * reached the trace. drain_cpu_ns_per_event: the process's CPU time less
 * the tracing threads' own, per event written: what writing the trace
 * (the writeout thread: merge, compression, write) cost, whatever the
 * machine's load (for LTTng run.sh takes its consumer daemon's).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include TRACE_HEADER
#ifdef RACE_SIMPLE
#include <simpletrace/simpletrace.h>
#endif

struct worker {
    pthread_t tid;
    uint32_t index;
    uint64_t events;
    uint64_t rate;   /* events per second, 0: as fast as possible */
    double elapsed;  /* seconds spent in the loop */
    double cpu;      /* CPU seconds the thread used */
};

/* CPU seconds of clock id (a thread's, the process's). */
static double cpu_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits until event i is due at the worker's rate. */
static void pace(const struct worker *w, uint64_t i, double start)
{
    double due = start + (double)i / (double)w->rate;
    while (now() < due) {
    }
}

static void *run(void *arg)
{
    struct worker *w = arg;
    double start = now();
    for (uint64_t i = 0; i < w->events; i++) {
        if (w->rate && (i & 255) == 0)
            pace(w, i, start);
        trace_race_tick(i, w->index, i * 0x9e3779b97f4a7c15u);
    }
    w->elapsed = now() - start;
    w->cpu = cpu_of(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s THREADS EVENTS [RATE]\n", argv[0]);
        return 2;
    }
    unsigned threads = (unsigned)strtoul(argv[1], NULL, 10);
    uint64_t events = strtoull(argv[2], NULL, 10);
    uint64_t rate = argc > 3 ? strtoull(argv[3], NULL, 10) : 0;
    if (threads < 1 || threads > 64)
        return 2;
    struct worker w[64];
    for (unsigned t = 0; t < threads; t++) {
        w[t] = (struct worker){.index = t, .events = events, .rate = rate};
        if (pthread_create(&w[t].tid, NULL, run, &w[t]) != 0)
            return 1;
    }
    double ns = 0, tracing_cpu = 0;
    for (unsigned t = 0; t < threads; t++) {
        pthread_join(w[t].tid, NULL);
        ns += w[t].elapsed * 1e9 / (double)(events ? events : 1);
        tracing_cpu += w[t].cpu;
    }
    printf("threads %u events %llu ns_per_event %.2f", threads, (unsigned long long)(events * threads),
           ns / threads);
#ifdef RACE_SIMPLE
    struct st_stats st = {.struct_size = sizeof st};
    st_trace_file_flush();
    st_stats_get(&st);
    double drain_cpu = cpu_of(CLOCK_PROCESS_CPUTIME_ID) - tracing_cpu;
    printf(" produced %llu written %llu dropped %llu drain_cpu_ns_per_event %.1f zstd_frames %llu zstd_fast_frames %llu",
           (unsigned long long)st.produced, (unsigned long long)st.written, (unsigned long long)st.dropped,
           st.written ? drain_cpu * 1e9 / (double)st.written : 0.0, (unsigned long long)st.zstd_frames,
           (unsigned long long)st.zstd_fast_frames);
#else
    (void)tracing_cpu;
#endif
    printf("\n");
    return 0;
}
