/*
 * The core's configuration parts (config_core.c): the events part
 * (patterns, enable=, events=FILE) and the ring part (bufsize=, clock=,
 * crash=, flight=). Their pending states are visible so that higher parts
 * can check what they combine with (flight= excludes a trace file).
 */
#ifndef ST_RUNTIME_CORE_CONFIG_CORE_H
#define ST_RUNTIME_CORE_CONFIG_CORE_H

#include <stdbool.h>
#include <stddef.h>

#include "config_part.h"

extern const struct st__cfg_part st__events_cfg_part;
extern const struct st__cfg_part st__ring_cfg_part;

/* What a configuration asks of the rings (values point into the transaction's items). */
struct st__ring_cfg {
    size_t bufsize;      /* bufsize=, 0: unchanged */
    int clock_tsc;       /* clock=: -1 unchanged, 0 monotonic, 1 the CPU's counter (ST_CLOCK_COUNTER) */
    const char *crash;   /* crash=DIR, "" off, NULL unchanged */
    size_t flight;       /* flight=SIZE, 0: none */
    bool mode_locked;    /* prepare took the ring mode lock */
    bool crash_created;  /* prepare made the crash= directory (abort removes it) */
    char crash_abs[4096]; /* crash=DIR made absolute by prepare: new threads' rings go there after a chdir() too */
};

/* True when the transaction puts the runtime in flight mode, or it is in it. */
bool st__ring_cfg_flight(const struct st__cfg_view *view);

#endif /* ST_RUNTIME_CORE_CONFIG_CORE_H */
