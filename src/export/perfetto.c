/*
 * The Perfetto protobuf writer (format: src/format/perfetto_format.h), for
 * Perfetto UI and trace_processor. What becomes what:
 *
 *   process      a TrackDescriptor with a ProcessDescriptor (pid, name,
 *                command line), written at the end, when the name of a
 *                process a trace does not record is known (chrome.c's
 *                rule: st__ex_process_label())
 *   thread       its own packet sequence (trusted_packet_sequence_id =
 *                thread index + 2), starting with TracePacketDefaults (its
 *                track, the incremental clock), a ClockSnapshot and a
 *                TrackDescriptor with a ThreadDescriptor named after the
 *                program; the lost-events pseudo-thread is a plain track
 *                under the process
 *   call         TYPE_SLICE_BEGIN named after the function (the begin
 *                record's arguments), TYPE_SLICE_END (the end record's
 *                arguments, or unfinished=true for frames the engine closes;
 *                calls of the function trace (--functions) have none)
 *   other event  TYPE_INSTANT named after the event, with its arguments
 *   dropped      TYPE_INSTANT "dropped" with count=N
 *   keyed span   (a begin and an end matched by an argument's value, often
 *                on two threads) a slice on an async track: a
 *                TrackDescriptor of its own (uuid ASYNC_UUID_BASE + k, named
 *                after the function, its parent the process's track);
 *                TYPE_SLICE_BEGIN on the begin's sequence and TYPE_SLICE_END
 *                on the end's, both naming the track (track_uuid), each with
 *                its record's arguments (unfinished=true when the engine ends
 *                it: its key began again, or it never ended). The tracks of
 *                a function in a process are a pool: a span takes a free
 *                one, and gives it back when it ends, so a track holds one
 *                slice at a time and there are as many as spans were open at
 *                once, not one per span; trace_processor and the UI show the
 *                pool's tracks, all of one name, as one group
 *
 * Arguments are debug annotations typed as declared: signed integers
 * int_value, unsigned ones uint_value, bool bool_value, pointers
 * pointer_value, strings string_value (invalid UTF-8 repaired as the JSON
 * escaper reads it: utf8.h). Event and annotation names are interned per
 * sequence: a name's InternedData entry rides in the first packet of the
 * sequence that uses it. Iids are given in order of appearance ("dropped"
 * first, then the catalog's events and the functions as the catalog and
 * the pairing grow), so a growing catalog only appends: an iid, once
 * defined on a sequence, never changes meaning.
 *
 * Time: records are CLOCK_MONOTONIC ns. Each sequence's ClockSnapshot says
 * that its clock 64 (incremental: every packet's timestamp is the delta
 * from the previous one on the sequence) stands at the thread's first
 * timestamp when MONOTONIC does, and, when the trace carries its clock
 * anchor, REALTIME at the matching wall time; primary_trace_clock is
 * MONOTONIC, so traces of one machine line up. The engine keeps each thread
 * in time order, so deltas are never negative, and a few-microsecond delta
 * takes 2 bytes where an absolute timestamp takes 8. Keyed spans are the
 * exception: an end recorded before its begin (threads of traces whose
 * clocks disagree) is put at the begin's time, so no slice has a negative
 * length, and the engine ends a span whose key began again on its begin's
 * thread at the time of the new begin, on another thread. Either can put a
 * packet behind its sequence's clock (the thread's next record after the
 * first, the end itself in the second): such a packet gives its time on
 * MONOTONIC itself (timestamp_clock_id) and leaves the incremental clock
 * alone. Traces of one program, merged by time, have neither.
 *
 * Why a hand-written encoder and not libprotobuf-c: we write six message
 * types with a handful of fields each and read none; an encoder is a varint
 * loop and a length fix-up, with no dependency and no generated code to
 * keep in step with Perfetto's schema. It writes each packet straight into
 * the output buffer: no message objects, no allocation per record. A
 * nested message's length gets one byte first and its body is moved along
 * in the rare case it needs more (a body of 128 bytes or longer).
 *
 * Memory: a 1 MiB output buffer (grown only for one record longer than
 * that), the name tables (per catalog event and function), per thread a
 * bit per name saying whether its sequence has it interned yet (grown when
 * the names outgrow it), and 16 bytes per async track.
 */
#include <simpletrace/version.h>

#include "export_internal.h"
#include "perfetto_format.h"
#include "utf8.h"
#include "wall_time.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_BYTES (1u << 20)
#define PROCESS_SEQUENCE 1u   /* the sequence of the process descriptors; threads' start at 2 */
#define CLOCK_DELTA ST_PF_CLOCK_FIRST_SEQUENCE_SCOPED /* the incremental clock of every thread sequence */
#define NEST_SLACK 16u        /* room for nested lengths that outgrow their one byte */
#define THREAD_UUID_BASE (UINT64_C(1) << 32) /* thread k's track; process k's is k + 1 */
#define ASYNC_UUID_BASE (UINT64_C(2) << 32)  /* async track k's (keyed spans) */

