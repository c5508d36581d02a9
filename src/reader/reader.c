/*
 * The trace reader: header and byte-order detection, the record loop of
 * each format version, event-ID resolution and argument decoding. The
 * layouts are defined once in src/format/trace_format.h (the records that
 * describe the trace: meta_format.h).
 *
 * Buffering: one buffer of cap bytes; [pos, end) holds bytes read but not
 * consumed. When a record needs more than is there, the tail moves to the
 * front and read() refills the rest, so memory never depends on the file
 * size and a record up to cap bytes can always be assembled. In-memory
 * traces are read in place. String values point into the buffer, which
 * is why a record is valid only until the next call.
 *
 * Event IDs: v4 files map IDs to names with mapping records, kept in an
 * open-addressing hash (IDs are 64-bit and chosen by the writer). Files
 * without a header, and v0/v2/v3 files, use the ID as the index of the
 * event in the trace-events files; mapping records still override.
 *
 * Pieces (rotate=): the reader walks a list of sources; at the clean end
 * of one it resets what belongs to a file (offset, header, IDs) and opens
 * the next, while counters, record numbers and the origin go on.
 *
 * One pass: opened without a catalog, the reader grows its own (or, as an
 * input of several, the merge's) with the declarations the trace carries,
 * as they come (a declaration precedes its event's first record, as a
 * mapping does), and reads the head of the trace at open so that a trace
 * declaring its events first has them all from the start. Nothing is read
 * twice: a pipe, a FIFO and a file still being written read as a file.
 *
 * Compressed traces (zstd_input.c): a piece whose first bytes are a zstd
 * frame is read through a decompressor, which read_some() asks instead of
 * the file; offsets are then the v4 stream's (as `zstd -d` gives it), and
 * messages add the frame and its compressed offset. Frames the filters
 * would drop whole are skipped (frame_skippable), their records counted.
 *
 * This is one kind of reader (struct st__trace); several traces merged
 * are another (many.c, whose inputs are traces); source.c gives both the
 * public functions (reader_internal.h, "what a reader is").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meta_format.h"
#include "trace_format.h"
#include "reader_internal.h"
#include "zstd_input.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

_Static_assert(ST_READER_MAX_ARGS == ST_MAX_ARGS, "public and format argument limits differ");

#define DEFAULT_BUFFER (1u << 20)
#define MIN_BUFFER 4096u
#define READ_CHUNK (128u << 10) /* per read(): small enough that the copy stays in cache for parsing */
#define MAX_IDS (1u << 16) /* distinct mapped IDs: QEMU has ~5400 events; beyond is garbage */

/* One mapped event ID. */
struct idslot {
    uint64_t id;
    const struct st_event_info *ev; /* NULL: the name is not in the catalog */
    char *name;                     /* that undeclared name (for the message), else NULL */
    size_t tried;                   /* a growing catalog's count when name was last looked for */
    bool used;
};

/* Event records counted by summaries (zstd_seek_format.h), per event: by catalog index, or by mapped name / ID. */
struct sums {
    uint64_t *by_index;     /* by_index[i]: the catalog's event i */
    size_t nindex;
    struct undecl_sum {
        char *name;         /* owned; NULL: known by ID only */
        uint64_t id, count;
    } *undecl;
    size_t nundecl;
    uint32_t pieces;        /* pieces whose summary is in */
    uint64_t write_lost;
    bool failed;            /* out of memory: the counts are not whole */
};

/* ID -> event, open addressing with linear probing; capacity a power of two. */
struct idmap {
    struct idslot *slots;
    uint32_t count; /* at most MAX_IDS */
    unsigned bits;  /* capacity = 1 << bits */
};

enum source { SRC_FD, SRC_STREAM, SRC_MEMORY };

/* One piece: a file (data NULL), or size bytes at data; name owned. */
struct piece {
    char *name;
    const void *data;
    size_t size;
};

/* The pieces of a trace read as one (st_reader_open_pieces(), ST_READER_ROTATED). */
struct piece_seq {
    struct piece *items;           /* n == 0 for a one-file reader */
    size_t n, cap;
    size_t cur;                    /* the piece being read */
    uint64_t done_bytes;           /* bytes of the pieces before cur */
    char *base;                    /* a rotated trace's path (more pieces may come in follow mode), else NULL */
    uint64_t next_number;          /* the number of base's piece after items[n - 1] */
};

struct st__trace {
    struct st_reader base;   /* first: what the public functions are handed (trace_ops) */
    /* The fields every record touches, in the structure's first cache lines,
       the record last: a merge reads its inputs in turn, one record each, and
       pays for every line an input's record touches. */
    const uint8_t *pos;  /* next unconsumed byte */
    const uint8_t *end;  /* end of the bytes read */
    uint64_t pos_offset; /* file offset of pos (of the decompressed stream when zin) */
    uint64_t number;     /* number of the last record consumed */
    struct idmap ids;
    int failed;          /* err.code, read before every record (set by fail() only) */
    int version;
    size_t cap;          /* buffer size = largest record accepted */
    unsigned flags;
    int pid_match;       /* filter_pid's decision for this piece: -1 not yet, 0 no, 1 yes */
    bool header_done;
    bool swap;           /* file in the other byte order */
    bool index_ids;      /* unmapped IDs index the catalog */
    bool filtering;      /* any of the filters below is set */
    bool filter_pid;     /* the description's pid decides, once per piece (none: refused) */
    bool shifting;       /* timestamps are moved: ST_READER_ALIGN_REALTIME or an offset */
    bool have_origin;
    bool scan_only;      /* st_catalog_load_trace(), prime(): declarations only, every event record skipped */
    uint64_t origin;
    struct st_reader_counters counters; /* records and events in the second line */
    const struct st_catalog *cat;
    struct st_catalog *grow; /* cat, when it grows with the trace's declarations (else NULL) */
    struct st_record rec;

    char *name;
    enum source src;
    int fd;
    bool own_fd;
    bool eof_ends;       /* follow mode on a pipe: EOF is still the end */
    FILE *stream;
    uint8_t *buf;        /* NULL for memory sources */
    struct st__zin *zin; /* a compressed piece's decompressor, else NULL */

    uint8_t *selected;   /* per event index, NULL = all */
    size_t nselected;    /* entries of selected: a growing catalog's later events are added as met */
    bool filter_tid, filter_from, filter_to;
    uint32_t tid, pid;
    int64_t from_ns, to_ns;

    bool need_shift;     /* the shift is found at the next record (a description came, or none will) */
    bool align;          /* ST_READER_ALIGN_REALTIME */
    int64_t offset;      /* the caller's offset for this trace */
    int64_t shift;       /* what is added to the timestamps under the current description */

    struct st_reader_seen seen; /* what the filters skipped */
    struct st_reader_error err;
    struct st__meta meta; /* the description and declarations the trace carries (meta_format.h) */
    struct st__conflicts conflicts; /* the catalog against those declarations (conflict.c) */
    struct piece_seq seq;
    bool own_grow;          /* grow is the reader's own (opened without a catalog), freed at close */
    bool priming;           /* prime(): reading the mapping records before the first event record */
    char *events_spec;      /* the event filter, for the events a growing catalog gains */
    struct st_reader_compression zdone; /* what the compressed pieces read before the current one showed */
    struct sums sums;       /* the summaries of the pieces read before the current one (ST_READER_SUMMARY) */
};

static void trace_close(struct st__trace *r);

/* --- errors ---------------------------------------------------------------- */

__attribute__((format(printf, 5, 6)))
static int fail(struct st__trace *r, int code, uint64_t offset, uint64_t record, const char *fmt, ...)
{
    va_list ap;
    r->failed = r->err.code = code;
    r->err.offset = offset;
    r->err.record = record;
    va_start(ap, fmt);
    int n = vsnprintf(r->err.message, sizeof r->err.message, fmt, ap);
    va_end(ap);
    if (r->zin && n >= 0 && (size_t)n < sizeof r->err.message && !strstr(r->err.message, "compressed byte"))
        st__zin_where(r->zin, r->err.message + n, sizeof r->err.message - (size_t)n);
    return code;
}

/* Copies up to 64 bytes of a name from the file into out, '?' for unprintable bytes. */
static const char *printable(char out[68], const uint8_t *s, size_t len)
{
    size_t n = len < 64 ? len : 64, i;
    for (i = 0; i < n; i++)
        out[i] = s[i] >= 0x20 && s[i] < 0x7f ? (char)s[i] : '?';
    if (n < len)
        out[i++] = '.', out[i++] = '.', out[i++] = '.';
    out[i] = 0;
    return out;
}

/* --- input ----------------------------------------------------------------- */

/* Reads up to room bytes of the file at p: bytes read, 0 at EOF, -EAGAIN if interrupted in follow mode, -errno. */
static ssize_t raw_read(struct st__trace *r, uint8_t *p, size_t room)
{
    if (r->src == SRC_STREAM) {
        if (r->flags & ST_READER_FOLLOW)
            clearerr(r->stream); /* retry after an earlier EOF */
        size_t got = fread(p, 1, room, r->stream);
        if (got == 0 && ferror(r->stream))
            return -EIO;
        return (ssize_t)got;
    }
    for (;;) {
        ssize_t got = read(r->fd, p, room < READ_CHUNK ? room : READ_CHUNK);
        if (got >= 0)
            return got;
        if (errno != EINTR)
            return -errno;
        if (r->flags & ST_READER_FOLLOW)
            return -EAGAIN; /* let the caller look at its stop flag */
    }
}

