/*
 * Flight-recorder mode (config key flight=SIZE): every thread keeps only its
 * newest records in a ring of SIZE bytes and nothing is written until a
 * snapshot is asked for (st_trace_snapshot, the monitor's `trace-file
 * snapshot [PATH]`, or the signal chosen with flight-signal=SIG).
 *
 * Ownership of tail. Normally the writeout thread alone moves a ring's
 * tail. In flight mode no writer consumes: when the ring is full the
 * producer itself advances tail past its oldest whole records
 * (flight_evict in buffer.c, in the slow path the fast path already takes
 * when a record would pass `limit`, so the normal hot path is unchanged)
 * and counts them in fl_evicted. For that to be safe nothing else may move
 * tail, hence flight mode excludes a trace file and crash=DIR (-EINVAL:
 * both would run the writer over the same rings), and must be chosen
 * before any thread traced (-EBUSY: existing rings belong to the writer).
 * It cannot be turned off again.
 *
 * A snapshot copies every ring with st__ring_peek_flight (which validates its
 * copy against tail re-read afterwards, so a producer overwriting meanwhile
 * only shortens what is kept, never tears a record), then writes an
 * ordinary v4 file: header, every mapping, one dropped record per thread
 * whose count is not 0 (v4 readers reject 0), then the records of all
 * threads merged by time, timestamps converted to CLOCK_MONOTONIC ns and
 * kept non-decreasing per thread, as the writer does. The rings are left
 * as they are: a later snapshot may contain the same records again.
 *
 * Dropped counts, exact. Number a thread's events 0, 1, 2, ... in the
 * order they enter its ring, a dropped record standing for as many as it
 * counts (nested and oversized drops). fl_evicted is the number of events
 * evicted so far, which in flight mode (nothing else consumes) is the
 * index of the record at tail; the producer changes both inside a seqlock,
 * so the copy's validating tail comes with the index of the first record
 * kept. fl_next is the first event that no snapshot held or counted. The
 * dropped count of snapshot k for a thread is then exactly the events in
 * [fl_next, first held) (none when the copy overlaps the previous one:
 * records held twice are simply present twice; when nothing of the ring
 * survived the copy, the events below its tail), and fl_next moves past
 * what k holds once it is written (a failed snapshot moves nothing). Read
 * in order, a thread's snapshots and their counts hold or count each of
 * its events exactly once. Drops not yet written into the ring (reported
 * before the thread's next record) count in a later snapshot. Lost drops
 * (no buffer, after the exit hook) are counted on st__ring_lost as before,
 * with pid ST_LOST_TID, and so are the events of exited rings freed before
 * a snapshot held them (buffer.c, flight_trim: the thread is gone and its
 * id may be reused). While a snapshot is between its copy and that commit
 * it holds off such freeing (st__ring_flight_hold), which would count what
 * it holds again.
 *
 * The signal: its handler only sets a flag and posts a semaphore
 * (async-signal-safe); the flight thread (started for flight-signal= or
 * flight-trigger=, never traces) waits on it and takes the snapshot under
 * the default name. flight-trigger=EVENT: the same thread scans, 100 times
 * a second, the headers of the records committed since its last scan
 * (trig_scan) and takes a snapshot when one is that event, so the hot path
 * of every event, the trigger included, is unchanged. A trigger record
 * overwritten before a scan reached it is not missed: the producer's
 * eviction path (slow path) checks what it evicts that no scan examined
 * (fl_scanned, claimed by CAS by both, so each record is reported once)
 * and posts the same semaphore; that snapshot lacks the trigger record
 * itself. Before the trigger's group registered its ID is unknown: the
 * producer then reports events registered since the thread last looked as
 * suspects, and the thread snapshots if the trigger resolves to one.
 * Snapshots are serialised by ctl_lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "write_all.h"
#include "trace_format.h"
#include "ring.h"
#include "timestamp.h"
#include "flight.h"
#include "rt_internal.h"

static struct st_clock_conv conv; /* ctl_lock */
static unsigned snap_seq;         /* default names; ctl_lock */
static sem_t sig_sem;
static int sig_pending; /* atomic (lock-free: safe in the handler) */
static int sig_no;                /* flight-signal= installed, or 0 (ctl_lock) */
static bool thread_up;            /* the flight thread runs (ctl_lock) */
static char trig_name[256];       /* flight-trigger=, or "" (set once, before the thread reads it) */
/* Written by set_trigger before the thread starts, then by the flight thread only; producers read it. */
struct st_flight_trig st__flight_trig = {.id = UINT64_MAX};
static int trig_hit;              /* a producer evicted an unexamined trigger record (atomic) */
/* Unresolved-trigger suspects a producer evicted: lo << 32 | hi, TRIG_NONE when empty (atomic). */
#define TRIG_NONE ((uint64_t)UINT32_MAX << 32)
static uint64_t trig_suspect = TRIG_NONE;

