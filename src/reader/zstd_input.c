/*
 * Compressed traces, read (zstd_input.h; the layout: zstd_seek_format.h).
 *
 * The decompressor sits between the raw source and the reader's buffer:
 * the reader asks for bytes as from a file and gets the v4 stream. Frames
 * follow one another (zstd -d's own rule: skippable frames give nothing),
 * so a single-frame .zst made by the zstd command reads like ours.
 *
 * Seeking: a file (or memory) that ends in a seek table with our time
 * index has it read first (pread, no effect on the read position). At
 * each frame boundary where the reader has consumed everything, the
 * reader's predicate is asked whether every record of the next frame
 * would be filtered out; if so the frame's compressed bytes are jumped
 * over (lseek, or a pointer for memory) and the reader is told what it
 * held, so record numbers, offsets and counters stay those of a full read.
 * Boundaries are known exactly: input is fed one frame at a time.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "zstd_input.h"

#define IN_CHUNK ((size_t)128 << 10)
#define TAIL_FIRST ((size_t)64 << 10) /* bytes of the file's end read first: most tables fit */
#define MAX_TABLES ((uint64_t)1 << 32) /* tables larger than this are refused */

struct st__zin {
    ZSTD_DCtx *d;
    const uint8_t *mem;          /* memory source, else NULL */
    st__zin_raw_fn raw;
    void *ctx;
    int fd;                      /* >= 0: frames may be skipped with lseek */
    uint8_t *ibuf;               /* raw bytes read (fd/stream sources) */
    ZSTD_inBuffer in;            /* the compressed bytes at hand: ibuf's or mem's */
    uint64_t in_base;            /* compressed offset of in.src[0] */
    bool in_frame;               /* the decoder is inside a frame */
    uint64_t frame_start;        /* compressed offset of the current (or next) frame */
    uint64_t frame_no;           /* its number, from 0 */
    struct st__zindex ix;
    bool have_ix;
    uint32_t k;                  /* with ix: the entry of the frame at frame_start */
    char problem[160];           /* why the seek table is not used */
    st__zin_skip_fn skip;
    st__zin_skipped_fn skipped;
    uint64_t frames_read, frames_skipped, dbytes;
    int err;                     /* a decoding error, given once the bytes decoded before it are taken */
    char msg[256];
};

/* --- the tables --------------------------------------------------------------- */

void st__zindex_free(struct st__zindex *ix)
{
    free(ix->frames);
    memset(ix, 0, sizeof *ix);
}

__attribute__((format(printf, 3, 4)))
static int bad(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (why && len)
        vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -EBADMSG;
}

