/*
 * Example for libsimpletrace-func: a program with threads and recursion.
 * Nothing in it refers to the tracer: build it with -finstrument-functions,
 * link it with simpletrace-func, run it, and read ./uftrace.data with uftrace:
 *
 *   cc -g -O1 -finstrument-functions ftdemo.c $(pkg-config --cflags --libs simpletrace-func)
 *   ./a.out 4 20 1000 && uftrace replay && uftrace report && uftrace graph
 *
 * Usage: ftdemo [THREADS [FIB_N [LEAF_CALLS]]] (default 4 20 1000)
 * main computes fib(FIB_N), then starts THREADS workers that each compute
 * fib(FIB_N) and call leaf() LEAF_CALLS times, and joins them.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct job {
    int fib_n;
    long leaf_calls;
    long result;
};

static long __attribute__((noinline)) fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static long __attribute__((noinline)) leaf(long x)
{
    return x * 3 + 1;
}

static long __attribute__((noinline)) sum_leaves(long calls)
{
    long s = 0;
    for (long i = 0; i < calls; i++)
        s += leaf(i) & 7;
    return s;
}

static void *worker(void *arg)
{
    struct job *job = arg;
    job->result = fib(job->fib_n) + sum_leaves(job->leaf_calls);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    int fib_n = argc > 2 ? atoi(argv[2]) : 20;
    long leaf_calls = argc > 3 ? atol(argv[3]) : 1000;
    if (threads < 0 || threads > 1000 || fib_n < 0 || fib_n > 40 || leaf_calls < 0) {
        fprintf(stderr, "usage: ftdemo [THREADS [FIB_N [LEAF_CALLS]]]\n");
        return 2;
    }
    printf("main fib(%d) = %ld\n", fib_n, fib(fib_n));
    pthread_t *tids = calloc((size_t)threads + 1, sizeof *tids);
    struct job *jobs = calloc((size_t)threads + 1, sizeof *jobs);
    if (!tids || !jobs)
        return 1;
    for (int i = 0; i < threads; i++) {
        jobs[i] = (struct job){.fib_n = fib_n, .leaf_calls = leaf_calls};
        if (pthread_create(&tids[i], NULL, worker, &jobs[i]) != 0)
            return 1;
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(tids[i], NULL);
        printf("worker %d result %ld\n", i, jobs[i].result);
    }
    free(tids);
    free(jobs);
    return 0;
}
