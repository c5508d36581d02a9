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
 *
 * Decompressing ahead: a seekable input (a regular file or memory, its
 * frames listed by the seek table) has each frame the reader reads
 * decompressed whole into one of two slots, and the next frame the
 * reader's filters keep decompressed meanwhile by a second thread into the
 * other, so reading and decompressing use two cores. Memory stays bounded:
 * two frames (no more than AHEAD_MAX_FRAME each, else the input streams as
 * above). The thread reads the frame with pread() (or from memory) and
 * never touches the read position; whether to skip a frame is still asked
 * at its boundary, on the reading thread (a frame decompressed ahead and
 * then skipped is dropped). A frame the thread has not begun when the
 * reader needs it is decompressed by the reader itself (no core was free
 * for the thread: waiting would be slower than one thread). A frame that
 * fails (damage, a short read) is decoded again by the streaming path,
 * which says what failed and where, after the records before it, exactly
 * as without the thread. SIMPLETRACE_DECOMPRESS_AHEAD=0 leaves the thread
 * out (for measuring).
 *
 * The summary (ST_READER_SUMMARY): read with the tables when the frame
 * listed before the time index is one; st__zin_summary() hands it to the
 * reader, which skips the frames it answers for (frame_skippable()).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "thread_start.h"
#include "zstd_input.h"

#define IN_CHUNK ((size_t)128 << 10)
#define TAIL_FIRST ((size_t)64 << 10) /* bytes of the file's end read first: most tables fit */
#define MAX_TABLES ((uint64_t)1 << 32) /* tables larger than this are refused */
#define MAX_SUMMARY ((uint32_t)16 << 20) /* a larger frame before the time index is not taken for a summary */
#define AHEAD_MAX_FRAME ((uint32_t)64 << 20) /* frames larger than this stream instead (memory: two of them) */

/* A frame decompressed whole into a slot: by the reading thread, or ahead by the helper thread. */
struct ahead {
    bool on;                     /* frames are taken whole (the input qualifies, nothing failed) */
    bool locks;                  /* mu and cv are initialised */
    bool started;                /* the helper thread runs */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint8_t *slot[2];            /* two frames: the one being delivered, the next one */
    size_t slot_cap;             /* the largest data frame's decompressed size */
    uint8_t *cbuf[2];            /* compressed bytes read (file sources): [0] the reading thread's, [1] the helper's */
    size_t cbuf_cap;
    ZSTD_DCtx *hd;               /* the helper's decompressor */
    /* The helper's job, under mu: posted (WORK), taken up (BUSY), done, or the end (QUIT). */
    enum { JOB_NONE, JOB_WORK, JOB_BUSY, JOB_DONE, JOB_QUIT } job;
    uint32_t job_k;              /* the seek-table entry it decompresses */
    int job_slot;
    bool job_ok;                 /* JOB_DONE: the frame decompressed to its listed size */
    /* The frame being delivered (reading thread only). */
    bool cur;
    int cur_slot;
    size_t cur_pos, cur_len;
};

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
    bool data_frame;             /* ... which holds trace bytes (not a skippable frame of the trailer) */
    uint64_t frame_start;        /* compressed offset of the current (or next) frame */
    uint64_t frame_no;           /* its number, from 0 */
    struct st__zindex ix;
    bool have_ix;
    uint32_t k;                  /* with ix: the entry of the frame at frame_start */
    char problem[160];           /* why the seek table is not used */
    st__zin_skip_fn skip;
    st__zin_skipped_fn skipped;
    uint64_t frames_read, frames_skipped, frames_ahead, dbytes;
    int err;                     /* a decoding error, given once the bytes decoded before it are taken */
    char msg[256];
    struct ahead a;
};

/* --- the tables --------------------------------------------------------------- */

