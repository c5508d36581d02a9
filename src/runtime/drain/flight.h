/*
 * Flight-recorder mode: snapshots and the snapshot signal (flight.c, whose
 * top comment has the design; the overwriting producer is in buffer.c).
 */
#ifndef ST_RUNTIME_FLIGHT_H
#define ST_RUNTIME_FLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Writes a snapshot to path (NULL: snapshot-<pid>-<n>); takes ctl_lock. 0 or -errno and a message. */
int st__flight_snapshot(const char *path, char *err, size_t errlen);

/* flight-signal=NAME: SIGUSR1, USR2, HUP, QUIT, PWR, WINCH, URG, RTMIN+N ("SIG" optional). */
int st__flight_parse_signal(const char *v, int *sig);

/* With ctl_lock held: installs the snapshot signal; -EBUSY for a second, different one. */
int st__flight_set_signal(int sig);

/* With ctl_lock held: flight-trigger=NAME; -EBUSY for a second name, or after flight-signal= started the thread. */
int st__flight_set_trigger(const char *name);

/*
 * flight-trigger= as the producers' eviction path sees it (relaxed/acquire
 * loads; set by flight.c). on: a trigger is configured and the flight
 * thread runs. id: its event ID, UINT64_MAX until resolved; known: while
 * unresolved, IDs below it are known not to be the trigger.
 */
struct st_flight_trig {
    int on;
    uint64_t id;
    uint64_t known;
};
extern struct st_flight_trig st__flight_trig;

/*
 * Async-signal-safe, from a producer that evicted records no scan had
 * examined: sure, one was the trigger; else the trigger is unresolved and
 * one had an unknown ID in [lo, hi]. Wakes the flight thread, which takes
 * the snapshot (for a suspect: once it resolved the trigger into that range).
 */
void st__flight_trigger_evicted(bool sure, uint32_t lo, uint32_t hi);

#endif /* ST_RUNTIME_FLIGHT_H */