static ssize_t zin_raw(void *ctx, uint8_t *p, size_t room)
{
    return raw_read(ctx, p, room);
}

/* Reads up to room bytes of the trace at p (decompressed when it is); as raw_read(). */
static ssize_t read_some(struct st__trace *r, uint8_t *p, size_t room)
{
    if (r->zin)
        return st__zin_read(r->zin, p, room, r->pos == r->end);
    return raw_read(r, p, room);
}

/*
 * Makes n bytes available at pos. Returns 0, 1 when the input ends first,
 * or a negative errno from reading.
 */
static int fill(struct st__trace *r, size_t n)
{
    size_t avail = (size_t)(r->end - r->pos);
    if (avail >= n)
        return 0;
    if ((r->src == SRC_MEMORY && !r->zin) || n > r->cap)
        return 1;
    if (r->pos != r->buf) {
        memmove(r->buf, r->pos, avail);
        r->pos = r->buf;
        r->end = r->buf + avail;
    }
    while (avail < n) {
        ssize_t got = read_some(r, r->buf + avail, r->cap - avail);
        if (got == 0)
            return 1;
        if (got < 0)
            return (int)got;
        avail += (size_t)got;
        r->end = r->buf + avail;
    }
    return 0;
}

static int later_piece(struct st__trace *r);

/*
 * fill(), and in follow mode what the end of input means: 0 (the bytes are
 * there), 1 (the real end: another piece follows, or EOF ends a pipe),
 * -EAGAIN (wait for the writer) or a negative errno.
 */
static int fill_or_end(struct st__trace *r, size_t n)
{
    int ret = fill(r, n);
    if (ret != 1 || !(r->flags & ST_READER_FOLLOW) || r->eof_ends)
        return ret;
    if ((ret = later_piece(r)) <= 0)
        return ret < 0 ? ret : -EAGAIN;
    /* The writer finishes a piece before it creates the next: what it
       appended after our last read is there now, and nothing more comes. */
    return fill(r, n);
}

/* A read error: the decompressor's message, or the system's. */
static int read_failed(struct st__trace *r, int ret, uint64_t num)
{
    if (r->zin && *st__zin_message(r->zin))
        return fail(r, ret, r->pos_offset, num, "%s", st__zin_message(r->zin));
    return fail(r, ret, r->pos_offset, num, "read error: %s", strerror(-ret));
}

/*
 * Makes n bytes of the record `what` (number num) available. Returns 0, or
 * -EAGAIN (follow mode, not there yet) or a recorded error.
 */
static int need_slow(struct st__trace *r, size_t n, uint64_t num, const char *what)
{
    int ret = fill_or_end(r, n);
    if (ret == 0 || ret == -EAGAIN || (ret < 0 && r->failed))
        return ret;
    if (ret < 0)
        return read_failed(r, ret, num);
    if (r->zin && st__zin_cut(r->zin))
        return fail(r, -ENODATA, r->pos_offset, num, "%s", st__zin_message(r->zin));
    return fail(r, -ENODATA, r->pos_offset, num, "the file ends inside %s (%zu of %zu bytes present)", what,
                (size_t)(r->end - r->pos), n);
}

static inline int need(struct st__trace *r, size_t n, uint64_t num, const char *what)
{
    if (LIKELY((size_t)(r->end - r->pos) >= n))
        return 0;
    return need_slow(r, n, num, what);
}

static int more_slow(struct st__trace *r, uint64_t num)
{
    int ret = fill_or_end(r, 1);
    if (ret == 1 && r->zin && st__zin_cut(r->zin))
        return fail(r, -ENODATA, r->pos_offset, num, "%s", st__zin_message(r->zin));
    if (ret >= 0)
        return !ret;
    if (ret == -EAGAIN || r->failed)
        return ret;
    return read_failed(r, ret, num);
}

/* At a record boundary: 1 if a record starts here, 0 at the clean end, -EAGAIN, or an error. */
static inline int more(struct st__trace *r, uint64_t num)
{
    if (LIKELY(r->pos < r->end))
        return 1;
    return more_slow(r, num);
}

static inline void consume(struct st__trace *r, size_t n, uint64_t num)
{
    r->pos += n;
    r->pos_offset += n;
    r->number = num;
    r->counters.records++;
}

static inline uint64_t ld64(const struct st__trace *r, const uint8_t *p)
{
    return st__fmt_load_u64(p, r->swap);
}

static inline uint32_t ld32(const struct st__trace *r, const uint8_t *p)
{
    return st__fmt_load_u32(p, r->swap);
}

/* --- event IDs -------------------------------------------------------------- */

static size_t id_hash(uint64_t id, unsigned bits)
{
    return (size_t)((id * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - bits));
}

static inline struct idslot *idmap_find(const struct idmap *m, uint64_t id)
{
    if (!m->slots)
        return NULL;
    size_t mask = ((size_t)1 << m->bits) - 1;
    for (size_t i = id_hash(id, m->bits);; i = (i + 1) & mask) {
        struct idslot *s = &m->slots[i];
        if (!s->used || s->id == id)
            return s;
    }
}

/* Doubles the table (or creates it). 0 or -ENOMEM. */
static int idmap_grow(struct idmap *m)
{
    unsigned bits = m->slots ? m->bits + 1 : 4; /* 16 slots: a trace's few IDs in a few lines (a merge reads many at once) */
    struct idslot *slots = calloc((size_t)1 << bits, sizeof *slots);
    if (!slots)
        return -ENOMEM;
    struct idmap bigger = {slots, m->count, bits};
    for (size_t i = 0; m->slots && i < ((size_t)1 << m->bits); i++)
        if (m->slots[i].used)
            *idmap_find(&bigger, m->slots[i].id) = m->slots[i];
    free(m->slots);
    *m = bigger;
    return 0;
}

