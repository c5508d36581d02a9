/*
 * The arguments of the module: CREATE VIRTUAL TABLE t USING simpletrace(ARG, ...).
 * SQLite hands over each argument's text as written; each is
 *   'PATH' or "PATH"     a trace (quotes as in SQL: '' inside stands for ');
 *                        several are read as one, merged by timestamp
 *   KEY=VALUE            VALUE bare or quoted, KEY one of
 *     trace=PATH           a trace, as above
 *     events=PATH          a trace-events file (repeatable; without, the traces' own declarations)
 *     table=NAME           records (the default), events, processes, drops, spans, or an event's name
 *     event=NAME           the table of the event NAME (for one named like a fixed table)
 *     pair=RULE            a pairing rule of the spans table, BEGIN:END[=NAME][@ARG] (repeatable)
 *     select=GLOBS         only these events, as --events (comma-separated globs need quotes)
 *     tid=N, pid=N         only this thread's / process's records, as --tid / --pid
 *     from=T, to=T         only records from / up to T after the first record, as --from / --to
 *     align=realtime       timestamps on the wall clock, as --align=realtime
 *   no_default_pairs, rotated, no_header
 *                        flags, as --no-default-pairs, --rotated, --no-header
 *   anything else bare   a trace
 * Relative paths are taken from the process's working directory whenever
 * the table is connected (each time a database holding it is opened).
 */
#ifndef ST_SQL_ARGS_H
#define ST_SQL_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include <simpletrace/reader.h>

struct st__sql_args {
    char **traces;           /* owned */
    size_t ntraces;
    char **events_files;     /* owned */
    size_t nevents_files;
    char *table;             /* owned; NULL: records */
    char *event;             /* owned; NULL unless event= */
    char **pairs;            /* owned */
    size_t npairs;
    bool no_default_pairs;
    struct st_reader_options rd; /* flags and filters; rd.events is select (owned) */
};

/*
 * Parses argv[0..argc) (the module's arguments) into *a, zeroed first.
 * 0, or -EINVAL with err naming the argument and what is wrong, or
 * -ENOMEM. Free with st__sql_args_free() in every case.
 */
int st__sql_args_parse(struct st__sql_args *a, int argc, const char *const *argv, char *err, size_t errlen);

void st__sql_args_free(struct st__sql_args *a);

#endif /* ST_SQL_ARGS_H */
