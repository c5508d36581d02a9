/*
 * writer=: who writes the trace file. Run in every writer mode (meson's
 * writer matrix sets SIMPLETRACE_WRITER; the children inherit it), and
 * each part checks what that mode promises:
 *
 *   single   a program that traces on one thread, every event enabled,
 *            has exactly one thread (/proc/self/task) from start to exit
 *            (writer=auto, inline; two with writer=thread), and its trace
 *            is complete: every record, in order, none dropped
 *   switch   a second thread's first record starts the writeout thread
 *            (auto; none with inline, which drains on both threads), and
 *            nothing is lost or reordered across the switch (the writeout
 *            thread is told by its name, st-writer: ThreadSanitizer adds a
 *            thread of its own at the first pthread_create())
 *   threaded a program with a thread of its own that never traces, made
 *            before its first record (Redis's background threads): the
 *            C library's single-thread fast paths are gone, so writer=auto
 *            takes the writeout thread at its first drain point instead of
 *            writing on the traced thread (none with inline), and the trace
 *            is complete
 *   race     several threads start tracing at once while the first drains
 *            inline through a small buffer (the switch under TSan): the
 *            counts add up, each thread's records are in order
 *   quiet    without the thread, a quiet process's records reach the file
 *            at flush and at exit, and at fork (the parent's, before the
 *            child runs); killed in between (kill -9), crash=DIR keeps them
 *            for `simpletrace recover`
 *   config   writer= and SIMPLETRACE_WRITER: bad values are one line each;
 *            writer=inline is refused once the thread runs
 *
 * The tasks counted are this process's: the test runs each part in a
 * child of its own (re-executed, so it starts with one thread).
 *
 * usage: test_rt_writer [SIMPLETRACE-COMMAND]   (recover's part needs it)
 */
#include <dirent.h>
#include <pthread.h>
#include <sys/mman.h>

#include "rt_test.h"

TEST_EVENT(ev_seq, "wr_seq", "int seq, int x", "seq %d x %d", "ii", 2, 0);
TEST_EVENT(ev_other, "wr_other", "int seq", "seq %d", "i", 1, 0);
TEST_GROUP(grp_wr, "wr", &ev_seq, &ev_other)

static struct st_group *const groups[] = {&grp_wr, NULL};

static const char *cli;
static char self[4096];

/* The mode this run tests, from the matrix's SIMPLETRACE_WRITER ("" or unset: auto). */
static const char *mode(void)
{
    const char *m = getenv("SIMPLETRACE_WRITER");

    return m && *m ? m : "auto";
}

static bool mode_is(const char *m)
{
    return !strcmp(mode(), m);
}

/* Threads of this process now. */
static int tasks(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/*
 * Threads a process tracing on one thread should have: ours, and with
 * writer=thread the writeout thread (and under ThreadSanitizer its own
 * thread, which it starts with the program's first other thread).
 */
static int one_thread_tasks(void)
{
    return mode_is("thread") ? 2 + TEST_UNDER_TSAN : 1;
}

/*
 * Writeout threads of this process (named st-writer). Where the program has
 * threads of its own, counting those is exact: ThreadSanitizer, for one,
 * adds a thread of its own at the program's first pthread_create().
 */
static int writers(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d))) {
        char path[300], comm[32] = "";
        FILE *f;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        if ((f = fopen(path, "r"))) {
            if (!fgets(comm, sizeof comm, f))
                comm[0] = '\0';
            fclose(f);
        }
        n += !strcmp(comm, "st-writer\n");
    }
    closedir(d);
    return n;
}

/* Runs this program's part `part` with SIMPLETRACE=config (and extra, may be NULL); its exit status (0: ok). */
static int run_part(const char *part, const char *config, const char *arg, const char *stderr_path)
{
    char env[1400];
    char *argv[] = {self, (char *)part, (char *)(arg ? arg : ""), NULL};
    const char *envv[] = {env, NULL};
    int status;

    snprintf(env, sizeof env, "SIMPLETRACE=%s", config);
    status = test_run_self(argv, envv, stderr_path, NULL);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 255;
}

