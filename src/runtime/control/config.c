/*
 * st_configure(): QEMU's -trace syntax plus simpletrace's own keys.
 *
 *   config := option (';' option)*          each option as one -trace argument
 *   option := item (',' item)*              ",," inside an item is a literal ','
 *   item   := [enable=]PATTERN              leading '-' disables; repeatable
 *           | events=FILE                   one PATTERN per line; repeatable
 *           | file=PATH                     last one wins
 *           | rotate=N[K|M|G]|off           the file in pieces of at most N bytes (writer.c)
 *           | rotate-keep=N                 keep only the newest N pieces; 0 all
 *           | bufsize=N[K|M|G]              per-thread buffer, power of two, 4K..1G
 *           | log-prefix=on|off             log backend: "TID@SEC.USEC:" prefix
 *           | clock=tsc|monotonic           what the hot path reads (clock.c)
 *           | monitor=on|off|PATH           control socket (monitor.c)
 *           | monitor-timeout=N[s|ms]       monitor: how long a client may stay silent
 *           | crash=DIR                     thread rings in files in DIR (crash.c); "" off
 *           | flight=N[K|M|G]               flight recorder: per-thread overwrite ring, no file (flight.c)
 *           | flight-signal=SIG             flight: this signal takes a snapshot
 *           | flight-trigger=EVENT          flight: tracing this event takes a snapshot
 *   Empty items are ignored.
 *
 * Differences from QEMU, on purpose:
 *   - an option without file= keeps the file named earlier (QEMU resets it);
 *   - `?` is a wildcard like `*` and a glob enables every match (QEMU needs a
 *     `*` to treat it as a pattern and otherwise enables the first match);
 *   - events files: whitespace and CR are trimmed and comments may be
 *     indented (QEMU chops the last character of every line, even without a
 *     newline); a malformed line is an error "FILE:LINE: ...";
 *   - an unwritable file= is an error (QEMU ignores it silently);
 *   - names that match nothing now are not an error: the rule waits for
 *     groups registered later (dlopen);
 *   - a configuration of only our own keys (bufsize, log-prefix, clock,
 *     monitor, monitor-timeout, crash, flight, flight-signal, rotate,
 *     rotate-keep) does not enable
 *     the trace file; anything else does, except in flight mode, which has
 *     no trace file (flight.c): there patterns only enable events.
 *
 * All or nothing: the whole string (and every events file) is parsed and
 * validated, the trace file opened without truncating it, and only then is
 * anything applied, in an order where the steps that can fail come first.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "timestamp.h"
#include "ring_file.h"
#include "flight.h"
#include "rt_internal.h"
#include "monitor.h"

/* Everything a configuration string asks for. */
struct cfg {
    struct st_rule_in *rules; /* in order; patterns point into strs */
    size_t nrules, cap_rules;
    char **strs; /* owned strings */
    size_t nstrs, cap_strs;
    const char *file;  /* last file=, or NULL */
    size_t bufsize;    /* 0 = unchanged */
    int log_prefix;    /* -1 unchanged, 0 off, 1 on */
    int clock_tsc;     /* -1 unchanged, 0 monotonic, 1 tsc */
    struct st_mon_cfg mon; /* monitor= (last wins) and monitor-timeout= */
    const char *crash; /* crash=DIR (last wins), or NULL */
    bool enable_file;  /* a pattern, events= or file= was given */
    size_t flight;     /* flight=SIZE, or 0 */
    int flight_signal; /* flight-signal=, or 0 */
    const char *flight_trigger; /* flight-trigger=, or NULL */
    bool file_given;   /* file= appeared */
    int64_t rotate;    /* rotate=: -1 unchanged, 0 off, or the piece size */
    long rotate_keep;  /* rotate-keep=: -1 unchanged */
};

static void cfg_free(struct cfg *c)
{
    for (size_t i = 0; i < c->nstrs; i++)
        free(c->strs[i]);
    free(c->strs);
    free(c->rules);
}

/* Takes ownership of s (freed with the cfg); NULL s means ENOMEM. */
static char *cfg_keep(struct cfg *c, char *s)
{
    if (!s)
        return NULL;
    if (c->nstrs == c->cap_strs) {
        size_t cap = c->cap_strs ? c->cap_strs * 2 : 16;
        char **n = realloc(c->strs, cap * sizeof *n);
        if (!n) {
            free(s);
            return NULL;
        }
        c->strs = n;
        c->cap_strs = cap;
    }
    c->strs[c->nstrs++] = s;
    return s;
}

