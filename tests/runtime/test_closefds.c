/*
 * A server that closes every descriptor at start-up (a daemon's close()
 * loop over 3..1023, closefrom()), after our constructor opened the trace
 * file, its lock, the monitor's socket and pipe, and the crash names file,
 * then opens its own files, pipes and sockets, which get those numbers.
 * Nothing of ours may go into them or be read from them; ours survive:
 * the trace file is opened again by its name (plain, and compressed in
 * rotated pieces), the monitor makes its socket and pipe again (ctl list,
 * ctl reach it), the names file is opened again; and the program exits
 * normally (before the fix: a use after free at exit, the trace's bytes
 * in the program's log, our thread reading from its pipe and closing its
 * files). When the trace file cannot be had again (removed meanwhile),
 * one message names the process, the descriptor and the file, and the
 * exit report agrees with it. A program started with 0, 1 and 2 closed
 * (by a supervisor) gets them when it opens its stdin, stdout and stderr:
 * none of ours is ever 0, 1 or 2, also when made again after the close
 * (before the fix the monitor's new pipe could be 0 and 1, and a daemon's
 * open("/dev/null") then got 3).
 */
#include <sys/socket.h>

#include "srv_util.h"

TEST_EVENT(ev_work, "cf_work", "int n", "n %d", "i", 1, 0);
TEST_GROUP(grp_cf, "cf", &ev_work)

static struct st_group *const groups[] = {&grp_cf, NULL};

#define EVENTS 20000
#define NLOGS 6

/* The program's own descriptors, opened after the close: they reuse our numbers. */
struct mine {
    int log[NLOGS];
    int pipe[2];
    int pair[2];
};

static int open_mine(struct mine *m, const char *dir)
{
    char path[800];

    for (int i = 0; i < NLOGS; i++) {
        snprintf(path, sizeof path, "%s/log%d", dir, i);
        CHECK((m->log[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600)) >= 0);
    }
    CHECK(pipe(m->pipe) == 0 && socketpair(AF_UNIX, SOCK_STREAM, 0, m->pair) == 0);
    return 0;
}

/* Writes a line to each log and a byte into the pipe and the socket pair. 0, or 1 after a failed check. */
static int use_mine(struct mine *m, int n)
{
    for (int i = 0; i < NLOGS; i++)
        CHECK(dprintf(m->log[i], "line %d of log %d\n", n, i) > 0);
    CHECK(write(m->pipe[1], "p", 1) == 1 && write(m->pair[0], "s", 1) == 1);
    return 0;
}

/* Child: traces one event (so every file of ours is open), closes everything, then lives as a server. */
static int server(const char *mode, const char *dir, const char *trace)
{
    char pidfile[800], stopfile[800], buf[256];
    struct mine m;
    int uses = 0;

    snprintf(pidfile, sizeof pidfile, "%s/server.pid", dir);
    snprintf(stopfile, sizeof stopfile, "%s/stop", dir);
    test_trace_i(&ev_work, 0);
    CHECK(st_trace_file_flush() == 0); /* the file written to, the crash names file open */
    if (!strcmp(mode, "stdclosed")) {
        /* Started with 0, 1, 2 closed: the program's own come first, whatever we opened. */
        snprintf(buf, sizeof buf, "%s/own-stderr", dir);
        CHECK(open("/dev/null", O_RDONLY) == 0);
        CHECK(open(buf, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600) == 1 && dup(1) == 2);
        CHECK(write(2, "the program's stderr\n", 21) == 21);
    } else {
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        /* A daemon reopens 0, 1, 2 and expects to get those numbers: our threads made nothing there meanwhile. */
        close(0);
        close(1);
        mon_sleep_ms(50);
        CHECK(open("/dev/null", O_RDONLY) == 0 && open("/dev/null", O_WRONLY) == 1);
    }
    if (!strcmp(mode, "removed"))
        CHECK(unlink(trace) == 0); /* nothing to open again */
    if (open_mine(&m, dir))
        return 1;
    for (int i = 1; i <= EVENTS; i++) {
        test_trace_i(&ev_work, (uint64_t)i);
        if (i % 2000 == 0) {
            if (use_mine(&m, uses++))
                return 1;
            st_trace_file_flush(); /* writer passes in between */
        }
    }
    CHECK(srv_write_pid(pidfile, (long)getpid()) == 0);
    CHECK(mon_wait_path(stopfile, 1, 60000));
    if (use_mine(&m, uses++))
        return 1;
    /* What the program put in its pipe and socket is all there: nothing of ours read it. */
    CHECK(read(m.pipe[0], buf, sizeof buf) == uses && read(m.pair[1], buf, sizeof buf) == uses);
    exit(0);
}

