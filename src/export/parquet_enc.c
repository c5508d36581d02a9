/*
 * The Parquet encoder (parquet_enc.h; layout and the Thrift compact
 * protocol: src/format/parquet_format.h).
 *
 * The caller's thread fills a row group: a column keeps its values in a
 * buffer (its lane, parquet_enc.h, whose common appends are inline): an
 * integer as a host uint64 (a run of one value as a count), a boolean as a
 * byte, a DICT column its uint32 indices with the dictionary's PLAIN bytes
 * beside them (struct chunk_data), a string its PLAIN bytes (JSON: the
 * caller's bytes, rendered by the worker). An optional column keeps
 * definition levels only once it has had a NULL (until then every level is
 * 1: one RLE run). Nothing is encoded per row beyond that: a flush hands the
 * row group's buffers whole to the worker (struct job) and gives the columns
 * fresh ones (recycled from written row groups: no page faults, no
 * regrowing).
 *
 * The worker encodes each column chunk as [dictionary page] data page
 * [data page]: integers DELTA_BINARY_PACKED, dictionary indices and levels
 * the RLE/bit-packed hybrid (a run the caller counted and did not store
 * is stored there, or written as the one value it is); a STRING chunk gets
 * a dictionary of its bytes made there, a JSON chunk one of the caller's
 * bytes (each entry rendered once: jd_code()), and when that grows too
 * large a second data page of PLAIN values for the rows after; compresses
 * each page
 * with zstd as a whole, and appends the row group's pages to the file in
 * one write. The caller's thread collects what the worker did (the
 * footer's numbers, errors, the buffers) at its next flush, and writes the
 * footer at finish once the worker is idle.
 *
 * Threads: the queue (queue, finished, in_flight, stop) is under mu. The
 * worker alone touches the page buffers (raw, zbuf, out), the zstd context
 * and a file's offset, created and werr while row groups are in flight; the
 * caller touches everything else, and those only after waiting for the
 * worker to be idle (finish, free).
 */
#include "parquet_enc.h"

#include <simpletrace/version.h>

#include "growbuf.h"
#include "parquet_format.h"
#include "thread_start.h"
#include "utf8.h"
#include "write_all.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define POOL_MAX 128u              /* value buffers kept for reuse ... */
#define POOL_BYTES (64u << 20)     /* ... holding this much at most */
#define DELTA_BLOCK 128u           /* DELTA_BINARY_PACKED: values per block */
#define DELTA_MINIBLOCKS 4u        /* ... miniblocks per block (32 values each) */
#define DELTA_MINI (DELTA_BLOCK / DELTA_MINIBLOCKS)

/* Encodings a column chunk used, as bits (1u << encoding): its footer lists them. */
#define ENC(e) (1u << (e))

/* One column's values of one row group: filled by the caller (vals in its lane), then handed to the worker whole. */
struct chunk_data {
    struct st__pq_buf vals;    /* integers: a uint64 each (host order); BOOL: a byte each; STRING, JSON: PLAIN;
                                  DICT: a uint32 dictionary index each */
    struct st__pq_buf defs;    /* a uint32 definition level per row, once a NULL came (empty before) */
    struct st__pq_buf dict;    /* DICT: the dictionary's values, PLAIN */
    uint32_t ndict;
    uint64_t nulls;
    uint64_t last;             /* handed over: the last value (DICT: index) stored in vals ... */
    uint32_t pending;          /* ... and how many more rows have it (the worker stores them: unrun()) */
};


/* What the footer needs of one column chunk written. */
struct chunk_meta {
    uint64_t data_offset, dict_offset; /* dict_offset 0: no dictionary page */
    uint64_t compressed, uncompressed; /* pages with their headers */
    uint64_t values, nulls;
    uint64_t min, max;                 /* for integer columns with values */
    unsigned encodings;                /* ENC() bits */
};

struct group_meta {
    uint64_t rows, offset, compressed, uncompressed;
};

struct column {
    struct st__pq_lane *lane;  /* what an append touches: the values, the last one (f->h.lanes[its index]) */
    struct chunk_data cur;     /* the row group being filled: its levels and dictionary (its values: lane) */
    char *name;
    enum st__pq_kind kind;
    bool optional;
    st__pq_render_fn render;   /* JSON: NULL, or what turns the caller's bytes into each value */
    void *render_arg;
    size_t unhashed;           /* JSON: leading bytes of a value its hash leaves out */
    struct chunk_meta *chunks; /* one per row group written */
};

/* A row group handed to the worker. */
struct job {
    struct st__pq_file *f;
    uint64_t rows;
    struct chunk_data *cols;   /* the columns' values (owned) */
    struct chunk_meta *meta;   /* filled by the worker */
    struct group_meta g;       /* likewise */
    int err;                   /* likewise: the write failed */
    struct job *next;
};

/* A STRING column chunk's dictionary, made by the worker: a hash table of its values' bytes. */
struct strdict {
    uint32_t *slots;           /* dictionary index + 1, 0: empty */
    uint32_t nslots;           /* a power of two */
    uint32_t *hashes, *offs;   /* by dictionary index: the value's hash and offset in dict */
    size_t cap;                /* entries allocated in hashes and offs */
    uint32_t n;                /* entries */
    struct st__growbuf dict;   /* the values, PLAIN */
    struct st__growbuf idx;    /* a uint32 index per value coded */
    uint64_t *recent;          /* JSON (jd_code()): JDICT_SLOTS of hash << 32 | dictionary index + 1 */
};

struct st__pq_shared {
    int level;                 /* zstd level */
    void *zctx;                /* worker: ZSTD_CCtx */
    struct st__growbuf raw;    /* worker: a page before compression */
    struct st__growbuf zbuf;   /* worker: ... after */
    struct st__growbuf out;    /* worker: a row group's pages with their headers */
    struct strdict sd;         /* worker: a STRING column's dictionary */
    struct st__growbuf footer; /* caller */
    struct st__pq_buf scratch;        /* caller: a string repaired to UTF-8 */
    struct st__pq_buf pool[POOL_MAX]; /* caller: value buffers of row groups written, for the next */
    size_t npool, pool_bytes;
    struct st__pq_file *failed; /* caller: the first file whose row group the worker could not write */
    int failed_err;
    bool threaded;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    struct job *queue, *queue_tail;       /* waiting for the worker */
    struct job *finished, *finished_tail; /* written, waiting for the caller */
    unsigned in_flight;                   /* queued or being written */
    bool stop;
};

struct st__pq_file {
    struct st__pq_file_head h; /* first: the inline appends (parquet_enc.h) read it */
    struct st__pq_shared *sh;
    int dirfd;
    const char *path;
    int err;                   /* a row group could not be written (collected from the worker) */
    struct column *cols;
    size_t ncols;
    struct st__pq_kv *kv;
    size_t nkv;
    uint64_t handed_rows;      /* rows of the row groups handed over */
    struct group_meta *groups; /* collected */
    size_t ngroups, capgroups;
    /* The worker's while row groups are in flight: */
    bool created;              /* the file exists (its magic written) */
    int werr;                  /* a write failed: later row groups are not written */
    uint64_t offset;           /* bytes written so far */
};

/* --- little helpers ------------------------------------------------------------------- */

static inline void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static void gb_varint(struct st__growbuf *b, uint64_t v)
{
    uint8_t tmp[10];
    st__growbuf_put(b, tmp, (size_t)(put_varint(tmp, v) - tmp));
}

/* Makes *arr (elements of size elem, *cap allocated) hold at least n. 0 or -ENOMEM. */
static int reserve(void *arr, size_t *cap, size_t n, size_t elem)
{
    if (n <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < n)
        c *= 2;
    void *v = realloc(*(void **)arr, c * elem);
    if (!v)
        return -ENOMEM;
    *(void **)arr = v;
    *cap = c;
    return 0;
}

/* Bits needed for v (0 for 0). */
static inline unsigned bits_of(uint64_t v)
{
    return v ? 64u - (unsigned)__builtin_clzll(v) : 0u;
}

/*
 * Packs count values of w bits (0..64) from the least significant bit of
 * each byte up, as the hybrid's bit-packed runs and DELTA_BINARY_PACKED's
 * miniblocks both do; count * w is a multiple of 8.
 */
static uint8_t *pack(uint8_t *p, const uint64_t *v, size_t count, unsigned w)
{
    uint64_t acc = 0;
    unsigned have = 0; /* bits in acc */
    if (w == 0)
        return p;
    for (size_t i = 0; i < count; i++) {
        uint64_t x = v[i];
        acc |= x << have; /* have < 64 */
        have += w;
        if (have >= 64) {
            put_le64(p, acc);
            p += 8;
            have -= 64;
            acc = have ? x >> (w - have) : 0; /* the bits of x that did not fit */
        }
    }
    for (; have > 0; have -= 8) {
        *p++ = (uint8_t)acc;
        acc >>= 8;
    }
    return p;
}

