/*
 * Rings' life: the settings rings are made with, their creation and
 * release, the list every reader walks, fork, and the counters (the design
 * is at the top of ring.c).
 *
 * The list: a first event pushes its new ring onto `fresh` with a CAS (it
 * may run in a signal handler, so it takes no lock); whoever takes the
 * ring lock first moves `fresh` onto st__rings, so every walker sees every
 * ring created so far and no creator waits.
 *
 * Modes: the kind of clock and the policy must be the same for every ring
 * (a consumer cannot merge two kinds of timestamps; a ring made for a
 * consumer cannot change who moves its tail), so they change only while no
 * ring exists. A creator stores `ever` then checks `changing`, a setter the
 * reverse (both seq_cst), so one of them always sees the other: the setter
 * gets -EBUSY, or the creator drops its event.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring_file.h"
#include "ring_internal.h"
#include "timestamp.h"

struct st__ring *st__rings = &st__ring_lost;
struct st__ring_totals st__ring_retired;
struct st__ring_hooks st__ring_hook;
uint32_t st__ring_wake_log2;

static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mode_mutex = PTHREAD_MUTEX_INITIALIZER; /* held from mode_lock to mode_unlock */
static struct st__ring *fresh;                  /* created, not yet on st__rings (CAS push) */
static size_t ring_size = ST_RING_SIZE_DEFAULT; /* for rings created from now on */
static int ever;                               /* a ring was (being) created (seq_cst) */
static int changing;                           /* a mode setter holds the mode lock (seq_cst) */
static uint64_t serial;                        /* rings created (atomic) */
static uint8_t policy = ST_RING_DISCARD;       /* for rings created from now on (under the mode lock) */

/*
 * The consumer is woken each time head crosses a multiple of size >> KICK_DIV_LOG2.
 * An eighth rather than a quarter: the writer is asked for a pass with 7/8
 * of the ring still free, which covers more of its scheduling delay on a
 * busy machine; the extra sem_post (a futex wake when the writer sleeps,
 * ~1-2 us) comes once per 512 KiB of a 4 MiB ring.
 */
#define KICK_DIV_LOG2 3

/* Bytes of the mapping that holds a struct st__ring (not the ring's: ring_map). */
#define STRUCT_MAP ((sizeof(struct st__ring) + 4095) & ~(size_t)4095)

void st__ring_set_hooks(const struct st__ring_hooks *hooks)
{
    __atomic_store_n(&st__ring_hook.first_event, hooks->first_event, __ATOMIC_RELEASE);
    __atomic_store_n(&st__ring_hook.trigger_evicted, hooks->trigger_evicted, __ATOMIC_RELEASE);
    __atomic_store_n(&st__ring_hook.wake, hooks->wake, __ATOMIC_RELEASE);
}

static uint32_t log2_u64(uint64_t v)
{
    return 63u - (uint32_t)__builtin_clzll(v);
}

void st__ring_set_wake_every(size_t bytes)
{
    __atomic_store_n(&st__ring_wake_log2, bytes ? log2_u64(bytes) : 0, __ATOMIC_RELAXED);
}

bool st__ring_cons_locks_free(void)
{
    if (pthread_mutex_trylock(&ring_lock) != 0)
        return false;
    pthread_mutex_unlock(&ring_lock);
    return st__ring_file_lock_free();
}

/* With ring_lock held: moves the rings first events pushed onto st__rings (newest first). */
static void adopt_fresh(void)
{
    struct st__ring *first, *last;

    if (!__atomic_load_n(&fresh, __ATOMIC_RELAXED))
        return;
    /* Taking the whole stack at once: no ABA, pushers only ever CAS onto its top. */
    first = __atomic_exchange_n(&fresh, NULL, __ATOMIC_ACQUIRE);
    for (last = first; last->next; last = last->next)
        ;
    last->next = st__rings;
    st__rings = first;
}

