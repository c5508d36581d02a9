/*
 * file= placeholders: %p pid, %e program name, %h host name, %t start time
 * (UTC, YYYYMMDDTHHMMSSZ), %% a literal %; each expands into the file
 * opened and the name status reports. An unknown one is an error naming
 * it, and nothing changes. st_trace_file_set_name() takes the same
 * templates. A fork child re-expands %p for its own file.
 */
#include <time.h>

#include "rt_test.h"

TEST_EVENT(ev_a, "name_a", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_b, "name_b", "int x", "x %d", "i", 1, 0);
TEST_GROUP(grp_name, "name", &ev_a, &ev_b)

static struct st_group *const groups[] = {&grp_name, NULL};

#define VALID "(valid: %p pid, %e program name, %h host name, %t start time, %% a literal %)"

static const char *status_path(void)
{
    static struct st_file_status fs;

    fs.struct_size = sizeof fs;
    st_trace_file_status(&fs);
    return fs.path;
}

/* Configures file=test_dir/tmpl; the status names want and, after a flush, the file holds one record. */
static void expect_name(const char *tmpl, const char *want, const char *what)
{
    char cfg[1200], err[512] = "";
    struct test_trace t;
    int r;

    snprintf(cfg, sizeof cfg, "name_a,file=%s", test_path(tmpl));
    r = st_configure(cfg, err, sizeof err);
    if (!ok(r == 0, "%s: file=%s accepted", what, tmpl))
        diag("%d: %s", r, err);
    is_str(status_path(), want, "%s: status names the expanded file", what);
    test_trace_i(&ev_a, 1);
    if (ok(st_trace_file_flush() == 0 && test_collect(want, groups, &t) == 0, "%s: the file has that name", what))
        is_u64(test_count(&t, "name_a"), 1, "%s: and holds the record", what);
    test_trace_free(&t);
}

/* %t: the status path ends in prefix + a UTC time no later than now and no earlier than a minute before main. */
static void expect_time(time_t main_started)
{
    char cfg[1200], err[512] = "", stamp[32] = "";
    const char *p, *want = test_path("t-");
    struct tm tm;
    time_t t;

    snprintf(cfg, sizeof cfg, "name_a,file=%s%%t.trace", want);
    ok(st_configure(cfg, err, sizeof err) == 0, "%%t: accepted");
    p = status_path();
    ok(!strncmp(p, want, strlen(want)) && strlen(p) == strlen(want) + 16 + 6, "%%t: 16 characters (%s)", p);
    snprintf(stamp, sizeof stamp, "%.16s", p + strlen(want));
    memset(&tm, 0, sizeof tm);
    p = strptime(stamp, "%Y%m%dT%H%M%SZ", &tm);
    ok(p && !*p, "%%t: YYYYMMDDTHHMMSSZ (%s)", stamp);
    t = timegm(&tm);
    ok(t <= time(NULL) && t >= main_started - 60, "%%t: the start time, UTC (%s)", stamp);
    ok(st_trace_file_flush() == 0 && test_exists(status_path()), "%%t: the file has that name");
}

/* A bad template: the error names it, and nothing changes (file, events). */
static void expect_refused(const char *tmpl, const char *why, const char *what)
{
    char cfg[1200], err[1024] = "", want[1400], before[4096], path[800];

    snprintf(before, sizeof before, "%s", status_path());
    snprintf(path, sizeof path, "%s", test_path(tmpl));
    snprintf(cfg, sizeof cfg, "name_b,file=%s", path);
    is_int(st_configure(cfg, err, sizeof err), -EINVAL, "%s: st_configure fails", what);
    snprintf(want, sizeof want, "invalid file '%s': %s", path, why);
    is_str(err, want, "%s: the message names the item, the placeholder and the valid ones", what);
    is_str(status_path(), before, "%s: the trace file did not change", what);
    ok(st_event_get_state("name_b") == ST_EVENT_DISABLED, "%s: the rest of the configuration was not applied", what);
    is_int(st_trace_file_set_name(path), -EINVAL, "%s: st_trace_file_set_name() refuses it too", what);
    is_str(status_path(), before, "%s: ... and the name did not change", what);
}