/* How an argument is written. */
enum arg_kind { ARG_UINT, ARG_INT, ARG_BOOL, ARG_POINTER, ARG_STRING };

/* A name with its iid; names are interned by iid (1..). */
struct name {
    const char *str;
    size_t len;
};

struct pf_thread {
    uint64_t uuid;          /* its track */
    uint64_t last_ts;       /* the incremental clock's value: the previous packet's time */
    uint32_t seq;           /* its trusted_packet_sequence_id */
    uint8_t *interned;      /* defined on the sequence: event name iid k is bit 2k, annotation name iid k bit
                               2k + 1 (positions no count moves) */
    size_t interned_bytes;  /* allocated: grown to perfetto.bitmap_bytes before a packet is put */
};

/* How one catalog event is written. */
struct pf_event {
    uint32_t name;                        /* its event name iid (0 for Dropped_Event: never an instant) */
    uint32_t arg_iid[ST_READER_MAX_ARGS]; /* annotation name iid per argument */
    uint8_t arg_kind[ST_READER_MAX_ARGS]; /* enum arg_kind as declared (STRING, POINTER: as each record stores it) */
};

/* A process with its track. */
struct pf_process {
    const struct st__ex_process *proc;
    uint32_t pid;           /* the id shown: its group (see export_internal.h) */
    uint64_t uuid;
};

/* An async track: a keyed span's slice at a time. */
struct pf_async {
    uint64_t free_ts;   /* when its last slice ended: a slice beginning then or earlier takes another track (two
                           slices touching at one time could be read in either order) */
    uint32_t next_free; /* index + 1 of the next free track of its pool; 0: none */
};

/* The async tracks of one function in one process; those free now form a list. */
struct pf_pool {
    const struct st__ex_process *proc;
    uint32_t func;
    uint32_t free;      /* index + 1 of the first free track (the last one given back); 0: none */
    uint32_t next;      /* index + 1 of the next pool of the same function; 0: none */
};

struct perfetto {
    struct st__ex_file file;
    uint8_t *buf;
    size_t len, cap;
    /* event names in order of appearance: "dropped", then catalog events and functions as they come */
    struct name *names;     /* by iid */
    uint32_t nnames;        /* iids 1..nnames */
    size_t capnames;
    uint32_t dropped_iid;
    /* annotation names: "count", "unfinished", then distinct argument names */
    struct name *anames;    /* by iid */
    uint32_t nanames;
    size_t capanames;
    uint32_t count_iid, unfinished_iid;
    struct pf_event *ev;    /* per catalog index: nev filled, capev allocated */
    size_t nev, capev;
    uint32_t *fn_iid;       /* per function id: its event name iid; nfn filled, capfn allocated */
    size_t nfn, capfn;
    size_t bitmap_bytes;    /* per thread: bits 0 .. 2 * max(nnames, nanames) + 1 */
    struct pf_thread *th;   /* by thread index */
    size_t nth, capth;
    struct pf_process *proc;
    size_t nproc;
    struct pf_async *async; /* by track index */
    size_t nasync, capasync;
    struct pf_pool *pools;
    size_t npools, cappools;
    uint32_t *fn_pool;      /* per function id: index + 1 of its first pool; 0: none (capfnpool allocated) */
    size_t capfnpool;
};

/* --- protobuf encoding ------------------------------------------------------------ */

static inline uint8_t *pb_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint8_t *pb_uint(uint8_t *p, unsigned field, uint64_t v)
{
    p = pb_varint(p, ST_PB_KEY(field, ST_PB_VARINT));
    return pb_varint(p, v);
}

static inline uint8_t *pb_bytes(uint8_t *p, unsigned field, const void *s, size_t n)
{
    p = pb_varint(p, ST_PB_KEY(field, ST_PB_LEN));
    p = pb_varint(p, n);
    memcpy(p, s, n);
    return p + n;
}

/* Starts a nested message (or a string written in place): its key and one byte for its length; returns its body. */
static inline uint8_t *pb_open(uint8_t *p, unsigned field)
{
    p = pb_varint(p, ST_PB_KEY(field, ST_PB_LEN));
    return p + 1;
}

/* Ends the message whose body starts at body and ends at end: sets its length, moving the body if it needs more
 * than one byte. Returns the new end. */
static inline uint8_t *pb_close(uint8_t *body, uint8_t *end)
{
    size_t len = (size_t)(end - body);
    if (len < 0x80) {
        body[-1] = (uint8_t)len;
        return end;
    }
    uint8_t tmp[10];
    size_t n = (size_t)(pb_varint(tmp, len) - tmp);
    memmove(body + n - 1, body, len);
    memcpy(body - 1, tmp, n);
    return end + n - 1;
}

