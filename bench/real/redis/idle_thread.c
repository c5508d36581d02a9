/*
 * The control of bench/real/redis/run.sh: LD_PRELOADed into the
 * uninstrumented Redis, it gives the process one more thread that never
 * runs (in pause() with every signal blocked), as a writeout
 * thread's mere existence would. glibc takes its single-thread fast paths
 * (no lock prefix in malloc, stdio, ...) only while a process has never
 * had a second thread. The thread is started again in every fork child
 * (`daemonize yes` forks, and a fork child has only the forking thread).
 */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

static void *idle(void *arg)
{
    (void)arg;
    for (;;)
        pause(); /* every signal is blocked (start_idle): no signal is ever taken here */
    return NULL;
}

static void start_idle(void)
{
    sigset_t all, old;
    pthread_t t;

    /* The thread inherits this mask: it never takes a signal meant for the program. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&t, NULL, idle, NULL) == 0)
        pthread_detach(t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

__attribute__((constructor)) static void idle_thread_init(void)
{
    start_idle();
    pthread_atfork(NULL, NULL, start_idle);
}
