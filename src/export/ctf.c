/*
 * The CTF 1.8 writer (layout: src/format/ctf_format.h), for babeltrace2
 * and Trace Compass. CTF carries events, not calls, so every record is
 * written as it was recorded, paired or not: an event of its own class
 * with its arguments as typed fields, on its thread's stream, at its
 * (per-thread clamped) time. Frames the engine closes itself (never
 * ended, closed early) have no record and write nothing; a dropped record
 * is an event Dropped_Event(num_events_dropped), as `print` shows it, and
 * adds its count to the stream's events_discarded, so that babeltrace2
 * reports the loss between packets too (its packet ends with it). Calls
 * of a function trace (--functions) have no record: they are events
 * function_entry and function_exit(function, depth).
 *
 * Streaming: each thread fills one packet in memory (up to PACKET_BYTES,
 * or one event if longer) and appends it to its stream file when full,
 * opening the file just for that (O_APPEND): a few hundred packets per
 * million records, so thousands of threads need no open descriptors. When
 * all threads' packets together pass BUDGET_BYTES, every packet is written
 * out: memory stays bounded however many threads take turns.
 *
 * The metadata is written last, when the catalog's events (a catalog read
 * from the trace grows until its end; class ids are catalog indices, which
 * never move), the processes
 * (their names, known once the whole trace is read for a trace that does
 * not record them: the env block lists them) and the clock anchor are all
 * known. One clock serves all streams: its offset comes from the first
 * process with a clock anchor. The directory
 * is filled under a temporary name and renamed into place (output.c).
 */
#include <simpletrace/version.h>

#include "clock.h"
#include "ctf_format.h"
#include "export_internal.h"
#include "growbuf.h"
#include "utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define PACKET_BYTES (64u * 1024u)       /* a packet is written out when it would grow past this */
#define BUDGET_BYTES (8u * 1024u * 1024u) /* all open packets together: past this, all are written out */
#define FIRST_CAP 1024u                  /* a thread's first packet buffer */
#define STREAM_PREFIX "stream-"

/* How a field is written (ctf_format.h). */
enum field_kind { F_UINT, F_INT, F_BOOL, F_POINTER, F_STRING };

struct ctf_thread {
    uint8_t *buf;           /* the open packet: header and context (filled when written out), events */
    size_t len, cap;        /* len 0: no packet open */
    uint64_t ts_begin, ts_end;
    uint64_t seq_num;       /* packets written */
    uint64_t discarded;     /* events lost so far (its dropped records' counts) */
    uint32_t pid;
    char file[64];          /* its stream file ("" until its first packet) */
};

struct ctf {
    struct st__ex_dir out;
    uint8_t uuid[ST_CTF_UUID_BYTES];
    uint8_t *kinds;         /* per catalog event * ST_READER_MAX_ARGS: enum field_kind */
    size_t nkinds;          /* catalog events filled (ST_READER_MAX_ARGS entries each) */
    size_t kinds_bytes;     /* allocated */
    unsigned dropped_id;    /* Dropped_Event's class id: its catalog index (wherever the catalog puts it) */
    struct ctf_thread *th;  /* by thread index */
    size_t nth, capth;
    size_t buffered;        /* bytes in all open packets */
};

/* --- the directory ------------------------------------------------------------------ */

static bool is_ctf_file(const char *name)
{
    return strcmp(name, "metadata") == 0 || strncmp(name, STREAM_PREFIX, sizeof STREAM_PREFIX - 1) == 0;
}

static const struct st__ex_dir_kind ctf_dir = {.what = "a CTF trace's file (metadata, " STREAM_PREFIX "*)",
                                               .ours = is_ctf_file};

/*
 * The id of the process thread t belongs to, for its packets: the one
 * place that asks. Packets are written before the whole trace is read, so
 * it is the process's group (export_internal.h), as Chrome's pid: the
 * recorded pid, else its first record's thread.
 */
static uint32_t process_of(const struct st__ex_thread *t)
{
    return t->proc->group;
}

/* --- packets ------------------------------------------------------------------------- */

static inline void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static inline void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

