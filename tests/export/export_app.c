/*
 * A program traced by the runtime for the export tests: two worker
 * threads, each serving requests made of steps, with a note inside every
 * step. Thread 0 serves 3 requests of 2 steps, thread 1 2 requests of 4
 * steps: 5 request calls, 14 step calls in all, nested request > step.
 * Prints "pid P", then "worker K tid T" for each thread, so the test knows
 * who is who.
 * Tracing is configured from outside (SIMPLETRACE=enable=*,file=...).
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "export-app-trace.h"

struct worker {
    pthread_t thread;
    int id, requests, steps;
    long tid;
};

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void *serve(void *arg)
{
    struct worker *w = arg;
    w->tid = (long)syscall(SYS_gettid);
    for (int r = 0; r < w->requests; r++) {
        trace_request_enter(w->id, r);
        for (int s = 0; s < w->steps; s++) {
            trace_step_begin(s);
            pause_us(50);
            trace_app_note("working");
            pause_us(50);
            trace_step_end(s);
        }
        trace_request_exit(w->id, r, 0);
    }
    return NULL;
}

int main(void)
{
    struct worker w[2] = {{.id = 0, .requests = 3, .steps = 2}, {.id = 1, .requests = 2, .steps = 4}};
    printf("pid %ld\n", (long)getpid());
    trace_app_start(2);
    for (int i = 0; i < 2; i++)
        pthread_create(&w[i].thread, NULL, serve, &w[i]);
    for (int i = 0; i < 2; i++) {
        pthread_join(w[i].thread, NULL);
        printf("worker %d tid %ld\n", w[i].id, w[i].tid);
    }
    return 0;
}
