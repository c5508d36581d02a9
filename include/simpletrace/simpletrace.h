/*
 * simpletrace runtime (libsimpletrace, pkg-config `simpletrace`): control
 * of a traced program's events and trace file.
 *
 * Every function is thread-safe and may be called before or after the
 * event groups register. Functions returning int give 0 (or a count) on
 * success and a negative errno value on failure; st_strerror() (api.h)
 * names it. Structures the program allocates begin with struct_size (api.h).
 */
#ifndef SIMPLETRACE_SIMPLETRACE_H
#define SIMPLETRACE_SIMPLETRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <simpletrace/api.h>
#include <simpletrace/trace.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Applies a configuration in QEMU's -trace syntax: comma-separated items
 * `[enable=]PATTERN`, `events=FILE`, `file=PATH` (PATH may hold %p pid, %e
 * program name, %h host name, %t start time, %% a literal %, expanded when
 * the file opens; another %x is -EINVAL; a file another process has locked
 * is left alone and PATH-<pid> written instead), `dir=DIR` (each process,
 * fork children included, writes DIR/PROGRAM-PID.trace, %e-%p.trace; DIR
 * made 0700 when missing; with file=F, DIR/F; -ENOTDIR/-EACCES/-ENOENT
 * when DIR is not a writable directory, -EINVAL for an absolute file=
 * with it), plus simpletrace's own
 * keys (see README): `bufsize=N[K|M|G]` (buffers of threads that start
 * tracing later), `log-prefix=on|off`, `clock=tsc|monotonic`,
 * `crash=DIR` (rings of threads that start tracing later live in files in
 * DIR, so `simpletrace recover` can rebuild what a killed program had
 * traced; -ENOTDIR/-EACCES/-ENOENT when DIR is not a writable directory),
 * `flight=N[K|M|G]` (flight recorder: per-thread rings that keep the newest
 * records, no trace file, see st_trace_snapshot; -EINVAL with file=,
 * dir=, crash= or bufsize=, -EBUSY after tracing started),
 * `flight-signal=SIG` (that signal takes a snapshot) and `flight-trigger=EVENT`
 * (tracing that event takes one, within ~10 ms), `rotate=N[K|M|G]|off` (the
 * trace file in pieces FILE, FILE.1, FILE.2, ... of at most N bytes, N >= 64K,
 * each a complete trace) and `rotate-keep=N` (only the newest N pieces stay;
 * 0 keeps all). Several
 * options may be joined with ';'; a later option without file= keeps the
 * file. Unless it holds only simpletrace's own keys, it enables the trace
 * file, opening it now. On error returns -EINVAL (or the errno of an events
 * file or of opening the trace file; -EBUSY to change the clock after
 * tracing started; -ENOTSUP for clock=tsc without an invariant TSC),
 * changes nothing, and puts a message naming the item (and FILE:LINE) in
 * errbuf when errbuf is not NULL. The environment variable SIMPLETRACE is
 * applied this way at start-up (errors go to stderr).
 */
ST_API int st_configure(const char *config, char *errbuf, size_t errlen);

/* --- events ------------------------------------------------------------ */

enum st_event_state {
    ST_EVENT_UNAVAILABLE = 0, /* compiled out: `disable` or nop backend */
    ST_EVENT_DISABLED = 1,
    ST_EVENT_ENABLED = 2,
};

/*
 * Enables (or disables) every registered event whose name matches pattern
 * (glob with * and ?; a leading '-' inverts `enable`), and events registered
 * later that match. Returns the number of events changed or already in that
 * state; -ENOENT when a pattern without wildcards names no event; -EPERM when
 * it names an event that is compiled out; -EINVAL for a malformed pattern
 * (letters, digits, '_', '*' and '?' only, at most 1024 bytes).
 */
ST_API int st_event_set_enabled(const char *pattern, bool enable);

/* State of the event named exactly name; -ENOENT if there is none. */
ST_API int st_event_get_state(const char *name);

/* One registered event, as st_event_foreach() reports it (the library's; it grows at its end). */
struct st_registered_event {
    const char *name;            /* valid during the callback only */
    const char *group;           /* valid during the callback only */
    uint32_t id;                 /* ID in trace files */
    enum st_event_state state;
};

/* Callback for st_event_foreach(); return non-zero to stop. */
typedef int (*st_event_visit_fn)(const struct st_registered_event *info, void *opaque);

/*
 * Calls visit for each registered event matching pattern (NULL = all), in
 * registration order. No lock is held during visit, which may call any st_
 * function. Returns the number visited, or what visit returned if it
 * stopped the walk; -EINVAL without visit or for a malformed pattern.
 */
ST_API int st_event_foreach(const char *pattern, st_event_visit_fn visit, void *opaque);

/* True when name is matched by the glob pattern (* and ?; whole name). */
ST_API bool st_glob_match(const char *pattern, const char *name);

