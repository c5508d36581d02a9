/*
 * crash=DIR: thread rings in file-backed shared mappings, so that what a
 * program had traced survives its death (SIGKILL, SIGSEGV, abort, _exit):
 * the kernel keeps a shared mapping's pages in the page cache after the
 * process is gone, and `simpletrace recover` rebuilds a v4 trace from them.
 * The files' layout and the invariants recover relies on: crash_format.h.
 */
#ifndef ST_RUNTIME_CORE_RING_FILE_H
#define ST_RUNTIME_CORE_RING_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crash_format.h"

struct st__ring;

/* True when crash=DIR is set (rings created from now on are file-backed). */
bool st__ring_file_on(void);

/* True when crash_lock is free right now (st__ring_cons_locks_free). */
bool st__ring_file_lock_free(void);

/* Sets DIR (already checked); "" turns crash mode off for new rings. */
void st__ring_file_set_dir(const char *dir);

/*
 * Creates the ring file of the calling thread and maps it: returns the
 * struct st__ring inside the mapping (zeroed, 128-aligned) with r->ring set,
 * or NULL (errno set): the caller then uses anonymous memory. A failure is
 * counted (st__ring_file_unprotected) and, the first time, said on stderr.
 */
struct st__ring *st__ring_file_create(size_t ring_size, uint32_t tid);

/*
 * Start-up (crash=DIR committed): checks that DIR has room for one ring of
 * ring_size bytes, with a file made and removed at once, so a DIR too full
 * for any ring is said on stderr when configured, not at the first event.
 */
void st__ring_file_probe(size_t ring_size);

/* Threads whose ring DIR could not hold, so far; *error (may be NULL): the first -errno, or 0. */
uint32_t st__ring_file_unprotected(int *error);

/*
 * The trace file's identity (st_dev, st_ino; 0, 0: none), which ring files
 * made from now on carry in file_dev/file_ino from the start, so recover
 * matches --trace to them even when the process died before its first
 * write (an empty trace). The writer keeps older rings' headers current.
 */
void st__ring_file_set_trace_id(uint64_t dev, uint64_t ino);

/* Writer, between writes: r's header names the trace file (dev, ino) from now on. */
void st__ring_file_note_trace(struct st__ring *r, uint64_t dev, uint64_t ino);

/* Unmaps a file-backed ring; remove: also delete its file (it was drained). */
void st__ring_file_release(struct st__ring *r, bool remove);

/* Appends mappings for IDs registered since the last call (slow paths, the consumer). */
void st__ring_file_sync_names(void);

/* Consumer: stores a fresh clock anchor in r's header. */
void st__ring_file_note_anchor(struct st__ring *r, uint64_t raw, uint64_t ns);

/* Consumer: a write() of trace-file bytes [off, off + len) covering r's ring up to end starts / ended. */
void st__ring_file_inflight_begin(struct st__ring *r, uint64_t end, uint64_t drop, uint64_t off, uint64_t len,
                                  uint64_t dev, uint64_t ino);
void st__ring_file_inflight_end(struct st__ring *r);

/* Fork child: forget the parent's names file (the child writes its own). */
void st__ring_file_fork_child(void);

/*
 * Clean exit, after the last consumer pass: removes the ring files that
 * hold nothing unwritten, and the names file when none is left.
 */
void st__ring_file_exit(void);

#endif /* ST_RUNTIME_CORE_RING_FILE_H */
