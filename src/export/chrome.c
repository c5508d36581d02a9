/*
 * The Chrome trace-event JSON writer (the "JSON Object Format" that
 * Perfetto UI and chrome://tracing load):
 *
 *   {"traceEvents":[
 *   {"name":"thread_name","ph":"M","pid":P,"tid":T,"args":{"name":"thread T"}},
 *   {"name":"job","cat":"simpletrace","ph":"B","ts":12.345,"pid":P,"tid":T,"args":{...}},
 *   {"name":"job","cat":"simpletrace","ph":"E","ts":13.000,"pid":P,"tid":T,"args":{...}},
 *   {"name":"cache_lookup","cat":"simpletrace","ph":"i","s":"t","ts":...,"args":{...}},
 *   {"name":"dropped","cat":"simpletrace","ph":"i","s":"t","ts":...,"args":{"count":N}},
 *   {"name":"process_name","ph":"M","pid":P,"tid":P,"args":{"name":"unknown-program (trace NAME)"}}
 *   ],
 *   "displayTimeUnit":"ns","otherData":{...}}
 *
 * One event per line, in record order (viewers sort by time). tid is the
 * record's pid field (a thread id). pid is the process id a trace's
 * description records (simpletrace's own traces), and process_name its
 * program. A trace without one (QEMU's) does not say its process, and
 * every event must carry a pid before the whole trace is seen: pid is then
 * the first record's thread id, used as a grouping id, and the
 * process_name, written at the end, says what it is: "unknown-program
 * (trace NAME)" when it is also the lowest thread id of the trace (the
 * main thread's id is the process id, when the main thread traced), else
 * that the process id is not recorded; otherData says the same in words.
 * A call is a B/E pair: B carries the begin record's arguments, E the end
 * record's (the viewers merge them); a frame we close ourselves (never
 * ended, closed early) has "args":{"unfinished":true}.
 * A keyed span (a begin and an end matched by an argument's value, often on
 * two threads) is a nestable async pair, each on its own record's thread:
 *
 *   {"name":"request","cat":"simpletrace","ph":"b","ts":...,"pid":P,"tid":T1,"id":"0x1","args":{...}},
 *   {"name":"request","cat":"simpletrace","ph":"e","ts":...,"pid":P,"tid":T2,"id":"0x1","args":{...}}
 *
 * Viewers match "b" and "e" by category and id, so every span gets an id of
 * its own (a counter over the export: two spans of one key, one process's
 * and another's, never share one), and each is drawn on its own async row.
 * A span the engine ends itself (its key began again, or it never ended)
 * ends on its begin's thread with "args":{"unfinished":true}; an end whose
 * record is earlier than its begin (threads of two traces whose clocks
 * disagree) is put at the begin's time, so no span has a negative length.
 *
 * Numbers are printed from the integers, never through a double:
 *   - "ts" is microseconds with exactly three decimals: the ns timestamp as
 *     recorded, split at the thousands (1234567 ns -> 1234.567);
 *   - integer arguments are JSON numbers when |v| <= 2^53 (exact in every
 *     JSON reader), and decimal strings beyond ("18446744073709551615"),
 *     signed or unsigned as declared; bool arguments are true/false;
 *   - pointers are strings "0x..." (lowercase hex, as `simpletrace print`).
 * Strings are escaped by the shared JSON escaper (json_escape.h: ", \,
 * control characters; valid UTF-8 kept, each byte of an invalid sequence
 * as \u00XX, its Latin-1 reading), so the file is always valid UTF-8 and
 * valid JSON.
 *
 * Output goes through one buffer (1 MiB, grown only for a record longer
 * than that) written with write(); a file is written under a temporary
 * name next to it and renamed at the end.
 */
#include <simpletrace/version.h>

#include "export_internal.h"
#include "json_escape.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define BUF_BYTES (1u << 20)
#define JSON_EXACT_MAX (UINT64_C(1) << 53) /* integers up to this are exact as JSON numbers */
#define CATEGORY ",\"cat\":\"simpletrace\""