/* Per thread (pid field): events and the dropped counts, seqs checked to increase by one without drops. */
struct per_thread {
    uint32_t pid;
    uint64_t events, drops, next;
    bool ordered;
};

static struct per_thread *thread_of(struct per_thread *pt, size_t *n, uint32_t pid)
{
    for (size_t i = 0; i < *n; i++)
        if (pt[i].pid == pid)
            return &pt[i];
    pt[*n] = (struct per_thread){.pid = pid, .ordered = true};
    return &pt[(*n)++];
}

/* Sorts t's records by thread: per thread, seqs of `name` strictly increase and, with no drop before, by one. */
static size_t per_thread(const struct test_trace *t, struct per_thread *pt, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < t->n && n < max; i++) {
        const struct test_rec *r = &t->r[i];
        struct per_thread *p;
        if (r->mapping)
            continue;
        p = thread_of(pt, &n, r->pid);
        if (r->dropped) {
            p->drops += r->drop_count;
            continue;
        }
        if (r->u[0] < p->next || (r->u[0] != p->next && !p->drops))
            p->ordered = false;
        p->next = r->u[0] + 1;
        p->events++;
    }
    return n;
}

/* --- single: one thread from start to exit, a complete trace ------------------ */

#define SINGLE_EVENTS 300000u

/* Shared with the destructor: the most tasks seen, and whether each count was what the mode promises. */
static int single_max_tasks;
static const char *single_result;

/* After every exit handler, ours (registered at start-up, before main) included. */
__attribute__((destructor)) static void single_at_end(void)
{
    FILE *f;
    int n;

    if (!single_result)
        return;
    n = tasks();
    if (n > single_max_tasks)
        single_max_tasks = n;
    if ((f = fopen(single_result, "w"))) {
        fprintf(f, "%d %d\n", n, single_max_tasks);
        fclose(f);
    }
}

/* SIMPLETRACE (every event, a 64 KiB buffer) was applied before main: count tasks while tracing ~12 MB. */
static int child_single(const char *result)
{
    int n = tasks();

    single_max_tasks = n;
    CHECK(n == 1); /* SIMPLETRACE was applied and the file opened before main */
    for (uint32_t i = 0; i < SINGLE_EVENTS; i++) {
        test_trace_ii(&ev_seq, i, 0);
        if (i % 10000 == 0 && (n = tasks()) > single_max_tasks)
            single_max_tasks = n;
    }
    single_result = result;
    return 0; /* exit() drains */
}

static void part_single(void)
{
    char cfg[1400];
    const char *trace = test_path("single.trace"), *result = test_path("single.tasks");
    struct per_thread pt[4];
    struct test_trace t;
    int at_exit = -1, most = -1;
    size_t n;
    FILE *f;

    snprintf(cfg, sizeof cfg, "*,bufsize=64K,file=%s", trace);
    if (mode_is("thread"))
        return; /* part_single_thread: the writeout thread runs from the start */
    is_int(run_part("single", cfg, result, NULL), 0, "single: the child traced %u events and exited", SINGLE_EVENTS);
    if ((f = fopen(result, "r"))) {
        if (fscanf(f, "%d %d", &at_exit, &most) != 2)
            at_exit = most = -1;
        fclose(f);
    }
    is_int(at_exit, 1, "single: one thread after every exit handler (the final pass ran on it)");
    is_int(most, 1, "single: one thread at every count while tracing (%s)", mode());
    if (ok(test_collect(trace, groups, &t) == 0, "single: the trace decodes")) {
        n = per_thread(&t, pt, 4);
        ok(n == 1 && pt[0].events == SINGLE_EVENTS && pt[0].drops == 0 && pt[0].ordered,
           "single: every record, in order, none dropped (%zu thread(s), %llu events, %llu dropped)", n,
           n ? (unsigned long long)pt[0].events : 0ull, n ? (unsigned long long)pt[0].drops : 0ull);
    }
    test_trace_free(&t);
}

