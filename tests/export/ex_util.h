/*
 * Helpers of the export tests: running a program with its output captured,
 * building v4 trace files byte by byte (src/format/trace_format.h), the
 * crafted traces several tests share, and looking at text.
 */
#ifndef ST_TEST_EX_UTIL_H
#define ST_TEST_EX_UTIL_H

#include "tap.h"
#include "test_util.h"

#include "trace_format.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* --- files and text ------------------------------------------------------------ */


/* Writes to dst a copy of text file src, the last character of the first `find` in it replaced by c (a checker's bad input). */
static inline void ex_write_altered(const char *src, const char *dst, const char *find, char c)
{
    char *text = tu_slurp(src, NULL), *at = text ? strstr(text, find) : NULL;
    FILE *f = fopen(dst, "w");
    if (at)
        at[strlen(find) - 1] = c;
    if (f) {
        fputs(text ? text : "", f);
        fclose(f);
    }
    free(text);
}

static inline bool ex_has(const char *text, const char *needle)
{
    return text && strstr(text, needle) != NULL;
}

/* Occurrences of needle in text. */
static inline long ex_count(const char *text, const char *needle)
{
    /* A plain loop: a sanitizer's strstr() measures the whole haystack on
     * every call, which is quadratic on long outputs. */
    long n = 0;
    size_t len = strlen(needle);
    for (const char *p = text; *p; p++)
        if (*p == needle[0] && strncmp(p, needle, len) == 0)
            n++;
    return n;
}

/* Prints text as TAP diagnostics, at most max lines. */
static inline void ex_show(const char *what, const char *text, int max)
{
    for (const char *p = text; p && *p && max-- > 0;) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        printf("#   %s: %.*s\n", what, len, p);
        p += len + (nl != NULL);
    }
}

static inline bool ex_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* rm -rf for the test's own directories. */
static inline void ex_rm_rf(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char sub[4096];
            if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < (int)sizeof sub)
                ex_rm_rf(sub);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Entries of dir whose name starts with prefix. */
static inline int ex_count_entries(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

/* --- running programs -------------------------------------------------------------- */


static char ex_tmpdir[4096];

/* Runs argv (argv[0] a path, NULL-terminated) with stdin from /dev/null, its output captured. */
static inline struct tu_run ex_run_argv(const char *const *argv)
{
    struct tu_run r;
    tu_run((char *const *)argv, NULL, NULL, false, &r);
    return r;
}

/* Runs a program with up to 30 arguments given as a NULL-terminated list. */
#define ex_run(...) ex_run_argv((const char *const[]){__VA_ARGS__, NULL})


/* Makes the test's scratch directory under $TMPDIR (or /tmp). */
static inline void ex_make_tmpdir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    snprintf(ex_tmpdir, sizeof ex_tmpdir, "%s/st-export-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    if (!mkdtemp(ex_tmpdir)) {
        perror("mkdtemp");
        exit(1);
    }
}

/* --- building v4 traces ----------------------------------------------------------- */

/* A trace in memory. */
struct ex_trace {
    uint8_t *buf;
    size_t len, cap;
};

/* One argument of a crafted record: an integer (str NULL) or a string. */
struct ex_arg {
    uint64_t v;
    const char *str;
    size_t slen;
};

#define EX_INT(x) ((struct ex_arg){.v = (uint64_t)(x)})
#define EX_STR(s) ((struct ex_arg){.str = (s), .slen = sizeof(s) - 1})

static inline uint8_t *ex_grow(struct ex_trace *t, size_t n)
{
    if (t->len + n > t->cap) {
        t->cap = (t->len + n) * 2 + 4096;
        t->buf = realloc(t->buf, t->cap);
    }
    uint8_t *p = t->buf + t->len;
    t->len += n;
    return p;
}

static inline void ex_header(struct ex_trace *t)
{
    st__fmt_put_header(ex_grow(t, ST_HEADER_SIZE));
}

static inline void ex_mapping(struct ex_trace *t, uint64_t id, const char *name)
{
    st__fmt_put_mapping(ex_grow(t, st__fmt_mapping_size(strlen(name))), id, name, (uint32_t)strlen(name));
}

