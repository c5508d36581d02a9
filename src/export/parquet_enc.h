/*
 * A Parquet file encoder (layout: src/format/parquet_format.h): flat
 * schemas of INT64, BOOLEAN and UTF-8 BYTE_ARRAY columns, filled row by
 * row, written out a row group at a time. The export's Parquet writer
 * (parquet.c) is its one user.
 *
 * Why our own: Debian packages no Parquet library for C (Arrow's C++ one
 * is not in Debian 12), and what we write is small: integers
 * DELTA_BINARY_PACKED, strings dictionary-encoded (the caller's small ids
 * for event names and programs; a hash of the bytes for other strings,
 * falling back to PLAIN when the dictionary grows large), the RLE/bit-packed
 * hybrid for definition levels and dictionary indices, min/max statistics
 * of the integers, and a Thrift compact footer written by a handful of
 * functions: no Thrift library, no generated code.
 *
 * Work is split in two: the caller's thread appends values to the row
 * group being filled (a store into an array, a hash look-up for a string);
 * a full row group's buffers are handed whole to a worker thread, which
 * encodes the pages, compresses them (zstd), and appends them to the file,
 * so that on two cores the compression overlaps the reading. At most
 * ST__PQ_IN_FLIGHT row groups wait for the worker (the caller waits past
 * that), so memory stays bounded. Without a second CPU, or when the thread
 * cannot start, the same work runs in the caller's thread at each flush.
 *
 * Memory: a file holds its current row group (at most ST__PQ_GROUP_ROWS
 * rows; the caller flushes earlier when st__pq_buffered() says so), and for
 * the footer a few numbers per column chunk written. The compression
 * context, page buffers and recycled value buffers are shared by all files
 * (struct st__pq_shared).
 *
 * The file is written under dirfd at path: created at the first row
 * group (or at finish), then appended to, opened for each write only,
 * so that many files need no open descriptors. Errors are negative errno
 * values; the caller names the file in its message (a write that failed in
 * the worker is reported by the file's next flush or finish, and by
 * st__pq_failed()).
 */
#ifndef ST_EXPORT_PARQUET_ENC_H
#define ST_EXPORT_PARQUET_ENC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Rows of a row group: it is written out when it reaches this. */
#define ST__PQ_GROUP_ROWS (128u * 1024u)

/* Row groups handed to the worker and not yet written, at most. */
#define ST__PQ_IN_FLIGHT 2u

enum st__pq_kind {
    ST__PQ_I64,       /* INT64 (logical INT(64, signed)) */
    ST__PQ_U64,       /* INT64 holding the bits of a uint64 (logical INT(64, unsigned)) */
    ST__PQ_TIMESTAMP, /* INT64 ns since the Unix epoch, UTC (logical TIMESTAMP(NANOS), not flagged UTC: parquet.c) */
    ST__PQ_BOOL,      /* BOOLEAN */
    ST__PQ_STRING,    /* BYTE_ARRAY (logical STRING): dictionary of the bytes, PLAIN past its limit */
    ST__PQ_JSON,      /* BYTE_ARRAY (logical JSON), likewise */
    ST__PQ_DICT,      /* BYTE_ARRAY (logical STRING), dictionary-encoded: each value comes with the caller's id */
};

struct st__growbuf;

/*
 * A JSON column's renderer: appends the value whose caller's bytes are raw
 * (n bytes, as written with st__pq_text_room()) to out. It runs in the
 * worker thread, later: raw may point only to what the caller never changes
 * nor frees before st__pq_free(). 0 or -ENOMEM.
 */
typedef int (*st__pq_render_fn)(void *arg, const uint8_t *raw, size_t n, struct st__growbuf *out);

/* One column. */
struct st__pq_column {
    const char *name; /* copied */
    enum st__pq_kind kind;
    bool optional;    /* may hold NULLs */
    st__pq_render_fn render; /* JSON: NULL, or the renderer of the caller's bytes (render_arg its argument) */
    void *render_arg;
    size_t unhashed;  /* render: leading bytes of each value that may differ from run to run (an address) while
                         meaning the same: left out of its hash, so that the file's bytes do not depend on them */
};

/* One key-value pair of the footer's metadata. */
struct st__pq_kv {
    const char *key, *value; /* copied */
};

/* What all files share: the worker and its queue, the zstd context, the page and value buffers. */
struct st__pq_shared;

/*
 * Sets up *out: zstd at level; threaded: compress and write in a worker
 * thread (started here; false, or no second CPU: at each flush, in the
 * caller). 0 or -ENOMEM.
 */
