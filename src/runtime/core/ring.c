/*
 * Per-thread rings and the tracing hot path (producer side).
 *
 * Each thread that traces gets, on its first enabled event, one ring of
 * `bufsize` bytes (a power of two; default 4 MiB, see ring.h). The
 * thread is its only producer and the drain its only consumer, one pass
 * at a time (on its writeout thread, or on the tracing threads themselves
 * when it runs none; none under the overwrite policy), so
 * no lock and no atomic read-modify-write is needed on the fast path:
 *
 *   head, tail: free-running byte counters (never wrap; 2^64 bytes is forever)
 *
 *                tail & mask                         head & mask
 *                     v                                   v
 *     +---------------+--------+------+---------+---------+-------------+
 *     |     free      | event  | drop | event   | event   |    free     |
 *     +---------------+--------+------+---------+---------+-------------+
 *                     <------------ head - tail ---------->
 *     consumer reads [tail, head)         producer writes [head, tail + size)
 *
 *   A record that does not fit before the end of the ring continues at its
 *   start; the producer builds such a record in a per-thread scratch area
 *   and copies it in two pieces at commit (rare), so the consumer sees one
 *   byte stream and every other record is written in place.
 *
 * Records are v4 event records exactly as they go to the file: u64 type 1,
 * u64 id, u64 timestamp (raw clock value, see timestamp.h), u32 length = 24 +
 * payload, u32 pid (the thread id), payload. A dropped record (id
 * 0xfffffffffffffffe, payload u64 count) is written in front of the next
 * event that fits after the thread lost events.
 *
 * Fast and slow paths. st__simple_begin() handles only the common case
 * inline and sends everything else to begin_slow(), which does the whole
 * job (first event, nesting, pending drops, full ring, a record across the
 * ring's end, clock_gettime mode). Three precomputed fields keep the fast
 * path to a few loads and compares:
 *
 *   gate      flag bytes read as one word: drops to report, and "always
 *             slow" (clock=monotonic where the fast path reads the TSC,
 *             and the sentinel buffer of threads without one). It and
 *             busy (the nesting guard, set for threads that must not
 *             trace) both zero, or begin takes the slow path.
 *   limit     min(tail last seen + size, end of the current lap of the
 *             ring): a record ending at or below it has room and lies in
 *             one piece, so the fast path needs no reload of tail and no
 *             wrap test. Refreshed by the slow path.
 *   kick_at   commit's one test: a record ending at or past it either
 *             crosses a wake-up point of the consumer or was built in
 *             scratch (the slow path then sets kick_at to 0).
 *
 * Invariants:
 *   - 0 <= head - tail <= size; [tail, head) holds whole, committed records.
 *   - limit <= tail_cache + size and limit <= the end of the lap holding
 *     next_head; lap_base + p is the address of position p of that lap.
 *   - Producer fields (struct st__ring up to `tail`) are written by the owner
 *     thread only (the consumer only exchanges pending_drop); tail, consumed
 *     and the cons_ fields by the consumer only (its steps: ring_consumer.c). The consumer's group starts on a 128-byte
 *     boundary (two lines, the unit of the adjacent-line prefetcher), the
 *     struct is allocated 128-aligned and the ring is a page-aligned
 *     mapping of its own, so no line is written by two threads.
 *   - head is release-stored after the record's bytes (commit), and loaded
 *     with acquire by the consumer; tail is release-stored by the consumer after
 *     it copied bytes out, and loaded with acquire by the producer only in
 *     the slow path.
 *   - Drops: `dropped` counts those of the thread holding busy (ring full,
 *     impossible size); only that thread can be there, so it uses plain
 *     relaxed stores. A signal handler that traces while its thread holds
 *     busy is dropped into `nested_dropped` (atomic add: handlers may nest).
 *     Both also add to pending_drop (atomic) and set the drops gate byte.
 *     pending_drop is taken with an exchange by whoever reports it in a
 *     dropped record (the thread before its next event, or the consumer for
 *     exited threads and flushes), so each drop is reported once.
 *   - busy is set between st__simple_begin() and st__simple_commit(). An
 *     event traced meanwhile (a signal handler interrupting the record) is
 *     dropped and counted; it never touches the ring. State is read only
 *     after busy is set, so a handler that ran between the gate test and
 *     the busy store finished its record before we look.
 *   - Thread exit (key destructor) release-stores exited; afterwards the
 *     thread's TLS points at st__ring_lost, so nothing of it touches the
 *     ring again and the consumer may free it once drained. An event the
 *     thread traces after that (a TLS destructor that runs after ours, a
 *     signal handler: TSan delivers deferred signals at the thread's last
 *     libc calls) is counted there instead, see "Lost drops" below.
 *     The overwrite policy has no consumer: there the exit hook itself keeps
 *     the ring, and frees the oldest exited ones beyond a bound (ring_overwrite.c).
 *
 * Lost drops. Events that no thread ring can take (traced after the
 * thread's exit hook, or by a thread that could not get a ring, or by a
 * signal handler that interrupted its thread's first-event setup) are
 * counted in st__ring_lost: a static ring with no memory, always busy (so
 * drop_nested() counts into it, from any thread, with atomic adds and
 * byte stores only), never exited and so never freed, on the ring list
 * from the start. The consumer reports its pending count like any thread's, as a dropped record whose
 * pid field is ST_LOST_TID (no thread has that id), in every pass that
 * reports all pending drops (flush, file change, exit); st_stats_get()
 * counts it in dropped. A count added after the consumer took it stays
 * pending for the next such pass: nothing is freed under it.
 *
 * First event (first_event), async-signal-safe so that a thread's first
 * event may come from a signal handler: the ring comes from mmap only, and
 * is published without a lock (ring_life.c). A handler interrupting its own
 * thread's setup drops (tls_creating). The modes a ring is made for
 * (clock, policy) may change only while no ring exists (ring_life.c). Not
 * async-signal-safe still: crash=DIR (ring_file.c opens and allocates),
 * the first event of a fork child whose consumer opens its own file, and
 * the first event of a second thread when the consumer starts its thread
 * then (the first_event hook), and the consumer's pass a wake-up runs on
 * the tracing thread when it has no thread (drain/writer.c says what of it
 * is safe).
 *
 * Overwrite policy (flight=SIZE, ring_overwrite.c): no consumer; when a
 * record does not fit, the slow path lets the producer move tail itself
 * past its oldest whole records (st__ring_evict), counting them, so tail
 * still has one writer: the invariants above hold with "the consumer" read
 * as "the producer" for tail. That policy therefore excludes a trace file
 * and crash=DIR. The fast path is unchanged: a full ring already sends it
 * to the slow path through `limit`.
 *
 * crash=DIR (ring_file.c, crash_format.h): the struct and the ring of a thread that
 * starts tracing then live in a file-backed shared mapping instead, with a
 * header that says where head, tail and pending_drop are; nothing on the
 * fast path changes. In that mode the consumer publishes tail only once the
 * records are in the trace file (drain), so after any death of the
 * process [tail, head) of the file is exactly what the trace file lacks.
 *
 * Costs on the fast path: the TLS load, one test of busy | gate, the busy
 * store, an acquire load of ev->enabled (a plain load on x86; it orders the
 * read of ev->id after the registry published it), one compare against
 * limit, the clock (rdtsc; a dropped event never reads it), the stores of
 * the record; at commit one compare against kick_at and three stores
 * (committed, head, busy) to the thread's own line. The consumer is woken
 * (the wake hook) only when head crosses a multiple of an eighth of the
 * ring (ring_life.c), or of the shorter distance a consumer that drains on
 * the tracing threads asked for (st__ring_set_wake_every), in commit's
 * slow path.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <simpletrace/trace.h>

#include "ring_internal.h"
#include "timestamp.h"

/* Threads that have no ring yet point here: the gate sends them to the slow path. */
static struct st__ring noring = {.gate.flag[ST_GATE_SLOW] = 1};

