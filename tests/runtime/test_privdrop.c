/*
 * Dropping privileges after start: a server started as root forks a
 * worker that becomes `nobody` (setgroups, setgid, setuid) before it
 * traces, as nginx's and apache's workers do. With dir= made by the
 * configuration (root's, 0700) the worker cannot create its file: it gets
 * one message naming the process, its user, the file and the directory's
 * owner and mode, and no exit line that contradicts it (before the fix:
 * a bare "cannot open" line, then "the trace file was never on" at exit).
 * With a directory made beforehand that nobody may write in (mode 1777:
 * asked for), the worker writes its own file, owner-only. With
 * monitor=on the worker's socket is bound when it is forked, still root,
 * so root's `ctl` reaches the worker. crash=DIR: the fallback line names
 * the worker and its user too. Needs root (to become another user);
 * skipped, saying so, otherwise.
 */
#include <grp.h>
#include <pwd.h>

#include "srv_util.h"

TEST_EVENT(ev_work, "pd_work", "int n", "n %d", "i", 1, 0);
TEST_GROUP(grp_pd, "pd", &ev_work)

static struct st_group *const groups[] = {&grp_pd, NULL};

#define PROG "test_rt_privdrop"

/* Server: forks a worker that becomes nobody, traces, waits for the stop file; then traces itself. */
static int server(const char *dir)
{
    char pidfile[800], stopfile[800];
    struct passwd *pw = getpwnam("nobody");
    int status;
    pid_t w;

    snprintf(pidfile, sizeof pidfile, "%s/worker.pid", dir);
    snprintf(stopfile, sizeof stopfile, "%s/stop", dir);
    CHECK(pw != NULL);
    fflush(stdout);
    if ((w = fork()) == 0) {
        if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)
            _exit(20);
        for (int i = 0; i < 10; i++)
            test_trace_i(&ev_work, (uint64_t)i);
        if (!mon_wait_path(stopfile, 1, 60000))
            _exit(21);
        test_trace_i(&ev_work, 10);
        exit(0);
    }
    CHECK(w > 0 && srv_write_pid(pidfile, (long)w) == 0);
    CHECK(waitpid(w, &status, 0) == w);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    test_trace_i(&ev_work, 100);
    return 0;
}

/* Runs the server with config; checks the worker can be reached by ctl; returns stderr, *worker its pid. */
static char *run(const char *name, const char *config, long *worker, int *status)
{
    char dir[800], env[1400], errpath[900], pidfile[900], stopfile[900], pidstr[32];
    char *args[] = {PROG, "server", dir, NULL};
    const char *envs[] = {env, NULL};
    struct tu_run r;
    pid_t server_pid;

    snprintf(dir, sizeof dir, "%s", test_path(name));
    mkdir(dir, 0755);
    snprintf(env, sizeof env, "SIMPLETRACE=%s", config);
    snprintf(errpath, sizeof errpath, "%s/stderr", dir);
    snprintf(pidfile, sizeof pidfile, "%s/worker.pid", dir);
    snprintf(stopfile, sizeof stopfile, "%s/stop", dir);
    server_pid = srv_start(args, envs, errpath, dir);
    *worker = srv_read_pid(pidfile, 20000);
    snprintf(pidstr, sizeof pidstr, "%ld", *worker);
    ok(*worker > 0 && srv_listed_alive(*worker, 5000), "%s: the worker, now nobody, is listed by root's ctl", name);
    r = MON_CTL("ctl", pidstr, "info", "trace-events", "pd_work");
    is_str(r.out, "pd_work : state 1\n", "%s: root's ctl reaches the worker", name);
    tu_run_free(&r);
    srv_touch(stopfile);
    *status = srv_wait(server_pid, 30000);
    return srv_stderr(errpath);
}

int main(int argc, char **argv)
{
    char cfg[2000], want[2400], path[480], traces[400], crash[400];
    struct passwd *pw;
    struct test_trace t;
    struct stat st;
    long worker;
    int status;
    char *err;

    if (argc > 2 && !strcmp(argv[1], "server"))
        return server(argv[2]);
    mon_cli = argc > 1 ? argv[1] : "simpletrace";
    if (geteuid() != 0 || !(pw = getpwnam("nobody"))) {
        printf("1..0 # SKIP needs root and a user 'nobody' to drop privileges to (euid %ld)\n", (long)geteuid());
        return 0;
    }
    mon_setup();
    /* nobody must reach the test's directory to write in one made for it. */
    chmod(test_dir, 0755);
    chmod(mon_xdg, 0700);

    /* dir= made by the configuration: root's, 0700. */
    snprintf(traces, sizeof traces, "%s/traces", test_path("closed"));
    snprintf(cfg, sizeof cfg, "enable=pd_*,dir=%s,monitor=on", traces);
    err = run("closed", cfg, &worker, &status);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "closed: server and worker ran");
    snprintf(want, sizeof want,
             "simpletrace: process %ld (" PROG "), user nobody (uid %ld): cannot open trace file '%s/" PROG
             "-%ld.trace': Permission denied (its directory %s belongs to root (uid 0), mode 0700); this "
             "process's events are not written\n",
             worker, (long)pw->pw_uid, traces, worker, traces);
    is_str(err, want, "closed: one message naming the process, its user, the file and the directory, nothing else");
    free(err);
    snprintf(path, sizeof path, "%s/" PROG "-%ld.trace", traces, worker);
    ok(!test_exists(path), "closed: no file for the worker");

    /* A directory made beforehand for the workers: they write their own files, owner-only. */
    snprintf(traces, sizeof traces, "%s/traces", test_path("open"));
    mkdir(test_path("open"), 0755);
    mkdir(traces, 0700);
    chmod(traces, 01777);
    snprintf(cfg, sizeof cfg, "enable=pd_*,dir=%s,monitor=on", traces);
    err = run("open", cfg, &worker, &status);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "open: server and worker ran");
    is_str(err, "", "open: nothing said");
    free(err);
    snprintf(path, sizeof path, "%s/" PROG "-%ld.trace", traces, worker);
    ok(stat(path, &st) == 0 && st.st_uid == pw->pw_uid && (st.st_mode & 0777) == 0600,
       "open: the worker's file is nobody's, mode 0600");
    if (ok(test_collect(path, groups, &t) == 0, "open: it decodes"))
        is_int(test_count(&t, "pd_work"), 11, "open: every record of the worker");
    test_trace_free(&t);

    /* crash=DIR root's: the fallback names the worker and its user. */
    snprintf(traces, sizeof traces, "%s/traces", test_path("crash"));
    snprintf(crash, sizeof crash, "%s/rings", test_path("crash"));
    mkdir(test_path("crash"), 0755);
    mkdir(traces, 0700);
    chmod(traces, 01777);
    snprintf(cfg, sizeof cfg, "enable=pd_*,dir=%s,crash=%s,monitor=on", traces, crash);
    err = run("crash", cfg, &worker, &status);
    snprintf(want, sizeof want, "(Permission denied for process %ld (" PROG "), user nobody (uid %ld)): threads trace "
             "to memory instead", worker, (long)pw->pw_uid);
    ok(err && strstr(err, want), "crash: the fallback line names the worker and its user: %s", err ? err : "");
    free(err);
    return done_testing();
}
