/*
 * The core's configuration keys (the contract: config_part.h).
 *
 *   [enable=]PATTERN    enable the events matching the glob; a leading '-' disables
 *   events=FILE         one PATTERN per line; blank lines and '#' comments skipped
 *   bufsize=N[K|M|G]    ring size of threads that start tracing later (power of two, 4K..1G)
 *   clock=tsc|cntvct|counter|monotonic  what the hot path reads (timestamp.h): the
 *                       CPU's counter (TSC on x86-64, CNTVCT_EL0 on aarch64; "counter" is
 *                       either) or clock_gettime
 *   crash=DIR           rings of threads that start tracing later in files in DIR; "" off
 *   flight=N[K|M|G]     overwrite rings of that size (the flight recorder)
 *
 * Where we differ from QEMU, on purpose: `?` is a wildcard like `*` and a
 * glob enables every match (QEMU needs a `*` to treat it as a pattern and
 * otherwise enables the first match); events files have whitespace and CR
 * trimmed and comments may be indented (QEMU chops the last character of
 * every line) and a malformed line is "FILE:LINE: ..."; names that match
 * nothing now are not an error: the rule waits for groups registered later.
 */
#include "config_core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simpletrace/api.h>

#include "diag.h"
#include "dir_ready.h"
#include "registry.h"
#include "ring.h"
#include "ring_file.h"
#include "size_parse.h"
#include "timestamp.h"
#include "trim.h"

/* --- events ------------------------------------------------------------------ */

/* The rules a configuration adds, in order; patterns malloc'd, without '-'. */
struct events_cfg {
    char **patterns;
    bool *enable;
    size_t n, cap;
    bool reserved; /* prepare reserved room for n rules in the registry */
};

static int events_push(struct events_cfg *c, const char *pattern, bool enable)
{
    char *copy;

    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        char **p = realloc(c->patterns, cap * sizeof *p);
        bool *e;
        if (!p)
            return -ENOMEM;
        c->patterns = p;
        if (!(e = realloc(c->enable, cap * sizeof *e)))
            return -ENOMEM;
        c->enable = e;
        c->cap = cap;
    }
    if (!(copy = strdup(pattern)))
        return -ENOMEM;
    c->patterns[c->n] = copy;
    c->enable[c->n++] = enable;
    return 0;
}

/* A pattern item or events-file line (where: "FILE:LINE: " or ""). */
static int events_pattern(struct events_cfg *c, const char *text, const char *where, char *err, size_t errlen)
{
    bool enable = *text != '-';
    const char *p = enable ? text : text + 1;

    if (!st__pattern_valid(p)) {
        st__errmsg(err, errlen, "%sinvalid event pattern '%s'", where, text);
        return -EINVAL;
    }
    return events_push(c, p, enable);
}

static int parse_pattern(void *state, const char *value, char *err, size_t errlen)
{
    return events_pattern(state, value, "", err, errlen);
}

static int parse_events_file(void *state, const char *path, char *err, size_t errlen)
{
    char where[4200], *line = NULL;
    size_t cap = 0;
    unsigned lineno = 0;
    int ret = 0;
    FILE *f;

    if (!*path) {
        st__errmsg(err, errlen, "events=: empty file name");
        return -EINVAL;
    }
    /* Messages name the key: a bare path would not say which item of the configuration it came from. */
    if (!(f = fopen(path, "re"))) {
        ret = -errno;
        st__errmsg(err, errlen, "events=%s: cannot open: %s", path, st_strerror(ret));
        return ret;
    }
    errno = 0;
    while (getline(&line, &cap, f) >= 0) {
        char *p = st__trim(line);
        lineno++;
        if (!*p || *p == '#')
            continue;
        snprintf(where, sizeof where, "events=%s: line %u: ", path, lineno);
        if ((ret = events_pattern(state, p, where, err, errlen)) < 0)
            goto out;
        errno = 0;
    }
    if (ferror(f)) {
        ret = errno ? -errno : -EIO;
        st__errmsg(err, errlen, "events=%s: cannot read: %s", path, st_strerror(ret));
    }
out:
    free(line);
    fclose(f);
    return ret;
}

static int events_prepare(void *state, const struct st__cfg_view *view, char *err, size_t errlen)
{
    struct events_cfg *c = state;
    int ret;

    if (!c->n)
        return 0;
    if ((ret = st__reg_rules_reserve(c->n)) < 0) {
        st__errmsg(err, errlen, "%s", st_strerror(ret));
        return ret;
    }
    c->reserved = true;
    return 0;
}

