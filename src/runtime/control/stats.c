/*
 * st_stats_get(): sums the per-thread counters (read with relaxed loads:
 * each is written by one thread only, so a snapshot is exact per counter
 * but not across threads), those of buffers already freed, and the
 * writeout thread's.
 *
 *   produced = committed + dropped
 *   dropped  = per-thread drops (buffer full, nested, oversized)
 *            + lost drops (no buffer, or after the thread's exit hook)
 *            + records lost to a write error
 *   produced = written + dropped + pending        once producers are quiet
 */
#include <errno.h>
#include <string.h>

#include "ring.h"
#include "rt_internal.h"

ST_EXPORT int st_stats_get(struct st_stats *s)
{
    struct st_writer_stats w;
    uint64_t committed, dropped, consumed;

    st__init();
    if (!s)
        return -EINVAL;
    memset(s, 0, sizeof *s);
    st__ring_lock();
    committed = st__ring_retired.committed;
    dropped = st__ring_retired.dropped;
    consumed = st__ring_retired.consumed;
    for (struct st_ring *b = st__rings; b; b = b->next) {
        if (b == &st__ring_lost)
            continue; /* not a thread: its drops are added below */
        /* tail first: head is later, so head - tail never goes negative */
        uint64_t tail = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
        uint64_t done = __atomic_load_n(&b->consumed, __ATOMIC_RELAXED);
        uint64_t made = __atomic_load_n(&b->committed, __ATOMIC_RELAXED);
        uint64_t head = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
        committed += made;
        consumed += done;
        dropped += st__ring_dropped(b);
        s->buffered += head - tail;
        s->threads++;
    }
    st__ring_unlock();
    dropped += st__ring_orphan_drops();
    st__writer_stats(&w);
    s->produced = committed + dropped;
    s->written = w.written;
    s->dropped = dropped + w.write_dropped;
    s->dropped_reported = w.dropped_reported;
    s->bytes_written = w.bytes_written;
    s->pending = committed >= consumed ? committed - consumed : 0;
    return 0;
}
