/*
 * What every trace-reading subcommand (print, stats, export) shares: the
 * reader options (--no-header, --events, --pid, --from, --to, --rotated), the
 * TRACE-EVENTS... TRACE-FILE operands and the usage-error message.
 */
#ifndef ST_CLI_READER_OPTS_H
#define ST_CLI_READER_OPTS_H

#include <getopt.h>
#include <stddef.h>

#include <simpletrace/reader.h>

/* getopt_long codes of the shared options; a command's own codes start at CLI_OPT_OWN. */
enum {
    CLI_OPT_NO_HEADER = 256,
    CLI_OPT_EVENTS,
    CLI_OPT_PID,
    CLI_OPT_FROM,
    CLI_OPT_TO,
    CLI_OPT_ROTATED,
    CLI_OPT_OWN,
};

/* The struct option entries of the shared options, for a command's longopts table. */
#define CLI_READER_LONGOPTS                                                                                  \
    {"no-header", no_argument, NULL, CLI_OPT_NO_HEADER}, {"events", required_argument, NULL, CLI_OPT_EVENTS}, \
        {"pid", required_argument, NULL, CLI_OPT_PID}, {"from", required_argument, NULL, CLI_OPT_FROM},      \
        {"to", required_argument, NULL, CLI_OPT_TO}, {"rotated", no_argument, NULL, CLI_OPT_ROTATED}

/* Prints "simpletrace CMD: " + fmt(arg) and the --help hint on stderr; returns 2 (usage error). */
int cli_usage_error(const char *cmd, const char *fmt, const char *arg);

/*
 * Applies shared option c with its argument to *rd. Returns 0 when applied,
 * 2 after printing a usage error, -1 when c is not a shared option.
 */
int cli_reader_option(const char *cmd, int c, const char *arg, struct st_reader_options *rd);

/* The operands of a trace-reading command (pointers into argv). */
struct cli_operands {
    const char **events_files; /* TRACE-EVENTS... */
    size_t nevents_files;
    const char *trace;         /* TRACE-FILE */
};

/*
 * Takes TRACE-EVENTS... TRACE-FILE from argv[first..argc), checked against
 * the options in *rd (--rotated needs a path). 0, or 2 after a usage error.
 */
int cli_trace_operands(const char *cmd, int argc, char **argv, int first, const struct st_reader_options *rd,
                       struct cli_operands *out);

#endif
