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
 * A snapshot copies every ring with st__buf_peek (which validates its copy
 * against tail re-read afterwards, so a producer overwriting meanwhile only
 * shortens what is kept, never tears a record), then writes an ordinary v4
 * file: header, every mapping, one dropped record per thread that lost
 * records to overwriting since the previous snapshot (its count: how many;
 * none when 0, which v4 readers reject), then the records of all threads merged by time,
 * timestamps converted to CLOCK_MONOTONIC ns and kept non-decreasing per
 * thread, as the writer does. The rings are left as they are: a later
 * snapshot may contain the same records again; its dropped counts cover
 * only evictions since the previous snapshot. The count is exact for a
 * thread that does not trace during the snapshot; one that does may have
 * records overwritten after the copy was validated, which are then counted
 * now although the snapshot holds them.
 *
 * The signal: its handler only sets a flag and posts a semaphore
 * (async-signal-safe); the flight thread (started for flight-signal= or
 * flight-trigger=, never traces) waits on it and takes the snapshot under
 * the default name. flight-trigger=EVENT: the same thread scans, 100 times
 * a second, the headers of the records committed since its last scan
 * (trig_scan) and takes a snapshot when one is that event, so the hot path
 * of every event, the trigger included, is unchanged.
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

#include "common/io.h"
#include "format/format.h"
#include "runtime/buffer.h"
#include "runtime/clock.h"
#include "runtime/flight.h"
#include "runtime/internal.h"

static struct st_clock_conv conv; /* ctl_lock */
static unsigned snap_seq;         /* default names; ctl_lock */
static sem_t sig_sem;
static int sig_pending; /* atomic (lock-free: safe in the handler) */
static int sig_no;                /* flight-signal= installed, or 0 (ctl_lock) */
static bool thread_up;            /* the flight thread runs (ctl_lock) */
static char trig_name[256];       /* flight-trigger=, or "" (set once, before the thread reads it) */
static uint64_t trig_id = UINT64_MAX; /* its ID once registered (flight thread) */

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
    size_t cap = 0, used, nrec = 0, nthr = 0, nthr_max, i;
    uint8_t *copy = NULL;
    struct rec *recs = NULL;
    struct thr *thr = NULL;
    struct out o = {0};
    uint64_t first_ns = 0;
    int ret = -ENOMEM, fd;

    /* Room for every ring whole: then nothing is cut for lack of space. */
    st__buf_lock();
    for (struct st_buf *b = st__bufs; b; b = b->next) {
        cap += b->size;
        nthr++;
    }
    st__buf_unlock();
    nthr_max = nthr; /* threads that start meanwhile are neither copied nor counted */
    thr = calloc(nthr ? nthr : 1, sizeof *thr);
    copy = malloc(cap ? cap : 1);
    if (!thr || !copy)
        goto out;
    used = st__buf_peek(copy, cap, NULL);

    /*
     * Lost counts, read after the copy: every eviction that shortened it is
     * included (fl_evicted is stored before tail). Threads that started
     * after the list was counted above are left out of both.
     */
    nthr = 0;
    st__buf_lock();
    for (struct st_buf *b = st__bufs; b; b = b->next) {
        uint64_t ev = __atomic_load_n(&b->fl_evicted, __ATOMIC_ACQUIRE);
        if (nthr == nthr_max)
            break; /* the rest started after the copy's list: not in it */
        if (!thr_find(thr, nthr, b->tid)) {
            thr[nthr].tid = b->tid;
            thr[nthr].lost = ev - b->fl_reported;
            nthr++;
        }
        b->fl_reported = ev;
    }
    st__buf_unlock();

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
    st__clock_conv_update(&conv);
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
    if (ret == -ENOMEM)
        st__errmsg(err, errlen, "%s", st_strerror(ret));
    free(o.p);
    free(recs);
    free(copy);
    free(thr);
    return ret;
}

int st__flight_snapshot(const char *path, char *err, size_t errlen)
{
    char def[64];
    int ret;

    if (err && errlen)
        err[0] = '\0';
    st__ctl_lock();
    if (!st__buf_flight()) {
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

/* The trigger event's ID, looked up by name until its group registered. */
static bool trig_resolve(void)
{
    uint32_t count = st__reg_count(), id = 0;
    const char *names[64];

    if (trig_id != UINT64_MAX)
        return true;
    while (id < count) {
        uint32_t n = st__reg_names(id, names, count - id < 64 ? count - id : 64);
        if (n == 0)
            break;
        for (uint32_t k = 0; k < n; k++)
            if (strcmp(names[k], trig_name) == 0) {
                trig_id = id + k;
                return true;
            }
        id += n;
    }
    return false;
}

/*
 * flight-trigger=: reads the headers of the records committed since the
 * last scan, in place, while the producers go on (so the hot path pays
 * nothing). Like st__buf_peek: tail is re-read after the walk, and a walk
 * that started below it (the producer overwrote what we read) is thrown
 * away; a trigger event overwritten before a scan saw it is missed, which
 * at 100 scans a second takes a thread filling its whole ring in 10 ms.
 * Not instrumented by TSan for the same reason as st__buf_peek.
 */
__attribute__((no_sanitize("thread"))) static bool trig_scan(void)
{
    bool hit = false;

    if (!trig_resolve())
        return false;
    st__buf_lock();
    for (struct st_buf *b = st__bufs; b; b = b->next) {
        const volatile uint8_t *ring = b->ring;
        uint64_t t0 = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
        uint64_t h = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
        uint64_t start = b->fl_scanned > t0 ? b->fl_scanned : t0, pos = start, t1;
        bool found = false;

        while (h - pos >= ST_EVENT_FIXED_SIZE) {
            uint8_t hdr[ST_EVENT_FIXED_SIZE];
            uint64_t len;
            for (size_t k = 0; k < sizeof hdr; k++)
                hdr[k] = ring[(pos + k) & b->mask];
            len = 8 + (uint64_t)st_fmt_get_u32(hdr + ST_EV_OFF_LENGTH);
            if (len < ST_EVENT_FIXED_SIZE || len > ST_SCRATCH_SIZE || len > h - pos)
                break; /* overwritten under us: the tail check below discards the walk */
            if (st_fmt_get_u64(hdr + ST_EV_OFF_ID) == trig_id)
                found = true;
            pos += len;
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        t1 = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
        if (t1 > start) {
            b->fl_scanned = t1;
            continue;
        }
        b->fl_scanned = pos;
        hit |= found;
    }
    st__buf_unlock();
    return hit;
}

/* The flight thread: snapshots for the signal, and the trigger's scans. */
static void *flight_main(void *arg)
{
    (void)arg;
    st__buf_thread_notrace();
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
    if (trig_name[0])
        return strcmp(trig_name, name) == 0 ? 0 : -EBUSY;
    if (!*name || strlen(name) >= sizeof trig_name)
        return -EINVAL;
    /* Written before the thread starts (pthread_create orders it), never again. */
    if (thread_up)
        return -EBUSY; /* the thread already waits without a timeout */
    snprintf(trig_name, sizeof trig_name, "%s", name);
    return start_thread();
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
