/*
 * What the drain's files share: the state the program's threads (trace
 * file control, tracefile.c) and the writeout thread (writer.c) exchange
 * under wr_lock, and the parts' start-up and fork steps that drain.c
 * drives. Nothing outside drain/ includes this.
 */
#ifndef ST_RUNTIME_DRAIN_INTERNAL_H
#define ST_RUNTIME_DRAIN_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "fd_ident.h"

/* A file change the writer applies in its next pass. */
struct st__op {
    bool close;         /* drain, then close the current file */
    int fd;             /* -1, or adopt this file ... */
    struct st__fd_ident id; /* ... which is this one (the program may close fd before the writer adopts it) */
    bool append;        /* fd continues the file closed last */
    uint32_t mapped;    /* when appending: mappings it already has */
    size_t base_len;    /* path is the first base_len bytes + ".piece" (rotate=) */
    uint64_t piece;
    uint64_t name_gen;  /* st__ws.name_gen when the op was posted */
    int unlock_fd;      /* -1, or the lock on the old file's name: closed once that file is closed ... */
    struct st__fd_ident unlock_id; /* ... if it is still that lock's (fd_ident.h) */
    char path[4096];    /* fd's name, for messages */
};

/* The file this process closed last: reopening it appends. */
struct st__closed_file {
    bool valid;
    dev_t dev;
    ino_t ino;
    uint64_t size;
    uint32_t mapped;
    char path[4096];
};

/* Shared by the program's threads and the writer; under st__wr_lock. */
struct st__wshared {
    char tmpl[4096];   /* the name as configured, placeholders and all, absolute once opened ("" for the default, trace-%p) */
    char name[4096];   /* tmpl expanded (or its fallback) when opened; "" until then */
    time_t start;      /* when tracing started: %t */
    uint64_t piece;    /* rotate=: the file is name.piece (name itself for 0) */
    uint64_t name_gen; /* bumped when control changes name or piece */
    uint64_t rotate;   /* rotate=SIZE, or 0 */
    unsigned keep;     /* rotate-keep=N, or 0 for all */
    bool compress;     /* compress=zstd: files opened from now on are zstd frames (zwrite.h) ... */
    int compress_level; /* ... at this level */
    bool compress_fixed; /* ... always (:fixed), not faster ones while the writer is behind (st__zw_adapt_level) */
    bool enabled;      /* the file is on */
    bool lazy_open;    /* fork child: open its own file at its first event ... */
    bool open_failed;  /* ... which it could not: said then (st__file_open_failed) */
    int error;         /* what stopped writing, or 0 */
    int fail_error;    /* the last write error, kept when writing resumes (exit report) ... */
    char fail_path[4096]; /* ... and the file it was writing */
    uint64_t req_seq;  /* passes asked for */
    uint64_t done_seq; /* req_seq as of the last finished pass */
    bool have_op;
    struct st__op op;
    bool running;      /* the drain was started (a file enabled: by the thread or inline, writer.c) ... */
    bool exited;       /* ... and has ended (after the exit flush) */
    bool final;        /* the exit flush is asked for */
    bool threaded;     /* the writeout thread was started (it runs while !exited) */
    bool stop;         /* a configuration that started the thread failed: end it, writing nothing */
    pthread_t thread;
    struct st__closed_file last;
};

extern struct st__wshared st__ws;
extern pthread_mutex_t st__wr_lock;
extern pthread_cond_t st__wr_cond;

/* Mirror of st__ws.lazy_open, for the first-event check without the lock (relaxed). */
extern int st__lazy_flag;

/* writer=: who runs the drain's passes (writer.c). */
enum st__writer_mode {
    ST_WRITER_AUTO = 0,   /* the tracing threads while one thread traces, then the writeout thread */
    ST_WRITER_THREAD = 1, /* the writeout thread, from the start */
    ST_WRITER_INLINE = 2, /* the tracing threads, always */
};

/* Start-up: the writer's semaphore (before any kick can be posted). */
void st__writer_init(void);

/*
 * The rings' wake hook: a producer crossed a wake-up point, or a thread
 * exited. Wakes the writeout thread or, without it, runs a short pass
 * right here (one that never waits for a lock). errno kept.
 */
void st__writer_kick(void);

/* The rings' first-event hook, the writer's part: a second thread's first record starts the thread (writer=auto). */
void st__writer_first_event(void);

/* The lock a pass is run under, whoever runs it; fork takes it (after file_lock and snap_lock), so no child is made mid-pass. */
void st__writer_pass_lock(void);
void st__writer_pass_unlock(void);

/* Fork's prepare handler, pass_lock held: without the thread, a pass, so the parent's records reach its file before the child runs. */
void st__writer_fork_pass(void);

/*
 * Starts the drain unless it runs (a file is being enabled): the
 * writeout thread when writer= wants it, else the tracing threads drain
 * inline. wr_lock held. 1 started, 0 already running, -EAGAIN or -ENOMEM,
 * -ECANCELED after exit.
 */
int st__writer_start(void);

/* Ends a drain st__writer_start() started that was never given a file; wr_lock held (released while joining). */
void st__writer_stop(void);

/* True while the drain runs (by the thread or inline); wr_lock held. */
bool st__writer_alive(void);

/*
 * Asks for a pass (taking the op posted, if any) and, with wait, waits for
 * it; without the thread the caller runs it itself, wait or not. wr_lock
 * held (released meanwhile, as a wait on st__wr_cond releases it).
 */
void st__writer_request(bool wait);

