/*
 * Chunks, the write-out pass and the writer thread.
 *
 *   traced thread                        writer (pass_lock held)
 *   ------------------------------       ------------------------------------
 *   fills its current chunk              on a kick: snapshot every thread under
 *   full: queue it, take a free one        `lock` (its full queue, and the live
 *     (or map a new one, up to             chunk with the published `cur`)
 *     max_chunks), kick the writer       sample a clock knot, then for each
 *   none free: drop and count; the         thread append queued chunks, then the
 *     next chunk starts with a LOST        live prefix, to <dir>/<tid>.dat,
 *     record carrying the count            converting raw times to ns in place
 *   ends: queue the last chunk, dead     give the chunks back (free list), free
 *                                          the state of dead threads
 *
 * A chunk is the flush unit (SIMPLETRACE_FUNC_BUFSIZE, 32 MiB by default):
 * a traced thread never writes a file, it only swaps chunks under a
 * mutex once per flush unit. Chunks are mmap'ed: untouched pages cost
 * nothing, so a thread that makes ten calls uses one page of its chunk.
 *
 * Order: a thread's chunks are queued oldest first and the snapshot takes
 * the queue and the live chunk at one instant, so the file gets every
 * record exactly once, in the thread's order. `written` of a chunk (writer
 * only) says how much of it is already in the file; the live chunk is
 * written up to the `cur` seen in the snapshot and finished later.
 *
 * Times: converted with st__ft_g.clock (clock.h) after the pass's own knot
 * is offered, so a pass's records lie before its newest knot (the first
 * pass waits out the 1 ms the first segment needs, once); per task the
 * written time never decreases, which also keeps a reused tid's file in
 * order.
 */
#include "thread_start.h"
#include "write_all.h"
#include "ft.h"
#include "uftrace_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The writer thread: started on the first need, stopped at exit. */
static struct {
    pthread_mutex_t lock; /* start and stop */
    sem_t wake;           /* one post per kick */
    pthread_t thread;
    atomic_bool running;
    bool shut;            /* the exit path stopped it for good */
    atomic_bool stop;
    bool sem_ok;
} w = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* One thread's share of a pass. */
struct pass_item {
    struct st__ft_thread *t;
    struct st__ft_chunk *queued; /* taken from its full queue, oldest first */
    struct st__ft_chunk *live;   /* its current chunk, or NULL */
    size_t live_fill;            /* records published in live */
    bool dead;
};

/* Writer-only state (pass_lock). */
static struct pass_item *items;
static size_t items_cap;
static struct st__ft_task *tasks;
static size_t ntasks, tasks_cap;
static uint64_t sess_ns;
static bool sess_ns_valid;

ST__NI struct st__ft_chunk *st__ft_chunk_new(size_t bytes, bool huge)
{
    size_t len = sizeof(struct st__ft_chunk) + bytes;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    /* A thread that filled one chunk will fill more: fewer page faults. */
    if (huge)
        madvise(m, len, MADV_HUGEPAGE);
#else
    (void)huge;
#endif
    struct st__ft_chunk *c = m;
    c->map_len = len;
    return c;
}

ST__NI void st__ft_chunk_free(struct st__ft_chunk *c)
{
    if (c)
        munmap(c, c->map_len);
}

static inline __attribute__((no_instrument_function)) size_t chunk_records(void)
{
    return st__ft_g.chunk_bytes / ST_UFT_REC_SIZE;
}

/* Makes c the thread's current chunk (or none); under lock. */
ST__NI static void install_chunk(struct st__ft_thread *t, struct st__ft_chunk *c)
{
    t->chunk = c;
    t->end = c ? c->recs + 2 * chunk_records() : NULL;
    atomic_store_explicit(&t->cur, c ? c->recs : NULL, memory_order_release);
}