/* --- the trace file (simple backend) ------------------------------------ */

/*
 * Opens (true) or flushes and closes (false) the trace file. Opening a file
 * this process has not written yet truncates it and writes the header and
 * every mapping; reopening the file it closed last (unchanged since)
 * appends. Returns 0, the -errno of open(), or the error that stopped
 * writing while the file was drained.
 */
ST_API int st_trace_file_set_enabled(bool enabled);

/*
 * Switches to a new trace file path (NULL: the default "trace-<pid>"), a
 * template with the placeholders of file= (st_configure), expanded when the
 * file is opened. If a file is open it is flushed and closed and the new
 * one opened; if the new one cannot be opened, returns its -errno and keeps
 * the old file and name. -EINVAL for "" or an unknown placeholder,
 * -ENAMETOOLONG (also for the expansion).
 */
ST_API int st_trace_file_set_name(const char *path);

/*
 * Blocks until every record committed before the call is in the file (and
 * every drop so far is reported in it). 0; -EBADF when no file is enabled;
 * the -errno that stopped writing (e.g. -ENOSPC, -EFBIG).
 */
ST_API int st_trace_file_flush(void);

/*
 * Does now, once, what the exit handler does at exit(): a last pass writes
 * every thread's records traced so far and closes the trace file, crash=DIR's
 * ring files of this process and its monitor socket are removed, a flight
 * snapshot asked for is written, and the exit report goes to stderr. For a
 * process about to end without exit handlers: a fork child that ends with
 * _exit(), as a server's background save does (Redis's BGSAVE child), would
 * otherwise lose what was not written yet and leave its ring files and
 * socket behind. The exit handler, or a
 * second call, then does nothing; records traced afterwards are not
 * written. A fork child's end is its own (its parent's call does not count
 * for it). 0, or the -errno that stopped writing the file (-ENOSPC, ...).
 */
ST_API int st_trace_finish(void);

/*
 * Flight-recorder mode (flight=SIZE): writes every thread's newest records
 * to path (NULL: snapshot-<pid>-<n>) as a v4 trace (zstd-compressed, as a
 * trace file, while compress=zstd is on), each thread's dropped record
 * counting what it lost to overwriting since the previous snapshot. 0;
 * -EINVAL when not in flight mode or path is ""; -errno of the file.
 */
ST_API int st_trace_snapshot(const char *path);

/* Trace file state, as st_trace_file_status() reports it. */
struct st_file_status {
    uint32_t struct_size; /* sizeof(struct st_file_status), set by the caller (api.h) */
    char path[4096];      /* current file name, expanded (default name if none was set) */
    bool enabled;         /* file open and being written */
    int error;            /* 0, or the -errno that stopped writing */
};

/* Fills the fields of *status that its struct_size covers. 0, or -EINVAL (NULL, struct_size too small). */
ST_API int st_trace_file_status(struct st_file_status *status);

/* --- statistics --------------------------------------------------------- */

/* Counters since start-up, summed over all threads. */
struct st_stats {
    uint32_t struct_size;   /* sizeof(struct st_stats), set by the caller (api.h) */
    uint64_t produced;      /* records traced (committed or dropped) */
    uint64_t written;       /* event records written to trace files */
    uint64_t dropped;       /* records lost: buffer full or write failure */
    uint64_t dropped_reported; /* of those, counted in dropped records in a file */
    uint64_t bytes_written; /* bytes written to trace files, headers included */
    uint64_t buffered;      /* bytes waiting in thread buffers */
    uint32_t threads;       /* thread buffers alive */
    uint64_t pending;       /* event records waiting in thread buffers;
                               produced == written + dropped + pending once
                               no thread is tracing */
    uint64_t buffer_bytes;  /* bytes of the thread buffers alive (their capacity) */
    /* Added in 0.2: */
    uint64_t write_lost;    /* of dropped, lost because writing the trace file failed (ENOSPC, EFBIG,
                               EIO): records of the failed writes, and those the buffers dropped while
                               the error kept the file stopped; the rest of dropped is full buffers */
    uint32_t crash_unprotected; /* crash=DIR: threads whose buffer DIR could not hold (no room, ...), kept
                               in memory instead, so `simpletrace recover` cannot rebuild their records */
    uint64_t zstd_frames;   /* compress=zstd: frames the writer compressed ... */
    uint64_t zstd_fast_frames; /* ... of them at a faster level than the configured one, because its
                               backlog was high (compress=zstd adapts unless :fixed; README) */
};

/*
 * Fills the fields of *stats that its struct_size covers, a consistent-enough
 * snapshot (each counter exact, not all taken at the same instant). A fork
 * child counts its own records only. 0, or -EINVAL (NULL, struct_size too small).
 */
ST_API int st_stats_get(struct st_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* SIMPLETRACE_SIMPLETRACE_H */