/* --- value buffers (the caller's) ----------------------------------------------------------- */

/* A recycled buffer for b (empty), if the pool has one: the smallest that holds b->hint, else the largest. */
static void pool_take(struct st__pq_shared *sh, struct st__pq_buf *b)
{
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < sh->npool; i++) {
        size_t cap = sh->pool[i].cap;
        if (best == SIZE_MAX) {
            best = i;
            continue;
        }
        size_t have = sh->pool[best].cap;
        bool fits = cap >= b->hint, best_fits = have >= b->hint;
        if (fits ? !best_fits || cap < have : !best_fits && cap > have)
            best = i;
    }
    if (best == SIZE_MAX)
        return;
    b->p = sh->pool[best].p;
    b->cap = sh->pool[best].cap;
    sh->pool_bytes -= b->cap;
    sh->pool[best] = sh->pool[--sh->npool];
}

/* Gives b's memory back to the pool (or frees it, when the pool is full); b is emptied. */
static void pool_give(struct st__pq_shared *sh, struct st__pq_buf *b)
{
    if (b->p && sh->npool < POOL_MAX && sh->pool_bytes + b->cap <= POOL_BYTES) {
        sh->pool[sh->npool++] = (struct st__pq_buf){.p = b->p, .cap = b->cap};
        sh->pool_bytes += b->cap;
    } else {
        free(b->p);
    }
    *b = (struct st__pq_buf){0};
}

/*
 * Room for n more bytes in b, slow path: a pooled buffer first, then
 * growing to the previous row group's size at once, doubling past it.
 * NULL (f->h.failed) when out of memory.
 */
static uint8_t *grow(struct st__pq_file *f, struct st__pq_buf *b, size_t n)
{
    if (!b->p)
        pool_take(f->sh, b);
    if (b->cap - b->len >= n)
        return b->p + b->len;
    size_t c = b->cap > 4096 ? b->cap : 4096;
    if (c < b->hint + b->hint / 8)
        c = b->hint + b->hint / 8;
    while (c - b->len < n)
        c *= 2;
    uint8_t *p = realloc(b->p, c);
    if (!p) {
        f->h.failed = true;
        return NULL;
    }
    b->p = p;
    b->cap = c;
    return p + b->len;
}

/* Room for n more bytes in b; the caller adds n to b->len once written. */
static inline uint8_t *room(struct st__pq_file *f, struct st__pq_buf *b, size_t n)
{
    return b->cap - b->len >= n ? b->p + b->len : grow(f, b, n);
}

static void chunk_recycle(struct st__pq_shared *sh, struct chunk_data *d)
{
    pool_give(sh, &d->vals);
    pool_give(sh, &d->defs);
    pool_give(sh, &d->dict);
}

/* --- Thrift compact protocol ------------------------------------------------------------ */

/* A field header: the type, the id as a delta from the previous field of the struct (*last). */
static void tc_field(struct st__growbuf *b, int *last, int id, unsigned type)
{
    int delta = id - *last;
    if (delta > 0 && delta <= 15) {
        uint8_t h = (uint8_t)(delta << 4 | (int)type);
        st__growbuf_put(b, &h, 1);
    } else {
        uint8_t t = (uint8_t)type;
        st__growbuf_put(b, &t, 1);
        gb_varint(b, zigzag(id));
    }
    *last = id;
}

static void tc_zigzag(struct st__growbuf *b, int64_t v)
{
    gb_varint(b, zigzag(v));
}

static void tc_int(struct st__growbuf *b, int *last, int id, unsigned type, int64_t v)
{
    tc_field(b, last, id, type);
    tc_zigzag(b, v);
}

static void tc_i32(struct st__growbuf *b, int *last, int id, int32_t v)
{
    tc_int(b, last, id, ST_TC_I32, v);
}

static void tc_i64(struct st__growbuf *b, int *last, int id, int64_t v)
{
    tc_int(b, last, id, ST_TC_I64, v);
}

static void tc_binary(struct st__growbuf *b, int *last, int id, const void *s, size_t n)
{
    tc_field(b, last, id, ST_TC_BINARY);
    gb_varint(b, n);
    st__growbuf_put(b, s, n);
}

static void tc_string(struct st__growbuf *b, int *last, int id, const char *s)
{
    tc_binary(b, last, id, s, strlen(s));
}

static void tc_bool(struct st__growbuf *b, int *last, int id, bool v)
{
    tc_field(b, last, id, v ? ST_TC_TRUE : ST_TC_FALSE);
}

/* A list header: n elements of type. */
static void tc_list(struct st__growbuf *b, size_t n, unsigned type)
{
    if (n < 15) {
        uint8_t h = (uint8_t)(n << 4 | type);
        st__growbuf_put(b, &h, 1);
    } else {
        uint8_t h = (uint8_t)(0xf0 | type);
        st__growbuf_put(b, &h, 1);
        gb_varint(b, n);
    }
}

/* A list field's header. */
static void tc_list_field(struct st__growbuf *b, int *last, int id, size_t n, unsigned type)
{
    tc_field(b, last, id, ST_TC_LIST);
    tc_list(b, n, type);
}

static void tc_stop(struct st__growbuf *b)
{
    uint8_t z = ST_TC_STOP;
    st__growbuf_put(b, &z, 1);
}

/* A field holding an empty struct (a union member without data: STRING, TYPE_ORDER, NANOS). */
static void tc_empty(struct st__growbuf *b, int *last, int id)
{
    tc_field(b, last, id, ST_TC_STRUCT);
    tc_stop(b);
}

/* --- the RLE/bit-packed hybrid ---------------------------------------------------------- */

/* Length of the run of equal values at v[i..n), counting at most max. */
static size_t run_at(const uint32_t *v, size_t i, size_t n, size_t max)
{
    size_t j = i + 1;
    while (j < n && j - i < max && v[j] == v[i])
        j++;
    return j - i;
}

static void rle_run(struct st__growbuf *b, uint32_t value, size_t count, unsigned w)
{
    gb_varint(b, (uint64_t)count << 1);
    uint8_t tmp[4];
    put_le32(tmp, value);
    st__growbuf_put(b, tmp, (w + 7) / 8);
}

/* Bit-packs v[i..i + groups * 8), values beyond n being 0. */
static void packed_run(struct st__growbuf *b, const uint32_t *v, size_t i, size_t groups, size_t n, unsigned w)
{
    gb_varint(b, (uint64_t)groups << 1 | 1);
    uint8_t *p = st__growbuf_room(b, groups * w); /* 8 values of w bits: w bytes */
    if (!p)
        return;
    uint8_t *start = p;
    for (size_t g = 0; g < groups; g++) {
        uint64_t eight[8];
        for (size_t k = 0; k < 8; k++)
            eight[k] = i + g * 8 + k < n ? v[i + g * 8 + k] : 0;
        p = pack(p, eight, 8, w);
    }
    st__growbuf_commit(b, (size_t)(p - start));
}

/*
 * The hybrid of v[0..n) at width w (1..32): runs of 8 or more equal values
 * are RLE runs, the rest bit-packed in groups of 8 (the last group padded
 * with 0).
 */
static void hybrid(struct st__growbuf *b, const uint32_t *v, size_t n, unsigned w)
{
    size_t i = 0;
    while (i < n) {
        size_t run = run_at(v, i, n, SIZE_MAX);
        if (run >= 8) {
            rle_run(b, v[i], run, w);
            i += run;
            continue;
        }
        size_t start = i;
        do
            i += 8;
        while (i < n && run_at(v, i, n, 8) < 8);
        if (i > n)
            i = n;
        packed_run(b, v, start, (i - start + 7) / 8, n, w);
    }
}

/* --- DELTA_BINARY_PACKED ------------------------------------------------------------------ */

/*
 * v[0..n) (n >= 1) as DELTA_BINARY_PACKED: the header, then blocks of 128
 * deltas, each less its minimum (all arithmetic wraps, as the format says),
 * packed in 4 miniblocks of 32 at the width the miniblock needs.
 */