/* writer=thread: the same program has its writeout thread and the same complete trace. */
static void part_single_thread(void)
{
    char cfg[1400];
    const char *trace = test_path("single-thread.trace");
    struct per_thread pt[4];
    struct test_trace t;
    size_t n;

    if (!mode_is("thread"))
        return;
    snprintf(cfg, sizeof cfg, "*,file=%s", trace);
    is_int(run_part("single-thread", cfg, NULL, NULL), 0, "writer=thread: two threads, ours and the writeout thread");
    if (ok(test_collect(trace, groups, &t) == 0, "writer=thread: the trace decodes")) {
        n = per_thread(&t, pt, 4);
        ok(n == 1 && pt[0].events + pt[0].drops == 20000 && pt[0].ordered, "writer=thread: every record counted");
    }
    test_trace_free(&t);
}

static int child_single_thread(void)
{
    CHECK(tasks() == one_thread_tasks() && writers() == 1);
    for (uint32_t i = 0; i < 20000; i++)
        test_trace_ii(&ev_seq, i, 0);
    CHECK(tasks() == one_thread_tasks() && writers() == 1);
    return 0;
}

/* --- switch: a second thread starts the writeout thread ------------------------- */

#define SWITCH_BEFORE 60000u /* ~2.4 MB on the first thread alone: many inline passes */
#define SWITCH_AFTER 20000u

static int worker_started, worker_counted;

static void *switch_worker(void *arg)
{
    (void)arg;
    test_trace_i(&ev_other, 0);
    __atomic_store_n(&worker_started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&worker_counted, __ATOMIC_ACQUIRE)) /* alive while the first thread counts */
        sched_yield();
    for (uint32_t i = 1; i < SWITCH_AFTER; i++)
        test_trace_i(&ev_other, i);
    return NULL;
}

static int child_switch(void)
{
    pthread_t w;
    int after, want_after = mode_is("inline") ? 0 : 1;

    for (uint32_t i = 0; i < SWITCH_BEFORE; i++)
        test_trace_ii(&ev_seq, i, 0);
    CHECK(tasks() == one_thread_tasks());
    CHECK(pthread_create(&w, NULL, switch_worker, NULL) == 0);
    while (!__atomic_load_n(&worker_started, __ATOMIC_ACQUIRE))
        sched_yield();
    after = writers();
    __atomic_store_n(&worker_counted, 1, __ATOMIC_RELEASE);
    for (uint32_t i = SWITCH_BEFORE; i < SWITCH_BEFORE + SWITCH_AFTER; i++)
        test_trace_ii(&ev_seq, i, 1);
    CHECK(pthread_join(w, NULL) == 0);
    /* The writeout thread once the worker traced, unless writer=inline. */
    if (after != want_after) {
        fprintf(stderr, "writeout threads after the worker's first record: %d, want %d\n", after, want_after);
        return 1;
    }
    CHECK(st_trace_file_flush() == 0);
    CHECK(writers() == want_after);
    return 0;
}

static void part_switch(void)
{
    char cfg[1400];
    const char *trace = test_path("switch.trace");
    struct per_thread pt[4];
    struct test_trace t;
    size_t n, first_other = SIZE_MAX, last_before = 0;

    snprintf(cfg, sizeof cfg, "wr_*,file=%s", trace);
    is_int(run_part("switch", cfg, NULL, NULL), 0, "switch: threads as %s promises, before and after the second thread",
           mode());
    if (!ok(test_collect(trace, groups, &t) == 0, "switch: the trace decodes"))
        return;
    n = per_thread(&t, pt, 4);
    if (ok(n == 2, "switch: two threads in the trace (%zu)", n)) {
        struct per_thread *mainp = pt[0].events > pt[1].events ? &pt[0] : &pt[1], *other = mainp == pt ? &pt[1] : &pt[0];
        ok(mainp->events == SWITCH_BEFORE + SWITCH_AFTER && mainp->drops == 0 && mainp->ordered,
           "switch: the first thread's records all there, in order (%llu, %llu dropped)",
           (unsigned long long)mainp->events, (unsigned long long)mainp->drops);
        ok(other->events == SWITCH_AFTER && other->drops == 0 && other->ordered,
           "switch: the second thread's records all there, in order (%llu, %llu dropped)",
           (unsigned long long)other->events, (unsigned long long)other->drops);
    }
    /* Every record the first thread traced before the second began comes before the second's first. */
    for (size_t i = 0; i < t.n; i++) {
        if (t.r[i].mapping || t.r[i].dropped)
            continue;
        if (!strcmp(t.r[i].name, "wr_other") && first_other == SIZE_MAX)
            first_other = i;
        if (!strcmp(t.r[i].name, "wr_seq") && t.r[i].u[1] == 0)
            last_before = i;
    }
    ok(first_other != SIZE_MAX && last_before < first_other,
       "switch: no record of before the switch comes after one of the second thread");
    test_trace_free(&t);
}