/* Appends c to the thread's full queue; under lock. */
ST__NI static void queue_full(struct st__ft_thread *t, struct st__ft_chunk *c, size_t fill)
{
    c->fill = fill;
    c->next = NULL;
    if (t->full_tail)
        t->full_tail->next = c;
    else
        t->full_head = c;
    t->full_tail = c;
}

/*
 * The current chunk is full (or there is none): queue it and switch to a
 * free or new one. Returns where the next record goes, or NULL to drop it.
 * Pending drops are first recorded as one LOST record.
 */
ST__NI uint64_t *st__ft_rotate(struct st__ft_thread *t)
{
    /* At exit, and when a thread closes its frames as it ends, nothing may
     * be dropped: the file must end balanced, so chunks can exceed the cap. */
    bool final = atomic_load(&st__ft_g.state) == ST__FT_FINISHED || t->closing;
    if (!t->chunk && !final && atomic_load(&t->nfree) == 0 && t->nchunks >= st__ft_g.max_chunks)
        return NULL; /* still dropping: do not even take the lock */

    bool queued = false;
    struct st__ft_chunk *c = NULL;
    pthread_mutex_lock(&st__ft_g.lock);
    if (t->chunk) {
        queue_full(t, t->chunk, chunk_records());
        queued = true;
    }
    if ((c = t->free_list) != NULL) {
        t->free_list = c->next;
        atomic_fetch_sub(&t->nfree, 1);
    }
    install_chunk(t, c);
    pthread_mutex_unlock(&st__ft_g.lock);

    if (!c && (t->nchunks < st__ft_g.max_chunks || final)) {
        c = st__ft_chunk_new(st__ft_g.chunk_bytes, true);
        if (c) {
            t->nchunks++;
            pthread_mutex_lock(&st__ft_g.lock);
            install_chunk(t, c);
            pthread_mutex_unlock(&st__ft_g.lock);
        }
    }
    if (queued && atomic_load(&st__ft_g.state) != ST__FT_FINISHED)
        st__ft_writer_kick();
    if (!c)
        return NULL;
    uint64_t *p = c->recs;
    if (t->lost) {
        p[0] = st__ft_raw(st__ft_g.use_tsc);
        p[1] = st__uft_rec_data(ST_UFT_REC_LOST, t->rdepth, t->lost);
        p += 2;
        atomic_store_explicit(&t->cur, p, memory_order_release);
        t->lost = 0;
    }
    return p;
}

ST__NI static void *writer_main(void *arg)
{
    (void)arg;
    st__ft_self = &st__ft_sentinel; /* never trace this thread */
    for (;;) {
        while (sem_wait(&w.wake) != 0 && errno == EINTR)
            ;
        if (atomic_load(&w.stop))
            break;
        pthread_mutex_lock(&st__ft_g.pass_lock);
        if (atomic_load(&st__ft_g.state) != ST__FT_FINISHED)
            st__ft_pass_locked(false);
        pthread_mutex_unlock(&st__ft_g.pass_lock);
    }
    return NULL;
}

ST__NI static void writer_start(void)
{
    pthread_mutex_lock(&w.lock);
    if (!w.sem_ok)
        w.sem_ok = sem_init(&w.wake, 0, 0) == 0;
    if (!atomic_load(&w.running) && !w.shut && w.sem_ok) {
        atomic_store(&w.stop, false);
        if (st__thread_start(&w.thread, NULL, writer_main, NULL, NULL) == 0)
            atomic_store(&w.running, true);
    }
    pthread_mutex_unlock(&w.lock);
}

/* Asks the writer for a pass (starting it if needed). Safe in hooks. */
ST__NI void st__ft_writer_kick(void)
{
    if (!atomic_load(&w.running))
        writer_start();
    if (atomic_load(&w.running))
        sem_post(&w.wake);
}

/* Stops the writer thread for good (exit path); passes run in the caller. */
ST__NI void st__ft_writer_shutdown(void)
{
    pthread_mutex_lock(&w.lock);
    w.shut = true;
    bool running = atomic_load(&w.running);
    pthread_mutex_unlock(&w.lock);
    if (!running)
        return;
    atomic_store(&w.stop, true);
    sem_post(&w.wake);
    pthread_join(w.thread, NULL);
    atomic_store(&w.running, false);
}

