/*
 * The ftrace backend: each enabled event becomes one line "NAME FORMAT\n"
 * written to the kernel's trace_marker (runtime: backend_ftrace.c), so it
 * lands in the ftrace buffer between the kernel's own events:
 *
 *   if (st__ftrace_active())
 *       st__ftrace("NAME " FMT "\n", args...);
 *
 * st__ftrace_active() is one load of a flag the runtime clears at start-up
 * when no trace_marker can be opened (it says so once on stderr): then the
 * formatting costs nothing.
 */
#include "gen.h"

/* The formats paste PRI macros into the calls. */
static void ftrace_h_prologue(struct st__out *out, const struct st__gen *gen)
{
    (void)gen;
    st__out_printf(out, "#include <inttypes.h>\n");
}

static void ftrace_h_event(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    st__out_printf(out, "        if (st__ftrace_active()) {\n");
    st__gen_emit_printf_call(out, gen, ev, "st__ftrace", "\\n", true, 12);
    st__out_printf(out, "        }\n");
}

/* Opens the marker at start-up, so an unusable one is reported even if no event fires. */
static void ftrace_c_epilogue(struct st__out *out, const struct st__gen *gen)
{
    const char *g = gen->opt->group;
    st__out_printf(out, "\nstatic ST__NO_INSTRUMENT void st__%s_ftrace_init(void) __attribute__((constructor));\n", g);
    st__out_printf(out, "static ST__NO_INSTRUMENT void st__%s_ftrace_init(void)\n{\n    st__ftrace_init();\n}\n",
                  g);
}

const struct st__gen_backend st__gen_backend_ftrace = {
    .name = "ftrace",
    .summary = "write \"NAME FORMAT\" lines to the kernel's ftrace trace_marker",
    .records = true,
    .h_prologue = ftrace_h_prologue,
    .h_event = ftrace_h_event,
    .c_epilogue = ftrace_c_epilogue,
};