static void put_delta(struct st__growbuf *b, const uint64_t *v, uint64_t n, bool sign, uint64_t *lo, uint64_t *hi)
{
    /* min/max on the way: signed order is unsigned order with the sign bit flipped */
    uint64_t flip = sign ? 1ull << 63 : 0;
    uint64_t mn = v[0] ^ flip, mx = mn;
    uint64_t blocks = (n - 1 + DELTA_BLOCK - 1) / DELTA_BLOCK;
    size_t bound = 4 * 10 + (size_t)blocks * (10 + DELTA_MINIBLOCKS + DELTA_BLOCK * 8);
    uint8_t *p = st__growbuf_room(b, bound), *start = p;
    if (!p)
        return;
    p = put_varint(p, DELTA_BLOCK);
    p = put_varint(p, DELTA_MINIBLOCKS);
    p = put_varint(p, n);
    p = put_varint(p, zigzag((int64_t)v[0]));
    for (uint64_t i = 1; i < n; i += DELTA_BLOCK) {
        size_t count = n - i < DELTA_BLOCK ? (size_t)(n - i) : DELTA_BLOCK;
        uint64_t d[DELTA_BLOCK];
        int64_t min = INT64_MAX;
        for (size_t j = 0; j < count; j++) {
            uint64_t x = v[i + j] ^ flip;
            mn = x < mn ? x : mn;
            mx = x > mx ? x : mx;
            d[j] = v[i + j] - v[i + j - 1];
            if ((int64_t)d[j] < min)
                min = (int64_t)d[j];
        }
        for (size_t j = 0; j < DELTA_BLOCK; j++) /* the last miniblock's padding: 0 */
            d[j] = j < count ? d[j] - (uint64_t)min : 0;
        p = put_varint(p, zigzag(min));
        uint8_t *widths = p;
        p += DELTA_MINIBLOCKS;
        for (size_t m = 0; m < DELTA_MINIBLOCKS; m++) {
            widths[m] = 0;
            if (m * DELTA_MINI >= count)
                continue; /* unneeded miniblocks of the last block: width 0, no bytes */
            uint64_t any = 0;
            for (size_t j = m * DELTA_MINI; j < (m + 1) * DELTA_MINI; j++)
                any |= d[j];
            widths[m] = (uint8_t)bits_of(any);
            p = pack(p, d + m * DELTA_MINI, DELTA_MINI, widths[m]);
        }
    }
    *lo = mn ^ flip;
    *hi = mx ^ flip;
    st__growbuf_commit(b, (size_t)(p - start));
}

/* --- the caller's side: values ------------------------------------------------------------ */

static bool is_int(enum st__pq_kind k)
{
    return k == ST__PQ_I64 || k == ST__PQ_U64 || k == ST__PQ_TIMESTAMP;
}

static bool is_signed(enum st__pq_kind k)
{
    return k == ST__PQ_I64 || k == ST__PQ_TIMESTAMP;
}


/* A definition level for the row being filled (1: a value), once the column keeps them. */
static void put_def(struct st__pq_file *f, struct column *c, uint32_t level)
{
    uint8_t *p = room(f, &c->cur.defs, 4);
    if (!p)
        return;
    memcpy(p, &level, 4);
    c->cur.defs.len += 4;
    f->h.bytes += 4;
}

void st__pq_null(struct st__pq_file *f, size_t col)
{
    struct column *c = &f->cols[col];
    if (!c->lane->defs_on) { /* the first NULL: the levels before it were all 1 */
        uint8_t *p = room(f, &c->cur.defs, (f->h.rows + 1) * 4);
        if (!p)
            return;
        for (uint64_t r = 0; r < f->h.rows; r++) {
            uint32_t one = 1;
            memcpy(p + r * 4, &one, 4);
        }
        c->cur.defs.len = f->h.rows * 4;
        f->h.bytes += f->h.rows * 4;
        c->lane->defs_on = true;
    }
    put_def(f, c, 0);
    c->cur.nulls++;
}

/* Stores c's pending repeats of its last value (integers: a uint64, DICT: an index). */
static void materialize(struct st__pq_file *f, struct column *c)
{
    bool dict = c->kind == ST__PQ_DICT;
    size_t size = dict ? 4 : 8, n = c->lane->pending;
    struct st__pq_buf *b = &c->lane->vals;
    uint8_t *p = room(f, b, n * size);
    if (!p)
        return;
    if (dict) {
        uint32_t k = (uint32_t)c->lane->last;
        for (size_t i = 0; i < n; i++)
            memcpy(p + i * 4, &k, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            memcpy(p + i * 8, &c->lane->last, 8);
    }
    b->len += n * size;
    c->lane->pending = 0;
}

void st__pq_int_slow(struct st__pq_file *f, size_t col, uint64_t v)
{
    struct column *c = &f->cols[col];
    if (c->lane->defs_on)
        put_def(f, c, 1);
    if (v == c->lane->last && c->lane->vals.len) { /* pid, tid: the same row after row */
        c->lane->pending++;
        return;
    }
    if (c->lane->pending)
        materialize(f, c);
    uint8_t *p = room(f, &c->lane->vals, 8);
    if (!p)
        return;
    memcpy(p, &v, 8);
    c->lane->vals.len += 8;
    c->lane->last = v;
}

void st__pq_bool(struct st__pq_file *f, size_t col, bool v)
{
    struct column *c = &f->cols[col];
    if (c->lane->defs_on)
        put_def(f, c, 1);
    uint8_t *p = room(f, &c->lane->vals, 1);
    if (!p)
        return;
    *p = v;
    c->lane->vals.len++;
}

static void put_index(struct st__pq_file *f, struct column *c, uint32_t k)
{
    uint8_t *p = room(f, &c->lane->vals, 4);
    if (!p)
        return;
    memcpy(p, &k, 4);
    c->lane->vals.len += 4;
}

/* Appends s (n bytes, valid UTF-8) to b as a PLAIN BYTE_ARRAY: length, bytes. */
static void put_plain(struct st__pq_file *f, struct st__pq_buf *b, const uint8_t *s, size_t n)
{
    uint8_t *p = room(f, b, 4 + n);
    if (!p)
        return;
    put_le32(p, (uint32_t)n);
    memcpy(p + 4, s, n);
    b->len += 4 + n;
    f->h.bytes += 4 + n;
}

static bool ascii(const uint8_t *s, size_t n)
{
    uint64_t any = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        any |= w;
    }
    for (; i < n; i++)
        any |= s[i];
    return (any & 0x8080808080808080u) == 0;
}

/* s[0..*n) as valid UTF-8: s itself when it is, else its repair in the shared scratch buffer (*n updated). */
static const uint8_t *valid_utf8(struct st__pq_file *f, const uint8_t *s, size_t *n)
{
    if (ascii(s, *n))
        return s;
    struct st__pq_buf *b = &f->sh->scratch;
    b->len = 0;
    uint8_t *p = room(f, b, ST__UTF8_REPAIRED_MAX(*n));
    if (!p)
        return NULL;
    *n = (size_t)(st__utf8_repair(p, s, *n) - p);
    return p;
}

static void put_string(struct st__pq_file *f, size_t col, const uint8_t *s, size_t n)
{
    struct column *c = &f->cols[col];
    if (c->lane->defs_on)
        put_def(f, c, 1);
    put_plain(f, &c->lane->vals, s, n);
}

void st__pq_text_slow(struct st__pq_file *f, size_t col, const void *s, size_t n)
{
    const uint8_t *v = valid_utf8(f, s, &n);
    if (v)
        put_string(f, col, v, n);
}

char *st__pq_text_room_slow(struct st__pq_file *f, size_t col, size_t max)
{
    struct column *c = &f->cols[col];
    if (c->lane->defs_on)
        put_def(f, c, 1);
    uint8_t *p = room(f, &c->lane->vals, 4 + max);
    return p ? (char *)p + 4 : NULL;
}

void st__pq_dict_slow(struct st__pq_file *f, size_t col, uint32_t id, const char *s)
{
    struct column *c = &f->cols[col];
    if (c->lane->defs_on)
        put_def(f, c, 1);
    if (id == c->lane->last_id && c->lane->vals.len) { /* the same as the last row's: a program, a host */
        c->lane->pending++;
        return;
    }
    if (c->lane->pending)
        materialize(f, c);
    struct st__pq_lane *l = c->lane;
    if (id >= l->nids) {
        size_t cap = l->nids;
        if (reserve(&l->ids, &cap, (size_t)id + 1, sizeof *l->ids) < 0) {
            f->h.failed = true;
            return;
        }
        memset(l->ids + l->nids, 0, (cap - l->nids) * sizeof *l->ids);
        l->nids = (uint32_t)cap;
    }
    struct st__pq_dict_slot *d = &l->ids[id];
    if (d->stamp != f->h.stamp) { /* new in this row group */
        size_t n = strlen(s);
        const uint8_t *v = valid_utf8(f, (const uint8_t *)s, &n);
        if (!v)
            return;
        d->stamp = f->h.stamp;
        d->index = c->cur.ndict++;
        put_plain(f, &c->cur.dict, v, n);
    }
    put_index(f, c, d->index);
    c->lane->last = d->index;
    c->lane->last_id = id;
}

uint64_t st__pq_rows(const struct st__pq_file *f)
{
    return f->handed_rows + f->h.rows;
}

const char *st__pq_path(const struct st__pq_file *f)
{
    return f->path;
}

/* --- the worker's side: STRING dictionaries ------------------------------------------------ */

