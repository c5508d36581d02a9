/*
 * The merge engine (merge.h): a k-way merge by raw timestamp, a run of
 * records at a time.
 *
 * A run is found by reading the record headers in place in the source,
 * copied with one memcpy per chunk, then its timestamps are converted (and
 * clamped) in the copy. With one source left, the whole of it is one run
 * (bounded by the sink's room) and no header is read before the copy.
 */
#include "merge.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"

/* Copies bytes [pos, pos + n) of s to dst, wrapping at the ring's end. */
static inline void src_copy(const struct st__merge_src *s, uint64_t pos, uint8_t *dst, size_t n)
{
    uint64_t off = pos & s->mask, first = s->size - off;

    if (__builtin_expect(first >= n, 1)) {
        memcpy(dst, s->ring + off, n);
    } else {
        memcpy(dst, s->ring + off, first);
        memcpy(dst + first, s->ring, n - first);
    }
}

/* The header of the record at pos (pos + 32 <= end): in place, or copied to tmp across the ring's end. */
static inline const uint8_t *src_header(const struct st__merge_src *s, uint64_t pos, uint8_t *tmp)
{
    uint64_t off = pos & s->mask;

    if (__builtin_expect(off + ST_EVENT_FIXED_SIZE <= s->size, 1))
        return s->ring + off;
    src_copy(s, pos, tmp, ST_EVENT_FIXED_SIZE);
    return tmp;
}

/* What is left of s is not records: skip it. */
static void src_bad(struct st__merge_src *s, const struct st__merge_sink *sink)
{
    s->pos = s->end;
    if (sink->bad)
        sink->bad(sink->ctx, s);
}

/* Loads the key of the record at s->pos; false when s has none left. */
static bool src_load(struct st__merge_src *s, const struct st__merge_sink *sink)
{
    uint8_t tmp[ST_EVENT_FIXED_SIZE];

    if (s->pos == s->end)
        return false;
    if (s->end - s->pos < ST_EVENT_FIXED_SIZE) {
        src_bad(s, sink); /* never happens with whole records */
        return false;
    }
    s->key = st__fmt_get_u64(src_header(s, s->pos, tmp) + ST_EV_OFF_TIMESTAMP);
    return true;
}

/* The size of the record at s->pos (a header is there), 0 when it is not a record. */
static uint64_t src_record_size(const struct st__merge_src *s)
{
    uint8_t tmp[ST_EVENT_FIXED_SIZE];
    uint64_t size = 8 + (uint64_t)st__fmt_get_u32(src_header(s, s->pos, tmp) + ST_EV_OFF_LENGTH);

    return size < ST_EVENT_FIXED_SIZE || size > ST_MAX_EVENT_RECORD || size > s->end - s->pos ? 0 : size;
}

/* --- the heap of sources, by key (index breaks ties) ------------------------ */

struct heap {
    struct st__merge_src *src;
    size_t *at;
    size_t n;
};

static inline bool older(const struct heap *h, size_t a, size_t b)
{
    const struct st__merge_src *x = &h->src[a], *y = &h->src[b];

    return x->key < y->key || (x->key == y->key && a < b);
}

static void heap_push(struct heap *h, size_t i)
{
    size_t at = h->n++;

    while (at > 0 && older(h, i, h->at[(at - 1) / 2])) {
        h->at[at] = h->at[(at - 1) / 2];
        at = (at - 1) / 2;
    }
    h->at[at] = i;
}

static size_t heap_pop(struct heap *h)
{
    size_t top = h->at[0], last = h->at[--h->n], at = 0;

    for (;;) {
        size_t kid = 2 * at + 1;
        if (kid >= h->n)
            break;
        if (kid + 1 < h->n && older(h, h->at[kid + 1], h->at[kid]))
            kid++;
        if (!older(h, h->at[kid], last))
            break;
        h->at[at] = h->at[kid];
        at = kid;
    }
    if (h->n)
        h->at[at] = last;
    return top;
}

/* --- runs ------------------------------------------------------------------ */

/*
 * The newest segment of a conversion, where nearly every record falls: the
 * per-record conversion needs only these (st__clock_conv for the others).
 */
struct newest {
    bool fast;         /* raw values are ticks and a segment is known */
    uint64_t raw, ns;  /* the segment's start knot */
    uint64_t mult;
};