int st__zindex_parse(const uint8_t *tail, size_t len, uint64_t file_size, struct st__zindex *ix, uint64_t *need,
                     char *why, size_t whylen)
{
    memset(ix, 0, sizeof *ix);
    if (len > file_size)
        len = (size_t)file_size;
    if (len < ST_ZSEEK_FOOTER_SIZE)
        return 0;
    const uint8_t *foot = tail + len - ST_ZSEEK_FOOTER_SIZE;
    if (st__zle_get32(foot + 5) != ST_ZSEEK_FOOTER_MAGIC)
        return 0;
    uint32_t n = st__zle_get32(foot);
    uint8_t desc = foot[4];
    uint64_t esize = desc & ST_ZSEEK_CHECKSUMS ? 12 : 8;
    if (desc & ST_ZSEEK_RESERVED)
        return bad(why, whylen, "seek table descriptor 0x%02x has reserved bits set", desc);
    if (n < 1 || n > ST_ZSEEK_MAX_FRAMES)
        return bad(why, whylen, "seek table of %u frames", n);
    uint64_t seek_size = ST_ZSKIP_HEADER_SIZE + n * esize + ST_ZSEEK_FOOTER_SIZE;
    if (seek_size > file_size)
        return bad(why, whylen, "seek table of %llu bytes in a file of %llu", (unsigned long long)seek_size,
                   (unsigned long long)file_size);
    if (len < seek_size) {
        *need = seek_size;
        return -ENOSPC;
    }
    const uint8_t *seek = tail + len - seek_size;
    if (st__zle_get32(seek) != ST_ZSEEK_SKIP_MAGIC || st__zle_get32(seek + 4) != seek_size - ST_ZSKIP_HEADER_SIZE)
        return bad(why, whylen, "the seek table's skippable frame header does not match its footer");
    /* The entries must cover the file up to the seek table exactly. */
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += st__zle_get32(seek + ST_ZSKIP_HEADER_SIZE + i * esize);
    if (total != file_size - seek_size)
        return bad(why, whylen, "the seek table's frames add up to %llu bytes, the file has %llu before it",
                   (unsigned long long)total, (unsigned long long)(file_size - seek_size));
    const uint8_t *last = seek + ST_ZSKIP_HEADER_SIZE + (uint64_t)(n - 1) * esize;
    uint64_t tsize = st__zle_get32(last);
    if (st__zle_get32(last + 4) != 0 || tsize < ST_ZSKIP_HEADER_SIZE + ST_ZTIME_HEAD_SIZE)
        return 0; /* zstd's seekable format without our time index: readable from the start */
    if (len < seek_size + tsize) {
        *need = seek_size + tsize;
        return -ENOSPC;
    }
    const uint8_t *t = seek - tsize;
    if (st__zle_get32(t) != ST_ZTIME_SKIP_MAGIC || st__zle_get32(t + 8) != ST_ZTIME_MAGIC)
        return 0; /* another skippable frame last: not ours */
    uint32_t count = st__zle_get32(t + 16), tesize = st__zle_get32(t + 20);
    if (st__zle_get32(t + 4) != tsize - ST_ZSKIP_HEADER_SIZE || st__zle_get32(t + 12) != ST_ZTIME_VERSION ||
        count != n - 1 || tesize < ST_ZTIME_ENTRY_SIZE ||
        ST_ZSKIP_HEADER_SIZE + ST_ZTIME_HEAD_SIZE + (uint64_t)count * tesize != tsize)
        return bad(why, whylen, "the time index (%llu bytes, %u entries of %u bytes, version %u) does not match the "
                   "seek table's %u frames", (unsigned long long)tsize, count, tesize, st__zle_get32(t + 12), n);
    if (count && !(ix->frames = calloc(count, sizeof *ix->frames)))
        return -ENOMEM;
    uint64_t coff = 0;
    for (uint32_t i = 0; i < count; i++) {
        struct st__zframe *f = &ix->frames[i];
        const uint8_t *e = seek + ST_ZSKIP_HEADER_SIZE + (uint64_t)i * esize;
        f->coff = coff;
        f->csize = st__zle_get32(e);
        f->dsize = st__zle_get32(e + 4);
        st__ztime_get(t + ST_ZSKIP_HEADER_SIZE + ST_ZTIME_HEAD_SIZE + (uint64_t)i * tesize, &f->t);
        coff += f->csize;
        ix->dsize += f->dsize;
        ix->data_frames += f->dsize != 0;
    }
    ix->n = count;
    return 1;
}

/* Reads the tables at the end of the file fd (or of memory). */
static void load_index(struct st__zin *z, const uint8_t *data, size_t size, int fd)
{
    uint64_t file_size = size, need = 0;
    uint8_t *tail = NULL;
    size_t len;
    struct stat st;
    int ret;

    if (!data) {
        if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
            return;
        file_size = (uint64_t)st.st_size;
    }
    len = file_size < TAIL_FIRST ? (size_t)file_size : TAIL_FIRST;
    for (int tries = 0; tries < 2; tries++) {
        if (data) {
            tail = (uint8_t *)(data + file_size - len);
        } else {
            uint8_t *t = realloc(tail, len ? len : 1);
            if (!t)
                break;
            tail = t;
            if (pread(fd, tail, len, (off_t)(file_size - len)) != (ssize_t)len)
                break;
        }
        ret = st__zindex_parse(tail, len, file_size, &z->ix, &need, z->problem, sizeof z->problem);
        if (ret == -ENOSPC && need <= file_size && need < MAX_TABLES) {
            len = (size_t)need;
            continue;
        }
        z->have_ix = ret == 1;
        if (ret == -ENOMEM)
            snprintf(z->problem, sizeof z->problem, "out of memory for the seek table");
        break;
    }
    if (!data)
        free(tail);
}

