/*
 * The SIMPLETRACE environment variable, applied at start-up (the test
 * re-executes itself with it set): events and file configured before main,
 * errors reported on stderr as one line while the program goes on, and
 * without it nothing is enabled and no file is created. What a run lost or
 * never did is said once at exit (issue 12): patterns that matched nothing,
 * a file with no event enabled, dropped records.
 */
#include "rt_test.h"

TEST_EVENT(ev_a1, "env_a1", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_a2, "env_a2", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_b, "env_b", "int x", "x %d", "i", 1, 0);
TEST_GROUP(grp_env, "env", &ev_a1, &ev_a2, &ev_b)

static struct st_group *const groups[] = {&grp_env, NULL};

/* The child: argv[2] says what it expects; it traces, then returns. */
static int child(const char *mode)
{
    struct st_file_status fs = {.struct_size = sizeof fs};

    st_trace_file_status(&fs);
    if (!strcmp(mode, "none") || !strcmp(mode, "bad")) {
        CHECK(st_event_get_state("env_a1") == ST_EVENT_DISABLED);
        CHECK(!fs.enabled);
    } else if (!strcmp(mode, "on")) {
        CHECK(st_event_get_state("env_a1") == ST_EVENT_ENABLED);
        CHECK(st_event_get_state("env_a2") == ST_EVENT_ENABLED);
        CHECK(st_event_get_state("env_b") == ST_EVENT_DISABLED);
        CHECK(fs.enabled);
    } else if (!strcmp(mode, "default")) {
        char want[700], cwd[600];
        CHECK(getcwd(cwd, sizeof cwd) != NULL);
        snprintf(want, sizeof want, "%s/trace-%ld", cwd, (long)getpid());
        CHECK(fs.enabled && !strcmp(fs.path, want));
    } else if (!strcmp(mode, "nothing")) {
        CHECK(st_event_get_state("env_a1") == ST_EVENT_DISABLED && st_event_get_state("env_b") == ST_EVENT_DISABLED);
        CHECK(fs.enabled);
    } else if (!strcmp(mode, "drop")) {
        struct st__record rec;
        /* A record larger than any ring is refused and counted: one drop, every run. */
        CHECK(st_event_get_state("env_a1") == ST_EVENT_ENABLED);
        CHECK(st__simple_begin(&rec, &ev_a1, 100000) == -1);
    }
    for (int i = 0; i < 10; i++) {
        test_trace_i(&ev_a1, (uint64_t)i);
        test_trace_i(&ev_b, (uint64_t)i);
    }
    return 0;
}

/* Runs the child with SIMPLETRACE=value (NULL: unset) in dir; returns its stderr. */
static char *run(const char *mode, const char *value, const char *dir, int *status, pid_t *pid)
{
    char *args[] = {"test_rt_env", "child", (char *)mode, NULL};
    char envbuf[2048];
    const char *env[] = {envbuf, NULL};
    const char *errpath = test_path("stderr.txt");

    if (value)
        snprintf(envbuf, sizeof envbuf, "SIMPLETRACE=%s", value);
    else
        snprintf(envbuf, sizeof envbuf, "SIMPLETRACE");
    mkdir(dir, 0755);
    *status = test_run_self_pid(args, env, errpath, dir, pid);
    return tu_slurp(errpath, NULL);
}

static int dir_is_empty(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", dir);
    return system(cmd) == 0;
}

