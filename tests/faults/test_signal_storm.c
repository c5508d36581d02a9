/*
 * Signals interrupting traced code. Three threads trace without pause; an
 * interval timer sends SIGALRM at a high rate (every 20 us asked; the
 * kernel delivers what it can) and the main thread sends SIGUSR1 to the
 * tracing threads in bursts. Both handlers trace, and a SIGUSR1 handler may
 * interrupt a SIGALRM one (different signals nest), so records are
 * interrupted at every point of begin/commit, and handlers interrupt
 * handlers. Nothing may deadlock (the test is bounded by its timeout), no
 * record may be torn (the strict decoder reads every one), each thread's
 * loop sequence stays ordered, and handled + looped = written + dropped.
 * Handlers that run after a thread's exit hook (ThreadSanitizer delivers
 * the signals it deferred at the thread's last libc calls) count as lost
 * drops, reported under pid 0xffffffff (ring.h).
 *
 * The main thread blocks both signals and never traces, so what it checks
 * is quiet. (A first event in a handler is tested in test_signal_first.c.)
 */
#include <pthread.h>
#include <sys/time.h>
#include <time.h>

#include "fault_test.h"

#define THREADS 3

static uint64_t produced, handled;
static int stop, started;

static void handler(int sig)
{
    uint64_t n = __atomic_fetch_add(&handled, 1, __ATOMIC_RELAXED);
    (void)sig;
    test_trace_i(&ft_sig, n);
    __atomic_fetch_add(&produced, 1, __ATOMIC_RELAXED);
}

static void *spin(void *arg)
{
    uint64_t th = (uint64_t)(uintptr_t)arg, seq = 0;

    ft_trace(th, seq++, &produced); /* the buffer exists before any signal */
    __atomic_fetch_add(&started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
        ft_trace(th, seq++, &produced);
    return NULL;
}

int main(void)
{
    struct sigaction sa;
    struct itimerval it = {{0, 20}, {0, 20}}, off = {{0, 0}, {0, 0}};
    uint64_t end;
    pthread_t th[THREADS];
    sigset_t set;
    struct ft_sum s;
    char cfg[1400];
    unsigned long ms = test_scale(1000, 300), bursts = 0;

    test_tmpdir();
    snprintf(cfg, sizeof cfg, "ft_*,file=%s", test_path("sig.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure");
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    /* Threads created from here inherit an open mask; main blocks both. */
    for (unsigned i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, spin, (void *)(uintptr_t)i);
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < THREADS)
        sched_yield();

    setitimer(ITIMER_REAL, &it, NULL);
    end = ft_now_ms() + ms;
    do {
        for (unsigned i = 0; i < 64; i++)
            pthread_kill(th[i % THREADS], SIGUSR1);
        bursts++;
        sched_yield();
    } while (ft_now_ms() < end);
    setitimer(ITIMER_REAL, &off, NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    diag("%llu handler runs (SIGALRM + %lu bursts of SIGUSR1) while %d threads traced",
         (unsigned long long)handled, bursts, THREADS);
    ok(handled > 100, "handlers ran (%llu)", (unsigned long long)handled);
    is_int(st_trace_file_flush(), 0, "flush: nothing deadlocked");
    ft_sum_init(&s);
    ft_sum_file(&s, test_path("sig.trace"), 0);
    diag("handler records in the file: %llu; lost drops (after exit hooks): %llu", (unsigned long long)s.sig_events,
         (unsigned long long)s.lost_drops);
    ok(s.sig_events > 0, "handler records reached the file");
    ft_check("signal storm", &s, produced);
    st_trace_file_set_enabled(false);
    return done_testing();
}