static int cfg_add_rule(struct cfg *c, const char *pattern, bool enable)
{
    if (c->nrules == c->cap_rules) {
        size_t cap = c->cap_rules ? c->cap_rules * 2 : 16;
        struct st_rule_in *n = realloc(c->rules, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        c->rules = n;
        c->cap_rules = cap;
    }
    c->rules[c->nrules].pattern = pattern;
    c->rules[c->nrules].enable = enable;
    c->nrules++;
    c->enable_file = true;
    return 0;
}

/* A pattern item or events-file line: validates and records it. */
static int parse_pattern(struct cfg *c, const char *text, const char *where, char *err, size_t errlen)
{
    bool enable = true;
    const char *p = text;

    if (*p == '-') {
        enable = false;
        p++;
    }
    if (!st__pattern_valid(p)) {
        st__errmsg(err, errlen, "%sinvalid event pattern '%s'", where, text);
        return -EINVAL;
    }
    if (!(p = cfg_keep(c, strdup(p))))
        return -ENOMEM;
    return cfg_add_rule(c, p, enable);
}

/* Trims leading and trailing whitespace (CR included) in place. */
static char *trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* events=FILE: one pattern per line; blank lines and '#' comments skipped. */
static int parse_events_file(struct cfg *c, const char *path, char *err, size_t errlen)
{
    char where[4200];
    char *line = NULL;
    size_t cap = 0;
    unsigned lineno = 0;
    int ret = 0;
    FILE *f;

    if (!*path) {
        st__errmsg(err, errlen, "events=: empty file name");
        return -EINVAL;
    }
    f = fopen(path, "re");
    if (!f) {
        ret = -errno;
        st__errmsg(err, errlen, "%s: %s", path, st_strerror(ret));
        return ret;
    }
    errno = 0;
    while (getline(&line, &cap, f) >= 0) {
        char *p = trim(line);
        lineno++;
        if (!*p || *p == '#')
            continue;
        snprintf(where, sizeof where, "%s:%u: ", path, lineno);
        ret = parse_pattern(c, p, where, err, errlen);
        if (ret < 0)
            goto out;
        errno = 0;
    }
    if (ferror(f)) {
        ret = errno ? -errno : -EIO;
        st__errmsg(err, errlen, "%s: %s", path, st_strerror(ret));
    }
out:
    free(line);
    fclose(f);
    return ret;
}

/* N[K|M|G] into *out (at most 2^50); false if v is not that. */
static bool parse_bytes(const char *v, uint64_t *out)
{
    unsigned long long n = 0;
    const char *p = v;
    int shift = 0;

    if (!isdigit((unsigned char)*p))
        return false;
    for (; isdigit((unsigned char)*p); p++) {
        if (n > (1ull << 40))
            return false;
        n = n * 10 + (unsigned)(*p - '0');
    }
    switch (*p) {
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    default: break;
    }
    if (*p || n > (1ull << 40) >> shift << 10)
        return false;
    *out = n << shift;
    return true;
}

/* bufsize=N[K|M|G] and flight=: a power of two from 4K to 1G. */
static int parse_size(const char *key, size_t *out, const char *v, char *err, size_t errlen)
{
    uint64_t n;

    if (!parse_bytes(v, &n) || n < ST_RING_SIZE_MIN || n > ST_RING_SIZE_MAX || (n & (n - 1))) {
        st__errmsg(err, errlen, "invalid %s '%s': want a power of two from 4K to 1G", key, v);
        return -EINVAL;
    }
    *out = (size_t)n;
    return 0;
}

/* rotate=N[K|M|G] (at least 64K) or off (also 0). */
static int parse_rotate(struct cfg *c, const char *v, char *err, size_t errlen)
{
    uint64_t n;

    if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0) {
        c->rotate = 0;
        return 0;
    }
    if (!parse_bytes(v, &n) || n < ST_ROTATE_MIN) {
        st__errmsg(err, errlen, "invalid rotate '%s': want a size of at least 64K (N, NK, NM or NG) or off", v);
        return -EINVAL;
    }
    c->rotate = (int64_t)n;
    return 0;
}

/* rotate-keep=N: 0 (keep every piece) to 1000000. */
static int parse_keep(struct cfg *c, const char *v, char *err, size_t errlen)
{
    char *end;
    unsigned long n;

    errno = 0;
    n = isdigit((unsigned char)*v) ? strtoul(v, &end, 10) : 0;
    if (!isdigit((unsigned char)*v) || *end || errno || n > 1000000) {
        st__errmsg(err, errlen, "invalid rotate-keep '%s': want a number of pieces from 0 (all) to 1000000", v);
        return -EINVAL;
    }
    c->rotate_keep = (long)n;
    return 0;
}

