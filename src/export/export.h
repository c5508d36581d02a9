/*
 * The exporter: turns a simpletrace trace, read through the public reader
 * API, into a uftrace.data directory, a Chrome trace-event JSON file, a
 * Perfetto protobuf trace, a CTF 1.8 directory or collapsed stacks for flame
 * graphs (folded.c: memory grows with the distinct stacks), streaming (memory
 * bounded by the number of threads, never by the size of the trace). The
 * `simpletrace export` command is its front end.
 *
 * What becomes what (every format uses the same pairing and nesting; CTF,
 * which has no calls, writes every record as an event of its own):
 *   - a begin event (see "pairing") opens a call of its function on the
 *     record's thread (the record's pid field), its end event closes it;
 *     calls nest by a per-thread stack;
 *   - any other event is an instant event of its thread;
 *   - a dropped-events record is a mark on its thread with the count.
 *
 * Pairing: rules "BEGIN:END[=NAME][@ARG]" tried in order, the caller's first,
 * then (unless turned off) the built-in `*_enter:*_exit`, `*_begin:*_end`,
 * `*_start:*_done`. A side with one `*` is a pattern whose `*` part names
 * the function (X in X_enter); a side without `*` is an exact event name,
 * and the function is named after the two names' common prefix (job_start
 * and job_done: "job"). NAME, when given, names the function instead (a
 * `*` in it stands for the captured part). An event pairs only if its
 * partner is declared in the catalog: `demo_start` without `demo_done`
 * stays an instant event. A catalog the reader builds from the trace grows
 * as the declarations arrive: an event pairs from the record where both
 * are declared on (its earlier records stay instants; roles never change).
 * A rule with "@ARG" is keyed: it pairs only events that both declare an
 * argument ARG, and an end closes the open begin of the same process (on
 * any thread) whose ARG has the same value (a request submitted on one
 * thread and completed on another). Keyed spans do not nest: Chrome and
 * Perfetto draw them as async slices, the other formats as their records.
 * A key that begins again while open ends the older span there ("key
 * reused"); an end whose key is not open is an "end without begin".
 *
 * Nesting, for the cases a clean trace never has:
 *   - an end while its function is open deeper in the stack closes the
 *     frames above it first ("closed early", at the end's time);
 *   - an end whose function is not open is written as an instant event
 *     ("end without begin");
 *   - a frame still open at the end of the trace is closed at the last
 *     timestamp of the trace ("never ended");
 *   - begins beyond max_depth open frames are not written, and each end
 *     that comes while such frames are open closes one of them ("too deep");
 *   - a timestamp older than its thread's previous one is raised to it
 *     (uftrace requires time order per thread; "clamped").
 *
 * Function calls: a function trace of the same run (the function tracer's
 * uftrace.data, same clock) is merged by time with the records: its
 * ENTRY/EXIT records open and close calls of the function its symbols
 * name, on the thread of the same id in the process of the same id (one
 * the traces describe, else a process named after its executable), and
 * nest with the paired events there.
 *
 * Processes: a trace's description (simpletrace's traces) names the
 * program and process, which every output uses. A trace without one (its
 * pid field holds thread ids) gets no made-up name:
 * the program is "unknown-program", the trace file is named as the trace
 * (Chrome's otherData, uftrace's cmdline), tracks and tasks are named by
 * thread id, and the process id shown is the lowest thread id (the main
 * thread's id is the process id, when the main thread traced).
 *
 * Errors are negative errno values; on any error the partial output is
 * removed (the output is written under a temporary name and renamed into
 * place at the end), except Chrome JSON written to standard output, which
 * is closed so that it stays valid JSON, and a trace damaged after its
 * first record (cut by kill -9): the output then holds every record
 * before the damage, and the run returns the reader's error.
 */
#ifndef ST_EXPORT_H
#define ST_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <simpletrace/reader.h>

struct st__ex_writer;

enum st__export_format {
    ST_EXPORT_UFTRACE, /* a uftrace.data directory */
    ST_EXPORT_CHROME,  /* Chrome trace-event JSON (Perfetto UI, chrome://tracing) */
    ST_EXPORT_PERFETTO, /* Perfetto's protobuf trace (Perfetto UI, trace_processor) */
    ST_EXPORT_CTF,     /* a CTF 1.8 trace directory (babeltrace2, Trace Compass) */
    ST_EXPORT_FOLDED,  /* collapsed stacks with self times (flamegraph.pl, inferno, speedscope) */
    ST_EXPORT_PARQUET, /* a directory of Apache Parquet files (DuckDB, Spark, Trino, ClickHouse, pandas) */
};

/* Folded stacks: the frame put first in every stack (folded.c). */
enum st__export_root {
    ST_EXPORT_ROOT_NONE,    /* none: every thread's stacks added together, as uftrace's flame graph */
    ST_EXPORT_ROOT_PROGRAM, /* PROGRAM */
    ST_EXPORT_ROOT_PROCESS, /* PROGRAM-PID */
    ST_EXPORT_ROOT_THREAD,  /* PROGRAM-PID/TID */
};

