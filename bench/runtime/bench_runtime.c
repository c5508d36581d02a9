/*
 * Runtime benchmark: what tracing costs the traced program.
 *
 *   bench_runtime [--events N] [--seconds S] [--dir DIR] [--bufsize SIZE]
 *                 [--only hot|sustained|bursty]
 *
 * Figures (never pass/fail): ns per disabled, compiled-out and enabled event
 * (two u64 and a 16-character string), scaling from 1 to 2 threads, the
 * writeout thread's drain rate (records/s and ns per record, with one
 * buffer and with two whose records interleave), drops when the writeout
 * thread must keep up with a sustained rate, and drops when bursty threads
 * keep every core busy so the writer waits to be scheduled. Peers are
 * measured in the same run, so ratios hold on a noisy machine: the clock
 * reads every record needs, a shared-index ring (one atomic fetch-add per
 * record on a cache line all threads share, the design QEMU's simple
 * backend uses) standing in for a classic global buffer, and a loop of
 * plain arithmetic, whose 2-thread scaling is what this machine gives any
 * code at the moment (a shared or busy machine gives less than 2x).
 * --bufsize applies to the sustained and bursty runs (default: the
 * runtime's default); --only runs one part.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
/* The CPU counter the runtime reads (src/common/clock.h), as a figure beside clock_gettime. */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define CHEAP_CLOCK "rdtsc"
#elif defined(__aarch64__)
#define CHEAP_CLOCK "isb; mrs cntvct_el0"
#endif

#include <simpletrace/simpletrace.h>

#include "bench-nop-trace.h"
#include "bench-trace.h"

static const char payload_string[] = "sixteen-chars-ok"; /* 16 characters */

/* The runtime's default bufsize (README; ST_RING_SIZE_DEFAULT), restored after the
 * 128M hot-path buffers, since a configuration cannot ask for "the default". */
#define BENCH_DEFAULT_BUFSIZE "4M"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cheap_clock(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
    return v;
#else
    return now_ns();
#endif
}

/* Keeps the compiler from deleting loops whose result is otherwise unused. */
static volatile uint64_t sink;

/* ---- single-thread costs ------------------------------------------------ */

static double ns_per_clock_gettime(uint64_t n)
{
    uint64_t t0 = now_ns(), acc = 0;
    for (uint64_t i = 0; i < n; i++)
        acc += now_ns();
    sink = acc;
    return (double)(now_ns() - t0) / (double)n;
}

static double ns_per_cheap_clock(uint64_t n)
{
    uint64_t t0 = now_ns(), acc = 0;
    for (uint64_t i = 0; i < n; i++)
        acc += cheap_clock();
    sink = acc;
    return (double)(now_ns() - t0) / (double)n;
}

static double ns_per_disabled(uint64_t n)
{
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++)
        trace_bench_off(i);
    return (double)(now_ns() - t0) / (double)n;
}

static double ns_per_compiled_out(uint64_t n)
{
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < n; i++) {
        trace_bench_nop(i, i, payload_string);
        __asm__ volatile("" ::: "memory"); /* keep the loop */
    }
    return (double)(now_ns() - t0) / (double)n;
}

/* Plain arithmetic, for the machine's own 2-thread scaling. */
static void alu_loop(uint64_t n)
{
    uint64_t x = 1;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005u + i;
        __asm__ volatile("" : "+r"(x)); /* one step per iteration, not folded */
    }
    sink = x;
}

/* ---- the shared-index ring peer ---------------------------------------- */

#define PEER_RING_SIZE (64u << 20)
static uint8_t *peer_ring;
static _Atomic uint64_t peer_index;

/* One record as the simple backend lays it out, reserved with a fetch-add. */
static void peer_trace(uint64_t a, uint64_t b, const char *s)
{
    uint32_t slen = (uint32_t)strlen(s);
    uint32_t len = 32 + 8 + 8 + 4 + slen;
    uint64_t ts = cheap_clock();
    uint64_t off = atomic_fetch_add_explicit(&peer_index, len, memory_order_relaxed) % (PEER_RING_SIZE - 4096);
    uint8_t *p = peer_ring + off;
    uint64_t head[3] = {1, 7, ts};
    memcpy(p, head, sizeof head);
    memcpy(p + 24, &len, 4);
    memcpy(p + 32, &a, 8);
    memcpy(p + 40, &b, 8);
    memcpy(p + 48, &slen, 4);
    memcpy(p + 52, s, slen);
}

