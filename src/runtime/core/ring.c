/*
 * Per-thread ring buffers and the tracing hot path (producer side).
 *
 * Each thread that traces gets, on its first enabled event, one ring of
 * `bufsize` bytes (a power of two; default 4 MiB, see internal.h). The
 * thread is its only producer and the writeout thread its only consumer, so
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
 * u64 id, u64 timestamp (raw clock value, see clock.c), u32 length = 24 +
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
 *             crosses a wake-up point of the writer or was built in
 *             scratch (the slow path then sets kick_at to 0).
 *
 * Invariants:
 *   - 0 <= head - tail <= size; [tail, head) holds whole, committed records.
 *   - limit <= tail_cache + size and limit <= the end of the lap holding
 *     next_head; lap_base + p is the address of position p of that lap.
 *   - Producer fields (struct st_ring up to `tail`) are written by the owner
 *     thread only (the writer only exchanges pending_drop); tail, consumed,
 *     last_ns by the writer only. The consumer's group starts on a 128-byte
 *     boundary (two lines, the unit of the adjacent-line prefetcher), the
 *     struct is allocated 128-aligned and the ring is a page-aligned
 *     mapping of its own, so no line is written by two threads.
 *   - head is release-stored after the record's bytes (commit), and loaded
 *     with acquire by the writer; tail is release-stored by the writer after
 *     it copied bytes out, and loaded with acquire by the producer only in
 *     the slow path.
 *   - Drops: `dropped` counts those of the thread holding busy (ring full,
 *     impossible size); only that thread can be there, so it uses plain
 *     relaxed stores. A signal handler that traces while its thread holds
 *     busy is dropped into `nested_dropped` (atomic add: handlers may nest).
 *     Both also add to pending_drop (atomic) and set the drops gate byte.
 *     pending_drop is taken with an exchange by whoever reports it in a
 *     dropped record (the thread before its next event, or the writer for
 *     exited threads and flushes), so each drop is reported once.
 *   - busy is set between st__simple_begin() and st__simple_commit(). An
 *     event traced meanwhile (a signal handler interrupting the record) is
 *     dropped and counted; it never touches the ring. State is read only
 *     after busy is set, so a handler that ran between the gate test and
 *     the busy store finished its record before we look.
 *   - Thread exit (key destructor) release-stores exited; afterwards the
 *     thread's TLS points at st__ring_lost, so nothing of it touches the
 *     buffer again and the writer may free it once drained. An event the
 *     thread traces after that (a TLS destructor that runs after ours, a
 *     signal handler: TSan delivers deferred signals at the thread's last
 *     libc calls) is counted there instead, see "Lost drops" below.
 *     Flight mode has no writer: there the exit hook itself keeps the
 *     ring, and frees the oldest exited ones beyond a bound (flight_trim).
 *
 * Lost drops. Events that no thread buffer can take (traced after the
 * thread's exit hook, or by a thread that could not get a buffer, or by a
 * signal handler that interrupted its thread's first-event setup) are
 * counted in st__ring_lost: a static buffer with no ring, always busy (so
 * buf_drop_nested() counts into it, from any thread, with atomic adds and
 * byte stores only), never exited and so never freed, on the buffer list
 * from the start. The writer
 * reports its pending count like any thread's, as a dropped record whose
 * pid field is ST_LOST_TID (no thread has that id), in every pass that
 * reports all pending drops (flush, file change, exit); st_stats_get()
 * counts it in dropped. A count added after the writer took it stays
 * pending for the next such pass: nothing is freed under it.
 *
 * First event (buf_first_event), async-signal-safe so that a thread's
 * first event may come from a signal handler: the buffer comes from mmap
 * only (buf_map), and is pushed onto buf_new with a CAS; holders
 * of ring_lock move buf_new onto st__rings (buf_adopt_new) before they walk
 * it, so the writer's list handling is unchanged and no creator waits for
 * a lock. A handler interrupting its own thread's setup drops (tls_creating).
 * Two modes a buffer is made for (clock, flight) may change only while no
 * buffer exists: a creator stores buf_ever then checks mode_changing, a
 * setter the reverse (both seq_cst), so one of them always sees the other.
 * Not async-signal-safe still: crash=DIR (crash.c opens and allocates) and
 * the first event of a fork child that opens its own file (writer.c).
 *
 * Flight mode (flight=SIZE, flight.c): no writer consumes; when a record
 * does not fit, the slow path below (flight_evict) lets the producer move
 * tail itself past its oldest whole records, counting them in fl_evicted
 * (tail and fl_evicted change together inside the seqlock fl_seq, so a
 * snapshot knows the event index of the record at the tail it validated
 * against), and reporting a flight-trigger= record it evicts unscanned.
 * tail then has one writer still, the owner thread, so the invariants
 * above hold with "the writer" read as "the producer" for tail; flight
 * mode is exclusive with a trace file and crash=DIR so that no writer
 * pass ever runs over such a ring. The fast path is unchanged: a full ring
 * already sends it to the slow path through `limit`. Rings of exited
 * threads: see flight_trim.
 *
 * crash=DIR (crash.c, crash.h): the struct and the ring of a thread that
 * starts tracing then live in a file-backed shared mapping instead, with a
 * header that says where head, tail and pending_drop are; nothing on the
 * fast path changes. In that mode the writer publishes tail only once the
 * records are in the trace file (writer.c), so after any death of the
 * process [tail, head) of the file is exactly what the trace file lacks.
 *
 * Costs on the fast path: the TLS load, one test of busy | gate, the busy
 * store, an acquire load of ev->enabled (a plain load on x86; it orders the
 * read of ev->id after the registry published it), one compare against
 * limit, the clock (rdtsc; a dropped event never reads it), the stores of
 * the record; at commit one compare against kick_at and three stores
 * (committed, head, busy) to the thread's own line. The writer is woken
 * (sem_post) only when head crosses a multiple of an eighth of the ring
 * (KICK_DIV_LOG2), in commit's slow path.
 */
