/*
 * A traced program whose spans have known durations, for the latency and
 * compare tests (events: spans-events). Tracing is configured from
 * outside (SIMPLETRACE=enable=*,file=...).
 *
 * The main thread runs --count jobs, each nested job > stage > io (the
 * built-in rules *_enter:*_exit, *_begin:*_end, *_start:*_done); every io
 * lasts a duration drawn from a log-normal distribution around --base-us
 * microseconds (sigma 0.4, cut at 3 sigma), scaled by 1 + --shift-pct/100,
 * from a generator seeded by --seed: two runs with the same seed draw the
 * same durations, and two runs differing only by the shift differ by a
 * known factor. Stage 0 of each job submits a request (req_submit, keyed
 * by req) that a worker thread completes (req_complete) after its own
 * drawn duration; pair them with --pair=req_submit:req_complete=request@req.
 *
 * What makes no span, on purpose (counted on stdout as ground truth):
 *   - every 20th job (i % 20 == 7) submits its request's key twice, the
 *     first never completed ("key_reused");
 *   - every 25th job (i % 25 == 12) is followed by a req_complete of a key
 *     never submitted and a stage_end with no stage open
 *     ("unmatched_end_request", "unmatched_end_stage");
 *   - job count/2 never ends its stage 1: job_exit closes it
 *     ("closed_stage");
 *   - at exit, one job, its stage 0 and its io, and 3 requests are left
 *     open ("open_job", "open_stage", "open_io", "open_request").
 * Request keys count from 1 in every run, so two processes share keys.
 *
 * Durations are realised by sleeping, then spinning on CLOCK_MONOTONIC
 * for the last 80 us, so they are close to what was drawn.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "spans-trace.h"

#define MAX_WORKERS 8
#define QCAP 1024

static int opt_count = 100, opt_base_us = 300, opt_shift_pct, opt_workers = 2;
static uint64_t rng_state;

/* splitmix64: a small generator whose sequence depends only on the seed. */
static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_unit(void) /* in (0, 1) */
{
    return ((double)(rng_next() >> 11) + 0.5) / 9007199254740992.0;
}

