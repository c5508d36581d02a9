/*
 * The drain's configuration keys (the contract: config_part.h).
 *
 *   file=PATH            the trace file (last one wins; a later option
 *                        without file= keeps it, where QEMU resets it);
 *                        %p, %e, %h, %t, %% expand when it opens (name_template.h)
 *   dir=DIR              each process's file is DIR/PROGRAM-PID.trace (%e-%p.trace;
 *                        with file=F, DIR/F); DIR expands as a template, now, is
 *                        made 0700 when missing and made absolute, so that fork
 *                        children (which re-expand %p) and a daemon that chdir()s
 *                        write there too
 *   rotate=N[K|M|G]|off  the file in pieces of at most N bytes (N >= 64K; writer.c)
 *   rotate-keep=N        keep only the newest N pieces; 0 all
 *   compress=zstd[:LEVEL][:fixed]|off  files opened from now on are zstd frames with a
 *                        seek table (zwrite.h; LEVEL: libzstd's, default 1;
 *                        faster levels while the writer is behind, unless :fixed);
 *                        a file already open, or reopened to append, keeps
 *                        its way; flight snapshots taken while it is on are
 *                        compressed too (snapshot.c)
 *   writer=auto|thread|inline  who writes the file (writer.c): auto (the
 *                        default) the tracing thread itself while one thread
 *                        traces, then the writeout thread; thread the
 *                        writeout thread from the start; inline never a
 *                        thread (inline is refused once the thread runs)
 *   flight-signal=SIG    flight mode: this signal takes a snapshot (flight.c)
 *   flight-trigger=EVENT flight mode: tracing this event takes one
 *
 * Any QEMU item (a pattern, events=, file=) and dir= turn the trace file on and
 * opens it in prepare, without truncating it; an unwritable file= is an
 * error (QEMU ignores it silently). Flight mode has no trace file: there
 * patterns only enable events.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simpletrace/api.h>

#include "config_core.h"
#include "diag.h"
#include "dir_ready.h"
#include "drain.h"
#include "drain_internal.h"
#include "name_template.h"
#include "size_parse.h"
#include "zwrite.h"

/* Smallest rotate=SIZE: a piece must hold its header, mappings and some records. */
#define ROTATE_MIN ((uint64_t)64 << 10)

/* dir=: the name of each process's file in DIR, unique per process and telling whose it is. */
#define DIR_FILE "%e-%p.trace"

struct drain_cfg {
    const char *file;       /* file=, or NULL */
    const char *dir;        /* dir=, or NULL */
    bool dir_created;       /* prepare made dir_made: abort removes it */
    char dir_made[PATH_MAX]; /* dir= expanded */
    char tmpl[4096];        /* dir=: the file's template, DIR (absolute, '%' doubled) / file= or DIR_FILE */
    int64_t rotate;         /* rotate=: -1 unchanged, 0 off, or the piece size */
    long rotate_keep;       /* rotate-keep=: -1 unchanged */
    int compress;           /* compress=: -1 unchanged, 0 off, 1 zstd at compress_level */
    int compress_level;
    bool compress_fixed;    /* compress=zstd:LEVEL:fixed: the level does not adapt to the backlog */
    int writer;             /* writer=: -1 unchanged, or enum st__writer_mode */
    struct st__writer_prep writer_prep;
    bool writer_set;        /* prepare set the mode: abort puts it back */
    struct st__file_prep prep;
    bool locked;            /* prepare holds the file lock */
    bool opened;            /* prepare opened the file that commit makes the trace file */
    struct st__flight_prep flight;
};

static int parse_file(void *state, const char *v, char *err, size_t errlen)
{
    char why[160];

    if (!*v) {
        st__errmsg(err, errlen, "file=: empty path");
        return -EINVAL;
    }
    if (st__name_check(v, why, sizeof why) < 0) {
        st__errmsg(err, errlen, "invalid file '%s': %s", v, why);
        return -EINVAL;
    }
    ((struct drain_cfg *)state)->file = v;
    return 0;
}

static int parse_dir(void *state, const char *v, char *err, size_t errlen)
{
    char why[160];

    if (!*v) {
        st__errmsg(err, errlen, "dir=: empty path");
        return -EINVAL;
    }
    if (st__name_check(v, why, sizeof why) < 0) {
        st__errmsg(err, errlen, "invalid dir '%.200s': %s", v, why);
        return -EINVAL;
    }
    ((struct drain_cfg *)state)->dir = v;
    return 0;
}

