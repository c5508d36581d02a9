/*
 * Start-up, configuration, process exit, fork, and the public API.
 *
 * Life of a process:
 *   start-up   a constructor (or the first hook, whichever runs first) reads
 *              the environment, prepares the output directory, resolves the
 *              filter and registers the exit and fork handlers. Threads
 *              attach on their first hook (hooks.c).
 *   running    hooks record; the writer thread writes chunks as they fill.
 *   exit       (on_exit handler, in the thread that called exit() or
 *              returned from main) the state becomes FINISHED, so no hook
 *              touches a buffer any more; we wait for hooks already running
 *              (membarrier + each thread's busy flag), close every open
 *              frame of every thread with EXIT records, write everything
 *              and the metadata. Threads still running keep running,
 *              untraced.
 *   fork       the child gets a new session (SID, SESS line, map file) in
 *              the same directory; only the forking thread survives, with a
 *              new tid whose file starts by re-entering the frames open at
 *              fork time. The parent's unwritten records stay the parent's.
 *
 * Errors at start-up from the environment (bad directory, bad numbers) are
 * printed on stderr (st__diag), once: the program cannot receive them
 * otherwise.
 */
#include "diag.h"
#include "ft.h"
#include "size_parse.h"
#include <simpletrace/functrace.h>

#include <errno.h>
#include <limits.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_DIR "uftrace.data"
#define DEFAULT_DEPTH 1024u
#define MAX_DEPTH 65535u /* the info header's max_stack is 16 bits */
#define DEFAULT_CHUNK_BYTES (32u << 20)
#define MIN_CHUNK_BYTES 4096u
#define DEFAULT_MAX_CHUNKS 4u
#define JOIN_ENV "SIMPLETRACE_FUNC_JOIN" /* set for our children: join this directory */
#define BUSY_WAIT_NS 200000000ull          /* how long exit waits for a hook in progress */

struct st__ft_global st__ft_g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .pass_lock = PTHREAD_MUTEX_INITIALIZER,
    .dirfd = -1,
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static bool have_membarrier;

ST__NI pthread_key_t st__ft_key(void)
{
    return thread_key;
}

/* --- configuration ------------------------------------------------------- */

/* A number from the environment (N[K|M|G]) in [lo, hi], else def (with a message). */
ST__NI static uint64_t env_number(const char *name, uint64_t def, uint64_t lo, uint64_t hi)
{
    const char *s = getenv(name);
    uint64_t v;
    if (!s || !*s)
        return def;
    if (st__parse_size(s, hi, &v) != 0 || v < lo) {
        st__diag(ST__FT_DIAG, "%s=%s is not a number in [%llu, %llu]; using %llu", name, s, (unsigned long long)lo,
                 (unsigned long long)hi, (unsigned long long)def);
        return def;
    }
    return v;
}

ST__NI bool st__ft_clock_choose(const char *force)
{
    if (force && (strcmp(force, "counter") == 0 || strcmp(force, ST_CLOCK_COUNTER) == 0))
        return ST_CLOCK_HAVE_COUNTER;
    if (force && strcmp(force, "monotonic") == 0)
        return false;
    return st__clock_counter_usable();
}

ST__NI static bool env_disabled(void)
{
    const char *s = getenv("SIMPLETRACE_FUNC");
    return s && (strcmp(s, "off") == 0 || strcmp(s, "0") == 0 || strcmp(s, "no") == 0 ||
                 strcmp(s, "false") == 0);
}

ST__NI static void make_sid(void)
{
    /* Unique enough across the processes sharing a directory. */
    uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ st__clock_mono_ns() ^
                 (st__ft_raw(st__ft_g.use_tsc) << 17);
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    snprintf(st__ft_g.sid, sizeof st__ft_g.sid, "%016llx", (unsigned long long)x);
}

/* A new session for this process (start-up, or a forked child). */
ST__NI static void start_session(void)
{
    st__ft_g.pid = getpid();
    make_sid();
    st__ft_g.sess_raw = st__ft_raw(st__ft_g.use_tsc);
    st__ft_tasks_reset();
}

ST__NI static bool setup_dir(void)
{
    const char *dir = getenv("SIMPLETRACE_FUNC_DIR");
    if (!dir || !*dir)
        dir = DEFAULT_DIR;
    char err[PATH_MAX + 256];
    char *abs = NULL;
    const char *join = getenv(JOIN_ENV);
    /* Join only a directory a traced ancestor prepared for the same path. */
    bool joining = false;
    if (join && *join) {
        char want[2 * PATH_MAX + 2], cwd[PATH_MAX];
        if (dir[0] == '/')
            snprintf(want, sizeof want, "%s", dir);
        else if (getcwd(cwd, sizeof cwd))
            snprintf(want, sizeof want, "%s/%s", cwd, dir);
        else
            want[0] = '\0';
        joining = strcmp(want, join) == 0;
    }
    int rc = st__ft_dir_prepare(dir, joining, &abs, &st__ft_g.dirfd, &st__ft_g.dir_created, err, sizeof err);
    if (rc) {
        st__diag(ST__FT_DIAG, "not tracing: %s", err);
        return false;
    }
    st__ft_g.dir = abs;
    setenv(JOIN_ENV, abs, 1);
    return true;
}

