/*
 * The diagnostic helper (src/common/diag.h), run in child processes whose
 * standard error is a pipe (the text) or a SOCK_SEQPACKET socket, where
 * every write() arrives as one packet: so "one write per line" is
 * checked, not assumed. Also: the line format, the newline added once,
 * the cut at ST__DIAG_LINE_MAX ending in "...", errno kept, and a closed
 * stderr.
 */
#include "tap.h"

#include "diag.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* What a child does with its stderr set up; returns its exit code. */
typedef int (*child_fn)(const char *arg);

/* Calls st__diag with the message in arg and checks that errno survives. */
static int say(const char *arg)
{
    errno = ENOSPC;
    st__diag("who", "%s", arg);
    return errno == ENOSPC ? 0 : 3;
}

static int say_formatted(const char *arg)
{
    (void)arg;
    errno = EXDEV;
    st__diag("simpletrace-func", "%s=%d is %s", "X", 42, "bad");
    return errno == EXDEV ? 0 : 3;
}

static int say_closed(const char *arg)
{
    close(STDERR_FILENO);
    errno = EMFILE;
    st__diag("who", "%s", arg); /* nowhere to write: no crash, errno kept */
    return errno == EMFILE ? 0 : 3;
}

struct packets {
    int count;      /* write() calls seen (packets), or -1 for a pipe */
    size_t len;     /* bytes in all */
    char text[16384];
};

/* Runs fn(arg) in a child with stderr on a pipe (seqpacket false) or a seqpacket socket; collects what it wrote. */
static int run_child(child_fn fn, const char *arg, bool seqpacket, struct packets *got)
{
    int fds[2], status = -1;
    pid_t pid;

    memset(got, 0, sizeof *got);
    if ((seqpacket ? socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds) : pipe(fds)) != 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        close(fds[1]);
        _exit(fn(arg));
    }
    close(fds[1]);
    got->count = seqpacket ? 0 : -1;
    for (;;) {
        ssize_t n = read(fds[0], got->text + got->len, sizeof got->text - 1 - got->len);
        if (n <= 0)
            break;
        got->len += (size_t)n;
        if (seqpacket)
            got->count++;
    }
    got->text[got->len] = '\0';
    close(fds[0]);
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* A message of n 'x's. */
static char *xs(size_t n)
{
    char *s = malloc(n + 1);

    memset(s, 'x', n);
    s[n] = '\0';
    return s;
}

static void test_format(void)
{
    struct packets p;

    is_int(run_child(say, "a message", false, &p), 0, "pipe: the child exits 0 (errno kept)");
    is_str(p.text, "who: a message\n", "format: \"WHO: MESSAGE\\n\"");
    is_int(run_child(say_formatted, "", true, &p), 0, "seqpacket: errno kept");
    is_str(p.text, "simpletrace-func: X=42 is bad\n", "format: printf arguments");
    is_int(p.count, 1, "one write() for the line");
    run_child(say, "ends in a newline\n", true, &p);
    ok(p.count == 1 && strcmp(p.text, "who: ends in a newline\n") == 0, "a message ending in \\n gets no second one");
    run_child(say, "", true, &p);
    ok(p.count == 1 && strcmp(p.text, "who: \n") == 0, "an empty message is still a line");
    is_int(run_child(say_closed, "lost", false, &p), 0, "closed stderr: no crash, errno kept");
}

static void test_cut(void)
{
    const size_t room = ST__DIAG_LINE_MAX - strlen("who: ") - 1; /* message bytes that fit with the newline */
    struct packets p;
    char *msg;

    msg = xs(room);
    run_child(say, msg, true, &p);
    ok(p.count == 1 && p.len == ST__DIAG_LINE_MAX && strncmp(p.text, "who: xxx", 8) == 0 &&
           p.text[p.len - 2] == 'x' && p.text[p.len - 1] == '\n',
       "cut: a line of exactly ST__DIAG_LINE_MAX bytes is written whole, in one write");
    free(msg);

    msg = xs(room + 1);
    run_child(say, msg, true, &p);
    ok(p.count == 1 && p.len == ST__DIAG_LINE_MAX && strcmp(p.text + p.len - 5, "x...\n") == 0,
       "cut: one byte more and the line is cut to ST__DIAG_LINE_MAX, ending in \"...\\n\"");
    free(msg);

    msg = xs(3 * ST__DIAG_LINE_MAX);
    run_child(say, msg, true, &p);
    ok(p.count == 1 && p.len == ST__DIAG_LINE_MAX && strncmp(p.text, "who: x", 6) == 0 &&
           strcmp(p.text + p.len - 4, "...\n") == 0,
       "cut: a message three times too long, one write of ST__DIAG_LINE_MAX bytes");
    free(msg);
}

int main(void)
{
    test_format();
    test_cut();
    return done_testing();
}
