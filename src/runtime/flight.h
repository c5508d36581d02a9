/*
 * Flight-recorder mode: snapshots and the snapshot signal (flight.c, whose
 * top comment has the design; the overwriting producer is in buffer.c).
 */
#ifndef ST_RUNTIME_FLIGHT_H
#define ST_RUNTIME_FLIGHT_H

#include <stddef.h>

/* Writes a snapshot to path (NULL: snapshot-<pid>-<n>); takes ctl_lock. 0 or -errno and a message. */
int st__flight_snapshot(const char *path, char *err, size_t errlen);

/* flight-signal=NAME: SIGUSR1, USR2, HUP, QUIT, PWR, WINCH, URG, RTMIN+N ("SIG" optional). */
int st__flight_parse_signal(const char *v, int *sig);

/* With ctl_lock held: installs the snapshot signal; -EBUSY for a second, different one. */
int st__flight_set_signal(int sig);

/* With ctl_lock held: flight-trigger=NAME; -EBUSY for a second name, or after flight-signal= started the thread. */
int st__flight_set_trigger(const char *name);

#endif /* ST_RUNTIME_FLIGHT_H */