/* Parquet: the Hive-style directories each process's files go to (st__export_options.partition). */
#define ST_EXPORT_PARTITION_HOST 1u /* host=H/ */
#define ST_EXPORT_PARTITION_PID 2u  /* pid=P/ */

/* Where a long conversion is; given to the progress callback. */
struct st__export_progress {
    uint64_t records; /* records read so far (the reader's count, filtered ones included) */
    uint64_t bytes;   /* bytes of the trace consumed so far */
};

/* Called every few ten thousand records; a non-zero return stops the export (-EINTR). */
typedef int (*st__export_progress_fn)(const struct st__export_progress *p, void *opaque);

/* What to do; zeroed members mean defaults. The caller owns everything. */
struct st__export_options {
    enum st__export_format format;
    const char *output;          /* uftrace, ctf, parquet: the directory; chrome, folded: the file, "-" = standard
                                    output; perfetto: the file */
    const char *const *pairs;    /* pairing rules "BEGIN:END[=NAME][@ARG]", tried before the built-in ones */
    size_t npairs;
    bool no_default_pairs;       /* only the rules above */
    unsigned max_depth;          /* open frames per thread, 0 = 1024 (uftrace shows 1024 by default) */
    unsigned max_open_files;     /* uftrace: .dat files kept open at once, 0 = 128 */
    const char *trace_name;      /* the trace's path: shown labelled as the trace, never as the program */
    const char *functions;       /* a function trace (uftrace.data directory) of the same run, or NULL */
    const char *cmdline;         /* uftrace `info` cmdline: the export command */
    enum st__export_root folded_root; /* folded: the root frame of every stack */
    st__export_progress_fn progress;
    void *progress_opaque;
    /* A reader error after records is damage (the output holds what came before) unless this says it is
     * not (true: say, trace-events files that do not match the trace): then nothing is written. NULL: all is
     * damage. */
    bool (*not_damage)(const struct st_reader *r, void *opaque);
    void *not_damage_opaque;
    /* Instead of format's writer, this one (an analysis of the spans: src/analysis/); writer_arg is its. */
    const struct st__ex_writer *writer;
    void *writer_arg;
    bool realtime;               /* the reader moved timestamps to wall-clock time (--align=realtime) */
    unsigned partition;          /* parquet: ST_EXPORT_PARTITION_* */
};

/* What was written, for the summary line. */
struct st__export_summary {
    uint64_t records;        /* event and dropped records converted (after the reader's filters) */
    uint64_t threads;
    uint64_t functions;      /* distinct function names the pairing rules produced */
    uint64_t calls;          /* frames opened (each is closed, one way or another) */
    uint64_t instants;       /* events written as instant events, unmatched ends included */
    uint64_t drop_marks;     /* dropped-events records ... */
    uint64_t dropped_events; /* ... and the sum of their counts */
    uint64_t unmatched_ends; /* ends without an open begin (written as instant events) */
    uint64_t key_reused;     /* keyed spans ended by a begin of the same key */
    uint64_t never_ended;    /* frames closed at the end of the trace */
    uint64_t closed_early;   /* frames closed by the end of an outer frame */
    uint64_t too_deep;       /* begins beyond max_depth, not written */
    uint64_t clamped;        /* timestamps raised to keep each thread in time order */
    char unused_rule[256];   /* the first caller rule that paired no event ("" if all did) */
    uint64_t unused_rules;   /* bit k: caller rule k (k < 64) paired no event, so each one can be named */
    uint64_t function_records; /* records of the function trace converted (ENTRY, EXIT, LOST) ... */
    uint64_t function_events;  /* ... and its EVENT records, left out (the function tracer writes none) */
    uint64_t names_cut;        /* uftrace: event and function names cut to what uftrace reads (ST_UFT_NAME_MAX) */
    bool partial;              /* the trace is damaged after its first record: the output holds what came
                                  before (st__export_run returned the reader's error) */
};

/*
 * Checks the syntax of one pairing rule. Returns 0, or -EINVAL with what
 * is wrong in err.
 */
int st__export_check_pair(const char *rule, char *err, size_t errlen);

/*
 * Converts every remaining record of r into o->output. Returns 0 with *s
 * filled; the reader's error code when the trace is bad (the reader's
 * st_reader_error() says where): with s->partial set when the damage
 * comes after records, and o->output holds those (open frames closed at
 * the last timestamp, *s filled), else nothing is left at o->output; -EINTR when
 * the progress callback stopped it; or another negative errno with err
 * saying what (output not writable, directory holding other files, ...).
 */
int st__export_run(struct st_reader *r, const struct st__export_options *o, struct st__export_summary *s, char *err,
                  size_t errlen);

#endif /* ST_EXPORT_H */
