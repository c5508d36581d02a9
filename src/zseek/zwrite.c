/*
 * Compressed traces written (zwrite.h; the layout: zstd_seek_format.h).
 *
 * Every frame holds whole records (the runtime's stage, or a run st__zout
 * cut at a record boundary), so a file cut anywhere loses only the frame
 * being written. Each frame carries its content size and checksum (so
 * `zstd -d` checks it); the checksum is copied into the seek table, as the
 * seekable format asks. The index grows in memory and is written when the
 * file is complete (the runtime: rotation, switch, off, exit; st__zout:
 * finish).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "trace_format.h"
#include "zwrite.h"

/* The size the record at p claims (len bytes there), or 0: too few bytes to tell, or no record. */
static size_t record_claim(const uint8_t *p, size_t len)
{
    size_t n = st__fmt_record_claim(p, len);

    return n >= ST_MAPPING_FIXED_SIZE ? n : 0;
}

/* The slot of id in the summary's table (its capacity a power of two, never full). */
static struct st__zw_count *count_slot(struct st__zw_count *t, unsigned bits, uint64_t id)
{
    size_t mask = ((size_t)1 << bits) - 1;
    for (size_t i = (size_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - bits)) & mask;; i = (i + 1) & mask)
        if (!t[i].used || t[i].id == id)
            return &t[i];
}

/* Doubles the summary's table. 0 or -ENOMEM. */
static int counts_grow(struct st__zw *z)
{
    unsigned bits = z->count_bits ? z->count_bits + 1 : 6;
    struct st__zw_count *t = calloc((size_t)1 << bits, sizeof *t);

    if (!t)
        return -ENOMEM;
    for (size_t i = 0; z->count_bits && i < ((size_t)1 << z->count_bits); i++)
        if (z->counts[i].used)
            *count_slot(t, bits, z->counts[i].id) = z->counts[i];
    free(z->counts);
    z->counts = t;
    z->count_bits = bits;
    return 0;
}

/* One event record of id in the frame being made. */
static void count_event(struct st__zw *z, uint64_t id)
{
    struct st__zw_count *c;

    if (z->counts_failed)
        return;
    if ((z->ncounts + 1) * 2 > ((size_t)1 << z->count_bits) && counts_grow(z) < 0) {
        z->counts_failed = 1; /* the trailer goes without a summary; the index is whole */
        return;
    }
    c = count_slot(z->counts, z->count_bits, id);
    if (!c->used) {
        *c = (struct st__zw_count){.id = id, .used = 1};
        z->ncounts++;
    }
    c->pending++;
}

/* Forgets the pending counts (of a frame made but never written), or (commit) adds them to the file's. */
static void counts_settle(struct st__zw *z, int commit)
{
    for (size_t i = 0; z->count_bits && i < ((size_t)1 << z->count_bits); i++) {
        if (commit)
            z->counts[i].records += z->counts[i].pending;
        z->counts[i].pending = 0;
    }
    if (commit)
        z->write_lost += z->pending_write_lost;
    z->pending_write_lost = 0;
}

/* What a stage of records holds, for its time-index entry and the summary. */
static void scan(struct st__zw *z, const uint8_t *p, size_t len, int with_header, struct st__ztime_entry *e)
{
    size_t at = with_header ? ST_HEADER_SIZE : 0;

    counts_settle(z, 0);
    *e = (struct st__ztime_entry){.flags = ST_ZTIME_NOTIME | (with_header ? ST_ZTIME_META : 0)};
    while (at + ST_MAPPING_FIXED_SIZE <= len) {
        const uint8_t *r = p + at;
        size_t n;
        e->records++;
        if (st__fmt_get_u64(r) == ST_RECORD_TYPE_MAPPING) {
            e->flags |= ST_ZTIME_META;
            n = st__fmt_mapping_size(st__fmt_get_u32(r + 16));
        } else {
            uint64_t ts = st__fmt_get_u64(r + ST_EV_OFF_TIMESTAMP), id = st__fmt_get_u64(r + ST_EV_OFF_ID);
            if (id == ST_DROPPED_EVENT_ID) {
                uint64_t count = st__fmt_get_u64(r + ST_EV_OFF_PAYLOAD);
                e->dropped_records++;
                e->dropped_events += count;
                if (st__fmt_get_u32(r + ST_EV_OFF_PID) == ST_PID_WRITE_LOST)
                    z->pending_write_lost += count;
            } else {
                e->events++;
                count_event(z, id);
            }
            if ((e->flags & ST_ZTIME_NOTIME) || ts < e->first_ns)
                e->first_ns = ts;
            if ((e->flags & ST_ZTIME_NOTIME) || ts > e->last_ns)
                e->last_ns = ts;
            e->flags &= ~ST_ZTIME_NOTIME;
            n = 8 + (size_t)st__fmt_get_u32(r + ST_EV_OFF_LENGTH);
        }
        at += n;
    }
}

