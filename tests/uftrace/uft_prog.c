/*
 * A program for `uftrace record` (built with -finstrument-functions, and
 * run with --no-libcall): main calls middle N times (argv[1], default 3),
 * each middle calls leaf twice, and a second thread does the same once.
 * What the real uftrace records of it is what tests/uftrace reads back.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static int leaf(int x)
{
    return x * 3 + 1;
}

__attribute__((noinline)) static int middle(int x)
{
    return leaf(x) + leaf(x + 1);
}

__attribute__((noinline)) static void *worker(void *arg)
{
    int *v = arg;
    *v = middle(*v);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3, sum = 0, v = 7;
    pthread_t t;
    for (int i = 0; i < n; i++)
        sum += middle(i);
    if (pthread_create(&t, NULL, worker, &v) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    printf("%d %d\n", sum, v);
    return 0;
}
