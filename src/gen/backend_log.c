/*
 * The log backend: each enabled event prints "NAME FORMAT\n" through
 * st__log() (one write() to stderr). The call is written by
 * st__gen_emit_printf_call() (printf_call.c), with #line directives that make
 * the compiler's format warnings name the event's line in its trace-events
 * file.
 */
#include "gen.h"

/* The formats paste PRI macros into the st__log() calls. */
static void log_h_prologue(struct st__out *out, const struct st__gen *gen)
{
    (void)gen;
    st__out_printf(out, "#include <inttypes.h>\n");
}

static void log_h_event(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    st__gen_emit_printf_call(out, gen, ev, "st__log", "\\n", false, 8);
}

const struct st__gen_backend st__gen_backend_log = {
    .name = "log",
    .summary = "print \"NAME FORMAT\" lines on stderr",
    .records = true,
    .h_prologue = log_h_prologue,
    .h_event = log_h_event,
};
