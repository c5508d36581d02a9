/*
 * A reader of uftrace.data directories (format: uftrace_format.h), for the
 * exporter: the function tracer's output (or uftrace's own recording of
 * the same format), read back as one stream of records in time order
 * across every thread and process of the directory, with each ENTRY/EXIT
 * address resolved to a function name through the session's map and the
 * `.sym` files.
 *
 * Memory: task.txt, the maps and the symbol names are held; the records are
 * streamed, one 16 KiB buffer and one open file per thread.
 *
 * Errors are negative errno values with a message naming the file and the
 * line or byte offset: a malformed task.txt, map or `.sym` line, a record
 * with a bad magic, a file ending inside a record, a data directory of
 * another byte order.
 */
#ifndef ST_UFTRACE_READ_H
#define ST_UFTRACE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "uftrace_format.h"

struct st__uft_data;

/* One record of a TID.dat, with its thread's process and its function. */
struct st__uft_call {
    uint64_t ts;       /* as recorded (ns) */
    uint32_t tid, pid;
    unsigned type;     /* ST_UFT_REC_ENTRY, _EXIT, _LOST or _EVENT */
    uint64_t addr;     /* ENTRY/EXIT: the address; LOST: the count; EVENT: the event id */
    uint32_t func;     /* ENTRY/EXIT: index of its function name (st__uft_data_func()) */
};

/* A process of the directory: its SESS line. */
struct st__uft_session {
    int pid;
    uint64_t ts;
    char sid[17];
    char *exename;
};

/*
 * Reads the metadata of directory dir (info header, task.txt, the maps and
 * `.sym` files) into *out and opens every thread's file. Returns 0, or a
 * negative errno with err saying what is wrong where.
 */
int st__uft_data_open(struct st__uft_data **out, const char *dir, char *err, size_t errlen);

/* The number of function names (the last one stands for addresses no symbol covers). */
size_t st__uft_data_funcs(const struct st__uft_data *d);

/* Function name i (i < st__uft_data_funcs()). */
const char *st__uft_data_func(const struct st__uft_data *d, size_t i);

/* The processes (SESS lines), in task.txt order. */
size_t st__uft_data_sessions(const struct st__uft_data *d);
const struct st__uft_session *st__uft_data_session(const struct st__uft_data *d, size_t i);

/*
 * The next record in time order (ties: threads in task.txt order). Returns
 * 1 with *c filled, 0 at the end, or a negative errno with err saying where.
 */
int st__uft_data_next(struct st__uft_data *d, struct st__uft_call *c, char *err, size_t errlen);

/* Closes the files and frees everything (NULL is fine). */
void st__uft_data_close(struct st__uft_data *d);

/* --- the text parsers, on memory (also the fuzz target's entry points) --------- */

/*
 * Parses task.txt text (len bytes, need not end in a newline) into d's
 * sessions and threads; name is used in messages ("DIR/task.txt:LINE: ...").
 */
int st__uft_parse_tasks(struct st__uft_data *d, const char *text, size_t len, const char *name, char *err,
                        size_t errlen);

/* Parses a `.sym` file's text into a symbol table for module base at [start, end). */
int st__uft_parse_syms(struct st__uft_data *d, const char *text, size_t len, const char *name, uint64_t start,
                       uint64_t end, char *err, size_t errlen);

/* An empty reader for the parsers alone (no directory): free with st__uft_data_close(). */
struct st__uft_data *st__uft_data_new(void);

#endif /* ST_UFTRACE_READ_H */
