/*
 * The monitor: a control socket through which a traced program is listed
 * and steered from outside (the `simpletrace ctl` client). monitor.c owns
 * the socket, the serving thread and its clients; monitor_cmd.c runs the
 * commands; monitor_trace.c builds the `info trace` snapshot. The protocol
 * is described at the top of monitor.c.
 *
 * Everything here runs on the monitor thread except the configuration
 * hooks (st__mon_prepare/commit/abort, called by config.c under ctl_lock).
 */
#ifndef ST_RUNTIME_MONITOR_H
#define ST_RUNTIME_MONITOR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest command line, newline included; a longer one ends the connection. */
#define ST_MON_LINE_MAX 4096

/* Clients served at once; more are refused with a message. */
#define ST_MON_MAX_CLIENTS 32

/* Default time a client may stay silent (or stop reading an answer). */
#define ST_MON_TIMEOUT_MS_DEFAULT 10000

/* Largest `info trace` snapshot in bytes; older records beyond it are left out. */
#define ST_MON_TRACE_MAX ((size_t)64 << 20)

/* --- answers: a growable byte buffer (monitor_cmd.c) -------------------- */

struct st_mon_buf {
    char *data;  /* malloc'ed; NULL until something is appended */
    size_t len;  /* bytes used */
    size_t cap;  /* bytes allocated */
    bool failed; /* an allocation failed: the answer is incomplete */
};

/* Appends n bytes; on allocation failure sets failed and appends nothing. */
void st__mon_put(struct st_mon_buf *b, const void *p, size_t n);

/* Appends printf-style text. */
void st__mon_printf(struct st_mon_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends s as a JSON string literal (quotes and escapes included). */
void st__mon_json_str(struct st_mon_buf *b, const char *s);

/* Frees the buffer's memory and empties it. */
void st__mon_buf_free(struct st_mon_buf *b);

/*
 * Runs one command line (without its newline) and puts the whole answer,
 * terminator line included, in out (empty on entry). Never fails: errors
 * become an "error: ..." terminator.
 */
void st__mon_execute(const char *line, struct st_mon_buf *out);

/* --- info trace (monitor_trace.c) ----------------------------------------- */

/* What st__mon_trace_snapshot() put in its answer. */
struct st_mon_snapshot {
    uint64_t records; /* event and dropped records in the stream */
    uint64_t left;    /* bytes of unwritten records that did not fit */
};

/*
 * Appends the body of `info trace` to out: "truncated N" (when records
 * did not fit), "data N", and N bytes of v4 trace (header, mappings of the
 * IDs used, records in time order with CLOCK_MONOTONIC timestamps) of
 * every record still in the thread buffers, none consumed. 0, or -ENOMEM
 * (then out holds an unusable partial answer).
 */
int st__mon_trace_snapshot(struct st_mon_buf *out, struct st_mon_snapshot *snap);

/* --- configuration hooks (monitor.c; config.c calls them under ctl_lock) -- */

/* What a configuration asks of the monitor. */
struct st_mon_cfg {
    const char *monitor; /* NULL unchanged, "on", "off", or a socket path */
    long timeout_ms;     /* -1 unchanged */
};

/* A socket bound and listening but not served yet. */
struct st_mon_prep {
    int fd;            /* listening socket, or -1 when nothing was opened */
    bool stop;         /* on commit: stop the running monitor */
    bool keep;         /* on commit: the running monitor already serves this path */
    char path[108];    /* socket path (sun_path size) */
    char dir[108];     /* per-user directory it lives in, "" for an explicit path */
};

/*
 * Checks a `monitor=` value; 0, -EINVAL or -ENAMETOOLONG with a message.
 * A relative PATH is made absolute when the socket is bound.
 */
int st__mon_parse(const char *value, char *err, size_t errlen);

/* Parses a `monitor-timeout=` value (N, Nms, Ns) into *ms; 0 or -EINVAL. */
int st__mon_parse_timeout(const char *value, long *ms, char *err, size_t errlen);

/*
 * Creates the directory and binds the socket the configuration asks for,
 * changing nothing else, so a failure is reported before anything is
 * applied. 0, or -errno with a message.
 */
int st__mon_prepare(const struct st_mon_cfg *cfg, struct st_mon_prep *prep, char *err, size_t errlen);

/* Closes and removes a prepared socket. */
void st__mon_abort(struct st_mon_prep *prep);

/*
 * Starts serving the prepared socket (stopping a monitor serving another
 * one) or stops the monitor, and applies the timeout. 0, or -errno when
 * the thread cannot start (then the socket is removed).
 */
int st__mon_commit(const struct st_mon_cfg *cfg, struct st_mon_prep *prep);

#endif /* ST_RUNTIME_MONITOR_H */
