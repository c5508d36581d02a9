/*
 * The -finstrument-functions hooks: the tracing hot path.
 *
 * Every instrumented function calls __cyg_profile_func_enter(this_fn, site)
 * first and __cyg_profile_func_exit(this_fn, site) last. Per call, a hook
 * does: one TLS load, the nesting guard, one load of the process state,
 * the depth bookkeeping, a raw timestamp and a 16-byte store into the
 * thread's current chunk (format/uftrace_format.h), published by a release store of
 * `cur`. No lock, no allocation, no system call, except when the chunk
 * is full (st__ft_rotate, once per flush unit).
 *
 * Depth bookkeeping: `level` counts every instrumented call open in the
 * thread; `frames` holds only the recorded ones (those the depth limit and
 * the filter let through), each with the level it was entered at. An exit
 * is recorded exactly when it comes back to the level of the top recorded
 * frame, so ENTRY/EXIT always pair, with the same depth, whatever was
 * filtered out in between.
 *
 * Nesting guard: `busy` is 1 while a hook (or the library) works on the
 * thread. A signal handler that calls instrumented code while the
 * interrupted hook is half-way through a record finds busy set and returns
 * without touching anything; both its entry and its exit are skipped, so
 * the levels stay balanced. Threads that must never trace (the writer, a
 * thread whose TLS is being torn down) point at st__ft_sentinel, whose busy
 * is always 1.
 *
 * The library is built without -finstrument-functions; every function
 * carries no_instrument_function anyway, so including its headers in
 * instrumented code cannot recurse into the hooks.
 */
#include "ft.h"
#include "uftrace_format.h"
#include <simpletrace/api.h>

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The hooks -finstrument-functions calls (no system header declares them). */
void __cyg_profile_func_enter(void *this_fn, void *call_site);
void __cyg_profile_func_exit(void *this_fn, void *call_site);

__thread struct st__ft_thread *st__ft_self __attribute__((tls_model("initial-exec")));
struct st__ft_thread st__ft_sentinel = {.busy = 1};

ST__NI __attribute__((noinline)) uint64_t st__ft_mono_ns(void)
{
    return st__clock_mono_ns();
}

/* Takes the thread for a hook; false when it must not trace now. */
static inline __attribute__((no_instrument_function, always_inline)) bool
enter_guard(struct st__ft_thread *t)
{
    if (ST__UNLIKELY(atomic_load_explicit(&t->busy, memory_order_relaxed)))
        return false;
    atomic_store_explicit(&t->busy, 1, memory_order_relaxed);
    /* busy must be set before the state is read (the exit path relies on
     * it, with membarrier() on its side) and before any field is touched
     * (a signal handler relies on it: same thread, compiler order is all). */
    atomic_signal_fence(memory_order_seq_cst);
    return true;
}

static inline __attribute__((no_instrument_function, always_inline)) void
leave_guard(struct st__ft_thread *t)
{
    atomic_signal_fence(memory_order_seq_cst);
    atomic_store_explicit(&t->busy, 0, memory_order_release);
}

/* Stores one record at p and publishes it. */
static inline __attribute__((no_instrument_function, always_inline)) void
put_record(struct st__ft_thread *t, uint64_t *p, uint64_t time, unsigned type, uint32_t depth, uint64_t addr)
{
    p[0] = time;
    p[1] = st__uft_rec_data(type, depth, addr);
    atomic_store_explicit(&t->cur, p + 2, memory_order_release);
}

/* Appends one record wherever it can: a full chunk (rotate, maybe drop). */
ST__NI static void emit_slow(struct st__ft_thread *t, unsigned type, uint32_t depth, uint64_t addr)
{
    uint64_t *p = atomic_load_explicit(&t->cur, memory_order_relaxed);
    if (p == t->end && (p = st__ft_rotate(t)) == NULL) {
        t->lost++;
        atomic_fetch_add_explicit(&st__ft_g.lost_total, 1, memory_order_relaxed);
        return;
    }
    put_record(t, p, st__ft_raw(st__ft_g.use_tsc), type, depth, addr);
}

/* emit() and leave_guard() for everything but the common case; a separate
 * function so the hooks' fast path needs no saved registers. */
ST__NI __attribute__((noinline)) static void emit_slow_leave(struct st__ft_thread *t, unsigned type, uint32_t depth,
                                                             uint64_t addr)
{
    emit_slow(t, type, depth, addr);
    leave_guard(t);
}

