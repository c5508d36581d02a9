/*
 * libsimpletrace-func internals shared by its files: the per-thread state
 * the hooks write, the chunks they fill, and the process-wide state.
 *
 * Who owns what:
 * - A traced thread owns its struct st__ft_thread's hot fields (cur, end,
 *   level, rdepth, frames, lost) and the records of its current chunk
 *   beyond what it has published in `cur`. Nothing else touches them while
 *   the thread can still run a hook (`busy` and the FINISHED state hand
 *   them to the exit path, see control.c).
 * - Chunks move thread -> full queue -> writer -> free list -> thread; the
 *   lists and `dead` change only under st__ft_g.lock (nchunks is the
 *   owner's own count).
 * - The writer (whoever holds st__ft_g.pass_lock: the writer thread, a
 *   flush, or the exit path) owns `written` of every chunk, the task
 *   table, the clock conversion and the output files.
 *
 * Lock order: pass_lock, then lock. Hooks take only `lock` (to swap
 * chunks); every thread that takes `lock` has busy = 1 (or is the sentinel)
 * while it holds it, so a signal handler's hooks on that thread return at
 * once and can never wait for a lock their own thread holds.
 */
#ifndef ST_FUNCTRACE_FT_H
#define ST_FUNCTRACE_FT_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "clock.h"

#ifndef ST__NI
#define ST__NI __attribute__((no_instrument_function))
#endif
/* How the tracer's messages on stderr begin (st__diag, diag.h). */
#define ST__FT_DIAG "simpletrace-func"
#define ST__LIKELY(x) __builtin_expect(!!(x), 1)
#define ST__UNLIKELY(x) __builtin_expect(!!(x), 0)

/*
 * Timestamps (the one clock module, clock.h): the hooks store raw values,
 * the CPU counter's ticks (TSC, CNTVCT_EL0) when st__ft_g.use_tsc, else CLOCK_MONOTONIC ns; the writer
 * converts them with st__ft_g.clock as it writes them out.
 */

/* CLOCK_MONOTONIC ns, out of line: inlined, clock_gettime would grow every hook that may read it. */
uint64_t st__ft_mono_ns(void);

/* A raw timestamp of the kind the hooks store. */
static inline __attribute__((no_instrument_function, always_inline)) uint64_t st__ft_raw(bool use_tsc)
{
#if ST_CLOCK_HAVE_COUNTER
    if (ST__LIKELY(use_tsc))
        return st__clock_ticks();
#else
    (void)use_tsc;
#endif
    return st__ft_mono_ns();
}

/*
 * True when the hooks are to read the CPU's counter. force is
 * SIMPLETRACE_FUNC_CLOCK: "monotonic" says no, "counter" or the counter's
 * name (ST_CLOCK_COUNTER: "tsc", "cntvct") yes where there is one;
 * anything else (NULL, "") leaves it to st__clock_counter_usable().
 */
bool st__ft_clock_choose(const char *force);

/* Process tracing state, read by every hook. */
enum st__ft_state {
    ST__FT_OFF = 0,      /* not started, disabled, or failed: hooks do nothing */
    ST__FT_RUNNING = 1,  /* recording */
    ST__FT_PAUSED = 2,   /* no new entries; exits of recorded frames still recorded */
    ST__FT_FINISHED = 3, /* the exit path owns every buffer: hooks do nothing */
};

/* A buffer of records; chunk_bytes of them after a cache-line header. */
struct st__ft_chunk {
    struct st__ft_chunk *next; /* in a full queue or free list */
    size_t written;            /* records already written out (writer only) */
    size_t fill;               /* records in it when queued */
    size_t map_len;            /* bytes mapped for header + records */
    uint64_t pad[4];           /* records start on a cache line */
    uint64_t recs[];           /* two words per record: time, data */
};

/* A recorded frame still open. */
struct st__ft_frame {
    uint64_t fn;    /* this_fn of its entry */
    uint64_t level; /* the thread's call level at its entry: its exit comes back to it */
};

