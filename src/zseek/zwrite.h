/*
 * Compressed traces written (the layout: zstd_seek_format.h): zstd frames
 * of whole records, then a summary, a time index and zstd's seek table. One writer
 * for every file we compress: the runtime's compress=zstd, the outputs of
 * merge and recover, flight snapshots.
 *
 * Two ways in. The runtime's writeout thread makes its own frames (one per
 * stage of records it flushes: st__zw_compress(), its write, st__zw_note(),
 * and st__zw_trailer() when the file closes). A whole v4 stream given in
 * pieces of any size goes through st__zout, which cuts it into frames of
 * about ST__ZW_FRAME_BYTES at record boundaries. Nothing here locks: each
 * writer has one owner.
 */
#ifndef ST_ZSEEK_ZWRITE_H
#define ST_ZSEEK_ZWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "growbuf.h"
#include "zstd_seek_format.h"

/*
 * The default level of compress=zstd. On trace records level 1 compresses
 * as well as 3 (bench/race: 10.85 bytes per event against 10.89) in half
 * the CPU time, and the writer's CPU time is what decides whether records
 * are lost.
 */
#define ST__ZW_DEFAULT_LEVEL 1

/*
 * The level a writer uses for its next frame when its backlog is fill
 * 256ths of its buffers (the fullest one): the configured level while it
 * keeps up, faster ones as it falls behind, down to about storing, so that
 * compressing is never what makes the buffers drop records. Never slower
 * than level.
 */
int st__zw_adapt_level(int level, unsigned fill);

/* The v4 bytes st__zout puts in a frame (the runtime's stage size): small enough to seek well, big enough to compress well. */
#define ST__ZW_FRAME_BYTES ((size_t)1 << 20)

/* One event ID's records in the file: noted (frames written) and in the frame made last. */
struct st__zw_count {
    uint64_t id;
    uint64_t records, pending;
    int used;
};

struct st__zw {
    void *cctx;               /* ZSTD_CCtx, made at the first frame */
    int level;                /* of the frames this file gets (compress=zstd:LEVEL) */
    int frame_level;          /* of the next frame, when not 0 (the writer's adaptive level) */
    uint8_t *out;             /* the frame st__zw_compress() made */
    size_t cap;               /* out's size */
    struct st__growbuf seek;  /* seek-table entries so far (12 bytes each) */
    struct st__growbuf time;  /* time-index entries so far (40 bytes each) */
    uint32_t n;               /* entries of both */
    struct st__ztime_entry pending; /* what the frame in out holds, noted once it is written */
    uint32_t pending_dsize, pending_sum;
    struct st__zw_count *counts; /* the summary: event records per ID (open addressing) */
    uint32_t ncounts;         /* IDs in counts */
    unsigned count_bits;      /* capacity = 1 << count_bits (0: none yet) */
    uint64_t write_lost, pending_write_lost; /* the summary's write_lost_events: noted, and of the frame in out */
    int counts_failed;        /* out of memory for counts: no summary is written */
};

/*
 * Compresses data[0..len) (whole v4 records; with_header: it begins with the
 * 24-byte file header) into one frame at z->out. Its size, or -ENOMEM,
 * -EINVAL (a level libzstd refuses) or -EIO (libzstd failed).
 */
ssize_t st__zw_compress(struct st__zw *z, const uint8_t *data, size_t len, int with_header);

/* The frame made last was written whole: it joins the index. */
void st__zw_note(struct st__zw *z, size_t csize);

/* Whether the index has room for more frames (zstd's limit on a seek table). */
int st__zw_full(const struct st__zw *z);

/* The sizes of a trailer's frames: the summary (0: none), the time index, and all three with the seek table. */
struct st__zw_trailer_sizes {
    size_t summary, time, total;
};

/*
 * Builds the summary, the time index and the seek table that end the file
 * into *out (emptied first), their sizes in *sizes. 0, or -ENOMEM. Without
 * memory for the summary's counts the trailer goes without a summary.
 */
int st__zw_trailer(struct st__zw *z, struct st__growbuf *out, struct st__zw_trailer_sizes *sizes);

/* The trailer built for this file stays in it, mid-file (the file is appended to): its frames join the index. */
void st__zw_keep_trailer(struct st__zw *z, const struct st__zw_trailer_sizes *sizes);

/* Forgets the index (a new file); the context and buffers stay for reuse. */
void st__zw_reset(struct st__zw *z, int level);

/* Frees everything. */
void st__zw_free(struct st__zw *z);

/*
 * compress= values: "zstd" or "zstd:LEVEL" (*level set), either followed by
 * ":fixed" (*fixed set: the level does not adapt; refused where fixed is
 * NULL), "off"/"none" (*level 0 and returns 0). 1 on, 0 off, -EINVAL.
 */
int st__zw_parse(const char *v, int *level, bool *fixed);

/* --- a whole stream ---------------------------------------------------------------- */

/* Takes the next n bytes of the compressed file: 0, or a negative errno that stops the writer. */
typedef int (*st__zout_write_fn)(void *ctx, const void *p, size_t n);

/* A v4 stream (header first) written compressed through write(). */
struct st__zout {
    struct st__zw zw;
    struct st__growbuf stage;   /* v4 bytes not in a frame yet, from a record boundary */
    bool started;               /* a frame is written: the header is behind */
    st__zout_write_fn write;
    void *ctx;
    int err;                    /* the first error; nothing is written after it */
    uint64_t in_bytes;          /* v4 bytes taken */
    uint64_t out_bytes;         /* compressed bytes written */
};

/* Starts a stream at level (zstd's; 0: ST__ZW_DEFAULT_LEVEL) written through write(ctx, ...). */
void st__zout_init(struct st__zout *o, int level, st__zout_write_fn write, void *ctx);

/* Takes the next n bytes of the v4 stream (pieces may cut records anywhere). 0 or the first error (-errno). */
int st__zout_put(struct st__zout *o, const void *p, size_t n);

/*
 * Writes the frames of what is left, then the time index and seek table:
 * the file is complete. 0 or the first error (-ENOMEM, -EIO from libzstd,
 * -EFBIG past a seek table's frames, the write hook's).
 */
int st__zout_finish(struct st__zout *o);

/* Frees what o holds (after finish, or instead of it when giving up). */
void st__zout_free(struct st__zout *o);

#endif /* ST_ZSEEK_ZWRITE_H */