ST__NI static void exit_handler(int status, void *arg);
ST__NI static void fork_prepare(void);
ST__NI static void fork_parent(void);
ST__NI static void fork_child(void);

ST__NI static void init(void)
{
    if (env_disabled())
        return;
    st__ft_g.max_depth = (uint32_t)env_number("SIMPLETRACE_FUNC_DEPTH", DEFAULT_DEPTH, 1, MAX_DEPTH);
    uint64_t chunk = env_number("SIMPLETRACE_FUNC_BUFSIZE", DEFAULT_CHUNK_BYTES, MIN_CHUNK_BYTES, UINT64_C(1) << 34);
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    st__ft_g.chunk_bytes = (size_t)((chunk + page - 1) & ~(page - 1));
    st__ft_g.max_chunks = (unsigned)env_number("SIMPLETRACE_FUNC_BUFFERS", DEFAULT_MAX_CHUNKS, 1, 1024);
    st__ft_g.use_tsc = st__ft_clock_choose(getenv("SIMPLETRACE_FUNC_CLOCK"));
    st__clock_conv_init(&st__ft_g.clock, st__ft_g.use_tsc, st__clock_sample(st__ft_g.use_tsc, NULL));
    if (!setup_dir())
        return;
    start_session();
    st__ft_meta_start();

    const char *filter = getenv("SIMPLETRACE_FUNC_FILTER");
    if (filter && *filter) {
        if (st__ft_filter_build(filter, &st__ft_g.filter, &st__ft_g.filter_n) != 0) {
            st__diag(ST__FT_DIAG, "not tracing: out of memory resolving SIMPLETRACE_FUNC_FILTER");
            return;
        }
        st__ft_g.filter_on = true;
    }
    if (pthread_key_create(&thread_key, st__ft_thread_end) != 0) {
        st__diag(ST__FT_DIAG, "not tracing: no pthread key left");
        return;
    }
    have_membarrier = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    on_exit(exit_handler, NULL); /* glibc: unlike atexit, it gets the exit status */
    atomic_store(&st__ft_g.state, ST__FT_RUNNING);
}

ST__NI void st__ft_init_once(void)
{
    pthread_once(&init_once, init);
}

/* Start tracing before main(), so main's own entry is recorded. */
__attribute__((constructor, no_instrument_function)) static void start_up(void)
{
    st__ft_init_once();
}

/*
 * The calling thread, marked busy while the API holds library locks (a
 * signal handler's hooks on it return at once, see ft.h); a thread that
 * never traced is pointed at the sentinel meanwhile, so such a hook cannot
 * attach it (attaching takes a lock).
 */
ST__NI static unsigned api_enter(struct st__ft_thread **self)
{
    *self = st__ft_self;
    if (!*self)
        st__ft_self = &st__ft_sentinel;
    if (!*self || *self == &st__ft_sentinel)
        return 1;
    return atomic_exchange(&(*self)->busy, 1);
}

ST__NI static void api_leave(struct st__ft_thread *self, unsigned was_busy)
{
    if (!self)
        st__ft_self = NULL;
    else if (self != &st__ft_sentinel)
        atomic_store(&self->busy, was_busy);
}

/* --- process exit ------------------------------------------------------------ */

/* After this, every other thread either sees FINISHED in its next hook or
 * has its busy flag visible to us (asymmetric Dekker: the hooks pay no fence). */
ST__NI static void sync_with_hooks(void)
{
    if (!have_membarrier || syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
        struct timespec ts = {0, 2000000}; /* a hook lasts nanoseconds: 2 ms is plenty */
        nanosleep(&ts, NULL);
    }
}

/* Waits until t leaves the hook it is in; false after BUSY_WAIT_NS. */
ST__NI static bool wait_not_busy(struct st__ft_thread *t)
{
    uint64_t start = st__clock_mono_ns();
    while (atomic_load_explicit(&t->busy, memory_order_acquire)) {
        if (st__clock_mono_ns() - start > BUSY_WAIT_NS)
            return false;
        sched_yield();
    }
    return true;
}

