/*
 * The monitor protocol: how `simpletrace ctl` talks to a traced program's
 * control socket. One definition for the server (src/runtime/monitor/)
 * and the client (src/cli/cmd_ctl.c).
 *
 * Where: `monitor=on` serves DIR/<pid>.sock, DIR being
 * $XDG_RUNTIME_DIR/simpletrace when XDG_RUNTIME_DIR is an absolute path,
 * else /tmp/simpletrace-<euid>; `monitor=PATH` serves PATH.
 *
 * Text, one command per line (UTF-8 allowed, no control bytes but tab):
 *
 *   request := ["json" SP] command LF        at most ST_MON_LINE_MAX bytes with the LF
 *   answer  := body* final
 *   final   := "ok" LF | "error: " message LF
 *   body    := text lines (none is "ok" or starts with "error: ")
 *            | one line of JSON (json prefix)
 *            | for `info trace`:
 *                "events" SP N LF, N bytes of trace-events text (the program's declarations)
 *                ["truncated" SP N LF]        N bytes of older records left out
 *                "data" SP N LF, N bytes of v4 trace (trace_format.h)
 *
 * Commands run one at a time per connection, in order; a connection may
 * send several. An empty line is answered "ok" (a ping).
 */
#ifndef ST_FORMAT_MONITOR_PROTO_H
#define ST_FORMAT_MONITOR_PROTO_H

#include <stdio.h>

/* Longest request line, its newline included. */
#define ST_MON_LINE_MAX 4096

/* The final lines of an answer. */
#define ST_MON_OK "ok"
#define ST_MON_ERROR "error: "

/* The request prefix that asks for a JSON body. */
#define ST_MON_JSON "json"

/* The framing words of `info trace`, each followed by SP, a byte count and LF. */
#define ST_MON_EVENTS "events"
#define ST_MON_TRUNCATED "truncated"
#define ST_MON_DATA "data"

/* The socket's name in the directory: "<pid>.sock". */
#define ST_MON_SOCKET_SUFFIX ".sock"

/*
 * Writes the per-user socket directory into dir (len bytes) from the value
 * of XDG_RUNTIME_DIR (NULL if unset) and the effective uid; returns what
 * snprintf returns (>= len: it did not fit).
 */
static inline int st__mon_socket_dir(char *dir, size_t len, const char *xdg, long euid)
{
    if (xdg && xdg[0] == '/')
        return snprintf(dir, len, "%s/simpletrace", xdg);
    return snprintf(dir, len, "/tmp/simpletrace-%ld", euid);
}

#endif /* ST_FORMAT_MONITOR_PROTO_H */