static struct newest newest_segment(const struct st__clock_conv *cv)
{
    struct newest n = {.fast = cv->tsc && cv->nknots >= 2};

    if (n.fast) {
        n.raw = cv->k[cv->nknots - 2].raw;
        n.ns = cv->k[cv->nknots - 2].ns;
        n.mult = cv->mult[cv->nknots - 2];
    }
    return n;
}

static inline uint64_t convert(const struct newest *n, const struct st__clock_conv *cv, uint64_t raw)
{
    __extension__ typedef unsigned __int128 u128;

    if (__builtin_expect(n->fast && raw >= n->raw, 1))
        return n->ns + (uint64_t)(((u128)(raw - n->raw) * n->mult) >> ST_CLOCK_SHIFT);
    return st__clock_conv(cv, raw);
}

/*
 * Copies the records of s from s->pos that lie whole in [s->pos, stop) to
 * dst (stop - s->pos bytes of room are there; stop may cut a record, which
 * is then left for the next run) and hands them to the sink. The run is
 * copied in chunks of CHUNK bytes, and after each copy the records whose
 * headers it completed get their timestamp converted, clamped to the
 * source's last one and stored into the copy, drops and events summed.
 * Headers are read from the source, which the copy has just brought into
 * the L1 cache: not from the copy, since a load from bytes memcpy has just
 * written with wide vector stores cannot be forwarded from the store
 * buffer and stalls until they retire (a quarter of the merge's time when
 * threads interleave record by record); and chunks keep the walk, a chain
 * of dependent loads (each record's length gives the next's place), in L1
 * rather than L2. A record that is not one ends the run and the source.
 */
#define CHUNK ((uint64_t)8 << 10)

static void run_copy(struct st__merge_src *s, uint64_t stop, uint8_t *dst, const struct st__clock_conv *conv,
                     const struct st__merge_sink *sink)
{
    const struct newest seg = newest_segment(conv); /* in registers: stores into dst may alias *conv */
    uint8_t tmp[ST_EVENT_FIXED_SIZE];
    uint64_t pos = s->pos, copied = s->pos, start = s->pos, last = s->last_ns, events = 0, drops = 0;
    bool bad = false;

    while (stop - pos >= ST_EVENT_FIXED_SIZE) {
        const uint8_t *h;
        uint8_t *p;
        uint64_t size, ns;
        if (copied < pos + ST_EVENT_FIXED_SIZE) {
            /* Copy on up to a chunk past this record's start (pos may be past copied). */
            uint64_t next = stop - pos > CHUNK ? pos + CHUNK : stop;
            src_copy(s, copied, dst + (copied - start), (size_t)(next - copied));
            copied = next;
        }
        h = src_header(s, pos, tmp);
        p = dst + (pos - start);
        size = 8 + (uint64_t)st__fmt_get_u32(h + ST_EV_OFF_LENGTH);
        if (__builtin_expect(size < ST_EVENT_FIXED_SIZE || size > ST_MAX_EVENT_RECORD || size > s->end - pos, 0)) {
            bad = true;
            break;
        }
        if (__builtin_expect(size > stop - pos, 0))
            break; /* cut by stop: whole in the source, taken next time */
        ns = convert(&seg, conv, st__fmt_get_u64(h + ST_EV_OFF_TIMESTAMP));
        if (ns < last)
            ns = last;
        last = ns;
        st__fmt_put_u64(p + ST_EV_OFF_TIMESTAMP, ns);
        if (__builtin_expect(st__fmt_get_u64(h + ST_EV_OFF_ID) != ST_DROPPED_EVENT_ID, 1)) {
            events++;
        } else if (size >= ST_EVENT_FIXED_SIZE + 8) {
            uint8_t cnt[8];
            src_copy(s, pos + ST_EV_OFF_PAYLOAD, cnt, sizeof cnt);
            drops += st__fmt_get_u64(cnt);
        }
        pos += size;
    }
    if (copied < pos) /* the end of the last record */
        src_copy(s, copied, dst + (copied - start), (size_t)(pos - copied));
    /* Fewer than 32 bytes left over at the end of s cannot be a record. */
    bad |= pos != stop && stop == s->end && stop - pos < ST_EVENT_FIXED_SIZE;
    s->last_ns = last;
    s->pos = pos;
    sink->commit(sink->ctx, s, (size_t)(pos - start), events, drops);
    if (__builtin_expect(bad, 0))
        src_bad(s, sink);
}

