/*
 * The SQL part's internals: the source (source.c), the tables and their
 * cursors (vtab.c drives them: scan.c reads records, meta.c the catalog and
 * the processes, spans.c runs export's engine), the module's arguments
 * (args.c).
 *
 * Who owns what: a source owns its copies of the traces' paths, options and
 * rules and the schema of its event tables; a table borrows its source
 * (the command's) or owns it with its catalog (a CREATE VIRTUAL TABLE of
 * the module); a cursor owns its reader, formatter and rows.
 */
#ifndef ST_SQL_INTERNAL_H
#define ST_SQL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <simpletrace/reader.h>

#include "growbuf.h"
#include "sql.h"

/* --- the source ------------------------------------------------------------------------------ */

/* One argument column of an event table. */
struct st__sql_arg {
    char *column;              /* its SQL name: the argument's, or NAME_arg where that is taken */
    char *decl;                /* the argument's name as declared */
    char *type;                /* the C type as declared */
    bool text;                 /* a string: TEXT (else INTEGER) */
};

/* One event table: the event as the head of the traces declares it. */
struct st__sql_event {
    char *name;
    unsigned nargs;
    struct st__sql_arg args[ST_READER_MAX_ARGS];
};

/*
 * One value: a column of the current row (s borrowed: valid until the
 * cursor moves or the next column is asked for), or a cell of rows made in
 * memory (s owned by the rows, NUL-terminated).
 */
struct st__sql_cell {
    int type;         /* SQLITE_NULL, SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT */
    sqlite3_int64 i;
    double d;
    const char *s;    /* TEXT: n bytes (valid UTF-8) */
    size_t n;
};

/* Rows of cells, ncols each, made in memory (the events and processes tables, an index). */
struct st__sql_rows {
    struct st__sql_cell *cells; /* nrows * ncols */
    size_t nrows, ncols, cap;
};

struct st__sql_source {
    char **traces;
    size_t ntraces;
    const struct st_catalog *cat;  /* borrowed; NULL: each reader reads the traces' declarations */
    struct st_reader_options rd;   /* the caller's, pointing at the copies below */
    char *events;                  /* rd.events */
    int64_t *offsets;              /* rd.offsets_ns */
    char **pairs;
    size_t npairs;
    bool no_default_pairs;
    bool have_origin;              /* the traces have a record: ... */
    uint64_t origin;               /* ... the first one's timestamp (the reader's --from/--to count from it) */
    struct st__sql_event *ev;      /* the declared events (Dropped_Event is not one), in catalog order */
    size_t nev;
    struct st__sql_rows catalog;   /* the events table */
};

/* What a scan asks of the reader, beyond the source's own filters. */
struct st__sql_range {
    bool have_from, have_to;
    int64_t from, to;           /* timestamps on the traces' clock, inclusive */
};

/*
 * Opens the source's traces for one scan into *out: only the events of
 * names[0..nnames) when names is not NULL (those the source's own events
 * filter keeps), within range when not NULL. 0; 1 when nothing can pass (no
 * reader opened, *out NULL); or a negative errno with err set.
 */
int st__sql_open(const struct st__sql_source *src, const char *const *names, size_t nnames,
                 const struct st__sql_range *range, struct st_reader **out, char *err, size_t errlen);

/* Opens the source's traces without any filter (the source's own included). 0 or a negative errno with err set. */
int st__sql_open_plain(const struct st__sql_source *src, struct st_reader **out, char *err, size_t errlen);

/* The message of the reader's error, "FILE: byte offset N, record M: what". */
void st__sql_reader_error(const struct st_reader *r, char *err, size_t errlen);

/* A new row of ncols NULL cells at the end of rows (to fill with st__sql_cell_copy()), or NULL without memory. */
struct st__sql_cell *st__sql_rows_new(struct st__sql_rows *rows, size_t ncols);

/* *dst = *src, its text copied (owned by dst from now on). 0 or -ENOMEM (dst NULL). */
int st__sql_cell_copy(struct st__sql_cell *dst, const struct st__sql_cell *src);

/* Appends a row of ncols cells (copied, strings too; type SQLITE_NULL for none) to rows. 0 or -ENOMEM. */
int st__sql_rows_add(struct st__sql_rows *rows, const struct st__sql_cell *cells, size_t ncols);