/* A fork child re-expands %p: its own file, its records only; the parent's file keeps the parent's. */
static void expect_fork(void)
{
    char cfg[1200], tmpl[800], parent[800], child[800];
    struct test_trace t;
    int status;
    pid_t pid;

    snprintf(tmpl, sizeof tmpl, "%s", test_path("f-%p.trace"));
    snprintf(cfg, sizeof cfg, "name_a,name_b,file=%s", tmpl);
    ok(st_configure(cfg, NULL, 0) == 0, "fork: file=f-%%p.trace");
    snprintf(parent, sizeof parent, "%s", status_path());
    test_trace_i(&ev_a, 1);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        char want[800];
        snprintf(want, sizeof want, "%s/f-%ld.trace", test_dir, (long)getpid());
        for (int i = 0; i < 7; i++)
            test_trace_i(&ev_b, (uint64_t)i);
        _exit(strcmp(status_path(), want) ? 3 : st_trace_file_flush() ? 4 : 0);
    }
    waitpid(pid, &status, 0);
    is_int(WIFEXITED(status) ? WEXITSTATUS(status) : 100, 0, "fork: the child's status names f-<childpid>.trace");
    snprintf(child, sizeof child, "%s/f-%ld.trace", test_dir, (long)pid);
    if (ok(test_collect(child, groups, &t) == 0, "fork: the child's file f-<childpid>.trace decodes")) {
        is_u64(test_count(&t, "name_b"), 7, "fork: it holds the child's 7 records");
        is_u64(test_count(&t, "name_a"), 0, "fork: and none of the parent's");
    }
    test_trace_free(&t);
    test_trace_i(&ev_a, 2);
    if (ok(st_trace_file_flush() == 0 && test_collect(parent, groups, &t) == 0, "fork: the parent's file decodes")) {
        is_u64(test_count(&t, "name_a"), 2, "fork: it holds the parent's 2 records");
        is_u64(test_count(&t, "name_b"), 0, "fork: and none of the child's");
    }
    test_trace_free(&t);
}

/* st_trace_file_set_name() with a template, while the file is off and on. */
static void expect_set_name(void)
{
    char tmpl[800], want[800];

    snprintf(tmpl, sizeof tmpl, "%s", test_path("s-%p-%%.trace"));
    snprintf(want, sizeof want, "%s/s-%ld-%%.trace", test_dir, (long)getpid());
    ok(st_trace_file_set_enabled(false) == 0, "set_name: file off");
    is_int(st_trace_file_set_name(tmpl), 0, "set_name: a template while off");
    is_str(status_path(), want, "set_name: status shows its expansion");
    ok(!test_exists(want), "set_name: nothing opened while off");
    ok(st_trace_file_set_enabled(true) == 0 && test_exists(want), "set_name: on opens the expanded name");
    snprintf(tmpl, sizeof tmpl, "%s", test_path("s2-%p.trace"));
    snprintf(want, sizeof want, "%s/s2-%ld.trace", test_dir, (long)getpid());
    is_int(st_trace_file_set_name(tmpl), 0, "set_name: a template while on");
    ok(!strcmp(status_path(), want) && test_exists(want), "set_name: switched to the expanded name");
}

int main(void)
{
    time_t main_started = time(NULL);
    char want[1200], host[256] = "";

    test_tmpdir();
    snprintf(want, sizeof want, "%s/p-%ld.trace", test_dir, (long)getpid());
    expect_name("p-%p.trace", want, "%p");
    snprintf(want, sizeof want, "%s/e-test_rt_file_name.trace", test_dir);
    expect_name("e-%e.trace", want, "%e");
    gethostname(host, sizeof host - 1);
    snprintf(want, sizeof want, "%s/h-%s.trace", test_dir, host);
    expect_name("h-%h.trace", want, "%h");
    snprintf(want, sizeof want, "%s/pct-%%-%%p-100%%.trace", test_dir);
    expect_name("pct-%%-%%p-100%%.trace", want, "%%");
    expect_time(main_started);
    expect_refused("q-%q.trace", "unknown placeholder %q " VALID, "%q");
    expect_refused("x%", "a lone % at the end " VALID, "a lone %");
    expect_set_name();
    expect_fork();
    return done_testing();
}