#include "ring.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "timestamp.h"
#include "ring_file.h"
#include "flight.h"
#include "rt_internal.h"

/* Threads that have no buffer yet point here: the gate sends them to the slow path. */
static struct st_ring nobuf = {.gate.flag[ST_GATE_SLOW] = 1};

/* Threads that must not trace (the writer, monitor and flight threads) point here: always busy. */
static struct st_ring notrace_buf = {.busy = 1};

/* Exited threads point here, and lost drops are counted here (see "Lost drops" above). */
struct st_ring st__ring_lost = {.busy = 1, .tid = ST_LOST_TID};

/* The calling thread's buffer, or one of the sentinels above. */
static _Thread_local struct st_ring *tls_buf __attribute__((tls_model("initial-exec"))) = &nobuf;

/* Set while this thread creates its buffer: a signal handler tracing then drops. */
static _Thread_local int tls_creating __attribute__((tls_model("initial-exec")));

struct st_ring *st__rings = &st__ring_lost;
struct st_ring_totals st__ring_retired;
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static struct st_ring *buf_new;               /* created, not yet on st__rings (CAS push, ring_lock to take) */
static size_t buf_size = ST_RING_SIZE_DEFAULT; /* for buffers created from now on */
static int buf_ever;                         /* a buffer was (being) created (seq_cst) */
static int mode_changing;                    /* a mode setter runs (seq_cst; set under ring_lock) */
static uint64_t buf_serial;                  /* buffers created (atomic) */
static bool flight_on;                       /* flight mode (ring_lock to set; never cleared) */
static uint64_t fl_exits;                    /* flight: threads exited so far, their order (ring_lock) */
static bool fl_hold;                         /* flight: a snapshot is between copy and accounting (ring_lock) */

/*
 * The writer is woken each time head crosses a multiple of size >> KICK_DIV_LOG2.
 * An eighth rather than a quarter: the writer is asked for a pass with 7/8
 * of the ring still free, which covers more of its scheduling delay on a
 * busy machine; the extra sem_post (a futex wake when the writer sleeps,
 * ~1-2 us) comes once per 512 KiB of a 4 MiB ring.
 */
#define KICK_DIV_LOG2 3

/* With ring_lock held: moves the buffers first events pushed onto st__rings (newest first). */
static void buf_adopt_new(void)
{
    struct st_ring *first, *last;

    if (!__atomic_load_n(&buf_new, __ATOMIC_RELAXED))
        return;
    /* Taking the whole stack at once: no ABA, pushers only ever CAS onto its top. */
    first = __atomic_exchange_n(&buf_new, NULL, __ATOMIC_ACQUIRE);
    for (last = first; last->next; last = last->next)
        ;
    last->next = st__rings;
    st__rings = first;
}