/* --- threaded: a thread of the program's own, older than tracing ------------------- */

#define THREADED_EVENTS 60000u /* ~2.4 MB: many drain points */

static void *idle_worker(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static int child_threaded(void)
{
    pthread_t w;
    int want = mode_is("inline") ? 0 : 1;

    CHECK(pthread_create(&w, NULL, idle_worker, NULL) == 0); /* never traces */
    for (uint32_t i = 0; i < THREADED_EVENTS; i++)
        test_trace_ii(&ev_seq, i, 0);
    CHECK(writers() == want);
    return 0;
}

static void part_threaded(void)
{
    char cfg[1400];
    const char *trace = test_path("threaded.trace");
    struct per_thread pt[4];
    struct test_trace t;
    size_t n;

    snprintf(cfg, sizeof cfg, "wr_*,file=%s", trace);
    is_int(run_part("threaded", cfg, NULL, NULL), 0,
           "threaded: with a thread of the program's own, one writeout thread (none with inline: %s)", mode());
    if (ok(test_collect(trace, groups, &t) == 0, "threaded: the trace decodes")) {
        n = per_thread(&t, pt, 4);
        ok(n == 1 && pt[0].events == THREADED_EVENTS && pt[0].drops == 0 && pt[0].ordered,
           "threaded: every record, in order, none dropped (%zu thread(s), %llu events)", n,
           n ? (unsigned long long)pt[0].events : 0ull);
    }
    test_trace_free(&t);
}

/* --- race: threads start tracing while the first drains inline -------------------- */

#define RACE_THREADS 4
#define RACE_EACH 5000u

static void *race_worker(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < RACE_EACH; i++)
        test_trace_i(&ev_other, i);
    return NULL;
}

static int child_race(void)
{
    pthread_t w[RACE_THREADS];
    struct st_stats st = {.struct_size = sizeof st};
    uint32_t i = 0;

    for (; i < 2000; i++)
        test_trace_ii(&ev_seq, i, 0);
    for (int k = 0; k < RACE_THREADS; k++)
        CHECK(pthread_create(&w[k], NULL, race_worker, NULL) == 0);
    for (; i < 2000 + RACE_EACH; i++)
        test_trace_ii(&ev_seq, i, 1);
    for (int k = 0; k < RACE_THREADS; k++)
        CHECK(pthread_join(w[k], NULL) == 0);
    CHECK(st_trace_file_flush() == 0);
    st_stats_get(&st);
    CHECK(st.produced == 2000 + RACE_EACH + RACE_THREADS * RACE_EACH);
    CHECK(st.produced == st.written + st.dropped + st.pending);
    CHECK(st.pending == 0);
    return 0;
}

static void part_race(void)
{
    char cfg[1400];
    const char *trace = test_path("race.trace");
    struct per_thread pt[RACE_THREADS + 2];
    struct test_trace t;
    uint64_t all = 0;
    bool ordered = true;
    size_t n;

    /* 16 KiB buffers: a wake-up every 2 KiB, so the first thread is mid-pass often when the others start. */
    snprintf(cfg, sizeof cfg, "wr_*,bufsize=16K,drop-report=off,file=%s", trace);
    is_int(run_part("race", cfg, NULL, NULL), 0, "race: %d threads start tracing at once; the counts add up", RACE_THREADS);
    if (!ok(test_collect(trace, groups, &t) == 0, "race: the trace decodes"))
        return;
    n = per_thread(&t, pt, RACE_THREADS + 2);
    for (size_t i = 0; i < n; i++) {
        all += pt[i].events + pt[i].drops;
        ordered &= pt[i].ordered;
    }
    is_int((long long)n, RACE_THREADS + 1, "race: every thread in the trace");
    is_u64(all, 2000 + RACE_EACH + RACE_THREADS * RACE_EACH, "race: records + dropped counts = events traced");
    ok(ordered, "race: each thread's records in order");
    test_trace_free(&t);
}