/* A duration in microseconds: base * exp(0.4 z), z standard normal cut at 3, times the shift. */
static int draw_us(void)
{
    double z = sqrt(-2.0 * log(rng_unit())) * cos(6.283185307179586 * rng_unit());
    if (z > 3.0)
        z = 3.0;
    if (z < -3.0)
        z = -3.0;
    double us = opt_base_us * exp(0.4 * z) * (1.0 + opt_shift_pct / 100.0);
    return us < 1.0 ? 1 : (int)(us + 0.5);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void wait_us(int us)
{
    uint64_t until = now_ns() + (uint64_t)us * 1000u;
    if (us > 80) {
        long ns = (long)(us - 80) * 1000;
        struct timespec ts = {ns / 1000000000, ns % 1000000000};
        nanosleep(&ts, NULL);
    }
    while (now_ns() < until)
        ;
}

/* The requests waiting for a worker. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct { uint64_t req; int us; } item[QCAP];
    unsigned head, len;
    int done;
} q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {{0, 0}}, 0, 0, 0};

static void q_push(uint64_t req, int us)
{
    pthread_mutex_lock(&q.lock);
    while (q.len == QCAP)
        pthread_cond_wait(&q.cond, &q.lock);
    q.item[(q.head + q.len) % QCAP].req = req;
    q.item[(q.head + q.len) % QCAP].us = us;
    q.len++;
    pthread_cond_broadcast(&q.cond);
    pthread_mutex_unlock(&q.lock);
}

struct worker {
    pthread_t thread;
    int id;
    long tid;
    unsigned completed;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    w->tid = (long)syscall(SYS_gettid);
    for (;;) {
        pthread_mutex_lock(&q.lock);
        while (q.len == 0 && !q.done)
            pthread_cond_wait(&q.cond, &q.lock);
        if (q.len == 0) {
            pthread_mutex_unlock(&q.lock);
            return NULL;
        }
        uint64_t req = q.item[q.head].req;
        int us = q.item[q.head].us;
        q.head = (q.head + 1) % QCAP;
        q.len--;
        pthread_cond_broadcast(&q.cond);
        pthread_mutex_unlock(&q.lock);
        wait_us(us);
        trace_req_complete(req, w->id);
        w->completed++;
    }
}

static int parse_opt(const char *arg, const char *name, int *out)
{
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0 || arg[n] != '=')
        return 0;
    char *end;
    long v = strtol(arg + n + 1, &end, 10);
    if (*end || end == arg + n + 1) {
        fprintf(stderr, "spans_prog: bad %s\n", arg);
        exit(2);
    }
    *out = (int)v;
    return 1;
}

int main(int argc, char **argv)
{
    static const char *const kinds[] = {"read", "write", "sync"};
    int seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!parse_opt(argv[i], "--count", &opt_count) && !parse_opt(argv[i], "--seed", &seed) &&
            !parse_opt(argv[i], "--base-us", &opt_base_us) && !parse_opt(argv[i], "--shift-pct", &opt_shift_pct) &&
            !parse_opt(argv[i], "--workers", &opt_workers)) {
            fprintf(stderr, "usage: spans_prog [--count=N] [--seed=S] [--base-us=U] [--shift-pct=P] [--workers=W]\n");
            return 2;
        }
    }
    if (opt_count < 2 || opt_base_us < 1 || opt_shift_pct <= -100 || opt_workers < 1 || opt_workers > MAX_WORKERS) {
        fprintf(stderr, "spans_prog: out of range\n");
        return 2;
    }
    rng_state = (uint64_t)seed;

    struct worker w[MAX_WORKERS];
    printf("pid %ld\n", (long)getpid());
    printf("main_tid %ld\n", (long)syscall(SYS_gettid));
    trace_spans_start(opt_count, seed, opt_base_us, opt_shift_pct);
    for (int k = 0; k < opt_workers; k++) {
        w[k] = (struct worker){.id = k};
        pthread_create(&w[k].thread, NULL, work, &w[k]);
    }

    uint64_t next_req = 1;
    unsigned submitted = 0, reused = 0, orphan = 0, closed = 0;
    for (int i = 0; i < opt_count; i++) {
        trace_job_enter(i);
        for (int s = 0; s < 2; s++) {
            trace_stage_begin(i, s);
            int us = draw_us();
            trace_io_start(i, us);
            wait_us(us);
            trace_io_done(i);
            if (s == 0) {
                uint64_t req = next_req++;
                int req_us = draw_us();
                if (i % 20 == 7) { /* the same key again before its end: the first is never completed */
                    trace_req_submit(req, kinds[i % 3], req_us);
                    reused++;
                }
                trace_req_submit(req, kinds[i % 3], req_us);
                q_push(req, req_us);
                submitted++;
            }
            if (s == 1 && i == opt_count / 2) {
                closed++; /* job_exit closes this stage */
                continue;
            }
            trace_stage_end(i, s);
        }
        trace_job_exit(i);
        if (i % 25 == 12) { /* ends without a begin, at the top of the main thread's stack */
            trace_req_complete(1000000000u + (uint64_t)i, -1);
            trace_stage_end(i, 9);
            orphan++;
        }
    }

    pthread_mutex_lock(&q.lock);
    q.done = 1;
    pthread_cond_broadcast(&q.cond);
    pthread_mutex_unlock(&q.lock);
    unsigned completed = 0;
    for (int k = 0; k < opt_workers; k++) {
        pthread_join(w[k].thread, NULL);
        printf("worker %d tid %ld\n", k, w[k].tid);
        completed += w[k].completed;
    }

    /* Left open at exit: a job, its stage and its io, and 3 requests no worker will see. */
    trace_job_enter(opt_count);
    trace_stage_begin(opt_count, 0);
    trace_io_start(opt_count, 0);
    for (int k = 0; k < 3; k++)
        trace_req_submit(next_req++, kinds[k], 0);

    printf("jobs %d\n", opt_count);
    printf("requests_completed %u\n", completed);
    printf("requests_submitted %u\n", submitted);
    printf("key_reused %u\n", reused);
    printf("unmatched_end_request %u\n", orphan);
    printf("unmatched_end_stage %u\n", orphan);
    printf("closed_stage %u\n", closed);
    printf("open_job 1\nopen_stage 1\nopen_io 1\nopen_request 3\n");
    return 0;
}
