/*
 * The flight thread (flight mode, flight=SIZE): snapshots on a signal and
 * on a trigger event. Snapshots themselves: snapshot.c; the overwriting
 * rings: core/ring_overwrite.c.
 *
 * The signal (flight-signal=SIG): its handler only sets a flag and posts a
 * semaphore (async-signal-safe); the thread (never traces, blocks every
 * signal) waits on it and takes the snapshot under the default name.
 *
 * The trigger (flight-trigger=EVENT): the same thread scans, 100 times a
 * second, the headers of the records committed since its last scan
 * (st__ring_trigger_scan, ring_consumer.h) and takes a snapshot when one is that event, so the hot path
 * of every event, the trigger included, is unchanged. A trigger record
 * overwritten before a scan reached it is not missed: the producer's
 * eviction path (slow path) checks what it evicts that no scan examined
 * (ow_scanned, claimed by CAS by both, so each record is reported once)
 * and calls the rings' trigger_evicted hook, which posts the same
 * semaphore; that snapshot lacks the trigger record itself. Before the
 * trigger's group registered its ID is unknown: the producer then reports
 * events registered since the thread last looked as suspects, and the
 * thread snapshots if the trigger resolves to one.
 *
 * Configuration (config_drain.c) changes this only with its caller's
 * serialisation: a transaction's prepare starts the thread, its commit
 * installs the handler and arms the trigger, an abort ends a thread its
 * prepare started.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diag.h"
#include "drain.h"
#include "drain_internal.h"
#include "registry.h"
#include "ring_consumer.h"
#include "thread_start.h"

static sem_t sig_sem;
static int sig_pending;      /* atomic (lock-free: safe in the handler) */
static int sig_no;           /* flight-signal= installed, or 0 */
static bool thread_up;       /* the flight thread runs */
static int thread_stop;      /* atomic: an aborted configuration ends the thread it started */
static pthread_t thread;
static char trig_name[256];  /* flight-trigger=, or "" (set before the thread starts, never again) */
/*
 * Held from claiming a snapshot (a signal, a trigger) to its file being in
 * place, by the flight thread and by the exit path: an exit while the
 * thread writes the snapshot it claimed waits for it, rather than ending
 * the process under it (the snapshot was then lost: seen under qemu-user).
 */
static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static int trig_hit;         /* a producer evicted an unexamined trigger record (atomic) */
/* Unresolved-trigger suspects a producer evicted: lo << 32 | hi, TRIG_NONE when empty (atomic). */
#define TRIG_NONE ((uint64_t)UINT32_MAX << 32)
static uint64_t trig_suspect = TRIG_NONE;

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

    if (st__ring_trigger.id != UINT64_MAX)
        return true;
    while (id < count) {
        uint32_t n = st__reg_names(id, names, count - id < 64 ? count - id : 64);
        if (n == 0)
            break;
        for (uint32_t k = 0; k < n; k++)
            if (strcmp(names[k], trig_name) == 0) {
                __atomic_store_n(&st__ring_trigger.id, (uint64_t)(id + k), __ATOMIC_RELEASE);
                return true;
            }
        id += n;
    }
    __atomic_store_n(&st__ring_trigger.known, (uint64_t)id, __ATOMIC_RELEASE);
    return false;
}

/* No trigger after all (its configuration failed). */
static void trig_forget(void)
{
    trig_name[0] = '\0';
    __atomic_store_n(&st__ring_trigger.id, UINT64_MAX, __ATOMIC_RELAXED);
    __atomic_store_n(&st__ring_trigger.known, 0, __ATOMIC_RELAXED);
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
        hit |= st__ring_trigger.id >= (sus >> 32) && st__ring_trigger.id <= (uint32_t)sus;
    return hit;
}

/* One trigger scan (st__ring_trigger_scan: in place, the hot path pays nothing), once the trigger's ID is known. */
static bool trig_scan(void)
{
    return trig_resolve() && st__ring_trigger_scan();
}