/*
 * Appends one record and leaves the hook: the fast path is a counter read and
 * two stores into the current chunk; a full chunk, or the clock_gettime
 * source, goes through emit_slow_leave().
 */
static inline __attribute__((no_instrument_function, always_inline)) void
emit_leave(struct st__ft_thread *t, unsigned type, uint32_t depth, uint64_t addr)
{
#if ST_CLOCK_HAVE_COUNTER
    uint64_t *p = atomic_load_explicit(&t->cur, memory_order_relaxed);
    if (ST__LIKELY(p != t->end && st__ft_g.use_tsc)) {
        put_record(t, p, st__clock_ticks(), type, depth, addr);
        leave_guard(t);
        return;
    }
#endif
    emit_slow_leave(t, type, depth, addr);
}

/* First hook of the thread: attach, then take the hook again. */
ST__NI __attribute__((noinline)) static void enter_first(void *this_fn, void *call_site)
{
    if (st__ft_thread_attach() != &st__ft_sentinel)
        __cyg_profile_func_enter(this_fn, call_site);
}

/* An entry in any state but RUNNING (the guard is held). */
ST__NI __attribute__((noinline)) static void enter_not_running(struct st__ft_thread *t, int state)
{
    if (state == ST__FT_PAUSED)
        t->level++; /* keeps exits pairing with the calls entered before */
    leave_guard(t);
}

/* An entry at the depth limit or with a filter (the guard is held). */
ST__NI __attribute__((noinline)) static void enter_limited(struct st__ft_thread *t, uint64_t fn)
{
    uint64_t level = t->level++;
    uint32_t d = t->rdepth;
    if (d >= t->max_depth || (st__ft_g.filter_on && !st__ft_filter_has(fn))) {
        leave_guard(t);
        return;
    }
    t->frames[d].fn = fn;
    t->frames[d].level = level;
    t->rdepth = d + 1;
    emit_slow(t, ST_UFT_REC_ENTRY, d, fn);
    leave_guard(t);
}

ST_API ST__NI void __cyg_profile_func_enter(void *this_fn, void *call_site)
{
    struct st__ft_thread *t = st__ft_self;
    if (ST__UNLIKELY(!t)) {
        enter_first(this_fn, call_site);
        return;
    }
    if (!enter_guard(t))
        return;
    int state = atomic_load_explicit(&st__ft_g.state, memory_order_relaxed);
    if (ST__UNLIKELY(state != ST__FT_RUNNING)) {
        enter_not_running(t, state);
        return;
    }
    uint64_t fn = (uint64_t)(uintptr_t)this_fn;
    uint32_t d = t->rdepth;
    if (ST__UNLIKELY(d >= t->max_depth || st__ft_g.filter_on)) {
        enter_limited(t, fn);
        return;
    }
    t->frames[d].fn = fn;
    t->frames[d].level = t->level++;
    t->rdepth = d + 1;
    emit_leave(t, ST_UFT_REC_ENTRY, d, fn);
}

ST_API ST__NI void __cyg_profile_func_exit(void *this_fn, void *call_site)
{
    (void)this_fn;
    (void)call_site;
    struct st__ft_thread *t = st__ft_self;
    if (ST__UNLIKELY(!t)) /* nothing entered in this thread yet */
        return;
    if (!enter_guard(t))
        return;
    int state = atomic_load_explicit(&st__ft_g.state, memory_order_relaxed);
    if (ST__LIKELY(state == ST__FT_RUNNING || state == ST__FT_PAUSED)) {
        /* FINISHED: the exit path owns every field; touch none. */
        uint64_t level = --t->level;
        uint32_t d = t->rdepth;
        if (d && t->frames[d - 1].level == level) {
            t->rdepth = --d;
            emit_leave(t, ST_UFT_REC_EXIT, d, t->frames[d].fn);
            return;
        }
    }
    leave_guard(t);
}

/* Closes every recorded frame still open with an EXIT at the current time
 * (thread end, process exit), after a LOST record for drops not yet
 * counted in the file. Never drops. The caller owns t (busy or FINISHED). */