/* In a forked child: the writer thread does not exist there. */
ST__NI void st__ft_writer_after_fork_child(void)
{
    pthread_mutex_init(&w.lock, NULL);
    if (w.sem_ok)
        w.sem_ok = sem_init(&w.wake, 0, 0) == 0;
    atomic_store(&w.running, false);
    atomic_store(&w.stop, false);
    w.shut = false;
}

/* --- tasks ------------------------------------------------------------- */

ST__NI struct st__ft_task *st__ft_tasks(size_t *count)
{
    *count = ntasks;
    return tasks;
}

ST__NI void st__ft_tasks_reset(void)
{
    ntasks = 0;
    sess_ns_valid = false;
}

ST__NI uint64_t st__ft_sess_ns(void)
{
    if (!sess_ns_valid) {
        sess_ns = st__clock_conv(&st__ft_g.clock, st__ft_g.sess_raw);
        sess_ns_valid = true;
    }
    return sess_ns;
}

/* The task entry of t (a reused tid shares the earlier thread's entry and
 * file); -1 when memory is short. */
ST__NI static long task_of(struct st__ft_thread *t)
{
    if (t->task >= 0)
        return t->task;
    for (size_t i = 0; i < ntasks; i++)
        if (tasks[i].tid == t->tid)
            return t->task = (long)i;
    if (ntasks == tasks_cap) {
        size_t cap = tasks_cap ? tasks_cap * 2 : 64;
        struct st__ft_task *n = realloc(tasks, cap * sizeof *n);
        if (!n)
            return -1;
        tasks = n;
        tasks_cap = cap;
    }
    uint64_t start = st__clock_conv(&st__ft_g.clock, t->start_raw);
    if (start < st__ft_sess_ns())
        start = st__ft_sess_ns();
    tasks[ntasks] = (struct st__ft_task){.tid = t->tid, .start_ns = start, .last_ns = start};
    return t->task = (long)ntasks++;
}

ST__NI static void note_error(int err)
{
    if (!st__ft_g.write_error)
        st__ft_g.write_error = err;
}

/* Converts records [from, to) of c to ns and appends them to the task's
 * file, opening it on first use (*fd). */
ST__NI static void write_records(struct st__ft_task *task, int *fd, struct st__ft_chunk *c, size_t from,
                                 size_t to)
{
    if (to <= from)
        return;
    size_t n = to - from, calls = 0;
    if (*fd < 0) {
        char name[32];
        snprintf(name, sizeof name, "%d.dat", (int)task->tid);
        *fd = openat(st__ft_g.dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (*fd < 0) {
            note_error(-errno);
            atomic_fetch_add(&st__ft_g.lost_total, n);
            return;
        }
    }
    uint64_t *r = c->recs + 2 * from;
    for (size_t i = 0; i < n; i++) {
        uint64_t ns = st__clock_conv(&st__ft_g.clock, r[2 * i]);
        if (ns < task->last_ns)
            ns = task->last_ns;
        task->last_ns = r[2 * i] = ns;
        calls += st__uft_rec_type(r[2 * i + 1]) != ST_UFT_REC_LOST;
    }
    int err = st__write_all(*fd, r, n * ST_UFT_REC_SIZE);
    st__ft_g.wrote_anything = true;
    if (err) {
        note_error(err);
        atomic_fetch_add(&st__ft_g.lost_total, calls);
        return;
    }
    task->written += n;
    atomic_fetch_add(&st__ft_g.written_total, calls);
}

/* Takes every thread's queued chunks (and, with live, the extent of its
 * current chunk); returns the count. */
ST__NI static size_t snapshot(bool live)
{
    pthread_mutex_lock(&st__ft_g.lock);
    size_t n = 0;
    for (struct st__ft_thread *t = st__ft_g.threads; t; t = t->next)
        n++;
    if (n > items_cap) {
        struct pass_item *p = realloc(items, n * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&st__ft_g.lock);
            return 0; /* try again on the next pass */
        }
        items = p;
        items_cap = n;
    }
    size_t i = 0;
    for (struct st__ft_thread *t = st__ft_g.threads; t; t = t->next, i++) {
        struct pass_item *it = &items[i];
        it->t = t;
        it->queued = t->full_head;
        it->dead = t->dead;
        it->live = live ? t->chunk : NULL;
        it->live_fill = it->live ? (size_t)(atomic_load_explicit(&t->cur, memory_order_acquire) - t->chunk->recs) / 2
                                 : 0;
        t->full_head = t->full_tail = NULL;
    }
    pthread_mutex_unlock(&st__ft_g.lock);
    return n;
}