static void idmap_free(struct idmap *m)
{
    for (size_t i = 0; m->slots && i < ((size_t)1 << m->bits); i++)
        free(m->slots[i].name);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

/* Records a mapping record: id now means the event called name. */
static int map_id(struct st__trace *r, uint64_t id, const uint8_t *name, uint32_t len, uint64_t num)
{
    struct idmap *m = &r->ids;
    struct idslot *s = idmap_find(m, id);
    if (!s || (!s->used && (m->count + 1) * 2 > ((size_t)1 << m->bits))) {
        if (m->count >= MAX_IDS)
            return fail(r, -E2BIG, r->pos_offset, num, "more than %u distinct event IDs in mapping records",
                        MAX_IDS);
        if (idmap_grow(m) < 0)
            return fail(r, -ENOMEM, r->pos_offset, num, "out of memory for event IDs");
        s = idmap_find(m, id);
    }
    const struct st_event_info *ev = st__catalog_find_n(r->cat, (const char *)name, len);
    char *copy = NULL;
    if (!ev) { /* keep the name: a declaration may follow (growing catalog); else for the error */
        copy = malloc((size_t)len + 1);
        if (!copy)
            return fail(r, -ENOMEM, r->pos_offset, num, "out of memory for event names");
        memcpy(copy, name, len);
        copy[len] = 0;
    }
    if (!s->used)
        m->count++;
    free(s->name);
    *s = (struct idslot){id, ev, copy, r->cat->count, true};
    return 0;
}

/* The event an ID stands for, or NULL with the error recorded. */
static const struct st_event_info *lookup_fail(struct st__trace *r, uint64_t id, uint64_t num,
                                              const struct idslot *s)
{
    if (r->grow && r->grow->count == 0) {
        fail(r, -ENOENT, r->pos_offset, num,
             "the trace carries no event declarations (written by QEMU, or by simpletrace before 0.2): "
             "give its trace-events files");
        return NULL;
    }
    if (s && s->used) {
        char buf[68];
        fail(r, -ENOENT, r->pos_offset, num, "event ID %llu is mapped to '%s', which the %s", (unsigned long long)id,
             printable(buf, (const uint8_t *)s->name, strlen(s->name)),
             r->grow ? "trace does not declare (give its trace-events files)"
                     : "trace-events files do not declare");
        return NULL;
    }
    if (r->index_ids)
        fail(r, -ENOENT, r->pos_offset, num, "unknown event ID %llu (the trace-events files declare %zu events)",
             (unsigned long long)id, r->cat->count);
    else
        fail(r, -ENOENT, r->pos_offset, num, "unknown event ID %llu (no mapping record names it)",
             (unsigned long long)id);
    return NULL;
}

/* Slot s, mapped to a name the catalog did not have, now means ev (when not NULL). */
static const struct st_event_info *slot_resolve(struct idslot *s, const struct st_event_info *ev)
{
    if (ev) {
        s->ev = ev;
        free(s->name);
        s->name = NULL;
    }
    return ev;
}

/* A mapped ID whose name a growing catalog has gained since: resolved now, and kept. */
static const struct st_event_info *resolve_late(const struct st__trace *r, struct idslot *s)
{
    if (!r->grow || !s || !s->used || s->ev || s->tried == r->grow->count)
        return NULL;
    s->tried = r->grow->count;
    return slot_resolve(s, st__catalog_find_n(r->cat, s->name, strlen(s->name)));
}

static inline const struct st_event_info *lookup(struct st__trace *r, uint64_t id, uint64_t num)
{
    struct idslot *s = idmap_find(&r->ids, id);
    if (LIKELY(s && s->used && s->ev))
        return s->ev;
    if (!(s && s->used) && r->index_ids && !r->grow && id < r->cat->count)
        return r->cat->at[id + r->cat->grows];
    const struct st_event_info *late = resolve_late(r, s);
    if (late)
        return late;
    if (r->flags & ST_READER_UNDECLARED)
        return NULL; /* delivered undecoded (deliver_undeclared) */
    return lookup_fail(r, id, num, s);
}

/* --- records ---------------------------------------------------------------- */

/* Whether the event filter selects ev, an event a growing catalog gained after the filter was compiled. */
static bool select_late(struct st__trace *r, const struct st_event_info *ev)
{
    if (st__filter_extend(r->cat, r->events_spec, &r->selected, &r->nselected) < 0)
        return true; /* out of memory: a record shown rather than lost */
    return r->selected[ev->index];
}

/* Whether the filter passes a record of ev. */
static bool selected(struct st__trace *r, const struct st_event_info *ev, uint64_t ts, uint32_t pid, bool has_pid)
{
    if (r->selected && (!ev || (ev->index < r->nselected ? !r->selected[ev->index] : !select_late(r, ev))))
        return false;
    if (r->filter_pid && !r->pid_match)
        return false;
    if (r->filter_tid && (!has_pid || pid != r->tid))
        return false;
    int64_t rel = (int64_t)(ts - r->origin);
    if (r->filter_from && rel < r->from_ns)
        return false;
    if (r->filter_to && rel > r->to_ns)
        return false;
    return true;
}

/*
 * The record does not hold what ev declares: a trace-events file that does
 * not match the trace (a changed declaration, another program's file).
 * Names the event, the declared arguments' size and the record's.
 */
static int mismatch(struct st__trace *r, const struct st_event_info *ev, size_t plen, uint64_t num,
                    const char *what)
{
    return fail(r, -EBADMSG, r->pos_offset, num,
                "event %s: %s (%zu payload bytes for %u declared argument%s): the trace-events files do not "
                "match the trace",
                ev->name, what, plen, ev->nargs, ev->nargs == 1 ? "" : "s");
}

/* Decodes the v2/v4 payload p[0..plen) into r->rec.args; the declared arguments must take it exactly. */
static inline int decode_args(struct st__trace *r, const struct st_event_info *ev, const uint8_t *p, size_t plen,
                       uint64_t num)
{
    const uint8_t *pend = p + plen;
    struct st_value *v = r->rec.args;
    char what[160];
    for (unsigned i = 0; i < ev->nargs; i++, v++) {
        const struct st_arg_info *a = &ev->args[i];
        if (a->kind == ST_VALUE_STRING) {
            if (UNLIKELY(pend - p < 4))
                goto short_record;
            uint32_t slen = ld32(r, p);
            p += 4;
            if (UNLIKELY(slen > (size_t)(pend - p))) {
                snprintf(what, sizeof what, "string argument '%s' is %u bytes long but only %zu bytes remain",
                         a->name, slen, (size_t)(pend - p));
                return mismatch(r, ev, plen, num, what);
            }
            *v = (struct st_value){ST_VALUE_STRING, slen, (const char *)p, slen};
            p += slen;
        } else {
            if (UNLIKELY(pend - p < 8))
                goto short_record;
            *v = (struct st_value){a->kind, ld64(r, p), NULL, 0};
            p += 8;
        }
    }
    if (LIKELY(p == pend))
        return 0;
    snprintf(what, sizeof what, "%zu bytes are left after the last declared argument", (size_t)(pend - p));
    return mismatch(r, ev, plen, num, what);
short_record:
    snprintf(what, sizeof what, "argument '%s' (number %u) lies past the end of the record",
             ev->args[v - r->rec.args].name, (unsigned)(v - r->rec.args) + 1);
    return mismatch(r, ev, plen, num, what);
}

/* Fills the fixed fields of r->rec. */
static void set_record(struct st__trace *r, const struct st_event_info *ev, uint64_t id, uint64_t ts,
                       uint32_t pid, bool has_pid, uint64_t num)
{
    struct st_record *rec = &r->rec;
    rec->event = ev;
    rec->name = ev ? ev->name : NULL;
    rec->id = id;
    rec->timestamp_ns = ts;
    rec->pid = pid;
    rec->has_pid = has_pid;
    rec->dropped = false;
    rec->dropped_count = 0;
    rec->number = num;
    rec->offset = r->pos_offset;
    rec->nargs = ev ? ev->nargs : 0;
}

/* A record of an event the catalog does not declare (ST_READER_UNDECLARED): its mapped name, no arguments. */
static int deliver_undeclared(struct st__trace *r, uint64_t id, uint64_t ts, uint32_t pid, bool has_pid,
                              uint64_t num)
{
    const struct idslot *s = idmap_find(&r->ids, id);
    set_record(r, NULL, id, ts, pid, has_pid, num);
    r->rec.name = s && s->used ? s->name : NULL;
    return 1;
}

static int pid_decide(struct st__trace *r);

/* The shift of the description in force (Aligning clocks in reader.h). 0 or the recorded error. */
static int find_shift(struct st__trace *r, uint64_t num)
{
    const struct st__desc *d = r->meta.cur;
    int64_t clocks = 0;
    if (r->align && !(d && (d->desc.anchor_mono_ns || d->desc.anchor_real_ns)))
        return fail(r, -ENODATA, r->pos_offset, num,
                    "no clock anchors (a QEMU trace, or simpletrace's before 0.2): its timestamps cannot be "
                    "aligned on wall-clock time");
    if (r->align)
        clocks = (int64_t)(d->desc.anchor_real_ns - d->desc.anchor_mono_ns);
    if (__builtin_add_overflow(clocks, r->offset, &r->shift))
        return fail(r, -ERANGE, r->pos_offset, num, "the offset %lld ns and the clock anchors' difference %lld ns "
                    "overflow", (long long)r->offset, (long long)clocks);
    r->need_shift = false;
    return 0;
}

/* Moves *ts by the shift (ST_READER_ALIGN_REALTIME, offsets). 0 or the recorded error. */
static int shift_ts(struct st__trace *r, uint64_t *ts, uint64_t num)
{
    int ret;
    if (r->need_shift && (ret = find_shift(r, num)) < 0)
        return ret;
    uint64_t t = *ts + (uint64_t)r->shift;
    if (r->shift >= 0 ? t < *ts : t > *ts)
        return fail(r, -ERANGE, r->pos_offset, num, "timestamp %llu moved by %lld ns leaves 0..2^64-1",
                    (unsigned long long)*ts, (long long)r->shift);
    *ts = t;
    return 0;
}

/*
 * Resolves, counts, filters and decodes one v2/v4 event record whose payload
 * is p[0..plen). Returns 1 (delivered), 0 (filtered out) or an error.
 */
static inline int take_event(struct st__trace *r, uint64_t id, uint64_t ts, uint32_t pid, const uint8_t *p,
                      size_t plen, uint64_t num)
{
    const struct st_event_info *ev;
    bool dropped = id == ST_DROPPED_EVENT_ID;
    int ret;
    if (UNLIKELY(r->shifting) && (ret = shift_ts(r, &ts, num)) < 0)
        return ret;
    if (dropped) {
        ev = st__catalog_dropped(r->cat);
        if (plen < 8)
            return fail(r, -EBADMSG, r->pos_offset, num, "dropped-event record too short for its count (%zu payload bytes)",
                        plen);
        r->counters.dropped_records++;
        r->counters.dropped_events += ld64(r, p);
    } else {
        ev = lookup(r, id, num);
        if (!ev && r->failed)
            return r->failed;
        r->counters.events++;
    }
    if (UNLIKELY(!r->have_origin)) {
        r->have_origin = true;
        r->origin = ts;
    }
    if (UNLIKELY(r->pid_match < 0) && r->filter_pid && pid_decide(r) < 0)
        return r->failed;
    if (r->filtering && !selected(r, ev, ts, pid, true)) {
        r->counters.filtered++;
        st__seen_note(&r->seen, ts, pid, true);
        return 0;
    }
    if (UNLIKELY(!ev))
        return deliver_undeclared(r, id, ts, pid, true, num);
    set_record(r, ev, id, ts, pid, true, num);
    ret = decode_args(r, ev, p, plen, num);
    if (ret < 0)
        return ret;
    if (dropped) {
        r->rec.dropped = true;
        r->rec.dropped_count = r->rec.args[0].u64;
    }
    return 1;
}

/*
 * Whether every record of the compressed frame e describes would be
 * filtered out (and it holds nothing a later record needs: no header, no
 * mapping of any kind): outside --from/--to, or of another process. With
 * ST_READER_SUMMARY and no filter, whether the piece's summary answers for
 * it: it holds neither the first nor the last timestamp (extreme), which
 * the caller reads as a full read shows them, and a description is in
 * force (records before any have no process: only reading says whether
 * there are such).
 * 1 yes, 0 no, -1 not known yet: the origin (the first event's time)
 * and the shift must be known, so the times compare exactly as
 * selected() compares them.
 */
/* frame_skippable() with filters: 1 when they drop every record of e, 0 no, -1 not known yet. */
static int filters_skip(const struct st__trace *r, const struct st__ztime_entry *e)
{
    if (r->filter_pid && r->pid_match == 0)
        return 1;
    if (!(r->filter_from || r->filter_to))
        return 0;
    if (!r->have_origin || (r->shifting && r->need_shift))
        return -1;
    uint64_t shift = r->shifting ? (uint64_t)r->shift : 0;
    int64_t first = (int64_t)(e->first_ns + shift - r->origin), last = (int64_t)(e->last_ns + shift - r->origin);
    return (r->filter_from && last < r->from_ns) || (r->filter_to && first > r->to_ns);
}

/*
 * frame_skippable() without filters, ST_READER_SUMMARY: whether the piece's
 * summary answers for the frame; -1 before a description is in force (its
 * records' process is known only by reading them, when none comes first).
 */
static int summary_skip(const struct st__trace *r, bool extreme)
{
    if (!(r->flags & ST_READER_SUMMARY) || extreme || !st__zin_summary(r->zin))
        return 0;
    return r->meta.cur ? 1 : -1;
}

static int frame_skippable(void *ctx, const struct st__ztime_entry *e, bool extreme)
{
    struct st__trace *r = ctx;
    if (e->flags & (ST_ZTIME_META | ST_ZTIME_NOTIME))
        return 0;
    int w = r->filtering ? filters_skip(r, e) : summary_skip(r, extreme);
    /* Reading the head (prime(), scan_only): a frame the records delivered later may skip ends the reading. */
    return w > 0 && r->scan_only ? -1 : w;
}

/* A frame was skipped: its records count as a full read would have counted them, all filtered. */
static void frame_skipped(void *ctx, const struct st__ztime_entry *e, uint32_t dsize)
{
    struct st__trace *r = ctx;
    r->pos_offset += dsize;
    r->number += e->records;
    r->counters.records += e->records;
    r->counters.events += e->events;
    r->counters.dropped_records += e->dropped_records;
    r->counters.dropped_events += e->dropped_events;
    r->counters.filtered += (uint64_t)e->events + e->dropped_records;
    if (e->events + e->dropped_records) /* its thread ids are not known: only its last time */
        st__seen_note(&r->seen, e->last_ns + (r->shifting ? (uint64_t)r->shift : 0), 0, false);
}

/* Checks the length field of a v2/v4 event record. */
static inline int check_length(struct st__trace *r, uint32_t len, size_t extra, uint64_t num)
{
    if (UNLIKELY(len < ST_LENGTH_BASE))
        return fail(r, -EBADMSG, r->pos_offset, num, "event record length %u is less than %u", len, ST_LENGTH_BASE);
    if (UNLIKELY(len + extra > r->cap))
        return fail(r, -E2BIG, r->pos_offset, num, "event record length %u exceeds the %zu-byte limit", len,
                    r->cap);
    return 0;
}

/* The records that follow were written by the process the meta store's current description names. */
static void use_description(struct st__trace *r)
{
    const struct st__desc *d = r->meta.cur;
    r->rec.process_pid = d ? d->desc.pid : 0;
    r->rec.process_program = d ? d->desc.program : "";
    r->pid_match = -1;          /* filter_pid decides again (pid_decide) */
    r->need_shift = r->shifting; /* and the shift is that description's */
}

/*
 * A declaration the trace carries, for a growing catalog: its event added
 * (or found), and the ID it declares resolved at once when it is mapped
 * to that name. 0 or the recorded error.
 */
static int declare(struct st__trace *r, uint32_t id, const char *text, uint32_t len, uint64_t num)
{
    const struct st_event_info *ev;
    char msg[320];
    int ret = st__catalog_declare(r->grow, r->seq.n ? r->seq.items[r->seq.cur].name : r->name, text, len, &ev,
                                  msg, sizeof msg);
    if (ret < 0)
        return fail(r, ret, r->pos_offset, num, "%s", msg);
    struct idslot *s = idmap_find(&r->ids, id);
    if (s && s->used && !s->ev && s->name && !strcmp(s->name, ev->name))
        slot_resolve(s, ev);
    return 0;
}

/* Reads a mapping record that carries a declaration, the description or a process record (meta_format.h). */
static int take_meta(struct st__trace *r, uint64_t id, uint32_t len, uint64_t num)
{
    const char *what = st__meta_is_info(id) ? "description" : st__meta_is_proc(id) ? "process" : "declaration";
    if (len > ST_META_MAX_LEN)
        return fail(r, -EBADMSG, r->pos_offset, num, "%s record has %u bytes (at most %u)", what, len,
                    ST_META_MAX_LEN);
    int ret = need(r, ST_MAPPING_FIXED_SIZE + len, num, "a mapping record");
    if (ret < 0)
        return ret;
    const char *text = (const char *)r->pos + ST_MAPPING_FIXED_SIZE;
    ret = st__meta_is_info(id)   ? st__meta_set_info(&r->meta, text, len)
          : st__meta_is_proc(id) ? st__meta_set_proc(&r->meta, st__meta_proc_number(id), text, len)
                                : st__meta_set_decl(&r->meta, st__meta_decl_event(id), text, len);
    bool again = ret == 1; /* a declaration seen before (a new piece repeats them) */
    if (ret < 0)
        return fail(r, ret, r->pos_offset, num, "%s",
                    ret == -ENOMEM                          ? "out of memory for the trace's description"
                    : ret == -E2BIG && st__meta_is_proc(id)  ? "process record for a process number over 2^16"
                    : ret == -E2BIG                         ? "declaration for an event ID over 2^20"
                                                            : "malformed description (want simpletrace=1, then "
                                                              "KEY=VALUE lines)");
    if (st__meta_is_decl(id) && !again && r->grow && (ret = declare(r, st__meta_decl_event(id), text, len, num)) < 0)
        return ret;
    if (st__meta_is_decl(id) && !again && !r->grow)
        st__conflict_check(&r->conflicts, r->cat, text, len);
    if (!st__meta_is_decl(id))
        use_description(r);
    consume(r, ST_MAPPING_FIXED_SIZE + len, num);
    return 0;
}

/* Reads a v4 mapping record. 0 or an error. */
static int take_mapping(struct st__trace *r, uint64_t num)
{
    int ret = need(r, ST_MAPPING_FIXED_SIZE, num, "a mapping record");
    if (ret < 0)
        return ret;
    uint64_t id = ld64(r, r->pos + 8);
    uint32_t len = ld32(r, r->pos + 16);
    if (st__meta_is_decl(id) || st__meta_is_info(id) || st__meta_is_proc(id))
        return take_meta(r, id, len, num);
    if (len > ST_MAX_NAME)
        return fail(r, -EBADMSG, r->pos_offset, num,
                    "mapping record for ID %llu has a %u-byte name (at most %u)", (unsigned long long)id, len,
                    ST_MAX_NAME);
    ret = need(r, ST_MAPPING_FIXED_SIZE + len, num, "a mapping record");
    if (ret < 0)
        return ret;
    ret = map_id(r, id, r->pos + ST_MAPPING_FIXED_SIZE, len, num);
    if (ret < 0)
        return ret;
    consume(r, ST_MAPPING_FIXED_SIZE + len, num);
    r->counters.mappings++;
    return 0;
}

/* The next delivered record of a v4 file: 1, 0 at the end, or an error. */
static int next_v4(struct st__trace *r)
{
    for (;;) {
        uint64_t num = r->number + 1;
        int ret;
        if (UNLIKELY(r->pos == r->end)) {
            if ((ret = more_slow(r, num)) <= 0)
                return ret;
            num = r->number + 1; /* compressed frames skipped meanwhile counted their records (frame_skipped) */
        }
        if ((ret = need(r, 8, num, "a record type word")) < 0)
            return ret;
        if (ld64(r, r->pos) == ST_RECORD_TYPE_MAPPING) {
            if ((ret = take_mapping(r, num)) < 0)
                return ret;
            continue;
        }
        /* Any other type is an event record, as simpletrace.py reads it. */
        if ((ret = need(r, ST_EVENT_FIXED_SIZE, num, "an event record header")) < 0)
            return ret;
        const uint8_t *p = r->pos;
        uint32_t len = ld32(r, p + ST_EV_OFF_LENGTH);
        if ((ret = check_length(r, len, 8, num)) < 0)
            return ret;
        if ((ret = need(r, 8 + (size_t)len, num, "an event record")) < 0)
            return ret;
        p = r->pos; /* need() may have moved the bytes */
        if (UNLIKELY(r->scan_only)) {
            if (r->priming)
                return 0; /* the head is read: the record stays for st_reader_next() */
            consume(r, 8 + (size_t)len, num);
            continue;
        }
        ret = take_event(r, ld64(r, p + ST_EV_OFF_ID), ld64(r, p + ST_EV_OFF_TIMESTAMP), ld32(r, p + ST_EV_OFF_PID),
                         p + ST_EV_OFF_PAYLOAD, len - ST_LENGTH_BASE, num);
        if (ret < 0)
            return ret;
        consume(r, 8 + (size_t)len, num);
        if (ret == 1)
            return 1;
    }
}

/* The next delivered record of a v2/v3 file (no type word, no mappings). */
static int next_v2(struct st__trace *r)
{
    for (;;) {
        uint64_t num = r->number + 1;
        int ret = more(r, num);
        if (ret <= 0)
            return ret;
        if ((ret = need(r, ST_V2_FIXED_SIZE, num, "an event record header")) < 0)
            return ret;
        uint32_t len = ld32(r, r->pos + 16);
        if ((ret = check_length(r, len, 0, num)) < 0)
            return ret;
        if ((ret = need(r, len, num, "an event record")) < 0)
            return ret;
        const uint8_t *p = r->pos;
        ret = take_event(r, ld64(r, p), ld64(r, p + 8), ld32(r, p + 20), p + ST_V2_FIXED_SIZE,
                         len - ST_LENGTH_BASE, num);
        if (ret < 0)
            return ret;
        consume(r, len, num);
        if (ret == 1)
            return 1;
    }
}

/* Decodes one 64-byte v0 record at r->pos: 1, 0 (filtered) or an error. */
static int take_v0(struct st__trace *r, uint64_t num)
{
    const uint8_t *p = r->pos;
    uint64_t id = ld64(r, p), ts = ld64(r, p + 8);
    const struct st_event_info *ev;
    int ret;
    if (UNLIKELY(r->shifting) && (ret = shift_ts(r, &ts, num)) < 0)
        return ret;
    if (id == ST_DROPPED_EVENT_ID) {
        ev = st__catalog_dropped(r->cat);
        r->counters.dropped_records++;
        r->counters.dropped_events += ld64(r, p + 16);
    } else {
        if (!(ev = lookup(r, id, num)) && r->failed)
            return r->failed;
        if (ev && ev->nargs > ST_V0_ARGS)
            return fail(r, -EBADMSG, r->pos_offset, num, "event %s declares %u arguments; v0 records hold %u",
                        ev->name, ev->nargs, ST_V0_ARGS);
        r->counters.events++;
    }
    if (UNLIKELY(!r->have_origin)) {
        r->have_origin = true;
        r->origin = ts;
    }
    if (r->filtering && !selected(r, ev, ts, 0, false)) {
        r->counters.filtered++;
        st__seen_note(&r->seen, ts, 0, false);
        return 0;
    }
    if (!ev)
        return deliver_undeclared(r, id, ts, 0, false, num);
    set_record(r, ev, id, ts, 0, false, num);
    for (unsigned i = 0; i < ev->nargs; i++) {
        /* v0 had no strings: a char * was recorded as its address. */
        enum st_value_kind k = ev->args[i].kind == ST_VALUE_INTEGER ? ST_VALUE_INTEGER : ST_VALUE_POINTER;
        r->rec.args[i] = (struct st_value){k, ld64(r, p + 16 + 8 * i), NULL, 0};
    }
    if (id == ST_DROPPED_EVENT_ID) {
        r->rec.dropped = true;
        r->rec.dropped_count = r->rec.args[0].u64;
    }
    return 1;
}

/* The next delivered record of a v0 file. */
static int next_v0(struct st__trace *r)
{
    for (;;) {
        uint64_t num = r->number + 1;
        int ret = more(r, num);
        if (ret <= 0)
            return ret;
        if ((ret = need(r, ST_V0_RECORD_SIZE, num, "a v0 record")) < 0)
            return ret;
        if ((ret = take_v0(r, num)) < 0)
            return ret;
        consume(r, ST_V0_RECORD_SIZE, num);
        if (ret == 1)
            return 1;
    }
}

/* Whether n bytes at p are printable ASCII or blanks (a text file, e.g. trace-events given as the trace). */
static bool looks_like_text(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') || p[i] >= 0x7f)
            return false;
    return true;
}

/*
 * A process filter on a file that cannot answer it: the pid field is a
 * thread id or a process id depending on the writer, so acting on it would
 * silently be a thread filter for simpletrace's own traces.
 */
static int refuse_process_filter(struct st__trace *r)
{
    return fail(r, -EOPNOTSUPP, 0, 0,
                "cannot select the records of process %lu: this trace (format version %d) does not record which "
                "process wrote it; its pid field holds thread ids (simpletrace) or the process id (QEMU)",
                (unsigned long)r->pid, r->version);
}

static int frame_skippable(void *ctx, const struct st__ztime_entry *e, bool extreme);
static void frame_skipped(void *ctx, const struct st__ztime_entry *e, uint32_t dsize);

/*
 * A piece that starts with a zstd frame is read through a decompressor
 * from now on; the bytes read so far are its first. 0 (compressed or
 * not), -EAGAIN, or a recorded error.
 */
static int detect_zstd(struct st__trace *r)
{
    int ret = fill_or_end(r, 4);
    if (ret == -EAGAIN)
        return ret;
    if (ret != 0 || !st__zin_magic(r->pos, (size_t)(r->end - r->pos)))
        return 0; /* too short, or not compressed: the header's checks say what it is */
    bool memory = r->src == SRC_MEMORY;
    if (!r->buf && !(r->buf = malloc(r->cap)))
        return fail(r, -ENOMEM, 0, 0, "out of memory for decompressing");
    ret = st__zin_new(&r->zin, memory ? r->pos : NULL, (size_t)(r->end - r->pos), zin_raw, r,
                      r->src == SRC_FD ? r->fd : -1, r->pos, (size_t)(r->end - r->pos));
    if (ret < 0)
        return fail(r, ret, 0, 0, "out of memory for decompressing");
    st__zin_set_skip(r->zin, frame_skippable, frame_skipped);
    r->pos = r->end = r->buf;
    return 0;
}

/* Reads the header: version, byte order. 0, -EAGAIN or an error. */
static int read_header(struct st__trace *r)
{
    if (!r->zin && r->pos_offset == 0 && !(r->flags & ST_READER_NO_HEADER)) {
        int zret = detect_zstd(r);
        if (zret < 0)
            return zret;
    }
    if (r->flags & ST_READER_NO_HEADER) {
        r->version = ST_FORMAT_VERSION;
        r->index_ids = true;
        r->header_done = true;
        return r->filter_pid ? refuse_process_filter(r) : 0;
    }
    int ret;
    /* No byte at all: what a program leaves that died before its first write, not a damaged header. */
    if (r->pos == r->end && r->pos_offset == 0 && (ret = fill_or_end(r, 1)) != 0) {
        if (ret == 1)
            return fail(r, -ENODATA, 0, 0, "empty trace (0 bytes): the program wrote nothing to it (it ended before "
                        "its first write; with crash=DIR, simpletrace recover may rebuild what it traced)");
        if (ret == -EAGAIN)
            return ret;
    }
    if ((ret = need(r, ST_HEADER_SIZE, 0, "the 24-byte header")) < 0)
        return ret;
    uint64_t id = st__fmt_get_u64(r->pos), magic = st__fmt_get_u64(r->pos + 8);
    if (id != ST_HEADER_EVENT_ID && looks_like_text(r->pos, ST_HEADER_SIZE)) {
        char start[68];
        return fail(r, -EBADMSG, 0, 0, "not a trace file: it begins with text (\"%s\"), as a trace-events file does",
                    printable(start, r->pos, 20));
    }
    if (id != ST_HEADER_EVENT_ID)
        return fail(r, -EBADMSG, 0, 0, "not a simpletrace file: the header starts with 0x%016llx, not 0xffffffffffffffff",
                    (unsigned long long)id);
    if (magic == ST_HEADER_MAGIC)
        r->swap = false;
    else if (__builtin_bswap64(magic) == ST_HEADER_MAGIC)
        r->swap = true;
    else
        return fail(r, -EBADMSG, 0, 0, "not a simpletrace file: header magic 0x%016llx is not 0x%016llx in either byte order",
                    (unsigned long long)magic, (unsigned long long)ST_HEADER_MAGIC);
    uint64_t version = ld64(r, r->pos + 16);
    size_t size = ST_HEADER_SIZE;
    switch (version) {
    case 0:
        size = ST_V0_RECORD_SIZE; /* the header is a whole 64-byte record */
        if ((ret = need(r, size, 0, "the 64-byte v0 header record")) < 0)
            return ret;
        /* fallthrough */
    case 2:
    case 3:
        r->index_ids = true;
        break;
    case 4:
        break;
    default:
        return fail(r, -EPROTONOSUPPORT, 0, 0, "unsupported trace format version %llu (known: 0, 2, 3, 4)",
                    (unsigned long long)version);
    }
    r->version = (int)version;
    r->pos += size;
    r->pos_offset += size;
    r->header_done = true;
    /* v4: the description after the header says which process; the first record decides (pid_decide). */
    return r->filter_pid && r->version != 4 ? refuse_process_filter(r) : 0;
}

/*
 * --pid on a v4 file, at its first event or dropped record: the process
 * its description names is the one asked for, or not (every record of the
 * piece then filtered out); without a description, the filter is refused.
 */
static int pid_decide(struct st__trace *r)
{
    if (!r->meta.cur)
        return refuse_process_filter(r);
    r->pid_match = r->meta.cur->desc.pid == r->pid;
    return 0;
}

/* The next delivered record of the current piece (or only file): 1, 0 at its end, or an error. */
static int next_in_piece(struct st__trace *r)
{
    int ret;
    if (!r->header_done && (ret = read_header(r)) < 0)
        return ret;
    switch (r->version) {
    case 0: return next_v0(r);
    case 2:
    case 3: return next_v2(r);
    default: return next_v4(r);
    }
}

static int next_piece(struct st__trace *r);

int st__trace_next(struct st__trace *r, const struct st_record **rec)
{
    if (r->failed)
        return r->failed;
    for (;;) {
        int ret = next_in_piece(r);
        if (ret == 1)
            *rec = &r->rec;
        if (ret != 0 || r->seq.cur + 1 >= r->seq.n || UNLIKELY(r->priming)) /* prime(): the first piece's head */
            return ret;
        if ((ret = next_piece(r)) < 0)
            return ret;
    }
}

/* --- sources ---------------------------------------------------------------- */

/* Makes the file at path ("-" = standard input) the input. 0 or -errno of open(). */
static int attach_file(struct st__trace *r, const char *path)
{
    r->src = SRC_FD;
    r->pos = r->end = r->buf;
    if (!strcmp(path, "-")) {
        r->fd = STDIN_FILENO;
    } else if ((r->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        return -errno;
    } else {
        r->own_fd = true;
    }
    struct stat st;
    r->eof_ends = fstat(r->fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode);
    return 0;
}

static void attach_memory(struct st__trace *r, const void *data, size_t size)
{
    r->src = SRC_MEMORY;
    r->pos = data;
    r->end = r->pos + size;
    r->eof_ends = false;
}

/* The event a summary's id stands for in this piece: its catalog entry, else its mapped name (or neither). */
static const struct st_event_info *sum_event(struct st__trace *r, uint64_t id, const char **name)
{
    struct idslot *s = idmap_find(&r->ids, id);
    *name = NULL;
    if (!(s && s->used))
        return NULL;
    const struct st_event_info *ev = s->ev ? s->ev : resolve_late(r, s);
    *name = ev ? ev->name : s->name;
    return ev;
}

/* Adds count records of id (this piece's) to u. 0 or -ENOMEM. */
static int sums_add(struct st__trace *r, struct sums *u, uint64_t id, uint64_t count)
{
    const char *name;
    const struct st_event_info *ev = sum_event(r, id, &name);
    if (ev) {
        if (ev->index >= u->nindex) {
            size_t n = r->cat->count + 1 > ev->index + 1 ? r->cat->count + 1 : (size_t)ev->index + 1;
            uint64_t *more = realloc(u->by_index, n * sizeof *more);
            if (!more)
                return -ENOMEM;
            memset(more + u->nindex, 0, (n - u->nindex) * sizeof *more);
            u->by_index = more;
            u->nindex = n;
        }
        u->by_index[ev->index] += count;
        return 0;
    }
    for (size_t i = 0; i < u->nundecl; i++) {
        struct undecl_sum *x = &u->undecl[i];
        if (name ? x->name && !strcmp(x->name, name) : !x->name && x->id == id) {
            x->count += count;
            return 0;
        }
    }
    struct undecl_sum *more = realloc(u->undecl, (u->nundecl + 1) * sizeof *more);
    if (!more)
        return -ENOMEM;
    u->undecl = more;
    char *copy = name ? strdup(name) : NULL;
    if (name && !copy)
        return -ENOMEM;
    u->undecl[u->nundecl++] = (struct undecl_sum){copy, id, count};
    return 0;
}

/* Adds the current piece's summary (it has one) to u. */
static void sums_add_piece(struct st__trace *r, struct sums *u, const struct st__zindex *ix)
{
    for (uint32_t i = 0; i < ix->nsum && !u->failed; i++)
        if (ix->sum[i].records && sums_add(r, u, ix->sum[i].id, ix->sum[i].records) < 0)
            u->failed = true;
    u->write_lost += ix->write_lost;
    u->pieces++;
}

static void sums_free(struct sums *u)
{
    for (size_t i = 0; i < u->nundecl; i++)
        free(u->undecl[i].name);
    free(u->undecl);
    free(u->by_index);
    memset(u, 0, sizeof *u);
}

/* Adds what the compressed piece just read showed to r->zdone, and frees its decompressor. */
static void zin_done(struct st__trace *r)
{
    struct st__zin_figures f;
    if (!r->zin)
        return;
    const struct st__zindex *sum = st__zin_summary(r->zin);
    if (sum)
        sums_add_piece(r, &r->sums, sum);
    st__zin_figures(r->zin, &f);
    r->zdone.compressed = true;
    r->zdone.seekable = f.seekable;
    r->zdone.frames += f.frames;
    r->zdone.frames_read += f.frames_read;
    r->zdone.frames_skipped += f.frames_skipped;
    r->zdone.frames_ahead += f.frames_ahead;
    r->zdone.compressed_bytes += f.compressed_bytes;
    r->zdone.decompressed_bytes += f.decompressed_bytes;
    st__zin_free(r->zin);
    r->zin = NULL;
}

/* Closes the file the reader opened, if any. */
static void detach(struct st__trace *r)
{
    zin_done(r);
    if (r->own_fd)
        close(r->fd);
    r->own_fd = false;
    r->fd = -1;
}

/* --- pieces ----------------------------------------------------------------- */

/* Appends a piece, taking over name (freed on failure). 0 or -ENOMEM. */
static int seq_push(struct piece_seq *s, char *name, const void *data, size_t size)
{
    if (!name)
        return -ENOMEM;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        struct piece *items = realloc(s->items, cap * sizeof *items);
        if (!items) {
            free(name);
            return -ENOMEM;
        }
        s->items = items;
        s->cap = cap;
    }
    s->items[s->n++] = (struct piece){name, data, size};
    return 0;
}

static void seq_free(struct piece_seq *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->items[i].name);
    free(s->items);
    free(s->base);
    memset(s, 0, sizeof *s);
}