/* Checks log i holds the lines the server wrote and nothing else. */
static void check_logs(const char *dir, int uses, const char *what)
{
    int good = 0;

    for (int i = 0; i < NLOGS; i++) {
        char path[800], want[4096];
        size_t n = 0;
        char *text;
        snprintf(path, sizeof path, "%s/log%d", dir, i);
        for (int k = 0; k < uses; k++)
            n += (size_t)snprintf(want + n, sizeof want - n, "line %d of log %d\n", k, i);
        text = tu_slurp(path, NULL);
        good += text && !strcmp(text, want);
        free(text);
    }
    is_int(good, NLOGS, "%s: the program's files, opened on our numbers, hold its lines only", what);
}

/* srv_start() with 0, 1 and 2 closed in the server when close_std. */
static pid_t start_server(char *const argv[], const char *const env[], const char *errpath, const char *dir,
                          bool close_std)
{
    pid_t pid;

    if (!close_std)
        return srv_start(argv, env, errpath, dir);
    fflush(stdout);
    if ((pid = fork()) != 0)
        return pid;
    setenv("SIMPLETRACE", strchr(env[0], '=') + 1, 1);
    if (chdir(dir) != 0)
        _exit(126);
    close(0);
    close(1);
    close(2);
    execv("/proc/self/exe", argv);
    _exit(127);
}

/* Runs the server with config in dir; stops it once it is up; returns its stderr, *pid its pid. */
static char *run_server(const char *mode, const char *config, const char *dir, const char *trace, long *pid)
{
    char env[1400], errpath[800], stopfile[800], pidfile[800];
    char *args[] = {"test_rt_closefds", "server", (char *)mode, (char *)dir, (char *)trace, NULL};
    const char *envs[] = {env, NULL};
    struct tu_run r;
    char pidstr[32];
    int status;
    pid_t child;

    mkdir(dir, 0700);
    snprintf(env, sizeof env, "SIMPLETRACE=%s", config);
    snprintf(errpath, sizeof errpath, "%s/stderr", dir);
    snprintf(stopfile, sizeof stopfile, "%s/stop", dir);
    snprintf(pidfile, sizeof pidfile, "%s/server.pid", dir);
    child = start_server(args, envs, errpath, dir, !strcmp(mode, "stdclosed"));
    *pid = srv_read_pid(pidfile, 60000);
    ok(*pid == child, "%s: the server closed every descriptor and went on", mode);
    snprintf(pidstr, sizeof pidstr, "%ld", (long)child);
    ok(srv_listed_alive(child, 5000), "%s: its monitor made its socket again: ctl list shows it alive", mode);
    r = MON_CTL("ctl", pidstr, "info", "stats");
    ok(r.status == 0 && strstr(r.out, "records produced"), "%s: ctl reaches it", mode);
    tu_run_free(&r);
    srv_touch(stopfile);
    status = srv_wait(child, 30000);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: it exited normally (status %d)", mode, status);
    return srv_stderr(errpath);
}

/* Records named cf_work in the trace (and its pieces), counted by `simpletrace print`. */
static int printed(const char *trace)
{
    char *argv[] = {(char *)mon_cli, "print", (char *)trace, NULL};
    struct tu_run r;
    int n;

    tu_run(argv, NULL, NULL, false, &r);
    n = srv_count_lines(r.out, "cf_work ");
    if (r.status)
        diag("print %s: %s", trace, r.err);
    tu_run_free(&r);
    return n;
}