struct st__ft_thread {
    /* Hot: every hook of the thread. */
    _Atomic(uint64_t *) cur;     /* next free word; published (release) after each record */
    uint64_t *end;               /* end of the current chunk; cur == end: rotate */
    uint64_t level;              /* instrumented calls open in this thread */
    uint32_t rdepth;             /* recorded frames open: frames[0..rdepth) */
    uint32_t max_depth;          /* capacity of frames: SIMPLETRACE_FUNC_DEPTH */
    atomic_uint busy;            /* 1 while a hook or the library works on this thread */
    struct st__ft_frame *frames;
    /* Owner thread, cold. */
    struct st__ft_chunk *chunk;  /* current chunk; NULL while dropping */
    uint64_t lost;               /* records dropped since the last LOST record */
    bool closing;                /* thread end or exit: may map chunks beyond max_chunks */
    pid_t tid;
    uint64_t start_raw;          /* raw clock at attach: the TASK line's time */
    size_t map_len;              /* bytes mapped for this struct + frames */
    unsigned nchunks;            /* chunks this thread owns, wherever they are */
    /* Under st__ft_g.lock. */
    struct st__ft_chunk *full_head, *full_tail; /* queued for writing, oldest first */
    struct st__ft_chunk *free_list;             /* written out, ready for reuse */
    atomic_uint nfree;           /* length of free_list (read without the lock) */
    bool dead;                   /* ended; its last chunk is queued */
    struct st__ft_thread *next;  /* every thread of the process */
    /* Writer only. */
    long task;                   /* index in the task table, -1 until seen */
};

/* Process-wide state. Hot fields first; the rest is cold. */
struct st__ft_global {
    _Atomic int state;           /* enum st__ft_state */
    bool use_tsc;                /* raw times are TSC ticks (see st__ft_raw) */
    bool filter_on;              /* only addresses in filter[] are recorded */
    size_t filter_n;
    uint64_t *filter;            /* sorted runtime addresses of allowed functions */
    uint32_t max_depth;          /* recorded frames per thread */
    size_t chunk_bytes;          /* flush unit: bytes of records per chunk */
    unsigned max_chunks;         /* chunks per thread before dropping */

    pthread_mutex_t lock;        /* thread list and chunk lists */
    pthread_mutex_t pass_lock;   /* one write-out pass at a time; owns the outputs */
    struct st__ft_thread *threads;
    atomic_ullong lost_total;    /* records dropped (buffers full or write errors) */
    atomic_ullong written_total; /* records written to .dat files */
    atomic_uint nthreads_seen;

    pid_t pid;
    char sid[17];                /* session id: 16 hex digits */
    uint64_t sess_raw;           /* raw clock when this process's session began */
    struct st__clock_conv clock;  /* raw -> ns; writer only */
    int dirfd;                   /* output directory */
    char *dir;                   /* its absolute path */
    bool dir_created;            /* we created it (set_dir may remove it when empty) */
    bool wrote_anything;         /* a .dat or metadata file was written */
    int write_error;             /* first -errno of a failed write, 0 if none */
};

extern struct st__ft_global st__ft_g;
extern struct st__ft_thread st__ft_sentinel;
extern __thread struct st__ft_thread *st__ft_self __attribute__((tls_model("initial-exec")));

/* hooks.c */
struct st__ft_thread *st__ft_thread_attach(void);
void st__ft_thread_end(void *arg);
void st__ft_close_frames(struct st__ft_thread *t);
void st__ft_emit_open_frames(struct st__ft_thread *t);

/* control.c */
void st__ft_init_once(void);
pthread_key_t st__ft_key(void);

/* writer.c */
struct st__ft_chunk *st__ft_chunk_new(size_t bytes, bool huge);
void st__ft_chunk_free(struct st__ft_chunk *c);
uint64_t *st__ft_rotate(struct st__ft_thread *t);
void st__ft_writer_kick(void);
void st__ft_writer_shutdown(void);
void st__ft_writer_after_fork_child(void);
int st__ft_pass_locked(bool live);
void st__ft_tasks_reset(void);

/* One task as the metadata writer needs it. */
struct st__ft_task {
    pid_t tid;
    uint64_t start_ns;   /* TASK timestamp */
    uint64_t last_ns;    /* latest time written to its file: times never go back */
    uint64_t written;    /* records written to its .dat */
    bool listed;         /* its TASK line is in task.txt */
};
struct st__ft_task *st__ft_tasks(size_t *count);
uint64_t st__ft_sess_ns(void);

/* meta.c */
int st__ft_dir_prepare(const char *path, bool join, char **abs_out, int *dirfd_out, bool *created,
                       char *errbuf, size_t errlen);
int st__ft_meta_write(bool exited, int status);
void st__ft_meta_start(void);

/* filter.c */
bool st__ft_glob_match(const char *pattern, const char *name);
int st__ft_filter_build(const char *patterns, uint64_t **addrs, size_t *count);

/* True when addr is in the sorted filter array. */
static inline __attribute__((no_instrument_function)) bool st__ft_filter_has(uint64_t addr)
{
    const uint64_t *a = st__ft_g.filter;
    size_t lo = 0, hi = st__ft_g.filter_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < st__ft_g.filter_n && a[lo] == addr;
}

#endif /* ST_FUNCTRACE_FT_H */
