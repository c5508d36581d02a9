/*
 * The log backend: one line per call, written whole (one write), a missing
 * newline added, long lines cut with "...", errno preserved, the optional
 * "TID@SEC.USEC:" prefix; lines from several threads never interleave.
 */
#include <pthread.h>
#include <limits.h>
#include <regex.h>
#include <time.h>

#include "rt_test.h"

static int pipe_r;

/* Reads whatever the pipe holds right now (the writes are synchronous). */
static char *drain(void)
{
    static char buf[65536];
    ssize_t n = read(pipe_r, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

static void *logger(void *arg)
{
    for (int i = 0; i < 2000; i++)
        st__log("thread_ev t=%d i=%d pad=%s\n", (int)(uintptr_t)arg, i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    return NULL;
}

struct reader {
    size_t lines, bad;
};

static void *reader(void *arg)
{
    struct reader *r = arg;
    char buf[8192], line[256];
    size_t len = 0;
    ssize_t n;

    while ((n = read(pipe_r, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (len < sizeof line - 1)
                    line[len++] = buf[i];
                continue;
            }
            line[len] = '\0';
            int t, k;
            char pad[64];
            if (sscanf(line, "thread_ev t=%d i=%d pad=%63s", &t, &k, pad) != 3 || strlen(pad) != 34)
                r->bad++;
            r->lines++;
            len = 0;
        }
    }
    return NULL;
}

int main(void)
{
    int fds[2], saved;
    char longarg[6000], want[128], *out;
    regex_t re;
    regmatch_t m[3];
    pthread_t th[4], rd;
    struct reader rs = {0, 0};

    if (pipe(fds) != 0)
        return 2;
    pipe_r = fds[0];
    saved = dup(2);
    dup2(fds[1], 2);

    st__log("ev_x a=%d b=%s\n", 1, "x");
    out = drain();
    is_str(out, "ev_x a=1 b=x\n", "plain line");
    st__log("no_newline %d", 5);
    out = drain();
    is_str(out, "no_newline 5\n", "missing newline added");
    errno = 1234;
    st__log("errno_ev\n");
    is_int(errno, 1234, "errno preserved");
    drain();

    memset(longarg, 'y', sizeof longarg - 1);
    longarg[sizeof longarg - 1] = '\0';
    st__log("long_ev %s\n", longarg);
    out = drain();
    is_int(strlen(out), PIPE_BUF, "long line cut to PIPE_BUF bytes");
    ok(!strncmp(out, "long_ev yyyy", 12) && !strcmp(out + strlen(out) - 4, "...\n"), "cut line ends with ...");

    is_int(st_configure("log-prefix=on", NULL, 0), 0, "log-prefix=on");
    st__log("ev_y v=%d\n", 7);
    out = drain();
    diag("prefixed line: %.*s", (int)strcspn(out, "\n"), out);
    regcomp(&re, "^([0-9]+)@([0-9]+)\\.[0-9]{6}:ev_y v=7\n$", REG_EXTENDED);
    if (ok(regexec(&re, out, 3, m, 0) == 0, "prefixed line: TID@SEC.USEC:ev_y v=7")) {
        is_int(strtol(out + m[1].rm_so, NULL, 10), gettid(), "prefix carries the thread id");
        ok(labs(strtol(out + m[2].rm_so, NULL, 10) - (long)time(NULL)) <= 2, "prefix carries the wall clock");
    }
    regfree(&re);
    is_int(st_configure("log-prefix=off", NULL, 0), 0, "log-prefix=off");
    st__log("ev_z\n");
    out = drain();
    snprintf(want, sizeof want, "ev_z\n");
    is_str(out, want, "prefix off again");

    pthread_create(&rd, NULL, reader, &rs);
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, logger, (void *)(uintptr_t)i);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    dup2(saved, 2);
    close(fds[1]);
    pthread_join(rd, NULL);
    is_u64(rs.lines, 8000, "4 threads x 2000 lines arrive");
    is_u64(rs.bad, 0, "no line interleaved with another");
    return done_testing();
}
