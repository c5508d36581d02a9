/*
 * lock_analyzer: mutex contention from a QEMU trace, with the analyzer API.
 *
 *   lock_analyzer TRACE-EVENTS... TRACE-FILE
 *
 * Uses the qemu_mutex_lock (a thread asks for a mutex), qemu_mutex_locked
 * (it got it) and qemu_mutex_unlock (it let go) events, each with a
 * `mutex` pointer argument. Per mutex it reports:
 *   acquired    qemu_mutex_locked records
 *   contended   lock requests made while the mutex was held
 *   wait        time from a lock request to the matching locked (total, max)
 *   hold        time from locked to unlock (total, max)
 * The trace has no thread IDs (QEMU records the process ID), so pending
 * lock requests of one mutex are matched to locked records first come,
 * first served. Times are nanoseconds; rows are sorted by total wait.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simpletrace/reader.h>

#define MAX_PENDING 64 /* lock requests waiting on one mutex */

struct mutex_stats {
    uint64_t addr;
    uint64_t acquired, contended;
    uint64_t wait_total, wait_max, hold_total, hold_max;
    bool held;
    uint64_t held_since;
    uint64_t pending[MAX_PENDING]; /* request timestamps, oldest first */
    unsigned npending;
};

struct analysis {
    struct mutex_stats *m; /* open addressing by address; addr 0 = empty */
    size_t cap, count;
    int arg_lock, arg_locked, arg_unlock; /* index of `mutex` in each event */
};

/* The stats of mutex addr, created on first sight; NULL when out of memory. */
static struct mutex_stats *find(struct analysis *a, uint64_t addr)
{
    if (a->count * 2 >= a->cap) { /* keep the table at most half full */
        size_t cap = a->cap ? a->cap * 2 : 256;
        struct mutex_stats *m = calloc(cap, sizeof *m);
        if (!m)
            return NULL;
        for (size_t i = 0; i < a->cap; i++) {
            if (!a->m[i].addr)
                continue;
            size_t j = (a->m[i].addr >> 3) & (cap - 1);
            while (m[j].addr)
                j = (j + 1) & (cap - 1);
            m[j] = a->m[i];
        }
        free(a->m);
        a->m = m;
        a->cap = cap;
    }
    size_t j = (addr >> 3) & (a->cap - 1);
    while (a->m[j].addr && a->m[j].addr != addr)
        j = (j + 1) & (a->cap - 1);
    if (!a->m[j].addr) {
        a->m[j].addr = addr;
        a->count++;
    }
    return &a->m[j];
}

static int on_lock(const struct st_record *rec, void *opaque)
{
    struct analysis *a = opaque;
    struct mutex_stats *m = find(a, rec->args[a->arg_lock].u64);
    if (!m)
        return -ENOMEM;
    if (m->held || m->npending)
        m->contended++;
    if (m->npending < MAX_PENDING)
        m->pending[m->npending++] = rec->timestamp_ns;
    return 0;
}

static void add_sample(uint64_t *total, uint64_t *max, uint64_t from, uint64_t to)
{
    uint64_t d = to > from ? to - from : 0; /* records of two threads may be out of order */
    *total += d;
    if (d > *max)
        *max = d;
}

static int on_locked(const struct st_record *rec, void *opaque)
{
    struct analysis *a = opaque;
    struct mutex_stats *m = find(a, rec->args[a->arg_locked].u64);
    if (!m)
        return -ENOMEM;
    m->acquired++;
    if (m->npending) {
        add_sample(&m->wait_total, &m->wait_max, m->pending[0], rec->timestamp_ns);
        memmove(m->pending, m->pending + 1, --m->npending * sizeof m->pending[0]);
    }
    m->held = true;
    m->held_since = rec->timestamp_ns;
    return 0;
}

static int on_unlock(const struct st_record *rec, void *opaque)
{
    struct analysis *a = opaque;
    struct mutex_stats *m = find(a, rec->args[a->arg_unlock].u64);
    if (!m)
        return -ENOMEM;
    if (m->held)
        add_sample(&m->hold_total, &m->hold_max, m->held_since, rec->timestamp_ns);
    m->held = false;
    return 0;
}

