/*
 * st_trace_finish(): a fork child that ends with _exit(), as a server's
 * background save does (Redis's BGSAVE and BGREWRITEAOF children), runs no
 * exit handler. Without the call its unwritten records are lost and, with
 * crash=DIR, its ring files (a buffer's size each) stay in DIR after every
 * such child, and with monitor=on its socket too (a fork child serves its
 * own); st_trace_finish() before _exit() writes them and removes the ring
 * files and the socket, as exit() would. It runs once: exit() after it, or a second
 * call, does nothing more (the exit report is not printed twice), and a
 * fork child's own end is not its parent's.
 */
#include <dirent.h>

#include "mon_util.h" /* rt_test.h, and a client of the monitor */

TEST_EVENT(ev_parent, "fin_parent", "int seq", "seq %d", "i", 1, 0);
TEST_EVENT(ev_child, "fin_child", "int seq", "seq %d", "i", 1, 0);
TEST_GROUP(grp_fin, "finish", &ev_parent, &ev_child)

static struct st_group *const groups[] = {&grp_fin, NULL};

#define CHILD_EVENTS 1000

/* Forks a child that runs fn, its stderr in err_path; returns its wait status, *pid its id. */
static int fork_run(void (*fn)(void), const char *err_path, pid_t *pid)
{
    int status;

    fflush(stdout);
    fflush(stderr);
    *pid = fork();
    if (*pid == 0) {
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
            dup2(fd, 2);
        fn();
        _exit(99);
    }
    if (waitpid(*pid, &status, 0) < 0)
        return -1;
    return status;
}

static void trace_child(void)
{
    for (int i = 0; i < CHILD_EVENTS; i++)
        test_trace_i(&ev_child, (uint64_t)i);
}

/* What a BGSAVE child does: trace, then _exit() with nothing else. */
static void child_exit_only(void)
{
    trace_child();
    _exit(0);
}

static void child_finish_exit(void)
{
    trace_child();
    if (st_trace_finish() != 0)
        _exit(3);
    _exit(0);
}

/* Into /dev/full (every write fails): finish, finish again, then exit(): the exit report once. */
static void child_finish_twice(void)
{
    if (st_trace_file_set_name("/dev/full") != 0)
        exit(4);
    trace_child();
    if (st_trace_finish() != -ENOSPC || st_trace_finish() != -ENOSPC)
        exit(3);
    exit(0);
}

static void child_quiet(void)
{
    _exit(st_trace_finish() == 0 ? 0 : 3);
}

static const char *child_trace(pid_t pid)
{
    static char path[700];
    snprintf(path, sizeof path, "%s/traces/test_rt_finish-%ld.trace", test_dir, (long)pid);
    return path;
}

static size_t child_records(pid_t pid)
{
    struct test_trace t;
    size_t n;

    if (test_collect(child_trace(pid), groups, &t) != 0)
        return (size_t)-1;
    n = test_count(&t, "fin_child");
    test_trace_free(&t);
    return n;
}

static int rings_of(pid_t pid)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "st-%ld", (long)pid);
    return tu_dir_count(test_path("crash"), prefix, NULL);
}

/* Whether the monitor socket of pid (monitor=on under XDG_RUNTIME_DIR=test_dir) is there. */
static bool socket_of(pid_t pid)
{
    char name[64];
    snprintf(name, sizeof name, "simpletrace/%ld.sock", (long)pid);
    return test_exists(test_path(name));
}

static int count_lines(const char *path, const char *needle)
{
    char line[1024];
    int n = 0;
    FILE *f = fopen(path, "r");

    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/*
 * The answer of this process's monitor to a ping (an empty line), or "(no
 * answer)". The monitor, when it starts serving, removes the sockets of
 * dead processes, as it should: the one the first child leaves behind too,
 * when its thread starts late (a loaded machine). Once it answers it has
 * started. No limit of ours on the wait: meson's timeout ends a hang.
 */
static const char *monitor_ping(void)
{
    static char answer[64];
    char name[64], *a = NULL;
    int fd, eof;

    snprintf(name, sizeof name, "simpletrace/%ld.sock", (long)getpid());
    if ((fd = mon_connect(test_path(name))) >= 0) {
        if (mon_send_str(fd, "\n") == 0)
            a = mon_read_answer(fd, 3600 * 1000L, &eof);
        close(fd);
    }
    snprintf(answer, sizeof answer, "%s", a ? a : "(no answer)");
    free(a);
    return answer;
}

int main(void)
{
    char cfg[1200], err[256];
    pid_t pid;
    int st;

    test_tmpdir();
    setenv("XDG_RUNTIME_DIR", test_dir, 1); /* monitor=on's sockets under the test's directory */
    snprintf(cfg, sizeof cfg, "enable=fin_*,dir=%s,crash=%s,monitor=on", test_path("traces"),
             test_path("crash"));
    is_int(st_configure(cfg, err, sizeof err), 0, "dir=, crash= and monitor=on configured");
    test_trace_i(&ev_parent, 0);
    is_int(st_trace_file_flush(), 0, "the parent traced and flushed");
    is_str(monitor_ping(), "ok\n", "the parent's monitor serves (answers a ping)");

    /* The defect: _exit() alone. */
    st = fork_run(child_exit_only, test_path("err-exit-only"), &pid);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a child that traces then _exit()s");
    ok(rings_of(pid) > 0, "without st_trace_finish() its crash= ring files stay behind (%d files)", rings_of(pid));
    ok(socket_of(pid), "  and its monitor socket");

    /* The fix. */
    st = fork_run(child_finish_exit, test_path("err-finish"), &pid);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a child that traces, calls st_trace_finish() (0), then _exit()s");
    is_int((long long)child_records(pid), CHILD_EVENTS, "its trace holds every record it traced");
    is_int(rings_of(pid), 0, "no ring file or names file of it is left in crash=DIR");
    ok(!socket_of(pid), "  nor its monitor socket");
    is_int(test_file_size(test_path("err-finish")), 0, "  and had nothing to report");

    st = fork_run(child_finish_twice, test_path("err-twice"), &pid);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
       "a child writing to /dev/full: st_trace_finish() twice is -ENOSPC (the file's error) each time, then exit()");
    is_int(count_lines(test_path("err-twice"), "records lost: writing '/dev/full' failed"), 1,
           "  the exit report (its records lost) printed once, not again by the second call or exit()");

    st = fork_run(child_quiet, test_path("err-quiet"), &pid);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !test_exists(child_trace(pid)) && rings_of(pid) == 0,
       "a child that traced nothing: st_trace_finish() is 0, no file, no ring file");

    /* The parent's own end is still to come: its record goes out at its exit. */
    test_trace_i(&ev_parent, 1);
    is_int(st_trace_file_flush(), 0, "the parent still traces after its children finished");
    return done_testing();
}
