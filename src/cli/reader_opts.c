/* Options and operands shared by the trace-reading subcommands (reader_opts.h). */
#include "reader_opts.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "simpletrace %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'simpletrace %s --help'.\n", cmd);
    return 2;
}

static int parse_pid(const char *cmd, const char *arg, struct st_reader_options *rd)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(arg, &end, 10);
    if (errno || end == arg || *end || *arg == '-' || v > UINT32_MAX)
        return cli_usage_error(cmd, "bad pid '%s'", arg);
    rd->filter_pid = true;
    rd->pid = (uint32_t)v;
    return 0;
}

static int parse_time(const char *cmd, const char *arg, bool *set, int64_t *ns)
{
    if (st_parse_duration_ns(arg, ns) < 0)
        return cli_usage_error(cmd, "bad time '%s' (want e.g. 1500, 20us, 1.5ms, 2s)", arg);
    *set = true;
    return 0;
}

int cli_reader_option(const char *cmd, int c, const char *arg, struct st_reader_options *rd)
{
    switch (c) {
    case CLI_OPT_NO_HEADER: rd->flags |= ST_READER_NO_HEADER; return 0;
    case CLI_OPT_EVENTS: rd->events = arg; return 0;
    case CLI_OPT_PID: return parse_pid(cmd, arg, rd);
    case CLI_OPT_FROM: return parse_time(cmd, arg, &rd->filter_from, &rd->from_ns);
    case CLI_OPT_TO: return parse_time(cmd, arg, &rd->filter_to, &rd->to_ns);
    case CLI_OPT_ROTATED: rd->flags |= ST_READER_ROTATED; return 0;
    default: return -1;
    }
}

int cli_trace_operands(const char *cmd, int argc, char **argv, int first, const struct st_reader_options *rd,
                       struct cli_operands *out)
{
    if (argc - first < 2)
        return cli_usage_error(cmd, "%s", "need TRACE-EVENTS... TRACE-FILE");
    out->events_files = (const char **)(argv + first);
    out->nevents_files = (size_t)(argc - first - 1);
    out->trace = argv[argc - 1];
    /* Pieces are found by their names: standard input has none. */
    if ((rd->flags & ST_READER_ROTATED) && !strcmp(out->trace, "-"))
        return cli_usage_error(cmd, "%s", "--rotated needs a TRACE-FILE path, not \"-\"");
    return 0;
}