/* A string field, repaired to valid UTF-8. */
static inline uint8_t *pb_text(uint8_t *p, unsigned field, const void *s, size_t n)
{
    uint8_t *body = pb_open(p, field);
    return pb_close(body, st__utf8_repair(body, s, n));
}

/* --- the output buffer -------------------------------------------------------------- */

static int flush_buf(struct st__ex_ctx *ctx, struct perfetto *pf)
{
    int ret = st__write_all(pf->file.out.fd, pf->buf, pf->len);
    pf->len = 0;
    return ret ? st__ex_fail(ctx, ret, "cannot write %s", pf->file.path) : 0;
}

/* Room for n more bytes; where they go, or NULL with *ret set. */
static uint8_t *room(struct st__ex_ctx *ctx, struct perfetto *pf, size_t n, int *ret)
{
    if (pf->len + n > pf->cap && (*ret = flush_buf(ctx, pf)) < 0)
        return NULL;
    if (n > pf->cap) { /* one record longer than the buffer */
        uint8_t *b = realloc(pf->buf, n);
        if (!b) {
            *ret = -ENOMEM;
            return NULL;
        }
        pf->buf = b;
        pf->cap = n;
    }
    return pf->buf + pf->len;
}

/* Starts a packet of sequence seq with its flags; returns its body (Trace.packet). */
static uint8_t *packet_open(uint8_t *p, uint32_t seq, uint32_t flags, uint8_t **body)
{
    *body = pb_open(p, ST_PF_TRACE_PACKET);
    p = pb_uint(*body, ST_PF_PACKET_SEQUENCE_ID, seq);
    return flags ? pb_uint(p, ST_PF_PACKET_SEQUENCE_FLAGS, flags) : p;
}

/* --- names ------------------------------------------------------------------------------ */

static enum arg_kind declared_kind(const struct st_catalog *cat, const struct st_event_info *ev, unsigned i)
{
    switch (st_catalog_arg_encoding(cat, ev, i)) {
    case ST_ARG_ENCODING_STRING: return ARG_STRING;
    case ST_ARG_ENCODING_POINTER: return ARG_POINTER;
    case ST_ARG_ENCODING_BOOL: return ARG_BOOL;
    default: return ev->args[i].is_signed ? ARG_INT : ARG_UINT;
    }
}

/* A new event name iid for str, or 0 when memory is short. */
static uint32_t name_iid(struct perfetto *pf, const char *str, size_t len)
{
    if (st__ex_reserve(&pf->names, &pf->capnames, (size_t)pf->nnames + 2, sizeof *pf->names) < 0)
        return 0;
    pf->names[++pf->nnames] = (struct name){str, len};
    return pf->nnames;
}

/* The annotation iid of name, added when new (a linear search: only when the catalog grows, argument names are
 * few), or 0 when memory is short. */
static uint32_t annotation_iid(struct perfetto *pf, const char *name)
{
    for (uint32_t i = 1; i <= pf->nanames; i++)
        if (strcmp(pf->anames[i].str, name) == 0)
            return i;
    if (st__ex_reserve(&pf->anames, &pf->capanames, (size_t)pf->nanames + 2, sizeof *pf->anames) < 0)
        return 0;
    pf->anames[++pf->nanames] = (struct name){name, strlen(name)};
    return pf->nanames;
}

/* Names for the catalog events and functions added since the last call (at open, all of them). */
static int build_names(struct st__ex_ctx *ctx, struct perfetto *pf)
{
    if (st__ex_reserve(&pf->ev, &pf->capev, ctx->ncat, sizeof *pf->ev) < 0 ||
        st__ex_reserve(&pf->fn_iid, &pf->capfn, ctx->pairs.nfuncs, sizeof *pf->fn_iid) < 0 ||
        st__ex_reserve(&pf->fn_pool, &pf->capfnpool, ctx->pairs.nfuncs, sizeof *pf->fn_pool) < 0)
        return -ENOMEM;
    const struct st_event_info *dropped = st_catalog_dropped(ctx->cat);
    for (; pf->nev < ctx->ncat; pf->nev++) {
        const struct st_event_info *ev = st_catalog_event(ctx->cat, pf->nev);
        struct pf_event *e = &pf->ev[pf->nev];
        if (ev == dropped) /* its records are "dropped" instants */
            continue;
        if (!(e->name = name_iid(pf, ev->name, ev->name_len)))
            return -ENOMEM;
        for (unsigned a = 0; a < ev->nargs; a++) {
            if (!(e->arg_iid[a] = annotation_iid(pf, ev->args[a].name)))
                return -ENOMEM;
            e->arg_kind[a] = (uint8_t)declared_kind(ctx->cat, ev, a);
        }
    }
    for (; pf->nfn < ctx->pairs.nfuncs; pf->nfn++) {
        const char *name = ctx->pairs.names[pf->nfn];
        if (!(pf->fn_iid[pf->nfn] = name_iid(pf, name, strlen(name))))
            return -ENOMEM;
    }
    size_t top = pf->nnames > pf->nanames ? pf->nnames : pf->nanames;
    pf->bitmap_bytes = (2 * top + 2 + 7) / 8;
    return 0;
}