static void expect_ok(int status, const char *errtext, const char *what)
{
    if (!ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child ran fine", what))
        diag("status %d, stderr: %s", status, errtext ? errtext : "");
}

/*
 * Runs mode with SIMPLETRACE=value in a fresh directory; checks stderr is
 * exactly want, where each %s stands for that directory (file names are
 * absolute in messages).
 */
static void expect_stderr(const char *mode, const char *value, const char *want, const char *what)
{
    static int n;
    char dir[64], text[4096];
    const char *at;
    size_t len = 0;
    int status;
    pid_t pid;
    char *e;

    snprintf(dir, sizeof dir, "report%d", n++);
    for (const char *w = want; *w && len + 1 < sizeof text; w++) {
        if (w[0] == '%' && w[1] == 's') {
            for (at = test_path(dir); *at && len + 1 < sizeof text; at++)
                text[len++] = *at;
            w++;
        } else {
            text[len++] = *w;
        }
    }
    text[len] = '\0';
    e = run(mode, value, test_path(dir), &status, &pid);
    expect_ok(status, e, what);
    is_str(e, text, "%s", what);
    free(e);
}

static void test_exit_report(void)
{
    const char *none = "simpletrace: trace file '%s/x.trace' holds no events: none was enabled "
                       "(SIMPLETRACE='enable=PATTERN,...' or st_configure())\n";
    char want[1024];

    expect_stderr("nothing", "file=x.trace", none, "file= alone: the file holds no events, said at exit");
    snprintf(want, sizeof want, "simpletrace: pattern 'env_b1' matched no event (did you mean 'env_a1', 'env_b'?)\n%s", none);
    expect_stderr("nothing", "enable=env_b1,file=x.trace", want, "a typo: the pattern and the nearest name");
    snprintf(want, sizeof want,
             "simpletrace: pattern 'env_c*' matched no event (did you mean 'env_a1', 'env_a2', 'env_b'?)\n%s",
             none);
    expect_stderr("nothing", "enable=env_c*,file=x.trace", want, "a glob that matches nothing: said, with names");
    expect_stderr("on", "env_a*, -env_b ,file=x.trace , bufsize=64K", "",
                  "blanks around items are accepted, nothing said");
    expect_stderr("bad", "enabel=*,file=x.trace",
                  "simpletrace: SIMPLETRACE: unknown key 'enabel' (did you mean 'enable'?)\n",
                  "a misspelt key: one line with the nearest key");
    expect_stderr("drop", "env_a1,file=x.trace",
                  "simpletrace: 1 of 11 events were dropped (thread buffers full); a larger bufsize= (now 4M) or "
                  "fewer enabled events keeps them; drop-report=off silences this\n",
                  "a drop: how many of how many, and bufsize=, once at exit");
    expect_stderr("drop", "env_a1,file=x.trace,drop-report=off", "", "drop-report=off: the drop goes unsaid");
    expect_stderr("bad", "env_a1,drop-report=maybe",
                  "simpletrace: SIMPLETRACE: invalid drop-report 'maybe': want on or off\n",
                  "drop-report takes on or off");
}

int main(int argc, char **argv)
{
    struct test_trace t;
    char value[1400], want[1600], path[1200], *e;
    int status;
    pid_t pid;

    if (argc > 2 && !strcmp(argv[1], "child"))
        return child(argv[2]);
    test_tmpdir();

    e = run("none", NULL, test_path("none"), &status, &pid);
    expect_ok(status, e, "no SIMPLETRACE");
    is_str(e, "", "no SIMPLETRACE: nothing on stderr");
    ok(dir_is_empty(test_path("none")), "no SIMPLETRACE: no file created");
    free(e);

    e = run("none", "", test_path("empty"), &status, &pid);
    expect_ok(status, e, "empty SIMPLETRACE");
    ok(dir_is_empty(test_path("empty")), "empty SIMPLETRACE: no file created");
    free(e);

    snprintf(path, sizeof path, "%s", test_path("env.trace"));
    snprintf(value, sizeof value, "enable=env_a*,file=%s;bufsize=64K", path);
    e = run("on", value, test_path("on"), &status, &pid);
    expect_ok(status, e, "SIMPLETRACE=enable=env_a*,file=...");
    is_str(e, "", "valid SIMPLETRACE: nothing on stderr");
    free(e);
    if (ok(test_collect(path, groups, &t) == 0, "file named in SIMPLETRACE decodes")) {
        ok(test_count(&t, "env_a1") == 10 && test_count(&t, "env_b") == 0, "enabled events written, others not");
        ok(t.sum.mappings == 3 && t.r[0].mapping, "header then mappings first");
        is_int(t.r[3].pid, pid, "main thread's records carry its tid (= pid)");
    }
    test_trace_free(&t);

    e = run("bad", "env_a1,frob=2", test_path("bad"), &status, &pid);
    expect_ok(status, e, "bad SIMPLETRACE");
    is_str(e, "simpletrace: SIMPLETRACE: unknown key 'frob'\n", "bad key reported as one line");
    ok(dir_is_empty(test_path("bad")), "bad SIMPLETRACE: nothing applied, no file");
    free(e);

    e = run("bad", "env_a1,file=/nonexistent-st-dir/x", test_path("unwritable"), &status, &pid);
    expect_ok(status, e, "unwritable file");
    is_str(e,
           "simpletrace: SIMPLETRACE: cannot open trace file '/nonexistent-st-dir/x': No such file or "
           "directory\n",
           "unwritable file reported");
    free(e);

    test_write_file(test_path("ev.txt"), "env_a1\nx y\n");
    snprintf(value, sizeof value, "events=%s", test_path("ev.txt"));
    snprintf(want, sizeof want, "simpletrace: SIMPLETRACE: events=%s: line 2: invalid event pattern 'x y'\n",
             test_path("ev.txt"));
    e = run("bad", value, test_path("evbad"), &status, &pid);
    expect_ok(status, e, "bad events file");
    is_str(e, want, "bad events file line reported with FILE:LINE");
    free(e);

    snprintf(value, sizeof value, "events=%s", test_path("nope.txt"));
    snprintf(want, sizeof want, "simpletrace: SIMPLETRACE: events=%s: cannot open: No such file or directory\n",
             test_path("nope.txt"));
    e = run("bad", value, test_path("evmissing"), &status, &pid);
    expect_ok(status, e, "missing events file");
    is_str(e, want, "missing events file reported");
    free(e);

    e = run("default", "env_a1", test_path("def"), &status, &pid);
    expect_ok(status, e, "default file name");
    snprintf(path, sizeof path, "%s/trace-%ld", test_path("def"), (long)pid);
    if (ok(test_collect(path, groups, &t) == 0, "default file trace-<pid> in the cwd"))
        ok(test_count(&t, "env_a1") == 10, "all 10 events written at exit");
    test_trace_free(&t);
    free(e);
    test_exit_report();
    return done_testing();
}
