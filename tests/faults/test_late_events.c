/*
 * Events traced after a thread's exit hook ran. The runtime hands a
 * thread's buffer to the writer (which frees it once drained) from a
 * thread-specific-data destructor; what the thread traces after that may
 * not touch the buffer, and must still be counted: as a lost drop, in a
 * dropped record with pid 0xffffffff (ring.h), and in st_stats_get().
 *
 * Deterministic: each thread arms a destructor of its own that traces and
 * re-arms itself once, so its second call runs in a later destructor round
 * than the runtime's (its first may too: keys made later run later).
 * Random: threads that trace and exit while signals whose handler traces
 * hit them, so handlers run before, during and after the exit hook, while
 * the writer reaps the buffers of the threads that ended.
 */
#include <pthread.h>
#include <time.h>

#include "fault_test.h"

#define DTOR_THREADS 16
#define SIG_THREADS 4

static uint64_t produced;
static pthread_key_t late_key;
static uint64_t seqs[SIG_THREADS]; /* per thread slot, across rounds: stays ordered */

static void late_dtor(void *v)
{
    test_trace_i(&ft_sig, (uint64_t)(uintptr_t)v);
    __atomic_fetch_add(&produced, 1, __ATOMIC_RELAXED);
    if (v == (void *)1)
        pthread_setspecific(late_key, (void *)2); /* once more, in the next round */
}

static void *dtor_thread(void *arg)
{
    uint64_t th = (uint64_t)(uintptr_t)arg;

    for (uint64_t seq = 0; seq < 10; seq++)
        ft_trace(th, seq, &produced);
    pthread_setspecific(late_key, (void *)1);
    return NULL;
}

static void handler(int sig)
{
    (void)sig;
    test_trace_i(&ft_sig, 0);
    __atomic_fetch_add(&produced, 1, __ATOMIC_RELAXED);
}

static void *sig_thread(void *arg)
{
    uint64_t *seq = arg;

    for (unsigned i = 0; i < 50; i++)
        ft_trace(DTOR_THREADS + (uint64_t)(seq - seqs), (*seq)++, &produced);
    return NULL;
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    struct st_stats st = {.struct_size = sizeof st};
    struct ft_sum s;
    uint64_t end;
    pthread_t th[DTOR_THREADS];
    char cfg[1400];
    unsigned long ms = test_scale(800, 300), rounds = 0, kills = 0;

    test_tmpdir();
    snprintf(cfg, sizeof cfg, "ft_*,bufsize=64K,file=%s", test_path("late.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure");
    pthread_key_create(&late_key, late_dtor);

    /* Destructors tracing after the runtime's. */
    for (unsigned i = 0; i < DTOR_THREADS; i++)
        pthread_create(&th[i], NULL, dtor_thread, (void *)(uintptr_t)i);
    for (unsigned i = 0; i < DTOR_THREADS; i++)
        pthread_join(th[i], NULL);
    st_stats_get(&st);
    is_u64(st.produced, produced, "destructors: stats.produced counts the late events at once");
    is_int(st_trace_file_flush(), 0, "destructors: flush");
    ft_sum_init(&s);
    ft_sum_file(&s, test_path("late.trace"), 0);
    ok(s.lost_drops >= DTOR_THREADS && s.lost_drops <= 2 * DTOR_THREADS,
       "destructors: late events reach the file as lost drops (%llu, %d..%d)", (unsigned long long)s.lost_drops,
       DTOR_THREADS, 2 * DTOR_THREADS);
    ft_check("destructors", &s, produced);

    /* Signals at threads that trace and end, while the writer reaps. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    end = ft_now_ms() + ms;
    do {
        for (unsigned i = 0; i < SIG_THREADS; i++)
            pthread_create(&th[i], NULL, sig_thread, &seqs[i]);
        /* Until each is joined: before, during and after its exit hook. */
        for (unsigned k = 0; k < 40; k++)
            for (unsigned i = 0; i < SIG_THREADS; i++)
                kills += pthread_kill(th[i], SIGUSR1) == 0;
        for (unsigned i = 0; i < SIG_THREADS; i++)
            pthread_join(th[i], NULL);
        rounds++;
    } while (ft_now_ms() < end);
    diag("%lu rounds of %d threads, %lu signals sent", rounds, SIG_THREADS, kills);
    is_int(st_trace_file_flush(), 0, "signals: flush");
    ft_sum_init(&s);
    ft_sum_file(&s, test_path("late.trace"), 0);
    diag("signals: lost drops in the file %llu (handlers after an exit hook, and the destructors')",
         (unsigned long long)s.lost_drops);
    ft_check("signals", &s, produced);
    ft_print_check(argc > 1 ? argv[1] : NULL, test_path("late.trace"), &s, "signals");
    st_trace_file_set_enabled(false);
    return done_testing();
}