/* An event record with nargs arguments. */
static inline void ex_event(struct ex_trace *t, uint64_t id, uint64_t ts, uint32_t pid, size_t nargs,
                            const struct ex_arg *args)
{
    size_t payload = 0;
    for (size_t i = 0; i < nargs; i++)
        payload += args[i].str ? 4 + args[i].slen : 8;
    uint8_t *p = ex_grow(t, ST_EVENT_FIXED_SIZE + payload);
    st__fmt_put_event_header(p, id, ts, (uint32_t)payload, pid);
    p += ST_EVENT_FIXED_SIZE;
    for (size_t i = 0; i < nargs; i++) {
        if (args[i].str) {
            st__fmt_put_u32(p, (uint32_t)args[i].slen);
            memcpy(p + 4, args[i].str, args[i].slen);
            p += 4 + args[i].slen;
        } else {
            st__fmt_put_u64(p, args[i].v);
            p += 8;
        }
    }
}

#define ex_ev(t, id, ts, pid, ...) \
    ex_event((t), (id), (ts), (pid), sizeof((struct ex_arg[]){__VA_ARGS__}) / sizeof(struct ex_arg), \
             (struct ex_arg[]){__VA_ARGS__})
#define ex_ev0(t, id, ts, pid) ex_event((t), (id), (ts), (pid), 0, NULL)

static inline void ex_dropped(struct ex_trace *t, uint64_t ts, uint32_t pid, uint64_t count)
{
    st__fmt_put_dropped(ex_grow(t, ST_EVENT_FIXED_SIZE + 8), ts, pid, count);
}

/* Writes the trace to path and frees it. */
static inline void ex_save(struct ex_trace *t, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(t->buf, 1, t->len, f) != t->len || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    free(t->buf);
    memset(t, 0, sizeof *t);
}

/* --- traces of crafted-events ----------------------------------------------------------- */

#define EX_T0 UINT64_C(100000000000) /* 100 s: the crafted traces' time origin */
#define EX_MS UINT64_C(1000000)
#define EX_US UINT64_C(1000)

/* Event IDs: positions in crafted-events, also used as mapping IDs. */
enum { OUTER_START, OUTER_DONE, INNER_BEGIN, INNER_END, LEAF_ENTER, LEAF_EXIT, NOTE, LOCK_ACQ, LOCK_REL, ORPHAN };
static const char *const ex_names[] = {"outer_start", "outer_done",   "inner_begin", "inner_end", "leaf_enter",
                                       "leaf_exit",   "note",         "lock_acquire", "lock_release", "orphan_start"};

/* A v4 header and a mapping for every crafted event. */
static inline void ex_begin_crafted(struct ex_trace *t)
{
    memset(t, 0, sizeof *t);
    ex_header(t);
    for (unsigned i = 0; i < sizeof ex_names / sizeof *ex_names; i++)
        ex_mapping(t, i, ex_names[i]);
}

/* A path in the test's scratch directory (eight kept at a time). */
static inline char *ex_path(const char *name)
{
    static char buf[8][4300];
    static int k;
    char *p = buf[k++ & 7];
    snprintf(p, sizeof buf[0], "%s/%s", ex_tmpdir, name);
    return p;
}

/*
 * Calls on two threads and notes with every kind of argument: strings
 * (UTF-8, an invalid byte, a quote, a control character, empty, 200 bytes),
 * 2^64-1, INT64_MIN, 2^53, bools, pointers; lock_acquire/lock_release
 * (paired only with --pair). 13 records, 4 calls without the lock pair.
 */