/* Makes piece i the input. 0 or -errno of open(). */
static int attach_piece(struct st__trace *r, size_t i)
{
    const struct piece *p = &r->seq.items[i];
    r->seq.cur = i;
    if (p->data) {
        attach_memory(r, p->data, p->size);
        return 0;
    }
    return attach_file(r, p->name);
}

/*
 * Whether a piece follows the current one: 1, 0, or a recorded error. For
 * a rotated trace in follow mode, looks each time for the writer's next piece.
 */
static int later_piece(struct st__trace *r)
{
    struct piece_seq *s = &r->seq;
    if (s->cur + 1 < s->n)
        return 1;
    if (!s->base)
        return 0;
    char *name = st__piece_name(s->base, s->next_number);
    if (name && !st__piece_exists(name)) {
        free(name);
        return 0;
    }
    if (seq_push(s, name, NULL, 0) < 0)
        return fail(r, -ENOMEM, r->pos_offset, r->number, "out of memory for the list of pieces");
    s->next_number++;
    return 1;
}

/*
 * At the clean end of a piece, goes on to the next: a file of its own
 * (offsets from 0, its own header and IDs), the same counters, record
 * numbers and origin. 0 or the recorded error.
 */
static int next_piece(struct st__trace *r)
{
    detach(r);
    r->seq.done_bytes += r->pos_offset;
    r->pos_offset = 0;
    r->header_done = false;
    r->version = 0;
    r->swap = false;
    r->index_ids = false;
    idmap_free(&r->ids);
    st__meta_new_piece(&r->meta); /* each piece describes itself */
    use_description(r);
    int ret = attach_piece(r, r->seq.cur + 1);
    if (ret < 0)
        return fail(r, ret, 0, 0, "cannot open this piece: %s", strerror(-ret));
    return 0;
}