static int by_wait(const void *x, const void *y)
{
    const struct mutex_stats *a = x, *b = y;
    if (a->wait_total != b->wait_total)
        return a->wait_total < b->wait_total ? 1 : -1;
    if (a->acquired != b->acquired)
        return a->acquired < b->acquired ? 1 : -1;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static void report(struct analysis *a)
{
    size_t n = 0;
    for (size_t i = 0; i < a->cap; i++)
        if (a->m[i].addr)
            a->m[n++] = a->m[i];
    qsort(a->m, n, sizeof *a->m, by_wait);
    printf("%-18s %10s %10s %14s %12s %14s %12s\n", "MUTEX", "ACQUIRED", "CONTENDED", "WAIT_TOTAL_NS",
           "WAIT_MAX_NS", "HOLD_TOTAL_NS", "HOLD_MAX_NS");
    for (size_t i = 0; i < n; i++) {
        const struct mutex_stats *m = &a->m[i];
        printf("0x%-16" PRIx64 " %10" PRIu64 " %10" PRIu64 " %14" PRIu64 " %12" PRIu64 " %14" PRIu64 " %12" PRIu64
               "\n",
               m->addr, m->acquired, m->contended, m->wait_total, m->wait_max, m->hold_total, m->hold_max);
    }
    printf("%zu mutexes\n", n);
}

/* Index of the `mutex` argument of event name, or -1 if the catalogue lacks it. */
static int mutex_arg(const struct st_catalog *cat, const char *name)
{
    const struct st_event_info *ev = st_catalog_find(cat, name);
    return ev ? st_event_arg_index(ev, "mutex") : -1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: lock_analyzer TRACE-EVENTS... TRACE-FILE\n");
        return 2;
    }
    struct st_catalog *cat = NULL;
    struct st_reader *r = NULL;
    struct analysis a = {0};
    char msg[2048];
    int status = 1;
    if (st_catalog_load(&cat, (const char *const *)argv + 1, (size_t)argc - 2, msg, sizeof msg) < 0) {
        fprintf(stderr, "lock_analyzer: %s\n", msg);
        goto out;
    }
    a.arg_lock = mutex_arg(cat, "qemu_mutex_lock");
    a.arg_locked = mutex_arg(cat, "qemu_mutex_locked");
    a.arg_unlock = mutex_arg(cat, "qemu_mutex_unlock");
    if (a.arg_lock < 0 || a.arg_locked < 0 || a.arg_unlock < 0) {
        fprintf(stderr, "lock_analyzer: the trace-events files lack qemu_mutex_lock/locked/unlock(void *mutex, ...)\n");
        goto out;
    }
    struct st_reader_error err = {.struct_size = sizeof err};
    if (st_reader_open(&r, argv[argc - 1], cat, NULL, &err) < 0) {
        fprintf(stderr, "lock_analyzer: %s: %s\n", argv[argc - 1], err.message);
        goto out;
    }
    /* struct_size in every structure the library reads: it may grow in later releases. */
    static const struct st_analyzer_handler handlers[] = {
        {.struct_size = sizeof handlers[0], .event = "qemu_mutex_lock", .fn = on_lock},
        {.struct_size = sizeof handlers[0], .event = "qemu_mutex_locked", .fn = on_locked},
        {.struct_size = sizeof handlers[0], .event = "qemu_mutex_unlock", .fn = on_unlock},
    };
    struct st_analyzer an = {.struct_size = sizeof an, .opaque = &a, .handlers = handlers,
                             .nhandlers = sizeof handlers / sizeof handlers[0]};
    int ret = st_analyzer_run(&an, r);
    if (ret < 0) {
        st_reader_format_error(r, msg, sizeof msg);
        fprintf(stderr, "lock_analyzer: %s\n", st_reader_error(r)->code ? msg : strerror(-ret));
        goto out;
    }
    report(&a);
    status = 0;
out:
    free(a.m);
    st_reader_close(r);
    st_catalog_free(cat);
    return status;
}
