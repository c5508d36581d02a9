/*
 * Per-thread rings: the record stream of one tracing thread, its producer
 * (the thread, ring.c) and what its consumers may do with it.
 *
 * A ring is configured by two settings chosen when it is created, in the
 * spirit of one ring with a configuration rather than one ring per mode:
 *
 *   memory   anonymous pages, or a file-backed shared mapping that outlives
 *            the process (crash=DIR, ring_file.c)
 *   policy   discard: a full ring drops the new record and counts it, and
 *            one consumer (the drain's writeout thread) moves tail;
 *            overwrite: the producer moves tail itself past its oldest
 *            records (flight=SIZE, ring_overwrite.c); nothing else consumes
 *
 * The ring knows nothing of its consumers: it signals them through the
 * hooks they register (st__ring_set_hooks). The design of the hot path and
 * its invariants are at the top of ring.c.
 *
 * Files: ring.c (hot path, first event, drops, thread exit), ring_life.c
 * (settings, creation, the list, fork, counters), ring_overwrite.c (the
 * overwrite policy), ring_peek.c (read-only copies), ring_file.c
 * (file-backed memory).
 */
#ifndef ST_RUNTIME_CORE_RING_H
#define ST_RUNTIME_CORE_RING_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

struct st_crash_hdr;

/*
 * Default ring size and the range bufsize= accepts. 4 MiB, not 1: on a
 * busy 2-core machine the writer can wait for the CPU for a few ms (a 4 ms
 * scheduler tick), and a thread tracing flat out fills 1 MiB in about
 * 1.5 ms; with 4 MiB the demo's drops fell from ~20-40% to ~0. The ring is
 * mapped, not touched, so a thread pays resident memory only for what it
 * fills (one lap of a busy thread: the whole 4 MiB).
 */
#define ST_RING_SIZE_DEFAULT ((size_t)4 << 20)
#define ST_RING_SIZE_MIN ((size_t)4 << 10)
#define ST_RING_SIZE_MAX ((size_t)1 << 30)

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
    ST_GATE_SLOW = 1,  /* always take the slow path (clock mode; sentinel rings) */
};

/* A ring's policy when it is full. */
enum st_ring_policy {
    ST_RING_DISCARD = 0,   /* drop the new record, count it; the consumer moves tail */
    ST_RING_OVERWRITE = 1, /* the producer evicts its oldest records (ring_overwrite.c) */
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
    uint64_t kick_next;            /* next position whose crossing wakes the consumer */
    uint8_t *ring;                 /* size bytes */
    uint64_t mask;                 /* size - 1 */
    uint64_t size;                 /* ring bytes, a power of two */
    uint64_t straddle_at;          /* start of a record built in scratch, or UINT64_MAX */
    uint64_t serial;               /* creation number: a ring at a freed one's address differs */
    uint32_t tid;                  /* gettid() of the owner, the records' pid field */
    uint32_t kick_shift;           /* log2 of the distance between wake-ups */
    uint32_t exited;               /* owner thread ended (release-stored) */
    uint8_t policy;                /* enum st_ring_policy */
    /* Memory: file-backed (crash=DIR) when file_hdr is set, else two anonymous mappings. */
    struct st_crash_hdr *file_hdr; /* the ring file's header (this struct lives in that mapping) */
    size_t file_len;               /* bytes of that mapping */
    char *file_path;               /* the ring file's name (malloc'd) */
    /* Overwrite policy, producer side (ring_overwrite.c). */
    uint64_t ow_evicted;           /* events evicted so far = event index of the record at tail */
    uint64_t ow_seq;               /* seqlock: odd while tail and ow_evicted change */

