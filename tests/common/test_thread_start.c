/*
 * Our threads' start (src/common/thread_start.h): the call returns only once
 * the thread has run (its start-up done: a fork right after it must not find
 * the thread still starting up; seen as CPU time the thread has used, which
 * a thread created but not yet scheduled has none of), the thread has every
 * signal blocked, and carries its name.
 */
#include "tap.h"

#include "thread_start.h"

#include <errno.h>
#include <signal.h>
#include <semaphore.h>
#include <string.h>
#include <time.h>

static sem_t release;
static sigset_t seen_mask;

/* Records its signal mask, then waits to be let go (asleep: an emulator may not schedule a spinning thread fairly). */
static void *body(void *arg)
{
    pthread_sigmask(SIG_SETMASK, NULL, &seen_mask);
    while (sem_wait(&release) != 0)
        ;
    return arg;
}

int main(void)
{
    int rounds_run = 0;

    sem_init(&release, 0, 0);
    char name[32] = "";
    void *ret = NULL;

    for (int i = 0; i < 200; i++) {
        pthread_t t;
        clockid_t cpu;
        struct timespec used = { 0, 0 };
        if (st__thread_start(&t, NULL, body, &rounds_run, "st-test") != 0)
            break;
        /* Read at once, before anything else: the thread must already have run. */
        if (pthread_getcpuclockid(t, &cpu) == 0 && clock_gettime(cpu, &used) == 0)
            rounds_run += used.tv_sec > 0 || used.tv_nsec > 0;
        if (i == 0)
            pthread_getname_np(t, name, sizeof name);
        sem_post(&release);
        pthread_join(t, &ret);
    }
    ok(rounds_run == 200, "every start returned with the thread already run (%d of 200)", rounds_run);
    ok(strcmp(name, "st-test") == 0, "the thread carries its name (\"%s\")", name);
    ok(ret == &rounds_run, "the function's argument and result pass through");
    ok(sigismember(&seen_mask, SIGTERM) && sigismember(&seen_mask, SIGINT) && sigismember(&seen_mask, SIGUSR1),
       "the thread takes no signal: its mask blocks them all");
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, NULL, &now);
    ok(!sigismember(&now, SIGTERM), "the caller's own mask is given back");

    return done_testing();
}
