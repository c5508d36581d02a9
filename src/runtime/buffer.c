/*
 * Per-thread ring buffers and the tracing hot path (producer side).
 *
 * Each thread that traces gets, on its first enabled event, one ring of
 * `bufsize` bytes (a power of two; default 1 MiB). The thread is its only
 * producer and the writeout thread its only consumer, so no lock and no
 * atomic read-modify-write is needed on the fast path:
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
 * Invariants:
 *   - 0 <= head - tail <= size; [tail, head) holds whole, committed records.
 *   - head, next_head, tail_cache, straddle_at, committed, busy: written by
 *     the owner thread only. tail, consumed, last_ns: by the writer only.
 *     The two groups sit on separate cache lines.
 *   - head is release-stored after the record's bytes (commit), and loaded
 *     with acquire by the writer; tail is release-stored by the writer after
 *     it copied bytes out, and loaded with acquire by the producer only when
 *     its cached copy says the ring is full.
 *   - pending_drop and dropped change only with atomic adds (on the drop
 *     path, possibly from a signal handler) and exchanges (who reports the
 *     count in a dropped record: the thread before its next event, or the
 *     writer for exited threads and flushes), so each drop is reported once.
 *   - busy is set between st__simple_begin() and st__simple_commit(). An
 *     event traced meanwhile (a signal handler interrupting the record) is
 *     dropped and counted; it never touches the ring.
 *   - Thread exit (key destructor) release-stores exited; afterwards the
 *     thread's TLS points at notrace_buf, so nothing of it touches the
 *     buffer again and the writer may free it once drained. (Events traced
 *     by TLS destructors that run after ours are ignored, uncounted.)
 *
 * Costs on the fast path: the TLS load, the busy guard, an acquire load of
 * ev->enabled (a plain load on x86; it orders the read of ev->id after the
 * registry published it), the clock, one compare against the cached tail,
 * the stores of the record, and at commit three stores (committed, head,
 * busy) to the thread's own cache lines. The writer is woken (sem_post) only when head crosses a
 * multiple of a quarter of the ring.
 */
#include "runtime/buffer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/clock.h"
#include "runtime/internal.h"

/* The calling thread's buffer; NULL before its first event. */
static _Thread_local struct st_buf *tls_buf __attribute__((tls_model("initial-exec")));

/* Set while this thread creates its buffer: a signal handler tracing then drops. */
static _Thread_local int tls_creating __attribute__((tls_model("initial-exec")));

/* Threads that must not trace (the writer, exited threads) point here. */
static struct st_buf notrace_buf = {.busy = 1};

struct st_buf *st__bufs;
struct st_buf_totals st__buf_retired;
static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static size_t buf_size = ST_BUFSIZE_DEFAULT; /* for buffers created from now on */
static bool buf_ever;                        /* a buffer was created (buf_lock) */
static uint64_t orphan_drops;                /* atomic */

void st__buf_lock(void)
{
    pthread_mutex_lock(&buf_lock);
}

void st__buf_unlock(void)
{
    pthread_mutex_unlock(&buf_lock);
}

void st__buf_set_size(size_t size)
{
    __atomic_store_n(&buf_size, size, __ATOMIC_RELAXED);
}

uint64_t st__buf_orphan_drops(void)
{
    return __atomic_load_n(&orphan_drops, __ATOMIC_RELAXED);
}

void st__buf_thread_notrace(void)
{
    tls_buf = &notrace_buf;
}

int st__buf_select_clock(bool tsc)
{
    int ret = 0;

    if (tsc && !st__clock_tsc_available())
        return -ENOTSUP;
    pthread_mutex_lock(&buf_lock);
    if (tsc != st__clock_is_tsc()) {
        if (buf_ever)
            ret = -EBUSY;
        else
            st__clock_set_tsc(tsc);
    }
    pthread_mutex_unlock(&buf_lock);
    return ret;
}

/* Thread exit: hand the buffer to the writer, which drains and frees it. */
static void buf_thread_exit(void *arg)
{
    struct st_buf *b = arg;

    tls_buf = &notrace_buf;
    __atomic_store_n(&b->exited, 1, __ATOMIC_RELEASE);
    st__writer_kick();
}