/* --- opening and closing ---------------------------------------------------- */

/* The advice in a struct_size message. */
#define SET_SIZE "set it to sizeof the structure"

/* Fills the caller's err (NULL is fine; its struct_size was checked by st__open_args()). */
__attribute__((format(printf, 3, 4)))
void st__set_open_error(struct st_reader_error *err, int code, const char *fmt, ...)
{
    struct st_reader_error e = {.struct_size = sizeof e, .code = code};
    va_list ap;
    if (!err)
        return;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    st__struct_out(err, &e, sizeof e, ST__READER_ERROR_V1);
}

/*
 * What every open function does first: *out = NULL, err's struct_size
 * checked (too small: -EINVAL, nothing written), the caller's options read
 * into *o (defaults for NULL; too small a struct_size: -EINVAL in err).
 */
int st__open_args(struct st_reader **out, const struct st_reader_options *opts, size_t ntraces,
                  struct st_reader_error *err, struct st_reader_options *o)
{
    *out = NULL;
    if (err && st__struct_size(err) < ST__READER_ERROR_V1)
        return -EINVAL;
    if (!opts) {
        memset(o, 0, sizeof *o);
        o->struct_size = sizeof *o;
        return 0;
    }
    if (st__struct_size(opts) < ST__READER_OPTIONS_V1) {
        st__set_open_error(err, -EINVAL, "struct st_reader_options: struct_size %u is less than %zu (%s)",
                       (unsigned)st__struct_size(opts), (size_t)ST__READER_OPTIONS_V1, SET_SIZE);
        return -EINVAL;
    }
    st__struct_in(o, sizeof *o, opts, st__struct_size(opts));
    if (o->noffsets ? o->noffsets != ntraces || !o->offsets_ns : o->offsets_ns != NULL) {
        st__set_open_error(err, -EINVAL, "offsets_ns: %zu offsets for %zu trace%s", o->noffsets, ntraces,
                           ntraces == 1 ? "" : "s");
        return -EINVAL;
    }
    return 0;
}

