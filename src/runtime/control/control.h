/*
 * The control layer: start-up, SIMPLETRACE, the exit and fork handlers,
 * the control lock, every public entry point (api.c) and the configuration
 * transaction (config.c). It sits on the drain, the core and the
 * backends; the monitor sits on it.
 *
 * Lock order. A thread holding one of these never takes an earlier one:
 *
 *   ctl_lock  ->  (drain) file_lock -> snap_lock -> pass_lock -> wr_lock  ->  (core) reg_lock -> ring lock
 *
 * ctl_lock serialises configuration transactions; none of the locks is
 * taken on the tracing path, a thread's first event included (except a
 * fork child's, which opens its own file), but for the drain points of
 * a tracing thread when no writeout thread runs (writer=): those only try
 * them, and leave the pass to the next drain point when one is held.
 *
 * Every public entry point calls st__init() first. Internal functions never
 * do, so st__init()'s own work (applying SIMPLETRACE) cannot recurse into
 * pthread_once, and the writeout thread never waits for initialisation.
 */
#ifndef ST_RUNTIME_CONTROL_H
#define ST_RUNTIME_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

#include "config_part.h"

/* One-time initialisation; safe from constructors and any thread. */
void st__init(void);

/*
 * Registers a configuration part of a layer above control (the monitor),
 * from a constructor, before st__init() runs. 0, or -ENOSPC when the
 * table is full.
 */
int st__cfg_register(const struct st__cfg_part *part);

/* Applies a configuration as one transaction (config_part.h); in_init: SIMPLETRACE at start-up. */
int st__cfg_apply(const char *config, bool in_init, char *err, size_t errlen);

/*
 * What exit does, once per process (the atexit handler, st_trace_finish()):
 * the hooks of the layers above (st__finish_hook), the last pass written,
 * crash=DIR's ring files removed, the exit report.
 */
void st__finish(void);

/*
 * A layer above control (the monitor: its socket removed) asks for fn to
 * run first in st__finish, so that st_trace_finish() before _exit() does
 * what its own atexit handler would. fn may run again at exit: it must
 * tolerate that. 0, or -ENOSPC when the table is full.
 */
int st__finish_hook(void (*fn)(void));

/* At exit, after the last records are written: what the run lost or never did (exit_report.c). */
void st__exit_report(void);

/* drop-report=on|off: the exit report's configuration part. */
extern const struct st__cfg_part st__control_cfg_part;

/* Serialises configuration transactions and fork. */
void st__ctl_lock(void);
void st__ctl_unlock(void);

#endif /* ST_RUNTIME_CONTROL_H */