void st__ring_publish(struct st__ring *r)
{
    struct st__ring *top = __atomic_load_n(&fresh, __ATOMIC_RELAXED);

    do
        r->next = top;
    while (!__atomic_compare_exchange_n(&fresh, &top, r, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

void st__ring_lock(void)
{
    pthread_mutex_lock(&ring_lock);
    adopt_fresh();
}

void st__ring_unlock(void)
{
    pthread_mutex_unlock(&ring_lock);
}

/* --- settings -------------------------------------------------------------- */

void st__ring_set_size(size_t size)
{
    __atomic_store_n(&ring_size, size, __ATOMIC_RELAXED);
}

size_t st__ring_size(void)
{
    return __atomic_load_n(&ring_size, __ATOMIC_RELAXED);
}

int st__ring_mode_lock(void)
{
    pthread_mutex_lock(&mode_mutex);
    __atomic_store_n(&changing, 1, __ATOMIC_SEQ_CST);
    return __atomic_load_n(&ever, __ATOMIC_SEQ_CST) ? -EBUSY : 0;
}

/* A creator that sees 0 here also sees the mode just set (seq_cst includes release). */
void st__ring_mode_unlock(void)
{
    __atomic_store_n(&changing, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&mode_mutex);
}

bool st__ring_may_create(void)
{
    __atomic_store_n(&ever, 1, __ATOMIC_SEQ_CST);
    return !__atomic_load_n(&changing, __ATOMIC_SEQ_CST);
}

void st__ring_set_overwrite(size_t size)
{
    __atomic_store_n(&ring_size, size, __ATOMIC_RELAXED);
    __atomic_store_n(&policy, ST_RING_OVERWRITE, __ATOMIC_RELAXED);
}

bool st__ring_overwriting(void)
{
    return __atomic_load_n(&policy, __ATOMIC_RELAXED) == ST_RING_OVERWRITE;
}

/* --- creation and release ---------------------------------------------------- */

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

/*
 * Anonymous memory, from mmap only: malloc is not async-signal-safe, and a
 * first event may run in a signal handler. The struct gets pages of its
 * own; the ring is a mapping of exactly its size, as the kernel aligns
 * those (2 MiB for 4 MiB) and it shares no cache line with another
 * thread's data. Not faulted in ahead: on this kind of machine zeroing the
 * pages is most of a fault's cost, so populating the ring at the first
 * event only moves that cost into one long stall of the thread (about
 * 0.3 ms per MiB) and pins the whole ring even for a thread that traces a
 * handful of events; the first lap pays ~1.2 us per 4 KiB page. No heap
 * fallback when mmap fails (vm.max_map_count): the thread's events then
 * count as lost drops.
 */
static struct st__ring *ring_map(size_t size)
{
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *p;
    struct st__ring *r;

    if (mem == MAP_FAILED)
        return NULL;
    p = mmap(NULL, STRUCT_MAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        munmap(mem, size);
        return NULL;
    }
    r = p; /* zeroed, page-aligned (ST_RING_ALIGN holds) */
    r->ring = mem;
    return r;
}

struct st__ring *st__ring_create(void)
{
    size_t size = __atomic_load_n(&ring_size, __ATOMIC_RELAXED);
    uint32_t tid = (uint32_t)gettid();
    struct st__ring *r = NULL;

    /* crash=DIR: the struct and the ring live in a file (ring_file.c); zeroed already. */
    if (st__ring_file_on())
        r = st__ring_file_create(size, tid);
    if (!r && !(r = ring_map(size)))
        return NULL;
    r->size = size;
    r->mask = size - 1;
    r->kick_shift = log2_u64(size) - KICK_DIV_LOG2;
    r->kick_next = r->kick_at = (uint64_t)1 << st__ring_kick_shift(r);
    r->straddle_at = UINT64_MAX;
    r->tid = tid;
    r->serial = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);
    r->len_pid = len_pid_word(r->tid);
    r->policy = __atomic_load_n(&policy, __ATOMIC_RELAXED);
    st__ring_set_limit(r);
    /* The fast path reads one kind of clock (timestamp.h); the other mode goes slow. */
    if (st__ts_is_tsc() != ST_TS_FAST_IS_TSC)
        r->gate.flag[ST_GATE_SLOW] = 1;
    return r;
}

void st__ring_release(struct st__ring *r, bool remove)
{
    if (r->file_hdr) {
        st__ring_file_release(r, remove);
        return;
    }
    munmap(r->ring, r->size);
    munmap(r, STRUCT_MAP);
}

void st__ring_free(struct st__ring *r)
{
    /* Drained (every record written or counted): its ring file goes too. */
    st__ring_release(r, true);
}

void st__ring_retire(struct st__ring **link)
{
    struct st__ring *r = *link;

    st__ring_retired.committed += __atomic_load_n(&r->committed, __ATOMIC_RELAXED);
    st__ring_retired.dropped += st__ring_dropped(r);
    st__ring_retired.consumed += __atomic_load_n(&r->consumed, __ATOMIC_RELAXED);
    *link = r->next;
}

/* --- counters and fork --------------------------------------------------------- */

/*
 * Each counter is written by one thread only and read relaxed, so the sums
 * are exact per counter but not taken at one instant.
 */
void st__ring_counters(struct st__ring_counters *c)
{
    memset(c, 0, sizeof *c);
    st__ring_lock();
    c->committed = st__ring_retired.committed;
    c->dropped = st__ring_retired.dropped;
    c->consumed = st__ring_retired.consumed;
    for (struct st__ring *r = st__rings; r; r = r->next) {
        if (r == &st__ring_lost)
            continue; /* not a thread: its drops are added below */
        /* tail first: head is later, so head - tail never goes negative */
        uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
        c->consumed += __atomic_load_n(&r->consumed, __ATOMIC_RELAXED);
        c->committed += __atomic_load_n(&r->committed, __ATOMIC_RELAXED);
        c->dropped += st__ring_dropped(r);
        c->buffered += __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) - tail;
        c->capacity += r->size;
        c->threads++;
    }
    st__ring_unlock();
    c->dropped += __atomic_load_n(&st__ring_lost.nested_dropped, __ATOMIC_RELAXED);
}

void st__ring_fork_child(void)
{
    struct st__ring *r, *next;

    /* Also what first events pushed after the prepare handler took ring_lock. */
    adopt_fresh();
    /* The parent writes these records; the child starts empty. */
    for (r = st__rings; r; r = next) {
        next = r->next;
        if (r != &st__ring_lost)
            st__ring_release(r, false); /* a ring file is the parent's: keep it */
    }
    st__ring_file_fork_child();
    /* The parent reports its own lost drops. */
    st__ring_lost.nested_dropped = st__ring_lost.pending_drop = 0;
    st__ring_lost.gate.any = 0;
    st__ring_lost.tail = st__ring_lost.consumed = st__ring_lost.cons_last_ns = 0;
    st__ring_lost.ow_evicted = st__ring_lost.ow_next = 0;
    st__ring_overwrite_fork_child();
    st__ring_lost.next = NULL;
    st__rings = &st__ring_lost;
    memset(&st__ring_retired, 0, sizeof st__ring_retired);
    st__ring_forget_thread();
    pthread_mutex_init(&ring_lock, NULL);
    pthread_mutex_init(&mode_mutex, NULL);
}
