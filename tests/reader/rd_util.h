/*
 * Helpers for the reader tests: slurping files, running the CLI in a child
 * process with its output captured, and reading simpletrace.py's expected
 * text back into numbers (so tests compute expectations independently).
 */
#ifndef ST_TEST_RD_UTIL_H
#define ST_TEST_RD_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#include "test_util.h"

/* A temporary file name made with mkstemp (created empty). */
static inline void rd_tmpname(char *buf, size_t len, const char *tag)
{
    const char *dir = getenv("TMPDIR");
    snprintf(buf, len, "%s/st-reader-%s-XXXXXX", dir && *dir ? dir : "/tmp", tag);
    int fd = mkstemp(buf);
    if (fd >= 0)
        close(fd);
}

/* Set to send the child's stdout to /dev/null (out stays NULL): keeps this process small. */
static int rd_discard_stdout;

/* Runs argv (argv[0] a path) with stdin from in_path (NULL: /dev/null), stdout captured unless rd_discard_stdout. */
static inline int rd_run(char *const argv[], const char *in_path, struct tu_run *res)
{
    return tu_run(argv, NULL, in_path, rd_discard_stdout, res);
}

/* Runs exe with the arguments after in up to a NULL (at most 14), stdin from in (NULL: /dev/null); *res zeroed on failure. */
static inline void rd_cli(struct tu_run *res, const char *exe, const char *in, ...)
{
    char *argv[16] = {(char *)exe};
    va_list ap;
    va_start(ap, in);
    for (int i = 1; i < 15 && (argv[i] = va_arg(ap, char *)) != NULL; i++)
        ;
    va_end(ap);
    if (rd_run(argv, in, res) != 0)
        memset(res, 0, sizeof *res);
}

/* SHARED/fixtures/DIR/NAME+SUFFIX, in one of four rotating static buffers (so a call can take several). */
static inline char *rd_fixture(const char *shared, const char *dir, const char *name, const char *suffix)
{
    static char bufs[4][4096];
    static int i;
    char *b = bufs[i++ % 4];
    snprintf(b, sizeof bufs[0], "%s/fixtures/%s/%s%s", shared, dir, name, suffix);
    return b;
}

/* One line of simpletrace.py's text output, split up. */
struct rd_line {
    char name[128];
    int64_t delta_ns;  /* exact: the text has 3 decimals of microseconds */
    long pid;          /* -1 when the line has no pid field */
    const char *args;  /* the rest of the line (inside the text buffer) */
    size_t args_len;
};

/* Parses "-12.345" (microseconds, 3 decimals) into nanoseconds. */
static inline int64_t rd_parse_delta(const char *s, const char **end)
{
    bool neg = *s == '-';
    s += neg;
    int64_t whole = 0, frac = 0;
    while (*s >= '0' && *s <= '9')
        whole = whole * 10 + (*s++ - '0');
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++)
            frac = frac * 10 + (*s - '0');
    if (end)
        *end = s;
    int64_t v = whole * 1000 + frac;
    return neg ? -v : v;
}

/* Splits the line at *pos of text into *l and advances *pos; false at the end. */
static inline bool rd_next_line(const char *text, size_t *pos, struct rd_line *l)
{
    const char *p = text + *pos;
    if (!*p)
        return false;
    const char *nl = strchr(p, '\n');
    const char *eol = nl ? nl : p + strlen(p);
    const char *sp = memchr(p, ' ', (size_t)(eol - p));
    size_t nlen = sp ? (size_t)(sp - p) : (size_t)(eol - p);
    if (nlen >= sizeof l->name)
        nlen = sizeof l->name - 1;
    memcpy(l->name, p, nlen);
    l->name[nlen] = 0;
    const char *q = sp ? sp + 1 : eol;
    l->delta_ns = rd_parse_delta(q, &q);
    l->pid = -1;
    if (!strncmp(q, " pid=", 5)) {
        l->pid = strtol(q + 5, (char **)&q, 10);
    }
    if (q < eol && *q == ' ')
        q++;
    l->args = q;
    l->args_len = (size_t)(eol - q);
    *pos = (size_t)(eol - text) + (nl ? 1 : 0);
    return true;
}

/* Value of integer field "name=0x..." in the args of a line; false if absent. */
static inline bool rd_field_u64(const struct rd_line *l, const char *name, uint64_t *v)
{
    size_t n = strlen(name);
    for (const char *p = l->args; p < l->args + l->args_len; p++) {
        if ((p == l->args || p[-1] == ' ') && !strncmp(p, name, n) && p[n] == '=' && p[n + 1] == '0' &&
            p[n + 2] == 'x') {
            *v = strtoull(p + n + 3, NULL, 16);
            return true;
        }
    }
    return false;
}

/* The expected text of a fixture (simpletrace.py's, at path) as lines with absolute times (first = 0). */
struct rd_lines {
    struct rd_line *l;
    int64_t *t;
    size_t n;
    char *text;
};

static inline void rd_load_lines(const char *path, struct rd_lines *ls)
{
    size_t len, pos = 0, cap = 1024;
    ls->text = tu_slurp(path, &len);
    ls->l = malloc(cap * sizeof *ls->l);
    ls->t = malloc(cap * sizeof *ls->t);
    ls->n = 0;
    int64_t t = 0;
    while (ls->text && rd_next_line(ls->text, &pos, &ls->l[ls->n])) {
        t += ls->l[ls->n].delta_ns;
        ls->t[ls->n++] = t;
        if (ls->n == cap) {
            cap *= 2;
            ls->l = realloc(ls->l, cap * sizeof *ls->l);
            ls->t = realloc(ls->t, cap * sizeof *ls->t);
        }
    }
}

static inline void rd_free_lines(struct rd_lines *ls)
{
    free(ls->l);
    free(ls->t);
    free(ls->text);
}

/*
 * A big trace for the memory checks, made at a temporary path (into tmp,
 * len bytes): the QEMU fixture bench_small_drops.bin (at fixture) once,
 * then its records 15 more times: 37 MB.
 */
static inline void rd_big_trace(const char *fixture, char *tmp, size_t len)
{
    const long head = 24 + 17779; /* header + the 427 mapping records (no_events_info.bin) */
    static char chunk[65536];
    rd_tmpname(tmp, len, "big");
    FILE *out = fopen(tmp, "wb");
    for (int i = 0; i < 16 && out; i++) { /* the file once, then its records 15 more times */
        FILE *in = fopen(fixture, "rb");
        if (!in)
            break;
        if (i > 0)
            fseek(in, head, SEEK_SET);
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, in)) > 0)
            fwrite(chunk, 1, n, out);
        fclose(in);
    }
    if (out)
        fclose(out);
}

/*
 * A spawned child's max RSS counts the parent's pages too (vfork-style
 * spawn, kept across exec): memory checks run first, while the test is
 * small, and allow this much.
 */
#if defined(__SANITIZE_ADDRESS__)
#define RD_RSS_SLACK_KB 8192 /* the sanitizer's allocator and shadow memory move the figures */
#define RD_RSS_MAX_KB 65536
#else
#define RD_RSS_SLACK_KB 1024
#define RD_RSS_MAX_KB 16384
#endif


#endif