void st__sql_rows_free(struct st__sql_rows *rows);

/* --- the tables ------------------------------------------------------------------------------ */

enum st__sql_kind {
    ST__SQL_RECORDS,
    ST__SQL_EVENT,     /* one event's table */
    ST__SQL_EVENTS,
    ST__SQL_PROCESSES,
    ST__SQL_DROPS,
    ST__SQL_SPANS,
};

/* Column numbers, as declared. */
enum { REC_TS, REC_NAME, REC_PID, REC_TID, REC_PROGRAM, REC_HOST, REC_ARGS, REC_NCOLS };
enum { EV_TS, EV_PID, EV_TID, EV_ARG0 };
enum { DROP_TS, DROP_TID, DROP_COUNT, DROP_PID, DROP_NCOLS };
enum { SPAN_NAME, SPAN_BEGIN, SPAN_END, SPAN_DUR, SPAN_PID, SPAN_TID, SPAN_KEY, SPAN_END_TID, SPAN_NCOLS };
enum { CAT_NAME, CAT_ID, CAT_ARGS, CAT_FORMAT, CAT_NCOLS };
enum { PROC_PID, PROC_PROGRAM, PROC_HOST, PROC_EXE, PROC_CMDLINE, PROC_CLOCK, PROC_VERSION, PROC_TRACE,
       PROC_ANCHOR_MONO, PROC_ANCHOR_REAL, PROC_NCOLS };

/*
 * What the scans of one connection read (SQL: simpletrace_reads()), added
 * up as each scan of records, drops or an event's table stops: the
 * reader's counters and, for compressed traces, its frames.
 */
struct st__sql_reads {
    unsigned refs;               /* the module and the function hold it */
    uint64_t scans;
    uint64_t records;            /* event and dropped records met */
    uint64_t skipped;            /* ... of which the filters skipped without decoding (frames skipped included) */
    uint64_t bytes;              /* bytes of the traces consumed (decompressed, for compressed ones) */
    uint64_t frames, frames_read, frames_skipped; /* compressed traces: data frames, decompressed, jumped over */
};

/* What one virtual table reads. */
struct st__sql_table {
    enum st__sql_kind kind;
    struct st__sql_source *src;
    struct st__sql_reads *reads;    /* where its scans add what they read (NULL: nowhere) */
    const struct st__sql_event *ev; /* ST__SQL_EVENT */
    struct st__sql_source *own_src; /* a table of the module owns its source ... */
    struct st_catalog *own_cat;     /* ... and the catalog of its trace-events files */
};

/* The plan xBestIndex chose, as xFilter decodes it. */
struct st__sql_plan {
    struct st__sql_range range;
    bool empty;                  /* the constraints contradict each other: no row */
    char **names;                /* name = / IN: only these events (NULL: all) */
    size_t nnames;
    bool grouped;                /* records' count per name: the rows come grouped by name */
};

/*
 * A cursor's state for each kind (vtab.c owns the cursor; each kind's
 * functions fill and free their part).
 */
struct st__sql_scan {
    const struct st__sql_table *t;
    struct st_reader *r;
    const struct st_record *rec;     /* the current row's record */
    struct st_formatter *fmt;        /* records.args */
    const struct st_event_info *checked; /* event table: the reader's event found to fit the schema */
    int enc[ST_READER_MAX_ARGS];     /* ... and its arguments' encodings */
    size_t host_input;               /* records.host: the input and process it was looked up for, + 1 */
    uint32_t host_pid;
    char *host;                      /* ... and what it is (NULL: not recorded) */
    struct st__growbuf text;         /* a string value made valid UTF-8 */
    /* grouped counts: names[i] seen counts[i] times, given in name order */
    char **gnames;
    uint64_t *gcounts;
    size_t *glens;                   /* strlen of each name */
    size_t ngroups, group, gnext;    /* groups; the one of the current row; the next one */
    uint64_t left;                   /* rows of the current group still to give */
    uint64_t *by_index;              /* while counting: per catalog index */
    size_t by_index_cap;
};

struct st__sql_spans;

/* Errors: a negative errno with the message in err. Rows: 1 a row is ready, 0 the end. */
int st__sql_scan_start(struct st__sql_scan *s, const struct st__sql_table *t, const struct st__sql_plan *p, char *err,
                       size_t errlen);
