/*
 * The overwrite policy (flight=SIZE): the producer of a full ring moves
 * tail itself past its oldest records instead of dropping the new one, and
 * counts what it evicted, so that snapshots can say exactly what they lack;
 * rings of exited threads are kept, within a bound. No consumer moves tail
 * in this policy; readers copy (ring_peek.c). The fast path is unchanged: a
 * full ring already sends it to the slow path through `limit`.
 *
 * The readers' side of the policy is here too (ring_consumer.h): flight
 * snapshots' accounting in ow_next (the scheme: drain/snapshot.c) and the
 * trigger scan, which claims ow_scanned against the producer's eviction.
 */
#include <sched.h>
#include <string.h>

#include "ring_internal.h"

struct st__ring_trigger st__ring_trigger = {.id = UINT64_MAX};

static uint64_t exits; /* overwrite rings whose thread exited so far: their order (ring lock) */
static bool hold;      /* a snapshot is between its copy and its accounting (ring lock) */

/*
 * A release fence, out of line and not instrumented: TSan does not model
 * fences (GCC warns about them under -fsanitize=thread), and the reader
 * it pairs with, st__ring_peek, is not instrumented either.
 */
static __attribute__((noinline, no_sanitize("thread"))) void ow_fence(void)
{
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

/*
 * The record at ring position pos, of the bytes [pos, end) that are whole
 * records: its length, ID, and the events it stands for (returned: a
 * dropped record stands for its count).
 */
static uint64_t ring_record(const struct st__ring *b, uint64_t pos, uint64_t end, uint64_t *len, uint64_t *id)
{
    uint8_t hdr[ST_EVENT_FIXED_SIZE + 8];
    uint64_t off = pos & b->mask, first = b->size - off, n = sizeof hdr;

    if (n > end - pos)
        n = end - pos;
    if (first > n)
        first = n;
    memcpy(hdr, b->ring + off, first);
    memcpy(hdr + first, b->ring, n - first);
    *len = 8 + (uint64_t)st__fmt_get_u32(hdr + ST_EV_OFF_LENGTH);
    *id = st__fmt_get_u64(hdr + ST_EV_OFF_ID);
    return st__ring_record_events(hdr, n);
}

uint64_t st__ring_record_events(const uint8_t *rec, size_t len)
{
    if (len >= ST_EVENT_FIXED_SIZE + 8 && st__fmt_get_u64(rec + ST_EV_OFF_ID) == ST_DROPPED_EVENT_ID)
        return st__fmt_get_u64(rec + ST_EV_OFF_PAYLOAD);
    return 1;
}

/*
 * The trigger seen from st__ring_evict: records below `from` were
 * examined already; `last` is the position of the last evicted record that
 * is (sure) or may be (the trigger is not resolved yet: an ID in [lo, hi]
 * registered after the trigger's consumer last looked) the trigger.
 */
struct evict_trig {
    struct st__ring_trigger t;
    uint64_t from, last;
    uint32_t lo, hi;
};

static void evict_trig_begin(struct st__ring *b, struct evict_trig *tr)
{
    tr->t.on = __atomic_load_n(&st__ring_trigger.on, __ATOMIC_ACQUIRE);
    tr->t.id = __atomic_load_n(&st__ring_trigger.id, __ATOMIC_ACQUIRE);
    tr->t.known = __atomic_load_n(&st__ring_trigger.known, __ATOMIC_ACQUIRE);
    tr->from = tr->t.on ? __atomic_load_n(&b->ow_scanned, __ATOMIC_RELAXED) : UINT64_MAX;
    tr->last = UINT64_MAX;
    tr->lo = UINT32_MAX;
    tr->hi = 0;
}

static void evict_trig_note(struct evict_trig *tr, uint64_t pos, uint64_t id)
{
    if (pos < tr->from)
        return;
    if (id == tr->t.id) {
        tr->last = pos;
    } else if (tr->t.id == UINT64_MAX && id >= tr->t.known && id <= UINT32_MAX) {
        /* IDs are registry slots (< 2^32); the dropped record's ID is above. */
        tr->last = pos;
        tr->lo = id < tr->lo ? (uint32_t)id : tr->lo;
        tr->hi = id > tr->hi ? (uint32_t)id : tr->hi;
    }
}

/*
 * The producer claims what it evicts, the consumer's scan what it
 * walked (buffer.h): each record is claimed once, so a trigger is reported
 * by exactly one of them.
 */
bool st__ring_trigger_claim(struct st__ring *b, uint64_t end, uint64_t last)
{
    uint64_t cur = __atomic_load_n(&b->ow_scanned, __ATOMIC_RELAXED);

    while (cur < end)
        if (__atomic_compare_exchange_n(&b->ow_scanned, &cur, end, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return last >= cur;
    return false;
}

/*
 * Overwrite policy, ring full: the producer (who alone moves tail in this
 * policy: no consumer runs) advances tail past whole records,
 * oldest first, until `need` bytes (and a sixteenth of the ring more, see
 * below) fit after head. The events lost are added to ow_evicted (a
 * dropped record that is overwritten loses the events it reported: its
 * count), so ow_evicted is always the event index of the record at tail;
 * both change inside a seqlock (ow_seq odd meanwhile) so that a snapshot
 * reads them as a pair. An evicted record no scan examined yet that is the
 * trigger record is reported through the trigger_evicted hook here (the
 * scan would miss it). Returns false when need can never fit (then the caller drops).
 */
bool st__ring_evict(struct st__ring *b, uint64_t head, uint64_t need)
{
    uint64_t tail = b->tail, lost = 0, goal, seq = b->ow_seq;
    struct evict_trig tr;

    if (need > b->size)
        return false;
    /*
     * Free a sixteenth of the ring more than needed: `limit` then lets the
     * fast path run again for that long, instead of every event of a full
     * ring coming here to evict one record. Costs at most that much history.
     */
    goal = need + (b->size >> 4);
    if (goal > b->size)
        goal = b->size;
    evict_trig_begin(b, &tr);
    while (head + goal - tail > b->size && tail < head) {
        uint64_t len, id;
        lost += ring_record(b, tail, head, &len, &id);
        if (tr.t.on)
            evict_trig_note(&tr, tail, id);
        tail += len;
    }
    /* Seqlock writer: odd, fence (the stores below are not seen before it), data, even. */
    __atomic_store_n(&b->ow_seq, seq + 1, __ATOMIC_RELAXED);
    ow_fence();
    __atomic_store_n(&b->ow_evicted, b->ow_evicted + lost, __ATOMIC_RELAXED);
    __atomic_store_n(&b->tail, tail, __ATOMIC_RELEASE);
    __atomic_store_n(&b->ow_seq, seq + 2, __ATOMIC_RELEASE);
    /*
     * The record about to be written overwrites what lay below the new
     * tail. A reader (st__ring_peek) copies bytes, then fences and re-reads
     * tail: this fence pairs with that one, so a reader that copied any of
     * the new bytes also sees the tail that excludes them.
     */
    ow_fence();
    b->tail_cache = tail;
    if (tr.last != UINT64_MAX && st__ring_trigger_claim(b, tail, tr.last)) {
        void (*hook)(bool, uint32_t, uint32_t) = __atomic_load_n(&st__ring_hook.trigger_evicted, __ATOMIC_ACQUIRE);
        if (hook)
            hook(tr.t.id != UINT64_MAX, tr.lo, tr.hi);
    }
    return true;
}

/*
 * Exited rings under the overwrite policy. A thread's ring outlives it (its last
 * records are often the interesting ones), but with thread churn keeping
 * them all grows without bound, so at most max(ST_RING_KEEP_EXITED,
 * threads still running) are kept and the oldest-exited beyond that are
 * freed. Everything here runs under the ring lock, which every reader of a ring
 * holds or revalidates under (snapshots, st__ring_peek's serial check, the
 * trigger scan, fork_prepare): no lock is added to the tracing path. The
 * thread's own exit hook does the freeing, unless a snapshot holds
 * (st__ring_exited_hold): it copied rings but has not yet recorded in
 * ow_next what it holds, so freeing now would count those events lost
 * too; its release trims instead.
 */

/* Events of b's thread so far: evicted, in the ring, and drops not yet written into it. */
static uint64_t ring_events_total(const struct st__ring *b)
{
    uint64_t n = b->ow_evicted + __atomic_load_n(&b->pending_drop, __ATOMIC_RELAXED);

    for (uint64_t pos = b->tail, len, id; pos < b->head; pos += len)
        n += ring_record(b, pos, b->head, &len, &id);
    return n;
}

/*
 * With the ring lock held, *pp an exited overwrite ring: unlinks and frees it. Its
 * events no snapshot held or counted become lost drops (the thread is gone
 * and its id may already be another thread's), reported by the next one.
 */
static void exited_retire(struct st__ring **pp)
{
    struct st__ring *b = *pp;
    uint64_t total = ring_events_total(b);

    if (total > b->ow_next)
        __atomic_fetch_add(&st__ring_lost.ow_evicted, total - b->ow_next, __ATOMIC_RELAXED);
    st__ring_retire(pp);
    st__ring_release(b, true);
}

/* With the ring lock held: frees the oldest-exited rings beyond the bound. */
static void exited_trim(void)
{
    for (;;) {
        struct st__ring **oldest = NULL;
        uint64_t live = 0, exited = 0;
        for (struct st__ring **pp = &st__rings; *pp; pp = &(*pp)->next) {
            if (*pp == &st__ring_lost)
                continue;
            if (!(*pp)->ow_exit_seq) {
                live++;
                continue;
            }
            exited++;
            if (!oldest || (*pp)->ow_exit_seq < (*oldest)->ow_exit_seq)
                oldest = pp;
        }
        if (exited <= (live > ST_RING_KEEP_EXITED ? live : ST_RING_KEEP_EXITED))
            return;
        exited_retire(oldest);
    }
}

/*
 * An overwrite ring's thread exited (it no longer touches b: its thread-local
 * ring is st__ring_lost). The ring lock orders its last records before any reader here.
 */
void st__ring_exit_overwrite(struct st__ring *b)
{
    st__ring_lock();
    b->ow_exit_seq = ++exits;
    __atomic_store_n(&b->exited, 1, __ATOMIC_RELEASE);
    if (!hold)
        exited_trim();
    st__ring_unlock();
}

void st__ring_exited_hold(void)
{
    st__ring_lock();
    hold = true;
    st__ring_unlock();
}

void st__ring_exited_release(void)
{
    st__ring_lock();
    hold = false;
    exited_trim();
    st__ring_unlock();
}

/*
 * tail and the event index of the record there (ow_evicted), read as one
 * pair: st__ring_evict changes both inside the seqlock ow_seq (always 0 for a
 * discard ring, whose index is then meaningless). Retries while the owner
 * is inside it, which is a few stores unless it was preempted there.
 */
__attribute__((no_sanitize("thread"))) uint64_t st__ring_tail_index(const struct st__ring *b, uint64_t *index)
{
    for (;;) {
        uint64_t s0 = __atomic_load_n(&b->ow_seq, __ATOMIC_ACQUIRE), t, e;
        if (!(s0 & 1)) {
            t = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
            e = __atomic_load_n(&b->ow_evicted, __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&b->ow_seq, __ATOMIC_RELAXED) == s0) {
                *index = e;
                return t;
            }
        }
        sched_yield();
    }
}


/* --- flight snapshots' accounting ------------------------------------------ */

uint64_t st__ring_ow_unseen(struct st__ring_peeked *pi, size_t n, uint64_t *mark)
{
    uint64_t lost;

    st__ring_lock();
    for (size_t i = 0; i < n; i++) {
        const struct st__ring *r = pi[i].r;
        pi[i].unseen = 0;
        if (!pi[i].known || r == &st__ring_lost)
            continue; /* not copied (no room, empty): nothing held, nothing known */
        pi[i].unseen = pi[i].first > r->ow_next ? pi[i].first - r->ow_next : 0;
    }
    *mark = __atomic_load_n(&st__ring_lost.ow_evicted, __ATOMIC_RELAXED);
    lost = *mark - st__ring_lost.ow_next;
    st__ring_unlock();
    return lost;
}

/* Events the records of bytes[off, off + len) stand for. */
static uint64_t copy_events(const uint8_t *bytes, size_t off, size_t len)
{
    uint64_t n = 0;

    for (size_t end = off + len; off + ST_EVENT_FIXED_SIZE <= end; off += 8 + st__fmt_get_u32(bytes + off + ST_EV_OFF_LENGTH))
        n += st__ring_record_events(bytes + off, end - off);
    return n;
}

void st__ring_ow_seen(const uint8_t *bytes, const struct st__ring_peeked *pi, size_t n, uint64_t mark)
{
    st__ring_lock();
    for (size_t i = 0; i < n; i++) {
        struct st__ring *r = pi[i].r;
        uint64_t end;
        if (!pi[i].known || r == &st__ring_lost)
            continue;
        end = pi[i].first + copy_events(bytes, pi[i].off, pi[i].len);
        if (end > r->ow_next)
            r->ow_next = end;
    }
    st__ring_lost.ow_next = mark;
    st__ring_unlock();
}

/* --- the trigger scan -------------------------------------------------------- */

/*
 * Reads the headers of the records committed since the last scan, in
 * place, while the producers go on (so the hot path pays nothing). Like
 * st__ring_peek: tail is re-read after the walk, and a walk that started
 * below it (the producer overwrote what we read) is thrown away; then the
 * producer, which claims what it evicts unexamined, reports any trigger in
 * it, and the next scan starts from the new tail. What a valid walk read
 * is claimed the same way, so each trigger record is reported once. Not
 * instrumented by TSan for the same reason as st__ring_peek.
 */
__attribute__((no_sanitize("thread"))) bool st__ring_trigger_scan(void)
{
    bool hit = false;

    st__ring_lock();
    for (struct st__ring *r = st__rings; r; r = r->next) {
        const volatile uint8_t *ring = r->ring;
        uint64_t t0 = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
        uint64_t h = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
        uint64_t done = __atomic_load_n(&r->ow_scanned, __ATOMIC_RELAXED);
        uint64_t start = done > t0 ? done : t0, pos = start, last = UINT64_MAX, t1;

        /* pos may be past h: the producer claimed up to a tail it moved after our loads */
        while (pos < h && h - pos >= ST_EVENT_FIXED_SIZE) {
            uint8_t hdr[ST_EVENT_FIXED_SIZE];
            uint64_t len;
            for (size_t k = 0; k < sizeof hdr; k++)
                hdr[k] = ring[(pos + k) & r->mask];
            len = 8 + (uint64_t)st__fmt_get_u32(hdr + ST_EV_OFF_LENGTH);
            if (len < ST_EVENT_FIXED_SIZE || len > ST_SCRATCH_SIZE || len > h - pos)
                break; /* overwritten under us: the tail check below discards the walk */
            if (st__fmt_get_u64(hdr + ST_EV_OFF_ID) == st__ring_trigger.id)
                last = pos;
            pos += len;
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        t1 = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
        if (t1 > start || pos == start)
            continue;
        if (st__ring_trigger_claim(r, pos, last) && last != UINT64_MAX)
            hit = true; /* the trigger lies in what we claimed, not in what the producer did */
    }
    st__ring_unlock();
    return hit;
}

void st__ring_overwrite_fork_child(void)
{
    exits = 0;
    hold = false;
}
