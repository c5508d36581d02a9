/*
 * The Parquet writer (encoder: parquet_enc.c; layout:
 * src/format/parquet_format.h), for DuckDB, Spark, Trino, ClickHouse and
 * pandas. The output is a directory:
 *
 *   records.parquet      every record, in the order the reader gives them:
 *                        ts, name, pid, tid, program, host, args
 *   events/NAME.parquet  one per event that has records: ts, pid, tid, then
 *                        each declared argument as a typed column
 *   spans.parquet        every call (a begin and its end, as the pairing
 *                        rules make them; nested or keyed): name, begin_ts,
 *                        end_ts, dur, pid, tid, key, unfinished
 *
 * With --partition=host,pid (or one of them) each process's files go to
 * host=H/pid=P/ (Hive's layout: engines read the values from the path),
 * and the partition columns are left out of the files, as Hive does.
 *
 * Columns:
 *   ts, begin_ts, end_ts  INT64 ns on the trace's clock (CLOCK_MONOTONIC of
 *                         the host that recorded it, as `print` shows them);
 *                         with --align=realtime ns since the Unix epoch (UTC),
 *                         typed TIMESTAMP(NANOS) with isAdjustedToUTC false:
 *                         DuckDB reads a UTC-flagged nanosecond timestamp as
 *                         TIMESTAMPTZ, cut to microseconds; unflagged, it keeps
 *                         every nanosecond (TIMESTAMP_NS). Each file's metadata
 *                         says which ("simpletrace.ts"). Spans' times are
 *                         the export's (raised where a thread's time went back)
 *   dur                   INT64 ns, end_ts - begin_ts
 *   name                  the event's (records) or the function's (spans)
 *                         name, dictionary-encoded
 *   pid                   INT64, the process id the trace's description
 *                         records; NULL for a trace that does not say
 *   tid                   INT64, the record's pid field as `print` shows it
 *                         (simpletrace's runtime: the thread id); NULL in
 *                         v0 traces, which have none
 *   program, host         strings from the description, NULL when not recorded
 *   args                  JSON, exactly the "args" object of `print --format=json`
 *                         (written from the decoded values: put_raw_args(),
 *                         render_args())
 *   key                   a keyed span's key as text (integers in decimal,
 *                         pointers 0x..., strings as they are); NULL for nested calls
 *   unfinished            BOOLEAN: the export closed the span itself (never
 *                         ended, closed early, key reused)
 *   arguments (events/)   signed integers INT64, unsigned ones and pointers
 *                         INT64 typed INT(64, unsigned) (UBIGINT), chars
 *                         their number (signed or not as declared), bool
 *                         BOOLEAN, strings STRING; integers cut to their
 *                         declared size as `print` cuts them. An argument
 *                         named like a fixed column (ts, pid, tid, host) is
 *                         called arg_NAME.
 * Strings are valid UTF-8: each byte of an invalid sequence is its Latin-1
 * reading, as in print's JSON.
 *
 * Memory: each file holds one row group (ST__PQ_GROUP_ROWS rows, or less
 * when it grows past GROUP_BYTES); when all of them together pass
 * BUDGET_BYTES the largest are handed to the encoder's worker early (it
 * holds ST__PQ_IN_FLIGHT more at most). Per thread, the begin times of its
 * open calls.
 */
#include "export_internal.h"
#include "json_escape.h"
#include "parquet_enc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define GROUP_BYTES (16u << 20)   /* a file's row group is written out when it holds this much */
#define BUDGET_BYTES (96u << 20)  /* all files' row groups together: past this, the largest are written out */
#define CHECK_EVERY 8192u         /* rows between two looks at the budget */
#define ZSTD_LEVEL 1
#define NULL_PARTITION "__HIVE_DEFAULT_PARTITION__" /* Hive's name for a NULL partition value */

/* Columns of records.parquet, and of spans.parquet. */
enum { R_TS, R_NAME, R_PID, R_TID, R_PROGRAM, R_HOST, R_ARGS, R_COLS };
enum { S_NAME, S_BEGIN, S_END, S_DUR, S_PID, S_TID, S_KEY, S_UNFINISHED, S_COLS };
/* The fixed columns of an event's file. */
enum { E_TS, E_PID, E_TID, E_FIXED };
#define MAX_FIXED 8 /* the most of R_COLS, S_COLS, E_FIXED */

/* One file with where it is. */
struct pq_out {
    char *path;                 /* under the output directory */
    struct st__pq_file *f;
    int col[MAX_FIXED];         /* column index of each fixed column (R_*, S_*, E_*), -1 when left out */
    uint8_t kind[ST_READER_MAX_ARGS]; /* an event's file: each argument's column kind (enum st__pq_kind) */
};

/* The files of one partition (the whole export without --partition). */
struct pq_set {
    char *dir;                  /* "" or "host=H/pid=P/" */
    bool events_dir;            /* its events/ directory exists */
    struct pq_out records, spans;
    struct pq_out *events;      /* by catalog index; f NULL until the event's first record */
    size_t nevents;
};

struct pq_thread {
    uint64_t *begin;            /* begin time of each open call, by depth */
    uint32_t cap;
};

/*
 * One event's args object as print --format=json writes it: each argument's
 * key and how its value is typed. Made at the event's first record and
 * never changed: the worker thread reads it (render_args()).
 */
struct args_fmt {
    unsigned nargs;
    char *keys;                          /* "\"a\":" ",\"b\":" ... back to back */
    uint16_t key_off[ST_READER_MAX_ARGS], key_len[ST_READER_MAX_ARGS];
    uint8_t json[ST_READER_MAX_ARGS];    /* enum json_kind */
    struct st_arg_info arg[ST_READER_MAX_ARGS]; /* copies of the declaration's (st_arg_value()) */
    size_t bound;                        /* the object's most bytes, strings' bodies left out */
};

