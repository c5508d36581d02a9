/*
 * Instrumented program for the end-to-end tests of libsimpletrace-func
 * (built with -finstrument-functions, linked with the static library).
 * Each mode exercises one situation the tracer must get right; ft_e2e.c
 * runs it and reads the trace back with uftrace.
 *
 *   exit N     recursion N deep, then exit(3) from the bottom while another
 *              thread is still running instrumented code
 *   early      one thread ends while the others run; one leaves through
 *              pthread_exit() from 5 calls deep
 *   fork       the parent forks; the child works and exit(0)s from 2 deep;
 *              the parent waits, then works again
 *   signal N   N calls of a leaf while a profiling timer's handler calls
 *              instrumented functions (nesting guard)
 *   api DIR    the public API: set_dir, set_enabled, flush, then _exit()
 *   spawn PROG ARGS...  runs another traced program (posix_spawn, then
 *              exec: no fork handlers) that must join this trace directory
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <simpletrace/functrace.h>

#define NOINLINE __attribute__((noinline))

static atomic_int stop_spinning;
static volatile long sink;

NOINLINE static long fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

/* --- exit ---------------------------------------------------------------- */

NOINLINE static void tick(void)
{
    sink++;
}

NOINLINE static void *spin(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_spinning)) {
        tick();
        sched_yield(); /* keeps the trace small; exit() still finds it mid-call */
    }
    return NULL;
}

NOINLINE static void deep(int n, int code)
{
    if (n > 1) {
        deep(n - 1, code);
    } else if (code >= 0) {
        fflush(stdout);
        exit(code);
    }
}

static int mode_exit(int depth)
{
    pthread_t t;
    if (pthread_create(&t, NULL, spin, NULL) != 0)
        return 1;
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL); /* let the spinner trace for a while */
    deep(depth, 3);
    return 1; /* not reached */
}

/* --- early --------------------------------------------------------------- */

NOINLINE static void *short_task(void *arg)
{
    (void)arg;
    sink += fib(5);
    return NULL;
}

NOINLINE static void leave_from(int n, bool leave)
{
    if (n > 1)
        leave_from(n - 1, leave);
    else if (leave)
        pthread_exit(NULL);
}

NOINLINE static void *exiting_task(void *arg)
{
    (void)arg;
    leave_from(5, true);
    return NULL;
}

NOINLINE static void *long_task(void *arg)
{
    pthread_t *first = arg;
    pthread_join(*first, NULL); /* outlives the short task */
    sink += fib(8);
    return NULL;
}

static int mode_early(void)
{
    pthread_t a, b, c;
    if (pthread_create(&a, NULL, short_task, NULL) != 0 || pthread_create(&b, NULL, long_task, &a) != 0 ||
        pthread_create(&c, NULL, exiting_task, NULL) != 0)
        return 1;
    pthread_join(b, NULL);
    pthread_join(c, NULL);
    sink += fib(6);
    return 0;
}

/* --- fork ------------------------------------------------------------------ */

NOINLINE static void before_fork(void)
{
    sink += fib(4);
}

NOINLINE static void after_fork(void)
{
    sink += fib(3);
}

NOINLINE static void child_work(void)
{
    sink += fib(10);
    fflush(stdout);
    exit(0);
}

NOINLINE static int spawn(void)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0)
        child_work();
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    printf("child %d\n", (int)pid);
    return 0;
}

static int mode_fork(void)
{
    before_fork();
    if (spawn() != 0)
        return 1;
    after_fork();
    return 0;
}

/* --- signal --------------------------------------------------------------- */

static volatile sig_atomic_t signals;

NOINLINE static void handler_work(void)
{
    sink++;
}

NOINLINE static void on_tick(int sig)
{
    (void)sig;
    signals++;
    handler_work();
}

NOINLINE static void work_leaf(void)
{
    sink++;
}

static int mode_signal(long calls)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 50}, {0, 50}};
    setitimer(ITIMER_PROF, &it, NULL);
    for (long i = 0; i < calls; i++)
        work_leaf();
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    printf("signals %d\n", (int)signals);
    return 0;
}

/* --- api ----------------------------------------------------------------- */

NOINLINE static void hidden(void)
{
    sink++;
}

NOINLINE static void visible(void)
{
    sink++;
}

NOINLINE static void after_flush(void)
{
    sink++;
}

static int mode_api(const char *dir)
{
    printf("set_dir %d\n", st_functrace_set_dir(dir));
    printf("pause %d\n", st_functrace_set_enabled(false));
    for (int i = 0; i < 10; i++)
        hidden();
    printf("resume %d\n", st_functrace_set_enabled(true));
    for (int i = 0; i < 7; i++)
        visible();
    printf("flush %d\n", st_functrace_flush());
    printf("set_dir_again %d\n", st_functrace_set_dir(dir) == -EBUSY ? -EBUSY : 0);
    struct st_functrace_stats stats = {.struct_size = sizeof stats};
    int ret = st_functrace_get_stats(&stats);
    printf("stats %d written %llu lost %llu threads %u\n", ret, (unsigned long long)stats.written,
           (unsigned long long)stats.lost, stats.threads);
    after_flush();
    fflush(stdout);
    _exit(0); /* no exit-time write-out: only what the flush wrote remains */
}

/* --- spawn ------------------------------------------------------------------ */

extern char **environ;

NOINLINE static int run_child(char **argv)
{
    pid_t pid;
    int status;
    if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0 || waitpid(pid, &status, 0) != pid)
        return 1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "exit") == 0 && argc > 2)
        return mode_exit(atoi(argv[2]));
    if (strcmp(mode, "early") == 0)
        return mode_early();
    if (strcmp(mode, "fork") == 0)
        return mode_fork();
    if (strcmp(mode, "signal") == 0 && argc > 2)
        return mode_signal(atol(argv[2]));
    if (strcmp(mode, "api") == 0 && argc > 2)
        return mode_api(argv[2]);
    if (strcmp(mode, "spawn") == 0 && argc > 2)
        return run_child(argv + 2);
    fprintf(stderr, "usage: ft_scenarios exit N | early | fork | signal N | api DIR | spawn PROG ARGS...\n");
    return 2;
}
