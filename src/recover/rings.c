/*
 * Ring files, checked by the rules of crash_format.h: the header field by
 * field, then the records of [tail, head), then the note of a write() the
 * death may have cut. Every read is bounded by the image's length: the
 * header is copied out (the image may be unaligned), head, tail and pending
 * are read through the header's offsets only after those were checked, and
 * ring bytes only within [ring_off, ring_off + ring_size).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "meta_format.h"
#include "recover_internal.h"
#include "trace_format.h"
#include "zrange.h"


/* Room for a path and the words around it. */
#define TEXT_MAX 4608

void st__rv_say(const struct st__recover_hooks *hk, enum st__recover_what what, const char *file,
                const char *field, uint64_t offset, uint64_t value, const char *fmt, ...)
{
    char text[TEXT_MAX];
    int at = 0;
    va_list ap;

    if (!hk->msg)
        return;
    if (file)
        at = snprintf(text, sizeof text, "%s: ", file);
    if (at < 0 || (size_t)at >= sizeof text)
        at = 0; /* a name longer than the line: say it without the name */
    va_start(ap, fmt);
    vsnprintf(text + at, sizeof text - (size_t)at, fmt, ap);
    va_end(ap);
    hk->msg(hk->ctx, &(struct st__recover_msg){what, file, field, offset, value, text});
}

/* Parses digits at *s up to a character not a digit; false when none or over UINT32_MAX. */
static bool parse_u32(const char **s, uint32_t *v)
{
    uint64_t n = 0;
    const char *p = *s;

    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++)
        if ((n = n * 10 + (uint64_t)(*p - '0')) > UINT32_MAX)
            return false;
    *v = (uint32_t)n;
    *s = p;
    return true;
}

/* pid and tid from a ring file's name, [.../]st-<pid>-<tid>.ring; false if it is not one. */
static bool name_ids(const char *name, uint32_t *pid, uint32_t *tid)
{
    const char *base = strrchr(name, '/');

    base = base ? base + 1 : name;
    if (strncmp(base, "st-", 3) != 0)
        return false;
    base += 3;
    if (!parse_u32(&base, pid) || *base++ != '-' || !parse_u32(&base, tid))
        return false;
    return strcmp(base, ".ring") == 0;
}

/*
 * A ring file the program died creating (ring_file.c: created, sized,
 * header, magic last): it holds no record. Kept as a thread with no
 * records, so that a death before any ring file was whole still recovers
 * (an empty trace). False when its name gives no pid and tid.
 */
static bool ring_unborn(const struct st__recover_image *img, struct st__rv_ring *r, const struct st__recover_hooks *hk)
{
    uint32_t pid, tid;

    if (!name_ids(img->name, &pid, &tid)) {
        st__rv_say(hk, ST_RECOVER_NOT_RING, img->name, NULL, 0, 0,
                   "no ring file header, and not named st-PID-TID.ring");
        return false;
    }
    memset(r, 0, sizeof *r);
    r->img = *img;
    r->unborn = true;
    r->h.pid = pid;
    r->h.tid = tid;
    st__rv_say(hk, ST_RECOVER_UNBORN, img->name, NULL, 0, 0,
               "no header yet (the program died creating it): no records in it");
    return true;
}

/* The first rule of crash_format.h a header (whose magic is right) breaks. */
struct hdr_problem {
    const char *field;
    size_t off;
    uint64_t val;
    const char *why;
};

/* Whether a u64 word at off lies between the header and the ring (ring_off >= header + 8 checked). */
static bool word_misplaced(uint64_t off, uint64_t ring_off)
{
    return off < ST_CRASH_HDR_SIZE || off > ring_off - 8;
}

