/*
 * The rings' consumer side: everything a layer above the core may do with
 * the records in the rings, and the only ring header the drain includes.
 * As lttng-ust's frontend.h keeps the reader side inside the ring module,
 * the consumer's steps that touch a ring (moving tail, exchanging pending
 * drops, walking and unlinking the list, the crash ring files' in-flight
 * notes) are done here, in core/, and a consumer holds rings only as
 * opaque handles.
 *
 * Three kinds of consumer use it:
 *
 *   the consumer   of discard rings, one thread (the drain's writeout
 *                  thread), in passes: st__ring_cons_snapshot() lists the
 *                  rings and what they hold, the caller copies records out
 *                  of [pos, end) and says what it took
 *                  (st__ring_cons_consume), takes pending drops, and ends
 *                  the pass with st__ring_cons_reap();
 *   readers        copy without consuming (st__ring_peek): flight
 *                  snapshots, with their exact dropped counts
 *                  (st__ring_ow_unseen/_seen), and the monitor's view;
 *   the trigger    flight-trigger=: scans what producers committed for one
 *                  event (st__ring_trigger_scan).
 *
 * The consumer's per-ring state lives in the ring's consumer block (a
 * cache-line group of its own, ring_internal.h): tail, what it consumed,
 * and one word of its own, last_ns, which core keeps between passes and
 * never interprets.
 */
#ifndef ST_RUNTIME_CORE_RING_CONSUMER_H
#define ST_RUNTIME_CORE_RING_CONSUMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

struct st__ring; /* opaque outside core/ */

/*
 * Bytes one event can put in a ring in one go: its largest record and the
 * dropped record written in front of it. A consumer that has this much
 * room always makes progress.
 */
#define ST__RING_RECORD_MAX (ST_MAX_EVENT_RECORD + ST_EVENT_FIXED_SIZE + 8)

/*
 * The pid field of dropped records that count lost drops: events traced
 * after their thread's exit hook ran (a later TLS destructor, a signal
 * handler), or by a thread that had no ring (its creation failed, or a
 * signal handler interrupted it). No thread has this id (Linux thread ids
 * are below 2^22), and it is not 0, which v4 readers may reject.
 */
#define ST_LOST_TID UINT32_MAX

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

/*
 * Producers wake their consumer each time head crosses a multiple of
 * `bytes` (a power of two) or of an eighth of their ring, whichever is
 * smaller, from each ring's next wake-up point on; 0: an eighth (the
 * default). For a consumer that drains on the tracing threads themselves
 * (the drain's inline writer), which wants short passes.
 */
void st__ring_set_wake_every(size_t bytes);

/*
 * True when the locks the consumer's steps take in core (the ring lock,
 * crash=DIR's lock) are free right now. A consumer that runs on a tracing
 * thread, maybe in a signal handler that interrupted this very thread
 * inside one of them, asks first: when they are free, the interrupted code
 * holds none of them, so taking them cannot wait on itself.
 */
bool st__ring_cons_locks_free(void);

/* Marks the calling thread as one that never traces (consumer threads). */
void st__ring_thread_notrace(void);

/* --- the consumer of discard rings (the writeout thread) -------------------- */

/*
 * One ring as a pass sees it. st__ring_cons_snapshot() fills it; the
 * consumer reads it, keeps last_ns, and changes the rest only through the
 * functions below.
 */
struct st__ring_cons {
    struct st__ring *ring;   /* the ring (opaque) */
    const uint8_t *bytes;   /* its memory: position p is bytes[p & mask]; NULL for the lost ring */
    uint64_t mask, size;    /* size - 1, and its bytes (0 for the lost ring) */
    uint64_t pos;           /* taken up to here (tail at the snapshot, moved by consume and skip) */
    uint64_t end;           /* head at the snapshot: [pos, end) are whole, committed records */
    uint64_t last_ns;       /* the consumer's own word, kept in the ring between passes (0 at first) */
    uint32_t tid;           /* the owner thread (the records' pid); ST_LOST_TID for the lost ring */
    bool exited;            /* its thread had ended when the pass began (read before end) */
    bool lost;              /* the lost drops' ring: no records, pending drops only, never reaped */
};

/* A pass's rings; its memory is kept from pass to pass. Zero-initialised is empty. */
struct st__ring_cons_set {
    struct st__ring_cons *v; /* n entries, newest ring first */
    size_t n, cap;
    bool no_grow;            /* the caller's: a pass that must not allocate (a signal handler's, maybe) */
};

/*
 * Lists every ring for a pass into set: per ring `exited`, then head
 * (acquire), so a ring seen exited is seen with all its records. 0,
 * -ENOMEM, or -EAGAIN when set->no_grow and the rings outnumber its room
 * (set empty either way: try again next pass).
 */
int st__ring_cons_snapshot(struct st__ring_cons_set *set);

/* Frees set's memory (its rings are not touched). */
void st__ring_cons_set_free(struct st__ring_cons_set *set);

/*
 * The records of c up to pos were taken, `events` event records among
 * them: counted as consumed, and their room given back to the producer
 * (tail release-stored) now, or for a ring file (crash=DIR) only once they
 * are written (st__ring_cons_write_end).
 */
void st__ring_cons_consume(struct st__ring_cons *c, uint64_t pos, uint64_t events);

