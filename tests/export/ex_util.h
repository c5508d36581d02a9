/*
 * Helpers of the export tests: running a program with its output captured,
 * building v4 trace files byte by byte (src/format/format.h), and looking
 * at text.
 */
#ifndef ST_TEST_EX_UTIL_H
#define ST_TEST_EX_UTIL_H

#include "tap.h"

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

/* Whole file, NUL-terminated, malloc'ed ("" if unreadable); *len its size if len. */
static inline char *ex_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    char chunk[65536];
    while (f && (got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + got + 1 > cap) {
            cap = (n + got + 1) * 2;
            buf = realloc(buf, cap);
        }
        memcpy(buf + n, chunk, got);
        n += got;
    }
    if (f)
        fclose(f);
    if (!buf)
        buf = calloc(1, 1);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
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

struct ex_run {
    int status;   /* exit status, or 128 + signal */
    char *out;    /* stdout, malloc'ed */
    char *err;    /* stderr, malloc'ed */
};

static char ex_tmpdir[4096];

/* Runs argv (argv[0] a path, NULL-terminated) with stdin from /dev/null. */
static inline struct ex_run ex_run_argv(const char *const *argv)
{
    static int nrun;
    char out_path[4200], err_path[4200];
    snprintf(out_path, sizeof out_path, "%s/run%d.out", ex_tmpdir, nrun);
    snprintf(err_path, sizeof err_path, "%s/run%d.err", ex_tmpdir, nrun++);
    struct ex_run r = {.status = -1};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    if (posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) == 0) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    posix_spawn_file_actions_destroy(&fa);
    r.out = ex_slurp(out_path, NULL);
    r.err = ex_slurp(err_path, NULL);
    unlink(out_path);
    unlink(err_path);
    return r;
}

/* Runs a program with up to 30 arguments given as a NULL-terminated list. */
#define ex_run(...) ex_run_argv((const char *const[]){__VA_ARGS__, NULL})

static inline void ex_run_free(struct ex_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

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
    st_fmt_put_header(ex_grow(t, ST_HEADER_SIZE));
}

static inline void ex_mapping(struct ex_trace *t, uint64_t id, const char *name)
{
    st_fmt_put_mapping(ex_grow(t, st_fmt_mapping_size(strlen(name))), id, name, (uint32_t)strlen(name));
}

/* An event record with nargs arguments. */
static inline void ex_event(struct ex_trace *t, uint64_t id, uint64_t ts, uint32_t pid, size_t nargs,
                            const struct ex_arg *args)
{
    size_t payload = 0;
    for (size_t i = 0; i < nargs; i++)
        payload += args[i].str ? 4 + args[i].slen : 8;
    uint8_t *p = ex_grow(t, ST_EVENT_FIXED_SIZE + payload);
    st_fmt_put_event_header(p, id, ts, (uint32_t)payload, pid);
    p += ST_EVENT_FIXED_SIZE;
    for (size_t i = 0; i < nargs; i++) {
        if (args[i].str) {
            st_fmt_put_u32(p, (uint32_t)args[i].slen);
            memcpy(p + 4, args[i].str, args[i].slen);
            p += 4 + args[i].slen;
        } else {
            st_fmt_put_u64(p, args[i].v);
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
    st_fmt_put_dropped(ex_grow(t, ST_EVENT_FIXED_SIZE + 8), ts, pid, count);
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

#endif /* ST_TEST_EX_UTIL_H */