/* ---- multi-threaded rounds ---------------------------------------------- */

#define MAX_THREADS 16

enum workload { WORK_SIMPLETRACE, WORK_PEER, WORK_ALU, WORK_FLAT_OUT, WORK_BURSTS };

struct round {
    pthread_barrier_t start, done;
    enum workload work;
    uint64_t events;          /* per thread, for timed rounds; burst length for bursts */
    uint64_t work_ns;         /* bursts: computation between two bursts */
    uint64_t t_start[MAX_THREADS], t_end[MAX_THREADS]; /* timed rounds: each thread's clock */
    _Atomic int next_slot;    /* hands out t_start/t_end slots */
    _Atomic bool stop;        /* for flat-out rounds */
    _Atomic uint64_t traced;  /* events traced in a flat-out round */
    bool quit;
};

static void run_events(enum workload work, uint64_t n)
{
    if (work == WORK_SIMPLETRACE) {
        for (uint64_t i = 0; i < n; i++)
            trace_bench_event(i, n - i, payload_string);
    } else if (work == WORK_ALU) {
        alu_loop(n * 16);
    } else {
        for (uint64_t i = 0; i < n; i++)
            peer_trace(i, n - i, payload_string);
    }
}

static void run_flat_out(struct round *r)
{
    uint64_t i = 0;
    while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        for (int k = 0; k < 1024; k++, i++)
            trace_bench_event(i, i, payload_string);
    }
    atomic_fetch_add(&r->traced, i);
}

/* Bursts of r->events events, each followed by r->work_ns of computation. */
static void run_bursts(struct round *r)
{
    uint64_t i = 0;
    while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        for (uint64_t k = 0; k < r->events; k++, i++)
            trace_bench_event(i, k, payload_string);
        uint64_t until = now_ns() + r->work_ns;
        while (now_ns() < until)
            alu_loop(1000);
    }
    atomic_fetch_add(&r->traced, i);
}

static void *round_thread(void *arg)
{
    struct round *r = arg;
    for (;;) {
        pthread_barrier_wait(&r->start);
        if (r->quit)
            return NULL;
        if (r->work == WORK_FLAT_OUT)
            run_flat_out(r);
        else if (r->work == WORK_BURSTS)
            run_bursts(r);
        else {
            int slot = atomic_fetch_add(&r->next_slot, 1);
            r->t_start[slot] = now_ns();
            run_events(r->work, r->events);
            r->t_end[slot] = now_ns();
        }
        pthread_barrier_wait(&r->done);
    }
}

struct pool {
    struct round round;
    pthread_t threads[MAX_THREADS];
    int count;
};

static void pool_start(struct pool *p, int threads)
{
    memset(p, 0, sizeof *p);
    p->count = threads;
    pthread_barrier_init(&p->round.start, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&p->round.done, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++)
        pthread_create(&p->threads[i], NULL, round_thread, &p->round);
}

/*
 * Runs one timed round; returns the time from the first thread's start to
 * the last one's end, as the threads themselves read the clock: the main
 * thread, woken from the barrier while the workers keep both cores busy,
 * may start its clock milliseconds late.
 */
static uint64_t pool_round(struct pool *p, enum workload work, uint64_t events)
{
    p->round.work = work;
    p->round.events = events;
    atomic_store(&p->round.next_slot, 0);
    pthread_barrier_wait(&p->round.start);
    pthread_barrier_wait(&p->round.done);
    uint64_t first = UINT64_MAX, last = 0;
    for (int t = 0; t < p->count; t++) {
        if (p->round.t_start[t] < first)
            first = p->round.t_start[t];
        if (p->round.t_end[t] > last)
            last = p->round.t_end[t];
    }
    return last - first;
}