static int parse_keyword(const char *key, const char *v, const char *a, const char *b, int *out, char *err,
                         size_t errlen)
{
    if (strcmp(v, a) == 0)
        *out = 1;
    else if (strcmp(v, b) == 0)
        *out = 0;
    else {
        st__errmsg(err, errlen, "invalid %s '%s': want %s or %s", key, v, a, b);
        return -EINVAL;
    }
    return 0;
}

/* One item, already unescaped. */
static int parse_item(struct cfg *c, char *item, char *err, size_t errlen)
{
    char *eq = strchr(item, '=');
    const char *key, *v;

    if (!eq)
        return parse_pattern(c, item, "", err, errlen);
    *eq = '\0';
    key = item;
    v = eq + 1;
    if (strcmp(key, "enable") == 0)
        return parse_pattern(c, v, "", err, errlen);
    if (strcmp(key, "events") == 0) {
        c->enable_file = true;
        return parse_events_file(c, v, err, errlen);
    }
    if (strcmp(key, "file") == 0) {
        if (!*v) {
            st__errmsg(err, errlen, "file=: empty path");
            return -EINVAL;
        }
        c->file = v;
        c->enable_file = true;
        c->file_given = true;
        return 0;
    }
    if (strcmp(key, "bufsize") == 0)
        return parse_size(key, &c->bufsize, v, err, errlen);
    if (strcmp(key, "flight") == 0)
        return parse_size(key, &c->flight, v, err, errlen);
    if (strcmp(key, "rotate") == 0)
        return parse_rotate(c, v, err, errlen);
    if (strcmp(key, "rotate-keep") == 0)
        return parse_keep(c, v, err, errlen);
    if (strcmp(key, "flight-trigger") == 0) {
        if (!*v || strlen(v) > 255 || strpbrk(v, "*?")) {
            st__errmsg(err, errlen, "invalid flight-trigger '%s': want an event name", v);
            return -EINVAL;
        }
        c->flight_trigger = v;
        return 0;
    }
    if (strcmp(key, "flight-signal") == 0) {
        if (st__flight_parse_signal(v, &c->flight_signal) < 0) {
            st__errmsg(err, errlen, "invalid flight-signal '%s': want USR1, USR2, HUP, QUIT, PWR, WINCH, URG or RTMIN+N", v);
            return -EINVAL;
        }
        return 0;
    }
    if (strcmp(key, "log-prefix") == 0)
        return parse_keyword(key, v, "on", "off", &c->log_prefix, err, errlen);
    if (strcmp(key, "clock") == 0)
        return parse_keyword(key, v, "tsc", "monotonic", &c->clock_tsc, err, errlen);
    if (strcmp(key, "monitor") == 0) {
        int ret = st__mon_parse(v, err, errlen);
        if (ret == 0)
            c->mon.monitor = v;
        return ret;
    }
    if (strcmp(key, "crash") == 0) {
        int ret = st__ring_file_check_dir(v, err, errlen);
        if (ret == 0)
            c->crash = v;
        return ret;
    }
    if (strcmp(key, "monitor-timeout") == 0)
        return st__mon_parse_timeout(v, &c->mon.timeout_ms, err, errlen);
    st__errmsg(err, errlen, "unknown key '%s'", key);
    return -EINVAL;
}

/* Splits at ',' and ';' (",," stays a ','), parsing each item. */
static int parse_config(struct cfg *c, const char *s, char *err, size_t errlen)
{
    while (*s) {
        char *item = cfg_keep(c, malloc(strlen(s) + 1)), *o = item;
        int ret;

        if (!item)
            return -ENOMEM;
        for (; *s; s++) {
            if (*s == ',' && s[1] == ',')
                s++;
            else if (*s == ',' || *s == ';')
                break;
            *o++ = *s;
        }
        *o = '\0';
        if (*s)
            s++;
        if (!*item)
            continue;
        ret = parse_item(c, item, err, errlen);
        if (ret < 0)
            return ret;
    }
    return 0;
}