int st__sql_scan_next(struct st__sql_scan *s, char *err, size_t errlen);
int st__sql_scan_cell(struct st__sql_scan *s, int col, struct st__sql_cell *out, char *err, size_t errlen);
void st__sql_scan_stop(struct st__sql_scan *s);

/* The rows of the events and processes tables into *rows. */
int st__sql_meta_rows(const struct st__sql_table *t, struct st__sql_rows *rows, char *err, size_t errlen);

/*
 * An index for a join (index.c): a table's rows read once into memory (the
 * columns the query uses), hashed on one column; each lookup gives the rows
 * whose value hashes as the one sought (SQLite compares them itself).
 */
struct st__sql_index;

/* An empty index of rows of ncols on column col, whose declared affinity is affinity (SQLITE_INTEGER, SQLITE_TEXT, 0). */
int st__sql_index_new(struct st__sql_index **out, size_t ncols, int col, int affinity);
/* The row being added: ncols NULL cells to fill with st__sql_cell_copy(); NULL without memory. */
struct st__sql_cell *st__sql_index_row(struct st__sql_index *ix);
/* All rows added: hashes them. 0 or -ENOMEM. */
int st__sql_index_finish(struct st__sql_index *ix);
/* Looks v up: st__sql_index_next() then gives the rows it may equal. */
void st__sql_index_seek(struct st__sql_index *ix, sqlite3_value *v);
/* The next row of the lookup (its cells), or NULL after the last. */
const struct st__sql_cell *st__sql_index_next(struct st__sql_index *ix);
int st__sql_index_col(const struct st__sql_index *ix);
void st__sql_index_free(struct st__sql_index *ix);

/* Spans: streamed from export's engine on a thread. */
int st__sql_spans_start(struct st__sql_spans **out, const struct st__sql_table *t, const struct st__sql_plan *p,
                        char *err, size_t errlen);
int st__sql_spans_next(struct st__sql_spans *sp, char *err, size_t errlen);
int st__sql_spans_cell(struct st__sql_spans *sp, int col, struct st__sql_cell *out);
void st__sql_spans_stop(struct st__sql_spans *sp);

/* --- values ---------------------------------------------------------------------------------- */

/* An integer argument's value as its column holds it (see sql.h). */
static inline struct st__sql_cell st__sql_int_cell(const struct st_arg_info *a, int enc, uint64_t stored)
{
    struct st__sql_cell c = {.type = SQLITE_INTEGER, .i = (sqlite3_int64)stored};
    if (a->kind == ST_VALUE_POINTER || enc == ST_ARG_ENCODING_POINTER)
        return c;
    uint64_t x = st_arg_value(a, stored);
    if (enc == ST_ARG_ENCODING_BOOL) {
        c.i = x != 0;
    } else if (a->is_signed || x <= INT64_MAX) {
        c.i = (sqlite3_int64)x;
    } else {
        c.type = SQLITE_FLOAT;
        c.d = (double)x;
    }
    return c;
}

/* String bytes as TEXT into *c, invalid UTF-8 read as Latin-1 (print's JSON rule) into buf. 0 or -ENOMEM. */
int st__sql_text_cell(struct st__sql_cell *c, struct st__growbuf *buf, const char *s, size_t n);

/* A text cell of the NUL-terminated s; NULL for NULL or "" (not recorded). */
static inline struct st__sql_cell st__sql_str_cell(const char *s)
{
    return s && *s ? (struct st__sql_cell){.type = SQLITE_TEXT, .s = s, .n = strlen(s)} : (struct st__sql_cell){0};
}

/* Sets c as the result of a column. */
static inline void st__sql_result(sqlite3_context *ctx, const struct st__sql_cell *c)
{
    switch (c->type) {
    case SQLITE_INTEGER: sqlite3_result_int64(ctx, c->i); break;
    case SQLITE_FLOAT: sqlite3_result_double(ctx, c->d); break;
    case SQLITE_TEXT: sqlite3_result_text64(ctx, c->s, c->n, SQLITE_TRANSIENT, SQLITE_UTF8); break;
    default: break;
    }
}

#endif /* ST_SQL_INTERNAL_H */