#define DICT_MAX_BYTES (1u << 20)  /* a string dictionary past this gives up: PLAIN for the rest of the group */
#define DICT_MAX_VALUES (1u << 16) /* ... or past this many values */
#define JDICT_SLOTS 4096u          /* a JSON column's dictionary: recent values it finds again (jd_code()) */
#define JDICT_MAX_BYTES (8u << 20) /* ... past this many of the caller's bytes it gives up ... */
#define JDICT_TRY 4096u            /* ... or, once this many values are coded, when more than ... */
#define JDICT_NEW_PCT 75u          /* ... this percentage of them were new: rows mostly unique gain nothing */

static inline uint64_t load64(const uint8_t *s)
{
    uint64_t w;
    memcpy(&w, s, 8);
    return w;
}

/*
 * A hash of s (n bytes) for the dictionaries' tables: each 8 bytes
 * multiplied by a constant of its own and added (products that do not wait
 * for each other), the tail as the last 8 bytes (overlapping), no call.
 */
static inline uint32_t hash_bytes(const uint8_t *s, size_t n)
{
    static const uint64_t k[4] = {0x9e3779b97f4a7c15u, 0xff51afd7ed558ccdu, 0xc4ceb9fe1a85ec53u,
                                  0xd6e8feb86659fd93u};
    uint64_t h = n * 0x2545f4914f6cdd1du;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        h += (load64(s + i) ^ (i >> 3)) * k[(i >> 3) & 3];
    if (i < n) {
        uint64_t w = 0;
        if (n >= 8) {
            w = load64(s + n - 8);
        } else {
            for (size_t j = 0; j < n; j++)
                w |= (uint64_t)s[j] << (8 * j);
        }
        h += (w ^ 0x5555) * 0x94d049bb133111ebu;
    }
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9u;
    return (uint32_t)(h ^ h >> 32);
}

/* Whether a and b (n bytes each) are equal: 8 bytes at a time, the tail overlapping, no call. */
static inline bool same_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
    if (n < 8)
        return memcmp(a, b, n) == 0;
    uint64_t diff = load64(a + n - 8) ^ load64(b + n - 8);
    for (size_t i = 0; i + 8 <= n && !diff; i += 8)
        diff = load64(a + i) ^ load64(b + i);
    return diff == 0;
}

/* Makes sd's table nslots (a power of two) large, its entries placed again. 0 or -ENOMEM. */
static int sd_rehash(struct strdict *sd, uint32_t nslots)
{
    uint32_t *s = nslots == sd->nslots ? sd->slots : calloc(nslots, sizeof *s);
    if (!s)
        return -ENOMEM;
    if (s == sd->slots)
        memset(s, 0, nslots * sizeof *s);
    for (uint32_t k = 0; k < sd->n; k++) {
        uint32_t i = sd->hashes[k] & (nslots - 1);
        while (s[i])
            i = (i + 1) & (nslots - 1);
        s[i] = k + 1;
    }
    if (s != sd->slots)
        free(sd->slots);
    sd->slots = s;
    sd->nslots = nslots;
    return 0;
}

/* Makes room for cap entries in sd's hashes and offs. 0 or -ENOMEM. */
static int reserve_entries(struct strdict *sd, size_t cap)
{
    uint32_t *hs = realloc(sd->hashes, cap * sizeof *hs);
    if (hs)
        sd->hashes = hs;
    uint32_t *os = hs ? realloc(sd->offs, cap * sizeof *os) : NULL;
    if (!os)
        return -ENOMEM;
    sd->offs = os;
    sd->cap = cap;
    return 0;
}

/* Adds s (n bytes) as entry sd->n, at empty slot i, with hash h. 0 or -ENOMEM. */
static int sd_add(struct strdict *sd, uint32_t i, uint32_t h, const uint8_t *s, size_t n)
{
    if (sd->n >= sd->cap && reserve_entries(sd, sd->cap ? sd->cap * 2 : 256) < 0)
        return -ENOMEM;
    sd->hashes[sd->n] = h;
    sd->offs[sd->n] = (uint32_t)sd->dict.len;
    sd->slots[i] = sd->n + 1;
    uint8_t len[4];
    put_le32(len, (uint32_t)n);
    st__growbuf_put(&sd->dict, len, 4);
    st__growbuf_put(&sd->dict, s, n);
    sd->n++;
    return sd->n * 2 > sd->nslots ? sd_rehash(sd, sd->nslots * 2) : 0;
}

/*
 * Codes the PLAIN values of v (len bytes) by a dictionary of their bytes,
 * from the first on, into sd (entries, indices) until it would pass its
 * limit. Returns how many values it coded (-ENOMEM when out of memory),
 * *coded_len the bytes they take in v.
 */
static int64_t sd_code(struct strdict *sd, const uint8_t *v, size_t len, size_t *coded_len)
{
    sd->n = 0;
    sd->dict.len = sd->idx.len = 0;
    if (sd_rehash(sd, 1024) < 0)
        return -ENOMEM;
    int64_t coded = 0;
    size_t at = 0, last = SIZE_MAX; /* the value before (its offset in v) and its index */
    uint32_t last_k = 0;
    for (; at < len; coded++) {
        size_t n = get_le32(v + at);
        const uint8_t *s = v + at + 4;
        if (last != SIZE_MAX && get_le32(v + last) == n && same_bytes(v + last + 4, s, n)) {
            st__growbuf_put(&sd->idx, &last_k, 4); /* the same as the row before: no hashing */
            last = at;
            at += 4 + n;
            continue;
        }
        uint32_t h = hash_bytes(s, n), mask = sd->nslots - 1, i = h & mask, e;
        for (; (e = sd->slots[i]) != 0; i = (i + 1) & mask) {
            const uint8_t *d = sd->dict.data + sd->offs[e - 1];
            if (sd->hashes[e - 1] == h && get_le32(d) == n && same_bytes(d + 4, s, n))
                break;
        }
        if (!e) {
            if (sd->dict.len + 4 + n > DICT_MAX_BYTES || sd->n >= DICT_MAX_VALUES)
                break; /* the rest PLAIN */
            e = sd->n + 1;
            if (sd_add(sd, i, h, s, n) < 0)
                return -ENOMEM;
        }
        uint32_t k = e - 1;
        st__growbuf_put(&sd->idx, &k, 4);
        last = at;
        last_k = k;
        at += 4 + n;
    }
    *coded_len = at;
    return sd->dict.failed || sd->idx.failed ? -ENOMEM : coded;
}

/*
 * The same for a JSON column's values (the caller's bytes, rendered once per
 * dictionary entry): repeats are found by a small table of recent values
 * (JDICT_SLOTS, direct-mapped by hash, no probing), so a value of many rows
 * is one entry, and a value seen once costs a hash and a copy, not a
 * search of a large table; a value whose slot another took since becomes a
 * second entry of the same bytes (readers take an index as it comes).
 * Gives up (the rest PLAIN) past JDICT_MAX_BYTES or DICT_MAX_VALUES entries,
 * or when, past JDICT_TRY values, more than JDICT_NEW_PCT % were new.
 */
static int64_t jd_code(struct strdict *sd, const uint8_t *v, size_t len, uint64_t nvals, size_t unhashed,
                       size_t *coded_len)
{
    sd->n = 0;
    sd->dict.len = sd->idx.len = 0;
    if (!sd->recent && !(sd->recent = malloc(JDICT_SLOTS * sizeof *sd->recent)))
        return -ENOMEM;
    memset(sd->recent, 0, JDICT_SLOTS * sizeof *sd->recent);
    size_t dict_max = len < JDICT_MAX_BYTES ? len : JDICT_MAX_BYTES;
    uint32_t *idx = (uint32_t *)(void *)st__growbuf_room(&sd->idx, nvals * 4 + 4);
    uint8_t *dict = st__growbuf_room(&sd->dict, dict_max + 4);
    if (!idx || !dict || (sd->cap < DICT_MAX_VALUES && reserve_entries(sd, DICT_MAX_VALUES) < 0))
        return -ENOMEM;
    size_t at = 0, dlen = 0;
    int64_t coded = 0;
    for (; at < len; coded++) {
        size_t n = get_le32(v + at);
        const uint8_t *s = v + at + 4;
        uint32_t h = n >= unhashed ? hash_bytes(s + unhashed, n - unhashed) : hash_bytes(s, n);
        uint64_t *slot = &sd->recent[h & (JDICT_SLOTS - 1)];
        uint32_t e = (uint32_t)*slot;
        if (e && (uint32_t)(*slot >> 32) == h) {
            const uint8_t *d = dict + sd->offs[e - 1];
            if (get_le32(d) == n && same_bytes(d + 4, s, n)) {
                idx[coded] = e - 1;
                at += 4 + n;
                continue;
            }
        }
        if (dlen + 4 + n > dict_max || sd->n >= DICT_MAX_VALUES ||
            (coded >= JDICT_TRY && (uint64_t)sd->n * 100 > (uint64_t)coded * JDICT_NEW_PCT))
            break; /* the rest PLAIN */
        sd->offs[sd->n] = (uint32_t)dlen;
        memcpy(dict + dlen, v + at, 4 + n);
        dlen += 4 + n;
        idx[coded] = sd->n++;
        *slot = (uint64_t)h << 32 | sd->n;
        at += 4 + n;
    }
    st__growbuf_commit(&sd->idx, (size_t)coded * 4);
    st__growbuf_commit(&sd->dict, dlen);
    *coded_len = at;
    return coded;
}