    /* Consumer's line: written only by the consumer, 128 bytes from the producer's. */
    alignas(ST_RING_ALIGN) uint64_t tail; /* bytes consumed; release-stored */
    uint64_t consumed;             /* event records taken out (relaxed stores) */
    uint64_t cons_last_ns;         /* the consumer's own: last timestamp it wrote of this ring */
    uint64_t cons_staged_drop;     /* the consumer's own: drop count staged, not yet written */
    struct st_ring *next;          /* list of all rings, under the ring lock */
    /* Overwrite policy, readers' side (no consumer runs: snapshots and the exit hook own these). */
    uint64_t ow_next;              /* event index of the first event no snapshot held or counted (ring lock);
                                      st__ring_lost: its ow_evicted as of the last snapshot */
    uint64_t ow_scanned;           /* trigger scan: records below were examined (CAS: scanner, producer) */
    uint64_t ow_exit_seq;          /* order of the owner's exit, 0 while it runs (ring lock) */

    alignas(ST_RING_ALIGN) uint8_t scratch[ST_SCRATCH_SIZE]; /* records that straddle the ring's end */
};

/* --- hooks: how the ring signals its consumers ---------------------------- */

struct st__ring_hooks {
    /* A ring crossed a wake-up point (an eighth of it) or its thread exited.
     * Called on the tracing path: async-signal-safe, errno kept. */
    void (*wake)(void);
    /* A thread is about to create its first ring (a fork child opens its own file). */
    void (*first_event)(void);
    /* Overwrite policy: a trigger record no scan examined was evicted (sure), or
     * while the trigger is unresolved, records with IDs in [lo, hi] (st__ring_trigger). */
    void (*trigger_evicted)(bool sure, uint32_t lo, uint32_t hi);
};

/* Registers the consumers' hooks (at start-up, before any thread traces); NULL members do nothing. */
void st__ring_set_hooks(const struct st__ring_hooks *hooks);

/* --- the list of rings ------------------------------------------------------ */

/* Creates the thread-exit key. */
void st__ring_init(void);

/*
 * Every ring, newest first; walk and change it with st__ring_lock held
 * (taking it also links the rings first events created meanwhile).
 */
extern struct st_ring *st__rings;
void st__ring_lock(void);
void st__ring_unlock(void);

/*
 * The pid field of dropped records that count lost drops: events traced
 * after their thread's exit hook ran (a later TLS destructor, a signal
 * handler), or by a thread that had no ring (its creation failed, or a
 * signal handler interrupted it). No thread has this id (Linux thread ids
 * are below 2^22), and it is not 0, which v4 readers may reject.
 */
#define ST_LOST_TID UINT32_MAX

/*
 * Where lost drops are counted: always on st__rings, never exited, never
 * freed, no ring (size 0, head = tail = 0); its nested_dropped and
 * pending_drop count them, so a consumer reports them like a thread's
 * pending drops. Not a thread: the counters do not count it as one.
 */
extern struct st_ring st__ring_lost;

/* Counters of rings already freed; under the ring lock. */
struct st_ring_totals {
    uint64_t committed, dropped, consumed;
};
extern struct st_ring_totals st__ring_retired;

/* Unlinks r (ring lock held), adding its counters to st__ring_retired. */
void st__ring_retire(struct st_ring **link);

/* Frees a ring already unlinked from the list; its ring file (if any) is removed. */
void st__ring_free(struct st_ring *r);

/* Marks the calling thread as one that never traces (consumer threads). */
void st__ring_thread_notrace(void);

/* All drops of a ring's thread. */
static inline uint64_t st__ring_dropped(const struct st_ring *r)
{
    return __atomic_load_n(&r->dropped, __ATOMIC_RELAXED) + __atomic_load_n(&r->nested_dropped, __ATOMIC_RELAXED);
}

/* Events a dropped or event record stands for (a dropped record: its count). */
uint64_t st__ring_record_events(const uint8_t *rec, size_t len);

/* Sums of every ring's counters, for st_stats_get(). */
struct st_ring_counters {
    uint64_t committed, dropped, consumed; /* of every ring so far, lost drops in dropped */
    uint64_t buffered;                     /* bytes waiting in rings */
    uint64_t capacity;                     /* bytes of the rings alive */
    uint32_t threads;                      /* rings alive */
};
void st__ring_counters(struct st_ring_counters *c);