/* Waits for a signal or a report; with a trigger, at most 10 ms (time to scan). */
static void flight_wait(void)
{
    struct timespec ts;

    if (!trig_name[0]) {
        sem_wait(&sig_sem);
        return;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 10000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    sem_timedwait(&sig_sem, &ts);
}

/* The flight thread: snapshots for the signal, and the trigger's scans. */
static void *flight_main(void *arg)
{
    (void)arg;
    st__ring_thread_notrace();
    for (;;) {
        bool snap;
        flight_wait();
        if (__atomic_load_n(&thread_stop, __ATOMIC_ACQUIRE))
            return NULL;
        pthread_mutex_lock(&snap_lock);
        snap = __atomic_exchange_n(&sig_pending, 0, __ATOMIC_RELAXED) != 0;
        if (trig_name[0] && trig_reported())
            snap = true;
        if (trig_name[0] && trig_scan())
            snap = true;
        if (snap) {
            char err[256];
            if (st__snapshot_write(NULL, err, sizeof err) < 0)
                st__diag("simpletrace", "snapshot: %s", err);
        }
        pthread_mutex_unlock(&snap_lock);
    }
    return NULL;
}

void st__flight_fork_child(void)
{
    pthread_mutex_init(&snap_lock, NULL); /* the parent's flight thread may have held it */
}

void st__flight_exit(void)
{
    bool snap;
    char err[256];

    if (!thread_up)
        return;
    /* The flight thread may scan too: each trigger is claimed by one of us (trig_scan). */
    pthread_mutex_lock(&snap_lock);
    snap = __atomic_exchange_n(&sig_pending, 0, __ATOMIC_RELAXED) != 0;
    if (trig_name[0] && trig_reported())
        snap = true;
    if (trig_name[0] && trig_scan())
        snap = true;
    if (snap && st__snapshot_write(NULL, err, sizeof err) < 0)
        st__diag("simpletrace", "snapshot at exit: %s", err);
    pthread_mutex_unlock(&snap_lock);
}

/* Starts the flight thread; 0 or -errno. */
static int thread_start(void)
{
    int ret;

    if (sem_init(&sig_sem, 0, 0) < 0)
        return -errno;
    /* The thread blocks every signal, so the chosen one lands elsewhere. */
    ret = st__thread_start(&thread, NULL, flight_main, NULL, "st-flight");
    if (ret < 0) {
        sem_destroy(&sig_sem);
        return ret;
    }
    thread_up = true; /* joinable until its configuration commits: an abort joins it */
    return 0;
}

int st__flight_prepare(struct st__flight_prep *p, char *err, size_t errlen)
{
    int ret;

    p->started = false;
    if (p->sig && sig_no && sig_no != p->sig) {
        st__errmsg(err, errlen, "flight-signal=: another signal is already chosen");
        return -EBUSY;
    }
    if (p->trigger && (trig_name[0] ? strcmp(trig_name, p->trigger) != 0 : thread_up)) {
        /* Named once, before the thread starts: it then waits without a timeout. */
        st__errmsg(err, errlen, "flight-trigger=: can be chosen once, before or with flight-signal=");
        return -EBUSY;
    }
    if ((!p->sig && !p->trigger) || thread_up)
        return 0;
    if (p->trigger) {
        snprintf(trig_name, sizeof trig_name, "%s", p->trigger); /* read by the thread from its start */
        trig_resolve(); /* usually registered already: producers can then tell the trigger from the start */
    }
    if ((ret = thread_start()) < 0) {
        trig_forget();
        st__errmsg(err, errlen, "cannot start the flight thread: %s", st_strerror(ret));
        return ret;
    }
    p->started = true;
    return 0;
}

void st__flight_commit(struct st__flight_prep *p)
{
    struct sigaction sa;

    if (p->trigger) /* resolved by prepare before the thread started, then by the thread only */
        __atomic_store_n(&st__ring_trigger.on, 1, __ATOMIC_RELEASE); /* after sem_init: producers may post */
    if (p->sig && !sig_no) {
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        /* Cannot fail: the signal is one st__flight_parse_signal accepts. */
        sigaction(p->sig, &sa, NULL);
        sig_no = p->sig;
    }
    if (p->started)
        pthread_detach(thread);
    p->started = false;
}

void st__flight_abort(struct st__flight_prep *p)
{
    if (!p->started)
        return;
    /* The thread never got anything to do: it sees the flag at once and ends. */
    __atomic_store_n(&thread_stop, 1, __ATOMIC_RELEASE);
    sem_post(&sig_sem);
    pthread_join(thread, NULL);
    sem_destroy(&sig_sem);
    __atomic_store_n(&thread_stop, 0, __ATOMIC_RELAXED);
    thread_up = false;
    trig_forget();
    p->started = false;
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