static void sd_free(struct strdict *sd)
{
    free(sd->recent);
    free(sd->slots);
    free(sd->hashes);
    free(sd->offs);
    st__growbuf_free(&sd->dict);
    st__growbuf_free(&sd->idx);
}

/* The row of d's value k (k <= its values; k = all of them: the row count). */
static uint64_t row_of_value(const struct chunk_data *d, uint64_t k, uint64_t rows)
{
    if (!d->defs.len)
        return k;
    const uint32_t *def = (const uint32_t *)(const void *)d->defs.p;
    for (uint64_t r = 0; r < rows; r++)
        if (def[r] && k-- == 0)
            return r;
    return rows;
}

/* --- the worker's side: pages --------------------------------------------------------------- */

/* Compresses sh->raw into sh->zbuf. 0 or -ENOMEM (-EIO for a zstd error, which cannot happen with our sizes). */
static int compress_raw(struct st__pq_shared *sh)
{
    size_t bound = ZSTD_compressBound(sh->raw.len);
    sh->zbuf.len = 0;
    uint8_t *p = st__growbuf_room(&sh->zbuf, bound ? bound : 1);
    if (!p)
        return -ENOMEM;
    size_t n = ZSTD_compressCCtx(sh->zctx, p, bound, sh->raw.data ? sh->raw.data : (const void *)"", sh->raw.len,
                                 sh->level);
    if (ZSTD_isError(n))
        return -EIO;
    st__growbuf_commit(&sh->zbuf, n);
    return 0;
}

/* Compresses sh->raw and appends it as a page (its header, then the bytes) to sh->out; adds its sizes to m. */
static int put_page(struct st__pq_shared *sh, struct chunk_meta *m, int type, uint64_t values, int encoding)
{
    if (sh->raw.failed)
        return -ENOMEM;
    int ret = compress_raw(sh);
    if (ret < 0)
        return ret;
    struct st__growbuf *b = &sh->out;
    size_t start = b->len;
    int last = 0, inner = 0;
    tc_i32(b, &last, ST_PQ_PH_TYPE, type);
    tc_i32(b, &last, ST_PQ_PH_UNCOMPRESSED, (int32_t)sh->raw.len);
    tc_i32(b, &last, ST_PQ_PH_COMPRESSED, (int32_t)sh->zbuf.len);
    if (type == ST_PQ_PAGE_DICTIONARY) {
        tc_field(b, &last, ST_PQ_PH_DICTIONARY, ST_TC_STRUCT);
        tc_i32(b, &inner, ST_PQ_DICT_NUM_VALUES, (int32_t)values);
        tc_i32(b, &inner, ST_PQ_DICT_ENCODING, ST_PQ_ENC_PLAIN);
    } else {
        tc_field(b, &last, ST_PQ_PH_DATA, ST_TC_STRUCT);
        tc_i32(b, &inner, ST_PQ_DPH_NUM_VALUES, (int32_t)values);
        tc_i32(b, &inner, ST_PQ_DPH_ENCODING, encoding);
        tc_i32(b, &inner, ST_PQ_DPH_DEF_ENCODING, ST_PQ_ENC_RLE);
        tc_i32(b, &inner, ST_PQ_DPH_REP_ENCODING, ST_PQ_ENC_RLE);
    }
    tc_stop(b); /* the inner header */
    tc_stop(b); /* PageHeader */
    size_t header = b->len - start;
    st__growbuf_put(b, sh->zbuf.data, sh->zbuf.len);
    m->compressed += header + sh->zbuf.len;
    m->uncompressed += header + sh->raw.len;
    m->encodings |= ENC(encoding);
    return b->failed ? -ENOMEM : 0;
}

/* Starts a data page of rows [r0, r1) of d in sh->raw: an optional column's definition levels. */
static void page_start(struct st__pq_shared *sh, bool optional, const struct chunk_data *d, uint64_t r0, uint64_t r1)
{
    sh->raw.len = 0;
    if (!optional)
        return;
    uint8_t *p = st__growbuf_room(&sh->raw, 4); /* the hybrid's length, filled in below */
    if (!p)
        return;
    st__growbuf_commit(&sh->raw, 4);
    if (d->defs.len)
        hybrid(&sh->raw, (const uint32_t *)(const void *)d->defs.p + r0, (size_t)(r1 - r0), 1);
    else if (r1 > r0)
        rle_run(&sh->raw, 1, (size_t)(r1 - r0), 1);
    if (!sh->raw.failed)
        put_le32(sh->raw.data, (uint32_t)(sh->raw.len - 4));
}

/*
 * The data page of a dictionary-coded chunk's first rows: their levels, then n indices of a dictionary of ndict
 * values (one: idx[0] n times, n >= 8).
 */
static int dict_data_page(struct st__pq_shared *sh, const struct column *c, const struct chunk_data *d, uint64_t rows,
                          const uint32_t *idx, size_t n, bool one, uint32_t ndict, struct chunk_meta *m)
{
    page_start(sh, c->optional, d, 0, rows);
    unsigned w = bits_of(ndict ? ndict - 1 : 0);
    uint8_t wb = (uint8_t)(w ? w : 1); /* some readers take width 0 badly */
    st__growbuf_put(&sh->raw, &wb, 1);
    if (one) /* the one RLE run hybrid() would make of them */
        rle_run(&sh->raw, idx[0], n, wb);
    else
        hybrid(&sh->raw, idx, n, wb);
    return put_page(sh, m, ST_PQ_PAGE_DATA, rows, ST_PQ_ENC_RLE_DICTIONARY);
}

/* The values v[at..len), each the caller's bytes, PLAIN as c's renderer makes them, onto sh->raw. 0 or -ENOMEM. */
static int render(struct st__pq_shared *sh, const struct column *c, const uint8_t *v, size_t at, size_t len)
{
    while (at < len) {
        size_t n = get_le32(v + at), start = sh->raw.len;
        if (!st__growbuf_room(&sh->raw, 4))
            return -ENOMEM;
        st__growbuf_commit(&sh->raw, 4);
        int ret = c->render(c->render_arg, v + at + 4, n, &sh->raw);
        if (ret < 0)
            return ret;
        put_le32(sh->raw.data + start, (uint32_t)(sh->raw.len - start - 4));
        at += 4 + n;
    }
    return sh->raw.failed ? -ENOMEM : 0;
}

/* A dictionary page of n values, PLAIN (len bytes at v; c: those of a JSON column, rendered first). */
static int dict_page(struct st__pq_shared *sh, struct st__pq_file *f, const struct column *c, const void *v,
                     size_t len, uint32_t n, struct chunk_meta *m)
{
    m->dict_offset = f->offset + sh->out.len;
    sh->raw.len = 0;
    if (c && c->render) {
        int ret = render(sh, c, v, 0, len);
        if (ret < 0)
            return ret;
    } else {
        st__growbuf_put(&sh->raw, v, len);
    }
    return put_page(sh, m, ST_PQ_PAGE_DICTIONARY, n, ST_PQ_ENC_PLAIN);
}