/* One record of the copy: where it is, its thread and its raw time. */
struct rec {
    size_t off;
    uint64_t key;
    uint32_t tid;
    uint32_t seq; /* position in the copy: ties keep each thread's order */
};

static int rec_cmp(const void *pa, const void *pb)
{
    const struct rec *a = pa, *b = pb;

    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* A thread of the snapshot: its dropped count and last timestamp written. */
struct thr {
    uint32_t tid;
    uint64_t lost, last_ns;
};

static struct thr *thr_find(struct thr *t, size_t n, uint32_t tid)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].tid == tid)
            return &t[i];
    return NULL;
}

/* Adds to tid's dropped count (two rings share a tid when an exited thread's id was reused). */
static void thr_add(struct thr *t, size_t *n, uint32_t tid, uint64_t lost)
{
    struct thr *e = thr_find(t, *n, tid);

    if (!e) {
        e = &t[(*n)++];
        *e = (struct thr){.tid = tid};
    }
    e->lost += lost;
}

/* Events the records of copy[off, off + len) stand for. */
static uint64_t copy_events(const uint8_t *copy, size_t off, size_t len)
{
    uint64_t n = 0;

    for (size_t end = off + len; off + ST_EVENT_FIXED_SIZE <= end; off += 8 + st_fmt_get_u32(copy + off + ST_EV_OFF_LENGTH))
        n += st__ring_record_events(copy + off, end - off);
    return n;
}

/*
 * The dropped counts of this snapshot (see the top): per ring, the events
 * before the first one it holds (before its tail when it holds none) that
 * no earlier snapshot held or counted; then the lost drops, and freed
 * rings' events, since the previous snapshot (*lost_ev: the count to
 * remember). Rings are not freed meanwhile (st__ring_flight_hold), so every
 * pi->b is alive. thr has room for npi + 1 entries.
 */
static size_t account(const struct st_ring_peeked *pi, size_t npi, struct thr *thr, uint64_t *lost_ev)
{
    size_t nthr = 0;

    st__ring_lock();
    for (size_t i = 0; i < npi; i++) {
        const struct st_ring *b = pi[i].b;
        if (!pi[i].known || b == &st__ring_lost)
            continue; /* not copied (no room, empty): nothing held, nothing known */
        thr_add(thr, &nthr, pi[i].tid, pi[i].first > b->fl_next ? pi[i].first - b->fl_next : 0);
    }
    *lost_ev = __atomic_load_n(&st__ring_lost.fl_evicted, __ATOMIC_RELAXED);
    thr_add(thr, &nthr, ST_LOST_TID, *lost_ev - st__ring_lost.fl_next);
    st__ring_unlock();
    return nthr;
}

/*
 * Once the snapshot is written: what it holds and counted is done, the
 * next one counts from there (a failed snapshot leaves fl_next, so its
 * counts go to the next one).
 */