/* Fills the packet's header and context and appends it to the thread's stream file. */
static int write_packet(struct st__ex_ctx *ctx, struct ctf *c, const struct st__ex_thread *t, struct ctf_thread *ct)
{
    uint8_t *p = ct->buf;
    put32(p + ST_CTF_PKT_MAGIC, ST_CTF_MAGIC);
    memcpy(p + ST_CTF_PKT_UUID, c->uuid, ST_CTF_UUID_BYTES);
    put32(p + ST_CTF_PKT_STREAM_ID, 0);
    put64(p + ST_CTF_PKT_STREAM_INSTANCE, t->index);
    put64(p + ST_CTF_PKT_TS_BEGIN, ct->ts_begin);
    put64(p + ST_CTF_PKT_TS_END, ct->ts_end);
    put64(p + ST_CTF_PKT_CONTENT_SIZE, (uint64_t)ct->len * 8);
    put64(p + ST_CTF_PKT_PACKET_SIZE, (uint64_t)ct->len * 8);
    put64(p + ST_CTF_PKT_SEQ_NUM, ct->seq_num++);
    put64(p + ST_CTF_PKT_DISCARDED, ct->discarded);
    put32(p + ST_CTF_PKT_PID, ct->pid);
    put32(p + ST_CTF_PKT_TID, t->tid);
    int flags = O_WRONLY | O_APPEND | O_CLOEXEC;
    if (!ct->file[0]) { /* its first packet: a new file, unless another process has a thread of this pid and tid */
        snprintf(ct->file, sizeof ct->file, STREAM_PREFIX "%u-%u", (unsigned)ct->pid, (unsigned)t->tid);
        if (faccessat(c->out.dirfd, ct->file, F_OK, 0) == 0)
            snprintf(ct->file, sizeof ct->file, STREAM_PREFIX "%u-%u-%zu", (unsigned)ct->pid, (unsigned)t->tid,
                     t->index);
        flags |= O_CREAT | O_EXCL;
    }
    int fd = openat(c->out.dirfd, ct->file, flags, 0644);
    if (fd < 0)
        return st__ex_fail(ctx, -errno, "cannot create %s/%s", c->out.tmp, ct->file);
    int ret = st__write_all(fd, ct->buf, ct->len);
    if (close(fd) != 0 && ret == 0)
        ret = -errno;
    c->buffered -= ct->len;
    ct->len = 0;
    return ret ? st__ex_fail(ctx, ret, "cannot write %s/%s", c->out.tmp, ct->file) : 0;
}

/* Writes out every open packet. */
static int write_all_packets(struct st__ex_ctx *ctx, struct ctf *c)
{
    int ret = 0;
    for (size_t i = 0; i < c->nth && ret == 0; i++)
        if (c->th[i].len)
            ret = write_packet(ctx, c, ctx->threads[i], &c->th[i]);
    return ret;
}

/*
 * Room for an event of need bytes at ts in t's packet: the packet is
 * written out first when the event would take it past PACKET_BYTES, a new
 * one started when none is open. Returns where the event goes, or NULL
 * with *ret set.
 */
static uint8_t *event_room(struct st__ex_ctx *ctx, const struct st__ex_thread *t, size_t need, uint64_t ts, int *ret)
{
    struct ctf *c = ctx->out;
    struct ctf_thread *ct = &c->th[t->index];
    if (ct->len && ct->len + need > PACKET_BYTES && (*ret = write_packet(ctx, c, t, ct)) < 0)
        return NULL;
    if (c->buffered + need > BUDGET_BYTES && (*ret = write_all_packets(ctx, c)) < 0)
        return NULL;
    if (!ct->len) {
        ct->len = ST_CTF_PKT_HEADER_BYTES;
        ct->ts_begin = ts;
        c->buffered += ST_CTF_PKT_HEADER_BYTES;
    }
    if (ct->len + need > ct->cap) {
        size_t cap = ct->cap ? ct->cap : FIRST_CAP;
        while (cap < ct->len + need)
            cap *= 2;
        uint8_t *b = realloc(ct->buf, cap);
        if (!b) {
            *ret = -ENOMEM;
            return NULL;
        }
        ct->buf = b;
        ct->cap = cap;
    }
    ct->ts_end = ts;
    return ct->buf + ct->len;
}