/* --- decompressing -------------------------------------------------------------- */

bool st__zin_magic(const uint8_t *p, size_t len)
{
    if (len < 4)
        return false;
    uint32_t m = st__zle_get32(p);
    return m == ST_ZSTD_FRAME_MAGIC || st__zskip_magic(m);
}

int st__zin_new(struct st__zin **out, const uint8_t *data, size_t size, st__zin_raw_fn raw, void *ctx, int fd,
                const uint8_t *pre, size_t npre)
{
    struct st__zin *z = calloc(1, sizeof *z);

    *out = NULL;
    if (!z || !(z->d = ZSTD_createDCtx()) || (!data && !(z->ibuf = malloc(npre > IN_CHUNK ? npre : IN_CHUNK)))) {
        st__zin_free(z);
        return -ENOMEM;
    }
    z->mem = data;
    z->raw = raw;
    z->ctx = ctx;
    z->fd = data ? -1 : fd;
    if (data) {
        z->in = (ZSTD_inBuffer){data, size, 0};
    } else {
        memcpy(z->ibuf, pre, npre);
        z->in = (ZSTD_inBuffer){z->ibuf, npre, 0};
    }
    load_index(z, data, size, data ? -1 : fd);
    *out = z;
    return 0;
}

void st__zin_set_skip(struct st__zin *z, st__zin_skip_fn skip, st__zin_skipped_fn skipped)
{
    z->skip = skip;
    z->skipped = skipped;
}

/* Moves the input to compressed offset off (a frame boundary). false when the source cannot. */
static bool jump(struct st__zin *z, uint64_t off)
{
    if (z->mem) {
        z->in.pos = (size_t)off;
        return true;
    }
    if (off >= z->in_base && off <= z->in_base + z->in.size) {
        z->in.pos = (size_t)(off - z->in_base);
        return true;
    }
    if (z->fd < 0 || lseek(z->fd, (off_t)off, SEEK_SET) != (off_t)off)
        return false;
    z->in_base = off;
    z->in = (ZSTD_inBuffer){z->ibuf, 0, 0};
    return true;
}

/* At a frame boundary: the seek table's entry of the frame there, or NULL (the table is then dropped). */
static const struct st__zframe *frame_here(struct st__zin *z)
{
    if (!z->have_ix)
        return NULL;
    while (z->k < z->ix.n && z->ix.frames[z->k].coff < z->frame_start)
        z->k++;
    if (z->k < z->ix.n && z->ix.frames[z->k].coff == z->frame_start)
        return &z->ix.frames[z->k];
    if (z->k < z->ix.n) {
        snprintf(z->problem, sizeof z->problem, "a frame starts at compressed byte %llu, which the seek table "
                 "does not list", (unsigned long long)z->frame_start);
        z->have_ix = false;
    }
    return NULL;
}

/* Whether the reader's filters drop the frame f whole: 1, 0, or -1 not known before the reader has read on. */
static int wants_skip(struct st__zin *z, const struct st__zframe *f)
{
    return f && f->dsize && z->skip ? z->skip(z->ctx, &f->t) : 0;
}

/* More raw bytes: 1, 0 at the end of the input (for now), or -errno. */
static int refill(struct st__zin *z)
{
    if (z->mem)
        return 0;
    z->in_base += z->in.size;
    z->in = (ZSTD_inBuffer){z->ibuf, 0, 0};
    ssize_t n = z->raw(z->ctx, z->ibuf, IN_CHUNK);
    if (n < 0) {
        snprintf(z->msg, sizeof z->msg, "reading compressed byte %llu: %s", (unsigned long long)z->in_base,
                 strerror((int)-n));
        return (int)n;
    }
    z->in.size = (size_t)n;
    return n > 0;
}