void st__buf_init(void)
{
    pthread_key_create(&exit_key, buf_thread_exit);
}

void st__buf_free(struct st_buf *b)
{
    free(b->ring);
    free(b);
}

static uint32_t log2_u64(uint64_t v)
{
    return 63u - (uint32_t)__builtin_clzll(v);
}

static struct st_buf *buf_create(void)
{
    size_t size = __atomic_load_n(&buf_size, __ATOMIC_RELAXED);
    size_t bytes = (sizeof(struct st_buf) + 63) & ~(size_t)63;
    struct st_buf *b = aligned_alloc(64, bytes);

    if (!b)
        return NULL;
    memset(b, 0, offsetof(struct st_buf, scratch));
    b->ring = malloc(size);
    if (!b->ring) {
        free(b);
        return NULL;
    }
    b->size = size;
    b->mask = size - 1;
    b->kick_shift = log2_u64(size) - 2;
    b->straddle_at = UINT64_MAX;
    b->tid = (uint32_t)gettid();
    return b;
}

/* Slow paths stay out of line so the fast path needs no saved registers. */
#define COLD __attribute__((noinline, cold))

/*
 * A thread's first event: allocate and register its buffer. It takes locks
 * and mallocs, so it is not async-signal-safe: an event from a signal
 * handler that interrupted this is dropped (and counted) rather than
 * deadlocking on buf_lock; a thread whose very first event is in a signal
 * handler is on its own, as with any malloc in a handler.
 */
