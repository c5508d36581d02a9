/*
 * A record rendered with its declared format string, as the log backend
 * prints the event: a function of the declaration and the record only, so
 * it does not matter where the declaration came from.
 */
#ifndef ST_READER_LOGFMT_H
#define ST_READER_LOGFMT_H

#include <limits.h>

#include <simpletrace/reader.h>

/* The log backend's line limit (runtime/backends/log.c): one write(2) of at most PIPE_BUF bytes. */
#define ST__LOG_LINE_MAX PIPE_BUF

/*
 * Writes into buf (ST__LOG_LINE_MAX bytes) the line the log backend
 * writes for rec, declared by ev, with log-prefix=off: "NAME " and the
 * format rendered with printf's semantics, then '\n'; cut to end in
 * "...\n" when too long, as the log backend cuts it. Returns the length,
 * or -EINVAL when rec lacks an argument a conversion takes or the format
 * holds a conversion no checked format has.
 */
long st__log_line(const struct st_event_info *ev, const struct st_record *rec, char *buf);

#endif /* ST_READER_LOGFMT_H */
