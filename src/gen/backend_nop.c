/*
 * The nop backend: records nothing. Selected alone it compiles every event
 * out (TRACE_NAME_ENABLED 0, arguments cast to void); the events still exist
 * in the source file, flagged ST_EVENT_COMPILED_OUT, so tools can list them.
 */
#include "gen.h"

const struct st__gen_backend st__gen_backend_nop = {
    .name = "nop",
    .summary = "compile every event out (no code, no cost)",
    .records = false,
};