static int pf_grow(struct st__ex_ctx *ctx)
{
    return build_names(ctx, ctx->out);
}

/* The bit of event name iid k in a thread's interned bitmap, and of annotation name iid k. */
static inline size_t name_bit(uint32_t iid)
{
    return 2 * (size_t)iid;
}

static inline size_t aname_bit(uint32_t iid)
{
    return 2 * (size_t)iid + 1;
}

/* Makes t's bitmap cover every name defined so far. 0 or -ENOMEM. */
static int bitmap_cover(const struct perfetto *pf, struct pf_thread *t)
{
    size_t cap = t->interned_bytes;
    int ret = st__ex_reserve(&t->interned, &cap, pf->bitmap_bytes, 1);
    t->interned_bytes = cap;
    return ret;
}

static inline bool interned(const struct pf_thread *t, size_t bit)
{
    return t->interned[bit >> 3] & (1u << (bit & 7));
}

/* What a packet must define before it uses its names: at most the event name and one name per argument. */
struct pending {
    uint32_t name;                        /* 0: none */
    uint32_t anames[ST_READER_MAX_ARGS + 1];
    unsigned nanames;
    size_t bytes;                         /* their strings' length */
};

static void want_name(const struct perfetto *pf, const struct pf_thread *t, struct pending *n, uint32_t iid)
{
    if (iid && !interned(t, name_bit(iid))) {
        n->name = iid;
        n->bytes += pf->names[iid].len;
    }
}

static void want_aname(const struct perfetto *pf, const struct pf_thread *t, struct pending *n, uint32_t iid)
{
    if (interned(t, aname_bit(iid)))
        return;
    for (unsigned i = 0; i < n->nanames; i++)
        if (n->anames[i] == iid)
            return; /* two arguments of one event with the same name */
    n->anames[n->nanames++] = iid;
    n->bytes += pf->anames[iid].len;
}

/* Bytes put_interned() may write for n. */
static size_t interned_bound(const struct pending *n)
{
    return n->name || n->nanames ? 16 + n->bytes + 16 * (n->nanames + 1) : 0;
}

/* InternedData defining n's names, marked as defined on t's sequence. */
static uint8_t *put_interned(const struct perfetto *pf, struct pf_thread *t, uint8_t *p, const struct pending *n)
{
    if (!n->name && !n->nanames)
        return p;
    uint8_t *data = pb_open(p, ST_PF_PACKET_INTERNED_DATA);
    p = data;
    if (n->name) {
        uint8_t *e = pb_open(p, ST_PF_INTERNED_EVENT_NAMES);
        p = pb_uint(e, ST_PF_INTERNED_IID, n->name);
        p = pb_close(e, pb_text(p, ST_PF_INTERNED_NAME, pf->names[n->name].str, pf->names[n->name].len));
        size_t bit = name_bit(n->name);
        t->interned[bit >> 3] |= (uint8_t)(1u << (bit & 7));
    }
    for (unsigned i = 0; i < n->nanames; i++) {
        uint32_t iid = n->anames[i];
        uint8_t *e = pb_open(p, ST_PF_INTERNED_ANNOTATION_NAMES);
        p = pb_uint(e, ST_PF_INTERNED_IID, iid);
        p = pb_close(e, pb_text(p, ST_PF_INTERNED_NAME, pf->anames[iid].str, pf->anames[iid].len));
        size_t bit = aname_bit(iid);
        t->interned[bit >> 3] |= (uint8_t)(1u << (bit & 7));
    }
    return pb_close(data, p);
}

/* --- processes and threads ------------------------------------------------------------------ */

/*
 * The process thread t belongs to, with its track: the one place that
 * asks. Its id is its group, the id Chrome's events carry too: the
 * recorded pid, else its first record's thread (made unique across
 * processes by the engine). NULL when memory is short.
 */
static struct pf_process *process_of(struct perfetto *pf, const struct st__ex_thread *t)
{
    for (size_t i = 0; i < pf->nproc; i++)
        if (pf->proc[i].proc == t->proc)
            return &pf->proc[i];
    struct pf_process *v = realloc(pf->proc, (pf->nproc + 1) * sizeof *v);
    if (!v)
        return NULL;
    pf->proc = v;
    pf->proc[pf->nproc] = (struct pf_process){.proc = t->proc, .pid = t->proc->group, .uuid = t->proc->index + 1};
    return &pf->proc[pf->nproc++];
}