/* Stores the run d ends with (its last value, pending more times) in its values. 0 or -ENOMEM. */
static int unrun(struct chunk_data *d, size_t size)
{
    size_t n = d->pending, need = d->vals.len + n * size;
    if (need > d->vals.cap) {
        uint8_t *p = realloc(d->vals.p, need);
        if (!p)
            return -ENOMEM;
        d->vals.p = p;
        d->vals.cap = need;
    }
    uint8_t *p = d->vals.p + d->vals.len;
    if (size == 4) {
        uint32_t k = (uint32_t)d->last;
        for (size_t i = 0; i < n; i++)
            memcpy(p + i * 4, &k, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            memcpy(p + i * 8, &d->last, 8);
    }
    d->vals.len = need;
    d->pending = 0;
    return 0;
}

/* n (>= 1) values all v as DELTA_BINARY_PACKED: the header, then each block a minimum of 0 and widths 0. */
static void put_delta_same(struct st__growbuf *b, uint64_t v, uint64_t n)
{
    uint64_t blocks = (n - 1 + DELTA_BLOCK - 1) / DELTA_BLOCK;
    uint8_t *p = st__growbuf_room(b, 4 * 10 + (size_t)blocks * (1 + DELTA_MINIBLOCKS)), *start = p;
    if (!p)
        return;
    p = put_varint(p, DELTA_BLOCK);
    p = put_varint(p, DELTA_MINIBLOCKS);
    p = put_varint(p, n);
    p = put_varint(p, zigzag((int64_t)v));
    memset(p, 0, (size_t)blocks * (1 + DELTA_MINIBLOCKS));
    p += blocks * (1 + DELTA_MINIBLOCKS);
    st__growbuf_commit(b, (size_t)(p - start));
}

/*
 * Column chunk i of job into sh->out: [dictionary page] data page [data
 * page]; its footer entry in job->meta[i]. A STRING chunk is coded by a
 * dictionary of its values as long as that stays small: its first data page
 * holds the rows it codes, a second one the rest, PLAIN.
 */
static int put_chunk(struct st__pq_shared *sh, struct job *job, size_t i)
{
    struct st__pq_file *f = job->f;
    const struct column *c = &f->cols[i];
    struct chunk_data *d = &job->cols[i];
    struct chunk_meta *m = &job->meta[i];
    uint64_t rows = job->rows, nvals = rows - d->nulls, dict_rows = 0;
    size_t plain_at = 0; /* STRING: the bytes of d->vals a dictionary coded */
    int ret;
    *m = (struct chunk_meta){.values = rows, .nulls = d->nulls, .encodings = ENC(ST_PQ_ENC_RLE)};
    bool same = is_int(c->kind) && d->vals.len == 8 && d->pending == nvals - 1; /* one value: pid, tid */
    bool same_index = c->kind == ST__PQ_DICT && d->vals.len == 4 && d->pending == nvals - 1 && nvals >= 8;
    if (d->pending && !same && !same_index && unrun(d, c->kind == ST__PQ_DICT ? 4 : 8) < 0)
        return -ENOMEM;
    if (c->kind == ST__PQ_DICT) {
        if ((ret = dict_page(sh, f, NULL, d->dict.p, d->dict.len, d->ndict, m)) < 0)
            return ret;
        m->data_offset = f->offset + sh->out.len;
        return dict_data_page(sh, c, d, rows, (const uint32_t *)(const void *)d->vals.p,
                              same_index ? (size_t)nvals : d->vals.len / 4, same_index, d->ndict, m);
    }
    m->data_offset = f->offset + sh->out.len;
    if ((c->kind == ST__PQ_STRING || (c->kind == ST__PQ_JSON && c->render)) && nvals) {
        /* JSON: a dictionary of the caller's bytes, so that a repeated value is rendered and compressed once */
        struct strdict *sd = &sh->sd;
        int64_t coded = c->kind == ST__PQ_JSON ? jd_code(sd, d->vals.p, d->vals.len, nvals, c->unhashed, &plain_at)
                                               : sd_code(sd, d->vals.p, d->vals.len, &plain_at);
        if (coded < 0)
            return -ENOMEM;
        if (coded > 0) {
            if ((ret = dict_page(sh, f, c, sd->dict.data, sd->dict.len, sd->n, m)) < 0)
                return ret;
            m->data_offset = f->offset + sh->out.len;
            dict_rows = row_of_value(d, (uint64_t)coded, rows);
            ret = dict_data_page(sh, c, d, dict_rows, (const uint32_t *)(const void *)sd->idx.data,
                                 (size_t)coded, false, sd->n, m);
            if (ret < 0)
                return ret;
        }
        if (dict_rows == rows)
            return 0;
    }
    page_start(sh, c->optional, d, dict_rows, rows); /* what no dictionary codes */
    int encoding = ST_PQ_ENC_PLAIN;
    if (same) {
        m->min = m->max = d->last;
        put_delta_same(&sh->raw, d->last, nvals);
        encoding = ST_PQ_ENC_DELTA_BINARY_PACKED;
    } else if (is_int(c->kind)) {
        if (nvals) {
            put_delta(&sh->raw, (const uint64_t *)(const void *)d->vals.p, nvals, is_signed(c->kind), &m->min, &m->max);
            encoding = ST_PQ_ENC_DELTA_BINARY_PACKED;
        }
    } else if (c->kind == ST__PQ_BOOL) {
        uint8_t *p = st__growbuf_room(&sh->raw, (nvals + 7) / 8);
        if (!p)
            return -ENOMEM;
        memset(p, 0, (nvals + 7) / 8);
        for (uint64_t k = 0; k < nvals; k++)
            p[k >> 3] |= (uint8_t)((d->vals.p[k] & 1) << (k & 7));
        st__growbuf_commit(&sh->raw, (nvals + 7) / 8);
    } else if (c->render) {
        if ((ret = render(sh, c, d->vals.p, plain_at, d->vals.len)) < 0)
            return ret;
    } else {
        st__growbuf_put(&sh->raw, d->vals.p + plain_at, d->vals.len - plain_at);
    }
    return put_page(sh, m, ST_PQ_PAGE_DATA, rows - dict_rows, encoding);
}

/* Appends n bytes of data to f's file (created, with its magic, the first time). 0 or -errno. */
static int append(struct st__pq_file *f, const void *data, size_t n)
{
    int flags = O_WRONLY | O_APPEND | O_CLOEXEC | (f->created ? 0 : O_CREAT | O_EXCL);
    int fd = openat(f->dirfd, f->path, flags, 0666);
    if (fd < 0)
        return -errno;
    int ret = f->created ? 0 : st__write_all(fd, ST_PQ_MAGIC, ST_PQ_MAGIC_BYTES);
    f->created = true; /* f->offset counted the magic from the start */
    if (ret == 0 && n)
        ret = st__write_all(fd, data, n);
    if (close(fd) != 0 && ret == 0)
        ret = -errno;
    if (ret == 0)
        f->offset += n;
    return ret;
}

/* The worker's part of a row group: pages, compressed, appended to the file. Sets job->err. */
static void run_job(struct st__pq_shared *sh, struct job *job)
{
    struct st__pq_file *f = job->f;
    if (f->werr) { /* an earlier row group is missing: the file is lost already */
        job->err = f->werr;
        return;
    }
    sh->out.len = 0;
    job->g = (struct group_meta){.rows = job->rows, .offset = f->offset};
    int ret = 0;
    for (size_t i = 0; ret == 0 && i < f->ncols; i++) {
        ret = put_chunk(sh, job, i);
        job->g.compressed += job->meta[i].compressed;
        job->g.uncompressed += job->meta[i].uncompressed;
    }
    if (ret == 0)
        ret = append(f, sh->out.data, sh->out.len);
    job->err = f->werr = ret;
}

/* --- the queue -------------------------------------------------------------------------------- */

static void *worker(void *arg)
{
    struct st__pq_shared *sh = arg;
    pthread_mutex_lock(&sh->mu);
    for (;;) {
        while (!sh->queue && !sh->stop)
            pthread_cond_wait(&sh->work, &sh->mu);
        struct job *job = sh->queue;
        if (!job)
            break;
        sh->queue = job->next;
        pthread_mutex_unlock(&sh->mu);
        run_job(sh, job);
        pthread_mutex_lock(&sh->mu);
        job->next = NULL;
        if (sh->finished_tail)
            sh->finished_tail->next = job;
        else
            sh->finished = job;
        sh->finished_tail = job;
        sh->in_flight--;
        pthread_cond_broadcast(&sh->done);
    }
    pthread_mutex_unlock(&sh->mu);
    return NULL;
}

/* Takes what the worker did with job into its file (the footer's numbers, an error), recycles its buffers. */
static void collect_one(struct st__pq_shared *sh, struct job *job)
{
    struct st__pq_file *f = job->f;
    int err = job->err;
    if (err == 0 && reserve(&f->groups, &f->capgroups, f->ngroups + 1, sizeof *f->groups) < 0)
        err = -ENOMEM;
    for (size_t i = 0; err == 0 && i < f->ncols; i++) {
        struct chunk_meta *m = realloc(f->cols[i].chunks, (f->ngroups + 1) * sizeof *m);
        if (!m)
            err = -ENOMEM;
        else
            (f->cols[i].chunks = m)[f->ngroups] = job->meta[i];
    }
    if (err == 0)
        f->groups[f->ngroups++] = job->g;
    if (err != 0 && f->err == 0) {
        f->err = err;
        if (!sh->failed) {
            sh->failed = f;
            sh->failed_err = err;
        }
    }
    for (size_t i = 0; i < f->ncols; i++)
        chunk_recycle(sh, &job->cols[i]);
    free(job->cols);
    free(job->meta);
    free(job);
}

/* Collects the row groups the worker wrote; wait: first waits until it has written all. */
static void collect(struct st__pq_shared *sh, bool wait)
{
    struct job *done = NULL;
    if (sh->threaded) {
        pthread_mutex_lock(&sh->mu);
        while (wait && sh->in_flight)
            pthread_cond_wait(&sh->done, &sh->mu);
        done = sh->finished;
        sh->finished = sh->finished_tail = NULL;
        pthread_mutex_unlock(&sh->mu);
    }
    while (done) {
        struct job *next = done->next;
        collect_one(sh, done);
        done = next;
    }
}

/* Hands job to the worker (waiting while ST__PQ_IN_FLIGHT are), or does its work here without one. */
static void submit(struct st__pq_shared *sh, struct job *job)
{
    if (!sh->threaded) {
        run_job(sh, job);
        collect_one(sh, job);
        return;
    }
    pthread_mutex_lock(&sh->mu);
    while (sh->in_flight >= ST__PQ_IN_FLIGHT)
        pthread_cond_wait(&sh->done, &sh->mu);
    if (sh->queue)
        sh->queue_tail->next = job;
    else
        sh->queue = job;
    sh->queue_tail = job;
    sh->in_flight++;
    pthread_cond_signal(&sh->work);
    pthread_mutex_unlock(&sh->mu);
}

struct st__pq_file *st__pq_failed(struct st__pq_shared *sh, int *err)
{
    collect(sh, false);
    *err = sh->failed_err;
    return sh->failed;
}

int st__pq_flush(struct st__pq_file *f)
{
    struct st__pq_shared *sh = f->sh;
    collect(sh, false);
    if (f->err)
        return f->err;
    if (f->h.failed)
        return -ENOMEM;
    if (f->h.rows == 0)
        return 0;
    struct job *job = calloc(1, sizeof *job);
    if (job) {
        job->cols = calloc(f->ncols, sizeof *job->cols);
        job->meta = calloc(f->ncols, sizeof *job->meta);
    }
    if (!job || !job->cols || !job->meta) {
        if (job) {
            free(job->cols);
            free(job->meta);
        }
        free(job);
        return -ENOMEM;
    }
    job->f = f;
    job->rows = f->h.rows;
    for (size_t i = 0; i < f->ncols; i++) {
        struct column *c = &f->cols[i];
        job->cols[i] = c->cur;
        job->cols[i].vals = c->lane->vals;
        job->cols[i].last = c->lane->last; /* a run at the end (pid, tid, program, host): stored by the worker */
        job->cols[i].pending = c->lane->pending;
        c->lane->pending = 0;
        c->cur = (struct chunk_data){.defs.hint = c->cur.defs.len, .dict.hint = c->cur.dict.len};
        c->lane->vals = (struct st__pq_buf){.hint = job->cols[i].vals.len};
        c->lane->defs_on = false;
    }
    f->h.stamp++;
    f->handed_rows += f->h.rows;
    f->h.rows = 0;
    f->h.bytes = 0;
    submit(sh, job);
    return f->err;
}


/* --- the footer ------------------------------------------------------------------------------ */

static void schema_element(struct st__growbuf *b, const struct column *c)
{
    int last = 0, inner = 0, inner2 = 0;
    bool bytes = c->kind == ST__PQ_STRING || c->kind == ST__PQ_JSON || c->kind == ST__PQ_DICT;
    tc_i32(b, &last, ST_PQ_SE_TYPE, c->kind == ST__PQ_BOOL ? ST_PQ_BOOLEAN : bytes ? ST_PQ_BYTE_ARRAY : ST_PQ_INT64);
    tc_i32(b, &last, ST_PQ_SE_REPETITION, c->optional ? ST_PQ_OPTIONAL : ST_PQ_REQUIRED);
    tc_string(b, &last, ST_PQ_SE_NAME, c->name);
    switch (c->kind) {
    case ST__PQ_BOOL:
        break;
    case ST__PQ_TIMESTAMP: /* no ConvertedType says nanoseconds: LogicalType only */
        tc_field(b, &last, ST_PQ_SE_LOGICAL, ST_TC_STRUCT);
        tc_field(b, &inner, ST_PQ_LOGICAL_TIMESTAMP, ST_TC_STRUCT);
        tc_bool(b, &inner2, ST_PQ_TS_ADJUSTED_UTC, false); /* UTC all the same: see parquet.c, "ts" */
        tc_field(b, &inner2, ST_PQ_TS_UNIT, ST_TC_STRUCT);
        inner = 0;
        tc_empty(b, &inner, ST_PQ_TIME_UNIT_NANOS);
        tc_stop(b); /* TimeUnit */
        tc_stop(b); /* TimestampType */
        tc_stop(b); /* LogicalType */
        break;
    case ST__PQ_I64:
    case ST__PQ_U64:
        tc_i32(b, &last, ST_PQ_SE_CONVERTED, c->kind == ST__PQ_U64 ? ST_PQ_CONVERTED_UINT_64 : ST_PQ_CONVERTED_INT_64);
        tc_field(b, &last, ST_PQ_SE_LOGICAL, ST_TC_STRUCT);
        tc_field(b, &inner, ST_PQ_LOGICAL_INTEGER, ST_TC_STRUCT);
        tc_field(b, &inner2, ST_PQ_INT_BIT_WIDTH, ST_TC_I8);
        st__growbuf_put(b, "\x40", 1); /* 64, an i8 is one plain byte */
        tc_bool(b, &inner2, ST_PQ_INT_SIGNED, c->kind == ST__PQ_I64);
        tc_stop(b); /* IntType */
        tc_stop(b); /* LogicalType */
        break;
    default: {
        bool json = c->kind == ST__PQ_JSON;
        tc_i32(b, &last, ST_PQ_SE_CONVERTED, json ? ST_PQ_CONVERTED_JSON : ST_PQ_CONVERTED_UTF8);
        tc_field(b, &last, ST_PQ_SE_LOGICAL, ST_TC_STRUCT);
        tc_empty(b, &inner, json ? ST_PQ_LOGICAL_JSON : ST_PQ_LOGICAL_STRING);
        tc_stop(b); /* LogicalType */
    }
    }
    tc_stop(b);
}

static void statistics(struct st__growbuf *b, int *last, const struct column *c, const struct chunk_meta *m)
{
    int inner = 0;
    tc_field(b, last, ST_PQ_CMD_STATISTICS, ST_TC_STRUCT);
    tc_i64(b, &inner, ST_PQ_STAT_NULL_COUNT, (int64_t)m->nulls);
    if (is_int(c->kind) && m->values > m->nulls) {
        uint8_t v[8];
        put_le64(v, m->max);
        tc_binary(b, &inner, ST_PQ_STAT_MAX_VALUE, v, 8);
        put_le64(v, m->min);
        tc_binary(b, &inner, ST_PQ_STAT_MIN_VALUE, v, 8);
    }
    tc_stop(b);
}

static void column_chunk(struct st__growbuf *b, const struct column *c, const struct chunk_meta *m)
{
    static const int encodings[] = {ST_PQ_ENC_PLAIN, ST_PQ_ENC_RLE, ST_PQ_ENC_DELTA_BINARY_PACKED,
                                    ST_PQ_ENC_RLE_DICTIONARY};
    int last = 0, meta = 0;
    tc_i64(b, &last, ST_PQ_CC_FILE_OFFSET, 0);
    tc_field(b, &last, ST_PQ_CC_META_DATA, ST_TC_STRUCT);
    bool bytes = c->kind == ST__PQ_STRING || c->kind == ST__PQ_JSON || c->kind == ST__PQ_DICT;
    tc_i32(b, &meta, ST_PQ_CMD_TYPE, c->kind == ST__PQ_BOOL ? ST_PQ_BOOLEAN : bytes ? ST_PQ_BYTE_ARRAY : ST_PQ_INT64);
    size_t n = 0;
    for (size_t i = 0; i < sizeof encodings / sizeof *encodings; i++)
        n += (m->encodings & ENC(encodings[i])) != 0;
    tc_list_field(b, &meta, ST_PQ_CMD_ENCODINGS, n, ST_TC_I32);
    for (size_t i = 0; i < sizeof encodings / sizeof *encodings; i++)
        if (m->encodings & ENC(encodings[i]))
            tc_zigzag(b, encodings[i]);
    tc_list_field(b, &meta, ST_PQ_CMD_PATH, 1, ST_TC_BINARY);
    gb_varint(b, strlen(c->name));
    st__growbuf_puts(b, c->name);
    tc_i32(b, &meta, ST_PQ_CMD_CODEC, ST_PQ_CODEC_ZSTD);
    tc_i64(b, &meta, ST_PQ_CMD_NUM_VALUES, (int64_t)m->values);
    tc_i64(b, &meta, ST_PQ_CMD_UNCOMPRESSED, (int64_t)m->uncompressed);
    tc_i64(b, &meta, ST_PQ_CMD_COMPRESSED, (int64_t)m->compressed);
    tc_i64(b, &meta, ST_PQ_CMD_DATA_PAGE_OFFSET, (int64_t)m->data_offset);
    if (m->dict_offset)
        tc_i64(b, &meta, ST_PQ_CMD_DICT_PAGE_OFFSET, (int64_t)m->dict_offset);
    statistics(b, &meta, c, m);
    tc_stop(b); /* ColumnMetaData */
    tc_stop(b); /* ColumnChunk */
}

static void footer(struct st__pq_file *f, struct st__growbuf *b)
{
    int last = 0;
    tc_i32(b, &last, ST_PQ_FMD_VERSION, ST_PQ_FILE_VERSION);
    tc_list_field(b, &last, ST_PQ_FMD_SCHEMA, f->ncols + 1, ST_TC_STRUCT);
    int root = 0;
    tc_string(b, &root, ST_PQ_SE_NAME, "schema");
    tc_i32(b, &root, ST_PQ_SE_NUM_CHILDREN, (int32_t)f->ncols);
    tc_stop(b);
    for (size_t i = 0; i < f->ncols; i++)
        schema_element(b, &f->cols[i]);
    tc_i64(b, &last, ST_PQ_FMD_NUM_ROWS, (int64_t)f->handed_rows);
    tc_list_field(b, &last, ST_PQ_FMD_ROW_GROUPS, f->ngroups, ST_TC_STRUCT);
    for (size_t g = 0; g < f->ngroups; g++) {
        int rg = 0;
        tc_list_field(b, &rg, ST_PQ_RG_COLUMNS, f->ncols, ST_TC_STRUCT);
        for (size_t i = 0; i < f->ncols; i++)
            column_chunk(b, &f->cols[i], &f->cols[i].chunks[g]);
        tc_i64(b, &rg, ST_PQ_RG_TOTAL_BYTE_SIZE, (int64_t)f->groups[g].uncompressed);
        tc_i64(b, &rg, ST_PQ_RG_NUM_ROWS, (int64_t)f->groups[g].rows);
        tc_i64(b, &rg, ST_PQ_RG_FILE_OFFSET, (int64_t)f->groups[g].offset);
        tc_i64(b, &rg, ST_PQ_RG_TOTAL_COMPRESSED, (int64_t)f->groups[g].compressed);
        tc_int(b, &rg, ST_PQ_RG_ORDINAL, ST_TC_I16, (int64_t)(g & 0x7fff));
        tc_stop(b);
    }
    if (f->nkv) {
        tc_list_field(b, &last, ST_PQ_FMD_KEY_VALUE, f->nkv, ST_TC_STRUCT);
        for (size_t i = 0; i < f->nkv; i++) {
            int kv = 0;
            tc_string(b, &kv, ST_PQ_KV_KEY, f->kv[i].key);
            tc_string(b, &kv, ST_PQ_KV_VALUE, f->kv[i].value);
            tc_stop(b);
        }
    }
    tc_string(b, &last, ST_PQ_FMD_CREATED_BY, "simpletrace version " SIMPLETRACE_VERSION_STRING);
    tc_list_field(b, &last, ST_PQ_FMD_COLUMN_ORDERS, f->ncols, ST_TC_STRUCT);
    for (size_t i = 0; i < f->ncols; i++) {
        int order = 0;
        tc_empty(b, &order, ST_PQ_ORDER_TYPE_ORDER);
        tc_stop(b);
    }
    tc_stop(b);
}

int st__pq_finish(struct st__pq_file *f)
{
    int ret = st__pq_flush(f);
    if (ret < 0)
        return ret;
    collect(f->sh, true); /* the worker is idle: f's offset and the file are the caller's now */
    if (f->err)
        return f->err;
    struct st__growbuf *b = &f->sh->footer;
    b->len = 0;
    footer(f, b);
    uint8_t tail[8];
    put_le32(tail, (uint32_t)b->len);
    memcpy(tail + 4, ST_PQ_MAGIC, ST_PQ_MAGIC_BYTES);
    st__growbuf_put(b, tail, sizeof tail);
    return b->failed ? -ENOMEM : append(f, b->data, b->len);
}

/* --- set-up ---------------------------------------------------------------------------------- */

/* CPUs this thread may run on (taskset, cgroups' cpusets), else those online. */
static long cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set);
    return sysconf(_SC_NPROCESSORS_ONLN);
}

