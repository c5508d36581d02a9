/*
 * The log backend: generated code calls st__log("NAME " FMT "\n", args...)
 * for an enabled event, and we write one line to stderr.
 *
 * One write(2) per line, from a stack buffer of PIPE_BUF bytes: a line is
 * never interleaved with another thread's when stderr is a pipe or a file
 * opened O_APPEND, and no lock or allocation is needed (so it is safe in a
 * signal handler as far as vsnprintf is). Longer lines are cut and end in
 * "...\n"; a missing final newline is added. errno is preserved: tracing
 * must not change what the traced code sees.
 *
 * With log-prefix=on each line starts "TID@SEC.USEC:" (thread id, wall
 * clock), as QEMU's log backend does with -msg timestamp=on.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <simpletrace/trace.h>

#include "backends.h"
#include "diag.h"

#define LOG_LINE_MAX PIPE_BUF
#define CUT_MARK "...\n"

static int log_prefix; /* atomic */

/* log-prefix=: -1 unchanged, 0 off, 1 on (the configuration's pending state). */
static int parse_prefix(void *state, const char *v, char *err, size_t errlen)
{
    return st__cfg_on_off("log-prefix", v, state, err, errlen);
}

static void prefix_init(void *state)
{
    *(int *)state = -1;
}

static void prefix_commit(void *state, const struct st__cfg_view *view)
{
    int on = *(int *)state;

    (void)view;
    if (on >= 0)
        __atomic_store_n(&log_prefix, on, __ATOMIC_RELAXED);
}

static const struct st__cfg_key keys[] = {{"log-prefix", false, parse_prefix}};

const struct st__cfg_part st__backends_cfg_part = {
    .name = "log",
    .layer = ST_CFG_BACKENDS,
    .keys = keys,
    .nkeys = 1,
    .state_size = sizeof(int),
    .init = prefix_init,
    .commit = prefix_commit,
};

/* Writes "TID@SEC.USEC:" at buf; returns its length. */
static size_t put_prefix(char *buf, size_t len)
{
    struct timeval tv;
    int n;

    gettimeofday(&tv, NULL);
    n = snprintf(buf, len, "%ld@%lld.%06ld:", (long)gettid(), (long long)tv.tv_sec, (long)tv.tv_usec);
    return n > 0 ? (size_t)n : 0;
}

void st__log(const char *fmt, ...)
{
    char buf[LOG_LINE_MAX];
    int saved = errno, r;
    size_t n = 0;
    va_list ap;

    if (!fmt)
        return;
    if (__atomic_load_n(&log_prefix, __ATOMIC_RELAXED))
        n = put_prefix(buf, sizeof buf);
    va_start(ap, fmt);
    r = vsnprintf(buf + n, sizeof buf - n, fmt, ap);
    va_end(ap);
    if (r < 0)
        r = 0;
    if (n + (size_t)r + 1 > sizeof buf) {
        /* Too long: keep what fits and say it was cut. */
        n = sizeof buf - strlen(CUT_MARK);
        memcpy(buf + n, CUT_MARK, strlen(CUT_MARK));
        n += strlen(CUT_MARK);
    } else {
        n += (size_t)r;
        if (n == 0 || buf[n - 1] != '\n')
            buf[n++] = '\n';
    }
    if (write(STDERR_FILENO, buf, n) < 0) {
        /* stderr is gone: nothing sensible to do */
    }
    errno = saved;
}