/* What an args value is in the args column's bytes (put_raw_args()). */
enum raw_kind { RAW_NUMBER, RAW_POINTER, RAW_STRING };

/* How print's JSON types a number (src/reader/formatter.c, put_json_value()). */
enum json_kind { JSON_UNSIGNED, JSON_SIGNED, JSON_BOOL, JSON_CHAR };

struct parquet {
    struct st__ex_dir out;
    struct st__pq_shared *sh;
    struct args_fmt **afmt;     /* by catalog index: how print's JSON writes the event's args */
    size_t nafmt;
    struct args_fmt *dropped;   /* ... a dropped record's */
    enum st__pq_kind ts_kind;
    unsigned partition;         /* ST_EXPORT_PARTITION_* */
    struct pq_set **sets;
    size_t nsets;
    struct pq_set **proc_set;   /* by process index, NULL until its first row */
    size_t nproc_set;
    struct pq_thread *th;       /* by thread index */
    size_t nth, capth;
    unsigned countdown;         /* rows until the next look at the budget */
};

/* --- the directory ----------------------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool is_pq_file(const char *name)
{
    return ends_with(name, ".parquet");
}

static bool is_pq_dir(const char *name)
{
    return strcmp(name, "events") == 0 || strncmp(name, "host=", 5) == 0 || strncmp(name, "pid=", 4) == 0;
}

static const struct st__ex_dir_kind pq_dir = {.what = "a Parquet export's file (*.parquet, events/, host=*/, pid=*/)",
                                              .ours = is_pq_file,
                                              .ours_dir = is_pq_dir};

/* Creates dir (relative to the output) unless it exists. */
static int make_dir(struct st__ex_ctx *ctx, struct parquet *pq, const char *dir)
{
    if (mkdirat(pq->out.dirfd, dir, 0777) == 0 || errno == EEXIST)
        return 0;
    return st__ex_fail(ctx, -errno, "cannot create %s/%s", pq->out.tmp, dir);
}

/* --- the files ---------------------------------------------------------------------- */

