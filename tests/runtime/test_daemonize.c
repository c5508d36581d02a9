/*
 * Daemonizing: the process that keeps running is a fork child (of a fork
 * child), after setsid(), chdir("/"), every descriptor closed and 0, 1, 2
 * reopened on /dev/null. Its trace, its crash rings and its monitor socket
 * must follow it, with names given relative to the directory the program
 * was started in: the daemon writes RUN/NAME-<daemon pid> (never
 * /NAME-<pid>), keeps its rings in RUN/crash (never /crash), is listed by
 * `ctl list` and obeys `ctl PID trace-event`, and its own files get none
 * of our bytes. Done twice: by hand as redis does (fork, the parent
 * exit()s; setsid; fork again) with file= and crash= relative, and with
 * daemon(3) (the parent _exit()s) with dir= relative.
 *
 * Before the fixes the daemon wrote /NAME-<pid> and its rings failed
 * (relative to "/"), served no monitor (ctl could not reach it), and a
 * daemon's log file opened after the close got the trace file's bytes.
 */
#include "srv_util.h"

TEST_EVENT(ev_up, "dmn_up", "int pid", "pid %d", "i", 1, 0);
TEST_EVENT(ev_work, "dmn_work", "int n", "n %d", "i", 1, 0);
TEST_EVENT(ev_later, "dmn_later", "int n", "n %d", "i", 1, 0);
TEST_GROUP(grp_dmn, "dmn", &ev_up, &ev_work, &ev_later)

static struct st_group *const groups[] = {&grp_dmn, NULL};

/* Becomes a daemon the way `how` says; returns in the daemon only. */
static void daemonize(const char *how)
{
    pid_t p;

    if (!strcmp(how, "daemon3")) {
        if (daemon(0, 0) < 0) /* fork, the parent _exit()s, setsid, chdir("/"), 0-2 on /dev/null */
            _exit(10);
    } else {
        fflush(stdout);
        if ((p = fork()) < 0)
            _exit(11);
        if (p > 0)
            exit(0); /* back to the shell: the parent's exit handlers run */
        setsid();
        if ((p = fork()) < 0)
            _exit(12);
        if (p > 0)
            _exit(0); /* the session leader goes: the daemon never gets a terminal again */
        if (chdir("/") != 0)
            _exit(13);
    }
    /* Every descriptor closed, 0, 1, 2 on /dev/null: ours too, numbers free for the daemon's own files. */
    for (int fd = 0; fd < 1024; fd++)
        close(fd);
    if (open("/dev/null", O_RDWR) != 0 || dup(0) != 1 || dup(0) != 2)
        _exit(14);
}

/* Child: daemonizes, then traces until told to stop. Its files are absolute paths (it is in "/"). */
static int daemon_main(const char *how, const char *pidfile, const char *stopfile, const char *logpath)
{
    int log;

    daemonize(how);
    /* The daemon's own log takes the lowest free number: the trace file's, before the close. */
    log = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
    CHECK(log >= 0);
    dprintf(log, "daemon %ld up\n", (long)getpid());
    test_trace_i(&ev_up, (uint64_t)getpid());
    CHECK(srv_write_pid(pidfile, (long)getpid()) == 0);
    CHECK(mon_wait_path(stopfile, 1, 60000));
    for (int i = 0; i < 100; i++) {
        test_trace_i(&ev_work, (uint64_t)i);
        test_trace_i(&ev_later, (uint64_t)i); /* enabled through ctl only */
    }
    dprintf(log, "daemon %ld down\n", (long)getpid());
    exit(0);
}