void st__zindex_free(struct st__zindex *ix)
{
    free(ix->frames);
    free(ix->sum);
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

/* The entries holding the smallest first and the largest last timestamp of the data frames. */
static void extremes(struct st__zindex *ix)
{
    ix->k_first = ix->k_last = ix->n;
    for (uint32_t i = 0; i < ix->n; i++) {
        const struct st__zframe *f = &ix->frames[i];
        if (!f->dsize || (f->t.flags & ST_ZTIME_NOTIME))
            continue;
        if (ix->k_first == ix->n || f->t.first_ns < ix->frames[ix->k_first].t.first_ns)
            ix->k_first = i;
        if (ix->k_last == ix->n || f->t.last_ns > ix->frames[ix->k_last].t.last_ns)
            ix->k_last = i;
    }
}

/*
 * The summary frame of size bytes at p, into ix. 0 (have_sum set when it is
 * one this reader knows: another version, or damage, leaves it out: the
 * answers then come from reading) or -ENOMEM.
 */
static int parse_summary(const uint8_t *p, uint64_t size, struct st__zindex *ix)
{
    uint32_t count = st__zle_get32(p + 16), esize = st__zle_get32(p + 20);

    if (st__zle_get32(p) != ST_ZSUM_SKIP_MAGIC || st__zle_get32(p + 4) != size - ST_ZSKIP_HEADER_SIZE ||
        st__zle_get32(p + 8) != ST_ZSUM_MAGIC || st__zle_get32(p + 12) != ST_ZSUM_VERSION ||
        esize < ST_ZSUM_ENTRY_SIZE || ST_ZSKIP_HEADER_SIZE + ST_ZSUM_HEAD_SIZE + (uint64_t)count * esize != size)
        return 0;
    if (count && !(ix->sum = malloc((size_t)count * sizeof *ix->sum)))
        return -ENOMEM;
    ix->write_lost = st__zle_get64(p + 24);
    p += ST_ZSKIP_HEADER_SIZE + ST_ZSUM_HEAD_SIZE;
    for (uint32_t i = 0; i < count; i++, p += esize)
        ix->sum[i] = (struct st__zsum_entry){st__zle_get64(p), st__zle_get64(p + 8)};
    ix->nsum = count;
    ix->have_sum = true;
    return 0;
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
    /* The summary, when the frame before the time index is one: its bytes are needed too. */
    uint64_t ssize = 0;
    if (count) {
        const uint8_t *e = seek + ST_ZSKIP_HEADER_SIZE + (uint64_t)(count - 1) * esize;
        uint32_t c = st__zle_get32(e);
        if (st__zle_get32(e + 4) == 0 && c >= ST_ZSKIP_HEADER_SIZE + ST_ZSUM_HEAD_SIZE && c <= MAX_SUMMARY)
            ssize = c;
    }
    if (ssize && len < seek_size + tsize + ssize) {
        *need = seek_size + tsize + ssize;
        return -ENOSPC;
    }
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
    extremes(ix);
    if (ssize && parse_summary(t - ssize, ssize, ix) < 0) {
        st__zindex_free(ix);
        return -ENOMEM;
    }
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
    for (int tries = 0; tries < 4; tries++) { /* the footer says the seek table's size, which the time index's, ... */
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

static bool jump(struct st__zin *z, uint64_t off);
static int wants_skip(struct st__zin *z, const struct st__zframe *f);

/* --- decompressing ahead ------------------------------------------------------- */

/* The compressed bytes of frame f: from memory, or read into buf (cap bytes at least). NULL on a short read. */
static const uint8_t *frame_bytes(const struct st__zin *z, const struct st__zframe *f, uint8_t *buf)
{
    if (z->mem)
        return z->mem + f->coff;
    size_t got = 0;
    while (got < f->csize) {
        ssize_t n = pread(z->fd, buf + got, f->csize - got, (off_t)(f->coff + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL;
        got += (size_t)n;
    }
    return buf;
}

/* Decompresses frame f whole into dst with d: true when it gave exactly its listed size (checksum checked). */
static bool frame_whole(const struct st__zin *z, ZSTD_DCtx *d, const struct st__zframe *f, uint8_t *dst,
                        uint8_t *cbuf)
{
    const uint8_t *src = frame_bytes(z, f, cbuf);
    if (!src)
        return false;
    size_t n = ZSTD_decompressDCtx(d, dst, f->dsize, src, f->csize);
    return !ZSTD_isError(n) && n == f->dsize;
}

static void *helper_main(void *arg)
{
    struct st__zin *z = arg;
    struct ahead *a = &z->a;

    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (a->job != JOB_WORK && a->job != JOB_QUIT)
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->job == JOB_QUIT)
            break;
        const struct st__zframe *f = &z->ix.frames[a->job_k];
        uint8_t *dst = a->slot[a->job_slot];
        a->job = JOB_BUSY;
        pthread_mutex_unlock(&a->mu);
        bool ok = frame_whole(z, a->hd, f, dst, a->cbuf[1]);
        pthread_mutex_lock(&a->mu);
        a->job_ok = ok;
        a->job = JOB_DONE;
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* Whether frames may be taken whole here: a seek table of several data frames, none too large. */
static void ahead_setup(struct st__zin *z)
{
    struct ahead *a = &z->a;
    const char *env = getenv("SIMPLETRACE_DECOMPRESS_AHEAD");
    uint32_t dmax = 0, cmax = 0;

    if (!z->have_ix || z->ix.data_frames < 2 || (env && !strcmp(env, "0")))
        return;
    for (uint32_t i = 0; i < z->ix.n; i++) {
        if (z->ix.frames[i].dsize > dmax)
            dmax = z->ix.frames[i].dsize;
        if (z->ix.frames[i].csize > cmax)
            cmax = z->ix.frames[i].csize;
    }
    if (dmax > AHEAD_MAX_FRAME || cmax > AHEAD_MAX_FRAME)
        return;
    a->slot_cap = dmax;
    a->cbuf_cap = z->mem ? 0 : cmax;
    for (int i = 0; i < 2; i++) {
        if (!(a->slot[i] = malloc(dmax)) || (!z->mem && !(a->cbuf[i] = malloc(cmax ? cmax : 1))))
            return; /* freed with the input; frames stream */
    }
    if (pthread_mutex_init(&a->mu, NULL) != 0)
        return;
    if (pthread_cond_init(&a->cv, NULL) != 0) {
        pthread_mutex_destroy(&a->mu);
        return;
    }
    a->locks = a->on = true;
}

/* Waits until the helper is not inside a frame; its result (if any) stays. Called with mu held. */
static void ahead_wait_locked(struct ahead *a)
{
    while (a->job == JOB_BUSY)
        pthread_cond_wait(&a->cv, &a->mu);
}

/*
 * Hands the helper entry k (a data frame) to decompress into the slot not
 * being delivered; not when it is still inside another frame (the reading
 * thread does not wait for one it does not need).
 */
static void ahead_post(struct st__zin *z, uint32_t k)
{
    struct ahead *a = &z->a;

    pthread_mutex_lock(&a->mu);
    if (a->job == JOB_BUSY) {
        pthread_mutex_unlock(&a->mu);
        return;
    }
    if (!a->started) {
        if (!a->hd)
            a->hd = ZSTD_createDCtx();
        /* (it waits for mu, held here, once running: no deadlock, the start returns before) */
        a->started = a->hd && st__thread_start(&a->th, NULL, helper_main, z, "st-unzstd") == 0;
    }
    if (a->started) {
        a->job_k = k;
        a->job_slot = !a->cur_slot;
        a->job = JOB_WORK;
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
}

/* The data frame after entry k the filters would keep, for the helper: its entry, or UINT32_MAX. */
static uint32_t next_kept(struct st__zin *z, uint32_t k)
{
    uint32_t j = k + 1;
    while (j < z->ix.n && z->ix.frames[j].dsize == 0)
        j++;
    if (j >= z->ix.n || wants_skip(z, &z->ix.frames[j]) != 0)
        return UINT32_MAX; /* none, or one that may be skipped: decided at its boundary */
    return j;
}

/*
 * At the boundary of frame f (entry z->k, kept): takes it whole into a
 * slot, from the helper when it decompressed it ahead (waiting when it is
 * at it), else here: also when the helper has not taken it up yet (no core
 * was free for it: waiting would be slower than one thread). Starts the
 * helper on the next one. false when it failed: the caller streams it.
 */
static bool ahead_take(struct st__zin *z, const struct st__zframe *f)
{
    struct ahead *a = &z->a;
    bool have = false;

    if (a->started) {
        pthread_mutex_lock(&a->mu);
        if (a->job == JOB_BUSY && a->job_k == z->k)
            ahead_wait_locked(a);
        if (a->job == JOB_DONE && a->job_k == z->k && a->job_ok) {
            a->cur_slot = a->job_slot;
            have = true;
            z->frames_ahead++;
        }
        if (a->job != JOB_BUSY) /* busy with a frame skipped since: it finishes into the other slot, unused */
            a->job = JOB_NONE;
        pthread_mutex_unlock(&a->mu);
    }
    if (!have && !frame_whole(z, z->d, f, a->slot[a->cur_slot], a->cbuf[0])) {
        a->on = false; /* the streaming path decodes it again and says what is wrong */
        return false;
    }
    if (!jump(z, f->coff + f->csize)) {
        a->on = false;
        return false;
    }
    a->cur = true;
    a->cur_pos = 0;
    a->cur_len = f->dsize;
    uint32_t next = next_kept(z, z->k);
    if (next != UINT32_MAX)
        ahead_post(z, next);
    return true;
}

/* Copies what is left of the current whole frame into out; at its end the frame counts as read. */
static void ahead_give(struct st__zin *z, ZSTD_outBuffer *out)
{
    struct ahead *a = &z->a;
    size_t n = a->cur_len - a->cur_pos;

    if (n > out->size - out->pos)
        n = out->size - out->pos;
    memcpy((uint8_t *)out->dst + out->pos, a->slot[a->cur_slot] + a->cur_pos, n);
    out->pos += n;
    a->cur_pos += n;
    z->dbytes += n;
    if (a->cur_pos == a->cur_len) {
        a->cur = false;
        z->frames_read++;
        z->frame_no++;
        z->k++;
    }
}

static void ahead_free(struct st__zin *z)
{
    struct ahead *a = &z->a;

    if (a->started) {
        pthread_mutex_lock(&a->mu);
        ahead_wait_locked(a);
        a->job = JOB_QUIT;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
        pthread_join(a->th, NULL);
    }
    if (a->locks) {
        pthread_cond_destroy(&a->cv);
        pthread_mutex_destroy(&a->mu);
    }
    ZSTD_freeDCtx(a->hd);
    for (int i = 0; i < 2; i++) {
        free(a->slot[i]);
        free(a->cbuf[i]);
    }
}


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
    ahead_setup(z);
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

/* Whether the frame starting at the input's position holds trace bytes: skippable frames (the trailer) count as no frame read. */
static bool data_frame_here(const struct st__zin *z)
{
    if (z->have_ix && z->k < z->ix.n && z->ix.frames[z->k].coff == z->frame_start)
        return z->ix.frames[z->k].dsize != 0;
    if (z->in.size - z->in.pos < 4)
        return true; /* too few bytes buffered to tell: a data frame is what a trace mostly holds */
    return !st__zskip_magic(st__zle_get32((const uint8_t *)z->in.src + z->in.pos));
}

/* Whether the reader's filters drop the frame f whole: 1, 0, or -1 not known before the reader has read on. */
static int wants_skip(struct st__zin *z, const struct st__zframe *f)
{
    if (!f || !f->dsize || !z->skip)
        return 0;
    uint32_t k = (uint32_t)(f - z->ix.frames);
    return z->skip(z->ctx, &f->t, k == z->ix.k_first || k == z->ix.k_last);
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
        if (z->a.cur) {
            ahead_give(z, &out);
            continue;
        }
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
            if (z->a.on && f && f->dsize && ahead_take(z, f))
                continue;
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
        if (!z->in_frame)
            z->data_frame = data_frame_here(z);
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
            z->frames_read += z->data_frame;
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

const struct st__zindex *st__zin_summary(const struct st__zin *z)
{
    return z->have_ix && z->ix.have_sum ? &z->ix : NULL;
}

void st__zin_where(const struct st__zin *z, char *buf, size_t len)
{
    snprintf(buf, len, " (zstd frame %llu at compressed byte %llu)", (unsigned long long)z->frame_no,
             (unsigned long long)z->frame_start);
}

void st__zin_figures(const struct st__zin *z, struct st__zin_figures *f)
{
    *f = (struct st__zin_figures){.seekable = z->have_ix, .frames_read = z->frames_read,
                                  .frames_skipped = z->frames_skipped, .frames_ahead = z->frames_ahead};
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
    ahead_free(z);
    ZSTD_freeDCtx(z->d);
    free(z->ibuf);
    st__zindex_free(&z->ix);
    free(z);
}
