/*
 * One writer per trace file name: two unrelated processes given the same
 * file= (the test re-executes itself with SIMPLETRACE set). The first holds
 * the name's lock and keeps its file whole; the second leaves that file
 * alone, writes FILE-<pid>, and says so in one line; off and on again
 * reopen each process's own name; once the holder has exited, the plain
 * name is free again. With rotate=, each process rotates its own name.
 */
#include "rt_test.h"

TEST_EVENT(ev_a, "lock_a", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_b, "lock_b", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_c, "lock_c", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_s, "lock_s", "int x, int y, const char *s", "x %d", "iis", 3, 0);
TEST_GROUP(grp_lock, "lock", &ev_a, &ev_b, &ev_c, &ev_s)

static struct st_group *const groups[] = {&grp_lock, NULL};

/* Records with a string: enough of them fill 64K pieces quickly. */
#define BIG_TEXT "....................................................................................................."

/* The child's file is want (status and enabled). */
static int file_is(const char *want)
{
    struct st_file_status fs = {.struct_size = sizeof fs};

    st_trace_file_status(&fs);
    return fs.enabled && !strcmp(fs.path, want);
}

/* Traces n records of ev (with big: string records of ev_s instead). */
static void trace_n(struct st_event *ev, int n, int big)
{
    for (int i = 0; i < n; i++) {
        if (big)
            test_trace_iis(&ev_s, (uint64_t)i, (uint64_t)getpid(), BIG_TEXT);
        else
            test_trace_i(ev, (uint64_t)i);
    }
}

/*
 * Off and on again, and file=path given again: the same name (want), no
 * conflict with this process's own lock, nothing truncated, no message.
 */
static int off_on(const char *path, const char *want)
{
    char cfg[1200];

    CHECK(st_trace_file_set_enabled(false) == 0);
    CHECK(st_trace_file_set_enabled(true) == 0);
    CHECK(file_is(want));
    snprintf(cfg, sizeof cfg, "file=%s", path);
    CHECK(st_configure(cfg, NULL, 0) == 0);
    CHECK(file_is(want));
    return 0;
}

/* The holder: traces, waits on fd `go` until the parent says so (fd `ready` first), traces again. */
static int child_hold(const char *path, int ready, int go, int big)
{
    char c = 'r';

    CHECK(file_is(path));
    trace_n(&ev_a, 10, 0);
    CHECK(off_on(path, path) == 0);
    trace_n(&ev_a, 10, 0);
    if (big)
        trace_n(&ev_s, 3000, 1);
    CHECK(st_trace_file_flush() == 0);
    CHECK(write(ready, &c, 1) == 1);
    CHECK(read(go, &c, 1) == 1);
    trace_n(&ev_a, 10, 0);
    return 0;
}

/* The second process: its own FILE-<pid>, kept across off and on. */
static int child_second(const char *path, int big)
{
    char want[1200];

    snprintf(want, sizeof want, "%s-%ld", path, (long)getpid());
    CHECK(file_is(want));
    trace_n(&ev_b, 10, 0);
    CHECK(off_on(path, want) == 0);
    trace_n(&ev_b, 10, 0);
    if (big)
        trace_n(&ev_s, 3000, 1);
    return 0;
}

/* A process after the holder exited: the plain name. */
static int child_plain(const char *path)
{
    CHECK(file_is(path));
    trace_n(&ev_c, 5, 0);
    return 0;
}