/* -EINVAL with the message when opts ask for a rotated trace from what is not a path. */
static int refuse_rotated(const struct st_reader_options *opts, struct st_reader_error *err)
{
    if (!(opts->flags & ST_READER_ROTATED))
        return 0;
    st__set_open_error(err, -EINVAL, "%s", "ST_READER_ROTATED needs st_reader_open() and a path");
    return -EINVAL;
}

/*
 * Allocates a reader with opts (read by st__open_args()) applied; the
 * source is set by the caller. cat NULL: the catalog grows with the
 * trace's declarations: shared's (several inputs), else one of its own.
 */
static int reader_new(struct st__trace **out, const char *name, const struct st_catalog *cat,
                      struct st_catalog *shared, const struct st_reader_options *opts, bool buffered,
                      struct st_reader_error *err)
{
    *out = NULL;
    size_t cap = opts->buffer_size ? opts->buffer_size : DEFAULT_BUFFER;
    if (cap < MIN_BUFFER) {
        st__set_open_error(err, -EINVAL, "read buffer smaller than %u bytes", MIN_BUFFER);
        return -EINVAL;
    }
    if (!cat && (opts->flags & ST_READER_NO_HEADER)) {
        st__set_open_error(err, -EINVAL, "%s", "ST_READER_NO_HEADER needs a catalog: records without a header "
                           "carry no declarations");
        return -EINVAL;
    }
    struct st__trace *r = calloc(1, sizeof *r);
    if (r && !cat && !shared)
        r->own_grow = (shared = st__catalog_new_growing()) != NULL;
    if (r && !cat)
        cat = r->grow = shared;
    if (!r || !cat || !(r->name = strdup(name)) || (buffered && !(r->buf = malloc(cap))) ||
        (opts->events && !(r->events_spec = strdup(opts->events)))) {
        trace_close(r);
        st__set_open_error(err, -ENOMEM, "%s", "out of memory");
        return -ENOMEM;
    }
    r->base.ops = &st__trace_ops;
    r->err.struct_size = sizeof r->err;
    r->cat = cat;
    r->flags = opts->flags;
    r->cap = cap;
    r->fd = -1;
    int ret = st__filter_compile(cat, opts->events, &r->selected);
    r->nselected = cat->count + 1;
    if (ret < 0) {
        trace_close(r);
        st__set_open_error(err, ret, "bad event filter '%s' (an empty pattern?)", opts->events);
        return ret;
    }
    r->filter_tid = opts->filter_tid;
    r->tid = opts->tid;
    r->filter_pid = opts->filter_pid;
    r->pid_match = -1;
    r->pid = opts->pid;
    r->filter_from = opts->filter_from;
    r->from_ns = opts->from_ns;
    r->filter_to = opts->filter_to;
    r->to_ns = opts->to_ns;
    r->align = (opts->flags & ST_READER_ALIGN_REALTIME) != 0;
    r->offset = opts->offsets_ns && opts->noffsets ? opts->offsets_ns[0] : 0;
    r->shifting = r->need_shift = r->align || r->offset;
    r->conflicts.fn = opts->conflict;
    r->conflicts.opaque = opts->conflict_opaque;
    r->filtering = r->selected || r->filter_tid || r->filter_pid || r->filter_from || r->filter_to;
    r->pos = r->end = r->buf;
    r->rec.process_program = "";
    *out = r;
    return 0;
}

