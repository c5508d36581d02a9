/*
 * The merge: thread record streams into one v4 record stream in time
 * order, with CLOCK_MONOTONIC timestamps. One engine for every producer of
 * a trace from rings: the writeout thread (live rings), flight snapshots
 * and the monitor's `info trace` (copies of the rings), and recover (ring
 * files of a dead process). It depends on the format and the clock only,
 * not on the runtime's rings, so recover can use it outside the runtime.
 *
 * A source is a byte stream of whole v4 event and dropped records
 * (trace_format.h) with raw timestamps, at positions [pos, end) of a ring
 * (position p at ring[p & mask], mask = size - 1) or of a plain buffer
 * (mask = size = UINT64_MAX: position p at ring[p]). Records of one source
 * are in time order; the merge takes, each time, the longest run of
 * records of the oldest source that are older than every other source's
 * next record (ties go to the lower source index), so a source alone, or
 * threads that traced in bursts, are copied a run at a time: one memcpy
 * per run, then the run's timestamps converted in the copy and clamped so
 * that they never go below the source's last one.
 *
 * Bytes that are not a record (a length below the fixed part, beyond the
 * largest record or past end) end the source: the sink's `bad` hook hears
 * of it and the merge goes on with the others.
 */
#ifndef ST_RUNTIME_DRAIN_MERGE_H
#define ST_RUNTIME_DRAIN_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"

/* One input. The caller fills ring, mask, size, pos, end, last_ns and owner. */
struct st__merge_src {
    const uint8_t *ring; /* the bytes (copied from, never written) */
    uint64_t mask, size; /* ring geometry; UINT64_MAX for a plain buffer */
    uint64_t pos, end;   /* [pos, end): records left; pos advances as runs are taken */
    uint64_t last_ns;    /* timestamps written for this source never go below it (updated) */
    void *owner;         /* the caller's, for its hooks */
    uint64_t key;        /* the merge's: raw timestamp of the record at pos */
};

/* Where merged runs go. */
struct st__merge_sink {
    /*
     * Room for the next run, whose first record has need bytes; want is
     * what the run could take at most (more than need only when one source
     * is left). Returns where it goes, with *room >= need bytes there, or
     * NULL to stop the merge (st__merge returns -EIO).
     */
    uint8_t *(*reserve)(void *ctx, uint64_t need, uint64_t want, uint64_t *room);
    /* n bytes of src (src->pos already past them) were written there: events records, drops counted. */
    void (*commit)(void *ctx, struct st__merge_src *src, size_t n, uint64_t events, uint64_t drops);
    /* src held bytes that are not records from its pos on: they are skipped (pos = end). May be NULL. */
    void (*bad)(void *ctx, struct st__merge_src *src);
    void *ctx;
};

/* A merge's working memory: the heap of sources (nsrc entries), kept between merges. */
struct st__merge {
    size_t *heap;
    size_t cap;
};

/* Frees the working memory. */
void st__merge_free(struct st__merge *m);

/*
 * Merges src[0..n) into the sink, converting with cv. 0 when every source
 * is consumed, -EIO when the sink stopped it, -ENOMEM (nothing taken).
 */
int st__merge_run(struct st__merge *m, struct st__merge_src *src, size_t n, const struct st__clock_conv *cv,
                  const struct st__merge_sink *sink);

#endif /* ST_RUNTIME_DRAIN_MERGE_H */
