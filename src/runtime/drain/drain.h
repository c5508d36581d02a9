/*
 * The drain: what turns thread rings into trace files and views. It owns
 * the writeout thread and the trace file (writer.c, tracefile.c), the merge
 * (merge.h), flight snapshots and the monitor's view of what is still in
 * memory (snapshot.c), the flight thread (flight.c), its configuration
 * keys (config_drain.c), and its start-up, exit and fork handlers
 * (drain.c). It sits on the core (registry, clock, and the rings through
 * their consumer API, ring_consumer.h, holding them as opaque handles) and
 * signals nothing upward.
 *
 * Locks, in the order they are taken: file_lock (trace-file control: held
 * from a configuration's prepare to its commit or abort), snap_lock
 * (snapshots), pass_lock (a pass, whoever runs it: writer.c), wr_lock (the
 * writer's shared state), then the core's.
 */
#ifndef ST_RUNTIME_DRAIN_DRAIN_H
#define ST_RUNTIME_DRAIN_DRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config_part.h"
#include "growbuf.h"

/* Start-up (drain.c): the drain's hooks on the rings, the writer's semaphore. */
void st__drain_init(void);

/* --- the trace file (tracefile.c); each call serialises on file_lock --------- */

/* st_trace_file_set_enabled(): 0, the -errno of open(), or the error that stopped writing. */
int st__file_set_enabled(bool enabled);

/* st_trace_file_set_name() (path NULL: the default name). */
int st__file_set_name(const char *path);

/* st_trace_file_flush(). */
int st__file_flush(void);

/* The current file name (the default one when none was set), whether it is on, the error that stopped it. */
void st__file_status(char *path, size_t len, bool *enabled, int *error);

/* True when a trace file is or was in use (the writer runs): flight mode is then refused. */
bool st__file_in_use(void);

/*
 * True when this process is a fork child that could not open its own
 * file at its first event (a worker that dropped its privileges): one
 * line said so then, naming the process, its user and the file; the exit
 * report adds nothing that could contradict it.
 */
bool st__file_open_failed(void);

/*
 * After the exit flush: removes the trace file when this process wrote no
 * record to it (only its header, mappings and description). For a program
 * whose events all go to other backends (log, syslog): it leaves no file.
 */
void st__file_remove_unwritten(void);

/* --- counters --------------------------------------------------------------------- */

struct st__drain_counters {
    uint64_t written;          /* event records written to trace files */
    uint64_t dropped_reported; /* drops counted in dropped records written */
    uint64_t bytes_written;    /* bytes written, headers included */
    uint64_t write_dropped;    /* event records lost in writes that failed (full disk, EIO) */
    uint64_t stopped_dropped;  /* buffer drops while a write error had stopped the file: lost to it too */
    bool stopped;              /* a write error stopped the file and no file was opened since */
    uint64_t zframes;          /* compress=zstd: frames written ... */
    uint64_t zframes_fast;     /* ... of them at a faster level than configured, the writer being behind */
};
void st__drain_counters(struct st__drain_counters *c);

/* The last write error (-errno, 0 when none) and the file it was writing. */
void st__drain_write_failure(char *path, size_t len, int *error);

/* --- exit and fork (drain.c) ------------------------------------------------------------ */

/* At exit: the last pass (every record and drop written), the writeout thread joined if it ran, ring files tidied. */
void st__drain_exit(void);

/*
 * fork(): prepare takes the drain's locks (after the caller's own), so the
 * child never inherits one mid-update, and without the writeout thread
 * writes what the rings hold; parent releases them; child starts
 * afresh: no writer thread, its own file (trace-<childpid>, F-<childpid>
 * for an explicit name F, or F's %p expanded again) opened at its first
 * event if the parent had one.
 */
void st__drain_fork_prepare(void);
void st__drain_fork_parent(void);
void st__drain_fork_child(void);

/* --- snapshots (snapshot.c) ------------------------------------------------------------ */

/* True in flight mode: records wait in the rings for a snapshot, never for the trace file. */
bool st__flight_mode(void);

/*
 * At exit, in flight mode: a snapshot the flight thread had no time to
 * take (a trigger traced, or the signal raised, in the last few ms) is
 * taken now, so a short run does not lose it without a word.
 */
void st__flight_exit(void);

/*
 * Flight mode: writes every ring's records to path (NULL: snapshot-<pid>-<n>)
 * as a v4 trace (see snapshot.c for its dropped counts). 0, -EINVAL (not in
 * flight mode, "" path) or -errno of the file; a message in err.
 */
int st__snapshot_write(const char *path, char *err, size_t errlen);

/*
 * The records still in the rings, not consumed, as a v4 trace in data
 * (header, every mapping, the records merged by time), and the program's
 * event declarations (trace-events text) in decls; *truncated gets the
 * bytes of older records that did not fit in 64 MiB. 0 or -ENOMEM.
 */
int st__view_take(struct st__growbuf *decls, struct st__growbuf *data, uint64_t *truncated);

/* --- configuration (config_drain.c): file=, dir=, rotate=, rotate-keep=, compress=, writer=, flight-signal=, flight-trigger= */

extern const struct st__cfg_part st__drain_cfg_part;

#endif /* ST_RUNTIME_DRAIN_DRAIN_H */
