/*
 * Shared by the monitor tests: the target program (mon_target.c) started
 * with a configuration and driven on its stdin, `simpletrace ctl` run with
 * its output captured, and raw protocol clients.
 *
 * Every test points XDG_RUNTIME_DIR at its own temporary directory, so
 * `ctl list` sees only the test's processes and nothing touches the
 * user's real sockets.
 */
#ifndef ST_TEST_MON_UTIL_H
#define ST_TEST_MON_UTIL_H

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "rt_test.h"

/* --- time ------------------------------------------------------------------ */

static inline double mon_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void mon_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* --- the per-test runtime directory ----------------------------------------- */

static char mon_xdg[600];      /* XDG_RUNTIME_DIR for everything the test starts */
static char mon_sockdir[700];  /* mon_xdg/simpletrace */

/* Creates test_dir and the XDG directory inside it, and exports it. */
static inline void mon_setup(void)
{
    test_tmpdir();
    snprintf(mon_xdg, sizeof mon_xdg, "%s/xdg", test_dir);
    snprintf(mon_sockdir, sizeof mon_sockdir, "%s/simpletrace", mon_xdg);
    if (mkdir(mon_xdg, 0700) < 0) {
        perror(mon_xdg);
        exit(2);
    }
    setenv("XDG_RUNTIME_DIR", mon_xdg, 1);
    signal(SIGPIPE, SIG_IGN);
}

/* mon_sockdir/<pid>.sock in a static buffer (one of a few). */
static inline const char *mon_sock(long pid)
{
    static char bufs[4][800];
    static int i;
    char *b = bufs[i++ & 3];
    snprintf(b, sizeof bufs[0], "%s/%ld.sock", mon_sockdir, pid);
    return b;
}

/* Waits up to ms for path to exist (want 1) or not (want 0). */
static inline int mon_wait_path(const char *path, int want, long ms)
{
    for (long waited = 0;; waited += 10) {
        if (test_exists(path) == want)
            return 1;
        if (waited >= ms)
            return 0;
        mon_sleep_ms(10);
    }
}

/* --- the target program ---------------------------------------------------- */

struct mon_target {
    pid_t pid;
    FILE *in;  /* its stdin */
    FILE *out; /* its stdout */
};

