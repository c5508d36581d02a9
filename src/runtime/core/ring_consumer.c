/*
 * The consumer of discard rings (ring_consumer.h): the writeout thread's
 * steps that touch a ring, kept here so that the drain sees no ring
 * internals. The protocol with the producer is the one at the top of
 * ring.c: head is release-stored by the producer after a record's bytes
 * and loaded with acquire here; tail is release-stored here after the
 * bytes were copied out, and loaded with acquire by the producer's slow
 * path only. pending_drop is the one producer field written here (an
 * exchange, so each drop is reported once).
 *
 * crash=DIR (ring_file.c, crash_format.h): a ring file's tail is published
 * only once its records are in the trace file, and while the write() runs
 * the ring file's header notes what it covers, so that after any death of
 * the process [tail, head) of the ring file is exactly what the trace
 * file lacks, in-flight notes aside.
 *
 * Everything here runs on the consumer's thread, except that the list is
 * walked and changed under the ring lock.
 */
#include <errno.h>
#include <stdlib.h>

#include "ring_file.h"
#include "ring_internal.h"
#include "timestamp.h"

int st__ring_cons_snapshot(struct st__ring_cons_set *set)
{
    size_t n = 0;

    st__ring_lock();
    for (struct st__ring *r = st__rings; r; r = r->next)
        n++;
    if (n > set->cap) {
        struct st__ring_cons *v = set->no_grow ? NULL : realloc(set->v, n * 2 * sizeof *v);
        if (!v) {
            st__ring_unlock();
            set->n = 0;
            return set->no_grow ? -EAGAIN : -ENOMEM;
        }
        set->v = v;
        set->cap = n * 2;
    }
    set->n = 0;
    for (struct st__ring *r = st__rings; r; r = r->next) {
        struct st__ring_cons *c = &set->v[set->n++];
        /* exited before head: a thread seen gone is seen with its last record. */
        bool exited = __atomic_load_n(&r->exited, __ATOMIC_ACQUIRE) != 0;
        /* The ring's pointer and geometry copied, so the caller reads none of the producer's lines. */
        *c = (struct st__ring_cons){.ring = r, .bytes = r->ring, .mask = r->mask, .size = r->size,
                                    .pos = r->tail, .end = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE),
                                    .last_ns = r->cons_last_ns, .tid = r->tid, .exited = exited,
                                    .lost = r == &st__ring_lost};
    }
    st__ring_unlock();
    return 0;
}

void st__ring_cons_set_free(struct st__ring_cons_set *set)
{
    free(set->v);
    *set = (struct st__ring_cons_set){0};
}

void st__ring_cons_consume(struct st__ring_cons *c, uint64_t pos, uint64_t events)
{
    struct st__ring *r = c->ring;

    c->pos = pos;
    __atomic_store_n(&r->consumed, r->consumed + events, __ATOMIC_RELAXED);
    if (!r->file_hdr) /* crash=DIR: published once written (st__ring_cons_write_end) */
        __atomic_store_n(&r->tail, pos, __ATOMIC_RELEASE);
}

void st__ring_cons_skip(struct st__ring_cons *c, uint64_t pos)
{
    c->pos = pos;
    __atomic_store_n(&c->ring->tail, pos, __ATOMIC_RELEASE);
}

uint64_t st__ring_cons_take_drops(struct st__ring_cons *c)
{
    struct st__ring *r = c->ring;

    /* A load first: no write to the producer's line when there is nothing to take. */
    if (!__atomic_load_n(&r->pending_drop, __ATOMIC_RELAXED))
        return 0;
    return __atomic_exchange_n(&r->pending_drop, 0, __ATOMIC_RELAXED);
}

void st__ring_cons_drop_staged(struct st__ring_cons *c, uint64_t count)
{
    if (c->ring->file_hdr)
        c->ring->cons_staged_drop += count; /* noted with the write: lost with it otherwise */
}

/* A ring file with records or drops taken that its tail does not cover yet. */
static bool cons_unpublished(const struct st__ring_cons *c)
{
    const struct st__ring *r = c->ring;

    return r->file_hdr && (c->pos != r->tail || r->cons_staged_drop);
}

bool st__ring_cons_write_begin(struct st__ring_cons_set *set, uint64_t off, uint64_t len, uint64_t dev,
                               uint64_t ino)
{
    bool any = false;

    for (size_t i = 0; i < set->n; i++) {
        struct st__ring_cons *c = &set->v[i];
        if (!cons_unpublished(c))
            continue;
        st__ring_file_inflight_begin(c->ring, c->pos, c->ring->cons_staged_drop, off, len, dev, ino);
        any = true;
    }
    return any;
}

void st__ring_cons_write_end(struct st__ring_cons_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        struct st__ring_cons *c = &set->v[i];
        struct st__ring *r = c->ring;
        if (!cons_unpublished(c))
            continue;
        __atomic_store_n(&r->tail, c->pos, __ATOMIC_RELEASE);
        r->cons_staged_drop = 0;
        st__ring_file_inflight_end(r);
    }
}

void st__ring_cons_crash_notes(struct st__ring_cons_set *set, bool named, uint64_t dev, uint64_t ino)
{
    struct st__clock_anchor now;

    if (!st__ring_file_on())
        return;
    now = st__ts_sample();
    st__ring_file_sync_names();
    for (size_t i = 0; i < set->n; i++) {
        struct st__ring *r = set->v[i].ring;
        if (!r->file_hdr)
            continue;
        st__ring_file_note_anchor(r, now.raw, now.ns);
        if (named)
            st__ring_file_note_trace(r, dev, ino);
    }
}

bool st__ring_cons_crash_on(void)
{
    return st__ring_file_on();
}

void st__ring_cons_trace_file(uint64_t dev, uint64_t ino)
{
    st__ring_file_set_trace_id(dev, ino);
}

void st__ring_cons_reap(struct st__ring_cons_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        struct st__ring_cons *c = &set->v[i];
        struct st__ring *r = c->ring, **pp;
        r->cons_last_ns = c->last_ns;
        if (!c->exited || r->tail != c->end || __atomic_load_n(&r->pending_drop, __ATOMIC_RELAXED))
            continue;
        st__ring_lock();
        for (pp = &st__rings; *pp && *pp != r; pp = &(*pp)->next)
            ;
        if (*pp)
            st__ring_retire(pp);
        st__ring_unlock();
        st__ring_free(r);
    }
    set->n = 0;
}

void st__ring_cons_exit(void)
{
    st__ring_file_exit();
}