static void account_commit(const uint8_t *copy, const struct st_ring_peeked *pi, size_t npi, uint64_t lost_ev)
{
    st__ring_lock();
    for (size_t i = 0; i < npi; i++) {
        struct st_ring *b = pi[i].b;
        uint64_t end;
        if (!pi[i].known || b == &st__ring_lost)
            continue;
        end = pi[i].first + copy_events(copy, pi[i].off, pi[i].len);
        if (end > b->fl_next)
            b->fl_next = end;
    }
    st__ring_lost.fl_next = lost_ev;
    st__ring_unlock();
}

/* Appends n bytes to a growing buffer; false on ENOMEM. */
struct out {
    uint8_t *p;
    size_t len, cap;
};

static uint8_t *out_room(struct out *o, size_t n)
{
    if (o->cap - o->len < n) {
        size_t cap = o->cap ? o->cap : 1 << 16;
        uint8_t *p;
        while (cap - o->len < n)
            cap *= 2;
        p = realloc(o->p, cap);
        if (!p)
            return NULL;
        o->p = p;
        o->cap = cap;
    }
    return o->p + o->len;
}

/* With ctl_lock held: builds the snapshot file at path. */
static int snapshot_locked(const char *path, char *err, size_t errlen)
{
    size_t cap = 0, used, nrec = 0, nthr = 0, npi = 0, i;
    uint8_t *copy = NULL;
    struct st_ring_peeked *pi = NULL;
    struct rec *recs = NULL;
    struct thr *thr = NULL;
    struct out o = {0};
    uint64_t first_ns = 0, lost_ev = 0;
    int ret = -ENOMEM, fd;
    bool held = false;

    /* Room for every ring whole: then nothing is cut for lack of space. */
    st__ring_lock();
    for (struct st_ring *b = st__rings; b; b = b->next)
        cap += b->size;
    st__ring_unlock();
    copy = malloc(cap ? cap : 1);
    if (!copy)
        goto out;
    /* No exited ring is freed from the copy until its account is committed: it would count what we hold. */
    st__ring_flight_hold();
    held = true;
    used = st__ring_peek_flight(copy, cap, &pi, &npi);
    if (!pi || !(thr = calloc(npi + 1, sizeof *thr)))
        goto out; /* without the account, the next snapshot's counts would be wrong: fail this one */
    nthr = account(pi, npi, thr, &lost_ev);

    for (size_t off = 0; off + ST_EVENT_FIXED_SIZE <= used; off += 8 + st_fmt_get_u32(copy + off + ST_EV_OFF_LENGTH))
        nrec++;
    recs = malloc((nrec ? nrec : 1) * sizeof *recs);
    if (!recs)
        goto out;
    nrec = 0;
    for (size_t off = 0; off + ST_EVENT_FIXED_SIZE <= used; off += 8 + st_fmt_get_u32(copy + off + ST_EV_OFF_LENGTH)) {
        recs[nrec] = (struct rec){off, st_fmt_get_u64(copy + off + ST_EV_OFF_TIMESTAMP),
                                  st_fmt_get_u32(copy + off + ST_EV_OFF_PID), (uint32_t)nrec};
        nrec++;
    }
    qsort(recs, nrec, sizeof *recs, rec_cmp);
    st__ts_conv_update_past(&conv, nrec ? recs[nrec - 1].key : 0);
    first_ns = nrec ? st__clock_conv(&conv, recs[0].key) : st__clock_mono_ns();

    /* Header, every mapping, a dropped record per thread, the records. */
    {
        uint32_t count = st__reg_count(), id = 0;
        const char *names[64];
        uint8_t *p = out_room(&o, 64);
        if (!p)
            goto out;
        o.len += st_fmt_put_header(p);
        while (id < count) {
            uint32_t n = st__reg_names(id, names, count - id < 64 ? count - id : 64);
            if (n == 0)
                break;
            for (uint32_t k = 0; k < n; k++) {
                size_t len = strlen(names[k]);
                if (!(p = out_room(&o, st_fmt_mapping_size(len))))
                    goto out;
                o.len += st_fmt_put_mapping(p, id + k, names[k], (uint32_t)len);
            }
            id += n;
        }
    }
    for (i = 0; i < nthr; i++) {
        uint8_t *p = out_room(&o, ST_EVENT_FIXED_SIZE + 8);
        thr[i].last_ns = first_ns;
        if (!thr[i].lost)
            continue; /* v4 readers reject a count of 0: no record means none lost */
        if (!p)
            goto out;
        o.len += st_fmt_put_dropped(p, first_ns, thr[i].tid, thr[i].lost);
    }
    for (i = 0; i < nrec; i++) {
        const uint8_t *src = copy + recs[i].off;
        size_t len = 8 + st_fmt_get_u32(src + ST_EV_OFF_LENGTH);
        struct thr *t = thr_find(thr, nthr, recs[i].tid);
        uint64_t ns = st__clock_conv(&conv, recs[i].key);
        uint8_t *p = out_room(&o, len);
        if (!p)
            goto out;
        if (t) {
            if (ns < t->last_ns)
                ns = t->last_ns;
            t->last_ns = ns;
        }
        memcpy(p, src, len);
        st_fmt_put_u64(p + ST_EV_OFF_TIMESTAMP, ns);
        o.len += len;
    }

    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        ret = -errno;
        st__errmsg(err, errlen, "%s: %s", path, st_strerror(ret));
        goto out;
    }
    ret = st__write_all(fd, o.p, o.len);
    if (close(fd) < 0 && ret == 0)
        ret = -errno;
    if (ret < 0) {
        st__errmsg(err, errlen, "%s: %s", path, st_strerror(ret));
        unlink(path); /* no half snapshot under that name */
    }