/* writer=auto|thread|inline into *mode. 0 or -EINVAL. */
int st__writer_parse_mode(const char *v, int *mode);

/*
 * writer= in a configuration's phases. Prepare sets the mode, and when the
 * drain runs inline and the mode wants the thread, starts it; -EBUSY for
 * inline once the thread runs (it runs until exit), -errno when the thread
 * cannot start for writer=thread (writer=auto then stays inline). Abort
 * puts the old mode back and ends a thread the prepare started.
 */
struct st__writer_prep {
    int old_mode;
    bool started;
};
int st__writer_mode_prepare(int mode, struct st__writer_prep *p, char *err, size_t errlen);
void st__writer_mode_abort(const struct st__writer_prep *p);

/* The current file name (the current piece's) into buf; wr_lock held. Returns the base's length. */
size_t st__current_name(char *buf, size_t len);

/* --- trace-file control (tracefile.c), with file_lock held ------------------ */

/* Expands a name template ("" for the default) for this process. 0, -EINVAL or -ENAMETOOLONG (message in err). */
int st__file_expand(const char *tmpl, char *buf, size_t len, char *err, size_t errlen);

void st__file_lock(void);
void st__file_unlock(void);

/* A trace file opened but not yet handed to the writeout thread. */
struct st__file_prep {
    int fd;            /* -1 when nothing was opened */
    int lock_fd;       /* -1, or the new lock on the name (flock, see tracefile.c) */
    bool lock_created; /* taking the lock created the file at path */
    bool lock_kept;    /* the name's lock is the one this process holds already */
    bool fell_back;    /* wanted was locked by another process: path is wanted-<pid> */
    long holder;       /* the process holding wanted's lock, or 0 when unknown */
    bool created;      /* we created the file: remove it if we abort */
    bool append;       /* same file this process closed last: append */
    bool started;      /* this prepare started the writeout thread: abort ends it */
    uint32_t mapped;   /* when appending: IDs whose mappings the file has */
    int set_name;      /* on commit: 0 keep the name, 1 tmpl becomes it, 2 the default's (tmpl too) */
    size_t base_len;   /* path is a piece of the file named by its first base_len bytes */
    uint64_t piece;    /* rotate=: which piece (0: the name itself) */
    char path[4096];
    char tmpl[4096];   /* set_name: the name as configured, made absolute (a chdir() later changes nothing) */
    char wanted[4096]; /* fell_back: the name another process holds */
};

/*
 * Opens the file that would become the trace file (path, a name template
 * expanded now, or the current name when NULL) and locks its name, without
 * truncating it, and starts the writeout thread,
 * changing nothing else, so that a failure is reported before anything is
 * applied. 0 with prep->fd == -1 when that file is already the open trace
 * file. -errno and a message naming the file, or the thread.
 */
int st__file_prepare(const char *path, struct st__file_prep *prep, char *err, size_t errlen);

/* Forgets a prepared file (removes it if we created it; ends a thread the prepare started). */
void st__file_abort(struct st__file_prep *prep);

/*
 * Makes the prepared file the trace file and enables writing (a previous
 * file is drained and closed first); with wait, returns once the writeout
 * thread has done so. Cannot fail.
 */
void st__file_commit(struct st__file_prep *prep, bool wait);

/* The rings' first_event hook: a fork child's first event opens its own file now. */
void st__file_first_event(void);

/* Fork child: the file lock starts unlocked (the prepare handler held it). */
void st__file_fork_child(void);

/* compress=: on (zstd at level, adapting unless fixed) or off, for the files opened from the writer's next pass on. */
void st__file_set_compress(bool on, int level, bool fixed);

/* rotate=SIZE (0: off) and rotate-keep=N (0: keep all); negative: unchanged. From the writer's next pass. */
void st__file_set_rotation(int64_t size, long keep);

/* --- the flight thread (flight.c) --------------------------------------------- */

/* flight-signal=NAME: SIGUSR1, USR2, HUP, QUIT, PWR, WINCH, URG, RTMIN+N ("SIG" optional). 0 or -EINVAL. */
int st__flight_parse_signal(const char *v, int *sig);

/*
 * Configuration of the flight thread, in a transaction's phases. Prepare
 * checks and starts the thread (-EBUSY for a second, different signal or
 * trigger name, or a trigger after the thread started without one; -errno
 * when it cannot start); commit installs the signal's handler and arms
 * the trigger; abort ends a thread this prepare started.
 */
struct st__flight_prep {
    int sig;            /* flight-signal=, or 0 */
    const char *trigger; /* flight-trigger=, or NULL */
    bool started;       /* the thread was started by this prepare */
};
int st__flight_prepare(struct st__flight_prep *p, char *err, size_t errlen);
void st__flight_commit(struct st__flight_prep *p);
void st__flight_abort(struct st__flight_prep *p);

/* Fork child: the writer's own state starts afresh (the thread is not in the child): its file, stage, counters, locks. */
void st__writer_fork_child(void);

/* Snapshots' lock (snapshot.c), for fork; the child's starts unlocked. */
void st__snapshot_lock(void);
void st__snapshot_unlock(void);
void st__snapshot_fork_child(void);

/* Fork child: the flight thread's snapshot lock starts afresh (flight.c). */
void st__flight_fork_child(void);

/* The rings' trigger_evicted hook (flight.c): wakes the flight thread. */
void st__flight_trigger_evicted(bool sure, uint32_t lo, uint32_t hi);

#endif /* ST_RUNTIME_DRAIN_INTERNAL_H */