/* A first event publishes its buffer without a lock (it may run in a signal handler). */
static void buf_push(struct st_ring *b)
{
    struct st_ring *top = __atomic_load_n(&buf_new, __ATOMIC_RELAXED);

    do
        b->next = top;
    while (!__atomic_compare_exchange_n(&buf_new, &top, b, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* Every walker of st__rings comes through here, so it sees every buffer created so far. */
void st__ring_lock(void)
{
    pthread_mutex_lock(&ring_lock);
    buf_adopt_new();
}

void st__ring_unlock(void)
{
    pthread_mutex_unlock(&ring_lock);
}

void st__ring_set_size(size_t size)
{
    __atomic_store_n(&buf_size, size, __ATOMIC_RELAXED);
}

/*
 * With ring_lock held: true when no buffer exists or is being created, and
 * then no first event creates one until mode_unlock(): a creator that
 * stored buf_ever before our load is seen here; one that stores it after
 * sees mode_changing and drops its event (buf_first_event).
 */
static bool mode_lock_unused(void)
{
    __atomic_store_n(&mode_changing, 1, __ATOMIC_SEQ_CST);
    return !__atomic_load_n(&buf_ever, __ATOMIC_SEQ_CST);
}

/* A creator that sees 0 here also sees the mode just set (seq_cst includes release). */
static void mode_unlock(void)
{
    __atomic_store_n(&mode_changing, 0, __ATOMIC_SEQ_CST);
}

int st__ring_set_flight(size_t size)
{
    int ret = 0;

    pthread_mutex_lock(&ring_lock);
    if (!mode_lock_unused() && !flight_on)
        ret = -EBUSY;
    else {
        __atomic_store_n(&buf_size, size, __ATOMIC_RELAXED);
        __atomic_store_n(&flight_on, true, __ATOMIC_RELAXED);
    }
    mode_unlock();
    pthread_mutex_unlock(&ring_lock);
    return ret;
}

bool st__ring_flight(void)
{
    return __atomic_load_n(&flight_on, __ATOMIC_RELAXED);
}

uint64_t st__ring_orphan_drops(void)
{
    return __atomic_load_n(&st__ring_lost.nested_dropped, __ATOMIC_RELAXED);
}

void st__ring_thread_notrace(void)
{
    tls_buf = &notrace_buf;
}

int st__ring_select_clock(bool tsc)
{
    int ret = 0;

    if (tsc && !st__ts_tsc_available())
        return -ENOTSUP;
    pthread_mutex_lock(&ring_lock);
    if (tsc != st__ts_is_tsc()) {
        if (!mode_lock_unused())
            ret = -EBUSY;
        else
            st__ts_set_tsc(tsc);
        mode_unlock();
    }
    pthread_mutex_unlock(&ring_lock);
    return ret;
}

static void flight_exit(struct st_ring *b);

/*
 * Thread exit: hand the buffer to the writer, which drains and frees it.
 * From here the thread's events count as lost drops: the writer may free
 * the buffer as soon as it sees exited, so nothing of the thread may touch
 * it afterwards. Flight mode has no writer: the ring is kept, and freed
 * later only if too many exited rings are kept (flight_exit).
 */
static void buf_thread_exit(void *arg)
{
    struct st_ring *b = arg;

    tls_buf = &st__ring_lost;
    /* A handler on this thread that traces from here on sees st__ring_lost. */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (b->flight) {
        flight_exit(b);
        return;
    }
    __atomic_store_n(&b->exited, 1, __ATOMIC_RELEASE);
    st__writer_kick();
}

void st__ring_init(void)
{
    pthread_key_create(&exit_key, buf_thread_exit);
}

/* Bytes of the mapping that holds a struct st_ring (not the ring's: buf_map). */
#define BUF_STRUCT_MAP ((sizeof(struct st_ring) + 4095) & ~(size_t)4095)

/* Frees b; its ring file (crash=DIR) is removed only when remove is set. */
static void buf_release(struct st_ring *b, bool remove)
{
    if (b->crash_hdr) {
        st__ring_file_release(b, remove);
        return;
    }
    munmap(b->ring, b->size);
    munmap(b, BUF_STRUCT_MAP);
}

void st__ring_free(struct st_ring *b)
{
    /* Drained (every record written or counted): its ring file goes too. */
    buf_release(b, true);
}

static uint32_t log2_u64(uint64_t v)
{
    return 63u - (uint32_t)__builtin_clzll(v);
}

/*
 * The length and pid fields of a record header as one u64 (the order the
 * host stores them in), for an empty payload: adding the payload length
 * gives a record's word, since the length never carries into the pid.
 */
static inline uint64_t len_pid_word(uint32_t tid)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (uint64_t)ST_LENGTH_BASE | (uint64_t)tid << 32;
#else
    return (uint64_t)ST_LENGTH_BASE << 32 | (uint64_t)tid;
#endif
}

/* The payload length as it adds to len_pid_word(). */
static inline uint64_t len_pid_add(uint64_t payload_len)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return payload_len;
#else
    return payload_len << 32;
#endif
}

/*
 * A buffer from mmap only: malloc is not async-signal-safe, and a first
 * event may run in a signal handler. The struct gets pages of its own; the
 * ring is a mapping of exactly its size, as the kernel aligns those (2 MiB
 * for 4 MiB) and it shares no cache line with another thread's data. Not
 * faulted in ahead: on this kind of machine zeroing the pages is most of a
 * fault's cost, so populating the ring at the first event only moves that
 * cost into one long stall of the thread (about 0.3 ms per MiB) and pins
 * the whole ring even for a thread that traces a handful of events; the
 * first lap pays ~1.2 us per 4 KiB page. No heap fallback when mmap fails
 * (vm.max_map_count): the thread's events then count as lost drops.
 */
static struct st_ring *buf_map(size_t size)
{
    void *ring = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *p;
    struct st_ring *b;

    if (ring == MAP_FAILED)
        return NULL;
    p = mmap(NULL, BUF_STRUCT_MAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        munmap(ring, size);
        return NULL;
    }
    b = p; /* zeroed, page-aligned (ST_RING_ALIGN holds) */
    b->ring = ring;
    return b;
}

/* Recomputes limit and lap_base for the record that starts at next_head. */
static inline void buf_set_limit(struct st_ring *b)
{
    uint64_t lap = b->next_head & ~b->mask;
    uint64_t room_end = b->tail_cache + b->size, lap_end = lap + b->size;

    b->lap_base = (uintptr_t)b->ring - (uintptr_t)lap;
    b->limit = room_end < lap_end ? room_end : lap_end;
}

static struct st_ring *buf_create(void)
{
    size_t size = __atomic_load_n(&buf_size, __ATOMIC_RELAXED);
    uint32_t tid = (uint32_t)gettid();
    struct st_ring *b = NULL;

    /* crash=DIR: the struct and the ring live in a file (crash.c); zeroed already. */
    if (st__ring_file_on())
        b = st__ring_file_create(size, tid);
    if (!b && !(b = buf_map(size)))
        return NULL;
    b->size = size;
    b->mask = size - 1;
    b->kick_shift = log2_u64(size) - KICK_DIV_LOG2;
    b->kick_next = b->kick_at = (uint64_t)1 << b->kick_shift;
    b->straddle_at = UINT64_MAX;
    b->tid = tid;
    b->serial = __atomic_add_fetch(&buf_serial, 1, __ATOMIC_RELAXED);
    b->len_pid = len_pid_word(b->tid);
    b->flight = __atomic_load_n(&flight_on, __ATOMIC_RELAXED);
    buf_set_limit(b);
    /* The fast path reads one kind of clock (clock.h); the other mode goes slow. */
    if (st__ts_is_tsc() != ST_TS_FAST_IS_TSC)
        b->gate.flag[ST_GATE_SLOW] = 1;
    return b;
}

/* Slow paths stay out of line so the fast path needs no saved registers. */
#define COLD __attribute__((noinline, cold))

static int buf_drop_nested(struct st_ring *b);
static void buf_drop_lost(void);

/*
 * A thread's first event: create and publish its buffer, async-signal-safe
 * (outside crash=DIR and a fork child's file opening, see the top): one
 * mmap, a CAS push, pthread_setspecific (glibc and musl store into the
 * thread descriptor for a key created at init). A signal handler that
 * interrupts this on the same thread drops its event (tls_creating): it
 * must not make a second buffer. While a mode setter runs the event is
 * dropped too (waiting could be waiting for the code we interrupted); the
 * next event tries again.
 */
static COLD struct st_ring *buf_first_event(void)
{
    int saved = errno;
    struct st_ring *b = NULL;

    if (__atomic_load_n(&tls_creating, __ATOMIC_RELAXED)) {
        buf_drop_lost();
        return NULL;
    }
    __atomic_store_n(&tls_creating, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    st__writer_first_event();
    __atomic_store_n(&buf_ever, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&mode_changing, __ATOMIC_SEQ_CST))
        b = buf_create();
    if (b) {
        buf_push(b);
        pthread_setspecific(exit_key, b);
        tls_buf = b;
    } else {
        buf_drop_lost();
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&tls_creating, 0, __ATOMIC_RELAXED);
    errno = saved;
    return b;
}

void st__ring_fork_child(void)
{
    struct st_ring *b, *next;

    /* Also what first events pushed after fork_prepare took ring_lock. */
    buf_adopt_new();
    /* The parent writes these records; the child starts empty. */
    for (b = st__rings; b; b = next) {
        next = b->next;
        if (b != &st__ring_lost)
            buf_release(b, false); /* a ring file is the parent's: keep it */
    }
    st__ring_file_fork_child();
    /* The parent reports its own lost drops. */
    st__ring_lost.nested_dropped = st__ring_lost.pending_drop = 0;
    st__ring_lost.gate.any = 0;
    st__ring_lost.tail = st__ring_lost.consumed = st__ring_lost.last_ns = 0;
    st__ring_lost.fl_evicted = st__ring_lost.fl_next = 0;
    fl_exits = 0;
    fl_hold = false;
    st__ring_lost.next = NULL;
    st__rings = &st__ring_lost;
    memset(&st__ring_retired, 0, sizeof st__ring_retired);
    tls_buf = &nobuf;
    pthread_setspecific(exit_key, NULL);
    pthread_mutex_init(&ring_lock, NULL);
}

static inline void gate_set(struct st_ring *b, int which, uint8_t v)
{
    __atomic_store_n(&b->gate.flag[which], v, __ATOMIC_RELAXED);
}

static inline void busy_enter(struct st_ring *b)
{
    __atomic_store_n(&b->busy, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void busy_leave(struct st_ring *b)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&b->busy, 0, __ATOMIC_RELAXED);
}

/* Marks a drop as pending: the thread's next event reports it. */
static inline void drop_pending(struct st_ring *b)
{
    __atomic_fetch_add(&b->pending_drop, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    gate_set(b, ST_GATE_DROPS, 1);
}

/*
 * An event while this thread is inside a record (signal handler), after
 * its exit hook (b is st__ring_lost), or in a thread that must not trace.
 */
static COLD int buf_drop_nested(struct st_ring *b)
{
    if (b != &notrace_buf) {
        __atomic_fetch_add(&b->nested_dropped, 1, __ATOMIC_RELAXED);
        drop_pending(b);
    }
    return -1;
}

/* An event of a thread without a buffer: a lost drop (flight snapshots count it as lost). */
static COLD void buf_drop_lost(void)
{
    buf_drop_nested(&st__ring_lost);
    if (__atomic_load_n(&flight_on, __ATOMIC_RELAXED))
        __atomic_fetch_add(&st__ring_lost.fl_evicted, 1, __ATOMIC_RELEASE);
}

/* With busy held: the ring is full (or the record impossible): drop and count the event. */
static COLD int buf_drop(struct st_ring *b)
{
    /* Only the busy holder counts here, so a plain increment cannot race. */
    __atomic_store_n(&b->dropped, b->dropped + 1, __ATOMIC_RELAXED);
    drop_pending(b);
    busy_leave(b);
    return -1;
}

/*
 * A release fence, out of line and not instrumented: TSan does not model
 * fences (GCC warns about them under -fsanitize=thread), and the reader
 * it pairs with, st__ring_peek, is not instrumented either.
 */
static __attribute__((noinline, no_sanitize("thread"))) void flight_fence(void)
{
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

/*
 * The record at ring position pos, of the bytes [pos, end) that are whole
 * records: its length, ID, and the events it stands for (returned: a
 * dropped record stands for its count).
 */
static uint64_t ring_record(const struct st_ring *b, uint64_t pos, uint64_t end, uint64_t *len, uint64_t *id)
{
    uint8_t hdr[ST_EVENT_FIXED_SIZE + 8];
    uint64_t off = pos & b->mask, first = b->size - off, n = sizeof hdr;

    if (n > end - pos)
        n = end - pos;
    if (first > n)
        first = n;
    memcpy(hdr, b->ring + off, first);
    memcpy(hdr + first, b->ring, n - first);
    *len = 8 + (uint64_t)st_fmt_get_u32(hdr + ST_EV_OFF_LENGTH);
    *id = st_fmt_get_u64(hdr + ST_EV_OFF_ID);
    return st__ring_record_events(hdr, n);
}

uint64_t st__ring_record_events(const uint8_t *rec, size_t len)
{
    if (len >= ST_EVENT_FIXED_SIZE + 8 && st_fmt_get_u64(rec + ST_EV_OFF_ID) == ST_DROPPED_EVENT_ID)
        return st_fmt_get_u64(rec + ST_EV_OFF_PAYLOAD);
    return 1;
}

/*
 * flight-trigger= seen from flight_evict: records below `from` were
 * examined already; `last` is the position of the last evicted record that
 * is (sure) or may be (the trigger is not resolved yet: an ID in [lo, hi]
 * registered after the flight thread last looked) the trigger.
 */
struct evict_trig {
    struct st_flight_trig t;
    uint64_t from, last;
    uint32_t lo, hi;
};

static void evict_trig_begin(struct st_ring *b, struct evict_trig *tr)
{
    tr->t.on = __atomic_load_n(&st__flight_trig.on, __ATOMIC_ACQUIRE);
    tr->t.id = __atomic_load_n(&st__flight_trig.id, __ATOMIC_ACQUIRE);
    tr->t.known = __atomic_load_n(&st__flight_trig.known, __ATOMIC_ACQUIRE);
    tr->from = tr->t.on ? __atomic_load_n(&b->fl_scanned, __ATOMIC_RELAXED) : UINT64_MAX;
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
 * The producer claims what it evicts, the flight thread's scan what it
 * walked (buffer.h): each record is claimed once, so a trigger is reported
 * by exactly one of them.
 */
bool st__ring_trig_claim(struct st_ring *b, uint64_t end, uint64_t last)
{
    uint64_t cur = __atomic_load_n(&b->fl_scanned, __ATOMIC_RELAXED);

    while (cur < end)
        if (__atomic_compare_exchange_n(&b->fl_scanned, &cur, end, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return last >= cur;
    return false;
}

/*
 * Flight mode, ring full: the producer (who alone moves tail in this mode:
 * no writer thread runs, see flight.c) advances tail past whole records,
 * oldest first, until `need` bytes (and a sixteenth of the ring more, see
 * below) fit after head. The events lost are added to fl_evicted (a
 * dropped record that is overwritten loses the events it reported: its
 * count), so fl_evicted is always the event index of the record at tail;
 * both change inside a seqlock (fl_seq odd meanwhile) so that a snapshot
 * reads them as a pair. An evicted record no scan examined yet that is the
 * flight-trigger= event requests the snapshot here (the scan would miss
 * it). Returns false when need can never fit (then the caller drops).
 */
static bool flight_evict(struct st_ring *b, uint64_t head, uint64_t need)
{
    uint64_t tail = b->tail, lost = 0, goal, seq = b->fl_seq;
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
    __atomic_store_n(&b->fl_seq, seq + 1, __ATOMIC_RELAXED);
    flight_fence();
    __atomic_store_n(&b->fl_evicted, b->fl_evicted + lost, __ATOMIC_RELAXED);
    __atomic_store_n(&b->tail, tail, __ATOMIC_RELEASE);
    __atomic_store_n(&b->fl_seq, seq + 2, __ATOMIC_RELEASE);
    /*
     * The record about to be written overwrites what lay below the new
     * tail. A reader (st__ring_peek) copies bytes, then fences and re-reads
     * tail: this fence pairs with that one, so a reader that copied any of
     * the new bytes also sees the tail that excludes them.
     */
    flight_fence();
    b->tail_cache = tail;
    if (tr.last != UINT64_MAX && st__ring_trig_claim(b, tail, tr.last))
        st__flight_trigger_evicted(tr.t.id != UINT64_MAX, tr.lo, tr.hi);
    return true;
}

/* Copies n bytes to ring position pos, wrapping at the end. */
static void ring_copy_in(struct st_ring *b, uint64_t pos, const uint8_t *src, uint64_t n)
{
    uint64_t off = pos & b->mask, first = b->size - off;

    if (first > n)
        first = n;
    memcpy(b->ring + off, src, first);
    memcpy(b->ring, src + first, n - first);
}

/* Writes a record header at p. */
static inline __attribute__((always_inline)) void put_header(const struct st_ring *b, uint8_t *p,
                                                             const struct st_event *ev, uint64_t ts,
                                                             uint64_t payload_len)
{
    st_fmt_put_u64(p + ST_EV_OFF_TYPE, ST_RECORD_TYPE_EVENT);
    st_fmt_put_u64(p + ST_EV_OFF_ID, ev->id);
    st_fmt_put_u64(p + ST_EV_OFF_TIMESTAMP, ts);
    st_fmt_put_u64(p + ST_EV_OFF_LENGTH, b->len_pid + len_pid_add(payload_len));
}

/*
 * Everything st__simple_begin() does not do inline, from the start: the
 * first event, nesting, oversized payloads, reporting drops, reloading tail,
 * records across the ring's end, and clock_gettime mode.
 */
static COLD int begin_slow(struct st_record *rec, const struct st_event *ev, size_t payload_len)
{
    struct st_ring *b = tls_buf;
    uint64_t len, need, head, ts, count;
    bool drops;
    uint8_t *p;

    if (b == &nobuf && !(b = buf_first_event()))
        return -1;
    if (__atomic_load_n(&b->busy, __ATOMIC_RELAXED))
        return buf_drop_nested(b);
    busy_enter(b);
    if (!__atomic_load_n(&ev->enabled, __ATOMIC_ACQUIRE)) {
        busy_leave(b);
        return -1;
    }
    if (payload_len > ST_MAX_EVENT_RECORD - ST_EVENT_FIXED_SIZE)
        return buf_drop(b);
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
        if (head + need - b->tail_cache > b->size && !(b->flight && flight_evict(b, head, need)))
            return buf_drop(b); /* also re-arms the drops flag */
    }
    ts = st__ts_raw();
    if (drops) {
        /* The writer may have reported the count meanwhile: exchange, not load. */
        count = __atomic_exchange_n(&b->pending_drop, 0, __ATOMIC_RELAXED);
        if (count) {
            uint8_t drop[ST_EVENT_FIXED_SIZE + 8];
            st_fmt_put_dropped(drop, ts, b->tid, count);
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
    buf_set_limit(b);
    return 0;
}

ST_EXPORT int st__simple_begin(struct st_record *rec, const struct st_event *ev, size_t payload_len)
{
    struct st_ring *b = tls_buf;
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
static COLD void commit_slow(struct st_ring *b)
{
    uint64_t end = b->next_head;
    bool kick = false;

    if (b->straddle_at != UINT64_MAX) {
        ring_copy_in(b, b->straddle_at, b->scratch, end - b->straddle_at);
        b->straddle_at = UINT64_MAX;
    }
    if (end >= b->kick_next) {
        b->kick_next = (end & ~(((uint64_t)1 << b->kick_shift) - 1)) + ((uint64_t)1 << b->kick_shift);
        kick = true;
    }
    b->kick_at = b->kick_next;
    __atomic_store_n(&b->committed, b->committed + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&b->head, end, __ATOMIC_RELEASE);
    busy_leave(b);
    if (kick)
        st__writer_kick();
}

ST_EXPORT void st__simple_commit(struct st_record *rec)
{
    struct st_ring *b = rec->thread;
    uint64_t end = b->next_head;

    if (__builtin_expect(end >= b->kick_at, 0)) {
        commit_slow(b);
        return;
    }
    __atomic_store_n(&b->committed, b->committed + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&b->head, end, __ATOMIC_RELEASE);
    busy_leave(b);
}

ST_EXPORT uint32_t st__strlen(const char *s)
{
    return s ? (uint32_t)strnlen(s, ST_MAX_STRLEN) : 0;
}

/*
 * Exited rings in flight mode. A thread's ring outlives it (its last
 * records are often the interesting ones), but with thread churn keeping
 * them all grows without bound, so at most max(ST_FLIGHT_KEEP_EXITED,
 * threads still running) are kept and the oldest-exited beyond that are
 * freed. Everything here runs under ring_lock, which every reader of a ring
 * holds or revalidates under (snapshots, st__ring_peek's serial check, the
 * trigger scan, fork_prepare): no lock is added to the tracing path. The
 * thread's own exit hook does the freeing, unless a snapshot holds
 * (st__ring_flight_hold): it copied rings but has not yet recorded in
 * fl_next what it holds, so freeing now would count those events lost
 * too; its release trims instead.
 */

/* Events of b's thread so far: evicted, in the ring, and drops not yet written into it. */
static uint64_t buf_events_total(const struct st_ring *b)
{
    uint64_t n = b->fl_evicted + __atomic_load_n(&b->pending_drop, __ATOMIC_RELAXED);

    for (uint64_t pos = b->tail, len, id; pos < b->head; pos += len)
        n += ring_record(b, pos, b->head, &len, &id);
    return n;
}

/*
 * With ring_lock held, *pp an exited flight ring: unlinks and frees it. Its
 * events no snapshot held or counted become lost drops (the thread is gone
 * and its id may already be another thread's), reported by the next one.
 */
static void flight_retire(struct st_ring **pp)
{
    struct st_ring *b = *pp;
    uint64_t total = buf_events_total(b);

    if (total > b->fl_next)
        __atomic_fetch_add(&st__ring_lost.fl_evicted, total - b->fl_next, __ATOMIC_RELAXED);
    st__ring_retired.committed += __atomic_load_n(&b->committed, __ATOMIC_RELAXED);
    st__ring_retired.dropped += st__ring_dropped(b);
    *pp = b->next;
    buf_release(b, true);
}

/* With ring_lock held: frees the oldest-exited flight rings beyond the bound. */
static void flight_trim(void)
{
    for (;;) {
        struct st_ring **oldest = NULL;
        uint64_t live = 0, exited = 0;
        for (struct st_ring **pp = &st__rings; *pp; pp = &(*pp)->next) {
            if (*pp == &st__ring_lost)
                continue;
            if (!(*pp)->fl_exit_seq) {
                live++;
                continue;
            }
            exited++;
            if (!oldest || (*pp)->fl_exit_seq < (*oldest)->fl_exit_seq)
                oldest = pp;
        }
        if (exited <= (live > ST_FLIGHT_KEEP_EXITED ? live : ST_FLIGHT_KEEP_EXITED))
            return;
        flight_retire(oldest);
    }
}

/*
 * A flight thread's exit hook (the thread no longer touches b: tls_buf is
 * st__ring_lost). ring_lock orders its last records before any reader here.
 */
static void flight_exit(struct st_ring *b)
{
    st__ring_lock();
    b->fl_exit_seq = ++fl_exits;
    __atomic_store_n(&b->exited, 1, __ATOMIC_RELEASE);
    if (!fl_hold)
        flight_trim();
    st__ring_unlock();
}

void st__ring_flight_hold(void)
{
    st__ring_lock();
    fl_hold = true;
    st__ring_unlock();
}

void st__ring_flight_release(void)
{
    st__ring_lock();
    fl_hold = false;
    flight_trim();
    st__ring_unlock();
}

/*
 * tail and the event index of the record there (fl_evicted), read as one
 * pair: flight_evict changes both inside the seqlock fl_seq (always 0 for a
 * writer's ring, whose index is then meaningless). Retries while the owner
 * is inside it, which is a few stores unless it was preempted there.
 */
__attribute__((no_sanitize("thread"))) static uint64_t buf_tail_index(const struct st_ring *b, uint64_t *index)
{
    for (;;) {
        uint64_t s0 = __atomic_load_n(&b->fl_seq, __ATOMIC_ACQUIRE), t, e;
        if (!(s0 & 1)) {
            t = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
            e = __atomic_load_n(&b->fl_evicted, __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&b->fl_seq, __ATOMIC_RELAXED) == s0) {
                *index = e;
                return t;
            }
        }
        sched_yield();
    }
}

/*
 * Read-only view for the monitor's `info trace` (seqlock-style, see
 * buffer.h). The list is walked under ring_lock, one chunk of one buffer at
 * a time, so a thread starting to trace never waits for more than a 64 KiB
 * copy and the writer may free a buffer between chunks (we then notice it
 * is gone and drop what we copied: those records were written; in flight
 * mode an exiting thread may free an exited ring, see flight_trim). Ring bytes
 * are read while the producer may be overwriting the part below the
 * consumer's tail: that race is intended (the bytes are discarded), so the
 * loads are volatile and the function is not instrumented by TSan.
 */
/* One buffer as st__ring_peek lists it. */
struct peek {
    struct st_ring *b;
    const uint8_t *ring;
    uint64_t size, serial;
    uint32_t tid;
};

/*
 * Copies [tail, head) of one buffer to out (at most room bytes) and keeps
 * its whole records from the tail re-read afterwards; the rest counts in
 * *lost. Fills *pi (off relative to out). Returns the bytes kept.
 */
__attribute__((no_sanitize("thread"))) static size_t peek_one(const struct peek *pk, uint8_t *out, size_t room,
                                                              uint64_t *lost, struct st_ring_peeked *pi)
{
    enum { CHUNK = 64 << 10 };
    uint64_t t0 = 0, h0 = 0, t1 = 0, end = 0, pos = 0, keep, index = 0;
    bool first = true, alive = true;

    *pi = (struct st_ring_peeked){.b = pk->b, .serial = pk->serial, .tid = pk->tid};
    /* One locked step per chunk: the first also reads [t0, h0), the last re-reads tail. */
    while (alive && (first || pos < end)) {
        struct st_ring *b;
        st__ring_lock();
        for (b = st__rings; b; b = b->next)
            if (b == pk->b && b->serial == pk->serial) /* the same buffer, not a new one in its mapping */
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
                t1 = buf_tail_index(b, &index);
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
        uint64_t len = 8 + (uint64_t)st_fmt_get_u32(out + (keep - t0) + ST_EV_OFF_LENGTH);
        if (len < ST_EVENT_FIXED_SIZE || len > ST_SCRATCH_SIZE || len > end - keep)
            break;
        keep += len;
    }
    *lost += h0 - keep;
    memmove(out, out + (t1 - t0), keep - t1);
    pi->len = keep - t1;
    return keep - t1;
}

/* st__ring_peek, and the per-buffer account when info is not NULL. */
static size_t buf_peek(uint8_t *dst, size_t cap, uint64_t *left, struct st_ring_peeked **info, size_t *ninfo)
{
    struct peek *list = NULL;
    struct st_ring_peeked *pi = NULL, one;
    size_t n = 0, max = 0, used = 0;
    uint64_t lost = 0;

    /* Snapshot the list (plus room for threads that start meanwhile). */
    st__ring_lock();
    for (struct st_ring *b = st__rings; b; b = b->next)
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
    for (struct st_ring *b = st__rings; b && n < max; b = b->next)
        list[n++] = (struct peek){b, b->ring, b->size, b->serial, b->tid};
    st__ring_unlock();

    for (size_t i = 0; i < n; i++) {
        struct st_ring_peeked *p = pi ? &pi[i] : &one;
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

size_t st__ring_peek(uint8_t *dst, size_t cap, uint64_t *left)
{
    return buf_peek(dst, cap, left, NULL, NULL);
}

size_t st__ring_peek_flight(uint8_t *dst, size_t cap, struct st_ring_peeked **info, size_t *ninfo)
{
    return buf_peek(dst, cap, NULL, info, ninfo);
}