ssize_t st__zw_compress(struct st__zw *z, const uint8_t *data, size_t len, int with_header)
{
    size_t bound = ZSTD_compressBound(len), n;

    if (!z->cctx && !(z->cctx = ZSTD_createCCtx()))
        return -ENOMEM;
    if (bound > z->cap) {
        uint8_t *o = realloc(z->out, bound);
        if (!o)
            return -ENOMEM;
        z->out = o;
        z->cap = bound;
    }
    ZSTD_CCtx_reset(z->cctx, ZSTD_reset_session_and_parameters);
    if (ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, z->frame_level ? z->frame_level : z->level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_contentSizeFlag, 1)))
        return -EINVAL;
    n = ZSTD_compress2(z->cctx, z->out, z->cap, data, len);
    if (ZSTD_isError(n))
        return ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ? -ENOMEM : -EIO;
    scan(z, data, len, with_header, &z->pending);
    z->pending_dsize = (uint32_t)len;
    z->pending_sum = n >= 4 ? st__zle_get32(z->out + n - 4) : 0; /* the frame's content checksum */
    return (ssize_t)n;
}

/* Appends one entry to both tables. */
static void add_entry(struct st__zw *z, uint32_t csize, uint32_t dsize, uint32_t sum, const struct st__ztime_entry *t)
{
    uint8_t *s = st__growbuf_room(&z->seek, ST_ZSEEK_ENTRY_SIZE);
    uint8_t *e = st__growbuf_room(&z->time, ST_ZTIME_ENTRY_SIZE);

    if (!s || !e)
        return; /* failed is set: the trailer is left out, the frames still read */
    st__zle_put32(s, csize);
    st__zle_put32(s + 4, dsize);
    st__zle_put32(s + 8, sum);
    st__ztime_put(e, t);
    st__growbuf_commit(&z->seek, ST_ZSEEK_ENTRY_SIZE);
    st__growbuf_commit(&z->time, ST_ZTIME_ENTRY_SIZE);
    z->n++;
}

void st__zw_note(struct st__zw *z, size_t csize)
{
    add_entry(z, (uint32_t)csize, z->pending_dsize, z->pending_sum, &z->pending);
    counts_settle(z, 1);
}

int st__zw_full(const struct st__zw *z)
{
    return z->n + 3 >= ST_ZSEEK_MAX_FRAMES; /* room for the trailer's three */
}

/* Writes the summary frame (ssize bytes) at p. */
static void put_summary(const struct st__zw *z, uint8_t *p, uint64_t ssize)
{
    st__zle_put32(p, ST_ZSUM_SKIP_MAGIC);
    st__zle_put32(p + 4, (uint32_t)(ssize - ST_ZSKIP_HEADER_SIZE));
    st__zle_put32(p + 8, ST_ZSUM_MAGIC);
    st__zle_put32(p + 12, ST_ZSUM_VERSION);
    st__zle_put32(p + 16, z->ncounts);
    st__zle_put32(p + 20, ST_ZSUM_ENTRY_SIZE);
    st__zle_put64(p + 24, z->write_lost);
    p += ST_ZSKIP_HEADER_SIZE + ST_ZSUM_HEAD_SIZE;
    for (size_t i = 0; z->count_bits && i < ((size_t)1 << z->count_bits); i++) {
        if (!z->counts[i].used)
            continue;
        st__zle_put64(p, z->counts[i].id);
        st__zle_put64(p + 8, z->counts[i].records);
        p += ST_ZSUM_ENTRY_SIZE;
    }
}

