/*
 * dir=DIR: each process's trace is DIR/PROGRAM-PID.trace, fork children and
 * programs that inherit SIMPLETRACE included, so a whole run lands in one
 * directory. DIR is made 0700 when missing; one that cannot be used (not a
 * directory, a bad placeholder, too long) is an error naming it, and
 * nothing changes, no directory made.
 *
 *   test_rt_dir emit N    (re-exec'd by the pipeline case) traces dir_b N times
 */
#include <dirent.h>

#include "rt_test.h"

TEST_EVENT(ev_a, "dir_a", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_b, "dir_b", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_c, "dir_c", "int x", "x %d", "i", 1, 0);
TEST_GROUP(grp_dir, "dir", &ev_a, &ev_b, &ev_c)

static struct st_group *const groups[] = {&grp_dir, NULL};

#define PROG "test_rt_dir"
#define VALID "(valid: %p pid, %e program name, %h host name, %t start time, %% a literal %)"

static const char *status_path(void)
{
    static struct st_file_status fs;

    fs.struct_size = sizeof fs;
    st_trace_file_status(&fs);
    return fs.path;
}

/* The number of entries in dir (-1 when it cannot be read); names[] gets up to max of them. */
static int list_dir(const char *dir, char names[][256], int max)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            if (n < max)
                snprintf(names[n], 256, "%s", e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

/* True when every event record of t has pid as its pid field (one thread: the tid is the pid). */
static bool all_from(const struct test_trace *t, long pid)
{
    for (size_t i = 0; i < t->n; i++)
        if (!t->r[i].mapping && !t->r[i].dropped && t->r[i].pid != (uint32_t)pid)
            return false;
    return true;
}

/* DIR/PROG-pid.trace decodes with a records of dir_a and b of dir_b, all traced by pid. */
static void expect_file(const char *dir, long pid, size_t a, size_t b, const char *what)
{
    char path[1200];
    struct test_trace t;

    snprintf(path, sizeof path, "%s/" PROG "-%ld.trace", dir, pid);
    if (ok(test_collect(path, groups, &t) == 0, "%s: " PROG "-%ld.trace decodes", what, pid)) {
        is_u64(test_count(&t, "dir_a"), a, "%s: %zu dir_a records", what, a);
        is_u64(test_count(&t, "dir_b"), b, "%s: %zu dir_b records", what, b);
        ok(all_from(&t, pid), "%s: every record is the process's own (pid %ld)", what, pid);
    }
    test_trace_free(&t);
}

/* A child of the fork case: traces dir_b n times into its own file. */
static void fork_child(int n, const char *dir)
{
    char want[1200];

    for (int i = 0; i < n; i++)
        test_trace_i(&ev_b, (uint64_t)i);
    snprintf(want, sizeof want, "%s/" PROG "-%ld.trace", dir, (long)getpid());
    _exit(strcmp(status_path(), want) ? 3 : st_trace_file_flush() ? 4 : 0);
}

/* A parent with dir= (missing: made 0700) forks two children: three files, each its own process's. */
static void expect_fork(void)
{
    char cfg[1200], dir[800], want[1200], names[4][256];
    pid_t kids[2];
    struct stat st;
    int status;

    snprintf(dir, sizeof dir, "%s", test_path("run"));
    snprintf(cfg, sizeof cfg, "dir_a,dir_b,dir=%s", dir);
    ok(st_configure(cfg, NULL, 0) == 0, "fork: dir= accepted");
    ok(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), "fork: the missing DIR was made");
    is_int((int)(st.st_mode & 0777), 0700, "fork: with mode 0700");
    snprintf(want, sizeof want, "%s/" PROG "-%ld.trace", dir, (long)getpid());
    is_str(status_path(), want, "fork: the parent's file is DIR/" PROG "-PID.trace");
    test_trace_i(&ev_a, 1);
    for (int k = 0; k < 2; k++) {
        fflush(stdout);
        if ((kids[k] = fork()) == 0)
            fork_child(3 + 2 * k, dir);
    }
    for (int k = 0; k < 2; k++) {
        waitpid(kids[k], &status, 0);
        is_int(WIFEXITED(status) ? WEXITSTATUS(status) : 100, 0, "fork: child %d's status names its own file", k);
    }
    test_trace_i(&ev_a, 2);
    ok(st_trace_file_flush() == 0, "fork: the parent's file flushed");
    is_int(list_dir(dir, names, 4), 3, "fork: DIR holds three files");
    expect_file(dir, (long)getpid(), 2, 0, "fork parent");
    expect_file(dir, (long)kids[0], 0, 3, "fork child 0");
    expect_file(dir, (long)kids[1], 0, 5, "fork child 1");
}