/* --- quiet: flush, fork and exit drain a process with no thread ----------------- */

/* Event records in path now (the file may hold only its header). */
static uint64_t events_in(const char *path)
{
    struct test_trace t;
    uint64_t n = 0;

    if (test_file_size(path) <= 0)
        return 0; /* not even its header yet (the writeout thread writes it when it gets to it) */
    if (test_collect(path, groups, &t) == 0)
        n = t.sum.events;
    test_trace_free(&t);
    return n;
}

static int child_quiet(const char *trace)
{
    char child_trace[1200];
    pid_t pid;
    int status;

    for (uint32_t i = 0; i < 10; i++)
        test_trace_ii(&ev_seq, i, 0);
    if (!mode_is("thread"))
        CHECK(events_in(trace) == 0); /* no thread, no drain point yet: still in the buffer */
    CHECK(st_trace_file_flush() == 0);
    CHECK(events_in(trace) == 10);
    for (uint32_t i = 10; i < 15; i++)
        test_trace_ii(&ev_seq, i, 0);
    /* ThreadSanitizer cannot follow the runtime's fork handlers (runtime-fork is not in 'threads' either). */
    if (!TEST_UNDER_TSAN) {
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            /* The fork's drain point wrote the parent's records before this child ran (the thread may have). */
            uint64_t n = events_in(trace);
            test_trace_ii(&ev_seq, 100, 0);
            _exit(n == 15 || (mode_is("thread") && n >= 10) ? 0 : 1);
        }
        CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        snprintf(child_trace, sizeof child_trace, "%s-%ld", trace, (long)pid);
        CHECK(events_in(child_trace) == 0 || mode_is("thread")); /* _exit(): no exit handler ran in the child */
    }
    for (uint32_t i = 15; i < 20; i++)
        test_trace_ii(&ev_seq, i, 0);
    CHECK(tasks() == one_thread_tasks());
    exit(0); /* the exit handler's final pass writes the last five */
}

/* Traces five records and is killed: with crash=DIR, `simpletrace recover` has them. */
static int child_killed(void)
{
    for (uint32_t i = 0; i < 5; i++)
        test_trace_ii(&ev_seq, i, 0);
    raise(SIGKILL);
    return 1;
}

static void part_quiet(void)
{
    char cfg[1400], cmd[4200];
    const char *trace = test_path("quiet.trace"), *killed = test_path("killed.trace");
    const char *rec = test_path("recovered.trace");

    snprintf(cfg, sizeof cfg, "wr_*,file=%s", trace);
    is_int(run_part("quiet", cfg, trace, NULL), 0, "quiet: flush drains, fork drains the parent's records first");
    is_u64(events_in(trace), 20, "quiet: exit wrote the rest (20 records)");

    snprintf(cfg, sizeof cfg, "wr_*,crash=%s,file=%s", test_path("crash"), killed);
    is_int(run_part("killed", cfg, NULL, NULL), 128 + SIGKILL, "killed: the child was killed (kill -9)");
    if (!mode_is("thread"))
        is_u64(events_in(killed), 0, "killed: no drain point came: the file has no record");
    if (!cli || !*cli) {
        printf("ok %d # SKIP killed: no simpletrace command given\n", ++tap__count);
        return;
    }
    snprintf(cmd, sizeof cmd, "'%s' recover --trace '%s' '%s' -o '%s' 2>/dev/null", cli, killed, test_path("crash"),
             rec);
    is_int(system(cmd), 0, "killed: simpletrace recover rebuilds what the buffer held");
    is_u64(events_in(killed) + events_in(rec), 5, "killed: file + recovered trace = the five records");
}

/* --- config: writer= and SIMPLETRACE_WRITER ---------------------------------------- */