static int child(int argc, char **argv)
{
    const char *mode = argv[2], *path = argv[3];

    if (!strcmp(mode, "hold") && argc > 6)
        return child_hold(path, atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
    if (!strcmp(mode, "second") && argc > 4)
        return child_second(path, atoi(argv[4]));
    if (!strcmp(mode, "plain"))
        return child_plain(path);
    return 2;
}

/* Starts the holder with SIMPLETRACE=env; it reports ready on *ready and waits for a byte on *go. */
static pid_t start_holder(const char *env, const char *path, int big, int *ready, int *go)
{
    int rp[2], gp[2];
    pid_t pid;

    if (pipe2(rp, O_CLOEXEC) || pipe2(gp, O_CLOEXEC))
        return -1;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        char *args[] = {"test_rt_file_lock", "child", "hold", (char *)path, "10", "11", big ? "1" : "0", NULL};
        int fd = open(test_path("hold.err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        /* dup2 clears close-on-exec: the holder alone keeps these ends */
        if (fd < 0 || dup2(fd, 2) < 0 || dup2(rp[1], 10) < 0 || dup2(gp[0], 11) < 0)
            _exit(126);
        setenv("SIMPLETRACE", env, 1);
        execv("/proc/self/exe", args);
        _exit(127);
    }
    close(rp[1]);
    close(gp[0]);
    *ready = rp[0];
    *go = gp[1];
    return pid;
}

/* Runs a short-lived child (mode) with SIMPLETRACE=env; its stderr in *err, its pid in *pid. */
static int run_child(const char *mode, const char *env, const char *path, int big, char **err, pid_t *pid)
{
    char *args[] = {"test_rt_file_lock", "child", (char *)mode, (char *)path, big ? "1" : "0", NULL};
    char envbuf[1600];
    const char *envs[] = {envbuf, NULL};
    int status;

    snprintf(envbuf, sizeof envbuf, "SIMPLETRACE=%s", env);
    status = test_run_self_pid(args, envs, test_path("child.err"), NULL, pid);
    *err = tu_slurp(test_path("child.err"), NULL);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

/* path decodes and holds exactly n records of name (and nothing else but n_s of lock_s), all of pid. */
static void expect_file(const char *path, const char *name, size_t n, size_t n_s, pid_t pid, const char *what)
{
    struct test_trace t;
    size_t others = 0, foreign = 0;

    if (!ok(test_collect(path, groups, &t) == 0, "%s: %s decodes", what, path))
        return;
    for (size_t i = 0; i < t.n; i++) {
        if (t.r[i].mapping || t.r[i].dropped)
            continue;
        others += strcmp(t.r[i].name, name) && strcmp(t.r[i].name, "lock_s");
        foreign += t.r[i].pid != (uint32_t)pid;
    }
    is_u64(test_count(&t, name), n, "%s: %zu %s records", what, n, name);
    is_u64(test_count(&t, "lock_s"), n_s, "%s: %zu lock_s records", what, n_s);
    is_u64(others + foreign, 0, "%s: no record of another event or process", what);
    ok(t.sum.dropped_total == 0, "%s: nothing dropped", what);
    test_trace_free(&t);
}

/* The records of lock_s in pieces path, path.1, ... (each must decode), all of pid; -1 if one does not. */
static long pieces_count(const char *path, pid_t pid, int *npieces)
{
    char piece[1300];
    long total = 0;

    *npieces = 0;
    for (int k = 0;; k++) {
        struct test_trace t;
        if (k)
            snprintf(piece, sizeof piece, "%s.%d", path, k);
        else
            snprintf(piece, sizeof piece, "%s", path);
        if (!test_exists(piece))
            break;
        if (test_collect(piece, groups, &t) != 0)
            return -1;
        for (size_t i = 0; i < t.n; i++)
            if (!t.r[i].mapping && !t.r[i].dropped && t.r[i].pid != (uint32_t)pid)
                total = -1000000;
        total += (long)test_count(&t, "lock_s");
        test_trace_free(&t);
        (*npieces)++;
    }
    return total;
}

/* Holder and second process on the same name, at once. */
static void case_concurrent(void)
{
    char env[1400], path[700], fallback[800], want[2000], *herr, *err, c = 'g';
    int ready, go, status, r;
    pid_t hpid, spid;

    snprintf(path, sizeof path, "%s", test_path("x.trace"));
    snprintf(env, sizeof env, "enable=lock_*,file=%s", path);
    hpid = start_holder(env, path, 0, &ready, &go);
    ok(hpid > 0 && read(ready, &c, 1) == 1, "holder started and wrote its first records");
    r = run_child("second", env, path, 0, &err, &spid);
    is_int(r, 0, "second process ran while the holder held the file");
    if (write(go, "g", 1) != 1 || waitpid(hpid, &status, 0) != hpid)
        status = -1;
    close(ready);
    close(go);
    herr = tu_slurp(test_path("hold.err"), NULL);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "holder ran to its end (stderr: %s)", herr ? herr : "");
    is_str(herr, "", "holder: nothing on stderr (off and on again kept its own name)");

    snprintf(fallback, sizeof fallback, "%s-%ld", path, (long)spid);
    snprintf(want, sizeof want,
             "simpletrace: %s is being written by process %ld (locked); this process writes %s\n", path,
             (long)hpid, fallback);
    is_str(err, want, "second process: exactly one line naming both files, the holder and why");
    expect_file(path, "lock_a", 30, 0, hpid, "holder's file");
    expect_file(fallback, "lock_b", 20, 0, spid, "second's fallback file");
    free(herr);
    free(err);

    r = run_child("plain", env, path, 0, &err, &spid);
    is_int(r, 0, "a process after the holder exited: the plain name");
    is_str(err, "", "... and nothing on stderr");
    expect_file(path, "lock_c", 5, 0, spid, "file taken over after the holder exited");
    snprintf(fallback, sizeof fallback, "%s-%ld", path, (long)spid);
    ok(!test_exists(fallback), "... and no fallback file");
    free(err);
}

/* rotate=: each process rotates its own name; the holder's pieces stay its own. */
static void case_rotate(void)
{
    char env[1400], path[700], fallback[800], *err, c = 'g';
    int ready, go, status, r, nh, ns;
    pid_t hpid, spid;

    snprintf(path, sizeof path, "%s", test_path("r.trace"));
    snprintf(env, sizeof env, "enable=lock_*,file=%s,rotate=64K", path);
    hpid = start_holder(env, path, 1, &ready, &go);
    ok(hpid > 0 && read(ready, &c, 1) == 1, "rotate: holder started, its pieces written");
    r = run_child("second", env, path, 1, &err, &spid);
    is_int(r, 0, "rotate: second process ran");
    if (write(go, "g", 1) != 1 || waitpid(hpid, &status, 0) != hpid)
        status = -1;
    close(ready);
    close(go);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rotate: holder ran to its end");
    snprintf(fallback, sizeof fallback, "%s-%ld", path, (long)spid);
    is_int(pieces_count(path, hpid, &nh), 3000, "rotate: the holder's pieces hold its 3000 records, and only its");
    ok(nh > 1, "rotate: ... in %d pieces", nh);
    is_int(pieces_count(fallback, spid, &ns), 3000, "rotate: the second's pieces (its own name) hold its 3000");
    ok(ns > 1, "rotate: ... in %d pieces", ns);
    free(err);
}

int main(int argc, char **argv)
{
    if (argc > 3 && !strcmp(argv[1], "child"))
        return child(argc, argv);
    test_tmpdir();
    case_concurrent();
    case_rotate();
    return done_testing();
}