int st__pq_shared_new(struct st__pq_shared **out, int level, bool threaded);

/* Waits for the worker, stops it, frees sh (NULL is fine). Free the files first. */
void st__pq_shared_free(struct st__pq_shared *sh);

struct st__pq_file;

/*
 * A new file of ncols columns, written at path under dirfd (both kept by
 * the caller for the file's life) when its first row group is full or at
 * st__pq_finish(). kv: the footer's metadata. 0 or -ENOMEM.
 */
int st__pq_new(struct st__pq_file **out, struct st__pq_shared *sh, int dirfd, const char *path,
               const struct st__pq_column *cols, size_t ncols, const struct st__pq_kv *kv, size_t nkv);

/* --- appending values: the common cases inline (a store, or a count) ------------------------- */

/* A buffer of a row group's values (the encoder's). */
struct st__pq_buf {
    uint8_t *p;
    size_t len, cap;
    size_t hint; /* the bytes the same buffer of the previous row group held: the size to start from */
};

/* A DICT column's caller id: its index in the row group's dictionary, valid when stamp is the file's. */
struct st__pq_dict_slot {
    uint32_t index, stamp;
};

/* What appending a value to a column touches (the encoder's; here for the inline appends). */
struct st__pq_lane {
    struct st__pq_buf vals; /* the row group's values: integers a host uint64 each, DICT a uint32 index each, ... */
    uint64_t last;          /* integers: the last value stored (DICT: its index) ... */
    uint32_t last_id;       /* DICT: ... the caller's id of it ... */
    uint32_t pending;       /* ... and how many more of it to store: a repeated value costs a count */
    bool defs_on;           /* the column keeps definition levels (a NULL came in this row group) */
    struct st__pq_dict_slot *ids; /* DICT: by caller id */
    uint32_t nids;          /* ... allocated */
};

/* The start of every struct st__pq_file. */
struct st__pq_file_head {
    struct st__pq_lane *lanes; /* by column */
    size_t bytes;              /* the row group's bytes in memory: strings, levels ... */
    size_t row_fixed;          /* ... and per row, its fixed-size values' (not counted value by value: each
                                  count would wait for the one before it) */
    uint64_t rows;             /* ... and its rows */
    uint32_t stamp;            /* row groups handed over + 1: DICT ids' validity */
    bool failed;               /* an allocation failed */
};

void st__pq_int_slow(struct st__pq_file *f, size_t col, uint64_t v);
void st__pq_dict_slow(struct st__pq_file *f, size_t col, uint32_t id, const char *s);

/* Values of the current row, one call per column (in any order). */

/* I64 (two's complement), U64, TIMESTAMP. */
static inline void st__pq_int(struct st__pq_file *f, size_t col, uint64_t v)
{
    struct st__pq_file_head *h = (struct st__pq_file_head *)(void *)f;
    struct st__pq_lane *l = &h->lanes[col];
    if (!l->defs_on) {
        if (v == l->last && l->vals.len) { /* pid, tid: the same row after row */
            l->pending++;
            return;
        }
        if (!l->pending && l->vals.cap - l->vals.len >= 8) {
            memcpy(l->vals.p + l->vals.len, &v, 8);
            l->vals.len += 8;
            l->last = v;
            return;
        }
    }
    st__pq_int_slow(f, col, v);
}

void st__pq_bool(struct st__pq_file *f, size_t col, bool v);
/* STRING or JSON: n bytes of s, invalid UTF-8 repaired (each byte of an invalid sequence its Latin-1 reading). */
void st__pq_text_slow(struct st__pq_file *f, size_t col, const void *s, size_t n);
static inline void st__pq_text(struct st__pq_file *f, size_t col, const void *s, size_t n)
{
    struct st__pq_file_head *h = (struct st__pq_file_head *)(void *)f;
    struct st__pq_buf *b = &h->lanes[col].vals;
    if (!h->lanes[col].defs_on && n <= 64 && b->cap - b->len >= 4 + 64) { /* a short string: ASCII is valid as is */
        uint8_t *p = b->p + b->len;
        const uint8_t *q = s;
        uint64_t any = 0, w;
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, q + i, 8);
            any |= w;
        }
        for (; i < n; i++)
            any |= q[i];
        if (!(any & 0x8080808080808080u)) {
            p[0] = (uint8_t)n; /* PLAIN: the length (n < 256), then the bytes */
            p[1] = p[2] = p[3] = 0;
            memcpy(p + 4, s, n);
            b->len += 4 + n;
            h->bytes += 4 + n;
            return;
        }
    }
    st__pq_text_slow(f, col, s, n);
}
/*
 * JSON written in place: room for a value of at most max bytes (NULL when
 * out of memory), then st__pq_text_done() with the bytes written there:
 * valid UTF-8, or the caller's bytes its renderer turns into the value.
 */