/* Writes one thread's share; its queued chunks stay in it->queued. */
ST__NI static void write_item(struct pass_item *it)
{
    long ti = task_of(it->t);
    if (ti < 0) { /* no memory for its task entry: its records are lost */
        size_t n = it->live ? it->live_fill - it->live->written : 0;
        for (struct st__ft_chunk *c = it->queued; c; c = c->next)
            n += c->fill - c->written;
        atomic_fetch_add(&st__ft_g.lost_total, n);
        if (it->live)
            it->live->written = it->live_fill;
        note_error(-ENOMEM);
        return;
    }
    struct st__ft_task *task = &tasks[ti];
    int fd = -1;
    for (struct st__ft_chunk *c = it->queued; c; c = c->next)
        write_records(task, &fd, c, c->written, c->fill);
    if (it->live && it->live_fill > it->live->written) {
        write_records(task, &fd, it->live, it->live->written, it->live_fill);
        it->live->written = it->live_fill;
    }
    if (fd >= 0)
        close(fd);
}

/* Gives written chunks back; unlinks dead threads into *dead_out. */
ST__NI static void recycle(size_t n, struct st__ft_thread **dead_out)
{
    pthread_mutex_lock(&st__ft_g.lock);
    for (size_t i = 0; i < n; i++) {
        struct pass_item *it = &items[i];
        struct st__ft_thread *t = it->t;
        for (struct st__ft_chunk *c = it->queued, *next; c; c = next) {
            next = c->next;
            c->written = c->fill = 0;
            c->next = t->free_list;
            t->free_list = c;
            atomic_fetch_add(&t->nfree, 1);
        }
        if (!it->dead)
            continue;
        for (struct st__ft_thread **pp = &st__ft_g.threads; *pp; pp = &(*pp)->next)
            if (*pp == t) {
                *pp = t->next;
                break;
            }
        t->next = *dead_out;
        *dead_out = t;
    }
    pthread_mutex_unlock(&st__ft_g.lock);
}

ST__NI static void free_thread(struct st__ft_thread *t)
{
    for (struct st__ft_chunk *c = t->free_list, *next; c; c = next) {
        next = c->next;
        st__ft_chunk_free(c);
    }
    munmap(t, t->map_len);
}

/*
 * One write-out pass (caller holds pass_lock): every full chunk goes to its
 * file and, with live (flush, exit), every record published so far in the
 * chunks being filled. The writer thread's own passes leave those alone:
 * touching lines a traced thread is writing next to only slows it down.
 * Returns 0 or the first write error of the process.
 */
ST__NI int st__ft_pass_locked(bool live)
{
    size_t n = snapshot(live);
    st__clock_conv_update(&st__ft_g.clock); /* after the snapshot: its records lie before the knot */
    for (size_t i = 0; i < n; i++)
        write_item(&items[i]);
    struct st__ft_thread *dead = NULL;
    recycle(n, &dead);
    while (dead) {
        struct st__ft_thread *next = dead->next;
        free_thread(dead);
        dead = next;
    }
    return st__ft_g.write_error;
}