enum { ARG_SIGNED = 1, ARG_BOOL = 2 };

/* How one catalog event is printed: its head and argument keys, escaped once. */
struct ev_fmt {
    char *head;                          /* {"name":"NAME","cat":...,"ph":"i","s":"t","ts": */
    size_t head_len;
    char *key[ST_READER_MAX_ARGS];       /* "ARG": */
    size_t key_len[ST_READER_MAX_ARGS];
    uint8_t flags[ST_READER_MAX_ARGS];   /* ARG_SIGNED, ARG_BOOL */
};

/* How one function's B and E events start, and its async b and e events (keyed spans). */
struct fn_fmt {
    char *begin, *end; /* {"name":"F","cat":...,"ph":"B","ts": (and "E") */
    size_t begin_len, end_len;
    char *abegin, *aend; /* {"name":"F","cat":...,"ph":"b","ts": (and "e"), made at its first keyed span */
    size_t abegin_len, aend_len;
};

struct chrome {
    int fd;                  /* standard output, or the file's temporary */
    bool to_stdout;
    struct st__ex_file file; /* the output file (not for standard output) */
    bool finished;           /* the closing text is written */
    char *buf;
    size_t len, cap;
    bool comma;              /* an event was written: the next needs a comma */
    struct ev_fmt *ev;       /* per catalog index: nev built, capev allocated (it grows with the catalog) */
    size_t nev, capev;
    struct fn_fmt *fn;       /* per function id: nfn built, capfn allocated */
    size_t nfn, capfn;
    uint64_t async_ids;      /* the last keyed span's id: each span gets the next */
};

/* --- the output buffer -------------------------------------------------------- */

static int flush_buf(struct st__ex_ctx *ctx, struct chrome *c)
{
    int ret = st__write_all(c->fd, c->buf, c->len);
    c->len = 0;
    return ret ? st__ex_fail(ctx, ret, "cannot write %s", c->to_stdout ? "standard output" : c->file.path) : 0;
}

/* Makes room for n more bytes; returns where they go, or NULL with *ret set. */
static char *room(struct st__ex_ctx *ctx, struct chrome *c, size_t n, int *ret)
{
    if (c->len + n > c->cap && (*ret = flush_buf(ctx, c)) < 0)
        return NULL;
    if (n > c->cap) { /* one record longer than the buffer */
        char *b = realloc(c->buf, n);
        if (!b) {
            *ret = -ENOMEM;
            return NULL;
        }
        c->buf = b;
        c->cap = n;
    }
    return c->buf + c->len;
}

/* --- JSON pieces, written at p, returning the new end -------------------------------- */

