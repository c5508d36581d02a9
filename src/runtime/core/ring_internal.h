/*
 * What the ring's own files share (ring.c, ring_life.c, ring_overwrite.c,
 * ring_peek.c, ring_file.c); nothing outside core/ includes this.
 */
#ifndef ST_RUNTIME_CORE_RING_INTERNAL_H
#define ST_RUNTIME_CORE_RING_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ring.h"

/* Slow paths stay out of line so the fast path needs no saved registers. */
#define ST__COLD __attribute__((noinline, cold))

/* The hooks consumers registered (members may be NULL). */
extern struct st__ring_hooks st__ring_hook;

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
struct st_ring *st__ring_create(void);

/* Publishes a new ring without a lock (a first event may run in a signal handler). */
void st__ring_publish(struct st_ring *r);

/* Unmaps r; its ring file (crash=DIR) is removed only when remove is set. */
void st__ring_release(struct st_ring *r, bool remove);

/* Fork child: the calling thread forgets its ring (ring.c owns the thread-local state). */
void st__ring_forget_thread(void);

/* Recomputes limit and lap_base for the record that starts at next_head. */
static inline void st__ring_set_limit(struct st_ring *r)
{
    uint64_t lap = r->next_head & ~r->mask;
    uint64_t room_end = r->tail_cache + r->size, lap_end = lap + r->size;

    r->lap_base = (uintptr_t)r->ring - (uintptr_t)lap;
    r->limit = room_end < lap_end ? room_end : lap_end;
}

/* --- overwrite policy (ring_overwrite.c) --- */

/* The owner's slow path, ring full: evicts oldest records until need bytes fit; false if they never can. */
bool st__ring_evict(struct st_ring *r, uint64_t head, uint64_t need);

/* The owner thread of an overwrite ring exited: keep its ring, trim exited ones beyond the bound. */
void st__ring_exit_overwrite(struct st_ring *r);

/* Fork child: the overwrite policy's process-wide state starts afresh. */
void st__ring_overwrite_fork_child(void);

#endif /* ST_RUNTIME_CORE_RING_INTERNAL_H */
