/*
 * What the ring's own files share (ring.c, ring_life.c, ring_consumer.c,
 * ring_overwrite.c, ring_peek.c, ring_file.c): struct st__ring, the list of
 * rings, and the helpers of its slow paths. Nothing outside core/ includes
 * this (ring.h says who sees what): the consumers use ring_consumer.h.
 */
#ifndef ST_RUNTIME_CORE_RING_INTERNAL_H
#define ST_RUNTIME_CORE_RING_INTERNAL_H

/* core/ is built with ST__CORE_OWN; anywhere else this header is an error, not a warning. */
#ifndef ST__CORE_OWN
#error "ring_internal.h is core/'s own: outside core/ use ring.h or ring_consumer.h"
#endif

#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>

#include "ring.h"
#include "ring_consumer.h"
#include "trace_format.h"

struct st__crash_hdr;

/* Room for the largest event record plus the dropped record before it. */
#define ST_SCRATCH_SIZE ST__RING_RECORD_MAX

/*
 * Bytes of st__ring.gate. The fast path of st__simple_begin() loads them as
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
enum st__ring_policy {
    ST_RING_DISCARD = 0,   /* drop the new record, count it; the consumer moves tail */
    ST_RING_OVERWRITE = 1, /* the producer evicts its oldest records (ring_overwrite.c) */
};

/* Keeps the producer's and the consumer's fields apart: the adjacent-line
 * prefetcher pulls cache lines in pairs, so 64 bytes is not enough. */
#define ST_RING_ALIGN 128

struct st__ring {
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
    uint8_t policy;                /* enum st__ring_policy */
    /* Memory: file-backed (crash=DIR) when file_hdr is set, else two anonymous mappings. */
    struct st__crash_hdr *file_hdr; /* the ring file's header (this struct lives in that mapping) */
    size_t file_len;               /* bytes of that mapping */
    char *file_path;               /* the ring file's name (in its mapping, after this struct) */
    /* Overwrite policy, producer side (ring_overwrite.c). */
    uint64_t ow_evicted;           /* events evicted so far = event index of the record at tail */
    uint64_t ow_seq;               /* seqlock: odd while tail and ow_evicted change */

    /* Consumer's line: written only on the consumer's thread, through ring_consumer.c (the
     * consumer itself holds the ring as an opaque handle), 128 bytes from the producer's. */
    alignas(ST_RING_ALIGN) uint64_t tail; /* bytes consumed; release-stored */
    uint64_t consumed;             /* event records taken out (relaxed stores) */
    uint64_t cons_last_ns;         /* st__ring_cons.last_ns between passes: the consumer's word, never read here */
    uint64_t cons_staged_drop;     /* crash=DIR: drops staged for the next write, noted in flight with it */
    struct st__ring *next;          /* list of all rings, under the ring lock */
    /* Overwrite policy, readers' side (no consumer runs: snapshots and the exit hook own these). */
    uint64_t ow_next;              /* event index of the first event no snapshot held or counted (ring lock);
                                      st__ring_lost: its ow_evicted as of the last snapshot */
    uint64_t ow_scanned;           /* trigger scan: records below were examined (CAS: scanner, producer) */
    uint64_t ow_exit_seq;          /* order of the owner's exit, 0 while it runs (ring lock) */

    alignas(ST_RING_ALIGN) uint8_t scratch[ST_SCRATCH_SIZE]; /* records that straddle the ring's end */
};


/* --- the list of rings (walk and change it with st__ring_lock held) --- */

/* Every ring, newest first (taking the ring lock also links the rings first events created meanwhile). */
extern struct st__ring *st__rings;

/*
 * Where lost drops are counted: always on st__rings, never exited, never
 * freed, no ring (size 0, head = tail = 0); its nested_dropped and
 * pending_drop count them, so a consumer reports them like a thread's
 * pending drops (as ST_LOST_TID). Not a thread: the counters do not count
 * it as one.
 */
extern struct st__ring st__ring_lost;

/* Counters of rings already freed; under the ring lock. */
struct st__ring_totals {
    uint64_t committed, dropped, consumed;
};
extern struct st__ring_totals st__ring_retired;