/* The pid in NAME ("test_rt_dir-PID.trace"), or 0. */
static long pid_of(const char *name)
{
    long pid = 0;
    char tail[16] = "";

    if (sscanf(name, PROG "-%ld%15s", &pid, tail) != 2 || strcmp(tail, ".trace"))
        return 0;
    return pid;
}

/* sh -c 'SELF emit 3 | SELF emit 4' with SIMPLETRACE=...,dir=D: one file per process of the pipeline. */
static void expect_pipeline(void)
{
    char self[1024], dir[800], env[1000], script[2400], names[4][256], path[1200];
    size_t seen[2] = {0, 0};
    struct test_trace t;
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    int status, nf;
    pid_t pid;

    self[n > 0 ? n : 0] = '\0';
    snprintf(dir, sizeof dir, "%s", test_path("pipe"));
    snprintf(env, sizeof env, "dir_b,dir=%s", dir);
    snprintf(script, sizeof script, "'%s' emit 3 | '%s' emit 4", self, self);
    fflush(stdout);
    if ((pid = fork()) == 0) {
        setenv("SIMPLETRACE", env, 1);
        execl("/bin/sh", "sh", "-c", script, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    is_int(WIFEXITED(status) ? WEXITSTATUS(status) : 100, 0, "pipeline: sh -c 'a | b' succeeded");
    nf = list_dir(dir, names, 4);
    is_int(nf, 2, "pipeline: DIR holds two files");
    for (int i = 0; i < nf && i < 2; i++) {
        long p = pid_of(names[i]);
        ok(p > 0, "pipeline: %s is named " PROG "-PID.trace", names[i]);
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (p > 0 && ok(test_collect(path, groups, &t) == 0, "pipeline: %s decodes", names[i])) {
            seen[i] = test_count(&t, "dir_b");
            ok(all_from(&t, p), "pipeline: %s holds only its process's records", names[i]);
        }
        test_trace_free(&t);
    }
    ok((seen[0] == 3 && seen[1] == 4) || (seen[0] == 4 && seen[1] == 3),
       "pipeline: one file has the 3 records of the first process, the other the 4 of the second (%zu, %zu)",
       seen[0], seen[1]);
}

/* A configuration that must fail with ret and a message starting with want_start; nothing changes. */
static void expect_refused(const char *cfg_tail, int ret, const char *want_start, const char *what)
{
    char cfg[6000], err[1024] = "", before[4096];
    int r;

    snprintf(before, sizeof before, "%s", status_path());
    snprintf(cfg, sizeof cfg, "dir_c,%s", cfg_tail);
    r = st_configure(cfg, err, sizeof err);
    is_int(r, ret, "%s: st_configure fails", what);
    if (!ok(!strncmp(err, want_start, strlen(want_start)), "%s: the message names it", what))
        diag("got '%s', want '%s...'", err, want_start);
    is_str(status_path(), before, "%s: the trace file did not change", what);
    ok(st_event_get_state("dir_c") == ST_EVENT_DISABLED, "%s: the rest of the configuration was not applied", what);
}

/* DIR a regular file, a bad placeholder, too long, a missing parent, file= absolute: errors, nothing made. */
static void expect_errors(void)
{
    char cfg[6000], want[6000], longdir[5200];
    const char *file = test_path("plain"), *bad = test_path("x%q");

    test_write_file(file, "not a directory\n");
    snprintf(cfg, sizeof cfg, "dir=%s", file);
    snprintf(want, sizeof want, "dir=%s: %s", file, st_strerror(-ENOTDIR));
    expect_refused(cfg, -ENOTDIR, want, "DIR a regular file");

    snprintf(cfg, sizeof cfg, "dir=%s", bad);
    snprintf(want, sizeof want, "invalid dir '%s': unknown placeholder %%q %s", bad, VALID);
    expect_refused(cfg, -EINVAL, want, "unknown placeholder");

    memset(longdir, 'd', 5000);
    longdir[5000] = '\0';
    snprintf(cfg, sizeof cfg, "dir=%s", longdir);
    snprintf(want, sizeof want, "invalid dir '%.200s': expanded, the name is longer than 4095 bytes", longdir);
    expect_refused(cfg, -ENAMETOOLONG, want, "DIR longer than a path (the message cuts it at 200 bytes)");

    snprintf(longdir, sizeof longdir, "%s/", test_dir);
    memset(longdir + strlen(longdir), 'e', 300);
    longdir[strlen(test_dir) + 1 + 300] = '\0';
    snprintf(cfg, sizeof cfg, "dir=%s", longdir);
    snprintf(want, sizeof want, "dir=%.200s...: %s", longdir, st_strerror(-ENAMETOOLONG));
    expect_refused(cfg, -ENAMETOOLONG, want, "a component longer than a name");

    snprintf(cfg, sizeof cfg, "dir=%s", test_path("none/run"));
    snprintf(want, sizeof want, "dir=%s: %s", test_path("none/run"), st_strerror(-ENOENT));
    expect_refused(cfg, -ENOENT, want, "missing parent");
    ok(!test_exists(test_path("none")), "missing parent: nothing made");

    snprintf(cfg, sizeof cfg, "dir=%s,file=/abs.trace", test_path("abs"));
    snprintf(want, sizeof want, "file=/abs.trace with dir=%s: with dir=, file= names a file inside DIR",
             test_path("abs"));
    expect_refused(cfg, -EINVAL, want, "file= absolute with dir=");
    ok(!test_exists(test_path("abs")), "file= absolute: DIR not made");

    snprintf(cfg, sizeof cfg, "dir=%s,file=sub/x.trace", test_path("undone"));
    snprintf(want, sizeof want, "cannot open trace file '%s/sub/x.trace'", test_path("undone"));
    expect_refused(cfg, -ENOENT, want, "the file in DIR cannot open");
    ok(!test_exists(test_path("undone")), "the file in DIR cannot open: the DIR made for it is removed");
}

/* The unwritable case's child: as an ordinary user (root writes anywhere), dir= refused with EACCES. */
static int unwritable_child(const char *dir)
{
    char cfg[1200], err[1024] = "", want[1200];

    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
        return 10;
    snprintf(cfg, sizeof cfg, "dir_c,dir=%s", dir);
    snprintf(want, sizeof want, "dir=%s: %s", dir, st_strerror(-EACCES));
    if (st_configure(cfg, err, sizeof err) != -EACCES)
        return 11;
    if (strcmp(err, want))
        return 12;
    return st_event_get_state("dir_c") == ST_EVENT_DISABLED ? 0 : 13;
}

/* A DIR that exists but that the process may not write into: an error naming it, nothing applied. */
static void expect_unwritable(void)
{
    const char *dir = test_path("ro");
    int status;
    pid_t pid;

    ok(mkdir(dir, 0555) == 0 && chmod(test_dir, 0711) == 0, "unwritable: DIR made 0555");
    fflush(stdout);
    if ((pid = fork()) == 0)
        _exit(unwritable_child(dir));
    waitpid(pid, &status, 0);
    chmod(test_dir, 0700);
    is_int(WIFEXITED(status) ? WEXITSTATUS(status) : 100, 0,
           "unwritable: -EACCES, 'dir=DIR: Permission denied', nothing applied (0; 11-13 say which failed)");
}

/* file= with dir=: the name of the file inside DIR. */
static void expect_file_in_dir(void)
{
    char cfg[1200], want[1200];

    snprintf(cfg, sizeof cfg, "dir=%s,file=%%e.t", test_path("named"));
    ok(st_configure(cfg, NULL, 0) == 0, "file= with dir=: accepted");
    snprintf(want, sizeof want, "%s/" PROG ".t", test_path("named"));
    is_str(status_path(), want, "file= with dir=: DIR/FILE, expanded");
    ok(st_trace_file_flush() == 0 && test_exists(want), "file= with dir=: that file was opened");
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "emit")) {
        for (int i = 0; i < atoi(argv[2]); i++)
            test_trace_i(&ev_b, (uint64_t)i);
        return 0;
    }
    test_tmpdir();
    expect_fork();
    expect_pipeline();
    expect_errors();
    expect_unwritable();
    expect_file_in_dir();
    return done_testing();
}