static char *put_mem(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

#define PUT_LIT(p, lit) put_mem((p), (lit), sizeof(lit) - 1)

static char *put_u64(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* ns as microseconds with three decimals, exactly. */
static char *put_ts(char *p, uint64_t ns)
{
    p = put_u64(p, ns / 1000);
    unsigned r = (unsigned)(ns % 1000);
    p[0] = '.';
    p[1] = (char)('0' + r / 100);
    p[2] = (char)('0' + r / 10 % 10);
    p[3] = (char)('0' + r % 10);
    return p + 4;
}

/* A malloc'ed "PREFIX" + escaped(s) + "SUFFIX" string. */
static char *make_str(const char *prefix, const char *s, const char *suffix, size_t *len)
{
    size_t n = strlen(s), pl = strlen(prefix), sl = strlen(suffix);
    char *out = malloc(pl + ST__JSON_ESCAPED_MAX(n) + sl + 1);
    if (!out)
        return NULL;
    char *p = put_mem(out, prefix, pl);
    p = st__json_escape(p, (const uint8_t *)s, n);
    p = put_mem(p, suffix, sl);
    *p = '\0';
    *len = (size_t)(p - out);
    return out;
}

static char *put_pid_tid(char *p, const struct st__ex_process *proc, uint32_t tid)
{
    p = PUT_LIT(p, ",\"pid\":");
    p = put_u64(p, proc->group);
    p = PUT_LIT(p, ",\"tid\":");
    return put_u64(p, tid);
}

/* An integer argument: a number when exact in JSON, else a decimal string. */
static char *put_int(char *p, uint64_t v, uint8_t flags)
{
    if (flags & ARG_BOOL)
        return v ? PUT_LIT(p, "true") : PUT_LIT(p, "false");
    bool neg = (flags & ARG_SIGNED) && (int64_t)v < 0;
    uint64_t mag = neg ? 0 - v : v;
    bool quote = mag > JSON_EXACT_MAX;
    if (quote)
        *p++ = '"';
    if (neg)
        *p++ = '-';
    p = put_u64(p, mag);
    if (quote)
        *p++ = '"';
    return p;
}

static char *put_hex(char *p, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[16];
    int n = 0;
    do
        tmp[n++] = hex[v & 15];
    while ((v >>= 4) != 0);
    p = PUT_LIT(p, "\"0x");
    while (n)
        *p++ = tmp[--n];
    *p++ = '"';
    return p;
}

/* Bytes the args object of rec may take. */
static size_t args_bound(const struct ev_fmt *f, const struct st_record *rec)
{
    size_t n = 32;
    for (unsigned i = 0; i < rec->nargs; i++)
        n += f->key_len[i] + 4 + (rec->args[i].kind == ST_VALUE_STRING ? ST__JSON_ESCAPED_MAX(rec->args[i].len) : 24);
    return n;
}

static char *put_args(char *p, const struct ev_fmt *f, const struct st_record *rec)
{
    p = PUT_LIT(p, ",\"args\":{");
    for (unsigned i = 0; i < rec->nargs; i++) {
        const struct st_value *v = &rec->args[i];
        if (i)
            *p++ = ',';
        p = put_mem(p, f->key[i], f->key_len[i]);
        if (v->kind == ST_VALUE_STRING) {
            p = st__json_string(p, (const uint8_t *)v->str, v->len);
        } else if (v->kind == ST_VALUE_POINTER) {
            p = put_hex(p, v->u64);
        } else {
            p = put_int(p, v->u64, f->flags[i]);
        }
    }
    *p++ = '}';
    return p;
}

/* Starts an event line: the comma after the previous one, a newline. */
static char *put_sep(char *p, struct chrome *c)
{
    if (c->comma)
        *p++ = ',';
    c->comma = true;
    *p++ = '\n';
    return p;
}

/* --- set-up ---------------------------------------------------------------------------- */

/* The formats of the catalog events and functions added since the last call (at open, all of them). */
static int build_formats(struct st__ex_ctx *ctx, struct chrome *c)
{
    if (st__ex_reserve(&c->ev, &c->capev, ctx->ncat, sizeof *c->ev) < 0 ||
        st__ex_reserve(&c->fn, &c->capfn, ctx->pairs.nfuncs, sizeof *c->fn) < 0)
        return -ENOMEM;
    for (; c->nev < ctx->ncat; c->nev++) {
        const struct st_event_info *ev = st_catalog_event(ctx->cat, c->nev);
        struct ev_fmt *f = &c->ev[c->nev];
        if (!(f->head = make_str("{\"name\":\"", ev->name, "\"" CATEGORY ",\"ph\":\"i\",\"s\":\"t\",\"ts\":",
                                 &f->head_len)))
            return -ENOMEM;
        for (unsigned a = 0; a < ev->nargs; a++) {
            if (!(f->key[a] = make_str("\"", ev->args[a].name, "\":", &f->key_len[a])))
                return -ENOMEM;
            bool is_bool = st_catalog_arg_encoding(ctx->cat, ev, a) == ST_ARG_ENCODING_BOOL;
            f->flags[a] = (uint8_t)((ev->args[a].is_signed ? ARG_SIGNED : 0) | (is_bool ? ARG_BOOL : 0));
        }
    }
    for (; c->nfn < ctx->pairs.nfuncs; c->nfn++) {
        const char *name = ctx->pairs.names[c->nfn];
        struct fn_fmt *f = &c->fn[c->nfn];
        f->begin = make_str("{\"name\":\"", name, "\"" CATEGORY ",\"ph\":\"B\",\"ts\":", &f->begin_len);
        f->end = make_str("{\"name\":\"", name, "\"" CATEGORY ",\"ph\":\"E\",\"ts\":", &f->end_len);
        if (!f->begin || !f->end)
            return -ENOMEM;
    }
    return 0;
}

static int chrome_grow(struct st__ex_ctx *ctx)
{
    return build_formats(ctx, ctx->out);
}

static int chrome_open(struct st__ex_ctx *ctx)
{
    struct chrome *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    ctx->out = c;
    c->fd = -1;
    st__ex_file_init(&c->file);
    const char *out = ctx->opts->output;
    if (!out || !*out)
        return st__ex_fail(ctx, -EINVAL, "no output file");
    c->to_stdout = strcmp(out, "-") == 0;
    if (!(c->buf = malloc(BUF_BYTES)))
        return -ENOMEM;
    c->cap = BUF_BYTES;
    int ret = build_formats(ctx, c);
    if (ret < 0)
        return ret;
    if (c->to_stdout)
        c->fd = STDOUT_FILENO;
    else if ((ret = st__ex_file_open(ctx, &c->file, out)) < 0)
        return ret;
    else
        c->fd = c->file.out.fd;
    char *p = room(ctx, c, 64, &ret);
    if (!p)
        return ret;
    c->len = (size_t)(PUT_LIT(p, "{\"traceEvents\":[") - c->buf);
    return 0;
}

/* --- events ------------------------------------------------------------------------------ */

/* A metadata event naming process proc or its thread tid. */
static int put_meta(struct st__ex_ctx *ctx, struct chrome *c, const char *what, const struct st__ex_process *proc,
                    uint32_t tid, const char *prefix, const char *name)
{
    int ret = 0;
    size_t n = strlen(name);
    char *p = room(ctx, c, 160 + strlen(prefix) + ST__JSON_ESCAPED_MAX(n), &ret);
    if (!p)
        return ret;
    p = put_sep(p, c);
    p = PUT_LIT(p, "{\"name\":\"");
    p = put_mem(p, what, strlen(what));
    p = PUT_LIT(p, "\",\"ph\":\"M\"");
    p = put_pid_tid(p, proc, tid);
    p = PUT_LIT(p, ",\"args\":{\"name\":\"");
    p = put_mem(p, prefix, strlen(prefix));
    p = st__json_escape(p, (const uint8_t *)name, n);
    p = PUT_LIT(p, "\"}}");
    c->len = (size_t)(p - c->buf);
    return 0;
}

static int chrome_thread_new(struct st__ex_ctx *ctx, struct st__ex_thread *t)
{
    struct chrome *c = ctx->out;
    char num[16];
    if (st__ex_pseudo_thread(t->tid))
        return put_meta(ctx, c, "thread_name", t->proc, t->tid, "", st__ex_pseudo_thread(t->tid));
    snprintf(num, sizeof num, "%u", (unsigned)t->tid);
    return put_meta(ctx, c, "thread_name", t->proc, t->tid, "thread ", num);
}

/* A process's name, once its lowest thread id is known (see the top). */
static int put_process_name(struct st__ex_ctx *ctx, struct chrome *c, const struct st__ex_process *proc)
{
    char name[600];
    if (!proc->started)
        return 0; /* no event, no process */
    st__ex_process_label(proc, name, sizeof name);
    return put_meta(ctx, c, "process_name", proc, proc->group, "", name);
}

/* One event: head (name, category, phase), ts, pid, tid, the async id (0: none), arguments of rec. */
static int put_event(struct st__ex_ctx *ctx, struct st__ex_thread *t, const char *head, size_t head_len,
                     const struct st_record *rec, uint64_t ts, uint64_t id)
{
    struct chrome *c = ctx->out;
    const struct ev_fmt *f = rec ? &c->ev[rec->event->index] : NULL;
    int ret = 0;
    char *p = room(ctx, c, head_len + 96 + (id ? 32 : 0) + (rec ? args_bound(f, rec) : 32), &ret);
    if (!p)
        return ret;
    p = put_sep(p, c);
    p = put_mem(p, head, head_len);
    p = put_ts(p, ts);
    p = put_pid_tid(p, t->proc, t->tid);
    if (id) {
        p = PUT_LIT(p, ",\"id\":");
        p = put_hex(p, id);
    }
    if (rec)
        p = put_args(p, f, rec);
    else if (ctx->closing)
        p = PUT_LIT(p, ",\"args\":{\"unfinished\":true}");
    *p++ = '}';
    c->len = (size_t)(p - c->buf);
    return 0;
}

static int chrome_enter(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                        uint32_t depth, uint64_t ts)
{
    struct chrome *c = ctx->out;
    (void)depth;
    return put_event(ctx, t, c->fn[func].begin, c->fn[func].begin_len, rec, ts, 0);
}

static int chrome_exit(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                       uint32_t depth, uint64_t ts)
{
    struct chrome *c = ctx->out;
    (void)depth;
    return put_event(ctx, t, c->fn[func].end, c->fn[func].end_len, rec, ts, 0);
}

static int chrome_instant(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                          uint32_t depth, uint64_t ts)
{
    struct chrome *c = ctx->out;
    const struct ev_fmt *f = &c->ev[rec->event->index];
    (void)depth;
    return put_event(ctx, t, f->head, f->head_len, rec, ts, 0);
}

static int chrome_async_begin(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                              struct st__ex_open *o, uint64_t ts)
{
    struct chrome *c = ctx->out;
    struct fn_fmt *f = &c->fn[o->func];
    const char *name = ctx->pairs.names[o->func];
    if (!f->abegin) { /* only keyed rules' functions need them (a function trace has thousands of others) */
        f->abegin = make_str("{\"name\":\"", name, "\"" CATEGORY ",\"ph\":\"b\",\"ts\":", &f->abegin_len);
        f->aend = make_str("{\"name\":\"", name, "\"" CATEGORY ",\"ph\":\"e\",\"ts\":", &f->aend_len);
        if (!f->abegin || !f->aend)
            return -ENOMEM;
    }
    o->user = ++c->async_ids;
    return put_event(ctx, t, f->abegin, f->abegin_len, rec, ts, o->user);
}

static int chrome_async_end(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                            const struct st__ex_open *o, uint64_t ts)
{
    struct chrome *c = ctx->out;
    return put_event(ctx, t, c->fn[o->func].aend, c->fn[o->func].aend_len, rec, ts < o->begin_ts ? o->begin_ts : ts,
                     o->user);
}

static int chrome_lost(struct st__ex_ctx *ctx, struct st__ex_thread *t, uint64_t count, uint32_t depth, uint64_t ts)
{
    struct chrome *c = ctx->out;
    (void)depth;
    int ret = 0;
    char *p = room(ctx, c, 200, &ret);
    if (!p)
        return ret;
    p = put_sep(p, c);
    p = PUT_LIT(p, "{\"name\":\"dropped\"" CATEGORY ",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
    p = put_ts(p, ts);
    p = put_pid_tid(p, t->proc, t->tid);
    p = PUT_LIT(p, ",\"args\":{\"count\":");
    p = put_int(p, count, 0);
    p = PUT_LIT(p, "}}");
    c->len = (size_t)(p - c->buf);
    return 0;
}

/* --- the end ------------------------------------------------------------------------------- */

/* Bytes of proc's program and trace names in the closing text, escaped. */
static size_t names_bound(const struct st__ex_process *proc)
{
    return ST__JSON_ESCAPED_MAX(strlen(proc->program)) + ST__JSON_ESCAPED_MAX(strlen(proc->trace ? proc->trace : "")) + 8;
}

/* The "program" and "pid" members of otherData for one process. */
static char *put_process_words(char *p, const struct st__ex_process *proc)
{
    if (proc->have_desc) {
        p = PUT_LIT(p, ",\"program\":\"");
        p = st__json_escape(p, (const uint8_t *)proc->program, strlen(proc->program));
        return PUT_LIT(p, "\",\"pid\":\"the process id the trace records\"");
    }
    return PUT_LIT(p, ",\"program\":\"not recorded in the trace\",\"pid\":\"the first record's thread id, a grouping id; "
                      "the process id only if it is also the lowest thread id and the main thread traced\"");
}

/* The closing text: the event array ends, then the trace's metadata (its traces' names when several). */
static int put_footer(struct st__ex_ctx *ctx, struct chrome *c)
{
    const char *name = ctx->opts->trace_name ? ctx->opts->trace_name : "-";
    size_t need = 600 + ST__JSON_ESCAPED_MAX(strlen(name));
    for (size_t i = 0; i < ctx->nprocs; i++)
        need += names_bound(ctx->procs[i]);
    int ret = 0;
    char *p = room(ctx, c, need, &ret);
    if (!p)
        return ret;
    p = PUT_LIT(p, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"generator\":\"simpletrace export " SIMPLETRACE_VERSION_STRING
                   "\",\"trace\":\"");
    p = st__json_escape(p, (const uint8_t *)name, strlen(name));
    *p++ = '"';
    if (ctx->nprocs == 1) {
        p = put_process_words(p, ctx->procs[0]);
    } else if (ctx->nprocs > 1) {
        p = PUT_LIT(p, ",\"processes\":[");
        for (size_t i = 0; i < ctx->nprocs; i++) {
            const char *trace = ctx->procs[i]->trace ? ctx->procs[i]->trace : "";
            p = PUT_LIT(p, "{\"trace\":\"");
            p = st__json_escape(p, (const uint8_t *)trace, strlen(trace));
            *p++ = '"';
            p = put_process_words(p, ctx->procs[i]);
            p = PUT_LIT(p, "},");
        }
        p[-1] = ']';
    }
    p = PUT_LIT(p, ",\"tid\":\"the record's pid field: the thread id (QEMU traces: the process id)\"}}\n");
    c->len = (size_t)(p - c->buf);
    c->finished = true;
    return flush_buf(ctx, c);
}

static int chrome_finish(struct st__ex_ctx *ctx)
{
    struct chrome *c = ctx->out;
    int ret = 0;
    for (size_t i = 0; i < ctx->nprocs && ret == 0; i++)
        ret = put_process_name(ctx, c, ctx->procs[i]);
    if (ret == 0)
        ret = put_footer(ctx, c);
    if (ret < 0 || c->to_stdout)
        return ret;
    c->fd = -1;
    return st__ex_file_install(ctx, &c->file);
}

static void chrome_discard(struct st__ex_ctx *ctx)
{
    struct chrome *c = ctx->out;
    if (!c)
        return;
    if (c->to_stdout && !c->finished && c->buf)
        put_footer(ctx, c); /* what was written stays valid JSON */
    st__ex_file_discard(&c->file);
    for (size_t i = 0; i < c->capev; i++) { /* zeroed beyond what was built */
        free(c->ev[i].head);
        for (unsigned a = 0; a < ST_READER_MAX_ARGS; a++)
            free(c->ev[i].key[a]);
    }
    for (size_t i = 0; i < c->capfn; i++) {
        free(c->fn[i].begin);
        free(c->fn[i].end);
        free(c->fn[i].abegin);
        free(c->fn[i].aend);
    }
    free(c->ev);
    free(c->fn);
    free(c->buf);
    free(c);
    ctx->out = NULL;
}

const struct st__ex_writer st__ex_chrome_writer = {
    .open = chrome_open,
    .grow = chrome_grow,
    .thread_new = chrome_thread_new,
    .enter = chrome_enter,
    .exit = chrome_exit,
    .instant = chrome_instant,
    .lost = chrome_lost,
    .async_begin = chrome_async_begin,
    .async_end = chrome_async_end,
    .finish = chrome_finish,
    .discard = chrome_discard,
};
