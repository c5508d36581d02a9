/*
 * The program the monitor tests steer: traced with code generated from
 * trace-events, configured only by SIMPLETRACE, and driven line by line on
 * stdin so a test knows exactly what it traced before it asks the monitor:
 *
 *   emit N          N x (mon_tick(i), mon_msg(0, "hello i")), then "done"
 *   threads T N     T threads each trace N x mon_work, joined, then "done"
 *   spin T          T threads trace mon_work until "stop" (prints "done" at once)
 *   stop            ends the spinning threads, then "done"
 *   ping            "done"
 *   quit            mon_quit, then exit(0) (atexit hooks run)
 *
 * It prints "ready PID" first. Anything else: "unknown" and goes on.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simpletrace/simpletrace.h>

#include "mon-trace.h"

#define MAX_THREADS 64

static pthread_t threads[MAX_THREADS];
static int nthreads;
static uint64_t per_thread;
static int spinning; /* atomic: spinners run while set */

static void *work(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (uint64_t i = 0; i < per_thread; i++)
        trace_mon_work(id, i, i & 1);
    return NULL;
}

static void *spin(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (uint64_t i = 0; __atomic_load_n(&spinning, __ATOMIC_RELAXED); i++) {
        trace_mon_work(id, i, i & 1);
        if ((i & 255) == 0)
            trace_mon_msg(id, "spinning along with a string argument");
    }
    return NULL;
}

static void join_all(void)
{
    for (int i = 0; i < nthreads; i++)
        pthread_join(threads[i], NULL);
    nthreads = 0;
}

static void start(int n, void *(*fn)(void *))
{
    join_all();
    for (int i = 0; i < n && i < MAX_THREADS; i++)
        if (pthread_create(&threads[nthreads], NULL, fn, (void *)(intptr_t)(i + 1)) == 0)
            nthreads++;
}

int main(void)
{
    char line[256];

    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("ready %ld\n", (long)getpid());
    while (fgets(line, sizeof line, stdin)) {
        unsigned long long a = 0, b = 0;
        if (sscanf(line, "emit %llu", &a) == 1) {
            for (uint64_t i = 0; i < a; i++) {
                char text[32];
                snprintf(text, sizeof text, "hello %" PRIu64, i);
                trace_mon_tick(i);
                trace_mon_msg(0, text);
                trace_mon_never((int)i);
            }
        } else if (sscanf(line, "threads %llu %llu", &a, &b) == 2) {
            per_thread = b;
            start((int)a, work);
            join_all();
        } else if (sscanf(line, "spin %llu", &a) == 1) {
            __atomic_store_n(&spinning, 1, __ATOMIC_RELAXED);
            start((int)a, spin);
        } else if (strcmp(line, "stop\n") == 0) {
            __atomic_store_n(&spinning, 0, __ATOMIC_RELAXED);
            join_all();
        } else if (strcmp(line, "quit\n") == 0) {
            trace_mon_quit();
            __atomic_store_n(&spinning, 0, __ATOMIC_RELAXED);
            join_all();
            exit(0);
        } else if (strcmp(line, "ping\n") != 0) {
            printf("unknown\n");
            continue;
        }
        printf("done\n");
    }
    __atomic_store_n(&spinning, 0, __ATOMIC_RELAXED);
    join_all();
    return 0;
}
