/*
 * Read-only copies of the rings, for snapshots and views (seqlock-style:
 * copy, then validate against tail read again). The list is walked under
 * the ring lock, one chunk of one ring at a time, so a thread starting to
 * trace never waits for more than a 64 KiB copy and a consumer may free a
 * ring between chunks (we then notice it is gone and drop what we copied:
 * those records were consumed; under the overwrite policy an exiting
 * thread may free an exited ring, see exited_trim). Ring bytes are read
 * while the producer may be overwriting the part below the consumer's
 * tail: that race is intended (the bytes are discarded), so the loads are
 * volatile and the functions are not instrumented by TSan.
 */
#include <stdlib.h>
#include <string.h>

#include "ring_internal.h"

/* One ring as st__ring_peek lists it. */
struct peek {
    struct st__ring *r;
    const uint8_t *ring;
    uint64_t size, serial;
    uint32_t tid;
};

/*
 * Copies [tail, head) of one ring to out (at most room bytes) and keeps
 * its whole records from the tail re-read afterwards; the rest counts in
 * *lost. Fills *pi (off relative to out). Returns the bytes kept.
 */
__attribute__((no_sanitize("thread"))) static size_t peek_one(const struct peek *pk, uint8_t *out, size_t room,
                                                              uint64_t *lost, struct st__ring_peeked *pi)
{
    enum { CHUNK = 64 << 10 };
    uint64_t t0 = 0, h0 = 0, t1 = 0, end = 0, pos = 0, keep, index = 0;
    bool first = true, alive = true;

    *pi = (struct st__ring_peeked){.r = pk->r, .serial = pk->serial, .tid = pk->tid};
    /* One locked step per chunk: the first also reads [t0, h0), the last re-reads tail. */
    while (alive && (first || pos < end)) {
        struct st__ring *b;
        st__ring_lock();
        for (b = st__rings; b; b = b->next)
            if (b == pk->r && b->serial == pk->serial) /* the same buffer, not a new one in its mapping */
                break;
        alive = b != NULL;
        if (alive && first) {
            first = false;
            t0 = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
            h0 = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
            end = h0 - t0 <= room ? h0 : t0 + room;
            pos = t0;
        }
        if (alive && pos < end) {
            const volatile uint8_t *ring = pk->ring;
            uint64_t stop = end - pos > CHUNK ? pos + CHUNK : end;
            uint8_t *o = out + (pos - t0);
            for (; pos < stop; pos++)
                *o++ = ring[pos & (pk->size - 1)];
            if (pos == end) {
                /* Order the copy before the tail load that validates it. */
                __atomic_thread_fence(__ATOMIC_ACQUIRE);
                t1 = st__ring_tail_index(b, &index);
            }
        }
        st__ring_unlock();
    }
    if (!alive || h0 <= t0)
        return 0; /* gone (the writer wrote all of it) or empty */
    if (end == t0) {
        *lost += h0 - t0; /* no room left */
        return 0;
    }
    /* tail never goes back; a lower one would not be the index's tail */
    pi->known = t1 >= t0;
    pi->first = index;
    if (t1 < t0)
        t1 = t0;
    if (t1 >= end) {
        *lost += t1 < h0 ? h0 - t1 : 0;
        return 0;
    }
    /* Whole records from t1 (always a record boundary) up to end. */
    keep = t1;
    while (end - keep >= ST_EVENT_FIXED_SIZE) {
        uint64_t len = 8 + (uint64_t)st__fmt_get_u32(out + (keep - t0) + ST_EV_OFF_LENGTH);
        if (len < ST_EVENT_FIXED_SIZE || len > ST_SCRATCH_SIZE || len > end - keep)
            break;
        keep += len;
    }
    *lost += h0 - keep;
    memmove(out, out + (t1 - t0), keep - t1);
    pi->len = keep - t1;
    return keep - t1;
}

size_t st__ring_peek(uint8_t *dst, size_t cap, uint64_t *left, struct st__ring_peeked **info, size_t *ninfo)
{
    struct peek *list = NULL;
    struct st__ring_peeked *pi = NULL, one;
    size_t n = 0, max = 0, used = 0;
    uint64_t lost = 0;

    /* Snapshot the list (plus room for threads that start meanwhile). */
    st__ring_lock();
    for (struct st__ring *b = st__rings; b; b = b->next)
        max++;
    st__ring_unlock();
    max += 16;
    list = malloc(max * sizeof *list);
    if (info && list && !(pi = malloc(max * sizeof *pi))) {
        free(list);
        list = NULL;
    }
    if (!list) {
        if (left)
            *left = 0;
        if (info)
            *info = NULL;
        return 0;
    }
    st__ring_lock();
    for (struct st__ring *b = st__rings; b && n < max; b = b->next)
        list[n++] = (struct peek){b, b->ring, b->size, b->serial, b->tid};
    st__ring_unlock();

    for (size_t i = 0; i < n; i++) {
        struct st__ring_peeked *p = pi ? &pi[i] : &one;
        size_t kept = peek_one(&list[i], dst + used, cap - used, &lost, p);
        p->off = used;
        used += kept;
    }
    free(list);
    if (left)
        *left = lost;
    if (info) {
        *info = pi;
        *ninfo = n;
    }
    return used;
}