/* Fork child: forget every ring (they hold the parent's records). */
void st__ring_fork_child(void);

/* --- settings (for rings created from now on) ------------------------------ */

/* Sets the size of rings created from now on (already validated). */
void st__ring_set_size(size_t size);

/* The size of rings created from now on. */
size_t st__ring_size(void);

/*
 * Settings that must be the same for every ring (clock kind, policy) change
 * only while no ring exists or is being created. st__ring_mode_lock()
 * returns 0 when none does and then keeps first events from creating one
 * (they drop their event) until st__ring_mode_unlock(); -EBUSY otherwise
 * (still call unlock). Under it: st__ring_set_overwrite, st__ts_set_tsc.
 */
int st__ring_mode_lock(void);
void st__ring_mode_unlock(void);

/* With the mode lock: rings created from now on overwrite (policy) and have size bytes. */
void st__ring_set_overwrite(size_t size);

/* True when rings are created with the overwrite policy (flight=). */
bool st__ring_overwriting(void);

/* --- overwrite policy (ring_overwrite.c) ----------------------------------- */

/* Rings of exited threads the overwrite policy keeps at least (more while more threads run). */
#define ST_RING_KEEP_EXITED 8

/*
 * The trigger record the producers watch for when they evict (flight-trigger=):
 * on: one is configured; id: its event ID, UINT64_MAX until resolved;
 * known: while unresolved, IDs below it are known not to be it. Written by
 * its consumer (relaxed/release), read by producers (acquire).
 */
struct st_ring_trigger {
    int on;
    uint64_t id;
    uint64_t known;
};
extern struct st_ring_trigger st__ring_trigger;

/*
 * Claims ring positions [.., end) of r as examined for the trigger (CAS on
 * ow_scanned, shared by a scan and the producer's eviction, so each record
 * is claimed once). True when `last`, the position of a trigger record the
 * caller found, lies in what it claimed.
 */
bool st__ring_trigger_claim(struct st_ring *r, uint64_t end, uint64_t last);

/*
 * While held (a snapshot between its copy and its accounting in ow_next),
 * exited rings are not freed; releasing frees those beyond the bound.
 */
void st__ring_exited_hold(void);
void st__ring_exited_release(void);

/* tail and the event index of the record there (ow_evicted), read as one pair. */
uint64_t st__ring_tail_index(const struct st_ring *r, uint64_t *index);

/* --- read-only copies (ring_peek.c) ----------------------------------------- */

/* What st__ring_peek kept of one ring. */
struct st_ring_peeked {
    struct st_ring *r;
    uint64_t serial;               /* r is still that ring only while its serial matches */
    uint32_t tid;
    size_t off, len;               /* its whole records in dst (len may be 0) */
    bool known;                    /* first is valid: the copy's tail was read with its index */
    uint64_t first;                /* overwrite: event index of the record at off (ow_evicted at that tail) */
};

/*
 * Copies the records not yet consumed of every ring into dst (cap bytes)
 * without consuming anything and without blocking the tracing threads: per
 * ring a run of whole records, oldest first, the rings one after another.
 * [tail, head) is copied, then tail is read again and only what lies at or
 * above it is kept (the producer may have reused the ring below it
 * meanwhile). Raw timestamps. Returns the bytes copied; *left (may be NULL)
 * gets the bytes of records that did not fit (records consumed while we
 * copied are not counted); with info, *info (malloc'd, *ninfo entries; NULL
 * on ENOMEM) says per ring where its records are and the event index of the
 * first (read with tail under the ring's seqlock).
 */
size_t st__ring_peek(uint8_t *dst, size_t cap, uint64_t *left, struct st_ring_peeked **info, size_t *ninfo);

#endif /* ST_RUNTIME_CORE_RING_H */
