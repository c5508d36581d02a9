/*
 * A Parquet file encoder (layout: src/format/parquet_format.h): flat
 * schemas of INT64, BOOLEAN and UTF-8 BYTE_ARRAY columns, filled row by
 * row, written out a row group at a time. The export's Parquet writer
 * (parquet.c) is its one user.
 *
 * Why our own: Debian packages no Parquet library for C (Arrow's C++ one
 * is not in Debian 12), and what we write is small: one data page per
 * column chunk, PLAIN values, dictionary pages for the strings the caller
 * names by a small id (event names, programs), the RLE/bit-packed hybrid
 * for definition levels and dictionary indices, min/max statistics of the
 * integers, and a Thrift compact footer (a few dozen fields) written by a
 * handful of functions: no Thrift library, no generated code.
 *
 * Memory: a file holds its current row group (at most ST__PQ_GROUP_ROWS
 * rows; the caller flushes earlier when st__pq_buffered() says so), and for
 * the footer a few numbers per column chunk written. The compression
 * context and the page scratch buffers are shared by all files
 * (struct st__pq_shared).
 *
 * The file is written under dirfd at path: created at the first row
 * group (or at finish), then appended to, opened for each write only,
 * so that many files need no open descriptors. Errors are negative errno
 * values; the caller names the file in its message.
 */
#ifndef ST_EXPORT_PARQUET_ENC_H
#define ST_EXPORT_PARQUET_ENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "growbuf.h"

/* Rows of a row group: it is written out when it reaches this. */
#define ST__PQ_GROUP_ROWS (128u * 1024u)

enum st__pq_kind {
    ST__PQ_I64,       /* INT64 (logical INT(64, signed)) */
    ST__PQ_U64,       /* INT64 holding the bits of a uint64 (logical INT(64, unsigned)) */
    ST__PQ_TIMESTAMP, /* INT64 ns since the Unix epoch, UTC (logical TIMESTAMP(NANOS), not flagged UTC: parquet.c) */
    ST__PQ_BOOL,      /* BOOLEAN */
    ST__PQ_STRING,    /* BYTE_ARRAY (logical STRING), PLAIN */
    ST__PQ_JSON,      /* BYTE_ARRAY (logical JSON), PLAIN */
    ST__PQ_DICT,      /* BYTE_ARRAY (logical STRING), dictionary-encoded: each value comes with the caller's id */
};

/* One column. */
struct st__pq_column {
    const char *name; /* copied */
    enum st__pq_kind kind;
    bool optional;    /* may hold NULLs */
};

/* One key-value pair of the footer's metadata. */
struct st__pq_kv {
    const char *key, *value; /* copied */
};

/* What all files share: the zstd context and the scratch buffers of a page. */
struct st__pq_shared {
    void *zctx;               /* ZSTD_CCtx */
    int level;                /* zstd level */
    struct st__growbuf raw;   /* a page before compression */
    struct st__growbuf zbuf;  /* ... after */
    struct st__growbuf out;   /* a row group's pages with their headers */
};

/* Sets up *s (zstd at level). 0 or -ENOMEM. */
int st__pq_shared_init(struct st__pq_shared *s, int level);

void st__pq_shared_free(struct st__pq_shared *s);

struct st__pq_file;

/*
 * A new file of ncols columns, written at path under dirfd (both kept by
 * the caller for the file's life) when its first row group is full or at
 * st__pq_finish(). kv: the footer's metadata. 0 or -ENOMEM.
 */
int st__pq_new(struct st__pq_file **out, struct st__pq_shared *sh, int dirfd, const char *path,
               const struct st__pq_column *cols, size_t ncols, const struct st__pq_kv *kv, size_t nkv);

/* Values of the current row, one call per column in column order (the encoder does not check the order). */
void st__pq_int(struct st__pq_file *f, size_t col, uint64_t v);  /* I64 (two's complement), U64, TIMESTAMP */
void st__pq_bool(struct st__pq_file *f, size_t col, bool v);
/* STRING or JSON: n bytes of s, invalid UTF-8 repaired (each byte of an invalid sequence its Latin-1 reading). */
void st__pq_text(struct st__pq_file *f, size_t col, const void *s, size_t n);
/* DICT: the string s (n bytes, repaired likewise) the caller calls id; ids are small (an array is indexed by them). */
void st__pq_dict(struct st__pq_file *f, size_t col, uint32_t id, const void *s, size_t n);
void st__pq_null(struct st__pq_file *f, size_t col);

/* Ends the row; writes the row group out when it holds ST__PQ_GROUP_ROWS rows. 0 or -errno. */
int st__pq_row_end(struct st__pq_file *f);

/* Bytes the current row group holds in memory. */
size_t st__pq_buffered(const struct st__pq_file *f);

/* Writes the current row group out now (nothing when it is empty). 0 or -errno. */
int st__pq_flush(struct st__pq_file *f);

/* Rows so far. */
uint64_t st__pq_rows(const struct st__pq_file *f);

/* Writes the last row group and the footer. 0 or -errno. */
int st__pq_finish(struct st__pq_file *f);

/* Frees f (NULL is fine); the file written so far stays (the caller removes its directory). */
void st__pq_free(struct st__pq_file *f);

#endif /* ST_EXPORT_PARQUET_ENC_H */