ssize_t st__zin_read(struct st__zin *z, uint8_t *p, size_t room, bool may_skip)
{
    ZSTD_outBuffer out = {p, room, 0};

    if (z->err)
        return z->err;
    while (out.pos < room) {
        if (!z->in_frame) {
            z->frame_start = z->in_base + z->in.pos;
            const struct st__zframe *f = frame_here(z);
            int w = wants_skip(z, f);
            if (w) {
                if (out.pos)
                    break; /* stop at the boundary: the reader reads what it has, then decides */
                if (w > 0 && may_skip && jump(z, f->coff + f->csize)) {
                    z->skipped(z->ctx, &f->t, f->dsize);
                    z->frames_skipped++;
                    z->frame_no++;
                    z->k++;
                    continue;
                }
            }
        }
        if (z->in.pos == z->in.size && !z->in_frame) {
            if (out.pos)
                break;
            int r = refill(z);
            if (r <= 0)
                return r;
            continue;
        }
        /* One frame at a time when its size is known, so its end is seen. */
        ZSTD_inBuffer in = z->in;
        if (z->have_ix && z->k < z->ix.n) {
            uint64_t end = z->ix.frames[z->k].coff + z->ix.frames[z->k].csize;
            if (end >= z->in_base && end - z->in_base < in.size)
                in.size = (size_t)(end - z->in_base);
        }
        size_t in_before = in.pos, out_before = out.pos;
        size_t ret = ZSTD_decompressStream(z->d, &out, &in);
        z->in.pos = in.pos;
        if (ZSTD_isError(ret)) {
            snprintf(z->msg, sizeof z->msg, "damaged zstd frame %llu at compressed byte %llu: %s",
                     (unsigned long long)z->frame_no, (unsigned long long)z->frame_start, ZSTD_getErrorName(ret));
            z->err = -EBADMSG;
            return out.pos ? (ssize_t)out.pos : z->err; /* what was decoded before it is read first */
        }
        z->dbytes += out.pos - out_before;
        z->in_frame = ret != 0;
        if (ret == 0) {
            z->frames_read++;
            z->frame_no++;
            continue;
        }
        if (in.pos == in_before && out.pos == out_before) {
            /* The decoder wants more input. */
            if (z->in.pos < z->in.size)
                continue;
            if (out.pos)
                break;
            int r = refill(z);
            if (r <= 0)
                return r;
        }
    }
    return (ssize_t)out.pos;
}

bool st__zin_cut(const struct st__zin *z)
{
    return z->in_frame || z->in.pos < z->in.size;
}

const char *st__zin_message(const struct st__zin *z)
{
    static const char none[] = "";
    if (z->msg[0])
        return z->msg;
    if (st__zin_cut(z)) {
        struct st__zin *m = (struct st__zin *)z; /* the message is made when asked */
        snprintf(m->msg, sizeof m->msg, "the compressed trace ends inside zstd frame %llu (it starts at compressed "
                 "byte %llu; %llu compressed bytes in all): every record before it was read",
                 (unsigned long long)z->frame_no, (unsigned long long)z->frame_start,
                 (unsigned long long)(z->in_base + z->in.size));
        return m->msg;
    }
    return none;
}

void st__zin_where(const struct st__zin *z, char *buf, size_t len)
{
    snprintf(buf, len, " (zstd frame %llu at compressed byte %llu)", (unsigned long long)z->frame_no,
             (unsigned long long)z->frame_start);
}

void st__zin_figures(const struct st__zin *z, struct st__zin_figures *f)
{
    *f = (struct st__zin_figures){.seekable = z->have_ix, .frames_read = z->frames_read,
                                  .frames_skipped = z->frames_skipped};
    if (z->have_ix) {
        f->frames = z->ix.data_frames;
        f->decompressed_bytes = z->ix.dsize;
    } else {
        f->frames = z->frames_read + z->in_frame;
        f->decompressed_bytes = z->dbytes;
    }
    f->compressed_bytes = z->mem ? z->in.size : z->in_base + z->in.size;
    struct stat st;
    if (z->fd >= 0 && fstat(z->fd, &st) == 0 && S_ISREG(st.st_mode))
        f->compressed_bytes = (uint64_t)st.st_size;
    f->index_problem = z->problem[0] ? z->problem : NULL;
}

void st__zin_free(struct st__zin *z)
{
    if (!z)
        return;
    ZSTD_freeDCtx(z->d);
    free(z->ibuf);
    st__zindex_free(&z->ix);
    free(z);
}