static int parse_rotate(void *state, const char *v, char *err, size_t errlen)
{
    struct drain_cfg *c = state;
    uint64_t n;

    if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0) {
        c->rotate = 0;
        return 0;
    }
    if (st__parse_size(v, (uint64_t)1 << 50, &n) < 0 || n < ROTATE_MIN) {
        st__errmsg(err, errlen, "invalid rotate '%s': want a size of at least 64K (N, NK, NM or NG) or off", v);
        return -EINVAL;
    }
    c->rotate = (int64_t)n;
    return 0;
}

static int parse_keep(void *state, const char *v, char *err, size_t errlen)
{
    char *end;
    unsigned long n = 0;

    errno = 0;
    if (isdigit((unsigned char)*v))
        n = strtoul(v, &end, 10);
    if (!isdigit((unsigned char)*v) || *end || errno || n > 1000000) {
        st__errmsg(err, errlen, "invalid rotate-keep '%s': want a number of pieces from 0 (all) to 1000000", v);
        return -EINVAL;
    }
    ((struct drain_cfg *)state)->rotate_keep = (long)n;
    return 0;
}

static int parse_compress(void *state, const char *v, char *err, size_t errlen)
{
    struct drain_cfg *c = state;
    int r = st__zw_parse(v, &c->compress_level, &c->compress_fixed);

    if (r < 0) {
        st__errmsg(err, errlen, "invalid compress '%s': want zstd, zstd:LEVEL (zstd's levels: 1 to 22, negative ones faster), either with :fixed, or off", v);
        return -EINVAL;
    }
    c->compress = r;
    return 0;
}

static int parse_writer(void *state, const char *v, char *err, size_t errlen)
{
    if (st__writer_parse_mode(v, &((struct drain_cfg *)state)->writer) < 0) {
        st__errmsg(err, errlen, "invalid writer '%s': want auto, thread or inline", v);
        return -EINVAL;
    }
    return 0;
}

static int parse_signal(void *state, const char *v, char *err, size_t errlen)
{
    if (st__flight_parse_signal(v, &((struct drain_cfg *)state)->flight.sig) < 0) {
        st__errmsg(err, errlen, "invalid flight-signal '%s': want USR1, USR2, HUP, QUIT, PWR, WINCH, URG or RTMIN+N", v);
        return -EINVAL;
    }
    return 0;
}

static int parse_trigger(void *state, const char *v, char *err, size_t errlen)
{
    if (!*v || strlen(v) > 255 || strpbrk(v, "*?")) {
        st__errmsg(err, errlen, "invalid flight-trigger '%s': want an event name", v);
        return -EINVAL;
    }
    ((struct drain_cfg *)state)->flight.trigger = v;
    return 0;
}

static void drain_init(void *state)
{
    struct drain_cfg *c = state;

    c->rotate = -1;
    c->rotate_keep = -1;
    c->compress = -1;
    c->writer = -1;
    c->prep.fd = -1;
}

/* Flight mode: the producers move their rings' tails (ring.h), so no writer may run over them. */
static int check_flight(const struct drain_cfg *c, const struct st__cfg_view *view, char *err, size_t errlen)
{
    const struct st__ring_cfg *rc = st__cfg_state(view, &st__ring_cfg_part);
    const char *why = NULL;

    if (!st__ring_cfg_flight(view)) {
        if (c->flight.sig || c->flight.trigger) {
            st__errmsg(err, errlen, "%s= needs flight=SIZE", c->flight.sig ? "flight-signal" : "flight-trigger");
            return -EINVAL;
        }
        return 0;
    }
    if (c->file || c->dir)
        why = c->file ? "flight= (flight recorder) and file= exclude each other"
                      : "flight= (flight recorder) and dir= exclude each other";
    else if (c->rotate > 0 || c->rotate_keep > 0)
        why = "rotate= in flight mode: there is no trace file to rotate";
    else if (rc && rc->flight && st__file_in_use())
        why = "flight=: a trace file is or was in use (flight mode must be chosen before any trace file)";
    if (why)
        st__errmsg(err, errlen, "%s", why);
    return why ? -EINVAL : 0;
}

/* Appends s to buf (len bytes, *n used), '%' doubled when escape: false when it does not fit. */
static bool append(char *buf, size_t len, size_t *n, const char *s, bool escape)
{
    for (; *s; s++) {
        size_t k = escape && *s == '%' ? 2 : 1;
        if (*n + k >= len)
            return false;
        buf[(*n)++] = *s;
        if (k == 2)
            buf[(*n)++] = '%';
    }
    buf[*n] = '\0';
    return true;
}