/* The thread's first packet: the incremental state is new; defaults name its track and clock. */
static uint8_t *put_defaults(uint8_t *p, const struct pf_thread *t)
{
    uint8_t *pkt;
    p = packet_open(p, t->seq, ST_PF_SEQ_INCREMENTAL_STATE_CLEARED, &pkt);
    p = pb_uint(p, ST_PF_PACKET_FIRST_ON_SEQUENCE, 1);
    uint8_t *d = pb_open(p, ST_PF_PACKET_DEFAULTS);
    p = pb_uint(d, ST_PF_DEFAULTS_TIMESTAMP_CLOCK_ID, CLOCK_DELTA);
    uint8_t *te = pb_open(p, ST_PF_DEFAULTS_TRACK_EVENT);
    p = pb_close(te, pb_uint(te, ST_PF_TRACK_EVENT_DEFAULTS_TRACK_UUID, t->uuid));
    p = pb_close(d, p);
    return pb_close(pkt, p);
}

static uint8_t *put_clock(uint8_t *p, uint32_t id, uint64_t ts, bool incremental)
{
    uint8_t *c = pb_open(p, ST_PF_CLOCK_SNAPSHOT_CLOCKS);
    p = pb_uint(c, ST_PF_CLOCK_ID, id);
    p = pb_uint(p, ST_PF_CLOCK_TIMESTAMP, ts);
    if (incremental)
        p = pb_uint(p, ST_PF_CLOCK_IS_INCREMENTAL, 1);
    return pb_close(c, p);
}

/* The clocks at the thread's first timestamp: its delta clock, MONOTONIC, REALTIME when the anchor is known. */
static uint8_t *put_clock_snapshot(const struct st__ex_process *proc, uint8_t *p, const struct pf_thread *t)
{
    uint8_t *pkt;
    p = packet_open(p, t->seq, ST_PF_SEQ_NEEDS_INCREMENTAL_STATE, &pkt);
    uint8_t *cs = pb_open(p, ST_PF_PACKET_CLOCK_SNAPSHOT);
    p = put_clock(cs, CLOCK_DELTA, t->last_ts, true);
    p = put_clock(p, ST_PF_CLOCK_MONOTONIC, t->last_ts, false);
    int64_t wall = st__wall_ns(proc->anchor_mono_ns, proc->anchor_real_ns, t->last_ts);
    if (proc->anchor_real_ns && wall > 0)
        p = put_clock(p, ST_PF_CLOCK_REALTIME, (uint64_t)wall, false);
    p = pb_uint(p, ST_PF_CLOCK_SNAPSHOT_PRIMARY, ST_PF_CLOCK_MONOTONIC);
    return pb_close(pkt, pb_close(cs, p));
}

/* The thread's track: a thread of process pr, or (the lost-events pseudo-thread) a plain track under it. */
static uint8_t *put_thread_track(uint8_t *p, const struct st__ex_thread *t, const struct pf_thread *pt,
                                 const struct pf_process *pr)
{
    uint8_t *pkt;
    p = packet_open(p, pt->seq, ST_PF_SEQ_NEEDS_INCREMENTAL_STATE, &pkt);
    uint8_t *td = pb_open(p, ST_PF_PACKET_TRACK_DESCRIPTOR);
    p = pb_uint(td, ST_PF_TRACK_UUID, pt->uuid);
    if (st__ex_pseudo_thread(t->tid)) {
        const char *name = st__ex_pseudo_thread(t->tid);
        p = pb_uint(p, ST_PF_TRACK_PARENT_UUID, pr->uuid);
        p = pb_bytes(p, ST_PF_TRACK_NAME, name, strlen(name));
    } else {
        const char *program = st__ex_program(t->proc);
        uint8_t *th = pb_open(p, ST_PF_TRACK_THREAD);
        p = pb_uint(th, ST_PF_THREAD_PID, pr->pid);
        p = pb_uint(p, ST_PF_THREAD_TID, t->tid);
        p = pb_close(th, pb_text(p, ST_PF_THREAD_NAME, program, strlen(program)));
    }
    return pb_close(pkt, pb_close(td, p));
}