int main(int argc, char **argv)
{
    char dir[400], trace[480], cfg[1600], want[1600], *err;
    struct test_trace t;
    long pid;

    if (argc > 4 && !strcmp(argv[1], "server"))
        return server(argv[2], argv[3], argv[4]);
    mon_cli = argc > 1 ? argv[1] : "simpletrace";
    mon_setup();

    /* A plain file, crash=DIR (its names file), the monitor. */
    snprintf(dir, sizeof dir, "%s", test_path("plain"));
    snprintf(trace, sizeof trace, "%s/t.trace", dir);
    snprintf(cfg, sizeof cfg, "enable=cf_*,file=%s,crash=%s/crash,monitor=on", trace, dir);
    err = run_server("plain", cfg, dir, trace, &pid);
    is_str(err, "", "plain: nothing said (nothing lost)");
    free(err);
    check_logs(dir, EVENTS / 2000 + 1, "plain");
    if (ok(test_collect(trace, groups, &t) == 0, "plain: the trace decodes")) {
        is_int(test_count(&t, "cf_work"), EVENTS + 1, "plain: every record is in it");
        is_u64(t.sum.dropped_total, 0, "plain: nothing dropped");
    }
    test_trace_free(&t);

    /* Compressed, in rotated pieces: the file is opened again at the end of what was written. */
    snprintf(dir, sizeof dir, "%s", test_path("zstd"));
    snprintf(trace, sizeof trace, "%s/z.trace", dir);
    snprintf(cfg, sizeof cfg, "enable=cf_*,file=%s,compress=zstd,rotate=64K,monitor=on", trace);
    err = run_server("zstd", cfg, dir, trace, &pid);
    is_str(err, "", "zstd: nothing said");
    free(err);
    check_logs(dir, EVENTS / 2000 + 1, "zstd");
    is_int(printed(trace), EVENTS + 1, "zstd: print reads every record from the pieces");

    /* The trace file removed before it could be opened again: one message, and an exit line that agrees. */
    snprintf(dir, sizeof dir, "%s", test_path("removed"));
    snprintf(trace, sizeof trace, "%s/r.trace", dir);
    snprintf(cfg, sizeof cfg, "enable=cf_*,file=%s,monitor=on", trace);
    err = run_server("removed", cfg, dir, trace, &pid);
    check_logs(dir, EVENTS / 2000 + 1, "removed");
    snprintf(want, sizeof want, "simpletrace: process %ld (test_rt_closefds) closed descriptor ", pid);
    is_int(srv_count_lines(err, want), 1, "removed: one message names the process and the descriptor...");
    snprintf(want, sizeof want, ", its trace file '%s', which cannot be opened again (No such file or directory); "
             "tracing to it stopped\n", trace);
    ok(err && strstr(err, want), "... the file and why: %s", err ? err : "");
    snprintf(want, sizeof want, "records lost: writing '%s' failed: Bad file descriptor", trace);
    ok(err && srv_count_lines(err, "simpletrace: ") == 2 && strstr(err, want),
       "removed: the exit report counts the records lost to it, and says nothing else");
    free(err);
    ok(!test_exists(trace), "removed: nothing made at the removed name");

    /* Started with 0, 1, 2 closed: the program opens its own there. */
    snprintf(dir, sizeof dir, "%s", test_path("stdclosed"));
    snprintf(trace, sizeof trace, "%s/s.trace", dir);
    snprintf(cfg, sizeof cfg, "enable=cf_*,file=%s,crash=%s/crash,monitor=on", trace, dir);
    free(run_server("stdclosed", cfg, dir, trace, &pid));
    snprintf(want, sizeof want, "%s/own-stderr", dir);
    err = srv_stderr(want);
    is_str(err, "the program's stderr\n", "stdclosed: its stderr (2) is its own file, nothing of ours in it");
    free(err);
    if (ok(test_collect(trace, groups, &t) == 0, "stdclosed: the trace decodes"))
        is_int(test_count(&t, "cf_work"), EVENTS + 1, "stdclosed: every record is in it");
    test_trace_free(&t);
    return done_testing();
}
