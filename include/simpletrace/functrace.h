/*
 * simpletrace function-call tracer (libsimpletrace-func, pkg-config name
 * `simpletrace-func`).
 *
 * Build a program with -finstrument-functions and link it with this
 * library: every instrumented function's entry and exit is recorded per
 * thread and written as a uftrace.data directory that `uftrace replay`,
 * `report`, `graph`, `info` and `dump` read. Nothing in the program has
 * to change; this header is only for programs that want control.
 *
 * Environment (read at start-up): SIMPLETRACE_FUNC=off disables tracing;
 * SIMPLETRACE_FUNC_DIR (default ./uftrace.data), SIMPLETRACE_FUNC_DEPTH,
 * SIMPLETRACE_FUNC_FILTER, SIMPLETRACE_FUNC_BUFSIZE, SIMPLETRACE_FUNC_BUFFERS,
 * SIMPLETRACE_FUNC_CLOCK: see src/functrace/README.md in the sources.
 *
 * Every function is thread-safe, not async-signal-safe, and returns 0 or a
 * negative errno value (st_strerror(ret) describes it). Common codes:
 * -ENODEV when tracing is off for this process (SIMPLETRACE_FUNC=off, or
 * its directory was refused at start-up), -ESHUTDOWN once the exit-time
 * write-out has begun.
 */
#ifndef SIMPLETRACE_FUNCTRACE_H
#define SIMPLETRACE_FUNCTRACE_H

#include <stdbool.h>
#include <stdint.h>

#include <simpletrace/api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Writes every record traced so far and the metadata (info, task.txt, map,
 * symbols), so uftrace can read the directory while the program runs;
 * calls still open appear unfinished. Returns 0, or the -errno of the first
 * failed write of the process (-ENOSPC, -EIO, ...).
 */
ST_API int st_functrace_flush(void);

/*
 * Stops (false) or restarts (true) recording calls. While stopped, no new
 * call is recorded; calls entered before still record their exit, so every
 * recorded call is complete. Returns 0.
 */
ST_API int st_functrace_set_enabled(bool enabled);

/*
 * Makes dir the output directory, prepared as SIMPLETRACE_FUNC_DIR would be
 * (created; an existing one must hold only trace data, which is removed).
 * Only before any trace data was written (call it early in main()): -EBUSY
 * after that; -EEXIST when dir holds other files; another -errno when it
 * cannot be created. The previous directory is removed if we created it
 * and it is empty.
 */
ST_API int st_functrace_set_dir(const char *dir);

/*
 * Counters since start-up (or since fork() in a child). Allocated by the
 * caller, who sets struct_size (api.h): fields are only ever added at the
 * end, and the library fills only those that fit in struct_size.
 */
struct st_functrace_stats {
    uint32_t struct_size; /* set by the caller: sizeof(struct st_functrace_stats) */
    uint64_t written;     /* entry and exit records written to .dat files */
    uint64_t lost;        /* records dropped: buffers full, or a failed write */
    uint32_t threads;     /* threads that made an instrumented call */
    int write_error;      /* first -errno of a failed write, 0 if none */
};

/*
 * Fills the fields of *stats that fit in stats->struct_size, leaving the
 * bytes beyond untouched:
 *
 *     struct st_functrace_stats s = {.struct_size = sizeof s};
 *     st_functrace_get_stats(&s);
 *
 * Returns 0, or -EINVAL when stats is NULL or struct_size is smaller than
 * the first release's structure. Works with tracing off (all zero).
 */
ST_API int st_functrace_get_stats(struct st_functrace_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* SIMPLETRACE_FUNCTRACE_H */