static COLD struct st_buf *buf_first_event(void)
{
    int saved = errno;
    struct st_buf *b;

    if (__atomic_load_n(&tls_creating, __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&orphan_drops, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    __atomic_store_n(&tls_creating, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    st__writer_first_event();
    b = buf_create();
    if (b) {
        pthread_mutex_lock(&buf_lock);
        b->next = st__bufs;
        st__bufs = b;
        buf_ever = true;
        pthread_mutex_unlock(&buf_lock);
        pthread_setspecific(exit_key, b);
        tls_buf = b;
    } else {
        __atomic_fetch_add(&orphan_drops, 1, __ATOMIC_RELAXED);
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&tls_creating, 0, __ATOMIC_RELAXED);
    errno = saved;
    return b;
}

void st__buf_fork_child(void)
{
    struct st_buf *b = st__bufs, *next;

    /* The parent writes these records; the child starts empty. */
    for (; b; b = next) {
        next = b->next;
        st__buf_free(b);
    }
    st__bufs = NULL;
    memset(&st__buf_retired, 0, sizeof st__buf_retired);
    orphan_drops = 0;
    tls_buf = NULL;
    pthread_setspecific(exit_key, NULL);
    pthread_mutex_init(&buf_lock, NULL);
}

static inline void busy_enter(struct st_buf *b)
{
    __atomic_store_n(&b->busy, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void busy_leave(struct st_buf *b)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&b->busy, 0, __ATOMIC_RELAXED);
}

static void count_drop(struct st_buf *b)
{
    __atomic_fetch_add(&b->pending_drop, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&b->dropped, 1, __ATOMIC_RELAXED);
}

/* An event while this thread is inside a record (signal handler) or must not trace. */
static COLD int buf_drop_nested(struct st_buf *b)
{
    if (b != &notrace_buf)
        count_drop(b);
    return -1;
}

/* The ring is full (or the record impossible): drop and count the event. */
static COLD int buf_drop(struct st_buf *b)
{
    count_drop(b);
    busy_leave(b);
    return -1;
}

/* Reloads the consumer's tail; true when [head, end) now fits. */
static COLD bool buf_room(struct st_buf *b, uint64_t end)
{
    b->tail_cache = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
    return end - b->tail_cache <= b->size;
}

/* Copies n bytes to ring position pos, wrapping at the end. */
static COLD void ring_copy_in(struct st_buf *b, uint64_t pos, const uint8_t *src, uint64_t n)
{
    uint64_t off = pos & b->mask, first = b->size - off;

    if (first > n)
        first = n;
    memcpy(b->ring + off, src, first);
    memcpy(b->ring, src + first, n - first);
}

/* Places the fixed part of a record of len bytes at head. */
static inline __attribute__((always_inline)) int begin_at(struct st_buf *b, struct st_record *rec, const struct st_event *ev,
                           uint64_t ts, uint64_t head, uint64_t len)
{
    uint64_t off = head & b->mask;
    uint8_t *p = b->ring + off;

    if (__builtin_expect(off + len > b->size, 0)) {
        p = b->scratch;
        b->straddle_at = head;
    }
    st_fmt_put_event_header(p, ev->id, ts, (uint32_t)(len - ST_EVENT_FIXED_SIZE), b->tid);
    rec->pos = p + ST_EVENT_FIXED_SIZE;
    rec->thread = b;
    b->next_head = head + len;
    return 0;
}

/* This thread lost events: put a dropped record in front of this one. */
static COLD int begin_after_drops(struct st_buf *b, struct st_record *rec, const struct st_event *ev,
                             uint64_t ts, uint64_t len)
{
    uint8_t drop[ST_EVENT_FIXED_SIZE + 8];
    uint64_t head = b->head, end = head + sizeof drop + len;
    uint64_t count;

    if (end - b->tail_cache > b->size && !buf_room(b, end))
        return buf_drop(b);
    /* The writer may have reported the count meanwhile: exchange, not load. */
    count = __atomic_exchange_n(&b->pending_drop, 0, __ATOMIC_RELAXED);
    if (count) {
        st_fmt_put_dropped(drop, ts, b->tid, count);
        ring_copy_in(b, head, drop, sizeof drop);
        head += sizeof drop;
    }
    return begin_at(b, rec, ev, ts, head, len);
}

ST_EXPORT int st__simple_begin(struct st_record *rec, const struct st_event *ev, size_t payload_len)
{
    struct st_buf *b = tls_buf;
    uint64_t ts, len, head;

    if (__builtin_expect(b == NULL, 0) && !(b = buf_first_event()))
        return -1;
    if (__builtin_expect(__atomic_load_n(&b->busy, __ATOMIC_RELAXED), 0))
        return buf_drop_nested(b);
    busy_enter(b);
    if (__builtin_expect(!__atomic_load_n(&ev->enabled, __ATOMIC_ACQUIRE), 0)) {
        busy_leave(b);
        return -1;
    }
    if (__builtin_expect(payload_len > ST_MAX_EVENT_RECORD - ST_EVENT_FIXED_SIZE, 0))
        return buf_drop(b);
    ts = st__clock_raw();
    len = ST_EVENT_FIXED_SIZE + payload_len;
    if (__builtin_expect(__atomic_load_n(&b->pending_drop, __ATOMIC_RELAXED) != 0, 0))
        return begin_after_drops(b, rec, ev, ts, len);
    head = b->head;
    if (__builtin_expect(head + len - b->tail_cache > b->size, 0) && !buf_room(b, head + len))
        return buf_drop(b);
    return begin_at(b, rec, ev, ts, head, len);
}

/* A record built in scratch because it straddles the ring's end. */
static COLD void commit_straddle(struct st_buf *b)
{
    ring_copy_in(b, b->straddle_at, b->scratch, b->next_head - b->straddle_at);
    b->straddle_at = UINT64_MAX;
}

ST_EXPORT void st__simple_commit(struct st_record *rec)
{
    struct st_buf *b = rec->thread;
    uint64_t old, head;

    if (__builtin_expect(b->straddle_at != UINT64_MAX, 0))
        commit_straddle(b);
    old = b->head;
    head = b->next_head;
    __atomic_store_n(&b->committed, b->committed + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&b->head, head, __ATOMIC_RELEASE);
    busy_leave(b);
    if (__builtin_expect(((old ^ head) >> b->kick_shift) != 0, 0))
        st__writer_kick();
}

ST_EXPORT uint32_t st__strlen(const char *s)
{
    return s ? (uint32_t)strnlen(s, ST_MAX_STRLEN) : 0;
}
