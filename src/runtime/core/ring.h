/*
 * Per-thread ring buffers: the producer side lives in buffer.c (the hot
 * path), the consumer side in writer.c. The design and its invariants are
 * described at the top of buffer.c.
 */
#ifndef ST_RUNTIME_CORE_RING_H
#define ST_RUNTIME_CORE_RING_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

struct st_crash_hdr;

/* Room for the largest event record plus the dropped record before it. */
#define ST_SCRATCH_SIZE (ST_MAX_EVENT_RECORD + ST_EVENT_FIXED_SIZE + 8)

/*
 * Bytes of st_ring.gate. The fast path of st__simple_begin() loads them as
 * one word, with busy, and takes its slow path when anything is set. Each
 * byte is written with its own byte store, so a signal handler setting one
 * cannot undo a store of another. (busy is a word of its own: it is stored
 * on every event, and a load of a word just written by a narrower store
 * cannot be forwarded from the store buffer, a stall of ~15 cycles.)
 */
enum {
    ST_GATE_DROPS = 0, /* events were dropped since the last dropped record */
    ST_GATE_SLOW = 1,  /* always take the slow path (clock mode; sentinel buffers) */
};

/* Keeps the producer's and the consumer's fields apart: the adjacent-line
 * prefetcher pulls cache lines in pairs, so 64 bytes is not enough. */
#define ST_RING_ALIGN 128

struct st_ring {
    /* Producer's lines: written only by the owning thread (and by a signal
     * handler on it, which only sets gate bytes and adds to the atomics).
     * Everything the fast path touches is in the first 64 bytes. */
    alignas(ST_RING_ALIGN) uint32_t busy; /* a record is being written: the nesting guard */
    union {
        uint32_t any;              /* non-zero: st__simple_begin() takes its slow path */
        uint8_t flag[4];           /* ST_GATE_* bytes */
    } gate;
    uint64_t len_pid;              /* a header's length and pid words for an empty payload */
    uint64_t head;                 /* bytes published; release-stored at commit */
    uint64_t next_head;            /* head once the record being written commits */
    uint64_t limit;                /* fast path writes below min(tail seen + size, end of this lap) */
    uintptr_t lap_base;            /* (uintptr_t)ring - first position of this lap */
    uint64_t kick_at;              /* commit takes its slow path for a record ending here or later */
    uint64_t committed;            /* event records committed (relaxed stores) */

    uint64_t dropped;              /* drops counted by the thread itself (relaxed stores) */
    uint64_t nested_dropped;       /* drops of signal handlers that hit a record (atomic add) */
    uint64_t pending_drop;         /* drops not yet reported in a dropped record (atomic) */
    uint64_t tail_cache;           /* last tail seen; reloaded only when the fast path stops */
    uint64_t kick_next;            /* next position whose crossing wakes the writer */
    uint8_t *ring;                 /* size bytes */
    uint64_t mask;                 /* size - 1 */
    uint64_t size;                 /* ring bytes, a power of two */
    uint64_t straddle_at;          /* start of a record built in scratch, or UINT64_MAX */
    uint64_t serial;               /* creation number: a buffer at a freed one's address differs */
    uint32_t tid;                  /* gettid() of the owner, the records' pid field */
    uint32_t kick_shift;           /* log2 of the distance between wake-ups */
    uint32_t exited;               /* owner thread ended (release-stored) */
    struct st_crash_hdr *crash_hdr; /* crash=DIR: the ring file's header (this struct lives in it), else NULL */
    size_t crash_len;              /* bytes of that mapping */
    char *crash_path;              /* the ring file's name (malloc'd) */
    bool flight;                   /* flight mode: the producer overwrites its oldest records */
    uint64_t fl_evicted;           /* flight: events overwritten so far = event index of the record at tail */
    uint64_t fl_seq;               /* flight: seqlock (odd while tail and fl_evicted change; flight_evict) */

    /* Consumer's line: written only by the writeout thread, 128 bytes from the producer's. */
    alignas(ST_RING_ALIGN) uint64_t tail; /* bytes consumed; release-stored */
    uint64_t consumed;             /* event records taken out (relaxed stores) */
    uint64_t last_ns;              /* last timestamp written: keeps them monotone */
    uint64_t staged_drop;          /* crash=DIR: drop count staged, not yet written (writer) */
    struct st_ring *next;           /* list of all buffers, under ring_lock */
    /* Flight mode has no writer: these belong to flight.c and the exit hook instead. */
    uint64_t fl_next;              /* event index of the first event no snapshot held or counted (ring_lock);
                                      st__ring_lost: its fl_evicted as of the last snapshot */
    uint64_t fl_scanned;           /* flight-trigger=: records below were examined (CAS: flight thread, producer) */
    uint64_t fl_exit_seq;          /* order of the owner's exit, 0 while it runs (ring_lock) */

    alignas(ST_RING_ALIGN) uint8_t scratch[ST_SCRATCH_SIZE]; /* records that straddle the ring's end */
};

