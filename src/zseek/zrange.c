/*
 * A compressed trace's v4 bytes by offset (zrange.h). Frames are walked
 * from the file's start: a whole frame whose header gives its content
 * size and that ends before the range is passed over; the others are
 * decompressed whole with libzstd's streaming decoder (its checksum
 * checked), fed everything the file holds of them, so a cut frame gives
 * exactly what `zstd -d` gives of it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "zrange.h"
#include "zstd_seek_format.h"

#define OUT_CHUNK ((size_t)128 << 10)

bool st__zrange_is_zstd(const uint8_t *data, size_t size)
{
    if (size < 4)
        return false;
    uint32_t m = st__zle_get32(data);
    return m == ST_ZSTD_FRAME_MAGIC || st__zskip_magic(m);
}

/* The part of [from, from + n) of the stream, held at p, that lies in [lo, hi): appended to out. */
static void keep(struct st__growbuf *out, const uint8_t *p, uint64_t from, size_t n, uint64_t lo, uint64_t hi)
{
    uint64_t a = from > lo ? from : lo, b = from + n < hi ? from + n : hi;

    if (a < b)
        st__growbuf_put(out, p + (a - from), (size_t)(b - a));
}

/* The walk's state. */
struct walk {
    ZSTD_DCtx *d;
    uint8_t *chunk;     /* OUT_CHUNK bytes of decompressed output */
    uint64_t at;        /* compressed offset of the frame at hand */
    uint64_t dpos;      /* v4 offset of its first byte */
    uint64_t frame;     /* its number */
    uint64_t lo, hi;    /* the range wanted */
};

/* Stops the walk: *e says how and where. */
static void stop(const struct walk *w, struct st__zrange_end *e, enum st__zrange_stop how, uint64_t stop_off,
                 const char *why)
{
    *e = (struct st__zrange_end){how, w->frame, w->at, stop_off, w->dpos, why};
}

/*
 * Decompresses the frame at p (n bytes of the file from it: the frame when
 * whole, else all there is), to its end even past the range's: damage is
 * often seen only there, by its checksum. 1 when the walk goes on after it
 * (w moved past it), 0 when it stopped (*e set), -ENOMEM.
 */
static int decode(struct walk *w, const uint8_t *p, size_t n, bool whole, struct st__growbuf *out,
                  struct st__zrange_end *e)
{
    ZSTD_inBuffer in = {p, n, 0};

    ZSTD_DCtx_reset(w->d, ZSTD_reset_session_only);
    for (;;) {
        ZSTD_outBuffer ob = {w->chunk, OUT_CHUNK, 0};
        size_t ret = ZSTD_decompressStream(w->d, &ob, &in);
        if (ZSTD_isError(ret)) {
            stop(w, e, ST_ZRANGE_DAMAGED, w->at + in.pos, ZSTD_getErrorName(ret));
            return 0;
        }
        keep(out, w->chunk, w->dpos, ob.pos, w->lo, w->hi);
        if (out->failed)
            return -ENOMEM;
        w->dpos += ob.pos;
        if (ret == 0) { /* the frame's end */
            w->at += in.pos;
            w->frame++;
            return 1;
        }
        if (in.pos == in.size && ob.pos < ob.size) { /* the decoder wants bytes the file does not have */
            if (whole)
                stop(w, e, ST_ZRANGE_DAMAGED, w->at + in.pos, "the frame ends before its last block");
            else
                stop(w, e, ST_ZRANGE_CUT, w->at + in.pos, "");
            return 0;
        }
    }
}

int st__zrange_read(const uint8_t *data, size_t size, uint64_t off, uint64_t len, struct st__growbuf *out,
                    struct st__zrange_end *e)
{
    struct walk w = {.lo = off, .hi = off + len < off ? UINT64_MAX : off + len};
    int ret = 0;

    stop(&w, e, ST_ZRANGE_DONE, 0, "");
    if (!(w.d = ZSTD_createDCtx()) || !(w.chunk = malloc(OUT_CHUNK))) {
        ret = -ENOMEM;
        goto out;
    }
    while (w.at < size && w.dpos < w.hi) {
        const uint8_t *p = data + w.at;
        size_t avail = size - (size_t)w.at, cs;
        unsigned long long ds;
        uint32_t m = avail >= 4 ? st__zle_get32(p) : 0;
        if (avail < 4) {
            stop(&w, e, ST_ZRANGE_CUT, size, "");
            goto out;
        }
        if (st__zskip_magic(m)) {
            uint64_t fs = avail >= ST_ZSKIP_HEADER_SIZE ? ST_ZSKIP_HEADER_SIZE + (uint64_t)st__zle_get32(p + 4) : 0;
            if (!fs || fs > avail) {
                stop(&w, e, ST_ZRANGE_CUT, size, "");
                goto out;
            }
            w.at += fs;
            w.frame++;
            continue;
        }
        if (m != ST_ZSTD_FRAME_MAGIC) {
            stop(&w, e, ST_ZRANGE_DAMAGED, w.at, "no zstd frame starts there");
            goto out;
        }
        cs = ZSTD_findFrameCompressedSize(p, avail);
        ds = ZSTD_getFrameContentSize(p, avail);
        if (!ZSTD_isError(cs) && ds != ZSTD_CONTENTSIZE_UNKNOWN && ds != ZSTD_CONTENTSIZE_ERROR &&
            w.dpos + ds <= w.lo) { /* wholly before the range: passed over */
            w.at += cs;
            w.dpos += ds;
            w.frame++;
            continue;
        }
        if ((ret = decode(&w, p, ZSTD_isError(cs) ? avail : cs, !ZSTD_isError(cs), out, e)) <= 0)
            goto out;
        ret = 0;
    }
    e->frame = w.frame;
    e->frame_off = w.at;
    e->stop_off = w.at;
    e->dend = w.dpos;
out:
    ZSTD_freeDCtx(w.d);
    free(w.chunk);
    return ret;
}