/* Closes the open frames of every live thread that is not inside a hook. */
ST__NI static void close_all_frames(struct st__ft_thread *self)
{
    pthread_mutex_lock(&st__ft_g.lock);
    size_t n = 0;
    for (struct st__ft_thread *t = st__ft_g.threads; t; t = t->next)
        n++;
    struct st__ft_thread **v = calloc(n ? n : 1, sizeof *v);
    n = 0;
    for (struct st__ft_thread *t = st__ft_g.threads; v && t; t = t->next)
        if (!t->dead)
            v[n++] = t;
    pthread_mutex_unlock(&st__ft_g.lock);
    for (size_t i = 0; v && i < n; i++) {
        if (v[i] != self && !wait_not_busy(v[i]))
            continue; /* stuck in a hook: its published records are still written */
        pthread_mutex_lock(&st__ft_g.lock);
        bool dead = v[i]->dead;
        pthread_mutex_unlock(&st__ft_g.lock);
        if (!dead)
            st__ft_close_frames(v[i]);
    }
    free(v);
}

ST__NI static void finish(bool exited, int status)
{
    struct st__ft_thread *self = st__ft_self;
    bool real = self && self != &st__ft_sentinel;
    if (real)
        atomic_store(&self->busy, 1);
    else
        st__ft_self = &st__ft_sentinel; /* never attach from here */
    int prev = atomic_exchange(&st__ft_g.state, ST__FT_FINISHED);
    if (prev == ST__FT_OFF || prev == ST__FT_FINISHED) {
        atomic_store(&st__ft_g.state, prev);
        return;
    }
    st__ft_writer_shutdown();
    pthread_mutex_lock(&st__ft_g.pass_lock);
    sync_with_hooks();
    close_all_frames(real ? self : NULL);
    st__ft_pass_locked(true);
    st__ft_meta_write(exited, status);
    pthread_mutex_unlock(&st__ft_g.pass_lock);
    unsigned long long lost = atomic_load(&st__ft_g.lost_total);
    if (lost)
        st__diag(ST__FT_DIAG, "%llu records lost (buffers full or write errors); "
                 "see SIMPLETRACE_FUNC_BUFSIZE and SIMPLETRACE_FUNC_BUFFERS", lost);
    if (st__ft_g.write_error)
        st__diag(ST__FT_DIAG, "writing %s failed: %s", st__ft_g.dir, st_strerror(st__ft_g.write_error));
}

ST__NI static void exit_handler(int status, void *arg)
{
    (void)arg;
    finish(true, status);
}

/* --- fork -------------------------------------------------------------------- */

/* Set by fork_prepare, read by the handlers that follow it in the same
 * thread; pass_lock serialises concurrent forks. */
static bool fork_locked;
static struct st__ft_thread *fork_self;
static unsigned fork_was_busy;

/* Holds both locks across fork() so the child's copies are consistent. */
ST__NI static void fork_prepare(void)
{
    if (atomic_load(&st__ft_g.state) == ST__FT_OFF)
        return;
    pthread_mutex_lock(&st__ft_g.pass_lock);
    fork_was_busy = api_enter(&fork_self);
    pthread_mutex_lock(&st__ft_g.lock);
    fork_locked = true;
}

ST__NI static void fork_parent(void)
{
    if (!fork_locked)
        return;
    fork_locked = false;
    pthread_mutex_unlock(&st__ft_g.lock);
    api_leave(fork_self, fork_was_busy);
    pthread_mutex_unlock(&st__ft_g.pass_lock);
}

ST__NI static void free_chunk_list(struct st__ft_chunk *c)
{
    for (struct st__ft_chunk *next; c; c = next) {
        next = c->next;
        st__ft_chunk_free(c);
    }
}

/* Drops what belongs to the parent: its other threads and unwritten data.
 * The forking thread keeps its chunks (emptied) and its open frames. */
ST__NI static void forget_parent_data(struct st__ft_thread *self)
{
    for (struct st__ft_thread *t = st__ft_g.threads, *next; t; t = next) {
        next = t->next;
        if (t != self) {
            free_chunk_list(t->full_head);
            free_chunk_list(t->free_list);
            st__ft_chunk_free(t->chunk);
            munmap(t, t->map_len);
            continue;
        }
        for (struct st__ft_chunk *c = t->full_head, *cn; c; c = cn) {
            cn = c->next;
            c->written = c->fill = 0;
            c->next = t->free_list;
            t->free_list = c;
            atomic_fetch_add(&t->nfree, 1);
        }
        t->full_head = t->full_tail = NULL;
        if (t->chunk) {
            t->chunk->written = 0;
            atomic_store(&t->cur, t->chunk->recs);
        }
    }
    st__ft_g.threads = NULL;
}

