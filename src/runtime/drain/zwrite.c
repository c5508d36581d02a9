/*
 * compress=zstd, the writer's side (zwrite.h; the layout: zstd_seek_format.h).
 *
 * One frame per stage the writer flushes: the stage holds whole records,
 * so every frame does, and a file cut anywhere loses only the frame being
 * written. Each frame carries its content size and checksum (so `zstd -d`
 * checks it); the checksum is copied into the seek table, as the seekable
 * format asks. The index grows in memory and is written when the file is
 * closed (rotation, switch, off, exit).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "trace_format.h"
#include "zwrite.h"

/* What a stage of records holds, for its time-index entry. */
static void scan(const uint8_t *p, size_t len, int with_header, struct st__ztime_entry *e)
{
    size_t at = with_header ? ST_HEADER_SIZE : 0;

    *e = (struct st__ztime_entry){.flags = ST_ZTIME_NOTIME | (with_header ? ST_ZTIME_META : 0)};
    while (at + ST_MAPPING_FIXED_SIZE <= len) {
        const uint8_t *r = p + at;
        size_t n;
        e->records++;
        if (st__fmt_get_u64(r) == ST_RECORD_TYPE_MAPPING) {
            e->flags |= ST_ZTIME_META;
            n = st__fmt_mapping_size(st__fmt_get_u32(r + 16));
        } else {
            uint64_t ts = st__fmt_get_u64(r + ST_EV_OFF_TIMESTAMP);
            if (st__fmt_get_u64(r + ST_EV_OFF_ID) == ST_DROPPED_EVENT_ID) {
                e->dropped_records++;
                e->dropped_events += st__fmt_get_u64(r + ST_EV_OFF_PAYLOAD);
            } else {
                e->events++;
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
    if (ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, z->level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_contentSizeFlag, 1)))
        return -EINVAL;
    n = ZSTD_compress2(z->cctx, z->out, z->cap, data, len);
    if (ZSTD_isError(n))
        return ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ? -ENOMEM : -EIO;
    scan(data, len, with_header, &z->pending);
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
}

int st__zw_full(const struct st__zw *z)
{
    return z->n + 2 >= ST_ZSEEK_MAX_FRAMES;
}

int st__zw_trailer(struct st__zw *z, struct st__growbuf *out, size_t *time_size)
{
    uint64_t tsize = st__ztime_frame_size(z->n);
    uint8_t *p;

    out->len = 0;
    if (z->seek.failed || z->time.failed || tsize > UINT32_MAX ||
        !(p = st__growbuf_room(out, tsize + st__zseek_frame_size(z->n + 1))))
        return -ENOMEM;
    /* The time index: one entry per frame before it. */
    st__zle_put32(p, ST_ZTIME_SKIP_MAGIC);
    st__zle_put32(p + 4, (uint32_t)(tsize - ST_ZSKIP_HEADER_SIZE));
    st__zle_put32(p + 8, ST_ZTIME_MAGIC);
    st__zle_put32(p + 12, ST_ZTIME_VERSION);
    st__zle_put32(p + 16, z->n);
    st__zle_put32(p + 20, ST_ZTIME_ENTRY_SIZE);
    if (z->n)
        memcpy(p + ST_ZSKIP_HEADER_SIZE + ST_ZTIME_HEAD_SIZE, z->time.data, z->time.len);
    p += tsize;
    /* The seek table: those frames, then the time index itself. */
    st__zle_put32(p, ST_ZSEEK_SKIP_MAGIC);
    st__zle_put32(p + 4, (uint32_t)(st__zseek_frame_size(z->n + 1) - ST_ZSKIP_HEADER_SIZE));
    p += ST_ZSKIP_HEADER_SIZE;
    if (z->n)
        memcpy(p, z->seek.data, z->seek.len);
    p += z->seek.len;
    st__zle_put32(p, (uint32_t)tsize);
    st__zle_put32(p + 4, 0);
    st__zle_put32(p + 8, 0);
    p += ST_ZSEEK_ENTRY_SIZE;
    st__zle_put32(p, z->n + 1);
    p[4] = ST_ZSEEK_CHECKSUMS;
    st__zle_put32(p + 5, ST_ZSEEK_FOOTER_MAGIC);
    st__growbuf_commit(out, tsize + st__zseek_frame_size(z->n + 1));
    *time_size = (size_t)tsize;
    return 0;
}

void st__zw_keep_trailer(struct st__zw *z, size_t time_size, size_t total)
{
    struct st__ztime_entry none = {.flags = ST_ZTIME_NOTIME | ST_ZTIME_NODATA};

    add_entry(z, (uint32_t)time_size, 0, 0, &none);
    add_entry(z, (uint32_t)(total - time_size), 0, 0, &none);
}

void st__zw_reset(struct st__zw *z, int level)
{
    z->seek.len = z->time.len = 0;
    z->seek.failed = z->time.failed = false;
    z->n = 0;
    z->level = level;
}

void st__zw_free(struct st__zw *z)
{
    ZSTD_freeCCtx(z->cctx);
    free(z->out);
    st__growbuf_free(&z->seek);
    st__growbuf_free(&z->time);
    memset(z, 0, sizeof *z);
}

int st__zw_parse(const char *v, int *level)
{
    char *end;
    long n;

    *level = 0;
    if (!strcmp(v, "off") || !strcmp(v, "none"))
        return 0;
    if (!strcmp(v, "zstd")) {
        *level = ST__ZW_DEFAULT_LEVEL;
        return 1;
    }
    if (strncmp(v, "zstd:", 5) || !v[5])
        return -EINVAL;
    errno = 0;
    n = strtol(v + 5, &end, 10);
    if (*end || errno || n < ZSTD_minCLevel() || n > ZSTD_maxCLevel())
        return -EINVAL;
    *level = n ? (int)n : ST__ZW_DEFAULT_LEVEL; /* zstd's own meaning of 0 */
    return 1;
}
