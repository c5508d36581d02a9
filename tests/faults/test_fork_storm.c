/*
 * fork() storms: four threads trace without pause while the main thread
 * forks 200 children (fewer under sanitizers), eight at a time. Each child
 * traces 20 records into its own file (F-<pid>) and leaves with exit()
 * (its file is drained: it must hold exactly its 20 records) or, one in
 * four, with _exit() (no drain: its file, if any, must still decode). The
 * parent's file stays intact: every parent thread's sequence in order and
 * everything adds up exactly; no child's record is in it.
 *
 * Not in the 'threads' suite: a child of a multi-threaded parent starts
 * its own writeout thread, which ThreadSanitizer does not support.
 *
 * Under AddressSanitizer (GCC 12's libasan) every child leaves with
 * _exit() without tracing: its allocator is not locked across fork(), so
 * a child that allocates (its first event creates its buffer) can block for
 * ever on a lock some parent thread held at the fork (seen in calloc and
 * aligned_alloc). Under ASan this test therefore checks the parent's side
 * of the storm only; `make check` runs the whole suite in a plain build
 * too, where the children trace and exit() as described above.
 */
#if defined(__SANITIZE_ADDRESS__)
#define FORK_USE_EXIT 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FORK_USE_EXIT 0
#endif
#endif
#ifndef FORK_USE_EXIT
#define FORK_USE_EXIT 1
#endif
#include <pthread.h>
#include <time.h>

#include "fault_test.h"

#define PARENT_THREADS 4
#define CHILD_THREAD 40 /* the thread index children trace with */
#define CHILD_RECORDS 20

static uint64_t produced;
static int stop;
static pid_t parent_pid;

/*
 * LeakSanitizer's hook: no leak check in the children. A child inherits
 * the buffer a parent thread was allocating when fork() came (linked by
 * that thread once it gets buf_lock, which in the child never happens), and
 * LSan cannot stop the parent threads' ghosts; neither is a leak.
 */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return parent_pid && getpid() != parent_pid;
}

/*
 * Traces in bursts of 64 with a 100 us pause, at most MAX_PER_THREAD: the
 * forks meet threads in the middle of records all the time, yet the file
 * stays small (unbounded, four threads fill a disk in a minute when a slow
 * sanitizer build makes the forks slow).
 */
#define MAX_PER_THREAD 2000000u

static void *spin(void *arg)
{
    uint64_t th = (uint64_t)(uintptr_t)arg, seq = 0;
    struct timespec pause = {0, 100000};

    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        if (seq < MAX_PER_THREAD)
            ft_trace(th, seq++, &produced);
        if (seq % 64 == 0 || seq >= MAX_PER_THREAD)
            nanosleep(&pause, NULL);
    }
    return NULL;
}

static void child(int use_exit)
{
    uint64_t mine = 0;

    if (!FORK_USE_EXIT)
        _exit(0); /* ASan: no allocation in the child (see the top) */

    for (uint64_t i = 0; i < CHILD_RECORDS; i++)
        ft_trace(CHILD_THREAD, i, &mine);
    if (use_exit)
        exit(0);
    _exit(0);
}

int main(void)
{
    pthread_t th[PARENT_THREADS];
    char cfg[1400], parent[1200], file[1400];
    unsigned nfork = (unsigned)test_scale(200, 40), bad = 0, exact = 0, quick = 0;
    pid_t pids[8];
    int ex[8];
    struct ft_sum s;

    parent_pid = getpid();
    test_tmpdir();
    snprintf(parent, sizeof parent, "%s", test_path("parent.trace"));
    snprintf(cfg, sizeof cfg, "ft_*,file=%s", parent);
    is_int(st_configure(cfg, NULL, 0), 0, "configure");
    for (unsigned i = 0; i < PARENT_THREADS; i++)
        pthread_create(&th[i], NULL, spin, (void *)(uintptr_t)i);

    for (unsigned done = 0; done < nfork;) {
        unsigned batch = nfork - done < 8 ? nfork - done : 8;
        for (unsigned j = 0; j < batch; j++) {
            ex[j] = FORK_USE_EXIT && (done + j) % 4 != 3;
            fflush(stdout);
            pids[j] = fork();
            if (pids[j] == 0)
                child(ex[j]);
        }
        for (unsigned j = 0; j < batch; j++) {
            struct ft_sum c;
            int status = -1;
            waitpid(pids[j], &status, 0);
            snprintf(file, sizeof file, "%s-%ld", parent, (long)pids[j]);
            ft_sum_init(&c);
            ft_sum_file(&c, file, !ex[j]);
            if (!WIFEXITED(status) || WEXITSTATUS(status) || !c.decoded || !c.order ||
                c.events != c.last_seq[CHILD_THREAD] ||
                (ex[j] && (c.events != CHILD_RECORDS || c.drops))) {
                if (bad++ < 5)
                    diag("child %ld (%s): status %#x, decoded %d, %llu records", (long)pids[j], ex[j] ? "exit" : "_exit",
                         status, c.decoded, (unsigned long long)c.events);
            }
            exact += ex[j] && c.events == CHILD_RECORDS;
            quick += !ex[j];
            unlink(file);
        }
        done += batch;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < PARENT_THREADS; i++)
        pthread_join(th[i], NULL);
    is_int(bad, 0, "%u forks: every child exited 0 and its file decodes with a prefix of its records", nfork);
    is_int(exact, nfork - quick, "each child leaving with exit() wrote exactly its %d records", CHILD_RECORDS);
    is_int(st_trace_file_flush(), 0, "parent flush");
    ft_sum_init(&s);
    ft_sum_file(&s, parent, 0);
    is_u64(s.last_seq[CHILD_THREAD], 0, "no child record in the parent's file");
    ft_check("fork storm", &s, produced);
    st_trace_file_set_enabled(false);
    return done_testing();
}