static void events_commit(void *state, const struct st__cfg_view *view)
{
    struct events_cfg *c = state;

    if (c->reserved)
        st__reg_rules_add(c->patterns, c->enable, c->n);
    c->reserved = false;
}

static void events_abort(void *state)
{
    struct events_cfg *c = state;

    if (c->reserved)
        st__reg_rules_release(c->n);
    c->reserved = false;
}

static void events_done(void *state)
{
    struct events_cfg *c = state;

    for (size_t i = 0; i < c->n; i++)
        free(c->patterns[i]); /* NULL once the registry took them */
    free(c->patterns);
    free(c->enable);
}

static const struct st__cfg_key events_keys[] = {
    {NULL, true, parse_pattern},
    {"enable", true, parse_pattern},
    {"events", true, parse_events_file},
};

const struct st__cfg_part st__events_cfg_part = {
    .name = "events",
    .layer = ST_CFG_CORE,
    .keys = events_keys,
    .nkeys = sizeof events_keys / sizeof events_keys[0],
    .state_size = sizeof(struct events_cfg),
    .prepare = events_prepare,
    .commit = events_commit,
    .abort = events_abort,
    .done = events_done,
};

int st__cfg_on_off(const char *key, const char *v, int *on, char *err, size_t errlen)
{
    if (strcmp(v, "on") == 0)
        *on = 1;
    else if (strcmp(v, "off") == 0)
        *on = 0;
    else {
        st__errmsg(err, errlen, "invalid %s '%s': want on or off", key, v);
        return -EINVAL;
    }
    return 0;
}

/* --- rings ------------------------------------------------------------------------ */

/* bufsize= and flight=: a power of two from 4K to 1G. */
static int parse_ring_size(const char *key, size_t *out, const char *v, char *err, size_t errlen)
{
    uint64_t n;

    if (st__parse_size(v, ST_RING_SIZE_MAX, &n) < 0 || n < ST_RING_SIZE_MIN || (n & (n - 1))) {
        st__errmsg(err, errlen, "invalid %s '%s': want a power of two from 4K to 1G", key, v);
        return -EINVAL;
    }
    *out = (size_t)n;
    return 0;
}

static int parse_bufsize(void *state, const char *v, char *err, size_t errlen)
{
    return parse_ring_size("bufsize", &((struct st__ring_cfg *)state)->bufsize, v, err, errlen);
}

static int parse_flight(void *state, const char *v, char *err, size_t errlen)
{
    return parse_ring_size("flight", &((struct st__ring_cfg *)state)->flight, v, err, errlen);
}

static int parse_clock(void *state, const char *v, char *err, size_t errlen)
{
    struct st__ring_cfg *c = state;

    if (strcmp(v, "monotonic") == 0) {
        c->clock_tsc = 0;
    } else if (strcmp(v, "counter") == 0 || (ST_CLOCK_HAVE_COUNTER && strcmp(v, ST_CLOCK_COUNTER) == 0)) {
        c->clock_tsc = 1;
    } else if (strcmp(v, "tsc") == 0 || strcmp(v, "cntvct") == 0) {
        if (ST_CLOCK_HAVE_COUNTER)
            st__errmsg(err, errlen, "clock=%s: this machine's counter is %s", v, ST_CLOCK_COUNTER);
        else
            st__errmsg(err, errlen, "clock=%s: this machine has no counter the runtime reads (want monotonic)", v);
        return -ENOTSUP;
    } else {
        st__errmsg(err, errlen, "invalid clock '%s': want %s or monotonic", v,
                   ST_CLOCK_HAVE_COUNTER ? ST_CLOCK_COUNTER : "counter");
        return -EINVAL;
    }
    return 0;
}

static int parse_crash(void *state, const char *v, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    ((struct st__ring_cfg *)state)->crash = v; /* checked, or made, in prepare */
    return 0;
}

static void ring_init(void *state)
{
    ((struct st__ring_cfg *)state)->clock_tsc = -1;
}

bool st__ring_cfg_flight(const struct st__cfg_view *view)
{
    const struct st__ring_cfg *c = st__cfg_state(view, &st__ring_cfg_part);

    return (c && c->flight) || st__ring_overwriting();
}

