/*
 * Sockets left behind: by a process that died (pid gone) or by one whose
 * pid lives on but serves nothing (connection refused). `ctl list` and a
 * monitor starting in the same directory remove them; other files are
 * left alone. A SIGKILLed program's socket is detected the same way.
 * SIMPLETRACE errors about the monitor go to stderr and the program runs.
 *
 * argv: TARGET SIMPLETRACE-CLI TRACE-EVENTS
 */
#include "mon_util.h"

/* Binds a socket at path; with listen_too, a listening one (kept open: fd returned). */
static int make_socket(const char *path, int listen_too)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (strlen(path) < sizeof sa.sun_path)
        memcpy(sa.sun_path, path, strlen(path) + 1);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        diag("bind %s: %s", path, strerror(errno));
        return -1;
    }
    if (listen_too) {
        listen(fd, 4);
        return fd;
    }
    close(fd);
    return 0;
}

/* A socket named after a process that has exited. Returns that pid. */
static long dead_process_socket(void)
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        make_socket(mon_sock(getpid()), 1);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    return (long)pid;
}

static void test_list_removes(void)
{
    long dead = dead_process_socket(), me = (long)getpid();
    char other[800];
    struct tu_run r;

    make_socket(mon_sock(me), 0); /* our pid is alive, but nothing listens */
    snprintf(other, sizeof other, "%s/77.sock", mon_sockdir);
    test_write_file(other, "not a socket\n");
    ok(test_exists(mon_sock(dead)) && test_exists(mon_sock(me)), "two stale sockets made");

    r = MON_CTL("ctl", "list");
    is_int(r.status, 0, "ctl list: exit 0");
    {
        char want[900];
        snprintf(want, sizeof want, "%-8ld ?                stale (removed)  %s\n", dead, mon_sock(dead));
        ok(strstr(r.out, want) != NULL, "ctl list: dead process's socket reported as removed");
        snprintf(want, sizeof want, "%-8ld ?                stale (removed)  %s\n", me, mon_sock(me));
        ok(strstr(r.out, want) != NULL, "ctl list: refused socket of a live pid reported as removed");
        if (!strstr(r.out, want))
            diag("got: %s", r.out);
    }
    tu_run_free(&r);
    ok(!test_exists(mon_sock(dead)) && !test_exists(mon_sock(me)), "... and both are gone");
    ok(test_exists(other), "a file that is not a socket is left alone");
    unlink(other);
}

static void test_startup_removes(const char *exe)
{
    long dead = dead_process_socket(), me = (long)getpid();
    struct mon_target t;
    int status;

    make_socket(mon_sock(me), 0);
    if (mon_start(&t, exe, "monitor=on") < 0)
        return;
    ok(mon_wait_path(mon_sock(t.pid), 1, 2000), "a monitor starts in the directory");
    ok(mon_wait_path(mon_sock(dead), 0, 2000), "... and removes the dead process's socket");
    ok(mon_wait_path(mon_sock(me), 0, 2000), "... and the refused one");
    status = mon_quit(&t);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exits normally");
}

static void test_killed(const char *exe)
{
    struct mon_target t;
    struct tu_run r;
    char pid[32], want[900];
    int status;

    if (mon_start(&t, exe, "monitor=on") < 0)
        return;
    mon_wait_path(mon_sock(t.pid), 1, 2000);
    kill(t.pid, SIGKILL);
    waitpid(t.pid, &status, 0);
    fclose(t.in);
    fclose(t.out);
    ok(test_exists(mon_sock(t.pid)), "a SIGKILLed program leaves its socket");
    snprintf(pid, sizeof pid, "%ld", (long)t.pid);
    r = MON_CTL("ctl", pid, "info", "stats");
    is_int(r.status, 1, "ctl to it: exit 1");
    ok(strstr(r.err, "cannot reach") && strstr(r.err, "monitor=on"), "ctl to it: cannot reach, with a hint");
    tu_run_free(&r);
    r = MON_CTL("ctl", "list", "--json");
    snprintf(want, sizeof want,
             "{\"pid\":%ld,\"program\":\"?\",\"socket\":\"%s\",\"alive\":false,\"removed\":true}", (long)t.pid,
             mon_sock(t.pid));
    ok(strstr(r.out, want) != NULL, "ctl list --json reports it removed");
    tu_run_free(&r);
    ok(!test_exists(mon_sock(t.pid)), "... and it is gone");
}

static void test_explicit_path(const char *exe)
{
    char path[800], config[900], *err, *a;
    struct mon_target t;
    int status;

    /* A stale socket at PATH is replaced. */
    snprintf(path, sizeof path, "%s", test_path("mine.sock"));
    make_socket(path, 0);
    snprintf(config, sizeof config, "monitor=%s", path);
    if (mon_start(&t, exe, config) < 0)
        return;
    a = mon_ask(path, "trace-file\n");
    ok(a && strstr(a, "off.\nok\n"), "monitor=PATH replaces a stale socket there and serves");
    free(a);
    status = mon_quit(&t);
    ok(WIFEXITED(status) && !test_exists(path), "and removes it at exit");

    /* PATH is a regular file: an error on stderr, the program runs without a monitor. */
    test_write_file(path, "precious\n");
    unlink(test_path("target.err"));
    if (mon_start(&t, exe, config) < 0)
        return;
    ok(mon_alive(&t), "a monitor that cannot start does not stop the program");
    status = mon_quit(&t);
    err = tu_slurp(test_path("target.err"), NULL);
    {
        char want[1000];
        snprintf(want, sizeof want, "simpletrace: SIMPLETRACE: monitor: %s exists and is not a socket\n", path);
        is_str(err, want, "the reason is on stderr");
    }
    free(err);
    err = tu_slurp(path, NULL);
    is_str(err, "precious\n", "the file is untouched");
    free(err);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s TARGET SIMPLETRACE TRACE-EVENTS\n", argv[0]);
        return 2;
    }
    mon_cli = argv[2];
    mon_setup();
    if (mkdir(mon_sockdir, 0700) < 0) {
        perror(mon_sockdir);
        return 1;
    }
    test_list_removes();
    test_startup_removes(argv[1]);
    test_killed(argv[1]);
    test_explicit_path(argv[1]);
    return done_testing();
}