static int pf_thread_new(struct st__ex_ctx *ctx, struct st__ex_thread *t)
{
    struct perfetto *pf = ctx->out;
    if (t->index == pf->capth) {
        size_t cap = pf->capth ? pf->capth * 2 : 16;
        struct pf_thread *v = realloc(pf->th, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        pf->th = v;
        pf->capth = cap;
    }
    struct pf_thread *pt = &pf->th[t->index];
    *pt = (struct pf_thread){.uuid = THREAD_UUID_BASE + t->index, .last_ts = t->first_ts,
                             .seq = PROCESS_SEQUENCE + 1 + (uint32_t)t->index};
    pf->nth = t->index + 1;
    struct pf_process *pr = process_of(pf, t);
    if (!pr || bitmap_cover(pf, pt) < 0)
        return -ENOMEM;
    int ret = 0;
    size_t program = strlen(st__ex_program(t->proc));
    uint8_t *p = room(ctx, pf, 256 + ST__UTF8_REPAIRED_MAX(program), &ret);
    if (!p)
        return ret;
    p = put_defaults(p, pt);
    p = put_clock_snapshot(t->proc, p, pt);
    p = put_thread_track(p, t, pt, pr);
    pf->len = (size_t)(p - pf->buf);
    return 0;
}

/* --- events --------------------------------------------------------------------------------------- */

/* Bytes the annotations of rec may take. */
static size_t args_bound(const struct st_record *rec)
{
    size_t n = 0;
    for (unsigned i = 0; i < rec->nargs; i++)
        n += 24 + (rec->args[i].kind == ST_VALUE_STRING ? ST__UTF8_REPAIRED_MAX(rec->args[i].len) + 8 : 10);
    return n;
}

static uint8_t *put_arg(uint8_t *p, uint32_t iid, enum arg_kind kind, const struct st_value *v)
{
    uint8_t *a = pb_open(p, ST_PF_EVENT_DEBUG_ANNOTATIONS);
    p = pb_uint(a, ST_PF_ANNOTATION_NAME_IID, iid);
    if (v->kind == ST_VALUE_STRING)
        p = pb_text(p, ST_PF_ANNOTATION_STRING, v->str, v->len);
    else if (v->kind == ST_VALUE_POINTER)
        p = pb_uint(p, ST_PF_ANNOTATION_POINTER, v->u64);
    else if (kind == ARG_BOOL)
        p = pb_uint(p, ST_PF_ANNOTATION_BOOL, v->u64 != 0);
    else
        p = pb_uint(p, kind == ARG_INT ? ST_PF_ANNOTATION_INT : ST_PF_ANNOTATION_UINT, v->u64);
    return pb_close(a, p);
}

/*
 * One TrackEvent packet on t's sequence at ts: type, name iid (0: none),
 * on track (0: the thread's, the sequence's default), the arguments of
 * rec, else (no rec) one annotation extra_iid = extra (bool when is_bool)
 * unless extra_iid is 0.
 */
static int put_event(struct st__ex_ctx *ctx, const struct st__ex_thread *t, uint64_t ts, unsigned type,
                     uint32_t name, uint64_t track, const struct st_record *rec, uint32_t extra_iid, uint64_t extra,
                     bool is_bool)
{
    struct perfetto *pf = ctx->out;
    struct pf_thread *pt = &pf->th[t->index];
    const uint32_t *iids = rec ? pf->ev[rec->event->index].arg_iid : NULL;
    const uint8_t *kinds = rec ? pf->ev[rec->event->index].arg_kind : NULL;
    if (pt->interned_bytes < pf->bitmap_bytes && bitmap_cover(pf, pt) < 0)
        return -ENOMEM;
    struct pending n = {0};
    want_name(pf, pt, &n, name);
    for (unsigned i = 0; rec && i < rec->nargs; i++)
        want_aname(pf, pt, &n, iids[i]);
    if (!rec && extra_iid)
        want_aname(pf, pt, &n, extra_iid);
    int ret = 0;
    uint8_t *p = room(ctx, pf, 64 + NEST_SLACK + interned_bound(&n) + (rec ? args_bound(rec) : 16), &ret);
    if (!p)
        return ret;
    uint8_t *pkt;
    p = packet_open(p, pt->seq, ST_PF_SEQ_NEEDS_INCREMENTAL_STATE, &pkt);
    if (ts >= pt->last_ts) {
        p = pb_uint(p, ST_PF_PACKET_TIMESTAMP, ts - pt->last_ts);
        pt->last_ts = ts;
    } else { /* behind the sequence's clock (see the top): absolute, on MONOTONIC */
        p = pb_uint(p, ST_PF_PACKET_TIMESTAMP, ts);
        p = pb_uint(p, ST_PF_PACKET_TIMESTAMP_CLOCK_ID, ST_PF_CLOCK_MONOTONIC);
    }
    p = put_interned(pf, pt, p, &n);
    uint8_t *te = pb_open(p, ST_PF_PACKET_TRACK_EVENT);
    p = pb_uint(te, ST_PF_EVENT_TYPE, type);
    if (name)
        p = pb_uint(p, ST_PF_EVENT_NAME_IID, name);
    if (track)
        p = pb_uint(p, ST_PF_EVENT_TRACK_UUID, track);
    for (unsigned i = 0; rec && i < rec->nargs; i++)
        p = put_arg(p, iids[i], (enum arg_kind)kinds[i], &rec->args[i]);
    if (!rec && extra_iid) {
        struct st_value v = {.kind = ST_VALUE_INTEGER, .u64 = extra};
        p = put_arg(p, extra_iid, is_bool ? ARG_BOOL : ARG_UINT, &v);
    }
    p = pb_close(pkt, pb_close(te, p));
    pf->len = (size_t)(p - pf->buf);
    return 0;
}

static int pf_enter(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                    uint32_t depth, uint64_t ts)
{
    struct perfetto *pf = ctx->out;
    (void)depth;
    return put_event(ctx, t, ts, ST_PF_TYPE_SLICE_BEGIN, pf->fn_iid[func], 0, rec, 0, 0, false);
}

static int pf_exit(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                   uint32_t depth, uint64_t ts)
{
    struct perfetto *pf = ctx->out;
    (void)func;
    (void)depth;
    return put_event(ctx, t, ts, ST_PF_TYPE_SLICE_END, 0, 0, rec, ctx->closing ? pf->unfinished_iid : 0, 1, true);
}

static int pf_instant(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t depth,
                      uint64_t ts)
{
    struct perfetto *pf = ctx->out;
    (void)depth;
    return put_event(ctx, t, ts, ST_PF_TYPE_INSTANT, pf->ev[rec->event->index].name, 0, rec, 0, 0, false);
}

static int pf_lost(struct st__ex_ctx *ctx, struct st__ex_thread *t, uint64_t count, uint32_t depth, uint64_t ts)
{
    struct perfetto *pf = ctx->out;
    (void)depth;
    return put_event(ctx, t, ts, ST_PF_TYPE_INSTANT, pf->dropped_iid, 0, NULL, pf->count_iid, count, false);
}

/* --- keyed spans: slices on async tracks ------------------------------------------------------------ */

/* The pool of func's async tracks in proc (index), made when new; -ENOMEM. */
static long pool_of(struct perfetto *pf, const struct st__ex_process *proc, uint32_t func)
{
    for (uint32_t i = pf->fn_pool[func]; i; i = pf->pools[i - 1].next)
        if (pf->pools[i - 1].proc == proc)
            return (long)i - 1;
    if (st__ex_reserve(&pf->pools, &pf->cappools, pf->npools + 1, sizeof *pf->pools) < 0)
        return -ENOMEM;
    pf->pools[pf->npools] = (struct pf_pool){.proc = proc, .func = func, .next = pf->fn_pool[func]};
    pf->fn_pool[func] = (uint32_t)++pf->npools;
    return (long)pf->npools - 1;
}

/* A new async track for pool (of t's process), described on the process sequence: its index, or -errno. */
static long async_track_new(struct st__ex_ctx *ctx, struct perfetto *pf, const struct st__ex_thread *t,
                            const struct pf_pool *pool)
{
    const struct pf_process *pr = process_of(pf, t);
    if (!pr || st__ex_reserve(&pf->async, &pf->capasync, pf->nasync + 1, sizeof *pf->async) < 0)
        return -ENOMEM;
    const char *name = ctx->pairs.names[pool->func];
    size_t len = strlen(name);
    int ret = 0;
    uint8_t *p = room(ctx, pf, 64 + NEST_SLACK + ST__UTF8_REPAIRED_MAX(len), &ret);
    if (!p)
        return ret;
    uint8_t *pkt;
    p = packet_open(p, PROCESS_SEQUENCE, 0, &pkt);
    uint8_t *td = pb_open(p, ST_PF_PACKET_TRACK_DESCRIPTOR);
    p = pb_uint(td, ST_PF_TRACK_UUID, ASYNC_UUID_BASE + pf->nasync);
    p = pb_uint(p, ST_PF_TRACK_PARENT_UUID, pr->uuid);
    p = pb_text(p, ST_PF_TRACK_NAME, name, len);
    p = pb_close(pkt, pb_close(td, p));
    pf->len = (size_t)(p - pf->buf);
    return (long)pf->nasync++;
}

/* o->user: its pool's index (high 32 bits) and its track's (low 32 bits). */
static int pf_async_begin(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                          struct st__ex_open *o, uint64_t ts)
{
    struct perfetto *pf = ctx->out;
    long pool = pool_of(pf, o->proc, o->func), track;
    if (pool < 0)
        return (int)pool;
    /* A free track whose last slice ended before ts: the one given back last, unless that one ended at ts
     * (or after: threads whose times disagree), then an older one. */
    uint32_t *link = &pf->pools[pool].free;
    while (*link && pf->async[*link - 1].free_ts >= ts)
        link = &pf->async[*link - 1].next_free;
    if (*link) {
        track = *link - 1;
        *link = pf->async[track].next_free;
    } else if ((track = async_track_new(ctx, pf, t, &pf->pools[pool])) < 0) {
        return (int)track;
    }
    o->user = (uint64_t)pool << 32 | (uint64_t)track;
    return put_event(ctx, t, ts, ST_PF_TYPE_SLICE_BEGIN, pf->fn_iid[o->func], ASYNC_UUID_BASE + (uint64_t)track, rec,
                     0, 0, false);
}

static int pf_async_end(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                        const struct st__ex_open *o, uint64_t ts)
{
    struct perfetto *pf = ctx->out;
    struct pf_pool *pool = &pf->pools[o->user >> 32];
    uint32_t track = (uint32_t)o->user;
    if (ts < o->begin_ts)
        ts = o->begin_ts;
    pf->async[track] = (struct pf_async){.free_ts = ts, .next_free = pool->free};
    pool->free = track + 1;
    return put_event(ctx, t, ts, ST_PF_TYPE_SLICE_END, 0, ASYNC_UUID_BASE + track, rec,
                     ctx->closing ? pf->unfinished_iid : 0, 1, true);
}

/* --- the start and the end ---------------------------------------------------------------------------- */

static int pf_open(struct st__ex_ctx *ctx)
{
    struct perfetto *pf = calloc(1, sizeof *pf);
    if (!pf)
        return -ENOMEM;
    ctx->out = pf;
    st__ex_file_init(&pf->file);
    const char *out = ctx->opts->output;
    if (!out || !*out || strcmp(out, "-") == 0)
        return st__ex_fail(ctx, -EINVAL, "perfetto output is a file: give its name");
    if (!(pf->buf = malloc(BUF_BYTES)))
        return -ENOMEM;
    pf->cap = BUF_BYTES;
    if (!(pf->dropped_iid = name_iid(pf, "dropped", 7)) || !(pf->count_iid = annotation_iid(pf, "count")) ||
        !(pf->unfinished_iid = annotation_iid(pf, "unfinished")))
        return -ENOMEM;
    int ret = build_names(ctx, pf);
    return ret ? ret : st__ex_file_open(ctx, &pf->file, out);
}

/* The command line's words, split at spaces as the description stores it. */
static uint8_t *put_cmdline(uint8_t *p, const char *cmdline)
{
    while (*cmdline) {
        size_t n = strcspn(cmdline, " ");
        if (n)
            p = pb_text(p, ST_PF_PROCESS_CMDLINE, cmdline, n);
        cmdline += n + (cmdline[n] == ' ');
    }
    return p;
}

/* A process's track, named when the whole trace is known (see the top). */
static int put_process(struct st__ex_ctx *ctx, struct perfetto *pf, const struct pf_process *pr)
{
    char name[600];
    st__ex_process_label(pr->proc, name, sizeof name);
    const char *cmdline = pr->proc->have_desc ? pr->proc->cmdline : "";
    int ret = 0;
    uint8_t *p = room(ctx, pf, 64 + NEST_SLACK + ST__UTF8_REPAIRED_MAX(strlen(name) + 2 * strlen(cmdline)), &ret);
    if (!p)
        return ret;
    uint8_t *pkt;
    p = packet_open(p, PROCESS_SEQUENCE, 0, &pkt);
    uint8_t *td = pb_open(p, ST_PF_PACKET_TRACK_DESCRIPTOR);
    p = pb_uint(td, ST_PF_TRACK_UUID, pr->uuid);
    uint8_t *pd = pb_open(p, ST_PF_TRACK_PROCESS);
    p = pb_uint(pd, ST_PF_PROCESS_PID, pr->pid);
    p = put_cmdline(p, cmdline);
    p = pb_text(p, ST_PF_PROCESS_NAME, name, strlen(name));
    p = pb_close(pkt, pb_close(td, pb_close(pd, p)));
    pf->len = (size_t)(p - pf->buf);
    return 0;
}

static int pf_finish(struct st__ex_ctx *ctx)
{
    struct perfetto *pf = ctx->out;
    int ret = 0;
    for (size_t i = 0; i < pf->nproc && ret == 0; i++)
        ret = put_process(ctx, pf, &pf->proc[i]);
    if (ret == 0)
        ret = flush_buf(ctx, pf);
    return ret ? ret : st__ex_file_install(ctx, &pf->file);
}

static void pf_discard(struct st__ex_ctx *ctx)
{
    struct perfetto *pf = ctx->out;
    if (!pf)
        return;
    st__ex_file_discard(&pf->file);
    for (size_t i = 0; i < pf->nth; i++)
        free(pf->th[i].interned);
    free(pf->th);
    free(pf->proc);
    free(pf->names);
    free(pf->anames);
    free(pf->ev);
    free(pf->fn_iid);
    free(pf->fn_pool);
    free(pf->pools);
    free(pf->async);
    free(pf->buf);
    free(pf);
    ctx->out = NULL;
}

const struct st__ex_writer st__ex_perfetto_writer = {
    .open = pf_open,
    .grow = pf_grow,
    .thread_new = pf_thread_new,
    .enter = pf_enter,
    .exit = pf_exit,
    .instant = pf_instant,
    .lost = pf_lost,
    .async_begin = pf_async_begin,
    .async_end = pf_async_end,
    .finish = pf_finish,
    .discard = pf_discard,
};