static inline void ex_build_kinds(const char *path)
{
    struct ex_trace t;
    ex_begin_crafted(&t);
    ex_ev(&t, OUTER_START, EX_T0 + 1 * EX_MS, 4001, EX_INT(1));
    ex_ev(&t, INNER_BEGIN, EX_T0 + 1 * EX_MS + 500 * EX_US, 4001, EX_INT(7));
    ex_ev0(&t, LEAF_ENTER, EX_T0 + 2 * EX_MS, 4001);
    ex_ev(&t, LEAF_EXIT, EX_T0 + 3 * EX_MS, 4001, EX_INT(-1));
    ex_ev0(&t, INNER_END, EX_T0 + 6 * EX_MS, 4001);
    ex_ev(&t, NOTE, EX_T0 + 6 * EX_MS + 200 * EX_US + 1, 4001, EX_STR("caf\xc3\xa9 \xff \"q\" \x01"),
          EX_INT(UINT64_MAX), EX_INT(INT64_MIN), EX_INT(1), EX_INT(0xdeadbeef));
    ex_ev(&t, OUTER_DONE, EX_T0 + 9 * EX_MS, 4001, EX_INT(1));
    ex_ev(&t, OUTER_START, EX_T0 + 12 * EX_MS + 500 * EX_US, 4002, EX_INT(2));
    ex_ev(&t, NOTE, EX_T0 + 13 * EX_MS + 999, 4002, EX_STR(""), EX_INT(UINT64_C(1) << 53),
          EX_INT(-(INT64_C(1) << 53)), EX_INT(0), EX_INT(0));
    ex_ev(&t, NOTE, EX_T0 + 13 * EX_MS + 1000, 4002,
          EX_STR("0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
                 "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"),
          EX_INT(5), EX_INT(-5), EX_INT(0), EX_INT(0x10));
    ex_ev(&t, LOCK_ACQ, EX_T0 + 14 * EX_MS, 4002, EX_INT(0x10));
    ex_ev(&t, LOCK_REL, EX_T0 + 15 * EX_MS, 4002, EX_INT(0x10));
    ex_ev(&t, OUTER_DONE, EX_T0 + 18 * EX_MS, 4002, EX_INT(2));
    ex_save(&t, path);
}

/*
 * What clean traces never have: an end without a begin (inner_end @1 ms),
 * a call closed early (inner, by outer's end @4 ms), a begin never ended
 * (leaf @5 ms; the trace ends @9 ms), a drop of 5 on thread 4001 and one
 * of 2 no thread could take (pid field 0xffffffff).
 */
static inline void ex_build_odd(const char *path)
{
    struct ex_trace t;
    ex_begin_crafted(&t);
    ex_ev0(&t, INNER_END, EX_T0 + 1 * EX_MS, 4001);
    ex_ev(&t, OUTER_START, EX_T0 + 2 * EX_MS, 4001, EX_INT(1));
    ex_ev(&t, INNER_BEGIN, EX_T0 + 3 * EX_MS, 4001, EX_INT(1));
    ex_dropped(&t, EX_T0 + 3 * EX_MS + 1, 4001, 5);
    ex_ev(&t, OUTER_DONE, EX_T0 + 4 * EX_MS, 4001, EX_INT(1));
    ex_dropped(&t, EX_T0 + 4 * EX_MS, 0xffffffffu, 2);
    ex_ev0(&t, LEAF_ENTER, EX_T0 + 5 * EX_MS, 4001);
    ex_ev(&t, NOTE, EX_T0 + 9 * EX_MS, 4002, EX_STR("end"), EX_INT(0), EX_INT(0), EX_INT(0), EX_INT(0));
    ex_save(&t, path);
}

/* Writes `SIMPLETRACE print --format=json EVENTS TRACE` to json. */
static inline void ex_print_json(const char *st_bin, const char *events, const char *trace, const char *json)
{
    struct tu_run r = ex_run(st_bin, "print", "--format=json", events, trace);
    FILE *f = fopen(json, "w");
    fputs(r.out, f);
    fclose(f);
    tu_run_free(&r);
}

/* Copies path to cut without its last n bytes: a trace ending inside a record. */
static inline void ex_cut(const char *path, const char *cut, size_t n)
{
    size_t len;
    char *whole = tu_slurp(path, &len);
    FILE *f = fopen(cut, "wb");
    fwrite(whole, 1, len - n, f);
    fclose(f);
    free(whole);
}

#endif /* ST_TEST_EX_UTIL_H */
