/*
 * fork(): a child's events go to its own file (F-<pid>, or trace-<pid> by
 * default), opened only when it traces, so fork+exec leaves no file; the
 * parent's file stays intact and decodable, including when forks happen
 * while another thread is tracing.
 */
#include <pthread.h>

#include "rt_test.h"

TEST_EVENT(ev_parent, "fork_parent", "int seq", "seq %d", "i", 1, 0);
TEST_EVENT(ev_child, "fork_child", "int seq", "seq %d", "i", 1, 0);
TEST_EVENT(ev_bg, "fork_bg", "int seq, int x, const char *s", "seq %d", "iis", 3, 0);
TEST_GROUP(grp_fork, "fork", &ev_parent, &ev_child, &ev_bg)

static struct st_group *const groups[] = {&grp_fork, NULL};

/* Forks a child that runs fn and exits with its value (exit: atexit flush). */
static int fork_run(int (*fn)(void *), void *arg, pid_t *pid)
{
    int status;

    fflush(stdout);
    *pid = fork();
    if (*pid == 0)
        exit(fn(arg));
    waitpid(*pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

static int child_traces(void *arg)
{
    struct st_file_status fs = {.struct_size = sizeof fs};
    char want[700];

    st_trace_file_status(&fs);
    snprintf(want, sizeof want, "%s-%ld", (const char *)arg, (long)getpid());
    if (arg && (strcmp(fs.path, want) || !fs.enabled))
        return 3;
    for (int i = 0; i < 50; i++)
        test_trace_i(&ev_child, (uint64_t)i);
    return 0;
}

static int child_execs(void *arg)
{
    (void)arg;
    execl("/bin/true", "true", (char *)NULL);
    return 4;
}

static int child_quiet(void *arg)
{
    (void)arg;
    _exit(0);
}

static int child_enables(void *arg)
{
    (void)arg;
    if (st_trace_file_set_enabled(true) != 0)
        return 5;
    for (int i = 0; i < 3; i++)
        test_trace_i(&ev_child, (uint64_t)i);
    return 0;
}

static int child_default(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++)
        test_trace_i(&ev_child, (uint64_t)i);
    return 0;
}

/* f_parent sequence in path is exactly 0..n-1 and no child record is there. */
static void check_parent(const char *path, uint64_t n, const char *what)
{
    struct test_trace t;
    uint64_t next = 0;
    int order = 1;

    if (!ok(test_collect(path, groups, &t) == 0, "%s: parent file decodes", what))
        return;
    for (size_t i = 0; i < t.n; i++)
        if (!t.r[i].mapping && !strcmp(t.r[i].name, "fork_parent"))
            order &= t.r[i].u[0] == next++;
    ok(order && next == n, "%s: parent has its %llu records in order (got %llu)", what,
       (unsigned long long)n, (unsigned long long)next);
    is_u64(test_count(&t, "fork_child"), 0, "%s: no child record in the parent's file", what);
    test_trace_free(&t);
}

static int bg_stop;

static void *background(void *arg)
{
    uint64_t i = 0;
    (void)arg;
    while (!__atomic_load_n(&bg_stop, __ATOMIC_RELAXED))
        test_trace_iis(&ev_bg, i++, 7, "background-event");
    return NULL;
}

int main(void)
{
    char cfg[1400], path[1200], child_file[1400], parent_path[1200];
    struct test_trace t;
    pthread_t bg;
    pid_t pid;
    int r;

    test_tmpdir();
    if (chdir(test_dir) != 0)
        return 2;
    snprintf(parent_path, sizeof parent_path, "%s", test_path("parent.trace"));
    snprintf(cfg, sizeof cfg, "fork_*,file=%s", parent_path);
    is_int(st_configure(cfg, NULL, 0), 0, "configure");

    for (int i = 0; i < 100; i++)
        test_trace_i(&ev_parent, (uint64_t)i); /* still buffered at fork */
    r = fork_run(child_traces, parent_path, &pid);
    is_int(r, 0, "child sees its own file name F-<pid>, enabled");
    snprintf(child_file, sizeof child_file, "%s-%ld", parent_path, (long)pid);
    if (ok(test_collect(child_file, groups, &t) == 0, "child file F-<pid> decodes")) {
        is_u64(test_count(&t, "fork_child"), 50, "child file has the child's 50 records");
        is_u64(test_count(&t, "fork_parent"), 0, "child file has none of the parent's buffered records");
        ok(t.sum.mappings == 3 && t.r[0].mapping, "child file starts with its header and mappings");
    }
    test_trace_free(&t);
    for (int i = 100; i < 200; i++)
        test_trace_i(&ev_parent, (uint64_t)i);
    is_int(st_trace_file_flush(), 0, "parent flush");
    check_parent(parent_path, 200, "after one fork");

    r = fork_run(child_execs, NULL, &pid);
    is_int(r, 0, "fork+exec child ran /bin/true");
    snprintf(child_file, sizeof child_file, "%s-%ld", parent_path, (long)pid);
    ok(!test_exists(child_file), "fork+exec without tracing creates no child file");
    r = fork_run(child_quiet, NULL, &pid);
    snprintf(child_file, sizeof child_file, "%s-%ld", parent_path, (long)pid);
    ok(r == 0 && !test_exists(child_file), "fork+_exit without tracing creates no child file");

    /* Forks while another thread is in the middle of tracing. */
    pthread_create(&bg, NULL, background, NULL);
    for (int i = 0; i < 20; i++) {
        r = fork_run(child_traces, parent_path, &pid);
        snprintf(child_file, sizeof child_file, "%s-%ld", parent_path, (long)pid);
        if (r || test_collect(child_file, groups, &t) || test_count(&t, "fork_child") != 50 ||
            test_count(&t, "fork_bg") != 0) {
            ok(0, "fork %d during tracing: child status %d, file %s", i, r, child_file);
            test_trace_free(&t);
            break;
        }
        test_trace_free(&t);
        test_trace_i(&ev_parent, (uint64_t)(200 + i));
    }
    __atomic_store_n(&bg_stop, 1, __ATOMIC_RELAXED);
    pthread_join(bg, NULL);
    ok(1, "20 forks while a thread traces: every child file has exactly its own records");
    st_trace_file_flush();
    check_parent(parent_path, 220, "after forks during tracing");

    /* File off at fork, explicit name: the child still never touches F. */
    st_trace_file_set_enabled(false);
    st_trace_file_set_name(test_path("off.trace"));
    r = fork_run(child_enables, NULL, &pid);
    is_int(r, 0, "child enables the file itself");
    snprintf(child_file, sizeof child_file, "%s-%ld", test_path("off.trace"), (long)pid);
    if (ok(test_collect(child_file, groups, &t) == 0, "child wrote off.trace.<pid>"))
        is_u64(test_count(&t, "fork_child"), 3, "with its 3 records");
    test_trace_free(&t);
    ok(!test_exists(test_path("off.trace")), "the parent's name was never created by the child");

    /* Default name: the child's default is trace-<childpid>. */
    st_trace_file_set_name(NULL);
    st_trace_file_set_enabled(true);
    r = fork_run(child_default, NULL, &pid);
    snprintf(path, sizeof path, "trace-%ld", (long)pid);
    if (ok(r == 0 && test_collect(path, groups, &t) == 0, "child with the default name wrote trace-<childpid>"))
        is_u64(test_count(&t, "fork_child"), 5, "with its 5 records");
    test_trace_free(&t);
    st_trace_file_set_enabled(false);
    return done_testing();
}
