/*
 * A program for the folded-stack tests (folded_test.py), built with
 * -finstrument-functions and both tracers: three threads (main and two
 * workers) run requests of phases (paired events) through functions of
 * long names, some reached through several stacks, one recursive. Every
 * function returns before the program ends, so its function trace has no
 * call left open (uftrace counts a call only at its exit). The spans are
 * not as tidy: on each worker a batch_begin / phase_begin / batch_end
 * closes its phase early (whose phase_end then has no begin), and main's
 * session_begin is never ended.
 *
 * main() is not instrumented: uftrace 0.13's `dump --flame-graph` cuts a
 * count to as many digits as its stack has characters ("main 7991" for
 * 799115 ns), and every stack here is longer than any count.
 *
 * With an argument N, each of the three threads only recurses N deep
 * instead: deep stacks, and many distinct ones (the tables' growth).
 *
 * Prints "pid P", then "worker K tid T" for each worker.
 * Tracing is configured from outside (SIMPLETRACE=..., SIMPLETRACE_FUNC_DIR=...).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "folded-app-trace.h"

struct worker {
    pthread_t thread;
    int id, requests, deep; /* deep: recurse this deep instead of serving requests */
    long tid;
};

/* Busy for about us microseconds (not a call the tracer sees: pause_us is not instrumented). */
__attribute__((no_instrument_function)) static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) static unsigned long folded_recursive_descent(int n)
{
    pause_us(5);
    return n <= 0 ? 1 : n + folded_recursive_descent(n - 1);
}

__attribute__((noinline)) static unsigned long folded_compute_checksum_value(int id)
{
    pause_us(20);
    return (unsigned long)id * 2654435761u + folded_recursive_descent(id % 4);
}

__attribute__((noinline)) static unsigned long folded_parse_request_body(int id)
{
    pause_us(10);
    return folded_compute_checksum_value(id) ^ 0x5a5a;
}

__attribute__((noinline)) static unsigned long folded_handle_one_request(int thread, int id)
{
    unsigned long sum = 0;
    trace_request_enter(thread, id);
    for (int p = 0; p < 2; p++) {
        trace_phase_begin(p);
        sum += p ? folded_compute_checksum_value(id) : folded_parse_request_body(id);
        trace_work_note("phase done");
        trace_phase_end(p);
    }
    trace_io_start(id);
    pause_us(15);
    trace_io_done(id);
    trace_request_exit(thread, id);
    return sum;
}

/* A batch whose end comes while one of its phases is open: the engine closes that phase early. */
__attribute__((noinline)) static void folded_run_unbalanced_batch(int n)
{
    trace_batch_begin(n);
    pause_us(10);
    trace_phase_begin(9);
    pause_us(10);
    trace_batch_end(n);
    pause_us(10);
    trace_phase_end(9);
}

__attribute__((noinline)) static void *folded_worker_thread_body(void *arg)
{
    struct worker *w = arg;
    w->tid = (long)syscall(SYS_gettid);
    unsigned long sum = 0;
    if (w->deep)
        return (void *)folded_recursive_descent(w->deep);
    for (int r = 0; r < w->requests; r++)
        sum += folded_handle_one_request(w->id, r);
    folded_run_unbalanced_batch(w->id);
    return (void *)sum;
}

__attribute__((no_instrument_function)) int main(int argc, char **argv)
{
    int deep = argc > 1 ? atoi(argv[1]) : 0;
    struct worker w[2] = {{.id = 1, .requests = 3, .deep = deep}, {.id = 2, .requests = 2, .deep = deep}};
    printf("pid %ld\n", (long)getpid());
    trace_app_ready(2);
    trace_session_begin(0);
    for (int i = 0; i < 2; i++)
        if (pthread_create(&w[i].thread, NULL, folded_worker_thread_body, &w[i]) != 0)
            return 1;
    unsigned long sum = deep ? folded_recursive_descent(deep)
                             : folded_handle_one_request(0, 0) + folded_parse_request_body(7);
    for (int i = 0; i < 2; i++) {
        pthread_join(w[i].thread, NULL);
        printf("worker %d tid %ld\n", w[i].id, w[i].tid);
    }
    return sum == 42 ? 3 : 0; /* uses sum: the calls stay */
}
