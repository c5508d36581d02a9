/*
 * What every trace-reading subcommand (print, stats, export, merge) shares:
 * the reader options (--no-header, --events, --tid, --pid, --from, --to,
 * --rotated, --no-rotated, --align, --offset), the TRACE-EVENTS... TRACE operands,
 * opening the trace, and the messages: usage errors, and the hints for
 * the common mistakes (operands swapped, --pid on a trace that does not
 * record its process, a rotated trace named by its first piece).
 */
#ifndef ST_CLI_READER_OPTS_H
#define ST_CLI_READER_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include <simpletrace/reader.h>

/* getopt_long codes of the shared options; a command's own codes start at CLI_OPT_OWN. */
enum {
    CLI_OPT_NO_HEADER = 256,
    CLI_OPT_EVENTS,
    CLI_OPT_TID,
    CLI_OPT_PID,
    CLI_OPT_FROM,
    CLI_OPT_TO,
    CLI_OPT_ROTATED,
    CLI_OPT_NO_ROTATED,
    CLI_OPT_ALIGN,
    CLI_OPT_OFFSET,
    CLI_OPT_OWN,
};

/* The struct option entries of the shared options, for a command's longopts table. */
#define CLI_READER_LONGOPTS                                                                                  \
    {"no-header", no_argument, NULL, CLI_OPT_NO_HEADER}, {"events", required_argument, NULL, CLI_OPT_EVENTS}, \
        {"tid", required_argument, NULL, CLI_OPT_TID}, {"pid", required_argument, NULL, CLI_OPT_PID},        \
        {"from", required_argument, NULL, CLI_OPT_FROM}, {"to", required_argument, NULL, CLI_OPT_TO},        \
        {"rotated", no_argument, NULL, CLI_OPT_ROTATED}, {"no-rotated", no_argument, NULL, CLI_OPT_NO_ROTATED}, \
        {"align", required_argument, NULL, CLI_OPT_ALIGN}, {"offset", required_argument, NULL, CLI_OPT_OFFSET}

/* What a trace-reading command reads, from its options and operands. */
struct cli_input {
    struct st_reader_options rd; /* struct_size set by cli_input_init() */
    bool rotated_off;            /* --no-rotated: TRACE-FILE alone, even when it has pieces */
    const char **events_files;   /* TRACE-EVENTS... (pointers into argv) */
    size_t nevents_files;
    const char *trace;           /* TRACE-FILE (the first, when several) */
    char **traces;               /* every trace to read, directories expanded (owned: cli_input_free()) */
    size_t ntraces;
    bool undeclared_ok;          /* a trace without declarations and without trace-events files is
                                    read anyway, undecoded (info: ST_READER_UNDECLARED) */
    const char **offset_args;    /* --offset=TRACE=TIME, as given (pointers into argv) */
    size_t noffset_args;
    int64_t *offsets;            /* per trace, from offset_args once the traces are known (owned) */
};

/* Zeroes *in and sets the reader options' struct_size. */
void cli_input_init(struct cli_input *in);

/* Frees the list of traces and the offsets (a zeroed *in is fine). */
void cli_input_free(struct cli_input *in);

/* Prints "simpletrace CMD: " + fmt(arg) and the --help hint on stderr; returns 2 (usage error). */
int cli_usage_error(const char *cmd, const char *fmt, const char *arg);

/*
 * Applies shared option c with its argument to *in. Returns 0 when applied,
 * 2 after printing a usage error, -1 when c is not a shared option.
 */
int cli_reader_option(const char *cmd, int c, const char *arg, struct cli_input *in);

/* Whether path parses as a trace-events file (a trace never does: it is binary; "-" is never one). */
bool cli_is_events_file(const char *path);

/*
 * Where the traces start in argv[first..argc) (argc > first): the leading
 * operands are trace-events files unless they are "-", a directory or a
 * file that starts as a trace; the last operand is always taken as a trace.
 */
