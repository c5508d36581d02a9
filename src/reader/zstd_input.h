/*
 * Compressed traces, the reader's input layer: a trace whose first bytes
 * are a zstd frame (or a skippable one) is read through a decompressor,
 * and the record loop sees the v4 stream. With the seek table and time
 * index compress=zstd writes (zstd_seek_format.h), frames the reader's
 * filters would drop whole are skipped undecompressed. Recognised by
 * content, never by name.
 */
#ifndef ST_READER_ZSTD_INPUT_H
#define ST_READER_ZSTD_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "zstd_seek_format.h"

struct st__zin;

/* Reads up to room raw bytes of the compressed file at p: bytes, 0 at EOF (for now, in follow mode), -errno. */
typedef ssize_t (*st__zin_raw_fn)(void *ctx, uint8_t *p, size_t room);

/*
 * Whether the frame e describes may be skipped (every record in it would be
 * filtered out, or is answered for by the summary): 1, 0, -1 not known yet.
 * extreme: it holds the file's first or last timestamp.
 */
typedef int (*st__zin_skip_fn)(void *ctx, const struct st__ztime_entry *e, bool extreme);

/* A frame skipped: e says what it held, dsize its decompressed bytes. */
typedef void (*st__zin_skipped_fn)(void *ctx, const struct st__ztime_entry *e, uint32_t dsize);

/* One frame of a seek table. */
struct st__zframe {
    uint64_t coff;               /* its compressed offset */
    uint32_t csize, dsize;
    struct st__ztime_entry t;
};

/* One entry of a summary: an event ID's records in the whole file. */
struct st__zsum_entry {
    uint64_t id, records;
};

/* A file's seek table, time index and summary, parsed (st__zindex_parse()). */
struct st__zindex {
    struct st__zframe *frames;   /* n, malloc'ed */
    uint32_t n;
    uint64_t data_frames;        /* frames with trace bytes */
    uint64_t dsize;              /* the v4 stream's size */
    uint32_t k_first, k_last;    /* the entries holding the file's first and last timestamp (n: none) */
    bool have_sum;               /* the file has a summary: */
    struct st__zsum_entry *sum;  /* nsum entries, malloc'ed */
    uint32_t nsum;
    uint64_t write_lost;         /* its write_lost_events */
};

/*
 * Parses the seek table and time index that end a file of file_size bytes,
 * whose last len bytes are tail (len may be less than the file when the
 * tables need less). 1 with *ix filled (free with st__zindex_free()), 0
 * when the file has none, -EBADMSG with why[] said when they are damaged
 * (the file still reads, from the start), -ENOMEM, or -ENOSPC when tail
 * holds too little: *need then says how many bytes the tables take.
 */
int st__zindex_parse(const uint8_t *tail, size_t len, uint64_t file_size, struct st__zindex *ix, uint64_t *need,
                     char *why, size_t whylen);
void st__zindex_free(struct st__zindex *ix);

/* Whether the first 4 bytes at p start a zstd frame or a skippable frame. */
bool st__zin_magic(const uint8_t *p, size_t len);

/*
 * A decompressing input over the raw source: memory (data, size), or raw()
 * on ctx after the pre bytes already read; fd >= 0 a file whose tables
 * may be read (pread) and whose frames skipped (lseek). 0 or -ENOMEM.
 */
int st__zin_new(struct st__zin **out, const uint8_t *data, size_t size, st__zin_raw_fn raw, void *ctx, int fd,
                const uint8_t *pre, size_t npre);

/* Frames may be skipped: skip() asks, skipped() is told (ctx: the reader's). */
void st__zin_set_skip(struct st__zin *z, st__zin_skip_fn skip, st__zin_skipped_fn skipped);

/*
 * Up to room decompressed bytes at p: bytes, 0 at the end of the input
 * (for now), or -EBADMSG/-EIO/-ENOMEM with st__zin_message(). may_skip:
 * the caller has consumed everything so far (frames may be skipped now).
 */
ssize_t st__zin_read(struct st__zin *z, uint8_t *p, size_t room, bool may_skip);

/* Whether the input ended inside a frame; the message then says where. */
bool st__zin_cut(const struct st__zin *z);

/* The last error's or cut's message: names the frame and the compressed byte offset. */
const char *st__zin_message(const struct st__zin *z);

/* The input's summary (zstd_seek_format.h), or NULL when it has none. */
const struct st__zindex *st__zin_summary(const struct st__zin *z);

/* Where decoding is, for messages: " (zstd frame K at compressed byte X)". */
void st__zin_where(const struct st__zin *z, char *buf, size_t len);

/* Figures for st_reader_get_compression(). */
struct st__zin_figures {
    bool seekable;
    uint64_t frames, frames_read, frames_skipped, frames_ahead, compressed_bytes, decompressed_bytes;
    const char *index_problem;   /* why a seek table present was not used, or NULL */
};
void st__zin_figures(const struct st__zin *z, struct st__zin_figures *f);

void st__zin_free(struct st__zin *z);

#endif /* ST_READER_ZSTD_INPUT_H */