out:
    if (held) {
        if (ret == 0)
            account_commit(copy, pi, npi, lost_ev);
        st__ring_flight_release(); /* frees exited rings beyond the bound, counting what we did not hold */
    }
    if (ret == -ENOMEM)
        st__errmsg(err, errlen, "%s", st_strerror(ret));
    free(o.p);
    free(recs);
    free(copy);
    free(thr);
    free(pi);
    return ret;
}

int st__flight_snapshot(const char *path, char *err, size_t errlen)
{
    char def[64];
    int ret;

    if (err && errlen)
        err[0] = '\0';
    st__ctl_lock();
    if (!st__ring_flight()) {
        st__errmsg(err, errlen, "not in flight mode (flight=SIZE)");
        st__ctl_unlock();
        return -EINVAL;
    }
    if (!path) {
        snprintf(def, sizeof def, "snapshot-%ld-%u", (long)getpid(), snap_seq++);
        path = def;
    } else if (!*path) {
        st__errmsg(err, errlen, "empty snapshot path");
        st__ctl_unlock();
        return -EINVAL;
    }
    ret = snapshot_locked(path, err, errlen);
    st__ctl_unlock();
    return ret;
}

ST_EXPORT int st_trace_snapshot(const char *path)
{
    st__init();
    return st__flight_snapshot(path, NULL, 0);
}

/* --- flight-signal= ---------------------------------------------------------- */

static void on_signal(int sig)
{
    int saved = errno;

    (void)sig;
    __atomic_store_n(&sig_pending, 1, __ATOMIC_RELAXED);
    sem_post(&sig_sem);
    errno = saved;
}

/*
 * The trigger event's ID, looked up by name until its group registered
 * (before the thread starts, then by the flight thread only). While not
 * found, `known` tells the producers which IDs were looked at: an event
 * registered later may be the trigger (a suspect, st__flight_trigger_evicted).
 */