static int child_config(const char *trace)
{
    char err[256], cfg[1400];

    CHECK(st_configure("writer=thread", err, sizeof err) == 0);
    CHECK(st_configure("writer=inline", err, sizeof err) == 0); /* no file yet: no thread either */
    CHECK(st_configure("writer=sometimes", err, sizeof err) == -EINVAL);
    CHECK(!strcmp(err, "invalid writer 'sometimes': want auto, thread or inline"));
    snprintf(cfg, sizeof cfg, "writer=thread,wr_*,file=%s", trace);
    CHECK(st_configure(cfg, err, sizeof err) == 0);
    CHECK(writers() == 1);
    CHECK(st_configure("writer=inline", err, sizeof err) == -EBUSY);
    CHECK(!strcmp(err, "writer=inline: the writeout thread runs already (writer=thread); it runs until exit"));
    CHECK(st_configure("writer=auto", err, sizeof err) == 0);
    CHECK(writers() == 1);
    return 0;
}

/* writer=thread given while the file is written inline: the thread takes over, nothing lost. */
static int child_takeover(const char *trace)
{
    for (uint32_t i = 0; i < 50000; i++)
        test_trace_ii(&ev_seq, i, 0);
    CHECK(writers() == (mode_is("thread") ? 1 : 0));
    CHECK(st_configure("writer=thread", NULL, 0) == 0);
    CHECK(writers() == 1);
    for (uint32_t i = 50000; i < 60000; i++)
        test_trace_ii(&ev_seq, i, 0);
    CHECK(st_trace_file_flush() == 0);
    CHECK(events_in(trace) == 60000);
    return 0;
}

static void part_config(void)
{
    char *argv[] = {self, "noop", NULL};
    const char *errp = test_path("config.err");
    char cfg[1400], *text;
    const char *bad[][2] = {
        {"SIMPLETRACE_WRITER=never", "simpletrace: SIMPLETRACE_WRITER: invalid writer 'never': want auto, thread or inline\n"},
        {"SIMPLETRACE_WRITER=inline,file=x", "simpletrace: SIMPLETRACE_WRITER: invalid writer 'inline,file=x': want auto, thread or inline\n"},
    };

    is_int(run_part("config", "", test_path("config.trace"), NULL), 0,
           "config: writer= values, inline refused once the thread runs");
    snprintf(cfg, sizeof cfg, "wr_*,file=%s", test_path("takeover.trace"));
    is_int(run_part("takeover", cfg, test_path("takeover.trace"), NULL), 0,
           "config: writer=thread takes over an inline file, every record written");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *env[] = {bad[i][0], "SIMPLETRACE=", NULL};
        int status = test_run_self(argv, env, errp, NULL);
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the program runs on", bad[i][0]);
        text = tu_slurp(errp, NULL);
        is_str(text ? text : "", bad[i][1], "%s: one line on stderr", bad[i][0]);
        free(text);
    }
}

int main(int argc, char **argv)
{
    const char *arg = argc > 2 ? argv[2] : "";

    if (argc > 1 && !strcmp(argv[1], "single"))
        return child_single(arg);
    if (argc > 1 && !strcmp(argv[1], "single-thread"))
        return child_single_thread();
    if (argc > 1 && !strcmp(argv[1], "switch"))
        return child_switch();
    if (argc > 1 && !strcmp(argv[1], "race"))
        return child_race();
    if (argc > 1 && !strcmp(argv[1], "threaded"))
        return child_threaded();
    if (argc > 1 && !strcmp(argv[1], "quiet"))
        return child_quiet(arg);
    if (argc > 1 && !strcmp(argv[1], "killed"))
        return child_killed();
    if (argc > 1 && !strcmp(argv[1], "config"))
        return child_config(arg);
    if (argc > 1 && !strcmp(argv[1], "takeover"))
        return child_takeover(arg);
    if (argc > 1 && !strcmp(argv[1], "noop"))
        return 0;
    cli = argc > 1 ? argv[1] : NULL;
    if (!realpath("/proc/self/exe", self))
        return 2;
    test_tmpdir();
    diag("writer mode: %s", mode());
    part_single();
    part_single_thread();
    part_switch();
    part_threaded();
    part_race();
    part_quiet();
    part_config();
    return done_testing();
}