/* Counts n bytes written at event_room()'s pointer. */
static void event_done(struct ctf *c, struct ctf_thread *ct, size_t n)
{
    ct->len += n;
    c->buffered += n;
}

static uint8_t *put_header(uint8_t *p, uint32_t id, uint64_t ts)
{
    put32(p, id);
    put64(p + 4, ts);
    return p + ST_CTF_EVENT_HEADER_BYTES;
}

/* A string field: valid UTF-8 (utf8.h), a NUL byte inside (C strings have none) as U+FFFD, then the NUL. */
static uint8_t *put_string(uint8_t *p, const uint8_t *s, size_t n)
{
    const uint8_t *nul;
    while ((nul = memchr(s, 0, n)) != NULL) {
        p = st__utf8_repair(p, s, (size_t)(nul - s));
        memcpy(p, "\xef\xbf\xbd", 3);
        p += 3;
        n -= (size_t)(nul - s) + 1;
        s = nul + 1;
    }
    p = st__utf8_repair(p, s, n);
    *p++ = 0;
    return p;
}

/* Bytes the fields of rec may take. */
static size_t fields_bound(const struct st_record *rec)
{
    size_t n = 0;
    for (unsigned i = 0; i < rec->nargs; i++)
        n += rec->args[i].kind == ST_VALUE_STRING ? 3 * (size_t)rec->args[i].len + 1 : 24;
    return n;
}

static uint8_t *put_field(uint8_t *p, enum field_kind kind, const struct st_value *v)
{
    switch (kind) {
    case F_STRING:
        if (v->kind == ST_VALUE_STRING)
            return put_string(p, (const uint8_t *)v->str, v->len);
        return p + sprintf((char *)p, "0x%" PRIx64, v->u64) + 1; /* v0 stores strings as addresses */
    case F_BOOL:
        *p = v->u64 != 0;
        return p + 1;
    default:
        put64(p, v->u64);
        return p + 8;
    }
}

/* One record as an event of its class. */
static int put_record(struct st__ex_ctx *ctx, const struct st__ex_thread *t, const struct st_record *rec, uint64_t ts)
{
    struct ctf *c = ctx->out;
    int ret = 0;
    uint8_t *start = event_room(ctx, t, ST_CTF_EVENT_HEADER_BYTES + fields_bound(rec), ts, &ret);
    if (!start)
        return ret;
    unsigned id = rec->event->index;
    const uint8_t *kinds = &c->kinds[(size_t)id * ST_READER_MAX_ARGS];
    uint8_t *p = put_header(start, id, ts);
    for (unsigned i = 0; i < rec->nargs; i++)
        p = put_field(p, (enum field_kind)kinds[i], &rec->args[i]);
    event_done(c, &c->th[t->index], (size_t)(p - start));
    return 0;
}

/* --- the writer interface ---------------------------------------------------------------------- */

static enum field_kind declared_kind(const struct st_catalog *cat, const struct st_event_info *ev, unsigned i)
{
    switch (st_catalog_arg_encoding(cat, ev, i)) {
    case ST_ARG_ENCODING_STRING: return F_STRING;
    case ST_ARG_ENCODING_POINTER: return F_POINTER;
    case ST_ARG_ENCODING_BOOL: return F_BOOL;
    default: return ev->args[i].is_signed ? F_INT : F_UINT;
    }
}