/*
 * dir=: makes DIR (expanded for this process now, so that a fork child
 * writes in its parent's DIR) and sets c->tmpl to the file's template in
 * it, DIR made absolute so that a chdir() later (a daemon's, before it
 * forks) cannot move the children's files elsewhere. 0, or -errno with a
 * message; abort removes a DIR made here.
 */
static int prepare_dir(struct drain_cfg *c, char *err, size_t errlen)
{
    char why[160], abs[PATH_MAX];
    size_t n = 0;
    int r;

    if (c->file && c->file[0] == '/') {
        st__errmsg(err, errlen, "file=%.200s with dir=%.200s: with dir=, file= names a file inside DIR", c->file,
                   c->dir);
        return -EINVAL;
    }
    if ((r = st__file_expand(c->dir, c->dir_made, sizeof c->dir_made, why, sizeof why)) < 0) {
        st__errmsg(err, errlen, "invalid dir '%.200s': %s", c->dir, why);
        return r;
    }
    if ((r = st__dir_ready("dir", c->dir_made, &c->dir_created, err, errlen)) < 0)
        return r;
    if (!realpath(c->dir_made, abs)) {
        r = -errno;
        st__errmsg(err, errlen, "dir=%.200s: %s", c->dir_made, st_strerror(r));
        return r;
    }
    if (!append(c->tmpl, sizeof c->tmpl, &n, abs, true) || !append(c->tmpl, sizeof c->tmpl, &n, "/", false) ||
        !append(c->tmpl, sizeof c->tmpl, &n, c->file ? c->file : DIR_FILE, false)) {
        st__errmsg(err, errlen, "dir=%.200s: the trace file's name in it is longer than %zu bytes", c->dir_made,
                   sizeof c->tmpl - 1);
        return -ENAMETOOLONG;
    }
    return 0;
}

static int drain_prepare(void *state, const struct st__cfg_view *view, char *err, size_t errlen)
{
    struct drain_cfg *c = state;
    int ret;

    st__file_lock();
    c->locked = true;
    if ((ret = check_flight(c, view, err, errlen)) < 0)
        return ret;
    /* Before the file: a file this configuration turns on starts the way it says. */
    if (c->writer >= 0) {
        if ((ret = st__writer_mode_prepare(c->writer, &c->writer_prep, err, errlen)) < 0)
            return ret;
        c->writer_set = true;
    }
    if (view->opens_file && !st__ring_cfg_flight(view)) {
        if (c->dir && (ret = prepare_dir(c, err, errlen)) < 0)
            return ret;
        if ((ret = st__file_prepare(c->dir ? c->tmpl : c->file, &c->prep, err, errlen)) < 0)
            return ret;
        c->opened = true;
    }
    return st__flight_prepare(&c->flight, err, errlen);
}

static void drain_commit(void *state, const struct st__cfg_view *view)
{
    struct drain_cfg *c = state;

    st__file_set_rotation(c->rotate, c->rotate_keep);
    if (c->compress >= 0) /* before the file is handed over: it is written the new way */
        st__file_set_compress(c->compress, c->compress_level, c->compress_fixed);
    if (c->opened)
        st__file_commit(&c->prep, !view->in_init);
    st__flight_commit(&c->flight);
    c->opened = false;
    c->writer_set = false;
    st__file_unlock();
    c->locked = false;
}

static void drain_abort(void *state)
{
    struct drain_cfg *c = state;

    st__flight_abort(&c->flight);
    if (c->opened)
        st__file_abort(&c->prep);
    c->opened = false;
    if (c->writer_set)
        st__writer_mode_abort(&c->writer_prep);
    c->writer_set = false;
    if (c->dir_created)
        rmdir(c->dir_made); /* after the file prepared in it went: nothing else was written there */
    c->dir_created = false;
    if (c->locked)
        st__file_unlock();
    c->locked = false;
}

static const struct st__cfg_key drain_keys[] = {
    {"file", true, parse_file},
    {"dir", true, parse_dir},
    {"rotate", false, parse_rotate},
    {"rotate-keep", false, parse_keep},
    {"compress", false, parse_compress},
    {"writer", false, parse_writer},
    {"flight-signal", false, parse_signal},
    {"flight-trigger", false, parse_trigger},
};

const struct st__cfg_part st__drain_cfg_part = {
    .name = "trace file",
    .layer = ST_CFG_DRAIN,
    .keys = drain_keys,
    .nkeys = sizeof drain_keys / sizeof drain_keys[0],
    .state_size = sizeof(struct drain_cfg),
    .init = drain_init,
    .prepare = drain_prepare,
    .commit = drain_commit,
    .abort = drain_abort,
};