char *st__pq_text_room_slow(struct st__pq_file *f, size_t col, size_t max);
static inline char *st__pq_text_room(struct st__pq_file *f, size_t col, size_t max)
{
    struct st__pq_lane *l = &((struct st__pq_file_head *)(void *)f)->lanes[col];
    if (!l->defs_on && l->vals.cap - l->vals.len >= 4 + max)
        return (char *)l->vals.p + l->vals.len + 4; /* after the value's length */
    return st__pq_text_room_slow(f, col, max);
}
static inline void st__pq_text_done(struct st__pq_file *f, size_t col, size_t n)
{
    struct st__pq_file_head *h = (struct st__pq_file_head *)(void *)f;
    struct st__pq_buf *b = &h->lanes[col].vals;
    uint8_t *p = b->p + b->len; /* PLAIN: the length, little-endian (one store: b is not read again between) */
    p[0] = (uint8_t)n;
    p[1] = (uint8_t)(n >> 8);
    p[2] = (uint8_t)(n >> 16);
    p[3] = (uint8_t)(n >> 24);
    b->len += 4 + n;
    h->bytes += 4 + n;
}
/*
 * DICT: the NUL-terminated string s (repaired likewise) the caller calls id;
 * ids are small (an array is indexed by them), and one id always names the
 * same string. s is read only at the id's first row of a row group.
 */
static inline void st__pq_dict(struct st__pq_file *f, size_t col, uint32_t id, const char *s)
{
    struct st__pq_file_head *h = (struct st__pq_file_head *)(void *)f;
    struct st__pq_lane *l = &h->lanes[col];
    if (!l->defs_on && id == l->last_id && l->vals.len) { /* the same as the row before: a program, a host */
        l->pending++;
        return;
    }
    if (!l->defs_on && l->pending < 8 && id < l->nids && l->ids[id].stamp == h->stamp &&
        l->vals.cap - l->vals.len >= 32) { /* a name this row group has had: its index (after a short run) */
        uint32_t k = l->ids[id].index, before = (uint32_t)l->last, n = l->pending;
        uint8_t *p = l->vals.p + l->vals.len;
        for (uint32_t i = 0; i < n; i++)
            memcpy(p + 4 * i, &before, 4);
        memcpy(p + 4 * n, &k, 4);
        l->vals.len += 4 * (n + 1);
        l->pending = 0;
        l->last = k;
        l->last_id = id;
        return;
    }
    st__pq_dict_slow(f, col, id, s);
}

void st__pq_null(struct st__pq_file *f, size_t col);

/* Hands the current row group to the worker now (nothing when it is empty). 0 or -errno. */
int st__pq_flush(struct st__pq_file *f);

/* Ends the row; hands the row group to the worker when it holds ST__PQ_GROUP_ROWS rows. 0 or -errno. */
static inline int st__pq_row_end(struct st__pq_file *f)
{
    struct st__pq_file_head *h = (struct st__pq_file_head *)(void *)f;
    if (h->failed)
        return -ENOMEM;
    return ++h->rows >= ST__PQ_GROUP_ROWS ? st__pq_flush(f) : 0;
}

/* Bytes the current row group holds in memory. */
static inline size_t st__pq_buffered(const struct st__pq_file *f)
{
    const struct st__pq_file_head *h = (const struct st__pq_file_head *)(const void *)f;
    return h->bytes + h->rows * h->row_fixed;
}

/* Rows so far. */
uint64_t st__pq_rows(const struct st__pq_file *f);

/* Writes the last row group and the footer, once the worker wrote the others. 0 or -errno. */
int st__pq_finish(struct st__pq_file *f);

/* The path f was made with. */
const char *st__pq_path(const struct st__pq_file *f);

/* A file whose row group the worker could not write (*err: why), or NULL. */
struct st__pq_file *st__pq_failed(struct st__pq_shared *sh, int *err);

/* Frees f (NULL is fine) once the worker is done with it; the file written so far stays (the caller removes its directory). */
void st__pq_free(struct st__pq_file *f);

#endif /* ST_EXPORT_PARQUET_ENC_H */