int st__pq_shared_new(struct st__pq_shared **out, int level, bool threaded)
{
    struct st__pq_shared *sh = calloc(1, sizeof *sh);
    *out = sh;
    if (!sh)
        return -ENOMEM;
    sh->level = level;
    sh->zctx = ZSTD_createCCtx();
    if (!sh->zctx)
        return -ENOMEM;
    if (!threaded || cpus() < 2)
        return 0; /* one CPU: a thread would only take turns with the caller */
    if (pthread_mutex_init(&sh->mu, NULL) != 0)
        return 0;
    if (pthread_cond_init(&sh->work, NULL) != 0) {
        pthread_mutex_destroy(&sh->mu);
        return 0;
    }
    if (pthread_cond_init(&sh->done, NULL) != 0) {
        pthread_cond_destroy(&sh->work);
        pthread_mutex_destroy(&sh->mu);
        return 0;
    }
    sh->threaded = st__thread_start(&sh->thread, NULL, worker, sh, "st-parquet") == 0;
    if (!sh->threaded) { /* the work is done in the caller's thread instead */
        pthread_cond_destroy(&sh->done);
        pthread_cond_destroy(&sh->work);
        pthread_mutex_destroy(&sh->mu);
    }
    return 0;
}

void st__pq_shared_free(struct st__pq_shared *sh)
{
    if (!sh)
        return;
    if (sh->threaded) {
        collect(sh, true);
        pthread_mutex_lock(&sh->mu);
        sh->stop = true;
        pthread_cond_signal(&sh->work);
        pthread_mutex_unlock(&sh->mu);
        pthread_join(sh->thread, NULL);
        pthread_cond_destroy(&sh->done);
        pthread_cond_destroy(&sh->work);
        pthread_mutex_destroy(&sh->mu);
    }
    ZSTD_freeCCtx(sh->zctx);
    st__growbuf_free(&sh->raw);
    st__growbuf_free(&sh->zbuf);
    st__growbuf_free(&sh->out);
    st__growbuf_free(&sh->footer);
    sd_free(&sh->sd);
    free(sh->scratch.p);
    for (size_t i = 0; i < sh->npool; i++)
        free(sh->pool[i].p);
    free(sh);
}

