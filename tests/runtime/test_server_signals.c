/*
 * Signals as servers handle them: SIGTERM's handler calls exit() (the
 * exit handlers run inside it, in the main thread's event loop), SIGPIPE
 * is ignored, and handlers are installed without SA_RESTART while an
 * interval timer fires every 200 us, so that our calls in the program's
 * threads meet EINTR: a new thread's first event with crash=DIR (its ring
 * file made and allocated), flushes. The server goes on tracing
 * throughout, new threads included; the monitor answers meanwhile; SIGTERM
 * ends it with status 0, never a hang; the trace decodes whole, with every
 * thread in it, and nothing is said but a drop count; the socket goes.
 */
#include <pthread.h>
#include <sys/time.h>

#include "srv_util.h"

TEST_EVENT(ev_work, "sg_work", "int n", "n %d", "i", 1, 0);
TEST_EVENT(ev_loop, "sg_loop", "int n", "n %d", "i", 1, 0);
TEST_GROUP(grp_sg, "sg", &ev_work, &ev_loop)

static struct st_group *const groups[] = {&grp_sg, NULL};

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

static void on_term(int sig)
{
    (void)sig;
    exit(0); /* as many servers do: the exit handlers run here */
}

/* A short-lived connection thread: its first event makes its ring file (crash=DIR) under the timer. */
static void *conn(void *arg)
{
    for (int i = 0; i < 200; i++)
        test_trace_i(&ev_work, (uint64_t)(uintptr_t)arg * 1000 + (uint64_t)i);
    return NULL;
}

static int server(const char *pidfile)
{
    struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART */
    struct itimerval every = {{0, 200}, {0, 200}};
    sigset_t block;

    sigaction(SIGALRM, &sa, NULL);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    CHECK(setitimer(ITIMER_REAL, &every, NULL) == 0);
    /* Connection threads leave SIGTERM to the main thread, as servers arrange. */
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    for (uintptr_t n = 1;; n++) {
        pthread_t t;
        pthread_sigmask(SIG_BLOCK, &block, NULL);
        int r = pthread_create(&t, NULL, conn, (void *)n);
        pthread_sigmask(SIG_UNBLOCK, &block, NULL);
        if (r == 0)
            pthread_join(t, NULL);
        test_trace_i(&ev_loop, n);
        if (n % 16 == 0)
            st_trace_file_flush();
        if (n == 20)
            CHECK(srv_write_pid(pidfile, (long)getpid()) == 0);
    }
}

int main(int argc, char **argv)
{
    char dir[400], trace[480], env[1200], pidfile[480], pidstr[32], *err;
    char *args[] = {"test_rt_server_signals", "server", pidfile, NULL};
    const char *envs[] = {env, NULL};
    struct test_trace t;
    struct tu_run r;
    pid_t pid;
    long up;
    int status, lines;

    if (argc > 2 && !strcmp(argv[1], "server"))
        return server(argv[2]);
    mon_cli = argc > 1 ? argv[1] : "simpletrace";
    mon_setup();
    snprintf(dir, sizeof dir, "%.399s", test_dir);
    snprintf(trace, sizeof trace, "%s/s.trace", dir);
    snprintf(pidfile, sizeof pidfile, "%s/server.pid", dir);
    snprintf(env, sizeof env, "SIMPLETRACE=enable=sg_*,file=%s,crash=%s/crash,bufsize=64K,monitor=on", trace, dir);
    pid = srv_start(args, envs, test_path("stderr"), dir);
    up = srv_read_pid(pidfile, 20000);
    ok(up == pid, "the server runs under a 200 us timer without SA_RESTART");
    snprintf(pidstr, sizeof pidstr, "%ld", (long)pid);
    r = MON_CTL("ctl", pidstr, "info", "stats");
    if (!ok(r.status == 0 && strstr(r.out, "records produced"), "the monitor answers meanwhile"))
        diag("ctl: status %d, %s%s", r.status, r.out, r.err);
    tu_run_free(&r);
    mon_sleep_ms(200);
    kill(pid, SIGTERM);
    status = srv_wait(pid, 20000);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "SIGTERM: its handler's exit() ends it with status 0");
    if (ok(test_collect(trace, groups, &t) == 0, "the trace decodes whole")) {
        ok(test_count(&t, "sg_loop") >= 20, "the main thread's records are in it");
        ok(test_count(&t, "sg_work") >= 20 * 200 - t.sum.dropped_total, "the connection threads' too");
    }
    test_trace_free(&t);
    err = srv_stderr(test_path("stderr"));
    lines = err ? srv_count_lines(err, "") : -1;
    ok(lines == 0 || (lines == 1 && !strncmp(err, "simpletrace: ", 13) && strstr(err, " events were dropped")),
       "nothing said but a drop count (no buffer left unprotected by EINTR): %s", err ? err : "");
    free(err);
    ok(!test_exists(mon_sock(pid)), "its socket went");
    return done_testing();
}
