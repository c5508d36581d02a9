/*
 * Forking workers and snapshot children: a server (dir=, crash=DIR,
 * monitor=on) forks two long-lived workers, then two short snapshot
 * children that end as redis's BGSAVE child does, one with exit(), one
 * with _exit(). Each process writes its own file, each worker serves its
 * own socket, so `ctl` reaches the process that does the work (before the
 * fix a fork child served nothing): an event enabled in one worker only
 * shows in that worker's trace. The exit() child's file is whole; the
 * _exit() child's records the writer had no time for are in its crash
 * rings, and `simpletrace recover` rebuilds them: file and recovered trace
 * hold each of its records once.
 */
#include "srv_util.h"

TEST_EVENT(ev_tick, "wk_tick", "int n", "n %d", "i", 1, 0);
TEST_EVENT(ev_extra, "wk_extra", "int n", "n %d", "i", 1, 0);
TEST_EVENT(ev_snap, "wk_snap", "int n", "n %d", "i", 1, 0);
TEST_GROUP(grp_wk, "wk", &ev_tick, &ev_extra, &ev_snap)

static struct st_group *const groups[] = {&grp_wk, NULL};

#define PROG "test_rt_workers"
#define SNAP 50

static pid_t worker(const char *stopfile, int id)
{
    pid_t pid = fork();

    if (pid != 0)
        return pid;
    for (int i = 0; !test_exists(stopfile); i++) {
        test_trace_i(&ev_tick, (uint64_t)i);
        mon_sleep_ms(5);
    }
    test_trace_i(&ev_extra, (uint64_t)id); /* enabled through the monitor, in one worker */
    exit(0);
}

static pid_t snapshot_child(bool quick)
{
    pid_t pid = fork();

    if (pid != 0)
        return pid;
    for (int i = 0; i < SNAP; i++)
        test_trace_i(&ev_snap, (uint64_t)i);
    if (quick)
        _exit(0); /* as redis's child ends: no exit handlers, nothing flushed */
    exit(0);
}

static int server(const char *dir)
{
    char stopfile[800], path[800];
    pid_t w[2], s[2];
    FILE *f;
    int status, bad = 0;

    snprintf(stopfile, sizeof stopfile, "%s/stop", dir);
    test_trace_i(&ev_tick, 0);
    fflush(stdout);
    w[0] = worker(stopfile, 1);
    w[1] = worker(stopfile, 2);
    s[0] = snapshot_child(false);
    s[1] = snapshot_child(true);
    snprintf(path, sizeof path, "%s/pids", dir);
    CHECK((f = fopen(path, "w")) && fprintf(f, "%ld %ld %ld %ld\n", (long)w[0], (long)w[1], (long)s[0], (long)s[1]) > 0 &&
          fclose(f) == 0);
    snprintf(path, sizeof path, "%s/pids.ready", dir);
    srv_touch(path);
    for (int i = 0; i < 2; i++) {
        bad |= waitpid(w[i], &status, 0) != w[i] || !WIFEXITED(status) || WEXITSTATUS(status);
        bad |= waitpid(s[i], &status, 0) != s[i] || !WIFEXITED(status) || WEXITSTATUS(status);
    }
    CHECK(!bad);
    return 0;
}

/* The records named name in the process's file in dir (pid's). */
static int count_in(const char *dir, long pid, const char *name)
{
    char path[480];
    struct test_trace t;
    int n = -1;

    snprintf(path, sizeof path, "%s/" PROG "-%ld.trace", dir, pid);
    if (test_collect(path, groups, &t) == 0)
        n = (int)test_count(&t, name);
    test_trace_free(&t);
    return n;
}

/* wk_snap records `simpletrace print` shows in path (0 when there is no such file). */
static int printed_snaps(const char *path)
{
    char *argv[] = {(char *)mon_cli, "print", (char *)path, NULL};
    struct tu_run r;
    int n;

    if (!test_exists(path))
        return 0;
    tu_run(argv, NULL, NULL, false, &r);
    n = srv_count_lines(r.out, "wk_snap ");
    tu_run_free(&r);
    return n;
}

