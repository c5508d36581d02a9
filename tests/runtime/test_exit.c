/*
 * Exit flush: a child traces and returns from main (or calls exit() from
 * another thread); the atexit handler writes everything still buffered.
 */
#include <pthread.h>

#include "rt_test.h"

TEST_EVENT(ev_seq, "exit_seq", "int seq", "seq %d", "i", 1, 0);
TEST_EVENT(ev_thr, "exit_thread", "int seq", "seq %d", "i", 1, 0);
TEST_GROUP(grp_exit, "exit", &ev_seq, &ev_thr)

static struct st_group *const groups[] = {&grp_exit, NULL};

static void *exiting_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++)
        test_trace_i(&ev_thr, (uint64_t)i);
    exit(0);
}

static int child(const char *mode, unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        test_trace_i(&ev_seq, i);
    if (!strcmp(mode, "thread")) {
        pthread_t t;
        pthread_create(&t, NULL, exiting_thread, NULL);
        pthread_join(t, NULL);
    }
    return 0; /* the runtime's atexit handler flushes */
}

/* Runs a child that traces n events; checks its file. */
static void check(const char *mode, unsigned long n, int exact)
{
    char *args[] = {"test_rt_exit", "child", (char *)mode, NULL, NULL};
    char env0[1200], nbuf[32];
    const char *env[] = {env0, NULL};
    const char *path = test_path(mode);
    struct test_trace t;
    uint64_t expect = 0, drops = 0;
    int status, order = 1;

    snprintf(nbuf, sizeof nbuf, "%lu", n);
    args[3] = nbuf;
    snprintf(env0, sizeof env0, "SIMPLETRACE=exit_*,file=%s", path);
    status = test_run_self(args, env, NULL, NULL);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child exits 0", mode);
    if (!ok(test_collect(path, groups, &t) == 0, "%s: file decodes", mode))
        return;
    for (size_t i = 0; i < t.n; i++) {
        if (t.r[i].dropped)
            drops += t.r[i].drop_count;
        if (t.r[i].mapping || t.r[i].dropped || strcmp(t.r[i].name, "exit_seq"))
            continue;
        if (t.r[i].u[0] < expect)
            order = 0;
        expect = t.r[i].u[0] + 1;
    }
    ok(order, "%s: sequence strictly increasing", mode);
    if (exact)
        is_u64(test_count(&t, "exit_seq"), n, "%s: all %lu events written at exit", mode, n);
    is_u64(test_count(&t, "exit_seq") + drops, n, "%s: events + dropped = traced", mode);
    if (!strcmp(mode, "thread"))
        is_u64(test_count(&t, "exit_thread"), 1000, "exit() from another thread flushes its records");
    test_trace_free(&t);
}

int main(int argc, char **argv)
{
    if (argc > 3 && !strcmp(argv[1], "child"))
        return child(argv[2], strtoul(argv[3], NULL, 0));
    test_tmpdir();
    /* 20000 records of 40 bytes fit in the default 1 MiB buffer: no drops. */
    check("small", 20000, 1);
    check("big", test_scale(500000, 100000), 0);
    check("thread", 1000, 1);
    return done_testing();
}