/*
 * A trace read without a catalog: its head, the header and the mapping
 * records before the first event record, read now, so that the caller
 * finds the declarations a writer puts first in the catalog it asks for
 * (a pipe is read once either way: nothing is read twice). An error, or
 * a live trace with nothing more yet, stops it: st_reader_next() goes on
 * from there and reports the error.
 */
static struct st__trace *prime(struct st__trace *r)
{
    const struct st_record *rec;
    if (!r->grow || r->failed || (!r->header_done && read_header(r) < 0) || r->version != 4)
        return r;
    r->priming = r->scan_only = true;
    (void)st__trace_next(r, &rec); /* not next_v4() itself: it stays inlined in the one loop that reads records */
    r->priming = r->scan_only = false;
    return r;
}

/* Opens the first piece of r's list into *out; closes r when that fails. */
static int start_pieces(struct st__trace **out, struct st__trace *r, struct st_reader_error *err)
{
    int ret = attach_piece(r, 0);
    if (ret < 0) {
        st__set_open_error(err, ret, "%s", strerror(-ret));
        trace_close(r);
        r = NULL;
    }
    *out = r ? prime(r) : NULL;
    return ret;
}

/* Piece i of the caller's array, whose elements are stride bytes apart (pieces[0].struct_size). */
static struct st_reader_piece piece_at(const struct st_reader_piece *pieces, size_t stride, size_t i)
{
    struct st_reader_piece p;
    st__struct_in(&p, sizeof p, (const char *)pieces + i * stride, stride);
    return p;
}

ST_API int st_reader_open_pieces(struct st_reader **out, const struct st_reader_piece *pieces, size_t npieces,
                                 const struct st_catalog *cat, const struct st_reader_options *opts,
                                 struct st_reader_error *err)
{
    struct st_reader_options o;
    int ret = st__open_args(out, opts, 1, err, &o);
    if (ret < 0 || (ret = refuse_rotated(&o, err)) < 0)
        return ret;
    if (npieces == 0) {
        st__set_open_error(err, -EINVAL, "%s", "no pieces to read");
        return -EINVAL;
    }
    size_t stride = st__struct_size(pieces);
    if (stride < ST__READER_PIECE_V1) {
        st__set_open_error(err, -EINVAL, "struct st_reader_piece: struct_size %zu is less than %zu (%s)", stride,
                       (size_t)ST__READER_PIECE_V1, SET_SIZE);
        return -EINVAL;
    }
    bool files = false; /* memory pieces need no buffer */
    for (size_t i = 0; i < npieces; i++)
        files |= !piece_at(pieces, stride, i).data;
    struct st__trace *r;
    if ((ret = reader_new(&r, piece_at(pieces, stride, 0).name, cat, NULL, &o, files, err)) < 0)
        return ret;
    for (size_t i = 0; i < npieces && ret == 0; i++) {
        struct st_reader_piece p = piece_at(pieces, stride, i);
        ret = seq_push(&r->seq, strdup(p.name), p.data, p.size);
    }
    if (ret < 0) {
        trace_close(r);
        st__set_open_error(err, ret, "%s", "out of memory");
        return ret;
    }
    struct st__trace *t;
    ret = start_pieces(&t, r, err);
    *out = pub(t);
    return ret;
}

/* st_reader_open() of a rotated trace: its pieces found now, more in follow mode later. */
static int open_rotated(struct st__trace **out, const char *path, const struct st_catalog *cat,
                        struct st_catalog *shared, const struct st_reader_options *opts, struct st_reader_error *err)
{
    uint64_t first, count;
    int ret = st_rotated_find(path, &first, &count);
    if (ret < 0) {
        if (ret == -ENOENT)
            st__set_open_error(err, ret, "no such file, nor any piece %s.N of it", path);
        else if (ret == -EINVAL)
            st__set_open_error(err, ret, "%s", "standard input cannot be read as a rotated trace");
        else
            st__set_open_error(err, ret, "%s", strerror(-ret));
        return ret;
    }
    struct st__trace *r;
    if ((ret = reader_new(&r, path, cat, shared, opts, true, err)) < 0)
        return ret;
    for (uint64_t k = first; k - first < count && ret == 0; k++)
        ret = seq_push(&r->seq, st__piece_name(path, k), NULL, 0);
    r->seq.next_number = first + count;
    if (ret < 0 || !(r->seq.base = strdup(path))) {
        trace_close(r);
        st__set_open_error(err, -ENOMEM, "%s", "out of memory");
        return -ENOMEM;
    }
    return start_pieces(out, r, err);
}

/* st_reader_open() with the options read, and shared: the growing catalog of several inputs (cat NULL). */
static int open_path(struct st__trace **out, const char *path, const struct st_catalog *cat,
                     struct st_catalog *shared, const struct st_reader_options *o, struct st_reader_error *err)
{
    if (o->flags & ST_READER_ROTATED)
        return open_rotated(out, path, cat, shared, o, err);
    struct st__trace *r;
    int ret = reader_new(&r, path, cat, shared, o, true, err);
    if (ret < 0)
        return ret;
    if ((ret = attach_file(r, path)) < 0) {
        st__set_open_error(err, ret, "%s", strerror(-ret));
        trace_close(r);
        return ret;
    }
    *out = prime(r);
    return 0;
}

ST_API int st_reader_open(struct st_reader **out, const char *path, const struct st_catalog *cat,
                          const struct st_reader_options *opts, struct st_reader_error *err)
{
    struct st_reader_options o;
    struct st__trace *t = NULL;
    int ret = st__open_args(out, opts, 1, err, &o);
    if (ret == 0 && (ret = open_path(&t, path, cat, NULL, &o, err)) == 0)
        *out = pub(t);
    return ret;
}

int st__trace_open_shared(struct st__trace **out, const char *path, struct st_catalog *grow,
                          const struct st_reader_options *o, struct st_reader_error *err)
{
    *out = NULL;
    return open_path(out, path, NULL, grow, o, err);
}

ST_API int st_reader_open_stream(struct st_reader **out, FILE *f, const char *name, const struct st_catalog *cat,
                                 const struct st_reader_options *opts, struct st_reader_error *err)
{
    struct st_reader_options o;
    struct st__trace *t = NULL;
    int ret = st__open_args(out, opts, 1, err, &o);
    if (ret == 0 && (ret = refuse_rotated(&o, err)) == 0 &&
        (ret = reader_new(&t, name, cat, NULL, &o, true, err)) == 0) {
        t->src = SRC_STREAM;
        t->stream = f;
        *out = pub(prime(t));
    }
    return ret;
}

ST_API int st_reader_open_memory(struct st_reader **out, const void *data, size_t size, const char *name,
                                 const struct st_catalog *cat, const struct st_reader_options *opts,
                                 struct st_reader_error *err)
{
    struct st_reader_options o;
    struct st__trace *t = NULL;
    int ret = st__open_args(out, opts, 1, err, &o);
    if (ret == 0 && (ret = refuse_rotated(&o, err)) == 0 &&
        (ret = reader_new(&t, name, cat, NULL, &o, false, err)) == 0) {
        attach_memory(t, data, size);
        *out = pub(prime(t));
    }
    return ret;
}