static char *join(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

/* Appends s to buf (len room, *at used) with each byte but [A-Za-z0-9_-] (and '.' after the first) as %XX. */
static void put_escaped(char *buf, size_t len, size_t *at, const char *s, size_t n)
{
    for (size_t i = 0; i < n && *at + 4 < len; i++) {
        unsigned char c = (unsigned char)s[i];
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                     c == '-' || (c == '.' && i > 0);
        *at += (size_t)snprintf(buf + *at, len - *at, plain ? "%c" : "%%%02X", c);
    }
}

static const char *ts_meaning(const struct parquet *pq)
{
    return pq->ts_kind == ST__PQ_TIMESTAMP
               ? "ns since the Unix epoch, UTC (--align=realtime)"
               : "ns on the trace's clock: CLOCK_MONOTONIC of the host that recorded it";
}

/* Makes o a new file at path (owned by o) with cols. 0 or -errno. */
static int out_new(struct st__ex_ctx *ctx, struct parquet *pq, struct pq_out *o, char *path,
                   const struct st__pq_column *cols, size_t ncols)
{
    o->path = path;
    if (!path)
        return -ENOMEM;
    struct st__pq_kv kv[] = {{"simpletrace.ts", ts_meaning(pq)}};
    int ret = st__pq_new(&o->f, pq->sh, pq->out.dirfd, path, cols, ncols, kv, sizeof kv / sizeof *kv);
    (void)ctx;
    return ret;
}

/* Adds the fixed column c (named name, of kind) to cols unless the partition leaves it out; o->col[id] says where. */
static void add_col(struct st__pq_column *cols, size_t *n, struct pq_out *o, int id, const char *name,
                    enum st__pq_kind kind, bool optional, bool left_out)
{
    o->col[id] = left_out ? -1 : (int)*n;
    if (!left_out)
        cols[(*n)++] = (struct st__pq_column){.name = name, .kind = kind, .optional = optional};
}

static bool no_pid(const struct parquet *pq)
{
    return pq->partition & ST_EXPORT_PARTITION_PID;
}

static bool no_host(const struct parquet *pq)
{
    return pq->partition & ST_EXPORT_PARTITION_HOST;
}

static int render_args(void *arg, const uint8_t *raw, size_t n, struct st__growbuf *out);

static int records_new(struct st__ex_ctx *ctx, struct parquet *pq, struct pq_set *s)
{
    struct st__pq_column cols[R_COLS];
    size_t n = 0;
    struct pq_out *o = &s->records;
    add_col(cols, &n, o, R_TS, "ts", pq->ts_kind, false, false);
    add_col(cols, &n, o, R_NAME, "name", ST__PQ_DICT, false, false);
    add_col(cols, &n, o, R_PID, "pid", ST__PQ_I64, true, no_pid(pq));
    add_col(cols, &n, o, R_TID, "tid", ST__PQ_I64, true, false);
    add_col(cols, &n, o, R_PROGRAM, "program", ST__PQ_DICT, true, false);
    add_col(cols, &n, o, R_HOST, "host", ST__PQ_DICT, true, no_host(pq));
    add_col(cols, &n, o, R_ARGS, "args", ST__PQ_JSON, false, false);
    cols[n - 1].render = render_args; /* written as the values were read, rendered by the worker */
    cols[n - 1].unhashed = sizeof(struct args_fmt *); /* put_raw_args(): its format's address comes first */
    return out_new(ctx, pq, o, join(s->dir, "records.parquet", ""), cols, n);
}

static int spans_new(struct st__ex_ctx *ctx, struct parquet *pq, struct pq_set *s)
{
    struct st__pq_column cols[S_COLS];
    size_t n = 0;
    struct pq_out *o = &s->spans;
    add_col(cols, &n, o, S_NAME, "name", ST__PQ_DICT, false, false);
    add_col(cols, &n, o, S_BEGIN, "begin_ts", pq->ts_kind, false, false);
    add_col(cols, &n, o, S_END, "end_ts", pq->ts_kind, false, false);
    add_col(cols, &n, o, S_DUR, "dur", ST__PQ_I64, false, false);
    add_col(cols, &n, o, S_PID, "pid", ST__PQ_I64, true, no_pid(pq));
    add_col(cols, &n, o, S_TID, "tid", ST__PQ_I64, true, false);
    add_col(cols, &n, o, S_KEY, "key", ST__PQ_STRING, true, false);
    add_col(cols, &n, o, S_UNFINISHED, "unfinished", ST__PQ_BOOL, false, false);
    return out_new(ctx, pq, o, join(s->dir, "spans.parquet", ""), cols, n);
}

/* The column kind of argument i of ev. */
static enum st__pq_kind arg_kind(const struct st_catalog *cat, const struct st_event_info *ev, unsigned i)
{
    switch (st_catalog_arg_encoding(cat, ev, i)) {
    case ST_ARG_ENCODING_STRING: return ST__PQ_STRING;
    case ST_ARG_ENCODING_POINTER: return ST__PQ_U64;
    case ST_ARG_ENCODING_BOOL: return ST__PQ_BOOL;
    default: return ev->args[i].is_signed ? ST__PQ_I64 : ST__PQ_U64;
    }
}

/* An argument's column name: its own, or arg_NAME when a fixed column has that name. */
static void arg_column_name(const char *name, char *buf, size_t len)
{
    static const char *const taken[] = {"ts", "pid", "tid", "host"};
    for (size_t i = 0; i < sizeof taken / sizeof *taken; i++)
        if (strcmp(name, taken[i]) == 0) {
            snprintf(buf, len, "arg_%s", name);
            return;
        }
    snprintf(buf, len, "%s", name);
}

/* events/NAME.parquet of ev in set s, made at its first record. */
static int event_new(struct st__ex_ctx *ctx, struct parquet *pq, struct pq_set *s, const struct st_event_info *ev,
                     struct pq_out *o)
{
    struct st__pq_column cols[E_FIXED + ST_READER_MAX_ARGS];
    char names[ST_READER_MAX_ARGS][300];
    size_t n = 0;
    add_col(cols, &n, o, E_TS, "ts", pq->ts_kind, false, false);
    add_col(cols, &n, o, E_PID, "pid", ST__PQ_I64, true, no_pid(pq));
    add_col(cols, &n, o, E_TID, "tid", ST__PQ_I64, true, false);
    for (unsigned a = 0; a < ev->nargs; a++) {
        arg_column_name(ev->args[a].name, names[a], sizeof names[a]);
        o->kind[a] = (uint8_t)arg_kind(ctx->cat, ev, a);
        cols[n++] = (struct st__pq_column){.name = names[a], .kind = (enum st__pq_kind)o->kind[a]};
    }
    if (!s->events_dir) {
        char *dir = join(s->dir, "events", "");
        int ret = dir ? make_dir(ctx, pq, dir) : -ENOMEM;
        free(dir);
        if (ret < 0)
            return ret;
        s->events_dir = true;
    }
    char file[600];
    size_t at = 0;
    put_escaped(file, sizeof file - 16, &at, ev->name, ev->name_len);
    snprintf(file + at, sizeof file - at, ".parquet");
    return out_new(ctx, pq, o, join(s->dir, "events/", file), cols, n);
}

/* The partition directory of process p ("" without --partition). */
static void partition_dir(const struct parquet *pq, const struct st__ex_process *p, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    if (no_host(pq)) {
        at += (size_t)snprintf(buf + at, len - at, "host=");
        if (p->have_desc && p->host[0])
            put_escaped(buf, len, &at, p->host, strlen(p->host));
        else
            at += (size_t)snprintf(buf + at, len - at, NULL_PARTITION);
        at += (size_t)snprintf(buf + at, len - at, "/");
    }
    if (no_pid(pq)) {
        if (p->have_desc)
            snprintf(buf + at, len - at, "pid=%" PRIu32 "/", p->desc_pid);
        else
            snprintf(buf + at, len - at, "pid=" NULL_PARTITION "/");
    }
}

/* A new set of files in dir (copied). */
static int set_new(struct st__ex_ctx *ctx, struct parquet *pq, const char *dir, struct pq_set **out)
{
    struct pq_set **v = realloc(pq->sets, (pq->nsets + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    pq->sets = v;
    struct pq_set *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    pq->sets[pq->nsets++] = s;
    if (!(s->dir = strdup(dir)))
        return -ENOMEM;
    /* Each level of the partition path (host=H/, then host=H/pid=P/). */
    for (const char *slash = strchr(dir, '/'); slash; slash = strchr(slash + 1, '/')) {
        char sub[1200];
        snprintf(sub, sizeof sub, "%.*s", (int)(slash - dir), dir);
        int ret = make_dir(ctx, pq, sub);
        if (ret < 0)
            return ret;
    }
    int ret = records_new(ctx, pq, s);
    if (ret == 0)
        ret = spans_new(ctx, pq, s);
    *out = s;
    return ret;
}

/* The files of process p (found, or made at its first row). */
static int set_of(struct st__ex_ctx *ctx, struct parquet *pq, const struct st__ex_process *p, struct pq_set **out)
{
    if (p->index < pq->nproc_set && pq->proc_set[p->index]) {
        *out = pq->proc_set[p->index];
        return 0;
    }
    size_t cap = pq->nproc_set;
    if (st__ex_reserve(&pq->proc_set, &cap, p->index + 1, sizeof *pq->proc_set) < 0)
        return -ENOMEM;
    pq->nproc_set = cap;
    char dir[1200];
    partition_dir(pq, p, dir, sizeof dir);
    for (size_t i = 0; i < pq->nsets; i++)
        if (strcmp(pq->sets[i]->dir, dir) == 0) { /* another process of the same partition */
            *out = pq->proc_set[p->index] = pq->sets[i];
            return 0;
        }
    int ret = set_new(ctx, pq, dir, out);
    if (ret == 0)
        pq->proc_set[p->index] = *out;
    return ret;
}

/* --- memory ------------------------------------------------------------------------- */

/* Calls fn on every file. */
static void each_out(struct parquet *pq, void (*fn)(struct pq_out *o, void *arg), void *arg)
{
    for (size_t i = 0; i < pq->nsets; i++) {
        struct pq_set *s = pq->sets[i];
        fn(&s->records, arg);
        fn(&s->spans, arg);
        for (size_t e = 0; e < s->nevents; e++)
            fn(&s->events[e], arg);
    }
}

struct budget {
    size_t total;
    struct pq_out *largest;
    size_t largest_bytes;
};

static void measure(struct pq_out *o, void *arg)
{
    struct budget *b = arg;
    size_t n = o->f ? st__pq_buffered(o->f) : 0;
    b->total += n;
    if (n > b->largest_bytes) {
        b->largest_bytes = n;
        b->largest = o;
    }
}

/* A file that could not be written: the message names it (out of memory has the export's own). */
static int write_failed(struct st__ex_ctx *ctx, struct parquet *pq, const char *path, int err)
{
    return err == -ENOMEM ? err : st__ex_fail(ctx, err, "cannot write %s/%s", pq->out.tmp, path);
}

/*
 * Says whether the worker failed to write a file; writes out the largest
 * row groups until all of them hold less than half the budget.
 */
static int budget_check(struct st__ex_ctx *ctx, struct parquet *pq)
{
    int err;
    struct st__pq_file *bad = st__pq_failed(pq->sh, &err);
    if (bad)
        return write_failed(ctx, pq, st__pq_path(bad), err);
    for (;;) {
        struct budget b = {0};
        each_out(pq, measure, &b);
        if (b.total <= BUDGET_BYTES / 2 || !b.largest)
            return 0;
        int ret = st__pq_flush(b.largest->f);
        if (ret < 0)
            return write_failed(ctx, pq, b.largest->path, ret);
    }
}

/* Ends the row of o: the row group is written out when full. */
static int row_end(struct st__ex_ctx *ctx, struct parquet *pq, struct pq_out *o)
{
    int ret = st__pq_row_end(o->f);
    if (ret == 0 && st__pq_buffered(o->f) >= GROUP_BYTES)
        ret = st__pq_flush(o->f);
    if (ret < 0)
        return write_failed(ctx, pq, o->path, ret);
    if (--pq->countdown == 0) {
        pq->countdown = CHECK_EVERY;
        return budget_check(ctx, pq);
    }
    return 0;
}

/* --- values ---------------------------------------------------------------------------- */

static void put_opt_int(struct st__pq_file *f, int col, bool have, uint64_t v)
{
    if (col < 0)
        return;
    if (have)
        st__pq_int(f, (size_t)col, v);
    else
        st__pq_null(f, (size_t)col);
}

static void put_opt_dict(struct st__pq_file *f, int col, uint32_t id, const char *s)
{
    if (col < 0)
        return;
    if (s && s[0])
        st__pq_dict(f, (size_t)col, id, s);
    else
        st__pq_null(f, (size_t)col);
}

/* What one row says of its thread. */
struct who {
    const struct st__ex_process *proc;
    bool has_tid;
    uint32_t tid;
};

static struct who who_of(const struct st__ex_thread *t, const struct st_record *rec)
{
    /* A dropped record of a v0 trace (no rec here) sits on the engine's thread 1 of a process without thread ids. */
    bool has_tid = rec ? rec->has_pid : t->proc->have_tid || t->tid != 1;
    return (struct who){t->proc, has_tid, rec ? rec->pid : t->tid};
}

/* --- print's args object --------------------------------------------------------------- */

/*
 * The args object of print --format=json, written here from the decoded
 * record rather than formatted and cut out of print's line: the rules are
 * the formatter's (reader.h, "JSON values follow the declared type"):
 * strings escaped by the one JSON escaper, pointers "0x..." (lowercase, no
 * padding), bools true/false, chars {"value":N,"char":"C"} (null when C is
 * not printable ASCII), other integers in decimal, signed or not as
 * declared, cut to their declared size (st_arg_value). Argument names are
 * C identifiers: written as they are, as print does. The export tests
 * compare every row with print's.
 */

static char *put_lit(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

/* Decimal digits of v. */
static unsigned dec_len(uint64_t v)
{
    static const uint64_t pow10[] = {1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u,
                                     1000000000u, 10000000000u, 100000000000u, 1000000000000u,
                                     10000000000000u, 100000000000000u, 1000000000000000u,
                                     10000000000000000u, 100000000000000000u, 1000000000000000000u,
                                     10000000000000000000u};
    unsigned t = (unsigned)((64 - __builtin_clzll(v | 1)) * 1233) >> 12; /* bits * log10(2): the digits, or one more */
    t += v >= pow10[t];
    return t ? t : 1;
}

static char *put_u64(char *p, uint64_t v)
{
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    char *end = p + dec_len(v), *q = end;
    for (; v >= 100; v /= 100) {
        q -= 2;
        memcpy(q, pairs + v % 100 * 2, 2);
    }
    if (v >= 10)
        memcpy(q - 2, pairs + v * 2, 2);
    else
        q[-1] = (char)('0' + v);
    return end;
}

static char *put_i64(char *p, uint64_t v)
{
    if (v >> 63) {
        *p++ = '-';
        return put_u64(p, ~v + 1); /* the magnitude, 2^63 for INT64_MIN */
    }
    return put_u64(p, v);
}

static char *put_hex(char *p, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[16];
    int n = 0;
    do
        tmp[n++] = hex[v & 15];
    while ((v >>= 4) != 0);
    p = put_lit(p, "\"0x", 3);
    while (n)
        *p++ = tmp[--n];
    *p++ = '"';
    return p;
}

/*
 * A JSON string: runs of 8 bytes with nothing to escape copied as blocks,
 * the rest by the one escaper (st__json_escape): st__json_string()'s output.
 */
static char *put_json_string(char *p, const uint8_t *s, size_t n)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    size_t i = 0;
    *p++ = '"';
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        uint64_t quote = w ^ (ones * '"'), slash = w ^ (ones * '\\');
        /* a byte below 0x20 or above 0x7f, or a zero byte of quote or slash: not plain */
        uint64_t special = ((w - ones * 0x20) | w | ((quote - ones) & ~quote) | ((slash - ones) & ~slash)) & highs;
        if (special)
            break;
        memcpy(p, &w, 8);
        p += 8;
    }
    p = st__json_escape(p, s + i, n - i);
    *p++ = '"';
    return p;
}

/* Most bytes one non-string value takes: {"value":-9223372036854775808,"char":"\\"} */
#define VALUE_MAX 48

/* A key of at most KEY_COPY bytes is copied as a block of that size (one vector move, no call). */
#define KEY_COPY 32

/* The key k of a: the bytes after it are scratch, within the value's VALUE_MAX. */
static char *put_key(char *p, const struct args_fmt *a, unsigned k)
{
    if (a->key_len[k] > KEY_COPY)
        return put_lit(p, a->keys + a->key_off[k], a->key_len[k]);
    memcpy(p, a->keys + a->key_off[k], KEY_COPY);
    return p + a->key_len[k];
}

/* A new args format of n arguments: names, declarations, and encodings (enum st_arg_encoding). NULL when out of memory. */
static struct args_fmt *fmt_new(unsigned n, const char *const *names, const struct st_arg_info *args,
                                const unsigned *enc)
{
    struct args_fmt *a = calloc(1, sizeof *a);
    size_t total = 0;
    for (unsigned i = 0; i < n; i++)
        total += strlen(names[i]) + 4;
    if (!a || !(a->keys = calloc(1, total + KEY_COPY))) { /* KEY_COPY: put_key() reads that many bytes of the last key */
        free(a);
        return NULL;
    }
    char *p = a->keys;
    a->nargs = n;
    a->bound = 2;
    for (unsigned i = 0; i < n; i++) {
        char *start = p;
        if (i)
            *p++ = ',';
        *p++ = '"';
        p = put_lit(p, names[i], strlen(names[i]));
        p = put_lit(p, "\":", 2);
        a->key_off[i] = (uint16_t)(start - a->keys);
        a->key_len[i] = (uint16_t)(p - start);
        a->bound += a->key_len[i] + VALUE_MAX;
        a->arg[i] = args[i];
        switch (enc[i]) {
        case ST_ARG_ENCODING_BOOL: a->json[i] = JSON_BOOL; break;
        case ST_ARG_ENCODING_CHAR: a->json[i] = JSON_CHAR; break;
        default: a->json[i] = args[i].is_signed ? JSON_SIGNED : JSON_UNSIGNED;
        }
    }
    return a;
}

/* The args format of event ev (made at its first record). NULL when out of memory. */
static const struct args_fmt *args_fmt_of(struct st__ex_ctx *ctx, struct parquet *pq, const struct st_event_info *ev)
{
    if (ev->index < pq->nafmt && pq->afmt[ev->index])
        return pq->afmt[ev->index];
    if (ev->index >= pq->nafmt) {
        size_t cap = pq->nafmt;
        if (st__ex_reserve(&pq->afmt, &cap, (size_t)ev->index + 1, sizeof *pq->afmt) < 0)
            return NULL;
        memset(pq->afmt + pq->nafmt, 0, (cap - pq->nafmt) * sizeof *pq->afmt);
        pq->nafmt = cap;
    }
    const char *names[ST_READER_MAX_ARGS];
    unsigned enc[ST_READER_MAX_ARGS];
    for (unsigned i = 0; i < ev->nargs; i++) {
        names[i] = ev->args[i].name;
        enc[i] = (unsigned)st_catalog_arg_encoding(ctx->cat, ev, i);
    }
    return pq->afmt[ev->index] = fmt_new(ev->nargs, names, ev->args, enc);
}

/* A dropped record's args format: its event's argument (the count), or "count" if it declares none. */
static const struct args_fmt *dropped_fmt(struct st__ex_ctx *ctx, struct parquet *pq)
{
    const struct st_event_info *ev = st_catalog_dropped(ctx->cat);
    static const struct st_arg_info count = {.name = "count", .kind = ST_VALUE_INTEGER, .size = 8};
    static const char *const name = "count";
    static const unsigned enc = ST_ARG_ENCODING_INTEGER;
    if (!pq->dropped)
        pq->dropped = ev->nargs ? fmt_new(1, &ev->args[0].name, ev->args, &enc) : fmt_new(1, &name, &count, &enc);
    return pq->dropped;
}

static char *put_json_char(char *p, const struct st_arg_info *arg, uint64_t v)
{
    p = put_lit(p, "{\"value\":", 9);
    p = arg->is_signed ? put_i64(p, v) : put_u64(p, v);
    p = put_lit(p, ",\"char\":", 8);
    uint8_t c = (uint8_t)v;
    p = c >= 0x20 && c < 0x7f ? st__json_string(p, &c, 1) : put_lit(p, "null", 4);
    *p++ = '}';
    return p;
}

/*
 * The args column holds each row's values as they were read, in a few
 * bytes: its args format (a pointer), then per argument a raw_kind byte and
 * the value (a uint64, or a string's uint32 length and bytes), host order.
 * The worker turns them into print's JSON when it encodes the page
 * (render_args()): the caller's thread only copies them.
 */
static int put_raw_args(struct st__pq_file *f, size_t col, const struct args_fmt *a, const struct st_value *v)
{
    unsigned nargs = a->nargs; /* a local: the byte stores below could alias a->nargs */
    size_t bound = sizeof a + nargs * 9u;
    for (unsigned i = 0; i < nargs; i++)
        if (v[i].kind == ST_VALUE_STRING)
            bound += v[i].len;
    char *start = st__pq_text_room(f, col, bound), *p = start;
    if (!p)
        return -ENOMEM;
    p = put_lit(p, (const char *)&a, sizeof a);
    for (unsigned i = 0; i < nargs; i++) {
        enum st_value_kind kind = v[i].kind;
        uint64_t x = v[i].u64;
        if (kind == ST_VALUE_STRING) {
            uint32_t n = v[i].len;
            const char *str = v[i].str;
            *p++ = RAW_STRING;
            p = put_lit(put_lit(p, (const char *)&n, 4), str, n);
        } else {
            *p++ = kind == ST_VALUE_POINTER ? RAW_POINTER : RAW_NUMBER;
            p = put_lit(p, (const char *)&x, 8);
        }
    }
    st__pq_text_done(f, col, (size_t)(p - start));
    return 0;
}

/* rec's args into column col of f (print's JSON, once the worker renders it). 0 or -ENOMEM. */
static int put_args(struct st__ex_ctx *ctx, struct parquet *pq, struct st__pq_file *f, size_t col,
                    const struct st_record *rec)
{
    const struct args_fmt *a = args_fmt_of(ctx, pq, rec->event);
    return a ? put_raw_args(f, col, a, rec->args) : -ENOMEM;
}

/* The args column's renderer (the worker's): raw (n bytes, put_raw_args()) as print --format=json's args object. */
static int render_args(void *arg, const uint8_t *raw, size_t n, struct st__growbuf *out)
{
    const struct args_fmt *a;
    (void)arg;
    memcpy(&a, raw, sizeof a);
    char *start = (char *)st__growbuf_room(out, a->bound + ST__JSON_ESCAPED_MAX(n)), *p = start;
    if (!p)
        return -ENOMEM;
    const uint8_t *q = raw + sizeof a;
    *p++ = '{';
    for (unsigned i = 0; i < a->nargs; i++) {
        p = put_key(p, a, i);
        uint8_t kind = *q++;
        uint64_t x;
        if (kind == RAW_STRING) {
            uint32_t len;
            memcpy(&len, q, 4);
            p = put_json_string(p, q + 4, len);
            q += 4 + len;
            continue;
        }
        memcpy(&x, q, 8);
        q += 8;
        if (kind == RAW_POINTER) {
            p = put_hex(p, x);
            continue;
        }
        x = st_arg_value(&a->arg[i], x);
        switch (a->json[i]) {
        case JSON_SIGNED: p = put_i64(p, x); break;
        case JSON_BOOL: p = x ? put_lit(p, "true", 4) : put_lit(p, "false", 5); break;
        case JSON_CHAR: p = put_json_char(p, &a->arg[i], x); break;
        default: p = put_u64(p, x);
        }
    }
    *p++ = '}';
    st__growbuf_commit(out, (size_t)(p - start));
    return 0;
}

/* A row of records.parquet: rec, or (rec NULL) a dropped record of count events. */
static int record_row(struct st__ex_ctx *ctx, struct parquet *pq, struct pq_set *s, const struct st__ex_thread *t,
                      const struct st_record *rec, uint64_t count, uint64_t ts)
{
    struct pq_out *o = &s->records;
    struct st__pq_file *f = o->f;
    struct who w = who_of(t, rec);
    const struct st_event_info *ev = rec ? rec->event : st_catalog_dropped(ctx->cat);
    st__pq_int(f, (size_t)o->col[R_TS], rec ? rec->timestamp_ns : ts);
    st__pq_dict(f, (size_t)o->col[R_NAME], ev->index, ev->name);
    put_opt_int(f, o->col[R_PID], w.proc->have_desc, w.proc->desc_pid);
    put_opt_int(f, o->col[R_TID], w.has_tid, w.tid);
    put_opt_dict(f, o->col[R_PROGRAM], (uint32_t)w.proc->index, w.proc->have_desc ? w.proc->program : NULL);
    put_opt_dict(f, o->col[R_HOST], (uint32_t)w.proc->index, w.proc->have_desc ? w.proc->host : NULL);
    const struct args_fmt *drop = rec ? NULL : dropped_fmt(ctx, pq);
    struct st_value counted = {.kind = ST_VALUE_INTEGER, .u64 = count};
    int ret = rec ? put_args(ctx, pq, f, (size_t)o->col[R_ARGS], rec)
              : drop ? put_raw_args(f, (size_t)o->col[R_ARGS], drop, &counted)
                     : -ENOMEM;
    if (ret < 0)
        return ret;
    return row_end(ctx, pq, o);
}

/* One argument into its typed column. */
static void put_arg(struct st__pq_file *f, size_t col, enum st__pq_kind kind, const struct st_arg_info *a,
                    const struct st_value *v)
{
    if (v->kind == ST_VALUE_STRING) {
        if (kind == ST__PQ_STRING)
            st__pq_text(f, col, v->str, v->len);
        else
            st__pq_int(f, col, 0); /* a string where the declaration says a number: cannot be decoded so */
        return;
    }
    uint64_t x = st_arg_value(a, v->u64);
    if (kind == ST__PQ_STRING) { /* v0 traces store strings as pointers */
        char hex[24];
        int n = snprintf(hex, sizeof hex, "0x%" PRIx64, x);
        st__pq_text(f, col, hex, (size_t)n);
    } else if (kind == ST__PQ_BOOL) {
        st__pq_bool(f, col, x != 0);
    } else {
        st__pq_int(f, col, x);
    }
}

/* A row of events/NAME.parquet for rec (or a dropped record of count events). */
static int event_row(struct st__ex_ctx *ctx, struct parquet *pq, struct pq_set *s, const struct st__ex_thread *t,
                     const struct st_record *rec, uint64_t count, uint64_t ts)
{
    const struct st_event_info *ev = rec ? rec->event : st_catalog_dropped(ctx->cat);
    if (ev->index >= s->nevents) {
        size_t cap = s->nevents;
        if (st__ex_reserve(&s->events, &cap, (size_t)ev->index + 1, sizeof *s->events) < 0)
            return -ENOMEM;
        s->nevents = cap;
    }
    struct pq_out *o = &s->events[ev->index];
    int ret = o->f ? 0 : event_new(ctx, pq, s, ev, o);
    if (ret < 0)
        return ret;
    struct st__pq_file *f = o->f;
    struct who w = who_of(t, rec);
    st__pq_int(f, (size_t)o->col[E_TS], rec ? rec->timestamp_ns : ts);
    put_opt_int(f, o->col[E_PID], w.proc->have_desc, w.proc->desc_pid);
    put_opt_int(f, o->col[E_TID], w.has_tid, w.tid);
    size_t col = (size_t)(o->col[E_TID] + 1);
    for (unsigned a = 0; a < ev->nargs; a++, col++) {
        struct st_value dropped = {.kind = ST_VALUE_INTEGER, .u64 = count};
        put_arg(f, col, (enum st__pq_kind)o->kind[a], &ev->args[a], rec ? &rec->args[a] : &dropped);
    }
    return row_end(ctx, pq, o);
}

/* A record (or a dropped record of count events): its row in records.parquet and in its event's file. */
static int record(struct st__ex_ctx *ctx, const struct st__ex_thread *t, const struct st_record *rec, uint64_t count,
                  uint64_t ts)
{
    struct parquet *pq = ctx->out;
    struct pq_set *s;
    int ret = set_of(ctx, pq, t->proc, &s);
    if (ret == 0)
        ret = record_row(ctx, pq, s, t, rec, count, ts);
    return ret ? ret : event_row(ctx, pq, s, t, rec, count, ts);
}

/* A key as text: integers in decimal (as declared), pointers in hex, strings as they are. */
static void key_text(const struct st__ex_open *o, char *buf, size_t len)
{
    const struct st_arg_info *a = o->arg;
    uint64_t v = st_arg_value(a, o->value);
    if (a->kind == ST_VALUE_POINTER)
        snprintf(buf, len, "0x%" PRIx64, v);
    else if (a->is_signed)
        snprintf(buf, len, "%" PRId64, (int64_t)v);
    else
        snprintf(buf, len, "%" PRIu64, v);
}

/* A row of spans.parquet. key: NULL for a nested call, else the keyed span. */
static int span_row(struct st__ex_ctx *ctx, const struct st__ex_thread *t, uint32_t func, uint64_t begin,
                    uint64_t end, const struct st__ex_open *key, bool unfinished)
{
    struct parquet *pq = ctx->out;
    struct pq_set *s;
    int ret = set_of(ctx, pq, t->proc, &s);
    if (ret < 0)
        return ret;
    struct pq_out *o = &s->spans;
    struct st__pq_file *f = o->f;
    st__pq_dict(f, (size_t)o->col[S_NAME], func, ctx->pairs.names[func]);
    st__pq_int(f, (size_t)o->col[S_BEGIN], begin);
    st__pq_int(f, (size_t)o->col[S_END], end);
    st__pq_int(f, (size_t)o->col[S_DUR], end - begin);
    put_opt_int(f, o->col[S_PID], t->proc->have_desc, t->proc->desc_pid);
    struct who w = who_of(t, NULL);
    put_opt_int(f, o->col[S_TID], w.has_tid, t->tid);
    if (!key) {
        st__pq_null(f, (size_t)o->col[S_KEY]);
    } else if (key->is_str) {
        st__pq_text(f, (size_t)o->col[S_KEY], key->str, strlen(key->str));
    } else {
        char text[32];
        key_text(key, text, sizeof text);
        st__pq_text(f, (size_t)o->col[S_KEY], text, strlen(text));
    }
    st__pq_bool(f, (size_t)o->col[S_UNFINISHED], unfinished);
    return row_end(ctx, pq, o);
}

/* --- the writer's callbacks ---------------------------------------------------------------- */

static int pq_open(struct st__ex_ctx *ctx)
{
    struct parquet *pq = calloc(1, sizeof *pq);
    if (!pq)
        return -ENOMEM;
    ctx->out = pq;
    pq->out.dirfd = -1; /* nothing to close before st__ex_dir_open() */
    pq->ts_kind = ctx->opts->realtime ? ST__PQ_TIMESTAMP : ST__PQ_I64;
    pq->partition = ctx->opts->partition;
    pq->countdown = CHECK_EVERY;
    int ret = st__pq_shared_new(&pq->sh, ZSTD_LEVEL, true);
    return ret ? ret : st__ex_dir_open(ctx, &pq->out, ctx->opts->output, &pq_dir);
}

static int pq_grow(struct st__ex_ctx *ctx)
{
    (void)ctx; /* tables per event grow at each event's first record */
    return 0;
}

static int pq_thread_new(struct st__ex_ctx *ctx, struct st__ex_thread *t)
{
    struct parquet *pq = ctx->out;
    if (st__ex_reserve(&pq->th, &pq->capth, t->index + 1, sizeof *pq->th) < 0)
        return -ENOMEM;
    pq->nth = t->index + 1;
    return 0;
}

static int pq_enter(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                    uint32_t depth, uint64_t ts)
{
    struct parquet *pq = ctx->out;
    struct pq_thread *pt = &pq->th[t->index];
    (void)func;
    if (depth >= pt->cap) {
        uint32_t cap = pt->cap ? pt->cap * 2 : 16;
        while (cap <= depth)
            cap *= 2;
        uint64_t *b = realloc(pt->begin, cap * sizeof *b);
        if (!b)
            return -ENOMEM;
        pt->begin = b;
        pt->cap = cap;
    }
    pt->begin[depth] = ts;
    return rec ? record(ctx, t, rec, 0, ts) : 0;
}

static int pq_exit(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                   uint32_t depth, uint64_t ts)
{
    struct parquet *pq = ctx->out;
    int ret = rec ? record(ctx, t, rec, 0, ts) : 0;
    return ret ? ret : span_row(ctx, t, func, pq->th[t->index].begin[depth], ts, NULL, ctx->closing);
}

static int pq_instant(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t depth,
                      uint64_t ts)
{
    (void)depth;
    return record(ctx, t, rec, 0, ts);
}

static int pq_lost(struct st__ex_ctx *ctx, struct st__ex_thread *t, uint64_t count, uint32_t depth, uint64_t ts)
{
    (void)depth;
    return record(ctx, t, NULL, count, ts);
}

static int pq_async_begin(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                          struct st__ex_open *o, uint64_t ts)
{
    (void)o;
    return record(ctx, t, rec, 0, ts);
}

static int pq_async_end(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                        const struct st__ex_open *o, uint64_t ts)
{
    int ret = rec ? record(ctx, t, rec, 0, ts) : 0;
    return ret ? ret : span_row(ctx, o->t, o->func, o->begin_ts, ts, o, rec == NULL);
}

static int pq_skipped(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint64_t ts)
{
    return record(ctx, t, rec, 0, ts);
}

static int pq_finish(struct st__ex_ctx *ctx)
{
    struct parquet *pq = ctx->out;
    struct pq_set *s;
    /* No record: the files of the trace's process, or of the whole export, still say what the columns are. */
    int ret = pq->nsets ? 0 : ctx->nprocs ? set_of(ctx, pq, ctx->procs[0], &s) : set_new(ctx, pq, "", &s);
    for (size_t i = 0; ret == 0 && i < pq->nsets; i++) {
        struct pq_set *set = pq->sets[i];
        struct pq_out *bad = NULL;
        int err = 0;
        if ((err = st__pq_finish(set->records.f)) < 0)
            bad = &set->records;
        else if ((err = st__pq_finish(set->spans.f)) < 0)
            bad = &set->spans;
        for (size_t e = 0; !bad && e < set->nevents; e++)
            if (set->events[e].f && (err = st__pq_finish(set->events[e].f)) < 0)
                bad = &set->events[e];
        if (bad)
            ret = write_failed(ctx, pq, bad->path, err);
    }
    return ret ? ret : st__ex_dir_install(ctx, &pq->out);
}

static void free_out(struct pq_out *o, void *arg)
{
    (void)arg;
    st__pq_free(o->f);
    free(o->path);
}

static void pq_discard(struct st__ex_ctx *ctx)
{
    struct parquet *pq = ctx->out;
    if (!pq)
        return;
    each_out(pq, free_out, NULL);
    for (size_t i = 0; i < pq->nsets; i++) {
        free(pq->sets[i]->events);
        free(pq->sets[i]->dir);
        free(pq->sets[i]);
    }
    free(pq->sets);
    free(pq->proc_set);
    for (size_t i = 0; i < pq->nth; i++)
        free(pq->th[i].begin);
    free(pq->th);
    for (size_t i = 0; i < pq->nafmt; i++)
        if (pq->afmt[i]) {
            free(pq->afmt[i]->keys);
            free(pq->afmt[i]);
        }
    free(pq->afmt);
    if (pq->dropped)
        free(pq->dropped->keys);
    free(pq->dropped);
    st__pq_shared_free(pq->sh); /* after the files: it waits for the worker */
    st__ex_dir_discard(&pq->out);
    free(pq);
    ctx->out = NULL;
}

const struct st__ex_writer st__ex_parquet_writer = {
    .open = pq_open,
    .grow = pq_grow,
    .thread_new = pq_thread_new,
    .enter = pq_enter,
    .exit = pq_exit,
    .instant = pq_instant,
    .lost = pq_lost,
    .async_begin = pq_async_begin,
    .async_end = pq_async_end,
    .skipped = pq_skipped,
    .finish = pq_finish,
    .discard = pq_discard,
};