/* c holds bytes that are not records from c->pos on (memory corrupted): they are skipped up to pos, now. */
void st__ring_cons_skip(struct st__ring_cons *c, uint64_t pos);

/*
 * Takes c's pending drop count (exchanged to 0; 0 when none, without a
 * store): the caller reports it in one dropped record, or it stays counted
 * only in the thread's dropped total. Each drop is taken once, by the
 * consumer or by the thread before its next event.
 */
uint64_t st__ring_cons_take_drops(struct st__ring_cons *c);

/* A dropped record counting `count` of c's drops was staged (crash=DIR notes it with the write that carries it). */
void st__ring_cons_drop_staged(struct st__ring_cons *c, uint64_t count);

/*
 * crash=DIR: a write() of trace-file bytes [off, off + len) of the file
 * (dev, ino) starts that carries what set's ring files had taken: each
 * such ring file notes it, so `simpletrace recover` knows after any death
 * which of its records the file holds. True when there was any; then call
 * st__ring_cons_write_end() after the write, done or failed.
 */
bool st__ring_cons_write_begin(struct st__ring_cons_set *set, uint64_t off, uint64_t len, uint64_t dev,
                               uint64_t ino);

/* After that write: the ring files' tails published, their notes closed. */
void st__ring_cons_write_end(struct st__ring_cons_set *set);

/*
 * crash=DIR (nothing otherwise), at a pass's start: a fresh clock anchor
 * in each ring file of set, new IDs in the names file, and with named the
 * trace file (dev, ino) named in each ring file before any write reaches
 * it (recover matches an empty --trace too).
 */
void st__ring_cons_crash_notes(struct st__ring_cons_set *set, bool named, uint64_t dev, uint64_t ino);

/* True with crash=DIR: the rings are files, and a pass's crash notes may write the names file (allocating). */
bool st__ring_cons_crash_on(void);

/* The trace file written from now on (st_dev, st_ino; 0, 0: none): ring files made from now on name it. */
void st__ring_cons_trace_file(uint64_t dev, uint64_t ino);

/*
 * Ends a pass: each ring's last_ns kept, and the rings of threads that
 * had exited when it began and have nothing left (all taken up to end, no
 * pending drop) unlinked, their counters retired, freed (a ring file
 * removed). set is left empty.
 */
void st__ring_cons_reap(struct st__ring_cons_set *set);

/* Clean exit, after the last pass: ring files holding nothing unwritten are removed, and then the names file. */
void st__ring_cons_exit(void);

/* --- read-only copies (ring_peek.c) ----------------------------------------- */

/* What st__ring_peek kept of one ring. */
struct st__ring_peeked {
    struct st__ring *r;             /* the ring (opaque) */
    uint64_t serial;               /* r is still that ring only while its serial matches */
    uint32_t tid;
    size_t off, len;               /* its whole records in dst (len may be 0) */
    bool known;                    /* first is valid: the copy's tail was read with its index */
    uint64_t first;                /* overwrite: event index of the record at off (ow_evicted at that tail) */
    uint64_t unseen;               /* flight snapshots: st__ring_ow_unseen's count for this ring */
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
size_t st__ring_peek(uint8_t *dst, size_t cap, uint64_t *left, struct st__ring_peeked **info, size_t *ninfo);

/* --- flight snapshots (overwrite policy, ring_overwrite.c) ------------------ */

/*
 * While held (a snapshot between its copy and st__ring_ow_seen), exited
 * rings are not freed; releasing frees those beyond the bound.
 */
void st__ring_exited_hold(void);
void st__ring_exited_release(void);

/*
 * A snapshot's dropped counts (the scheme: drain/snapshot.c), with exited
 * rings held: for each copy pi[i] that is `known`, pi[i].unseen gets the
 * events before the first one it holds that no earlier snapshot held or
 * counted (0 for the others and for the lost ring, tid ST_LOST_TID).
 * Returns the lost drops and the events of freed rings since the last
 * st__ring_ow_seen, and in *mark what to pass it.
 */
uint64_t st__ring_ow_unseen(struct st__ring_peeked *pi, size_t n, uint64_t *mark);

/*
 * The snapshot made of the copy (bytes, pi[0..n)) was written: what it
 * holds and counted is seen, the next one counts from there (mark: from
 * st__ring_ow_unseen). Not called for a failed snapshot, whose counts go
 * to the next one.
 */
void st__ring_ow_seen(const uint8_t *bytes, const struct st__ring_peeked *pi, size_t n, uint64_t mark);

/*
 * The trigger record the producers watch for when they evict (flight-trigger=):
 * on: one is configured; id: its event ID, UINT64_MAX until resolved;
 * known: while unresolved, IDs below it are known not to be it. Written by
 * its consumer (relaxed/release), read by producers (acquire).
 */
struct st__ring_trigger {
    int on;
    uint64_t id;
    uint64_t known;
};
extern struct st__ring_trigger st__ring_trigger;

/*
 * Scans, in place, the headers of the records committed since the last
 * scan for the (resolved) trigger; true when one lies in what this scan
 * claimed (each trigger record is reported once: by a scan or, evicted
 * first, by its producer through the trigger_evicted hook).
 */
bool st__ring_trigger_scan(void);

#endif /* ST_RUNTIME_CORE_RING_CONSUMER_H */