/* Unlinks r (ring lock held), adding its counters to st__ring_retired. */
void st__ring_retire(struct st__ring **link);

/* Frees a ring already unlinked from the list; its ring file (if any) is removed. */
void st__ring_free(struct st__ring *r);

/* All drops of a ring's thread. */
static inline uint64_t st__ring_dropped(const struct st__ring *r)
{
    return __atomic_load_n(&r->dropped, __ATOMIC_RELAXED) + __atomic_load_n(&r->nested_dropped, __ATOMIC_RELAXED);
}

/* Events a dropped or event record stands for (a dropped record: its count). */
uint64_t st__ring_record_events(const uint8_t *rec, size_t len);

/* Slow paths stay out of line so the fast path needs no saved registers. */
#define ST__COLD __attribute__((noinline, cold))

/* The hooks consumers registered (members may be NULL). */
extern struct st__ring_hooks st__ring_hook;

/*
 * log2 of the widest distance between wake-ups the consumer asked for
 * (st__ring_set_wake_every), 0 for none: a ring then wakes it at the
 * smaller of that and an eighth of itself. Relaxed: read in commit's slow
 * path only.
 */
extern uint32_t st__ring_wake_log2;

/* log2 of the distance between r's wake-ups, as of now. */
static inline uint32_t st__ring_kick_shift(const struct st__ring *r)
{
    uint32_t w = __atomic_load_n(&st__ring_wake_log2, __ATOMIC_RELAXED);

    return w && w < r->kick_shift ? w : r->kick_shift;
}

/* Calls the wake hook, if any (async-signal-safe). */
static inline void st__ring_wake(void)
{
    void (*wake)(void) = __atomic_load_n(&st__ring_hook.wake, __ATOMIC_ACQUIRE);

    if (wake)
        wake();
}

/*
 * For a first event: marks that a ring is being created and returns true
 * unless a mode setter holds the mode lock (then the event is dropped).
 */
bool st__ring_may_create(void);

/* Makes the calling thread's ring (memory and policy as now configured); NULL when it cannot. */
struct st__ring *st__ring_create(void);

/* Publishes a new ring without a lock (a first event may run in a signal handler). */
void st__ring_publish(struct st__ring *r);

/* Unmaps r; its ring file (crash=DIR) is removed only when remove is set. */
void st__ring_release(struct st__ring *r, bool remove);

/* Fork child: the calling thread forgets its ring (ring.c owns the thread-local state). */
void st__ring_forget_thread(void);

/* Recomputes limit and lap_base for the record that starts at next_head. */
static inline void st__ring_set_limit(struct st__ring *r)
{
    uint64_t lap = r->next_head & ~r->mask;
    uint64_t room_end = r->tail_cache + r->size, lap_end = lap + r->size;

    r->lap_base = (uintptr_t)r->ring - (uintptr_t)lap;
    r->limit = room_end < lap_end ? room_end : lap_end;
}

/* --- overwrite policy (ring_overwrite.c) --- */

/* Rings of exited threads the overwrite policy keeps at least (more while more threads run). */
#define ST_RING_KEEP_EXITED 8

/*
 * Claims ring positions [.., end) of r as examined for the trigger (CAS on
 * ow_scanned, shared by a scan and the producer's eviction, so each record
 * is claimed once). True when `last`, the position of a trigger record the
 * caller found, lies in what it claimed.
 */
bool st__ring_trigger_claim(struct st__ring *r, uint64_t end, uint64_t last);

/* tail and the event index of the record there (ow_evicted), read as one pair. */
uint64_t st__ring_tail_index(const struct st__ring *r, uint64_t *index);

/* The owner's slow path, ring full: evicts oldest records until need bytes fit; false if they never can. */
bool st__ring_evict(struct st__ring *r, uint64_t head, uint64_t need);

/* The owner thread of an overwrite ring exited: keep its ring, trim exited ones beyond the bound. */
void st__ring_exit_overwrite(struct st__ring *r);

/* Fork child: the overwrite policy's process-wide state starts afresh. */
void st__ring_overwrite_fork_child(void);

#endif /* ST_RUNTIME_CORE_RING_INTERNAL_H */
