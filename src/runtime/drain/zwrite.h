/*
 * compress=zstd: the trace file written as zstd frames with a seek table
 * and a time index (the layout: zstd_seek_format.h). The writer hands each
 * stage of whole records to st__zw_compress() and writes the frame it
 * makes; once written, st__zw_note() adds the frame to the index that
 * st__zw_trailer() puts at the end of the file. Owned by the writeout
 * thread; nothing here locks.
 */
#ifndef ST_RUNTIME_DRAIN_ZWRITE_H
#define ST_RUNTIME_DRAIN_ZWRITE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "growbuf.h"
#include "zstd_seek_format.h"

/* The default level of compress=zstd: fast enough to keep up with the writer's disk. */
#define ST__ZW_DEFAULT_LEVEL 3

/* One event ID's records in the file: noted (frames written) and in the frame made last. */
struct st__zw_count {
    uint64_t id;
    uint64_t records, pending;
    int used;
};

struct st__zw {
    void *cctx;               /* ZSTD_CCtx, made at the first frame */
    int level;                /* of the frames this file gets */
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

/* compress= values: "zstd" or "zstd:LEVEL" (*level set), "off"/"none" (*level 0 and returns 0). 1 on, 0 off, -EINVAL. */
int st__zw_parse(const char *v, int *level);

#endif /* ST_RUNTIME_DRAIN_ZWRITE_H */
