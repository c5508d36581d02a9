/*
 * The crash ring file (crash=DIR): what a traced process leaves in memory
 * that outlives it, and what `simpletrace recover` reads after it died.
 * One definition for the runtime that writes it and recover that reads it.
 *
 * Files in DIR, per traced process:
 *
 *   st-<pid>-<tid>.ring   one per thread ring:
 *                         [0, 4096)          struct st__crash_hdr (below)
 *                         [4096, ring_off)   the runtime's state of the ring:
 *                                            head, tail and the drops not yet
 *                                            reported live there, at the offsets
 *                                            the header gives (the hot path
 *                                            stores nothing extra)
 *                         [ring_off, +ring_size) the ring: v4 event and dropped
 *                                            records (trace_format.h) with raw
 *                                            timestamps, a byte stream that
 *                                            wraps at ring_size
 *   st-<pid>.names        v4 mapping records (u64 0 | u64 id | u32 len | name),
 *                         appended, never rewritten (meta_format.h gives the
 *                         reserved IDs):
 *                           the description of the process (ID
 *                           ST_META_INFO_ID), written once when the file is
 *                           made (its clock anchors are then's; a failed
 *                           write leaves the file empty, without one);
 *                           then, as IDs become known, each ID's mapping
 *                           (name at most ST_MAX_NAME bytes) followed by its
 *                           declaration (ID ST_META_DECL_ID(id); at most
 *                           ST_META_MAX_LEN bytes), up to 64 IDs' records
 *                           in one write()
 *                         recover copies them into its trace in the order
 *                         meta_format.h asks (description after the header,
 *                         a declaration after its mapping), so the trace
 *                         is read without trace-events; with no valid
 *                         description it writes one of the pid and clock
 *                         the ring headers give
 *
 * All fields are in the writer's byte order; recover reads files of the
 * machine that wrote them. head and tail are free-running byte counters
 * (position p of the stream is at ring_off + (p mod ring_size)).
 *
 * Invariants the runtime keeps and recover relies on:
 *   - magic is stored last, with release order, when the file is created:
 *     a file shorter than the header, or whose magic is still 0, was being
 *     created when the process died and holds no record;
 *   - head is release-stored after the record's bytes, so [tail, head) of
 *     the ring are whole, committed records;
 *   - the runtime publishes tail only after the write() that put those
 *     records into the trace file returned, so every record not in the
 *     trace file is in [tail, head), or counted in the pending drops;
 *   - while such a write() is in flight, inflight_seq is odd and inflight_*
 *     say which ring bytes (up to inflight_end) and which trace-file bytes
 *     ([inflight_off, +inflight_len) of the file file_dev/file_ino) it
 *     covers, and inflight_drop the dropped count it carries for this ring;
 *     recover, given the trace file, counts how many of them arrived;
 *   - the anchors are written under anchor_seq (odd while changing):
 *     a = the process's start, b = the latest; with clock_tsc, raw
 *     timestamps convert to CLOCK_MONOTONIC ns along the line through them.
 *
 * Validity rules recover applies (each failure is reported by field and
 * byte offset, and the file left out): version and hdr_size as below;
 * clock_tsc 0 or 1; ring_size a power of two >= 4096; the ring inside the
 * file; the head, tail and pending words between the header and the ring;
 * 0 <= head - tail <= ring_size. An odd anchor_seq (the process died while
 * storing the latest anchor) means only anchor a is used; an odd
 * inflight_seq whose inflight_end lies outside [tail, head] is a note that
 * cannot be right and is ignored. Within the ring a record is valid when
 * its type is 1, its length covers at least the fixed part and at most
 * ST_MAX_EVENT_RECORD (trace_format.h), it ends at or before head, and
 * its ID is not one meta_format.h reserves (the runtime's are 32-bit;
 * such a record would be named by a description or declaration);
 * recovery of a ring stops at the first one that is not. The names file
 * is read up to the first bytes that are not a whole mapping record.
 */
#ifndef ST_FORMAT_CRASH_FORMAT_H
#define ST_FORMAT_CRASH_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define ST_CRASH_MAGIC UINT64_C(0x3148534152435453) /* "STCRASH1" */
#define ST_CRASH_VERSION 1u
#define ST_CRASH_HDR_SIZE 4096u
#define ST_CRASH_RING_MIN 4096u

/* The header at offset 0 of a ring file; the byte offsets are fixed. */
struct st__crash_hdr {
    uint64_t magic;        /*   0 ST_CRASH_MAGIC, stored last */
    uint32_t version;      /*   8 ST_CRASH_VERSION */
    uint32_t hdr_size;     /*  12 ST_CRASH_HDR_SIZE */
    uint32_t pid;          /*  16 process id (the records' pid field holds the thread id) */
    uint32_t tid;          /*  20 thread id */
    uint64_t ring_off;     /*  24 file offset of the ring */
    uint64_t ring_size;    /*  32 ring bytes, a power of two */
    uint64_t head_off;     /*  40 file offset of the u64 head */
    uint64_t tail_off;     /*  48 file offset of the u64 tail */
    uint64_t pending_off;  /*  56 file offset of the u64 count of drops not yet reported */
    uint32_t clock_tsc;    /*  64 1: raw timestamps are TSC ticks; 0: CLOCK_MONOTONIC ns */
    uint32_t reserved;     /*  68 */
    uint64_t anchor_seq;   /*  72 odd while the anchors change */
    uint64_t a_raw, a_ns;  /*  80 the process's start-up anchor */
    uint64_t b_raw, b_ns;  /*  96 the latest anchor */
    uint64_t inflight_seq; /* 112 odd while a write() of this ring's records runs */
    uint64_t inflight_end; /* 120 ring position that write covers up to (from tail) */
    uint64_t inflight_drop;/* 128 dropped count the writer staged for this ring in it */
    uint64_t inflight_off; /* 136 trace-file offset where that write starts */
    uint64_t inflight_len; /* 144 its length */
    uint64_t file_dev;     /* 152 the trace file's st_dev (0: none) */
    uint64_t file_ino;     /* 160 and st_ino */
};

_Static_assert(offsetof(struct st__crash_hdr, clock_tsc) == 64, "crash header layout");
_Static_assert(offsetof(struct st__crash_hdr, a_raw) == 80, "crash header layout");
_Static_assert(offsetof(struct st__crash_hdr, inflight_seq) == 112, "crash header layout");
_Static_assert(offsetof(struct st__crash_hdr, file_ino) == 160, "crash header layout");
_Static_assert(sizeof(struct st__crash_hdr) <= ST_CRASH_HDR_SIZE, "crash header fits its page");

/* The file name prefix and suffixes, for writer and reader alike. */
#define ST_CRASH_RING_FMT "%s/st-%ld-%lu.ring"  /* DIR, pid, tid */
#define ST_CRASH_NAMES_FMT "%s/st-%ld.names"    /* DIR, pid */

#endif /* ST_FORMAT_CRASH_FORMAT_H */