ST__NI static void fork_child(void)
{
    if (!fork_locked)
        return;
    fork_locked = false;
    pthread_mutex_init(&st__ft_g.lock, NULL);
    pthread_mutex_init(&st__ft_g.pass_lock, NULL);
    struct st__ft_thread *self = fork_self;
    bool real = self && self != &st__ft_sentinel;
    if (atomic_load(&st__ft_g.state) != ST__FT_FINISHED) {
        st__ft_writer_after_fork_child();
        forget_parent_data(real ? self : NULL);
        atomic_store(&st__ft_g.lost_total, 0);
        atomic_store(&st__ft_g.written_total, 0);
        atomic_store(&st__ft_g.nthreads_seen, real ? 1 : 0);
        st__ft_g.write_error = 0;
        start_session();
        st__ft_meta_start();
        if (real) {
            self->tid = gettid();
            self->start_raw = st__ft_g.sess_raw;
            self->task = -1;
            self->lost = 0;
            self->next = NULL;
            st__ft_g.threads = self;
            st__ft_emit_open_frames(self);
        }
    }
    api_leave(self, fork_was_busy);
}

/* --- public API ----------------------------------------------------------- */


/* The state, after start-up; -ENODEV / -ESHUTDOWN when the API cannot act. */
ST__NI static int api_state(void)
{
    st__ft_init_once();
    int state = atomic_load(&st__ft_g.state);
    if (state == ST__FT_OFF)
        return -ENODEV;
    if (state == ST__FT_FINISHED)
        return -ESHUTDOWN;
    return state;
}

ST_API ST__NI int st_functrace_flush(void)
{
    int state = api_state();
    if (state < 0)
        return state;
    /* Not busy while waiting for pass_lock: the exit path may hold it and
     * wait for this thread's hooks (control.c, process exit). */
    pthread_mutex_lock(&st__ft_g.pass_lock);
    struct st__ft_thread *self;
    unsigned was_busy = api_enter(&self);
    int err = -ESHUTDOWN;
    if (atomic_load(&st__ft_g.state) != ST__FT_FINISHED) {
        err = st__ft_pass_locked(true);
        int e = st__ft_meta_write(false, 0);
        err = err ? err : e;
    }
    api_leave(self, was_busy);
    pthread_mutex_unlock(&st__ft_g.pass_lock);
    return err;
}

ST_API ST__NI int st_functrace_set_enabled(bool enabled)
{
    int state = api_state();
    if (state < 0)
        return state;
    int want = enabled ? ST__FT_RUNNING : ST__FT_PAUSED;
    /* Never overwrite FINISHED set by a concurrent exit. */
    while (state != want && !atomic_compare_exchange_weak(&st__ft_g.state, &state, want))
        if (state == ST__FT_FINISHED)
            return -ESHUTDOWN;
    return 0;
}

ST_API ST__NI int st_functrace_set_dir(const char *dir)
{
    int state = api_state();
    if (state < 0)
        return state;
    if (!dir || !*dir)
        return -EINVAL;
    pthread_mutex_lock(&st__ft_g.pass_lock);
    struct st__ft_thread *self;
    unsigned was_busy = api_enter(&self);
    int err = -EBUSY;
    if (!st__ft_g.wrote_anything) {
        char msg[PATH_MAX + 256];
        char *abs = NULL;
        int fd = -1;
        bool created = false;
        err = st__ft_dir_prepare(dir, false, &abs, &fd, &created, msg, sizeof msg);
        if (!err) {
            close(st__ft_g.dirfd);
            if (st__ft_g.dir_created && strcmp(abs, st__ft_g.dir) != 0)
                rmdir(st__ft_g.dir); /* fails harmlessly unless empty */
            free(st__ft_g.dir);
            st__ft_g.dir = abs;
            st__ft_g.dirfd = fd;
            st__ft_g.dir_created = created;
            setenv(JOIN_ENV, abs, 1);
        }
    }
    api_leave(self, was_busy);
    pthread_mutex_unlock(&st__ft_g.pass_lock);
    return err;
}

/* struct st_functrace_stats of the first release: the least struct_size accepted. */
#define STATS_SIZE_0 \
    (offsetof(struct st_functrace_stats, write_error) + sizeof(((struct st_functrace_stats *)0)->write_error))

/* Stores value in the field of s if the caller's structure has it (api.h). */
#define STATS_PUT(s, field, value)                                                              \
    do {                                                                                        \
        if (offsetof(struct st_functrace_stats, field) + sizeof (s)->field <= (s)->struct_size) \
            (s)->field = (value);                                                               \
    } while (0)

ST_API ST__NI int st_functrace_get_stats(struct st_functrace_stats *stats)
{
    if (!stats || stats->struct_size < STATS_SIZE_0)
        return -EINVAL;
    STATS_PUT(stats, written, atomic_load(&st__ft_g.written_total));
    STATS_PUT(stats, lost, atomic_load(&st__ft_g.lost_total));
    STATS_PUT(stats, threads, atomic_load(&st__ft_g.nthreads_seen));
    STATS_PUT(stats, write_error, st__ft_g.write_error);
    return 0;
}