ST__NI void st__ft_close_frames(struct st__ft_thread *t)
{
    t->closing = true;
    if (t->lost) {
        uint64_t *p = atomic_load_explicit(&t->cur, memory_order_relaxed);
        if (p == t->end) {
            st__ft_rotate(t); /* a new chunk starts with the LOST record */
        } else {
            p[0] = st__ft_raw(st__ft_g.use_tsc);
            p[1] = st__uft_rec_data(ST_UFT_REC_LOST, t->rdepth, t->lost);
            atomic_store_explicit(&t->cur, p + 2, memory_order_release);
            t->lost = 0;
        }
    }
    while (t->rdepth) {
        uint32_t d = --t->rdepth;
        emit_slow(t, ST_UFT_REC_EXIT, d, t->frames[d].fn);
    }
    t->closing = false;
}

/* Re-opens the recorded frames with ENTRY records (a forked child starts
 * its own file inside the calls its parent had open). */
ST__NI void st__ft_emit_open_frames(struct st__ft_thread *t)
{
    for (uint32_t d = 0; d < t->rdepth; d++)
        emit_slow(t, ST_UFT_REC_ENTRY, d, t->frames[d].fn);
}

/*
 * First hook of a thread: allocates its state and first chunk (mmap only,
 * so this is safe even from a signal handler) and registers it. Returns
 * the sentinel when the process does not trace or memory is short; the
 * thread then never traces.
 */
ST__NI struct st__ft_thread *st__ft_thread_attach(void)
{
    /* A signal handler's hooks during the attach see the sentinel. */
    st__ft_self = &st__ft_sentinel;
    st__ft_init_once();
    int state = atomic_load(&st__ft_g.state);
    if (state != ST__FT_RUNNING && state != ST__FT_PAUSED)
        return &st__ft_sentinel;

    size_t len = sizeof(struct st__ft_thread) + (size_t)st__ft_g.max_depth * sizeof(struct st__ft_frame);
    struct st__ft_thread *t = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED)
        return &st__ft_sentinel;
    struct st__ft_chunk *c = st__ft_chunk_new(st__ft_g.chunk_bytes, false);
    if (!c) {
        munmap(t, len);
        return &st__ft_sentinel;
    }
    t->map_len = len;
    t->frames = (struct st__ft_frame *)(t + 1);
    t->max_depth = st__ft_g.max_depth;
    t->chunk = c;
    t->end = c->recs + st__ft_g.chunk_bytes / sizeof(uint64_t);
    atomic_init(&t->cur, c->recs);
    atomic_init(&t->busy, 0);
    atomic_init(&t->nfree, 0);
    t->nchunks = 1;
    t->tid = gettid();
    t->task = -1;
    t->start_raw = st__ft_raw(st__ft_g.use_tsc);

    pthread_mutex_lock(&st__ft_g.lock);
    state = atomic_load(&st__ft_g.state);
    bool ok = state == ST__FT_RUNNING || state == ST__FT_PAUSED;
    if (ok) {
        t->next = st__ft_g.threads;
        st__ft_g.threads = t;
    }
    pthread_mutex_unlock(&st__ft_g.lock);
    if (!ok) {
        st__ft_chunk_free(c);
        munmap(t, len);
        return &st__ft_sentinel;
    }
    atomic_fetch_add(&st__ft_g.nthreads_seen, 1);
    pthread_setspecific(st__ft_key(), t); /* runs st__ft_thread_end at thread exit */
    st__ft_self = t;
    return t;
}

/*
 * pthread key destructor, in the ending thread: closes its open frames,
 * queues its last chunk and leaves the rest to the writer, which frees it.
 * After this the thread's hooks (from later destructors) see the sentinel.
 */
ST__NI void st__ft_thread_end(void *arg)
{
    struct st__ft_thread *t = arg;
    st__ft_self = &st__ft_sentinel;
    atomic_store_explicit(&t->busy, 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    if (atomic_load(&st__ft_g.state) == ST__FT_FINISHED) {
        leave_guard(t); /* the exit path writes everything of this thread */
        return;
    }
    st__ft_close_frames(t);
    pthread_mutex_lock(&st__ft_g.lock);
    if (t->chunk) {
        t->chunk->fill = (size_t)(atomic_load_explicit(&t->cur, memory_order_relaxed) - t->chunk->recs) / 2;
        t->chunk->next = NULL;
        if (t->full_tail)
            t->full_tail->next = t->chunk;
        else
            t->full_head = t->chunk;
        t->full_tail = t->chunk;
        t->chunk = NULL;
    }
    t->dead = true;
    atomic_store_explicit(&t->busy, 0, memory_order_release);
    pthread_mutex_unlock(&st__ft_g.lock);
    /* t may be freed by the writer from here on. */
    st__ft_writer_kick();
}
