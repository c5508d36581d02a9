/*
 * SQL over traces: SQLite virtual tables that read trace files through the
 * public reader API as a query runs; nothing is imported first. Used by
 * `simpletrace sql` (src/cli/cmd_sql.c) and by the loadable extension
 * (extension.c) for the sqlite3 shell and Python's sqlite3.
 *
 * The tables (names fixed; columns may be added at the end, never removed):
 *   records(ts, name, pid, tid, program, host, args)
 *       every event and dropped record: ts in ns on the trace's clock (the
 *       wall clock with ST_READER_ALIGN_REALTIME), name the event's, pid the
 *       process the trace's description names (NULL when it names none:
 *       QEMU's traces), tid the record's pid field (the writing thread in
 *       simpletrace's traces), program and host the description's (NULL
 *       without one), args one JSON object typed as print --format=json
 *       types it (the reader's JSON formatter writes it);
 *   NAME(ts, pid, tid, ARG...)
 *       one table per declared event: its arguments as typed columns
 *       (integers, chars and bools INTEGER, bools 0/1; pointers INTEGER, the
 *       64-bit pattern: negative from 2^63, printf('0x%x', p) shows it as
 *       print does; strings TEXT, invalid UTF-8 read as print's JSON reads
 *       it; an unsigned 64-bit value above 2^63-1 is REAL, as SQLite reads
 *       such a literal, so `x = 18446744073709551615` matches 2^64-1; it
 *       keeps 53 bits). An argument named like an earlier column (ts, pid,
 *       tid, case-insensitively as SQL compares names) gets the suffix _arg;
 *   events(name, id, args, format)
 *       the declared events (Dropped_Event too): id the catalog's index (the
 *       ID of a trace without header), args a JSON array of {"name","type"},
 *       format as declared (NULL without one);
 *   processes(pid, program, host, exe, cmdline, clock, version, trace,
 *             anchor_mono_ns, anchor_real_ns)
 *       one row per process the traces hold, as their descriptions say;
 *   drops(ts, tid, count, pid)
 *       the dropped-events records;
 *   spans(name, begin_ts, end_ts, dur, pid, tid, key, end_tid)
 *       the spans of paired events, exactly those `simpletrace latency`
 *       measures (export's engine pairs them: the same --pair rules, keyed
 *       ones included): tid the begin's thread, end_tid the end's, key a
 *       keyed span's argument value (NULL otherwise).
 *
 * What the reader is told (xBestIndex): ts ranges (=, <, <=, >, >=, BETWEEN)
 * on records, the event tables and drops become its --from/--to filters
 * (converted from the trace's clock to the first record's offset), so
 * records outside are skipped by their length without decoding; name = and
 * name IN (...) on records become its events filter, as every event table
 * reads only its event; end_ts upper bounds on spans stop the reading
 * there. SQLite still checks every constraint itself: pushing is only ever
 * an optimisation. A count per name (SELECT name, count(*) FROM records
 * GROUP BY name, or DISTINCT name) needs no column but the name: the scan
 * counts and gives the rows grouped, sparing SQLite's sort. The inner table
 * of a join on an event table's, drops' or spans' column is read once into
 * an index in memory (index.c) rather than once per outer row. In a
compressed trace with a seek table, the reader jumps over the frames a ts
range leaves out. The function simpletrace_reads() says what a
connection's scans read (struct st__sql_reads), as a JSON object.
 *
 * Each scan of a table opens the traces anew (so a file: a trace "-",
 * standard input, is refused with a message saying so); spans stream from export's engine running on a thread of its own
 * (memory: a few batches of spans, never the trace).
 */
#ifndef ST_SQL_H
#define ST_SQL_H

#include <stdbool.h>
#include <stddef.h>

#include <simpletrace/reader.h>

#include "sql_sqlite.h"

struct st__sql_source;

/* What the tables read. Everything is copied but the catalog, which the caller keeps until the source is freed. */
struct st__sql_input {
    const char *const *traces;          /* one trace (its pieces with ST_READER_ROTATED), or several merged */
    size_t ntraces;
    const struct st_catalog *cat;       /* trace-events files' catalog; NULL: the traces' own declarations */
    const struct st_reader_options *rd; /* flags, filters, offsets (conflict is not used); NULL: defaults */
    const char *const *pairs;           /* pairing rules of the spans table, as export takes them */
    size_t npairs;
    bool no_default_pairs;
};

/*
 * Makes the source of the tables into *out: reads the head of the traces
 * (their declarations, when cat is NULL, and the first record's time).
 * 0, or a negative errno with err saying what ("FILE: byte offset N,
 * record M: ..." for a bad trace). Free with st__sql_source_free().
 */
int st__sql_source_new(struct st__sql_source **out, const struct st__sql_input *in, char *err, size_t errlen);

void st__sql_source_free(struct st__sql_source *src);

/* Called for each event that gets no table of its own (its name is a fixed table's, or another's). */
typedef void (*st__sql_warn_fn)(const char *message, void *opaque);

/*
 * Makes the tables of src known to db by their names (eponymous virtual
 * tables: no CREATE needed). src must outlive db. SQLITE_OK or an SQLite
 * error code with err set.
 */
int st__sql_register_tables(sqlite3 *db, struct st__sql_source *src, st__sql_warn_fn warn, void *opaque, char *err,
                            size_t errlen);

/*
 * Registers the module "simpletrace" (CREATE VIRTUAL TABLE t USING
 * simpletrace(ARGS), args.h says which arguments). SQLITE_OK or an error code.
 */
int st__sql_register_module(sqlite3 *db);

#endif /* ST_SQL_H */
