/*
 * Per-thread rings: the record stream of one tracing thread. The module is
 * split as lttng-ust splits its ring buffer (frontend.h, frontend_api.h,
 * frontend_internal.h, frontend_types.h), by who may see what:
 *
 *   ring.h           this file: setting the rings up, for the layers that
 *                    drive them (control, the core's configuration):
 *                    sizes, modes, start-up, fork, counters
 *   ring_consumer.h  the consumer side, the drain's only view of the rings:
 *                    hooks, taking records out and giving the room back,
 *                    pending drops, reaping exited rings, read-only copies,
 *                    flight snapshots' accounting, the trigger scan
 *   ring_internal.h  struct st__ring and the list: core/ only (a compile
 *                    error elsewhere, and tests/arch checks it)
 *   <simpletrace/trace.h>  the producer: st__simple_begin/commit, the hot path
 *
 * A ring is configured by two settings chosen when it is created, in the
 * spirit of one ring with a configuration rather than one ring per mode:
 *
 *   memory   anonymous pages, or a file-backed shared mapping that outlives
 *            the process (crash=DIR, ring_file.c)
 *   policy   discard: a full ring drops the new record and counts it, and
 *            one consumer (the drain's writeout thread) moves tail through
 *            ring_consumer.h; overwrite: the producer moves tail itself
 *            past its oldest records (flight=SIZE, ring_overwrite.c);
 *            readers only copy
 *
 * The ring knows nothing of its consumers: it signals them through the
 * hooks they register (ring_consumer.h), and they reach its memory and
 * counters only through the consumer API, as Linux's ring_buffer.c is
 * driven by trace.c above it. The design of the hot path and its
 * invariants are at the top of ring.c.
 *
 * Files: ring.c (hot path, first event, drops, thread exit), ring_life.c
 * (settings, creation, the list, fork, counters), ring_consumer.c (the
 * writeout thread's side), ring_overwrite.c (the overwrite policy, flight
 * snapshots' accounting, the trigger scan), ring_peek.c (read-only
 * copies), ring_file.c (file-backed memory).
 */
#ifndef ST_RUNTIME_CORE_RING_H
#define ST_RUNTIME_CORE_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Creates the thread-exit key. */
void st__ring_init(void);

/*
 * The ring lock, which guards the list of rings (ring_internal.h). Outside
 * core/ only fork's prepare and parent handlers take it, so that the child
 * never inherits the list mid-update.
 */
void st__ring_lock(void);
void st__ring_unlock(void);

/* Sums of every ring's counters, for st_stats_get(). */
struct st__ring_counters {
    uint64_t committed, dropped, consumed; /* of every ring so far, lost drops in dropped */
    uint64_t buffered;                     /* bytes waiting in rings */
    uint64_t capacity;                     /* bytes of the rings alive */
    uint32_t threads;                      /* rings alive */
};
void st__ring_counters(struct st__ring_counters *c);

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

#endif /* ST_RUNTIME_CORE_RING_H */