int st__zw_trailer(struct st__zw *z, struct st__growbuf *out, struct st__zw_trailer_sizes *sizes)
{
    uint64_t ssize = z->counts_failed ? 0 : st__zsum_frame_size(z->ncounts);
    uint32_t nt = z->n + (ssize != 0); /* time-index entries: the frames before it */
    uint64_t tsize = st__ztime_frame_size(nt), total = ssize + tsize + st__zseek_frame_size(nt + 1);
    struct st__ztime_entry none = {.flags = ST_ZTIME_NOTIME | ST_ZTIME_NODATA};
    uint8_t *p;

    out->len = 0;
    if (z->seek.failed || z->time.failed || ssize > UINT32_MAX || tsize > UINT32_MAX || !(p = st__growbuf_room(out, total)))
        return -ENOMEM;
    /* The summary: the whole file's event records per ID. */
    if (ssize)
        put_summary(z, p, ssize);
    p += ssize;
    /* The time index: one entry per frame before it (the summary's last). */
    st__zle_put32(p, ST_ZTIME_SKIP_MAGIC);
    st__zle_put32(p + 4, (uint32_t)(tsize - ST_ZSKIP_HEADER_SIZE));
    st__zle_put32(p + 8, ST_ZTIME_MAGIC);
    st__zle_put32(p + 12, ST_ZTIME_VERSION);
    st__zle_put32(p + 16, nt);
    st__zle_put32(p + 20, ST_ZTIME_ENTRY_SIZE);
    if (z->n)
        memcpy(p + ST_ZSKIP_HEADER_SIZE + ST_ZTIME_HEAD_SIZE, z->time.data, z->time.len);
    if (ssize)
        st__ztime_put(p + ST_ZSKIP_HEADER_SIZE + ST_ZTIME_HEAD_SIZE + z->time.len, &none);
    p += tsize;
    /* The seek table: those frames, then the time index itself. */
    st__zle_put32(p, ST_ZSEEK_SKIP_MAGIC);
    st__zle_put32(p + 4, (uint32_t)(st__zseek_frame_size(nt + 1) - ST_ZSKIP_HEADER_SIZE));
    p += ST_ZSKIP_HEADER_SIZE;
    if (z->n)
        memcpy(p, z->seek.data, z->seek.len);
    p += z->seek.len;
    if (ssize) {
        st__zle_put32(p, (uint32_t)ssize);
        st__zle_put32(p + 4, 0);
        st__zle_put32(p + 8, 0);
        p += ST_ZSEEK_ENTRY_SIZE;
    }
    st__zle_put32(p, (uint32_t)tsize);
    st__zle_put32(p + 4, 0);
    st__zle_put32(p + 8, 0);
    p += ST_ZSEEK_ENTRY_SIZE;
    st__zle_put32(p, nt + 1);
    p[4] = ST_ZSEEK_CHECKSUMS;
    st__zle_put32(p + 5, ST_ZSEEK_FOOTER_MAGIC);
    st__growbuf_commit(out, total);
    *sizes = (struct st__zw_trailer_sizes){(size_t)ssize, (size_t)tsize, (size_t)total};
    return 0;
}

void st__zw_keep_trailer(struct st__zw *z, const struct st__zw_trailer_sizes *sizes)
{
    struct st__ztime_entry none = {.flags = ST_ZTIME_NOTIME | ST_ZTIME_NODATA};

    if (sizes->summary)
        add_entry(z, (uint32_t)sizes->summary, 0, 0, &none);
    add_entry(z, (uint32_t)sizes->time, 0, 0, &none);
    add_entry(z, (uint32_t)(sizes->total - sizes->summary - sizes->time), 0, 0, &none);
}

void st__zw_reset(struct st__zw *z, int level)
{
    z->seek.len = z->time.len = 0;
    z->seek.failed = z->time.failed = false;
    z->n = 0;
    z->level = level;
    if (z->count_bits)
        memset(z->counts, 0, ((size_t)1 << z->count_bits) * sizeof *z->counts);
    z->ncounts = 0;
    z->write_lost = z->pending_write_lost = 0;
    z->counts_failed = 0;
}

void st__zw_free(struct st__zw *z)
{
    ZSTD_freeCCtx(z->cctx);
    free(z->out);
    st__growbuf_free(&z->seek);
    st__growbuf_free(&z->time);
    free(z->counts);
    memset(z, 0, sizeof *z);
}

/*
 * The steps, by backlog: at a quarter level 1 (on trace records as good as
 * the higher levels, at half level 3's CPU time), at five eighths -20 (a
 * third of level 1's time, still 1.3 times smaller than plain v4), at three
 * quarters -1000 (about storing: a sixth of level 1's time). bench/race
 * measured them on its records. The negative ones wait until the writer is
 * well behind: a writer merely woken late (a busy machine) should not
 * write a file several times larger.
 */
int st__zw_adapt_level(int level, unsigned fill)
{
    int fast = fill >= 192 ? -1000 : fill >= 160 ? -20 : fill >= 64 ? 1 : level;

    return fast < level ? fast : level;
}

int st__zw_parse(const char *v, int *level, bool *fixed)
{
    const char *rest;
    char *end;
    long n;

    *level = 0;
    if (fixed)
        *fixed = false;
    if (!strcmp(v, "off") || !strcmp(v, "none"))
        return 0;
    if (strncmp(v, "zstd", 4))
        return -EINVAL;
    rest = v + 4;
    *level = ST__ZW_DEFAULT_LEVEL;
    if (*rest == ':' && (rest[1] == '-' || (rest[1] >= '0' && rest[1] <= '9'))) {
        errno = 0;
        n = strtol(rest + 1, &end, 10);
        if (errno || n < ZSTD_minCLevel() || n > ZSTD_maxCLevel())
            return -EINVAL;
        *level = n ? (int)n : ST__ZW_DEFAULT_LEVEL; /* zstd's own meaning of 0 */
        rest = end;
    }
    if (fixed && !strcmp(rest, ":fixed")) {
        *fixed = true;
        return 1;
    }
    return *rest ? -EINVAL : 1;
}