/* Threads that must not trace (the writer, monitor and flight threads) point here: always busy. */
static struct st__ring notrace_ring = {.busy = 1};

/* Exited threads point here, and lost drops are counted here (see "Lost drops" above). */
struct st__ring st__ring_lost = {.busy = 1, .tid = ST_LOST_TID};

/* The calling thread's ring, or one of the sentinels above. */
static _Thread_local struct st__ring *tls_ring __attribute__((tls_model("initial-exec"))) = &noring;

/* Set while this thread creates its ring: a signal handler tracing then drops. */
static _Thread_local int tls_creating __attribute__((tls_model("initial-exec")));

/*
 * Thread exit: hand the ring to its consumer, which drains and frees it.
 * From here the thread's events count as lost drops: the consumer may free
 * the ring as soon as it sees exited, so nothing of the thread may touch
 * it afterwards. The overwrite policy has no consumer: the ring is kept,
 * and freed later only if too many exited rings are kept.
 */
static void thread_exit(void *arg)
{
    struct st__ring *b = arg;

    tls_ring = &st__ring_lost;
    /* A handler on this thread that traces from here on sees st__ring_lost. */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (b->policy == ST_RING_OVERWRITE) {
        st__ring_exit_overwrite(b);
        return;
    }
    __atomic_store_n(&b->exited, 1, __ATOMIC_RELEASE);
    st__ring_wake();
}