int cli_first_trace(int argc, char **argv, int first);

/*
 * Takes [TRACE-EVENTS...] TRACE... from argv[first..argc): the leading
 * operands that parse as trace-events files (as info sorts them; the last
 * operand is always a trace), then traces and directories (each regular
 * file in one that starts with a trace header, by name; FILE.N with FILE
 * read as its pieces). Without trace-events files the traces' own
 * declarations are read. When the last operand is no trace either (a
 * text file: the operands swapped?), it alone is the trace, as before
 * several were read. Checked against the options (--rotated needs a
 * path). 0, or 1/2 after an error/usage error.
 */
int cli_trace_operands(const char *cmd, int argc, char **argv, int first, struct cli_input *in);

/*
 * compare's operands, [TRACE-EVENTS...] BASE NEW from argv[first..argc):
 * two runs, each read as cli_trace_operands() reads its traces (a file, a
 * directory, a rotated set), with the same trace-events files. base holds
 * the options parsed; run2 gets a copy of them (free both with
 * cli_input_free()). An --offset=TRACE=TIME applies to the run holding
 * TRACE. 0, or 1/2 after an error/usage error.
 */
int cli_trace_operands_pair(const char *cmd, int argc, char **argv, int first, struct cli_input *base,
                            struct cli_input *run2);

/* A trace opened for reading: the catalog and the reader (close with cli_trace_close()). */
struct cli_trace {
    struct st_catalog *cat;
    struct st_reader *r;
    bool embedded;     /* no trace-events files: cat is the reader's own, grown from the traces' declarations */
    const char *cmd;   /* for the conflict messages */
    const char *trace;
};

/*
 * Loads the trace-events files (or the declarations the trace carries) and opens the trace, reading its pieces
 * when TRACE-FILE was written with rotate= (unless --no-rotated). A conflict
 * between the trace-events files and the trace's declarations is printed
 * on stderr as it is met, once per event. Returns 0, or the exit status
 * (1 bad input, 2 bad options) after a message.
 */
int cli_trace_open(const char *cmd, struct cli_input *in, struct cli_trace *t);

/*
 * The number of processes the trace's inputs hold (st_reader_input_process(),
 * after the first st_reader_next()).
 */
size_t cli_trace_processes(const struct cli_trace *t);

/* Writes input i's process as print shows it: "PROGRAM[PID]", or "input#N" without a description. */
void cli_trace_process_name(const struct cli_trace *t, size_t i, char *buf, size_t len);

/*
 * Whether the reader's error is no damage of the trace (opaque: the
 * struct cli_trace): trace-events files that do not match it, so the
 * records before were decoded wrongly too and nothing is kept of them.
 * For st__export_options.not_damage.
 */
bool cli_not_damage(const struct st_reader *r, void *opaque);

/* Frees what cli_trace_open() made (a zeroed *t is fine). */
void cli_trace_close(struct cli_trace *t);

/*
 * Refuses an output out that is one of in's inputs (a trace-events file, a
 * trace or a piece of one; extra too when not NULL; for a directory output
 * (dir), a directory holding any), naming both: the usage error's status,
 * or -1 to go on.
 */
int cli_check_output(const char *cmd, const struct cli_input *in, const char *out, bool dir, const char *extra);

/*
 * After a trace was read to its end: says on stderr, one line each, which
 * filter selected nothing and why (an --events glob no event matches, with
 * the nearest names; a --tid or --pid no record has, with the ones there
 * are; a --from after the last record). The exit status is not changed.
 */
void cli_trace_report_filters(const struct cli_trace *t, const struct cli_input *in);

/*
 * Formats the reader's error as "FILE: byte offset N, record M: what",
 * with a hint where the options or the operands are the likely cause.
 */
void cli_reader_error(const char *cmd, const struct cli_trace *t, const struct cli_input *in, char *buf, size_t len);

#endif