/*
 * Where the run of source i starting at s->pos ends: before the first
 * record that is not older than the other sources' oldest (lim, lim_i), or
 * once max bytes are covered (run_copy cuts there). The first record
 * always belongs (it is the oldest). Sizes are checked by run_copy.
 */
static uint64_t run_end(const struct st__merge_src *s, size_t i, uint64_t lim, size_t lim_i, uint64_t max)
{
    uint8_t tmp[ST_EVENT_FIXED_SIZE];
    uint64_t pos = s->pos, stop = s->end - s->pos > max ? s->pos + max : s->end;

    for (;;) {
        const uint8_t *h;
        uint64_t size, key;

        if (stop - pos < ST_EVENT_FIXED_SIZE)
            return stop;
        h = src_header(s, pos, tmp);
        if (pos != s->pos) {
            key = st__fmt_get_u64(h + ST_EV_OFF_TIMESTAMP);
            if (!(key < lim || (key == lim && i < lim_i)))
                return pos;
        }
        size = 8 + (uint64_t)st__fmt_get_u32(h + ST_EV_OFF_LENGTH);
        if (size < ST_EVENT_FIXED_SIZE || size >= stop - pos)
            return stop; /* the last one, or one that is not a record */
        pos += size;
    }
}

/* How far ahead in a ring the merge prefetches (about 15 records). */
#define PREFETCH_AHEAD 1024u

/*
 * Takes runs of source i, just taken off the heap as the oldest, while its
 * records stay older than every other source's next one. 0, or -EIO when
 * the sink stopped the merge.
 */
static int take_runs(struct heap *h, size_t i, const struct st__clock_conv *cv, const struct st__merge_sink *sink)
{
    struct st__merge_src *s = &h->src[i];
    bool alone = h->n == 0;
    uint64_t lim = alone ? 0 : h->src[h->at[0]].key;
    size_t lim_i = alone ? 0 : h->at[0];

    for (;;) {
        uint64_t need = src_record_size(s), room, stop;
        uint8_t *dst;

        if (!need) {
            src_bad(s, sink);
            return 0;
        }
        dst = sink->reserve(sink->ctx, need, alone ? s->end - s->pos : need, &room);
        if (!dst)
            return -EIO;
        if (alone) {
            stop = s->end - s->pos > room ? s->pos + room : s->end;
        } else {
            /*
             * Threads interleaving record by record make runs of one
             * record, and the next header is then a miss in a line another
             * core wrote: fetch ahead, within whole records only (the line
             * at end may be being written). ~10% on such merges.
             */
            if (s->end - s->pos > PREFETCH_AHEAD + 128) {
                __builtin_prefetch(s->ring + ((s->pos + PREFETCH_AHEAD) & s->mask));
                __builtin_prefetch(s->ring + ((s->pos + PREFETCH_AHEAD + 64) & s->mask));
            }
            stop = run_end(s, i, lim, lim_i, room);
        }
        run_copy(s, stop, dst, cv, sink);
        if (!src_load(s, sink))
            return 0;
        if (!alone && !(s->key < lim || (s->key == lim && i < lim_i)))
            return 0; /* another source's record is older now */
    }
}

int st__merge_run(struct st__merge *m, struct st__merge_src *src, size_t n, const struct st__clock_conv *cv,
                  const struct st__merge_sink *sink)
{
    struct heap h;

    if (n > m->cap) {
        size_t *at = realloc(m->heap, n * 2 * sizeof *at);
        if (!at)
            return -ENOMEM;
        m->heap = at;
        m->cap = n * 2;
    }
    h = (struct heap){src, m->heap, 0};
    for (size_t i = 0; i < n; i++)
        if (src_load(&src[i], sink))
            heap_push(&h, i);
    while (h.n) {
        size_t i = heap_pop(&h);
        if (take_runs(&h, i, cv, sink) < 0)
            return -EIO;
        if (src[i].pos < src[i].end) /* take_runs loaded its key */
            heap_push(&h, i);
    }
    return 0;
}

void st__merge_free(struct st__merge *m)
{
    free(m->heap);
    *m = (struct st__merge){0};
}
