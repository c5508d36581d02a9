/* The span options shared by export, latency, compare and sql (span_opts.h). */
#include "span_opts.h"

#include <string.h>

#include "export.h"
#include "reader_opts.h"

int cli_add_pair(const char *cmd, const char *rule, const char **pairs, size_t *n)
{
    char err[512];
    if (st__export_check_pair(rule, err, sizeof err) < 0)
        return cli_usage_error(cmd, "%s", err);
    if (*n == CLI_MAX_PAIRS)
        return cli_usage_error(cmd, "more than %s --pair rules", "64");
    pairs[(*n)++] = rule;
    return 0;
}

int cli_parse_by(const char *cmd, const char *arg, struct st__an_options *an)
{
    if (!strcmp(arg, "thread")) {
        an->by = ST__AN_BY_THREAD;
    } else if (!strcmp(arg, "process")) {
        an->by = ST__AN_BY_PROCESS;
    } else if (arg[0] && !strpbrk(arg, " \t,:=@*")) {
        an->by = ST__AN_BY_ARG;
        an->by_arg = arg;
    } else {
        return cli_usage_error(cmd, "bad --by '%s' (thread, process or an argument's name)", arg);
    }
    return 0;
}