/* Creates the thread-exit key. Called by st__init. */
void st__ring_init(void);

/*
 * Every buffer, newest first; walk and change it with st__ring_lock held
 * (taking it also links the buffers first events created meanwhile).
 */
extern struct st_ring *st__rings;
void st__ring_lock(void);
void st__ring_unlock(void);

/*
 * The pid field of dropped records that count lost drops: events traced
 * after their thread's exit hook ran (a later TLS destructor, a signal
 * handler), or by a thread that had no buffer (its creation failed, or a
 * signal handler interrupted it). No thread has this id (Linux thread ids
 * are below 2^22), and it is not 0, which v4 readers may reject.
 */
#define ST_LOST_TID UINT32_MAX

/*
 * Where lost drops are counted: always on st__rings, never exited, never
 * freed, no ring (size 0, head = tail = 0); its nested_dropped and
 * pending_drop count them, so the writer reports them like a thread's
 * pending drops. Not a thread: st_stats_get() does not count it as one.
 */
extern struct st_ring st__ring_lost;

/* Frees a buffer already unlinked from the list (writer, ring_lock not needed). */
void st__ring_free(struct st_ring *b);

/* Marks the calling thread as one that never traces (the writeout thread). */
void st__ring_thread_notrace(void);

/*
 * Selects the clock mode; -EBUSY once any buffer was ever created (raw
 * values of two kinds would mix), -ENOTSUP for a TSC the machine lacks.
 */
int st__ring_select_clock(bool tsc);

/* Fork child: forget every buffer (they hold the parent's records). */
void st__ring_fork_child(void);

/* Lost drops so far (st__ring_lost's count). */
uint64_t st__ring_orphan_drops(void);

/* All drops of a buffer's thread. */
static inline uint64_t st__ring_dropped(const struct st_ring *b)
{
    return __atomic_load_n(&b->dropped, __ATOMIC_RELAXED) + __atomic_load_n(&b->nested_dropped, __ATOMIC_RELAXED);
}

/* Counters of buffers already freed; under ring_lock. */
struct st_ring_totals {
    uint64_t committed, dropped, consumed;
};
extern struct st_ring_totals st__ring_retired;

/*
 * For the monitor's `info trace`: copies the records not yet written of
 * every thread buffer into dst (cap bytes) without consuming anything and
 * without blocking the tracing threads: per buffer a run of whole records,
 * oldest first, the buffers one after another. [tail, head) is copied,
 * then tail is read again and only what lies at or above it is kept (the
 * producer may have reused the ring below it meanwhile). Raw timestamps.
 * Returns the bytes copied; *left (may be NULL) gets the bytes of records
 * that did not fit in cap (0 when everything did; records written out
 * while we copied are not counted).
 */
size_t st__ring_peek(uint8_t *dst, size_t cap, uint64_t *left);

/* What st__ring_peek_flight kept of one buffer. */
struct st_ring_peeked {
    struct st_ring *b;
    uint64_t serial;               /* b is still that buffer only while its serial matches */
    uint32_t tid;
    size_t off, len;               /* its whole records in dst (len may be 0) */
    bool known;                    /* first is valid: the copy's tail was read with its index */
    uint64_t first;                /* flight: event index of the record at off (fl_evicted at that tail) */
};

/*
 * st__ring_peek for snapshots: also returns (*info, malloc'd, *ninfo
 * entries; NULL on ENOMEM) per buffer copied where its records are and the
 * event index of the first one, read with tail under the buffer's seqlock.
 */
size_t st__ring_peek_flight(uint8_t *dst, size_t cap, struct st_ring_peeked **info, size_t *ninfo);

/*
 * Flight mode: while held (a snapshot between its copy and its accounting
 * in fl_next), exited rings are not freed; releasing frees those beyond
 * the bound. Both take ring_lock.
 */
void st__ring_flight_hold(void);
void st__ring_flight_release(void);

/* Exited rings flight mode keeps at least (more while more threads run: see buffer.c). */
#define ST_FLIGHT_KEEP_EXITED 8

/*
 * flight-trigger=: claims ring positions [.., end) of b as examined (CAS on
 * fl_scanned, shared by the flight thread's scan and the producer's
 * eviction, so each record is claimed once). True when `last`, the
 * position of a trigger record the caller found, lies in what it claimed.
 */
bool st__ring_trig_claim(struct st_ring *b, uint64_t end, uint64_t last);

/* Events a dropped or event record stands for (a dropped record: its count). */
uint64_t st__ring_record_events(const uint8_t *rec, size_t len);

/*
 * Flight mode (flight.c): buffers created from now on have `size` bytes and
 * overwrite their oldest records instead of dropping. -EBUSY once any
 * buffer exists (a ring made for a writer cannot change owners of tail).
 */
int st__ring_set_flight(size_t size);
bool st__ring_flight(void);

#endif /* ST_RUNTIME_CORE_RING_H */