static void pool_stop(struct pool *p)
{
    p->round.quit = true;
    pthread_barrier_wait(&p->round.start);
    for (int i = 0; i < p->count; i++)
        pthread_join(p->threads[i], NULL);
    pthread_barrier_destroy(&p->round.start);
    pthread_barrier_destroy(&p->round.done);
    /*
     * The writer frees the ended threads' buffers: wait for that, so that
     * unmapping them (TLB shootdowns on every core) does not disturb the
     * next measurement.
     */
    for (int tries = 0; tries < 2000; tries++) {
        struct st_stats st = {.struct_size = sizeof st};
        st_trace_file_flush();
        st_stats_get(&st);
        if (st.threads == 0)
            break;
        usleep(1000);
    }
}

/* Best (least disturbed) figures of a few timed rounds. */
struct hot_result {
    double ns;       /* per event per thread */
    double drain_ns; /* writeout thread, per record, draining the round into /dev/null */
};

/*
 * Hot-path cost: the trace file is off while the threads trace, so records
 * wait in the thread buffers (sized to hold a round) and the writeout thread
 * does not compete for the two cores; it drains them between rounds, alone,
 * and that drain is timed too (its records interleave finely in time when
 * two threads traced at once, so the merge works record by record).
 * `warm`: many short rounds into 1 MiB buffers, which stay in the core's
 * cache as they do while the writer keeps up; otherwise long rounds into
 * 128 MiB buffers, where every record also costs a cache miss to memory.
 */
static struct hot_result hot_path_rounds(int threads, enum workload work, uint64_t events, bool warm)
{
    struct pool p;
    struct hot_result best = {1e30, 1e30};
    int rounds = warm ? 200 : 5;
    if (warm)
        events = 12000; /* 816 KB: fits a 1 MiB ring */
    st_configure(warm ? "bufsize=1M" : "bufsize=128M", NULL, 0);
    pool_start(&p, threads);
    for (int rep = 0; rep < rounds; rep++) {
        if (work == WORK_SIMPLETRACE)
            st_trace_file_set_enabled(false);
        uint64_t wall = pool_round(&p, work, events);
        double drain = 0;
        if (work == WORK_SIMPLETRACE) {
            uint64_t t0 = now_ns();
            st_trace_file_set_enabled(true);
            st_trace_file_flush();
            drain = (double)(now_ns() - t0) / (double)(events * (uint64_t)threads);
        }
        double ns = (double)wall / (double)events; /* per event, per thread */
        if (rep > 0 && ns < best.ns)               /* round 0 warms the buffers up */
            best.ns = ns;
        if (rep > 0 && drain < best.drain_ns)
            best.drain_ns = drain;
    }
    pool_stop(&p);
    return best;
}

static struct hot_result hot_path(int threads, enum workload work, uint64_t events)
{
    return hot_path_rounds(threads, work, events, false);
}

static double hot_path_ns(int threads, enum workload work, uint64_t events)
{
    return hot_path(threads, work, events).ns;
}

/* Sustained: threads trace flat out for `seconds` while the writer writes. */
static void sustained(int threads, double seconds, const char *path)
{
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "file=%s", path);
    if (st_configure(cfg, NULL, 0) != 0) {
        printf("  (cannot open %s)\n", path);
        return;
    }
    struct st_stats before = {.struct_size = sizeof before}, after = {.struct_size = sizeof after};
    st_stats_get(&before);
    struct pool p;
    pool_start(&p, threads);
    p.round.work = WORK_FLAT_OUT;
    pthread_barrier_wait(&p.round.start);
    uint64_t t0 = now_ns();
    usleep((useconds_t)(seconds * 1e6));
    atomic_store(&p.round.stop, true);
    pthread_barrier_wait(&p.round.done);
    double wall = (double)(now_ns() - t0) / 1e9;
    pool_stop(&p);
    st_trace_file_flush();
    st_stats_get(&after);
    uint64_t produced = after.produced - before.produced;
    uint64_t written = after.written - before.written;
    uint64_t dropped = after.dropped - before.dropped;
    printf("  %d thread%s -> %-22s %6.1f M events/s traced, %6.1f M/s written, %5.1f%% dropped, %5.0f MB/s\n",
           threads, threads > 1 ? "s" : " ", path, (double)produced / wall / 1e6,
           (double)written / wall / 1e6, produced ? 100.0 * (double)dropped / (double)produced : 0.0,
           (double)(after.bytes_written - before.bytes_written) / wall / 1e6);
}