/* --- a whole stream ------------------------------------------------------------- */

void st__zout_init(struct st__zout *o, int level, st__zout_write_fn write, void *ctx)
{
    memset(o, 0, sizeof *o);
    o->zw.level = level ? level : ST__ZW_DEFAULT_LEVEL;
    o->write = write;
    o->ctx = ctx;
}

/* Compresses p[0..len) into one frame and writes it. 0 or -errno (kept in o->err). */
static int zout_frame(struct st__zout *o, const uint8_t *p, size_t len)
{
    ssize_t n;
    int r;

    if (o->err)
        return o->err;
    if (st__zw_full(&o->zw))
        return o->err = -EFBIG;
    if ((n = st__zw_compress(&o->zw, p, len, !o->started)) < 0)
        return o->err = (int)n;
    if ((r = o->write(o->ctx, o->zw.out, (size_t)n)) < 0)
        return o->err = r;
    st__zw_note(&o->zw, (size_t)n);
    o->started = true;
    o->out_bytes += (uint64_t)n;
    return 0;
}

/* Records larger than this are taken for damage, not waited for (ours are at most 64 KiB). */
#define LARGEST_RECORD ((size_t)256 << 20)

/*
 * Where the next frame of p[0..len) ends: after the last whole record that
 * ends within ST__ZW_FRAME_BYTES, or after the first when it alone is
 * larger; 0 while the first record is still coming. Bytes that are no
 * record go in as they are, a frame's worth (the stream stays exact; only
 * the time index's counts of that frame are off).
 */
static size_t frame_end(const uint8_t *p, size_t len, bool with_header)
{
    size_t start = with_header ? ST_HEADER_SIZE : 0, at = start, n;

    if (len <= start)
        return 0;
    while ((n = record_claim(p + at, len - at)) != 0 && n <= len - at && (at == start || at + n <= ST__ZW_FRAME_BYTES))
        at += n;
    if (at > start)
        return at;
    n = record_claim(p + start, len - start);
    if (n > len - start && n <= LARGEST_RECORD)
        return 0;
    return len < ST__ZW_FRAME_BYTES ? len : ST__ZW_FRAME_BYTES;
}

/* Takes p[0..n) into the stage and writes the frames it completes. 0 or the error. */
static int zout_take(struct st__zout *o, const uint8_t *p, size_t n)
{
    size_t at = 0, end;

    st__growbuf_put(&o->stage, p, n);
    if (o->stage.failed)
        return o->err = -ENOMEM;
    o->in_bytes += n;
    while (o->stage.len - at >= ST__ZW_FRAME_BYTES &&
           (end = frame_end(o->stage.data + at, o->stage.len - at, !o->started)) != 0) {
        if (zout_frame(o, o->stage.data + at, end) < 0)
            return o->err;
        at += end;
    }
    if (at) {
        memmove(o->stage.data, o->stage.data + at, o->stage.len - at);
        o->stage.len -= at;
    }
    return 0;
}

int st__zout_put(struct st__zout *o, const void *p, size_t n)
{
    const uint8_t *b = p;

    /* A frame's worth at a time: the stage stays about two frames, however much comes at once. */
    for (size_t at = 0, k; !o->err && at < n; at += k) {
        k = n - at < ST__ZW_FRAME_BYTES ? n - at : ST__ZW_FRAME_BYTES;
        zout_take(o, b + at, k);
    }
    return o->err;
}

int st__zout_finish(struct st__zout *o)
{
    struct st__growbuf trailer = {0};
    struct st__zw_trailer_sizes sizes;
    int r;

    if (o->err)
        return o->err;
    /* What is left (an empty stream: one empty frame, which zstd -d makes an empty file). */
    if ((o->stage.len || !o->started) && zout_frame(o, o->stage.data, o->stage.len) < 0)
        return o->err;
    o->stage.len = 0;
    if ((r = st__zw_trailer(&o->zw, &trailer, &sizes)) == 0 && (r = o->write(o->ctx, trailer.data, trailer.len)) == 0)
        o->out_bytes += trailer.len;
    st__growbuf_free(&trailer);
    return o->err = r;
}

void st__zout_free(struct st__zout *o)
{
    st__zw_free(&o->zw);
    st__growbuf_free(&o->stage);
}