/* Applies a parsed configuration; ctl_lock held. */
static int apply(struct cfg *c, char *err, size_t errlen)
{
    struct st_file_prep prep = {.fd = -1};
    struct st_mon_prep mprep = {.fd = -1};
    bool old_tsc = st__ts_is_tsc();
    bool flight = c->flight || st__ring_flight();
    int ret;

    /*
     * Flight mode: the producers move their rings' tails themselves, so no
     * writer may run over them (flight.c): no trace file, no crash=DIR.
     * Patterns then only enable events.
     */
    if (flight) {
        const char *why = NULL;
        if (c->file_given)
            why = "flight= (flight recorder) and file= exclude each other";
        else if ((c->crash && *c->crash) || st__ring_file_on())
            why = "flight= (flight recorder) and crash=DIR exclude each other";
        else if (c->bufsize)
            why = "bufsize= in flight mode: the ring size is flight=SIZE";
        else if (c->rotate > 0 || c->rotate_keep > 0)
            why = "rotate= in flight mode: there is no trace file to rotate";
        else if (c->flight && st__file_enabled())
            why = "flight=: a trace file is or was in use (flight mode must be chosen before any trace file)";
        if (why) {
            st__errmsg(err, errlen, "%s", why);
            return -EINVAL;
        }
        c->enable_file = false;
    } else if (c->flight_signal || c->flight_trigger) {
        st__errmsg(err, errlen, "%s= needs flight=SIZE", c->flight_signal ? "flight-signal" : "flight-trigger");
        return -EINVAL;
    }

    if (c->enable_file) {
        ret = st__file_prepare(c->file, &prep, err, errlen);
        if (ret < 0)
            return ret;
    }
    ret = st__mon_prepare(&c->mon, &mprep, err, errlen);
    if (ret < 0)
        goto fail;
    if (c->flight) {
        ret = st__ring_set_flight(c->flight);
        if (ret < 0) {
            st__errmsg(err, errlen, "flight=: cannot change to flight mode after tracing started");
            goto fail;
        }
    }
    if (c->flight_trigger) {
        ret = st__flight_set_trigger(c->flight_trigger);
        if (ret < 0) {
            st__errmsg(err, errlen, "flight-trigger=: %s",
                       ret == -EBUSY ? "can be chosen once, before or with flight-signal=" : st_strerror(ret));
            goto fail;
        }
    }
    if (c->flight_signal) {
        ret = st__flight_set_signal(c->flight_signal);
        if (ret < 0) {
            st__errmsg(err, errlen, "flight-signal=: %s", ret == -EBUSY ? "another signal is already chosen" : st_strerror(ret));
            goto fail;
        }
    }
    if (c->clock_tsc >= 0) {
        ret = st__ring_select_clock(c->clock_tsc == 1);
        if (ret < 0) {
            st__errmsg(err, errlen, "clock=%s: %s", c->clock_tsc ? "tsc" : "monotonic",
                       ret == -EBUSY ? "cannot change the clock after tracing started"
                                     : "this machine has no invariant TSC");
            goto fail;
        }
    }
    ret = st__reg_add_rules(c->rules, c->nrules);
    if (ret < 0) {
        st__errmsg(err, errlen, "%s", st_strerror(ret));
        st__ring_select_clock(old_tsc); /* no buffer can exist: it changed */
        goto fail;
    }
    if (c->bufsize)
        st__ring_set_size(c->bufsize);
    if (c->crash)
        st__ring_file_set_dir(c->crash);
    if (c->log_prefix >= 0)
        st__log_set_prefix(c->log_prefix == 1);
    st__file_set_rotation(c->rotate, c->rotate_keep);
    if (c->enable_file) {
        ret = st__file_commit(&prep, !st__in_init());
        if (ret < 0) {
            st__errmsg(err, errlen, "cannot start the writeout thread: %s", st_strerror(ret));
            st__mon_abort(&mprep);
            return ret;
        }
    }
    ret = st__mon_commit(&c->mon, &mprep);
    if (ret < 0)
        st__errmsg(err, errlen, "cannot start the monitor thread: %s", st_strerror(ret));
    return ret;
fail:
    st__mon_abort(&mprep);
    st__file_abort(&prep);
    return ret;
}

int st__configure(const char *config, char *err, size_t errlen)
{
    struct cfg c = {.log_prefix = -1,
                    .clock_tsc = -1,
                    .mon = {.monitor = NULL, .timeout_ms = -1},
                    .rotate = -1,
                    .rotate_keep = -1};
    int ret;

    if (err && errlen)
        err[0] = '\0';
    if (!config) {
        st__errmsg(err, errlen, "no configuration");
        return -EINVAL;
    }
    ret = parse_config(&c, config, err, errlen);
    if (ret == -ENOMEM)
        st__errmsg(err, errlen, "%s", st_strerror(ret));
    if (ret == 0) {
        st__ctl_lock();
        ret = apply(&c, err, errlen);
        st__ctl_unlock();
    }
    cfg_free(&c);
    return ret;
}

ST_EXPORT int st_configure(const char *config, char *errbuf, size_t errlen)
{
    st__init();
    return st__configure(config, errbuf, errlen);
}