/*
 * Flight mode: the producers move their rings' tails themselves, so no
 * consumer may run over them (ring.h): no crash=DIR, one ring size. The
 * drain refuses a trace file likewise (config_drain.c).
 */
static int check_flight(const struct st__ring_cfg *c, const struct st__cfg_view *view, char *err, size_t errlen)
{
    const char *why = NULL;

    if (!st__ring_cfg_flight(view))
        return 0;
    if ((c->crash && *c->crash) || (!c->crash && st__ring_file_on()))
        why = "flight= (flight recorder) and crash=DIR exclude each other";
    else if (c->bufsize)
        why = "bufsize= in flight mode: the ring size is flight=SIZE";
    if (why)
        st__errmsg(err, errlen, "%s", why);
    return why ? -EINVAL : 0;
}

static int ring_prepare(void *state, const struct st__cfg_view *view, char *err, size_t errlen)
{
    struct st__ring_cfg *c = state;
    bool clock_change = c->clock_tsc >= 0 && (c->clock_tsc == 1) != st__ts_is_tsc();
    int ret;

    if ((ret = check_flight(c, view, err, errlen)) < 0)
        return ret;
    if (c->crash && (ret = st__dir_ready("crash", c->crash, &c->crash_created, err, errlen)) < 0)
        return ret;
    /* Absolute now: a daemon's chdir("/") must not move later threads' rings (or its children's) elsewhere. */
    if (c->crash && *c->crash && !realpath(c->crash, c->crash_abs)) {
        ret = -errno;
        st__errmsg(err, errlen, "crash=%.200s: %s", c->crash, st_strerror(ret));
        return ret;
    }
    if (c->clock_tsc == 1 && !st__ts_tsc_forcible()) {
        st__errmsg(err, errlen, "clock=%s: %s", ST_CLOCK_COUNTER,
                   !ST_CLOCK_HAVE_COUNTER ? "this machine has no counter the runtime reads"
                   : !strcmp(ST_CLOCK_COUNTER, "tsc") ? "this machine has no invariant TSC"
                                                      : "the firmware set no frequency for it (CNTFRQ_EL0)");
        return -ENOTSUP;
    }
    if (!clock_change && !(c->flight && !st__ring_overwriting()))
        return 0;
    /* The clock and the policy are those of every ring: only while there is none. */
    c->mode_locked = true;
    if (st__ring_mode_lock() < 0) {
        if (clock_change)
            st__errmsg(err, errlen, "clock=%s: cannot change the clock after tracing started",
                       c->clock_tsc ? ST_CLOCK_COUNTER : "monotonic");
        else
            st__errmsg(err, errlen, "flight=: cannot change to flight mode after tracing started");
        return -EBUSY;
    }
    return 0;
}

static void ring_commit(void *state, const struct st__cfg_view *view)
{
    struct st__ring_cfg *c = state;

    if (c->mode_locked) {
        if (c->clock_tsc >= 0)
            st__ts_set_tsc(c->clock_tsc == 1);
        if (c->flight)
            st__ring_set_overwrite(c->flight);
        st__ring_mode_unlock();
        c->mode_locked = false;
    } else if (c->flight) {
        st__ring_set_size(c->flight); /* already in flight mode: the size of rings made from now on */
    }
    if (c->bufsize)
        st__ring_set_size(c->bufsize);
    if (c->crash) {
        st__ring_file_set_dir(*c->crash ? c->crash_abs : "");
        st__ring_file_probe(st__ring_size());
    }
}

static void ring_abort(void *state)
{
    struct st__ring_cfg *c = state;

    if (c->mode_locked)
        st__ring_mode_unlock();
    c->mode_locked = false;
    if (c->crash_created)
        rmdir(c->crash); /* nothing was written in it: the configuration never applied */
    c->crash_created = false;
}

static const struct st__cfg_key ring_keys[] = {
    {"bufsize", false, parse_bufsize},
    {"clock", false, parse_clock},
    {"crash", false, parse_crash},
    {"flight", false, parse_flight},
};

const struct st__cfg_part st__ring_cfg_part = {
    .name = "rings",
    .layer = ST_CFG_CORE,
    .keys = ring_keys,
    .nkeys = sizeof ring_keys / sizeof ring_keys[0],
    .state_size = sizeof(struct st__ring_cfg),
    .init = ring_init,
    .prepare = ring_prepare,
    .commit = ring_commit,
    .abort = ring_abort,
};