/* Runs one daemon: how ("double" or "daemon3"), its configuration, and where its trace must be (%ld: its pid). */
static void run_daemon(const char *how, const char *config, const char *trace_fmt, const char *ring_dir)
{
    char run[400], pidfile[500], stopfile[500], logpath[500], env[1200], errpath[500], trace[480], want[200];
    char *args[] = {"test_rt_daemonize", "daemon", (char *)how, pidfile, stopfile, logpath, NULL};
    const char *envs[] = {env, NULL};
    struct test_trace t;
    struct tu_run r;
    char pidstr[32], *text;
    long dpid;
    pid_t first;
    int status;

    snprintf(run, sizeof run, "%s", test_path(how));
    mkdir(run, 0700);
    snprintf(pidfile, sizeof pidfile, "%s/daemon.pid", run);
    snprintf(stopfile, sizeof stopfile, "%s/stop", run);
    snprintf(logpath, sizeof logpath, "%s/daemon.log", run);
    snprintf(errpath, sizeof errpath, "%s/stderr", run);
    snprintf(env, sizeof env, "SIMPLETRACE=%s", config);
    first = srv_start(args, envs, errpath, run);
    status = srv_wait(first, 10000);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the program returned to the shell", how);
    dpid = srv_read_pid(pidfile, 10000);
    if (!ok(dpid > 0, "%s: the daemon started", how))
        return;
    snprintf(pidstr, sizeof pidstr, "%ld", dpid);
    ok(dpid != first, "%s: the daemon is a fork child", how);

    /* Its monitor followed it: listed, and it obeys. */
    ok(srv_listed_alive(dpid, 5000), "%s: ctl list shows the daemon alive", how);
    r = MON_CTL("ctl", pidstr, "trace-event", "dmn_later", "on");
    is_int(r.status, 0, "%s: ctl reaches the daemon: trace-event dmn_later on", how);
    tu_run_free(&r);
    snprintf(want, sizeof want, "st-%ld-", dpid);
    ok(srv_count_files(ring_dir, want, ".ring") >= 1, "%s: its crash rings are in the directory configured", how);

    srv_touch(stopfile);
    status = srv_wait((pid_t)dpid, 20000); /* ours: this process reaps orphans */
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the daemon exited normally", how);

    snprintf(trace, sizeof trace, trace_fmt, run, dpid);
    if (ok(test_collect(trace, groups, &t) == 0, "%s: its trace %s decodes", how, trace)) {
        is_int(test_count(&t, "dmn_up"), 1, "%s: the event before stop is there", how);
        is_int(test_count(&t, "dmn_work"), 100, "%s: every event after", how);
        is_int(test_count(&t, "dmn_later"), 100, "%s: and those the monitor enabled", how);
        is_u64(t.sum.dropped_total, 0, "%s: nothing dropped", how);
    }
    test_trace_free(&t);
    snprintf(want, sizeof want, "/%s", strrchr(trace, '/') + 1);
    ok(!test_exists(want), "%s: nothing written at %s (the daemon is in /)", how, want);
    text = tu_slurp(logpath, NULL);
    snprintf(want, sizeof want, "daemon %ld up\ndaemon %ld down\n", dpid, dpid);
    is_str(text, want, "%s: the daemon's log, opened on the trace file's old number, holds its lines only", how);
    free(text);
    ok(!test_exists(mon_sock(dpid)), "%s: its socket went at its exit", how);
    snprintf(want, sizeof want, "st-%ld-", dpid);
    is_int(srv_count_files(ring_dir, want, ".ring"), 0, "%s: and its rings (all written)", how);
    text = srv_stderr(errpath);
    is_str(text, "", "%s: nothing said by the program before it became a daemon", how);
    free(text);
}

int main(int argc, char **argv)
{
    char ring_dir[800];

    if (argc > 5 && !strcmp(argv[1], "daemon"))
        return daemon_main(argv[2], argv[3], argv[4], argv[5]);
    mon_cli = argc > 1 ? argv[1] : "simpletrace";
    mon_setup();
    srv_subreaper();

    /* As redis does, the names relative to where it was started. */
    snprintf(ring_dir, sizeof ring_dir, "%s/crash", test_path("double"));
    run_daemon("double", "enable=dmn_up,enable=dmn_work,file=d.trace,crash=crash,monitor=on", "%s/d.trace-%ld",
               ring_dir);
    /* daemon(3), dir= relative. */
    snprintf(ring_dir, sizeof ring_dir, "%s/crash", test_path("daemon3"));
    run_daemon("daemon3", "enable=dmn_up,enable=dmn_work,dir=traces,crash=crash,monitor=on",
               "%s/traces/test_rt_daemonize-%ld.trace", ring_dir);
    return done_testing();
}