int st__pq_new(struct st__pq_file **out, struct st__pq_shared *sh, int dirfd, const char *path,
               const struct st__pq_column *cols, size_t ncols, const struct st__pq_kv *kv, size_t nkv)
{
    struct st__pq_file *f = calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    f->sh = sh;
    f->offset = ST_PQ_MAGIC_BYTES; /* the first append writes the magic before the pages */
    f->dirfd = dirfd;
    f->path = path;
    f->h.stamp = 1;
    f->cols = calloc(ncols ? ncols : 1, sizeof *f->cols);
    f->h.lanes = calloc(ncols ? ncols : 1, sizeof *f->h.lanes);
    f->kv = calloc(nkv ? nkv : 1, sizeof *f->kv);
    f->ncols = ncols;
    bool bad = !f->cols || !f->h.lanes || !f->kv;
    for (size_t i = 0; !bad && i < ncols; i++) {
        f->cols[i].lane = &f->h.lanes[i];
        f->cols[i].kind = cols[i].kind;
        f->cols[i].optional = cols[i].optional;
        f->cols[i].render = cols[i].kind == ST__PQ_JSON ? cols[i].render : NULL;
        f->cols[i].render_arg = cols[i].render_arg;
        f->cols[i].unhashed = cols[i].unhashed;
        f->h.row_fixed += is_int(cols[i].kind) ? 8 : cols[i].kind == ST__PQ_DICT ? 4 : cols[i].kind == ST__PQ_BOOL;
        bad = !(f->cols[i].name = strdup(cols[i].name));
    }
    for (size_t i = 0; !bad && i < nkv; i++) {
        f->kv[i].key = strdup(kv[i].key);
        f->kv[i].value = strdup(kv[i].value);
        f->nkv = i + 1; /* freed with the others, even half made */
        bad = !f->kv[i].key || !f->kv[i].value;
    }
    if (bad) {
        st__pq_free(f);
        return -ENOMEM;
    }
    *out = f;
    return 0;
}

void st__pq_free(struct st__pq_file *f)
{
    if (!f)
        return;
    collect(f->sh, true); /* the worker may still be writing f's row groups */
    if (f->sh->failed == f)
        f->sh->failed = NULL;
    for (size_t i = 0; f->cols && i < f->ncols; i++) {
        struct column *c = &f->cols[i];
        free(c->name);
        chunk_recycle(f->sh, &c->cur);
        if (c->lane)
            pool_give(f->sh, &c->lane->vals);
        if (c->lane)
            free(c->lane->ids);
        free(c->chunks);
    }
    for (size_t i = 0; i < f->nkv; i++) {
        free((char *)f->kv[i].key);
        free((char *)f->kv[i].value);
    }
    free(f->kv);
    free(f->cols);
    free(f->h.lanes);
    free(f->groups);
    free(f);
}