static pthread_key_t exit_key;

void st__ring_init(void)
{
    pthread_key_create(&exit_key, thread_exit);
}

static int drop_nested(struct st__ring *b);
static void drop_lost(void);

/*
 * A thread's first event: create and publish its ring, async-signal-safe
 * (outside crash=DIR and a fork child's file opening, see the top): one
 * mmap, a CAS push, pthread_setspecific (glibc and musl store into the
 * thread descriptor for a key created at init). A signal handler that
 * interrupts this on the same thread drops its event (tls_creating): it
 * must not make a second ring. While a mode setter runs the event is
 * dropped too (waiting could be waiting for the code we interrupted); the
 * next event tries again.
 */
static ST__COLD struct st__ring *first_event(void)
{
    int saved = errno;
    struct st__ring *b = NULL;
    void (*hook)(void);

    if (__atomic_load_n(&tls_creating, __ATOMIC_RELAXED)) {
        drop_lost();
        return NULL;
    }
    __atomic_store_n(&tls_creating, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    hook = __atomic_load_n(&st__ring_hook.first_event, __ATOMIC_ACQUIRE);
    if (hook)
        hook();
    if (st__ring_may_create())
        b = st__ring_create();
    if (b) {
        st__ring_publish(b);
        pthread_setspecific(exit_key, b);
        tls_ring = b;
    } else {
        drop_lost();
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&tls_creating, 0, __ATOMIC_RELAXED);
    errno = saved;
    return b;
}

static inline void gate_set(struct st__ring *b, int which, uint8_t v)
{
    __atomic_store_n(&b->gate.flag[which], v, __ATOMIC_RELAXED);
}

static inline void busy_enter(struct st__ring *b)
{
    __atomic_store_n(&b->busy, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void busy_leave(struct st__ring *b)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&b->busy, 0, __ATOMIC_RELAXED);
}

/* Marks a drop as pending: the thread's next event reports it. */
static inline void drop_pending(struct st__ring *b)
{
    __atomic_fetch_add(&b->pending_drop, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    gate_set(b, ST_GATE_DROPS, 1);
}

/*
 * An event while this thread is inside a record (signal handler), after
 * its exit hook (b is st__ring_lost), or in a thread that must not trace.
 */
static ST__COLD int drop_nested(struct st__ring *b)
{
    if (b != &notrace_ring) {
        __atomic_fetch_add(&b->nested_dropped, 1, __ATOMIC_RELAXED);
        drop_pending(b);
    }
    return -1;
}

/* An event of a thread without a ring: a lost drop (snapshots of overwrite rings count it as lost). */
static ST__COLD void drop_lost(void)
{
    drop_nested(&st__ring_lost);
    if (st__ring_overwriting())
        __atomic_fetch_add(&st__ring_lost.ow_evicted, 1, __ATOMIC_RELEASE);
}

/* With busy held: the ring is full (or the record impossible): drop and count the event. */
static ST__COLD int drop_full(struct st__ring *b)
{
    /* Only the busy holder counts here, so a plain increment cannot race. */
    __atomic_store_n(&b->dropped, b->dropped + 1, __ATOMIC_RELAXED);
    drop_pending(b);
    busy_leave(b);
    return -1;
}

/* Copies n bytes to ring position pos, wrapping at the end. */
static void ring_copy_in(struct st__ring *b, uint64_t pos, const uint8_t *src, uint64_t n)
{
    uint64_t off = pos & b->mask, first = b->size - off;

    if (first > n)
        first = n;
    memcpy(b->ring + off, src, first);
    memcpy(b->ring, src + first, n - first);
}

/* The payload length as it adds to the len_pid word (ring_life.c). */
static inline uint64_t len_pid_add(uint64_t payload_len)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return payload_len;
#else
    return payload_len << 32;
#endif
}

/* Writes a record header at p. */
static inline __attribute__((always_inline)) void put_header(const struct st__ring *b, uint8_t *p,
                                                             const struct st_event *ev, uint64_t ts,
                                                             uint64_t payload_len)
{
    st__fmt_put_u64(p + ST_EV_OFF_TYPE, ST_RECORD_TYPE_EVENT);
    st__fmt_put_u64(p + ST_EV_OFF_ID, ev->id);
    st__fmt_put_u64(p + ST_EV_OFF_TIMESTAMP, ts);
    st__fmt_put_u64(p + ST_EV_OFF_LENGTH, b->len_pid + len_pid_add(payload_len));
}

/*
 * Everything st__simple_begin() does not do inline, from the start: the
 * first event, nesting, oversized payloads, reporting drops, reloading tail,
 * records across the ring's end, and clock_gettime mode.
 */
static ST__COLD int begin_slow(struct st__record *rec, const struct st_event *ev, size_t payload_len)
{
    struct st__ring *b = tls_ring;
    uint64_t len, need, head, ts, count;
    bool drops;
    uint8_t *p;

    if (b == &noring && !(b = first_event()))
        return -1;
    if (__atomic_load_n(&b->busy, __ATOMIC_RELAXED))
        return drop_nested(b);
    busy_enter(b);
    if (!__atomic_load_n(&ev->enabled, __ATOMIC_ACQUIRE)) {
        busy_leave(b);
        return -1;
    }
    if (payload_len > ST_MAX_EVENT_RECORD - ST_EVENT_FIXED_SIZE)
        return drop_full(b);
    len = ST_EVENT_FIXED_SIZE + payload_len;
    head = b->head;
    /* Clear the flag before reading the count: a drop after this sets it again. */
    drops = __atomic_load_n(&b->gate.flag[ST_GATE_DROPS], __ATOMIC_RELAXED) != 0;
    if (drops) {
        gate_set(b, ST_GATE_DROPS, 0);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        drops = __atomic_load_n(&b->pending_drop, __ATOMIC_RELAXED) != 0;
    }
    need = len + (drops ? ST_EVENT_FIXED_SIZE + 8 : 0);
    if (head + need - b->tail_cache > b->size) {
        b->tail_cache = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
        if (head + need - b->tail_cache > b->size && !(b->policy == ST_RING_OVERWRITE && st__ring_evict(b, head, need)))
            return drop_full(b); /* also re-arms the drops flag */
    }
    ts = st__ts_raw();
    if (drops) {
        /* The consumer may have reported the count meanwhile: exchange, not load. */
        count = __atomic_exchange_n(&b->pending_drop, 0, __ATOMIC_RELAXED);
        if (count) {
            uint8_t drop[ST_EVENT_FIXED_SIZE + 8];
            st__fmt_put_dropped(drop, ts, b->tid, count);
            ring_copy_in(b, head, drop, sizeof drop);
            head += sizeof drop;
        }
    }
    if ((head & b->mask) + len > b->size) {
        /* Across the ring's end: build it in scratch, copied in at commit. */
        p = b->scratch;
        b->straddle_at = head;
        b->kick_at = 0;
    } else {
        p = b->ring + (head & b->mask);
    }
    put_header(b, p, ev, ts, payload_len);
    rec->pos = p + ST_EVENT_FIXED_SIZE;
    rec->thread = b;
    b->next_head = head + len;
    st__ring_set_limit(b);
    return 0;
}

int st__simple_begin(struct st__record *rec, const struct st_event *ev, size_t payload_len)
{
    struct st__ring *b = tls_ring;
    uint64_t head, end, ts;
    uint8_t *p;

    if (__builtin_expect((__atomic_load_n(&b->busy, __ATOMIC_RELAXED) | __atomic_load_n(&b->gate.any, __ATOMIC_RELAXED)) != 0,
                         0) ||
        __builtin_expect(payload_len > ST_MAX_EVENT_RECORD - ST_EVENT_FIXED_SIZE, 0))
        return begin_slow(rec, ev, payload_len);
    busy_enter(b);
    if (__builtin_expect(!__atomic_load_n(&ev->enabled, __ATOMIC_ACQUIRE), 0)) {
        busy_leave(b);
        return -1;
    }
    head = b->head;
    end = head + ST_EVENT_FIXED_SIZE + payload_len;
    if (__builtin_expect(end > b->limit, 0)) {
        /* Full, or across the ring's end: the slow path sorts it out. */
        busy_leave(b);
        return begin_slow(rec, ev, payload_len);
    }
    ts = st__ts_raw_fast();
    p = (uint8_t *)(b->lap_base + (uintptr_t)head);
    put_header(b, p, ev, ts, payload_len);
    rec->pos = p + ST_EVENT_FIXED_SIZE;
    rec->thread = b;
    b->next_head = end;
    return 0;
}

/* Commit of a record built in scratch, or one that crosses a wake-up point. */
static ST__COLD void commit_slow(struct st__ring *b)
{
    uint64_t end = b->next_head;
    bool kick = false;

    if (b->straddle_at != UINT64_MAX) {
        ring_copy_in(b, b->straddle_at, b->scratch, end - b->straddle_at);
        b->straddle_at = UINT64_MAX;
    }
    if (end >= b->kick_next) {
        uint32_t shift = st__ring_kick_shift(b);
        b->kick_next = (end & ~(((uint64_t)1 << shift) - 1)) + ((uint64_t)1 << shift);
        kick = true;
    }
    b->kick_at = b->kick_next;
    __atomic_store_n(&b->committed, b->committed + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&b->head, end, __ATOMIC_RELEASE);
    busy_leave(b);
    if (kick)
        st__ring_wake();
}

void st__simple_commit(struct st__record *rec)
{
    struct st__ring *b = rec->thread;
    uint64_t end = b->next_head;

    if (__builtin_expect(end >= b->kick_at, 0)) {
        commit_slow(b);
        return;
    }
    __atomic_store_n(&b->committed, b->committed + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&b->head, end, __ATOMIC_RELEASE);
    busy_leave(b);
}

uint32_t st__strlen(const char *s)
{
    return s ? (uint32_t)strnlen(s, ST_MAX_STRLEN) : 0;
}


void st__ring_thread_notrace(void)
{
    tls_ring = &notrace_ring;
}

void st__ring_forget_thread(void)
{
    tls_ring = &noring;
    pthread_setspecific(exit_key, NULL);
}
