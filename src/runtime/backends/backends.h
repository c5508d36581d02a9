/*
 * The backends other than `simple` that need the runtime: log (stderr),
 * ftrace (trace_marker) and syslog. Generated code calls them through
 * trace.h; this is what the rest of the runtime sees of them.
 */
#ifndef ST_RUNTIME_BACKENDS_H
#define ST_RUNTIME_BACKENDS_H

#include "config_part.h"

/* log-prefix=on|off: log lines start with "TID@SEC.USEC:". */
extern const struct st__cfg_part st__backends_cfg_part;

#endif /* ST_RUNTIME_BACKENDS_H */