static bool trig_resolve(void)
{
    uint32_t count = st__reg_count(), id = 0;
    const char *names[64];

    if (st__flight_trig.id != UINT64_MAX)
        return true;
    while (id < count) {
        uint32_t n = st__reg_names(id, names, count - id < 64 ? count - id : 64);
        if (n == 0)
            break;
        for (uint32_t k = 0; k < n; k++)
            if (strcmp(names[k], trig_name) == 0) {
                __atomic_store_n(&st__flight_trig.id, (uint64_t)(id + k), __ATOMIC_RELEASE);
                return true;
            }
        id += n;
    }
    __atomic_store_n(&st__flight_trig.known, (uint64_t)id, __ATOMIC_RELEASE);
    return false;
}

void st__flight_trigger_evicted(bool sure, uint32_t lo, uint32_t hi)
{
    int saved = errno;

    if (sure) {
        __atomic_store_n(&trig_hit, 1, __ATOMIC_RELAXED);
    } else {
        uint64_t cur = __atomic_load_n(&trig_suspect, __ATOMIC_RELAXED), next;
        do {
            uint32_t l = (uint32_t)(cur >> 32), h = (uint32_t)cur;
            next = (uint64_t)(lo < l ? lo : l) << 32 | (hi > h ? hi : h);
        } while (!__atomic_compare_exchange_n(&trig_suspect, &cur, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    }
    sem_post(&sig_sem);
    errno = saved;
}

/*
 * Producers' reports: a trigger evicted before a scan saw it, or an evicted
 * suspect that turns out to have the trigger's ID now that it resolves (IDs
 * of suspects were registered already, so one that does not resolve now
 * was not the trigger). A suspect range may also hold other new events: a
 * rare extra snapshot, never a missed one.
 */
static bool trig_reported(void)
{
    uint64_t sus = __atomic_exchange_n(&trig_suspect, TRIG_NONE, __ATOMIC_RELAXED);
    bool hit = __atomic_exchange_n(&trig_hit, 0, __ATOMIC_RELAXED) != 0;

    if (sus != TRIG_NONE && trig_resolve())
        hit |= st__flight_trig.id >= (sus >> 32) && st__flight_trig.id <= (uint32_t)sus;
    return hit;
}

/*
 * flight-trigger=: reads the headers of the records committed since the
 * last scan, in place, while the producers go on (so the hot path pays
 * nothing). Like st__ring_peek: tail is re-read after the walk, and a walk
 * that started below it (the producer overwrote what we read) is thrown
 * away; then the producer, which claims what it evicts unexamined
 * (flight_evict), reports any trigger in it, and the next scan starts from
 * the new tail. What a valid walk read is claimed the same way, so each
 * trigger record is reported once. Not instrumented by TSan for the same
 * reason as st__ring_peek.
 */
__attribute__((no_sanitize("thread"))) static bool trig_scan(void)
{
    bool hit = false;

    if (!trig_resolve())
        return false;
    st__ring_lock();
    for (struct st_ring *b = st__rings; b; b = b->next) {
        const volatile uint8_t *ring = b->ring;
        uint64_t t0 = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
        uint64_t h = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
        uint64_t done = __atomic_load_n(&b->fl_scanned, __ATOMIC_RELAXED);
        uint64_t start = done > t0 ? done : t0, pos = start, last = UINT64_MAX, t1;

        /* pos may be past h: the producer claimed up to a tail it moved after our loads */
        while (pos < h && h - pos >= ST_EVENT_FIXED_SIZE) {
            uint8_t hdr[ST_EVENT_FIXED_SIZE];
            uint64_t len;
            for (size_t k = 0; k < sizeof hdr; k++)
                hdr[k] = ring[(pos + k) & b->mask];
            len = 8 + (uint64_t)st_fmt_get_u32(hdr + ST_EV_OFF_LENGTH);
            if (len < ST_EVENT_FIXED_SIZE || len > ST_SCRATCH_SIZE || len > h - pos)
                break; /* overwritten under us: the tail check below discards the walk */
            if (st_fmt_get_u64(hdr + ST_EV_OFF_ID) == st__flight_trig.id)
                last = pos;
            pos += len;
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        t1 = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
        if (t1 > start || pos == start)
            continue;
        if (st__ring_trig_claim(b, pos, last) && last != UINT64_MAX)
            hit = true; /* the trigger lies in what we claimed, not in what the producer did */
    }
    st__ring_unlock();
    return hit;
}

/* The flight thread: snapshots for the signal, and the trigger's scans. */
static void *flight_main(void *arg)
{
    (void)arg;
    st__ring_thread_notrace();
    for (;;) {
        bool snap;
        if (trig_name[0]) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 10000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            sem_timedwait(&sig_sem, &ts);
        } else {
            sem_wait(&sig_sem);
        }
        snap = __atomic_exchange_n(&sig_pending, 0, __ATOMIC_RELAXED) != 0;
        if (trig_name[0] && trig_reported())
            snap = true;
        if (trig_name[0] && trig_scan())
            snap = true;
        if (snap) {
            char err[256];
            if (st__flight_snapshot(NULL, err, sizeof err) < 0)
                fprintf(stderr, "simpletrace: snapshot: %s\n", err);
        }
    }
    return NULL;
}

/* With ctl_lock held: starts the flight thread once. */
static int start_thread(void)
{
    pthread_attr_t attr;
    pthread_t t;
    sigset_t all, old;
    int ret;

    if (thread_up)
        return 0;
    if (sem_init(&sig_sem, 0, 0) < 0)
        return -errno;
    /* The thread blocks every signal, so the chosen one lands elsewhere. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    ret = -pthread_create(&t, &attr, flight_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (ret < 0) {
        sem_destroy(&sig_sem);
        return ret;
    }
    thread_up = true;
    return 0;
}

/* With ctl_lock held: flight-trigger=NAME (once; another name is -EBUSY). */
int st__flight_set_trigger(const char *name)
{
    int ret;

    if (trig_name[0])
        return strcmp(trig_name, name) == 0 ? 0 : -EBUSY;
    if (!*name || strlen(name) >= sizeof trig_name)
        return -EINVAL;
    /* Written before the thread starts (pthread_create orders it), never again. */
    if (thread_up)
        return -EBUSY; /* the thread already waits without a timeout */
    snprintf(trig_name, sizeof trig_name, "%s", name);
    trig_resolve(); /* usually registered already: producers can then tell the trigger from the start */
    ret = start_thread();
    if (ret == 0)
        __atomic_store_n(&st__flight_trig.on, 1, __ATOMIC_RELEASE); /* after sem_init: producers may post */
    return ret;
}

int st__flight_parse_signal(const char *v, int *sig)
{
    static const struct {
        const char *name;
        int no;
    } names[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"QUIT", SIGQUIT},
                 {"PWR", SIGPWR},   {"WINCH", SIGWINCH}, {"URG", SIGURG}};

    if (strncmp(v, "SIG", 3) == 0)
        v += 3;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(v, names[i].name) == 0) {
            *sig = names[i].no;
            return 0;
        }
    if (strncmp(v, "RTMIN+", 6) == 0 && v[6] >= '0' && v[6] <= '9') {
        char *end;
        long n = strtol(v + 6, &end, 10);
        if (!*end && n >= 0 && n <= SIGRTMAX - SIGRTMIN) {
            *sig = SIGRTMIN + (int)n;
            return 0;
        }
    }
    return -EINVAL;
}

/* With ctl_lock held: installs the handler (once; a second signal is -EBUSY). */
int st__flight_set_signal(int sig)
{
    struct sigaction sa;
    int ret;

    if (sig_no)
        return sig_no == sig ? 0 : -EBUSY;
    ret = start_thread();
    if (ret < 0)
        return ret;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(sig, &sa, NULL) < 0)
        return -errno; /* the thread stays idle: harmless */
    sig_no = sig;
    return 0;
}
