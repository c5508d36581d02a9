/*
 * crash=DIR: thread rings in file-backed shared mappings, so that what a
 * program had traced survives its death (SIGKILL, SIGSEGV, abort, _exit):
 * the kernel keeps a shared mapping's pages in the page cache after the
 * process is gone, and `simpletrace recover` rebuilds a v4 trace from them.
 *
 * Files in DIR, per traced process:
 *
 *   st-<pid>-<tid>.ring   one per thread buffer:
 *                         [0, 4096)        struct st_crash_hdr (below)
 *                         [4096, ring_off) the thread's struct st_buf (head,
 *                                          tail, pending_drop live here: the
 *                                          header gives their offsets, so the
 *                                          hot path stores nothing extra)
 *                         [ring_off, +ring_size) the ring itself
 *   st-<pid>.names        v4 mapping records (u64 0 | u64 id | u32 len | name),
 *                         appended as IDs become known (never rewritten)
 *
 * Invariants recover relies on (buffer.c, writer.c):
 *   - head (at head_off) is release-stored after the record's bytes:
 *     [tail, head) of the ring are whole, committed records with raw
 *     timestamps (clock_tsc says which kind);
 *   - in crash mode the writer publishes tail only after the write() that
 *     put those records into the trace file returned, so every record not
 *     in the trace file is in [tail, head) (or counted in pending_drop);
 *   - while such a write() is in flight, inflight_seq is odd and inflight_*
 *     say which ring bytes and which file bytes it covers, so recover (given
 *     the trace file) can tell how much of it reached the file;
 *   - anchors (a: process start, b: latest) are written under anchor_seq
 *     (odd while changing): ns = a_ns + (raw - a_raw) * slope(a, b).
 * All fields are host-endian; recover reads files of the same machine.
 */
#ifndef ST_RUNTIME_CRASH_H
#define ST_RUNTIME_CRASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ST_CRASH_MAGIC UINT64_C(0x3148534152435453) /* "STCRASH1" */
#define ST_CRASH_VERSION 1u
#define ST_CRASH_HDR_SIZE 4096u

/* The header at offset 0 of a ring file; offsets are fixed (recover parses them). */
struct st_crash_hdr {
    uint64_t magic;        /*   0 ST_CRASH_MAGIC */
    uint32_t version;      /*   8 ST_CRASH_VERSION */
    uint32_t hdr_size;     /*  12 ST_CRASH_HDR_SIZE */
    uint32_t pid;          /*  16 process id: the records' pid field is the tid */
    uint32_t tid;          /*  20 thread id */
    uint64_t ring_off;     /*  24 file offset of the ring */
    uint64_t ring_size;    /*  32 ring bytes, a power of two */
    uint64_t head_off;     /*  40 file offset of the u64 head */
    uint64_t tail_off;     /*  48 file offset of the u64 tail */
    uint64_t pending_off;  /*  56 file offset of the u64 drops not yet reported */
    uint32_t clock_tsc;    /*  64 1: raw TSC timestamps; 0: CLOCK_MONOTONIC ns */
    uint32_t reserved;     /*  68 */
    uint64_t anchor_seq;   /*  72 odd while the anchors change */
    uint64_t a_raw, a_ns;  /*  80 the process's start-up anchor */
    uint64_t b_raw, b_ns;  /*  96 the latest anchor */
    uint64_t inflight_seq; /* 112 odd while a write() of this ring's records runs */
    uint64_t inflight_end; /* 120 ring position that write covers up to (from tail) */
    uint64_t inflight_drop;/* 128 count of the dropped record the writer staged for this thread */
    uint64_t inflight_off; /* 136 trace file offset where that write starts */
    uint64_t inflight_len; /* 144 its length */
    uint64_t file_dev;     /* 152 the trace file's st_dev (0: none) */
    uint64_t file_ino;     /* 160 and st_ino */
};

struct st_buf;

/* True when crash=DIR is set (buffers created from now on are file-backed). */
bool st__crash_on(void);

/* Validates DIR for crash=: 0, or -errno (message in err). */
int st__crash_check_dir(const char *dir, char *err, size_t errlen);

/* Sets DIR (already checked); "" turns crash mode off for new buffers. */
void st__crash_set_dir(const char *dir);

/*
 * Creates the ring file of the calling thread and maps it: returns the
 * struct st_buf inside the mapping (zeroed, 128-aligned) with b->ring set,
 * or NULL (errno kept): the caller then uses an ordinary buffer.
 */
struct st_buf *st__crash_buf_create(size_t ring_size, uint32_t tid);

/* Unmaps a file-backed buffer; remove: also delete its file (it was drained). */
void st__crash_buf_release(struct st_buf *b, bool remove);

/* Appends mappings for IDs registered since the last call (slow paths, writer). */
void st__crash_sync_names(void);

/* Writer: stores a fresh clock anchor in b's header. */
void st__crash_note_anchor(struct st_buf *b, uint64_t raw, uint64_t ns);

/* Writer: a write() of stage bytes [off, off + len) covering b's ring up to end starts / ended. */
void st__crash_inflight_begin(struct st_buf *b, uint64_t end, uint64_t drop, uint64_t off, uint64_t len,
                              uint64_t dev, uint64_t ino);
void st__crash_inflight_end(struct st_buf *b);

/* Fork child: forget the parent's names file (the child writes its own). */
void st__crash_fork_child(void);

/* Exit: removes the names file when no ring file of ours is left (count of kept rings). */
void st__crash_exit(unsigned rings_kept);

#endif /* ST_RUNTIME_CRASH_H */
