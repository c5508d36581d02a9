/*
 * The monitor: a control socket through which a traced program is listed
 * and steered from outside (the `simpletrace ctl` client; the protocol is
 * in format/monitor_proto.h). It sits on top of the runtime and uses only
 * the public API, the drain's view of what is in memory (drain.h) and the
 * configuration registry (control.h). monitor.c owns the socket, the
 * serving thread, its clients and its configuration keys; monitor_parse.c
 * splits a request line; monitor_cmd.c runs the commands.
 */
#ifndef ST_RUNTIME_MONITOR_H
#define ST_RUNTIME_MONITOR_H

#include <stdbool.h>
#include <stddef.h>

#include "growbuf.h"
#include "monitor_proto.h"

/* Clients served at once; more are refused with a message. */
#define ST_MON_MAX_CLIENTS 32

/* Default time a client may stay silent (or stop reading an answer). */
#define ST_MON_TIMEOUT_MS_DEFAULT 10000

/*
 * Runs one command line (without its newline) and puts the whole answer,
 * terminator line included, in out (empty on entry). Never fails: errors
 * become an "error: ..." terminator.
 */
void st__mon_execute(const char *line, struct st__growbuf *out);

#endif /* ST_RUNTIME_MONITOR_H */