static bool hdr_problem(const struct st__crash_hdr *h, size_t len, struct hdr_problem *p)
{
#define HDR_BAD(f, cond, text)                                                 \
    do {                                                                       \
        if (cond) {                                                            \
            *p = (struct hdr_problem){#f, offsetof(struct st__crash_hdr, f), h->f, #f " " text}; \
            return true;                                                       \
        }                                                                      \
    } while (0)
    HDR_BAD(version, h->version != ST_CRASH_VERSION, "is not this program's version");
    HDR_BAD(hdr_size, h->hdr_size != ST_CRASH_HDR_SIZE, "is not the header size");
    HDR_BAD(ring_size, h->ring_size < ST_CRASH_RING_MIN || (h->ring_size & (h->ring_size - 1)),
            "is not a power of two >= 4096");
    HDR_BAD(ring_off, h->ring_off < ST_CRASH_HDR_SIZE + 8 || h->ring_off > len || h->ring_size > len - h->ring_off,
            "does not leave the ring inside the file");
    HDR_BAD(head_off, word_misplaced(h->head_off, h->ring_off), "is not between header and ring");
    HDR_BAD(tail_off, word_misplaced(h->tail_off, h->ring_off), "is not between header and ring");
    HDR_BAD(pending_off, word_misplaced(h->pending_off, h->ring_off), "is not between header and ring");
    HDR_BAD(clock_tsc, h->clock_tsc > 1, "is neither 0 nor 1");
#undef HDR_BAD
    return false;
}

/* The u64 at byte off of the image (checked to lie inside it). */
static uint64_t image_u64(const struct st__recover_image *img, uint64_t off)
{
    return st__fmt_get_u64(img->data + off);
}

bool st__rv_ring_check(const struct st__recover_image *img, struct st__rv_ring *r, const struct st__recover_hooks *hk)
{
    struct hdr_problem p;
    struct st__crash_hdr h;

    if (img->len < ST_CRASH_HDR_SIZE)
        return ring_unborn(img, r, hk); /* created, not yet sized */
    memcpy(&h, img->data, sizeof h);
    if (h.magic == 0)
        return ring_unborn(img, r, hk); /* sized, header not finished */
    if (h.magic != ST_CRASH_MAGIC) {
        st__rv_say(hk, ST_RECOVER_NOT_RING, img->name, NULL, 0, h.magic, "not a ring file (byte 0: magic %#llx%s)",
                   (unsigned long long)h.magic,
                   h.magic == __builtin_bswap64(ST_CRASH_MAGIC) ? ": written by a machine of the other byte order" : "");
        return false;
    }
    if (hdr_problem(&h, img->len, &p)) {
        st__rv_say(hk, ST_RECOVER_BAD_HEADER, img->name, p.field, p.off, p.val,
                   "damaged header: byte %zu: %s (%llu); file left out", p.off, p.why, (unsigned long long)p.val);
        return false;
    }
    memset(r, 0, sizeof *r);
    r->img = *img;
    r->h = h;
    r->ring = img->data + h.ring_off;
    r->mask = h.ring_size - 1;
    r->head = image_u64(img, h.head_off);
    r->tail = image_u64(img, h.tail_off);
    r->pending = image_u64(img, h.pending_off);
    if (r->head < r->tail || r->head - r->tail > h.ring_size) {
        st__rv_say(hk, ST_RECOVER_BAD_HEAD_TAIL, img->name, "head", h.head_off, r->head,
                   "head %llu (byte %llu) and tail %llu (byte %llu) do not fit a ring of %llu bytes",
                   (unsigned long long)r->head, (unsigned long long)h.head_off, (unsigned long long)r->tail,
                   (unsigned long long)h.tail_off, (unsigned long long)h.ring_size);
        return false;
    }
    r->end = r->head;
    r->anchor_ok = true;
    return true;
}

void st__rv_ring_copy(const struct st__rv_ring *r, uint64_t pos, void *dst, size_t n)
{
    uint64_t off = pos & r->mask, first = r->mask + 1 - off;

    if (first > n)
        first = n;
    memcpy(dst, r->ring + off, (size_t)first);
    memcpy((uint8_t *)dst + first, r->ring, n - (size_t)first);
}

/*
 * False for the IDs meta_format.h reserves for the description and
 * declarations: a record with one would be "mapped" by such a record of
 * the trace recover writes. The runtime's event IDs are 32-bit.
 */
static bool event_id(uint64_t id)
{
    return !st__meta_is_info(id) && !st__meta_is_decl(id);
}

uint64_t st__rv_record_size(const struct st__rv_ring *r, uint64_t pos, uint64_t end, const char **why)
{
    uint8_t hdr[ST_EVENT_FIXED_SIZE];
    uint64_t size;
    const char *no = NULL;

    if (end - pos < ST_EVENT_FIXED_SIZE) {
        no = "fewer bytes left than a record's fixed part";
    } else {
        st__rv_ring_copy(r, pos, hdr, sizeof hdr);
        size = 8 + (uint64_t)st__fmt_get_u32(hdr + ST_EV_OFF_LENGTH);
        if (st__fmt_get_u64(hdr + ST_EV_OFF_TYPE) != ST_RECORD_TYPE_EVENT)
            no = "type is not 1";
        else if (size < ST_EVENT_FIXED_SIZE)
            no = "length shorter than the fixed part";
        else if (size > ST_MAX_EVENT_RECORD)
            no = "length beyond the largest record";
        else if (size > end - pos)
            no = "record runs past head";
        else if (!event_id(st__fmt_get_u64(hdr + ST_EV_OFF_ID)))
            no = "ID is one reserved for the description or declarations";
        else
            return size;
    }
    if (why)
        *why = no;
    return 0;
}

/* The anchors were being changed when the process died: b may be half old, half new. */
static void scan_anchors(struct st__rv_ring *r, const struct st__recover_hooks *hk)
{
    if (!(r->h.anchor_seq & 1))
        return;
    r->anchor_ok = false;
    st__rv_say(hk, ST_RECOVER_ANCHOR_TORN, r->img.name, "anchor_seq", offsetof(struct st__crash_hdr, anchor_seq),
               r->h.anchor_seq, "the clock anchors were being changed (byte %zu: anchor_seq %llu is odd): "
               "the latest one is not used", offsetof(struct st__crash_hdr, anchor_seq),
               (unsigned long long)r->h.anchor_seq);
}

/* A write in flight covers ring bytes from tail up to inflight_end: anything else is damage. */
static void scan_inflight(struct st__rv_ring *r, const struct st__recover_hooks *hk)
{
    uint64_t end = r->h.inflight_end;

    if (!(r->h.inflight_seq & 1) || (end >= r->tail && end <= r->head))
        return;
    r->h.inflight_seq++; /* even: no write in flight */
    st__rv_say(hk, ST_RECOVER_INFLIGHT_BAD, r->img.name, "inflight_end", offsetof(struct st__crash_hdr, inflight_end),
               end, "byte %zu: inflight_end %llu is not between tail %llu and head %llu: the note of a write in "
               "flight is ignored", offsetof(struct st__crash_hdr, inflight_end), (unsigned long long)end,
               (unsigned long long)r->tail, (unsigned long long)r->head);
}

/* Walks [tail, head): end stops at the first bytes that are not a record. */
static void scan_records(struct st__rv_ring *r, const struct st__recover_hooks *hk)
{
    uint64_t pos = r->tail, size;
    const char *why = NULL;

    while (pos < r->head && (size = st__rv_record_size(r, pos, r->head, &why)))
        pos += size;
    r->end = pos;
    if (pos == r->head)
        return;
    st__rv_say(hk, ST_RECOVER_BAD_RECORD, r->img.name, NULL, r->h.ring_off + (pos & r->mask), pos,
               "ring position %llu (byte %llu) does not hold a record; %llu bytes left out (%s)",
               (unsigned long long)pos, (unsigned long long)(r->h.ring_off + (pos & r->mask)),
               (unsigned long long)(r->head - pos), why);
}

void st__rv_ring_scan(struct st__rv_ring *r, const struct st__recover_hooks *hk)
{
    if (r->unborn)
        return;
    scan_anchors(r, hk);
    scan_inflight(r, hk);
    scan_records(r, hk);
}

/* Adds b to *a, stopping at UINT64_MAX (a damaged count must not wrap to a small one). */
static void add_sat(uint64_t *a, uint64_t b)
{
    *a = b > UINT64_MAX - *a ? UINT64_MAX : *a + b;
}

/*
 * Records with pid field tid among the whole records of a v4 byte stream
 * (what the writer staged: mappings and event records, as the write cut
 * left them in the trace file).
 */
static uint64_t count_in_file(const uint8_t *p, uint64_t len, uint32_t tid)
{
    uint64_t at = 0, n = 0;

    while (len - at >= ST_MAPPING_FIXED_SIZE) {
        uint64_t size;
        if (st__fmt_get_u64(p + at) == ST_RECORD_TYPE_MAPPING) {
            size = ST_MAPPING_FIXED_SIZE + (uint64_t)st__fmt_get_u32(p + at + 16);
        } else {
            if (len - at < ST_EVENT_FIXED_SIZE)
                break;
            size = 8 + (uint64_t)st__fmt_get_u32(p + at + ST_EV_OFF_LENGTH);
            if (size < ST_EVENT_FIXED_SIZE)
                break;
            if (size <= len - at && st__fmt_get_u32(p + at + ST_EV_OFF_PID) == tid)
                n++;
        }
        if (size > len - at)
            break;
        at += size;
    }
    return n;
}

/*
 * The records of a cut write that reached the trace file: those of this
 * thread (pid field = tid) among the whole records from the write's offset.
 * The writer's dropped record for the ring comes after them, so more of
 * them in the file than in the write means it arrived too.
 */
void st__rv_inflight(const struct st__rv_ring *r, const struct st__recover_trace *trace,
                     const struct st__rv_stream *s, const struct st__recover_hooks *hk, uint64_t *tail,
                     uint64_t *pending)
{
    const struct st__crash_hdr *h = &r->h;
    uint64_t end = h->inflight_end, n_ring = 0, n_file = 0, pos, size, skip;

    if (r->unborn || !(h->inflight_seq & 1))
        return;
    if (end > r->end)
        end = r->end; /* the records after a damaged one are not recovered anyway */
    for (pos = *tail; pos < end && (size = st__rv_record_size(r, pos, end, NULL)); pos += size)
        n_ring++;
    if (!trace) {
        st__rv_say(hk, ST_RECOVER_INFLIGHT_KEPT, r->img.name, NULL, 0, n_ring,
                   "the writeout thread was writing %llu of its records when the program died; "
                   "without --trace they are kept and may also end the trace file", (unsigned long long)n_ring);
        add_sat(pending, h->inflight_drop);
        return;
    }
    if (trace->ino == 0 || trace->dev != h->file_dev || trace->ino != h->file_ino) {
        st__rv_say(hk, ST_RECOVER_INFLIGHT_OTHER, r->img.name, NULL, 0, n_ring,
                   "--trace %s is not the file that was being written; records kept", trace->img.name);
        add_sat(pending, h->inflight_drop);
        return;
    }
    if (h->inflight_off >= s->base && h->inflight_off - s->base < s->len) {
        uint64_t at = h->inflight_off - s->base, avail = s->len - at;
        n_file = count_in_file(s->data + at, avail < h->inflight_len ? avail : h->inflight_len, h->tid);
    }
    skip = n_file < n_ring ? n_file : n_ring;
    st__rv_say(hk, ST_RECOVER_INFLIGHT_DONE, r->img.name, NULL, 0, skip,
               "%llu of the %llu records of the write cut by the death reached %s: left out here",
               (unsigned long long)skip, (unsigned long long)n_ring, trace->img.name);
    for (pos = *tail; skip; skip--)
        pos += st__rv_record_size(r, pos, end, NULL);
    *tail = pos;
    if (n_file <= n_ring)
        add_sat(pending, h->inflight_drop); /* its dropped record did not arrive */
}

/* --- the trace file's stream ------------------------------------------------ */

/* Most v4 bytes decompressed for the notes of a compressed trace (a write is one stage of 1 MiB). */
#define MAX_INFLIGHT ((uint64_t)64 << 20)

/* Whether ring r has a write in flight to the file trace. */
static bool writes_to(const struct st__rv_ring *r, const struct st__recover_trace *trace)
{
    return !r->unborn && (r->h.inflight_seq & 1) && trace->ino != 0 && trace->dev == r->h.file_dev &&
           trace->ino == r->h.file_ino;
}

int st__rv_stream_open(struct st__rv_stream *s, const struct st__recover *r, const struct st__recover_trace *trace)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    struct st__zrange_end e;

    memset(s, 0, sizeof *s);
    if (!trace)
        return 0;
    if (!st__zrange_is_zstd(trace->img.data, trace->img.len)) {
        s->data = trace->img.data;
        s->len = trace->img.len;
        return 0;
    }
    /*
     * Compressed: only the stretch the notes name (one write: the writer has
     * one in flight at a time, of one stage, 1 MiB). A note naming more is
     * damage; what is decompressed for it is bounded all the same.
     */
    for (size_t i = 0; i < r->n; i++) {
        const struct st__crash_hdr *h = &r->rings[i].h;
        uint64_t len = h->inflight_len < MAX_INFLIGHT ? h->inflight_len : MAX_INFLIGHT;
        if (!writes_to(&r->rings[i], trace))
            continue;
        lo = h->inflight_off < lo ? h->inflight_off : lo;
        hi = h->inflight_off + len > hi ? h->inflight_off + len : hi;
    }
    if (hi - lo > MAX_INFLIGHT)
        hi = lo + MAX_INFLIGHT;
    if (lo >= hi)
        return 0;
    if (st__zrange_read(trace->img.data, trace->img.len, lo, hi - lo, &s->dec, &e) < 0)
        return -ENOMEM;
    s->data = s->dec.data;
    s->base = lo;
    s->len = s->dec.len;
    if (e.stop == ST_ZRANGE_CUT)
        st__rv_say(&r->hooks, ST_RECOVER_TRACE_CUT, trace->img.name, NULL, e.frame_off, e.stop_off,
                   "the compressed trace ends inside zstd frame %llu (it starts at compressed byte %llu): read up "
                   "to compressed byte %llu, the file's end (v4 byte %llu); the records that frame gives up to "
                   "there are the ones that reached it",
                   (unsigned long long)e.frame, (unsigned long long)e.frame_off, (unsigned long long)e.stop_off,
                   (unsigned long long)e.dend);
    else if (e.stop == ST_ZRANGE_DAMAGED)
        st__rv_say(&r->hooks, ST_RECOVER_TRACE_DAMAGED, trace->img.name, NULL, e.frame_off, e.stop_off,
                   "zstd frame %llu at compressed byte %llu is damaged (%s): decoded up to compressed byte %llu (v4 "
                   "byte %llu); records after that point count as not written",
                   (unsigned long long)e.frame, (unsigned long long)e.frame_off, e.why, (unsigned long long)e.stop_off,
                   (unsigned long long)e.dend);
    return 0;
}

void st__rv_stream_free(struct st__rv_stream *s)
{
    st__growbuf_free(&s->dec);
}
