/*
 * The ftrace backend's runtime: generated code calls
 * st__ftrace("NAME " FMT "\n", args...) for an enabled event while
 * st__ftrace_active(), and we write the line to the kernel's trace_marker,
 * where it joins the kernel's own ftrace events.
 *
 * Which marker: $SIMPLETRACE_FTRACE_MARKER when set (tests point it at a
 * stand-in file), else trace_marker in the first tracefs mount of
 * /proc/mounts, else tracing/trace_marker under debugfs. It is opened once,
 * from the generated group's constructor or the first event, whichever
 * comes first. If it cannot be opened we say so once on stderr and clear
 * st__ftrace_on: from then on every event skips its formatting.
 *
 * We do not switch tracing_on: whether the system-wide ftrace buffer
 * records is the administrator's choice, not the traced program's.
 *
 * One write(2) per line from a stack buffer, so lines of concurrent
 * threads never interleave and no lock or allocation is needed. Lines
 * longer than ST__FTRACE_LINE_MAX are cut and end in "...\n". errno is
 * preserved: tracing must not change what the traced code sees.
 */
#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simpletrace/trace.h>

#include "diag.h"
#include "fd_ident.h"
#include "no_follow.h"
#include "who.h"

#define CUT_MARK "...\n"

uint32_t st__ftrace_on = 1;

static pthread_once_t ftrace_once = PTHREAD_ONCE_INIT;
static int marker_fd = -1; /* set under ftrace_once; atomic after: marker() may open it again */
static struct st__fd_ident marker_id; /* the marker's file (fd_ident.h), set under ftrace_once */
static char marker_path[4200];        /* its name, to open it again */

/*
 * Finds the marker under the tracefs (else debugfs) mount point; 0 with
 * path filled, or -ENOENT when neither is mounted.
 */
static int find_marker(char *path, size_t len)
{
    FILE *f = setmntent("/proc/mounts", "re");
    char debugfs[4096] = "";
    struct mntent ent;
    char buf[4096];
    int rc = -ENOENT;

    if (!f)
        return -ENOENT;
    while (getmntent_r(f, &ent, buf, sizeof buf)) {
        if (strcmp(ent.mnt_type, "tracefs") == 0) {
            snprintf(path, len, "%s/trace_marker", ent.mnt_dir);
            rc = 0;
            break;
        }
        if (strcmp(ent.mnt_type, "debugfs") == 0 && !debugfs[0])
            snprintf(debugfs, sizeof debugfs, "%s", ent.mnt_dir);
    }
    endmntent(f);
    if (rc != 0 && debugfs[0]) {
        snprintf(path, len, "%s/tracing/trace_marker", debugfs);
        rc = 0;
    }
    return rc;
}

/* Writes the one start-up message saying why ftrace lines are off. */
static void say_off(const char *what, const char *path, int err)
{
    if (path)
        st__diag("simpletrace", "ftrace backend off: %s %s: %s", what, path, strerror(err));
    else
        st__diag("simpletrace", "ftrace backend off: %s", what);
}

static void ftrace_open(void)
{
    const char *env = getenv("SIMPLETRACE_FTRACE_MARKER");
    char path[4200];
    int saved = errno;

    if (env && *env) {
        snprintf(path, sizeof path, "%s", env);
    } else if (find_marker(path, sizeof path) != 0) {
        say_off("no tracefs or debugfs mount (or set SIMPLETRACE_FTRACE_MARKER=PATH)", NULL, 0);
        goto off;
    }
    /* Never through a symbolic link: the lines would be appended to whatever it names. */
    marker_fd = st__fd_keep(open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC)); /* not 0-2 (fd_ident.h) */
    if (marker_fd < 0) {
        if (st__link_refused(path, -errno))
            st__diag("simpletrace", "ftrace backend off: %s " ST__NO_FOLLOW_WHY, path);
        else
            say_off("cannot open", path, errno);
        goto off;
    }
    st__fd_ident_get(marker_fd, &marker_id);
    snprintf(marker_path, sizeof marker_path, "%s", path);
    errno = saved;
    return;
off:
    __atomic_store_n(&st__ftrace_on, 0, __ATOMIC_RELAXED);
    errno = saved;
}

void st__ftrace_init(void)
{
    pthread_once(&ftrace_once, ftrace_open);
}

/*
 * The marker's descriptor, checked first: a program that closed every
 * descriptor after start-up (a daemon) may have its own file under that
 * number now, and must not get ftrace lines in it. The marker is opened
 * again then; when it cannot be, that is said once and ftrace lines stop.
 * One fstat() per line: a small cost beside the kernel's write.
 */
static int marker(void)
{
    int fd = __atomic_load_n(&marker_fd, __ATOMIC_ACQUIRE), again;
    char who[320];

    if (fd < 0 || st__fd_is(fd, &marker_id))
        return fd;
    again = st__fd_keep(open(marker_path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC));
    if (again >= 0 && st__fd_is(again, &marker_id)) {
        if (__atomic_compare_exchange_n(&marker_fd, &fd, again, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return again;
        close(again); /* another thread opened it first: fd is its descriptor now */
        return fd;
    }
    if (again >= 0)
        close(again);
    if (__atomic_compare_exchange_n(&marker_fd, &fd, -1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&st__ftrace_on, 0, __ATOMIC_RELAXED);
        st__who(who, sizeof who, false);
        st__diag("simpletrace", "ftrace backend off: %s closed descriptor %d, the ftrace marker %s, which cannot be "
                 "opened again", who, fd, marker_path);
    }
    return -1;
}

void st__ftrace(const char *fmt, ...)
{
    char buf[ST__FTRACE_LINE_MAX];
    int saved = errno, r, fd;
    size_t n;
    va_list ap;

    st__ftrace_init();
    if (!fmt || (fd = marker()) < 0) {
        errno = saved;
        return;
    }
    va_start(ap, fmt);
    r = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    n = r > 0 ? (size_t)r : 0;
    if (n + 1 > sizeof buf) {
        /* Too long: keep what fits and say it was cut. */
        n = sizeof buf - strlen(CUT_MARK);
        memcpy(buf + n, CUT_MARK, strlen(CUT_MARK));
        n += strlen(CUT_MARK);
    } else if (n == 0 || buf[n - 1] != '\n') {
        buf[n++] = '\n';
    }
    if (write(fd, buf, n) < 0) {
        /* tracing switched off or the marker went away: the line is lost */
    }
    errno = saved;
}