/*
 * Bursty: `threads` threads each trace bursts of `burst` events with
 * `work_us` of computation after each, for `seconds`. With more threads
 * than cores every core stays busy, so the writer, woken by a burst, has
 * to wait for the scheduler: the drops measure how well buffers and
 * wake-ups absorb that delay.
 */
static void bursty(int threads, uint64_t burst, unsigned work_us, double seconds)
{
    if (st_configure("file=/dev/null", NULL, 0) != 0)
        return;
    struct st_stats before = {.struct_size = sizeof before}, after = {.struct_size = sizeof after};
    st_stats_get(&before);
    struct pool p;
    pool_start(&p, threads);
    p.round.work = WORK_BURSTS;
    p.round.events = burst;
    p.round.work_ns = (uint64_t)work_us * 1000;
    pthread_barrier_wait(&p.round.start);
    usleep((useconds_t)(seconds * 1e6));
    atomic_store(&p.round.stop, true);
    pthread_barrier_wait(&p.round.done);
    pool_stop(&p);
    st_trace_file_flush();
    st_stats_get(&after);
    uint64_t produced = after.produced - before.produced;
    uint64_t dropped = after.dropped - before.dropped;
    printf("  %d threads, bursts of %6" PRIu64 " events + %4u us of work: %9" PRIu64 " events, %5.1f%% dropped\n",
           threads, burst, work_us, produced, produced ? 100.0 * (double)dropped / (double)produced : 0.0);
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [--events N] [--seconds S] [--dir DIR] [--bufsize SIZE] [--only hot|sustained|bursty]\n",
            argv0);
    exit(2);
}

/* Sets bufsize for the threads created from now on; the runtime's default when size is NULL. */
static const char *set_bufsize(const char *size)
{
    char cfg[64];
    snprintf(cfg, sizeof cfg, "bufsize=%s", size ? size : "");
    if (size && st_configure(cfg, NULL, 0) == 0)
        return size;
    st_configure("bufsize=" BENCH_DEFAULT_BUFSIZE, NULL, 0);
    return "default (" BENCH_DEFAULT_BUFSIZE ")";
}

