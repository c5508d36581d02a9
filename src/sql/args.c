/*
 * The module's arguments (args.h). Each is parsed alone: quotes first (a
 * quoted argument is a path whatever it holds), then KEY=VALUE, then the
 * flags; a bare word is a path. Every value is checked here, so that a
 * mistake is refused at CREATE VIRTUAL TABLE naming the argument, not at
 * the first query.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "export.h"

/* s[0..n) without leading and trailing blanks. */
static void trim(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t' || **s == '\n' || **s == '\r')) {
        (*s)++;
        (*n)--;
    }
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' || (*s)[*n - 1] == '\n' || (*s)[*n - 1] == '\r'))
        (*n)--;
}

/*
 * A value into *out (malloc'ed): s[0..n) as it is, or, quoted ('...' or
 * "..."), what the quotes hold with each doubled quote read as one. 0,
 * -EINVAL (err set) when a quote is not closed at the end, or -ENOMEM.
 */
static int value(const char *s, size_t n, const char *arg, char **out, char *err, size_t errlen)
{
    char *v = malloc(n + 1), *p = v;
    *out = NULL;
    if (!v)
        return -ENOMEM;
    if (n == 0 || (s[0] != '\'' && s[0] != '"')) {
        memcpy(v, s, n);
        v[n] = '\0';
        *out = v;
        return 0;
    }
    char q = s[0];
    size_t i = 1;
    for (; i < n; i++) {
        if (s[i] != q) {
            *p++ = s[i];
        } else if (i + 1 < n && s[i + 1] == q) {
            *p++ = q;
            i++;
        } else {
            break;
        }
    }
    if (i != n - 1) {
        snprintf(err, errlen, "argument '%.200s': %s", arg,
                 i >= n ? "its quote is not closed" : "text after the closing quote");
        free(v);
        return -EINVAL;
    }
    *p = '\0';
    *out = v;
    return 0;
}

/* Appends v (owned from now on) to *list. 0 or -ENOMEM. */
static int append(char ***list, size_t *n, char *v)
{
    char **m = realloc(*list, (*n + 1) * sizeof *m);
    if (!m) {
        free(v);
        return -ENOMEM;
    }
    m[(*n)++] = v;
    *list = m;
    return 0;
}

static int parse_u32(const char *v, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long x = strtoul(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-' || v[0] == '+' || v[0] == ' ' || x > UINT32_MAX)
        return -EINVAL;
    *out = (uint32_t)x;
    return 0;
}

/* Sets a name (table=, event=): one only. */
static int set_once(char **slot, char *v, const char *key, char *err, size_t errlen)
{
    if (*slot) {
        snprintf(err, errlen, "%s= given twice", key);
        free(v);
        return -EINVAL;
    }
    *slot = v;
    return 0;
}

/* KEY=VALUE with v (owned) the value. */
static int keyed(struct st__sql_args *a, const char *key, size_t klen, char *v, char *err, size_t errlen)
{
#define IS(k) (klen == sizeof k - 1 && !memcmp(key, k, klen))
    if (IS("trace"))
        return append(&a->traces, &a->ntraces, v);
    if (IS("events"))
        return append(&a->events_files, &a->nevents_files, v);
    if (IS("pair")) {
        if (st__export_check_pair(v, err, errlen) < 0) {
            free(v);
            return -EINVAL;
        }
        return append(&a->pairs, &a->npairs, v);
    }
    if (IS("table"))
        return set_once(&a->table, v, "table", err, errlen);
    if (IS("event"))
        return set_once(&a->event, v, "event", err, errlen);
    if (IS("select")) {
        free((char *)a->rd.events);
        a->rd.events = v;
        return 0;
    }
    int ret;
    const char *want = "a decimal number";
    if (IS("tid")) {
        ret = parse_u32(v, &a->rd.tid);
        a->rd.filter_tid = true;
    } else if (IS("pid")) {
        ret = parse_u32(v, &a->rd.pid);
        a->rd.filter_pid = true;
    } else if (IS("from") || IS("to")) {
        want = "a time: 1500, 20us, 1.5ms, 2s";
        bool from = IS("from");
        ret = st_parse_duration_ns(v, from ? &a->rd.from_ns : &a->rd.to_ns);
        *(from ? &a->rd.filter_from : &a->rd.filter_to) = true;
    } else if (IS("align")) {
        want = "realtime";
        ret = strcmp(v, "realtime") ? -EINVAL : 0;
        a->rd.flags |= ST_READER_ALIGN_REALTIME;
    } else {
        snprintf(err, errlen,
                 "unknown argument '%.*s=' (trace, events, table, event, pair, select, tid, pid, from, to, align)",
                 (int)(klen > 100 ? 100 : klen), key);
        free(v);
        return -EINVAL;
    }
#undef IS
    if (ret < 0)
        snprintf(err, errlen, "bad %.*s '%.200s' (%s)", (int)klen, key, v, want);
    free(v);
    return ret < 0 ? -EINVAL : 0;
}

/* A bare word: a flag, or a trace. */
static int bare(struct st__sql_args *a, char *v)
{
    if (!strcmp(v, "no_default_pairs"))
        a->no_default_pairs = true;
    else if (!strcmp(v, "rotated"))
        a->rd.flags |= ST_READER_ROTATED;
    else if (!strcmp(v, "no_header"))
        a->rd.flags |= ST_READER_NO_HEADER;
    else
        return append(&a->traces, &a->ntraces, v);
    free(v);
    return 0;
}

static int parse_one(struct st__sql_args *a, const char *arg, char *err, size_t errlen)
{
    const char *s = arg;
    size_t n = strlen(arg);
    trim(&s, &n);
    if (n == 0) {
        snprintf(err, errlen, "an empty argument");
        return -EINVAL;
    }
    const char *eq = memchr(s, '=', n);
    char *v;
    int ret;
    if (s[0] == '\'' || s[0] == '"' || !eq) {
        if ((ret = value(s, n, arg, &v, err, errlen)) < 0)
            return ret;
        return s[0] == '\'' || s[0] == '"' ? append(&a->traces, &a->ntraces, v) : bare(a, v);
    }
    const char *key = s, *val = eq + 1;
    size_t klen = (size_t)(eq - s), vlen = (size_t)(s + n - val);
    trim(&key, &klen);
    trim(&val, &vlen);
    if ((ret = value(val, vlen, arg, &v, err, errlen)) < 0)
        return ret;
    return keyed(a, key, klen, v, err, errlen);
}

int st__sql_args_parse(struct st__sql_args *a, int argc, const char *const *argv, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->rd.struct_size = sizeof a->rd;
    if (errlen)
        err[0] = '\0';
    for (int i = 0; i < argc; i++) {
        int ret = parse_one(a, argv[i], err, errlen);
        if (ret == -ENOMEM && !err[0])
            snprintf(err, errlen, "out of memory");
        if (ret < 0)
            return ret;
    }
    if (a->ntraces == 0) {
        snprintf(err, errlen, "no trace given (simpletrace('PATH', ...))");
        return -EINVAL;
    }
    return 0;
}

void st__sql_args_free(struct st__sql_args *a)
{
    for (size_t i = 0; i < a->ntraces; i++)
        free(a->traces[i]);
    free(a->traces);
    for (size_t i = 0; i < a->nevents_files; i++)
        free(a->events_files[i]);
    free(a->events_files);
    for (size_t i = 0; i < a->npairs; i++)
        free(a->pairs[i]);
    free(a->pairs);
    free(a->table);
    free(a->event);
    free((char *)a->rd.events);
    memset(a, 0, sizeof *a);
}