/* Starts exe with SIMPLETRACE=config (stderr to test_dir/target.err); waits for "ready". */
static inline int mon_start(struct mon_target *t, const char *exe, const char *config)
{
    int in[2], out[2];
    char line[128];

    if (pipe(in) < 0 || pipe(out) < 0)
        return -1;
    t->pid = fork();
    if (t->pid < 0)
        return -1;
    if (t->pid == 0) {
        int fd = open(test_path("target.err"), O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(in[0], 0);
        dup2(out[1], 1);
        if (fd >= 0)
            dup2(fd, 2);
        close(in[1]);
        close(out[0]);
        setenv("SIMPLETRACE", config, 1);
        if (chdir(test_dir) != 0)
            _exit(126);
        execl(exe, exe, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    t->in = fdopen(in[1], "w");
    t->out = fdopen(out[0], "r");
    setvbuf(t->in, NULL, _IOLBF, 0);
    if (!fgets(line, sizeof line, t->out) || strncmp(line, "ready ", 6) != 0) {
        diag("target did not start: %s", line);
        return -1;
    }
    return 0;
}

/* Sends one command line to the target and waits for "done". 0 or -1. */
static inline int mon_do(struct mon_target *t, const char *cmd)
{
    char line[128];

    if (fprintf(t->in, "%s\n", cmd) < 0 || fflush(t->in) != 0)
        return -1;
    if (!fgets(line, sizeof line, t->out) || strcmp(line, "done\n") != 0) {
        diag("target answered '%s' to '%s'", line, cmd);
        return -1;
    }
    return 0;
}

/* True while the target runs (and answers on stdin). */
static inline int mon_alive(struct mon_target *t)
{
    return kill(t->pid, 0) == 0 && mon_do(t, "ping") == 0;
}

/* Tells the target to quit; returns its wait status. */
static inline int mon_quit(struct mon_target *t)
{
    int status = -1;

    fprintf(t->in, "quit\n");
    fclose(t->in);
    fclose(t->out);
    waitpid(t->pid, &status, 0);
    return status;
}

/* --- the command-line client ------------------------------------------------ */

static const char *mon_cli; /* path of the simpletrace command */


/* Runs `simpletrace ARGS...` (NULL-terminated) in cwd (NULL = test_dir); output captured. */
static inline struct tu_run mon_ctl_in(const char *cwd, const char *const *args)
{
    const char *argv[32];
    struct tu_run r;
    int n = 0;

    argv[n++] = mon_cli;
    for (; *args && n < 31; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    tu_run((char *const *)argv, cwd ? cwd : test_dir, NULL, false, &r);
    return r;
}

#define MON_CTL(...) mon_ctl_in(NULL, (const char *const[]){__VA_ARGS__, NULL})


/* --- raw protocol clients ------------------------------------------------------ */

/* Connects to path; fd or -errno. */
static inline int mon_connect(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    if (strlen(path) >= sizeof sa.sun_path) {
        close(fd);
        return -ENAMETOOLONG;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

static inline int mon_send(int fd, const void *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        p = (const char *)p + w;
        n -= (size_t)w;
    }
    return 0;
}

static inline int mon_send_str(int fd, const char *s)
{
    return mon_send(fd, s, strlen(s));
}

/*
 * Reads until the answer's final line ("ok" or "error: ...") or the end of
 * the stream (eof set) or ms pass. Returns a malloc'ed NUL-terminated copy
 * of everything read (binary data included).
 */
static inline char *mon_read_answer(int fd, long ms, int *eof)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap + 1);
    double until = mon_now() + (double)ms / 1000;

    *eof = 0;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        double left = until - mon_now();
        ssize_t n;
        buf[len] = '\0';
        /* A final line ends the answer (start of buffer or after a newline). */
        if (len && buf[len - 1] == '\n') {
            char *last = len >= 2 ? memrchr(buf, '\n', len - 1) : NULL;
            const char *l = last ? last + 1 : buf;
            if (!strcmp(l, "ok\n") || !strncmp(l, "error: ", 7))
                return buf;
        }
        if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            return buf;
        if (cap - len < 4096) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
        n = recv(fd, buf + len, cap - len, 0);
        if (n <= 0) {
            *eof = 1;
            buf[len] = '\0';
            return buf;
        }
        len += (size_t)n;
    }
}

/* True when the peer closed fd (EOF or reset) within ms. */
static inline int mon_closed(int fd, long ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c[256];

    for (double until = mon_now() + (double)ms / 1000; mon_now() < until;) {
        ssize_t n;
        if (poll(&p, 1, 50) <= 0)
            continue;
        n = recv(fd, c, sizeof c, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return 1;
    }
    return 0;
}

/* Sends one command on a new connection; the answer (malloc'ed) or NULL. */
static inline char *mon_ask(const char *path, const char *line)
{
    int fd = mon_connect(path), eof;
    char *a;

    if (fd < 0)
        return NULL;
    if (mon_send_str(fd, line) < 0) {
        close(fd);
        return NULL;
    }
    a = mon_read_answer(fd, 5000, &eof);
    close(fd);
    return a;
}

/* Number of sockets among this process's open descriptors. */
static inline int mon_count_sockets(void)
{
    char path[64], link[256];
    int n = 0;

    for (int fd = 0; fd < 1024; fd++) {
        ssize_t l;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        l = readlink(path, link, sizeof link - 1);
        if (l > 0) {
            link[l] = '\0';
            n += strncmp(link, "socket:", 7) == 0;
        }
    }
    return n;
}

#endif /* ST_TEST_MON_UTIL_H */
