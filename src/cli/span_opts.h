/*
 * The options of the commands that make spans from paired events
 * (export, latency, compare, sql): --pair rules and --by, parsed once.
 */
#ifndef ST_CLI_SPAN_OPTS_H
#define ST_CLI_SPAN_OPTS_H

#include <stddef.h>

#include "analysis.h"

/* --pair rules a command takes at most. */
#define CLI_MAX_PAIRS 64

/* --pair=RULE: checked, then appended to pairs[*n] (room for CLI_MAX_PAIRS). 0, or 2 after a usage error. */
int cli_add_pair(const char *cmd, const char *rule, const char **pairs, size_t *n);

/* --by=thread|process|ARG into an. 0, or 2 after a usage error. */
int cli_parse_by(const char *cmd, const char *arg, struct st__an_options *an);

#endif /* ST_CLI_SPAN_OPTS_H */