/* Pieces begun so far: the one being read and those before it. */
static uint64_t pieces_begun(const struct st__trace *t)
{
    return t->seq.n ? t->seq.cur + 1 : 1;
}

ST_API int st_reader_get_compression(const struct st_reader *r, struct st_reader_compression *c)
{
    struct st_reader_compression sum = {.struct_size = sizeof sum};
    if (!r || !c || st__struct_size(c) < ST__READER_COMPRESSION_V1)
        return -EINVAL;
    if (r->ops != &st__trace_ops) { /* several traces: their sums */
        sum.summarized = r->ops->input_count(r) > 0;
        for (size_t i = 0; i < r->ops->input_count(r); i++) {
            struct st_reader_compression one = {.struct_size = sizeof one};
            st_reader_get_compression(r->ops->input(r, i), &one);
            sum.compressed |= one.compressed;
            sum.seekable |= one.seekable;
            sum.frames += one.frames;
            sum.frames_read += one.frames_read;
            sum.frames_skipped += one.frames_skipped;
            sum.frames_ahead += one.frames_ahead;
            sum.compressed_bytes += one.compressed_bytes;
            sum.decompressed_bytes += one.decompressed_bytes;
            sum.summarized &= one.summarized;
            sum.write_lost_events += one.write_lost_events;
        }
        return st__struct_out(c, &sum, sizeof sum, ST__READER_COMPRESSION_V1);
    }
    const struct st__trace *t = st__trace_of_c(r);
    sum = t->zdone;
    sum.struct_size = sizeof sum;
    sum.write_lost_events = t->sums.write_lost;
    uint64_t summaries = t->sums.pieces;
    if (t->zin) {
        struct st__zin_figures f;
        st__zin_figures(t->zin, &f);
        sum.compressed = true;
        sum.seekable = f.seekable;
        sum.frames += f.frames;
        sum.frames_read += f.frames_read;
        sum.frames_skipped += f.frames_skipped;
        sum.frames_ahead += f.frames_ahead;
        sum.compressed_bytes += f.compressed_bytes;
        sum.decompressed_bytes += f.decompressed_bytes;
        if (f.index_problem)
            snprintf(sum.index_problem, sizeof sum.index_problem, "%s", f.index_problem);
        const struct st__zindex *ix = st__zin_summary(t->zin);
        if (ix) {
            summaries++;
            sum.write_lost_events += ix->write_lost;
        }
    }
    sum.summarized = !t->sums.failed && summaries == pieces_begun(t);
    return st__struct_out(c, &sum, sizeof sum, ST__READER_COMPRESSION_V1);
}

/* The counts of u to fn. */
static void sums_give(const struct st__trace *t, const struct sums *u, st_reader_count_fn fn, void *opaque)
{
    for (size_t i = 0; i < u->nindex; i++)
        if (u->by_index[i] && i < t->cat->count + 1)
            fn(opaque, t->cat->at[i], t->cat->at[i]->name, 0, u->by_index[i]);
    for (size_t i = 0; i < u->nundecl; i++)
        fn(opaque, NULL, u->undecl[i].name, u->undecl[i].id, u->undecl[i].count);
}

ST_API int st_reader_summary_counts(const struct st_reader *r, st_reader_count_fn fn, void *opaque)
{
    if (!r || !fn)
        return -EINVAL;
    if (r->ops != &st__trace_ops) {
        for (size_t i = 0; i < r->ops->input_count(r); i++)
            st_reader_summary_counts(r->ops->input(r, i), fn, opaque);
        return 0;
    }
    struct st__trace *t = (struct st__trace *)st__trace_of_c(r); /* resolving a late name fills an ID's slot */
    const struct st__zindex *ix = t->zin ? st__zin_summary(t->zin) : NULL;
    if (!ix) {
        sums_give(t, &t->sums, fn, opaque);
        return 0;
    }
    /* The current piece's, added to the others' in a copy: each event reported once. */
    struct sums all = t->sums;
    all.by_index = all.nindex ? malloc(all.nindex * sizeof *all.by_index) : NULL;
    all.undecl = all.nundecl ? malloc(all.nundecl * sizeof *all.undecl) : NULL;
    if ((all.nindex && !all.by_index) || (all.nundecl && !all.undecl)) {
        free(all.by_index);
        free(all.undecl);
        return -ENOMEM;
    }
    if (all.nindex)
        memcpy(all.by_index, t->sums.by_index, all.nindex * sizeof *all.by_index);
    for (size_t i = 0; i < all.nundecl; i++) {
        all.undecl[i] = t->sums.undecl[i];
        all.undecl[i].name = t->sums.undecl[i].name ? strdup(t->sums.undecl[i].name) : NULL;
        if (t->sums.undecl[i].name && !all.undecl[i].name)
            all.failed = true;
    }
    sums_add_piece(t, &all, ix);
    int ret = all.failed ? -ENOMEM : 0;
    if (!ret)
        sums_give(t, &all, fn, opaque);
    sums_free(&all);
    return ret;
}

static void trace_close(struct st__trace *r)
{
    if (!r)
        return;
    detach(r);
    sums_free(&r->sums);
    idmap_free(&r->ids);
    st__meta_free(&r->meta);
    st__conflicts_free(&r->conflicts);
    seq_free(&r->seq);
    free(r->selected);
    free(r->events_spec);
    free(r->buf);
    free(r->name);
    if (r->own_grow)
        st_catalog_free(r->grow);
    free(r);
}

void st__trace_prefetch(const struct st__trace *r)
{
    __builtin_prefetch(r);
    __builtin_prefetch(&r->counters.events);
    __builtin_prefetch(&r->rec);
    __builtin_prefetch(&r->rec.args[1]);
    __builtin_prefetch(r->pos);
    __builtin_prefetch(r->pos + 64);
}

void st__trace_set_input(struct st__trace *r, unsigned input)
{
    r->rec.input = input;
}

void st__trace_scan_only(struct st__trace *r)
{
    r->scan_only = true;
}

struct st_catalog *st__trace_take_catalog(struct st__trace *r)
{
    r->own_grow = false;
    return r->grow;
}

/* --- what the public functions ask of one trace (source.c) ------------------------ */

int st__trace_description(const struct st__trace *r, struct st_trace_description *d)
{
    if (!r->meta.cur)
        return -ENODATA;
    struct st_trace_description now = r->meta.cur->desc;
    if (r->shifting && (now.anchor_mono_ns || now.anchor_real_ns)) { /* the anchors of the timestamps delivered */
        now.anchor_mono_ns = (r->align ? now.anchor_real_ns : now.anchor_mono_ns) + (uint64_t)r->offset;
        now.anchor_real_ns += (uint64_t)r->offset;
    }
    return st__struct_out(d, &now, sizeof now, ST__TRACE_DESCRIPTION_V1);
}

const char *st__trace_name(const struct st__trace *r)
{
    return r->seq.n ? r->seq.items[r->seq.cur].name : r->name;
}

int st__trace_version(const struct st__trace *r)
{
    return r->header_done ? r->version : -EAGAIN;
}

bool st__trace_swapped(const struct st__trace *r)
{
    return r->swap;
}

/* --- the public interface of one trace (st__source_ops) ---------------------------- */

static int trace_next(struct st_reader *r, const struct st_record **rec)
{
    return st__trace_next(st__trace_of(r), rec);
}

static const struct st_reader_error *trace_error(const struct st_reader *r)
{
    return &st__trace_of_c(r)->err;
}

static const struct st__trace *trace_current(const struct st_reader *r)
{
    return st__trace_of_c(r);
}

static size_t trace_input_count(const struct st_reader *r)
{
    (void)r;
    return 1;
}

static const struct st_reader *trace_input(const struct st_reader *r, size_t i)
{
    return i == 0 ? r : NULL;
}

static int trace_origin(const struct st_reader *r, uint64_t *ts)
{
    const struct st__trace *t = st__trace_of_c(r);
    if (!t->have_origin)
        return -ENODATA;
    *ts = t->origin;
    return 0;
}

static void trace_counters(const struct st_reader *r, struct st_reader_counters *c)
{
    const struct st__trace *t = st__trace_of_c(r);
    *c = t->counters;
    c->bytes = t->seq.done_bytes + t->pos_offset;
}

static void trace_seen(const struct st_reader *r, struct st_reader_seen *s)
{
    *s = st__trace_of_c(r)->seen;
}

static const struct st_catalog *trace_catalog(const struct st_reader *r)
{
    return st__trace_of_c(r)->cat;
}

static size_t trace_process_count(const struct st_reader *r)
{
    const struct st__trace *t = st__trace_of_c(r);
    return t->meta.nmet ? t->meta.nmet : 1;
}

static void trace_close_public(struct st_reader *r)
{
    trace_close(st__trace_of(r));
}

const struct st__source_ops st__trace_ops = {
    .next = trace_next,
    .error = trace_error,
    .current = trace_current,
    .input_count = trace_input_count,
    .input = trace_input,
    .origin = trace_origin,
    .counters = trace_counters,
    .seen = trace_seen,
    .catalog = trace_catalog,
    .process_count = trace_process_count,
    .close = trace_close_public,
};
