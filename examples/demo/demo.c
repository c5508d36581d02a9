/*
 * The bundled example: a job queue served by worker threads, traced with
 * simpletrace. Tracing is configured from outside, e.g.
 *
 *   SIMPLETRACE='enable=*,file=demo.trace' ./demo --workers 4 --jobs 20000
 *
 * and the trace read back with `simpletrace print trace-events demo.trace`.
 * At the end it prints what it did and the runtime's counters, which the
 * tests compare with the trace file.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simpletrace/simpletrace.h>

#include "demo-trace.h"

#define CACHE_SLOTS 64

struct cache {
    char keys[CACHE_SLOTS][24];
    bool used[CACHE_SLOTS];
};

struct queue {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    uint64_t next_job;   /* next job to hand out */
    uint64_t submitted;  /* jobs submitted so far */
    uint64_t total;      /* jobs to run */
};

struct worker {
    pthread_t thread;
    int id;
    struct queue *queue;
    struct cache cache;
    uint64_t done;
    int64_t checksum;
};

static uint32_t hash_key(const char *key)
{
    uint32_t h = 2166136261u;
    for (; *key; key++)
        h = (h ^ (uint8_t)*key) * 16777619u;
    return h;
}

/* Looks key up in the worker's little cache, inserting it on a miss. */
static bool cache_lookup(struct cache *cache, const char *key)
{
    uint32_t h = hash_key(key);
    unsigned slot = h % CACHE_SLOTS;
    bool hit = cache->used[slot] && strcmp(cache->keys[slot], key) == 0;
    trace_cache_lookup(cache, key, h, hit);
    if (!hit) {
        if (cache->used[slot])
            trace_cache_evict(cache, cache->keys[slot]);
        snprintf(cache->keys[slot], sizeof cache->keys[slot], "%s", key);
        cache->used[slot] = true;
    }
    return hit;
}

/* Takes the next job, or returns false when all are handed out. */
static bool queue_take(struct queue *q, int worker, uint64_t *job)
{
    unsigned spins = 0;
    pthread_mutex_lock(&q->lock);
    while (q->next_job == q->submitted && q->next_job < q->total) {
        spins++;
        pthread_cond_wait(&q->ready, &q->lock);
    }
    bool have = q->next_job < q->total;
    if (have)
        *job = q->next_job++;
    pthread_mutex_unlock(&q->lock);
    if (spins)
        trace_worker_idle(worker, spins);
    return have;
}

static int64_t run_job(struct worker *w, uint64_t job)
{
    char key[24];
    snprintf(key, sizeof key, "key-%" PRIu64, job % 97);
    bool hit = cache_lookup(&w->cache, key);
    int64_t result = (int64_t)(job * 2654435761u % 1000) - 500;
    if (hit)
        result = -result;
    trace_debug_checksum(job, (uint32_t)result);
    return result;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    uint64_t job = 0;
    while (queue_take(w->queue, w->id, &job)) {
        trace_job_start(w->id, job);
        int64_t result = run_job(w, job);
        w->checksum += result;
        w->done++;
        trace_job_done(w->id, job, result, result >= 0);
    }
    return NULL;
}

/* Traces one event of each argument-kind family, with edge values. */
static void trace_every_kind(void)
{
    static char name[] = "demo";
    char *argv0 = name;
    static const uint8_t bytes[4] = {1, 2, 3, 4};
    trace_all_kinds(-128, 255, -32768, 65535, INT32_MIN, UINT32_MAX, INT64_MIN, UINT64_MAX, 'x',
                    "every kind");
    trace_c_types(-1, 65535, -2L, 3UL, -4LL, (size_t)5, (ssize_t)-6, (uintptr_t)&argv0, (ptrdiff_t)-7);
    trace_pointers(&argv0, &argv0, bytes, NULL);
}

static void submit_jobs(struct queue *q)
{
    static const char *const names[] = {"resize", "encode", "checksum", "compress"};
    for (uint64_t job = 0; job < q->total; job++) {
        const char *name = names[job % 4];
        trace_job_submit(job, name, (size_t)(job % 4096) * 512);
        pthread_mutex_lock(&q->lock);
        q->submitted++;
        pthread_cond_signal(&q->ready);
        pthread_mutex_unlock(&q->lock);
    }
    pthread_mutex_lock(&q->lock);
    pthread_cond_broadcast(&q->ready);
    pthread_mutex_unlock(&q->lock);
}

static int parse_args(int argc, char **argv, int *workers, uint64_t *jobs)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--workers") && i + 1 < argc)
            *workers = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--jobs") && i + 1 < argc)
            *jobs = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--workers N] [--jobs N]\n", argv[0]);
            return -1;
        }
    }
    if (*workers < 1 || *workers > 64) {
        fprintf(stderr, "%s: --workers must be 1..64\n", argv[0]);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int nworkers = 4;
    uint64_t jobs = 20000;
    if (parse_args(argc, argv, &nworkers, &jobs) != 0)
        return 2;

    trace_demo_start(nworkers, jobs, "threads");
    trace_every_kind();

    struct queue q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, jobs};
    struct worker *workers = calloc((size_t)nworkers, sizeof *workers);
    if (!workers)
        return 1;
    for (int i = 0; i < nworkers; i++) {
        workers[i].id = i;
        workers[i].queue = &q;
        if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0) {
            fprintf(stderr, "demo: cannot start worker %d\n", i);
            return 1;
        }
    }
    submit_jobs(&q);

    uint64_t done = 0;
    int64_t checksum = 0;
    for (int i = 0; i < nworkers; i++) {
        pthread_join(workers[i].thread, NULL);
        done += workers[i].done;
        checksum += workers[i].checksum;
    }
    free(workers);
    trace_demo_stop();

    /* Write everything out before reading the counters. */
    st_trace_file_flush();
    struct st_stats stats = {.struct_size = sizeof stats};
    struct st_file_status file = {.struct_size = sizeof file};
    st_stats_get(&stats);
    st_trace_file_status(&file);
    printf("demo: %d workers ran %" PRIu64 " jobs, checksum %" PRId64 "\n", nworkers, done, checksum);
    printf("demo: trace file %s (%s)\n", file.path, file.enabled ? "on" : "off");
    printf("demo: records produced %" PRIu64 ", written %" PRIu64 ", dropped %" PRIu64 "\n",
           stats.produced, stats.written, stats.dropped);
    return done == jobs ? 0 : 1;
}