/* A random (version 4) uuid: the trace's identity for readers that merge traces. */
static void make_uuid(uint8_t *u)
{
    size_t got = 0;
    while (got < ST_CTF_UUID_BYTES) {
        ssize_t n = getrandom(u + got, ST_CTF_UUID_BYTES - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    uint64_t x = st__clock_mono_ns() ^ (uint64_t)getpid() << 32; /* no entropy: still distinct per run */
    for (; got < ST_CTF_UUID_BYTES; got++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        u[got] = (uint8_t)x;
    }
    u[6] = (uint8_t)((u[6] & 0x0f) | 0x40);
    u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
}

/* The field kinds of the catalog events added since the last call (at open, all of them). */
static int build_kinds(struct st__ex_ctx *ctx, struct ctf *c)
{
    int ret = st__ex_reserve(&c->kinds, &c->kinds_bytes, ctx->ncat * ST_READER_MAX_ARGS, 1);
    if (ret < 0)
        return ret;
    for (; c->nkinds < ctx->ncat; c->nkinds++) {
        const struct st_event_info *ev = st_catalog_event(ctx->cat, c->nkinds);
        for (unsigned a = 0; a < ev->nargs; a++)
            c->kinds[c->nkinds * ST_READER_MAX_ARGS + a] = (uint8_t)declared_kind(ctx->cat, ev, a);
    }
    return 0;
}

static int ctf_grow(struct st__ex_ctx *ctx)
{
    return build_kinds(ctx, ctx->out);
}

static int ctf_open(struct st__ex_ctx *ctx)
{
    struct ctf *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    ctx->out = c;
    c->out.dirfd = -1;
    const char *out = ctx->opts->output;
    if (!out || !*out || strcmp(out, "-") == 0)
        return st__ex_fail(ctx, -EINVAL, "ctf output is a directory: give its name");
    c->dropped_id = st_catalog_dropped(ctx->cat)->index;
    int ret = build_kinds(ctx, c);
    if (ret < 0)
        return ret;
    make_uuid(c->uuid);
    return st__ex_dir_open(ctx, &c->out, out, &ctf_dir);
}

static int ctf_thread_new(struct st__ex_ctx *ctx, struct st__ex_thread *t)
{
    struct ctf *c = ctx->out;
    if (t->index == c->capth) {
        size_t cap = c->capth ? c->capth * 2 : 16;
        struct ctf_thread *v = realloc(c->th, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        c->th = v;
        c->capth = cap;
    }
    c->th[t->index] = (struct ctf_thread){.pid = process_of(t)};
    c->nth = t->index + 1;
    return 0;
}

/* A call of the function trace (it has no record): function_entry or function_exit, the function and depth. */
static int put_call(struct st__ex_ctx *ctx, const struct st__ex_thread *t, unsigned id, uint32_t func, uint32_t depth,
                    uint64_t ts)
{
    struct ctf *c = ctx->out;
    const char *name = ctx->pairs.names[func];
    size_t n = strlen(name);
    int ret = 0;
    uint8_t *start = event_room(ctx, t, ST_CTF_EVENT_HEADER_BYTES + 3 * n + 1 + 8, ts, &ret);
    if (!start)
        return ret;
    uint8_t *p = put_string(put_header(start, id, ts), (const uint8_t *)name, n);
    put64(p, depth);
    event_done(c, &c->th[t->index], (size_t)(p + 8 - start));
    return 0;
}

static int ctf_enter(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                     uint32_t depth, uint64_t ts)
{
    return rec ? put_record(ctx, t, rec, ts) : put_call(ctx, t, ST_CTF_ID_FUNCTION_ENTRY, func, depth, ts);
}

static int ctf_exit(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                    uint32_t depth, uint64_t ts)
{
    if (rec)
        return put_record(ctx, t, rec, ts);
    return ctx->closing ? 0 : put_call(ctx, t, ST_CTF_ID_FUNCTION_EXIT, func, depth, ts); /* what we close: no record */
}

static int ctf_instant(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t depth,
                       uint64_t ts)
{
    (void)depth;
    return put_record(ctx, t, rec, ts);
}

static int ctf_skipped(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint64_t ts)
{
    return put_record(ctx, t, rec, ts);
}

static int ctf_lost(struct st__ex_ctx *ctx, struct st__ex_thread *t, uint64_t count, uint32_t depth, uint64_t ts)
{
    struct ctf *c = ctx->out;
    struct ctf_thread *ct = &c->th[t->index];
    (void)depth;
    /* Readers report a loss as the growth of events_discarded from one packet to the next: the packet
     * before holds what came before the loss (an empty one at the start of the stream), the next one
     * ends with the dropped record. */
    int ret = 0;
    if (!ct->len && ct->seq_num == 0 && !event_room(ctx, t, 0, ts, &ret))
        return ret;
    if (ct->len && (ret = write_packet(ctx, c, t, ct)) < 0)
        return ret;
    uint8_t *start = event_room(ctx, t, ST_CTF_EVENT_HEADER_BYTES + 8, ts, &ret);
    if (!start)
        return ret;
    uint8_t *p = put_header(start, c->dropped_id, ts);
    put64(p, count);
    event_done(c, ct, ST_CTF_EVENT_HEADER_BYTES + 8);
    ct->discarded += count;
    return write_packet(ctx, c, t, ct); /* readers see the loss at this packet's end */
}

/* --- the metadata --------------------------------------------------------------------------------- */

/* s as a TSDL string literal's body: valid UTF-8, '"' and '\' escaped, control characters in octal. */
static void tsdl_string(struct st__growbuf *b, const char *s)
{
    size_t n = strlen(s);
    uint8_t *fixed = malloc(ST__UTF8_REPAIRED_MAX(n) + 1);
    if (!fixed) {
        b->failed = true;
        return;
    }
    uint8_t *end = st__utf8_repair(fixed, (const uint8_t *)s, n);
    for (const uint8_t *p = fixed; p < end; p++) {
        if (*p == '"' || *p == '\\')
            st__growbuf_printf(b, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            st__growbuf_printf(b, "\\%03o", *p);
        else
            st__growbuf_put(b, p, 1);
    }
    free(fixed);
}

/* KEY = "VALUE"; in the env block. */
static void env_string(struct st__growbuf *b, const char *key, const char *value)
{
    st__growbuf_printf(b, "\t%s = \"", key);
    tsdl_string(b, value);
    st__growbuf_puts(b, "\";\n");
}

/* The tracer, then each process (in order of first record): processK = its name, processK_pid = the id its
 * packets carry, processK_cmdline when recorded. */
static void put_env(struct st__ex_ctx *ctx, struct st__growbuf *b)
{
    st__growbuf_puts(b, "env {\n");
    env_string(b, "tracer_name", "simpletrace");
    st__growbuf_printf(b, "\ttracer_major = %d;\n\ttracer_minor = %d;\n\ttracer_patch = %d;\n",
                       SIMPLETRACE_VERSION_MAJOR, SIMPLETRACE_VERSION_MINOR, SIMPLETRACE_VERSION_PATCH);
    env_string(b, "trace_name", st__ex_basename(ctx->opts->trace_name));
    st__growbuf_printf(b, "\tprocesses = %zu;\n", ctx->nprocs);
    for (size_t k = 0; k < ctx->nprocs; k++) {
        const struct st__ex_process *p = ctx->procs[k];
        char key[48], label[600];
        st__ex_process_label(p, label, sizeof label);
        snprintf(key, sizeof key, "process%zu", k);
        env_string(b, key, label);
        st__growbuf_printf(b, "\tprocess%zu_pid = %u;\n", k, (unsigned)p->group);
        snprintf(key, sizeof key, "process%zu_cmdline", k);
        if (p->have_desc && p->cmdline[0])
            env_string(b, key, p->cmdline);
    }
    st__growbuf_puts(b, "};\n\n");
}

/* The first process with a clock anchor (on one machine they agree: both clocks are system-wide). */
static const struct st__ex_process *anchored(const struct st__ex_ctx *ctx)
{
    for (size_t k = 0; k < ctx->nprocs; k++)
        if (ctx->procs[k]->anchor_real_ns)
            return ctx->procs[k];
    return NULL;
}

static void put_clock(struct st__ex_ctx *ctx, struct st__growbuf *b)
{
    /* The clock's zero on the wall clock: real - mono at the anchor, floored to whole seconds plus ns. */
    const struct st__ex_process *a = anchored(ctx);
    int64_t off = a ? (int64_t)(a->anchor_real_ns - a->anchor_mono_ns) : 0;
    long long secs = off / 1000000000;
    long long ns = off % 1000000000;
    if (ns < 0) {
        secs--;
        ns += 1000000000;
    }
    st__growbuf_printf(b, ST_CTF_METADATA_CLOCK,
                       a ? "CLOCK_MONOTONIC; offset from the trace's clock anchor: wall-clock time"
                                           : "CLOCK_MONOTONIC; the trace has no clock anchor: offset 0 (since boot)",
                       secs, (unsigned long long)ns);
    st__growbuf_puts(b, "\n");
}

static const char *type_of(enum field_kind k)
{
    static const char *const names[] = {"uint64_t", "int64_t", "bool_t", "pointer_t", "string"};
    return names[k];
}

static void put_event_classes(struct st__ex_ctx *ctx, struct ctf *c, struct st__growbuf *b)
{
    static const char *const calls[] = {"function_entry", "function_exit"};
    static const uint32_t call_ids[] = {ST_CTF_ID_FUNCTION_ENTRY, ST_CTF_ID_FUNCTION_EXIT};
    for (unsigned k = 0; ctx->opts->functions && k < 2; k++)
        st__growbuf_printf(b,
                           "event {\n\tname = \"%s\";\n\tid = %" PRIu32 ";\n\tstream_id = 0;\n\tfields := struct {\n"
                           "\t\tstring _function;\n\t\tuint64_t _depth;\n\t};\n};\n\n",
                           calls[k], call_ids[k]);
    /* Every index 0..count: the declared events and Dropped_Event, wherever the catalog puts it. */
    for (unsigned i = 0; i < c->nkinds; i++) {
        const struct st_event_info *ev = st_catalog_event(ctx->cat, i);
        st__growbuf_puts(b, "event {\n\tname = \"");
        tsdl_string(b, ev->name);
        st__growbuf_printf(b, "\";\n\tid = %u;\n\tstream_id = 0;\n\tfields := struct {\n", i);
        if (i == c->dropped_id)
            st__growbuf_puts(b, "\t\tuint64_t _num_events_dropped;\n");
        for (unsigned a = 0; i != c->dropped_id && a < ev->nargs; a++)
            st__growbuf_printf(b, "\t\t%s _%s;\n", type_of((enum field_kind)c->kinds[i * ST_READER_MAX_ARGS + a]),
                               ev->args[a].name);
        st__growbuf_puts(b, "\t};\n};\n\n");
    }
}

static int put_metadata(struct st__ex_ctx *ctx, struct ctf *c)
{
    struct st__growbuf b = {0};
    char uuid[40];
    const uint8_t *u = c->uuid;
    snprintf(uuid, sizeof uuid, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    uint16_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    st__growbuf_puts(&b, ST_CTF_METADATA_SIGNATURE "\n" ST_CTF_METADATA_TYPES "\n");
    st__growbuf_printf(&b, ST_CTF_METADATA_TRACE "\n", uuid, first ? "le" : "be");
    put_env(ctx, &b);
    put_clock(ctx, &b);
    st__growbuf_puts(&b, ST_CTF_METADATA_STREAM "\n");
    put_event_classes(ctx, c, &b);
    int ret = b.failed ? -ENOMEM : 0;
    int fd = ret ? -1 : openat(c->out.dirfd, "metadata", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (!ret && fd < 0)
        ret = st__ex_fail(ctx, -errno, "cannot create %s/metadata", c->out.tmp);
    if (fd >= 0) {
        ret = st__write_all(fd, b.data, b.len);
        if (close(fd) != 0 && ret == 0)
            ret = -errno;
        if (ret)
            st__ex_fail(ctx, ret, "cannot write %s/metadata", c->out.tmp);
    }
    st__growbuf_free(&b);
    return ret;
}

static int ctf_finish(struct st__ex_ctx *ctx)
{
    struct ctf *c = ctx->out;
    int ret = write_all_packets(ctx, c);
    if (ret == 0)
        ret = put_metadata(ctx, c);
    return ret ? ret : st__ex_dir_install(ctx, &c->out);
}

static void ctf_discard(struct st__ex_ctx *ctx)
{
    struct ctf *c = ctx->out;
    if (!c)
        return;
    st__ex_dir_discard(&c->out);
    for (size_t i = 0; i < c->nth; i++)
        free(c->th[i].buf);
    free(c->th);
    free(c->kinds);
    free(c);
    ctx->out = NULL;
}

const struct st__ex_writer st__ex_ctf_writer = {
    .open = ctf_open,
    .grow = ctf_grow,
    .thread_new = ctf_thread_new,
    .enter = ctf_enter,
    .exit = ctf_exit,
    .instant = ctf_instant,
    .lost = ctf_lost,
    .skipped = ctf_skipped,
    .finish = ctf_finish,
    .discard = ctf_discard,
};