static void hot_section(uint64_t events)
{
    peer_ring = calloc(1, PEER_RING_SIZE);
    if (!peer_ring)
        exit(1);

    printf("hot path: %" PRIu64 " events per thread per round, best of 4 rounds\n", events);
    printf("event: two uint64_t and a 16-character string (%u-byte record)\n\n", 32u + 8 + 8 + 4 + 16);

    double cg = ns_per_clock_gettime(events * 4);
    double tsc = ns_per_cheap_clock(events * 4);
    double off = ns_per_disabled(events * 100);
    double nop = ns_per_compiled_out(events * 100);
    printf("%-46s %8.2f ns\n", "clock_gettime(CLOCK_MONOTONIC)", cg);
#ifdef CHEAP_CLOCK
    printf("%-46s %8.2f ns\n", CHEAP_CLOCK, tsc);
#else
    (void)tsc;
#endif
    printf("%-46s %8.2f ns   (target <= 1 ns)\n", "disabled event", off);
    printf("%-46s %8.2f ns   (target 0: compiled out)\n", "nop backend event", nop);

    struct hot_result h1 = hot_path(1, WORK_SIMPLETRACE, events);
    struct hot_result h2 = hot_path(2, WORK_SIMPLETRACE, events);
    struct hot_result w1 = hot_path_rounds(1, WORK_SIMPLETRACE, events, true);
    struct hot_result w2 = hot_path_rounds(2, WORK_SIMPLETRACE, events, true);
    double st1 = h1.ns, st2 = h2.ns;
    double pr1 = hot_path_ns(1, WORK_PEER, events);
    double pr2 = hot_path_ns(2, WORK_PEER, events);
    double alu1 = hot_path_ns(1, WORK_ALU, events);
    double alu2 = hot_path_ns(2, WORK_ALU, events);
    printf("%-46s %8.2f ns   (target <= 20 ns; %.2fx a clock_gettime)\n", "enabled event, 1 thread", st1, st1 / cg);
    printf("%-46s %8.2f ns   per event per thread\n", "enabled event, 2 threads", st2);
    printf("%-46s %8.2fx    (target >= 1.8x)\n", "  2-thread throughput / 1-thread", 2.0 * st1 / st2);
    printf("%-46s %8.2f ns\n", "  same, 1 MiB ring in cache, 1 thread", w1.ns);
#ifdef CHEAP_CLOCK
    printf("%-46s %8.2f ns   (the rest of the event beside its counter read)\n", "    minus the counter read",
           w1.ns - tsc);
#endif
    printf("%-46s %8.2f ns   per event per thread\n", "  same, 1 MiB ring in cache, 2 threads", w2.ns);
    printf("%-46s %8.2fx\n", "    2-thread throughput / 1-thread", 2.0 * w1.ns / w2.ns);
    printf("%-46s %8.2fx    (this machine now, for any code)\n", "  arithmetic loop 2-thread / 1-thread", 2.0 * alu1 / alu2);
    printf("%-46s %8.2f ns\n", "shared-index ring peer, 1 thread", pr1);
    printf("%-46s %8.2f ns   per event per thread\n", "shared-index ring peer, 2 threads", pr2);
    printf("%-46s %8.2fx\n", "  peer 2-thread throughput / 1-thread", 2.0 * pr1 / pr2);
    printf("%-46s %8.2fx\n", "  simpletrace / peer throughput, 2 threads", pr2 / st2);
    printf("%-46s %8.2f ns   %6.1f M records/s\n", "writer drain to /dev/null, 1 buffer", h1.drain_ns,
           1e3 / h1.drain_ns);
    printf("%-46s %8.2f ns   %6.1f M records/s\n", "writer drain to /dev/null, 2 interleaved", h2.drain_ns,
           1e3 / h2.drain_ns);
    printf("%-46s %8.2f ns   %6.1f M records/s\n", "  same, from 1 MiB buffers in cache, 1 buffer", w1.drain_ns,
           1e3 / w1.drain_ns);
    printf("%-46s %8.2f ns   %6.1f M records/s\n", "  same, from 1 MiB buffers in cache, 2", w2.drain_ns,
           1e3 / w2.drain_ns);
    free(peer_ring);
}

int main(int argc, char **argv)
{
    uint64_t events = 1000000;
    double seconds = 1.0;
    const char *dir = "/tmp";
    const char *bufsize = NULL; /* for the sustained and bursty runs; NULL: the runtime's default */
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--events") && i + 1 < argc)
            events = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--bufsize") && i + 1 < argc)
            bufsize = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else
            usage(argv[0]);
    }
    if (events < 1000 || (only && strcmp(only, "hot") && strcmp(only, "sustained") && strcmp(only, "bursty")))
        usage(argv[0]);

    char err[512];
    if (st_configure("enable=bench_event,file=/dev/null", err, sizeof err) != 0) {
        fprintf(stderr, "bench_runtime: %s\n", err);
        return 1;
    }
    printf("simpletrace runtime benchmark\n\n");
    if (!only || !strcmp(only, "hot"))
        hot_section(events);

    if (!only || !strcmp(only, "sustained")) {
        printf("\nsustained for %.1f s, writeout thread writing, %s buffers:\n", seconds, set_bufsize(bufsize));
        char path[4096];
        snprintf(path, sizeof path, "%s/bench-runtime-%d.trace", dir, (int)getpid());
        for (int t = 1; t <= 2; t++) {
            sustained(t, seconds, "/dev/null");
            sustained(t, seconds, path);
        }
        st_trace_file_set_enabled(false);
        unlink(path);
    }
    if (!only || !strcmp(only, "bursty")) {
        printf("\nbursty for %.1f s per line, %ld cores, writing /dev/null, %s buffers:\n", seconds,
               sysconf(_SC_NPROCESSORS_ONLN), set_bufsize(bufsize));
        bursty(4, 5000, 500, seconds);
        bursty(4, 20000, 2000, seconds);
        bursty(8, 20000, 2000, seconds);
    }
    return 0;
}
