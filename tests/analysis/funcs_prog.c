/*
 * A program traced twice at once for `simpletrace latency --functions`:
 * its events by the runtime (SIMPLETRACE=...), its function calls by
 * libsimpletrace-func (built with -finstrument-functions; the directory
 * in SIMPLETRACE_FUNC_DIR). Usage: funcs_prog [THREADS [ITEMS]].
 *
 * main and THREADS workers each run run_batch(ITEMS): a batch_begin
 * event, then per item handle() calling parse() (a leaf that spins a
 * little), fib() (direct recursion) and is_even()/is_odd() (mutual
 * recursion), then batch_end. The calls nest 1 to 14 deep, the batch
 * span sits between run_batch and handle.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "funcs-trace.h"

static volatile unsigned long sink;

static unsigned long __attribute__((noinline)) parse(int item)
{
    unsigned long h = (unsigned long)item;
    for (int i = 0; i < 500 + 100 * (item % 5); i++)
        h = h * 1099511628211ul + (unsigned long)i;
    return h;
}

static long __attribute__((noinline)) fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static int __attribute__((noinline)) is_odd(int n);

static int __attribute__((noinline)) is_even(int n)
{
    return n == 0 ? 1 : is_odd(n - 1);
}

static int __attribute__((noinline)) is_odd(int n)
{
    return n == 0 ? 0 : is_even(n - 1);
}

static void __attribute__((noinline)) handle(int item)
{
    sink += parse(item);
    sink += (unsigned long)fib(4 + item % 5);
    sink += (unsigned long)is_even(item % 9);
}

static void __attribute__((noinline)) run_batch(int worker, int items)
{
    trace_batch_begin(worker, items);
    for (int i = 0; i < items; i++)
        handle(i);
    trace_batch_end(worker, items);
}

struct worker {
    pthread_t thread;
    int id, items;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    run_batch(w->id, w->items);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2, items = argc > 2 ? atoi(argv[2]) : 40;
    if (threads < 0 || threads > 16 || items < 1) {
        fprintf(stderr, "usage: funcs_prog [THREADS [ITEMS]]\n");
        return 2;
    }
    struct worker w[16];
    for (int k = 0; k < threads; k++) {
        w[k] = (struct worker){.id = k + 1, .items = items};
        pthread_create(&w[k].thread, NULL, work, &w[k]);
    }
    run_batch(0, items);
    for (int k = 0; k < threads; k++)
        pthread_join(w[k].thread, NULL);
    return 0;
}
