/*
 * A thread's very first event traced from a signal handler. The buffer is
 * then created inside the handler, so creating it must be async-signal-
 * safe (src/runtime/core/ring.c: one mmap, a lock-free push, no malloc, no lock).
 *
 * Each round starts fresh threads that have never traced: two "quiet" ones
 * that only call malloc/free and st_stats_get() (which takes the buffer
 * list's lock), so a handler that allocated or took that lock would
 * deadlock or corrupt the heap, and two "busy" ones that start tracing at
 * once, so a handler may interrupt their own first-event setup (then its
 * event is dropped and counted). The main thread sends them SIGUSR1 in
 * bursts, also while they exit. Meanwhile a churn thread keeps starting
 * short-lived threads that trace (first events on other threads, pushed
 * concurrently) and signals each as it starts, and the writer reaps the
 * buffers of the threads that ended. Nothing may deadlock (the test is
 * bounded by its timeout), and everything adds up exactly.
 */
#include <pthread.h>
#include <time.h>

#include "fault_test.h"

#define QUIET 2
#define BUSY 2

static uint64_t produced;
static uint64_t seqs[BUSY]; /* per busy slot, across rounds: stays ordered */
static int round_stop, churn_stop;
enum { NEW_ROLE, QUIET_ROLE, BUSY_ROLE, CHURN_ROLE }; /* NEW: signalled before it set its role */
static uint64_t first_in_handler[4]; /* threads whose first event was a handler's, per role */
static _Thread_local int traced, role;

static void handler(int sig)
{
    (void)sig;
    if (!traced)
        __atomic_fetch_add(&first_in_handler[role], 1, __ATOMIC_RELAXED);
    traced = 1;
    test_trace_i(&ft_sig, 1);
    __atomic_fetch_add(&produced, 1, __ATOMIC_RELAXED);
}

/* Until the round ends: malloc/free, and now and then the list lock (st_stats_get). */
static void quiet_loop(void)
{
    struct st_stats st = {.struct_size = sizeof st};
    unsigned i = 0;

    while (!__atomic_load_n(&round_stop, __ATOMIC_RELAXED)) {
        volatile char *p = malloc(16 + (i & 1023));
        if (p)
            p[0] = 1;
        free((void *)p);
        if ((++i & 15) == 0)
            st_stats_get(&st);
    }
}

static void *quiet_thread(void *arg)
{
    (void)arg;
    role = QUIET_ROLE;
    quiet_loop();
    return NULL;
}

static void *busy_thread(void *arg)
{
    uint64_t *seq = arg;

    role = BUSY_ROLE;
    traced = 1;
    for (unsigned i = 0; i < 200 && !__atomic_load_n(&round_stop, __ATOMIC_RELAXED); i++)
        ft_trace((uint64_t)(seq - seqs), (*seq)++, &produced);
    quiet_loop();
    return NULL;
}

static void *churn_child(void *arg)
{
    (void)arg;
    role = CHURN_ROLE;
    traced = 1;
    for (unsigned i = 0; i < 3; i++) {
        test_trace_i(&ft_sig, 2);
        __atomic_fetch_add(&produced, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void *churn(void *arg)
{
    unsigned long *n = arg;

    while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
        pthread_t c;
        if (pthread_create(&c, NULL, churn_child, NULL) != 0)
            continue;
        pthread_kill(c, SIGUSR1);
        pthread_join(c, NULL);
        ++*n;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    uint64_t end;
    pthread_t th[QUIET + BUSY], ch;
    struct ft_sum s;
    char cfg[1400];
    unsigned long ms = test_scale(1500, 600), rounds = 0, kills = 0, children = 0;

    test_tmpdir();
    snprintf(cfg, sizeof cfg, "ft_*,bufsize=64K,file=%s", test_path("first.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure");
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_create(&ch, NULL, churn, &children);

    end = ft_now_ms() + ms;
    do {
        __atomic_store_n(&round_stop, 0, __ATOMIC_RELAXED);
        for (unsigned i = 0; i < QUIET + BUSY; i++)
            pthread_create(&th[i], NULL, i < QUIET ? quiet_thread : busy_thread, i < QUIET ? NULL : &seqs[i - QUIET]);
        for (unsigned k = 0; k < 16; k++) {
            for (unsigned i = 0; i < QUIET + BUSY; i++)
                kills += pthread_kill(th[i], SIGUSR1) == 0;
            sched_yield();
        }
        __atomic_store_n(&round_stop, 1, __ATOMIC_RELAXED);
        for (unsigned k = 0; k < 4; k++) /* while they exit */
            for (unsigned i = 0; i < QUIET + BUSY; i++)
                kills += pthread_kill(th[i], SIGUSR1) == 0;
        for (unsigned i = 0; i < QUIET + BUSY; i++)
            pthread_join(th[i], NULL);
        rounds++;
    } while (ft_now_ms() < end);
    __atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
    pthread_join(ch, NULL);

    diag("%lu rounds, %lu signals sent, %lu churn threads", rounds, kills, children);
    diag("threads whose first event was a handler's: %llu quiet, %llu busy, %llu churn, %llu just started",
         (unsigned long long)first_in_handler[QUIET_ROLE], (unsigned long long)first_in_handler[BUSY_ROLE],
         (unsigned long long)first_in_handler[CHURN_ROLE], (unsigned long long)first_in_handler[NEW_ROLE]);
    ok(first_in_handler[QUIET_ROLE] > 0, "first events traced from a signal handler (%llu quiet threads)",
       (unsigned long long)first_in_handler[QUIET_ROLE]);
    is_int(st_trace_file_flush(), 0, "flush: nothing deadlocked");
    ft_sum_init(&s);
    ft_sum_file(&s, test_path("first.trace"), 0);
    diag("handler and churn records %llu; lost drops (nested in a first event, after an exit hook) %llu",
         (unsigned long long)s.sig_events, (unsigned long long)s.lost_drops);
    ft_check("first event in a handler", &s, produced);
    ft_print_check(argc > 1 ? argv[1] : NULL, test_path("first.trace"), &s, "first event in a handler");
    st_trace_file_set_enabled(false);
    return done_testing();
}