int main(int argc, char **argv)
{
    char dir[400], crash[400], env[1200], path[480], out[480], pidstr[32];
    char *args[] = {PROG, "server", dir, NULL};
    const char *envs[] = {env, NULL};
    long w[2], s[2];
    struct tu_run r;
    pid_t server_pid;
    char *text;
    int status;

    if (argc > 2 && !strcmp(argv[1], "server"))
        return server(argv[2]);
    mon_cli = argc > 1 ? argv[1] : "simpletrace";
    mon_setup();
    snprintf(dir, sizeof dir, "%s", test_path("traces"));
    snprintf(crash, sizeof crash, "%s", test_path("crash"));
    snprintf(env, sizeof env, "SIMPLETRACE=enable=wk_tick,enable=wk_snap,dir=%s,crash=%s,monitor=on", dir, crash);
    server_pid = srv_start(args, envs, test_path("stderr"), test_dir);
    snprintf(path, sizeof path, "%s/pids.ready", dir);
    mon_wait_path(path, 1, 20000);
    snprintf(path, sizeof path, "%s/pids", dir);
    text = tu_slurp(path, NULL);
    ok(text && sscanf(text, "%ld %ld %ld %ld", &w[0], &w[1], &s[0], &s[1]) == 4, "the server forked its children");
    free(text);

    ok(srv_listed_alive(server_pid, 5000), "ctl list: the server");
    ok(srv_listed_alive(w[0], 5000) && srv_listed_alive(w[1], 5000), "ctl list: each worker, its own socket");
    snprintf(pidstr, sizeof pidstr, "%ld", w[0]);
    r = MON_CTL("ctl", pidstr, "trace-event", "wk_extra", "on");
    is_int(r.status, 0, "ctl reaches the first worker: trace-event wk_extra on");
    tu_run_free(&r);

    srv_touch(test_path("traces/stop"));
    status = srv_wait(server_pid, 30000);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "server, workers and snapshot children ended normally");
    text = srv_stderr(test_path("stderr"));
    is_str(text, "", "nothing said");
    free(text);

    is_int(count_in(dir, w[0], "wk_extra"), 1, "the event enabled in the first worker is in its own file");
    is_int(count_in(dir, w[1], "wk_extra"), 0, "... and only there");
    ok(count_in(dir, w[0], "wk_tick") > 0 && count_in(dir, w[1], "wk_tick") > 0, "each worker's ticks in its own file");
    is_int(count_in(dir, (long)server_pid, "wk_tick"), 1, "the server's file holds its own record only");
    is_int(count_in(dir, s[0], "wk_snap"), SNAP, "the exit() snapshot child's file is whole");

    /* The _exit() child: what its file lacks is in its rings. */
    snprintf(path, sizeof path, "%s/" PROG "-%ld.trace", dir, s[1]);
    snprintf(out, sizeof out, "%s", test_path("recovered.trace"));
    snprintf(pidstr, sizeof pidstr, "%ld", s[1]);
    {
        char *rec[] = {(char *)mon_cli, "recover", "--pid", pidstr, "--trace", path, crash, "-o", out, NULL};
        char *rec_nofile[] = {(char *)mon_cli, "recover", "--pid", pidstr, crash, "-o", out, NULL};
        tu_run(test_exists(path) ? rec : rec_nofile, NULL, NULL, false, &r);
        if (!ok(r.status == 0, "recover rebuilds the _exit() child's rings"))
            diag("%s", r.err);
        tu_run_free(&r);
    }
    is_int(printed_snaps(path) + printed_snaps(out), SNAP,
           "the _exit() child's file and recovered trace hold each of its records once");
    return done_testing();
}
