/*
 * libsimpletrace private declarations, shared by the runtime's files only.
 *
 * The parts and what each owns:
 *
 *   registry.c  groups, event IDs and state, enable rules,     reg_lock
 *               lazy one-time initialisation (st__init)
 *   config.c    st_configure(): parse and validate everything, then apply
 *   clock.c     raw timestamps, their conversion to ns           writer thread
 *   buffer.c    per-thread rings and the tracing hot path        ring_lock
 *   writer.c    writeout thread, trace file, flush, exit, fork   ctl_lock, wr_lock
 *   log.c       log backend         stats.c  st_stats_get()      errors.c
 *
 * Lock order. A thread holding one of these never takes an earlier one:
 *
 *   ctl_lock  ->  reg_lock  ->  wr_lock  ->  ring_lock
 *
 * ctl_lock serialises control operations on the trace file (held while
 * waiting for the writeout thread to apply them); none of the locks is
 * taken on the tracing path, a thread's first event included (except a
 * fork child's, which opens its own file).
 *
 * Every public entry point calls st__init() first. Internal functions never
 * do, so st__init()'s own work (applying SIMPLETRACE) cannot recurse into
 * pthread_once, and the writeout thread never waits for initialisation.
 */
#ifndef ST_RUNTIME_INTERNAL_H
#define ST_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <simpletrace/simpletrace.h>

/* The library is built with hidden visibility; public symbols say so. */
#define ST_EXPORT __attribute__((visibility("default")))

/*
 * Default per-thread buffer size and the range bufsize= accepts. 4 MiB, not
 * 1: on a busy 2-core machine the writer can wait for the CPU for a few ms
 * (a 4 ms scheduler tick), and a thread tracing flat out fills 1 MiB in
 * about 1.5 ms; with 4 MiB the demo's drops fell from ~20-40% to ~0. The
 * ring is mapped, not touched, so a thread pays resident memory only for
 * what it fills (one lap of a busy thread: the whole 4 MiB).
 */
#define ST_RING_SIZE_DEFAULT ((size_t)4 << 20)
#define ST_RING_SIZE_MIN ((size_t)4 << 10)
#define ST_RING_SIZE_MAX ((size_t)1 << 30)

/* --- registry.c -------------------------------------------------------- */

/* One-time initialisation; safe from constructors and any thread. */
void st__init(void);

/* True while init applies SIMPLETRACE (nothing may wait for the writer). */
bool st__in_init(void);

/* True when p (without a leading '-') is a usable event pattern. */
bool st__pattern_valid(const char *p);

/* One enable rule as st_configure() collected it; pattern without '-'. */
struct st_rule_in {
    const char *pattern;
    bool enable;
};

/*
 * Appends rules (in order) to the rule list and applies them to the
 * registered events. Unlike st_event_set_enabled(), names that match no
 * event are not an error: the rule waits for groups registered later.
 * 0 or -ENOMEM (then nothing changed).
 */
int st__reg_add_rules(const struct st_rule_in *rules, size_t n);

/* Number of event IDs assigned so far (acquire: mappings are readable). */
uint32_t st__reg_count(void);

/*
 * Copies the names of IDs [first, first + max) that exist into names[]
 * (NUL-terminated, never freed while the process lives); returns how many.
 */
uint32_t st__reg_names(uint32_t first, const char **names, uint32_t max);

/* Fork hooks: the registry's lock (writer.c takes the locks in order). */
/*
 * Every registered event as a trace-events line (`[disable] name(args) "fmt"`),
 * in ID order, so a client can decode records without the program's files.
 * Returns malloc'd text (caller frees) and its length, or NULL (ENOMEM).
 */
char *st__reg_decls(size_t *len);

void st__reg_lock(void);
void st__reg_unlock(void);
void st__reg_fork_child(void);

/* --- config.c ------------------------------------------------------------ */

/* st_configure() without st__init(): what init uses for SIMPLETRACE. */
int st__configure(const char *config, char *err, size_t errlen);

/* --- clock.c / buffer.c / writer.c / log.c settings --------------------- */

/* Sets the size of buffers created from now on (already validated). */
void st__ring_set_size(size_t size);

/* Prefix log lines with "TID@SEC.USEC:". */
void st__log_set_prefix(bool on);

/* --- writer.c: the trace file ------------------------------------------- */

/* Serialises control operations (st_trace_file_*, st_configure). */
void st__ctl_lock(void);
void st__ctl_unlock(void);

/* A trace file opened but not yet handed to the writeout thread. */
struct st_file_prep {
    int fd;            /* -1 when nothing was opened */
    bool created;      /* we created the file: remove it if we abort */
    bool append;       /* same file this process closed last: append */
    uint32_t mapped;   /* when appending: IDs whose mappings the file has */
    int set_name;      /* on commit: 0 keep the name, 1 path becomes it, 2 default */
    size_t base_len;   /* path is a piece of the file named by its first base_len bytes */
    uint64_t piece;    /* rotate=: which piece (0: the name itself) */
    char path[4096];
};

/*
 * With ctl_lock held: opens the file that would become the trace file
 * (path, or the current name when NULL) without truncating it or changing
 * any state, so a failure is reported before anything is applied. 0 with
 * prep->fd == -1 when that file is already the open trace file. -errno and
 * a message naming the file.
 */
int st__file_prepare(const char *path, struct st_file_prep *prep, char *err, size_t errlen);

/* With ctl_lock held: forgets a prepared file (removes it if we created it). */
void st__file_abort(struct st_file_prep *prep);

/*
 * With ctl_lock held: makes the prepared file the trace file and enables
 * writing (a previous file is drained and closed first); with wait, returns
 * once the writeout thread has done so. 0, or -EAGAIN when the writeout
 * thread cannot start (-ECANCELED after the exit flush); then the prepared
 * file is aborted.
 */
int st__file_commit(struct st_file_prep *prep, bool wait);

/* Smallest rotate=SIZE: a piece must hold its header, mappings and some records. */
#define ST_ROTATE_MIN ((uint64_t)64 << 10)

/*
 * rotate=SIZE (0: off) and rotate-keep=N (0: keep all); a negative value
 * leaves that setting unchanged. The writer applies them from its next pass.
 */
void st__file_set_rotation(int64_t size, long keep);

/* The trace file is on, or the writeout thread runs (flight mode refuses both). */
bool st__file_enabled(void);

/* Wakes the writeout thread (async-signal-safe). */
void st__writer_kick(void);

/* Called on a thread's first event: opens a fork child's own file. */
void st__writer_first_event(void);

/* Initialises the writer's state: semaphore, atfork and atexit hooks. */
void st__writer_init(void);

/* Writer-owned counters for st_stats_get(). */
struct st_writer_stats {
    uint64_t written, dropped_reported, bytes_written, write_dropped;
};
void st__writer_stats(struct st_writer_stats *ws);

/* Error message helper: snprintf into err when err is not NULL. */
void st__errmsg(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* ST_RUNTIME_INTERNAL_H */
