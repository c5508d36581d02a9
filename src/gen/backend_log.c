/*
 * The log backend: each enabled event prints "NAME FORMAT\n" through
 * st__log() (one write() to stderr). The call carries a #line directive
 * pointing at the event's line in its trace-events file, so the compiler's
 * format warnings name the line the user must fix; a second #line restores
 * the generated file's own numbering. Both need the output's name, so they
 * are left out when writing to stdout.
 */
#include <string.h>

#include "gen/gen.h"

/* True when arg must be cast for %p: -Wpedantic wants exactly a void pointer. */
static bool needs_void_cast(const struct st_arg *arg, char conv)
{
    if (conv != 'p' || arg->kind == ST_ARG_INTEGER)
        return false;
    return strcmp(arg->type, "void *") != 0 && strcmp(arg->type, "const void *") != 0;
}

/* Writes the arguments of the st__log() call, cast where the format needs it. */
static void emit_call_args(struct st_out *out, const struct st_event_decl *ev)
{
    char conv[ST_MAX_ARGS] = {0};
    unsigned n = st_gen_format_conversions(ev->fmt, conv, ST_MAX_ARGS);
    for (unsigned i = 0; i < ev->nargs; i++) {
        st_out_printf(out, ", ");
        if (i < n && needs_void_cast(&ev->args[i], conv[i]))
            st_out_printf(out, "(const void *)");
        st_out_param(out, &ev->args[i]);
    }
}

/* The formats paste PRI macros into the st__log() calls. */
static void log_h_prologue(struct st_out *out, const struct st_gen *gen)
{
    (void)gen;
    st_out_printf(out, "#include <inttypes.h>\n");
}

static void log_h_event(struct st_out *out, const struct st_gen *gen, const struct st_event_decl *ev)
{
    const char *output = gen->opt->output;
    if (output) {
        st_out_printf(out, "#line %u \"", ev->line);
        st_out_c_escaped(out, ev->file);
        st_out_printf(out, "\"\n");
    }
    if (ev->fmt) {
        st_out_printf(out, "        st__log(\"%s \" ", ev->name);
        st_out_format(out, ev->fmt);
        st_out_printf(out, " \"\\n\"");
        emit_call_args(out, ev);
        st_out_printf(out, ");\n");
    } else {
        st_out_printf(out, "        st__log(\"%s\\n\");\n", ev->name);
    }
    if (output) {
        st_out_printf(out, "#line %u \"", out->line + 1);
        st_out_c_escaped(out, output);
        st_out_printf(out, "\"\n");
    }
    if (!ev->fmt)
        for (unsigned i = 0; i < ev->nargs; i++) {
            st_out_printf(out, "        (void)");
            st_out_param(out, &ev->args[i]);
            st_out_printf(out, ";\n");
        }
}

const struct st_gen_backend st_gen_backend_log = {
    .name = "log",
    .summary = "print \"NAME FORMAT\" lines on stderr",
    .records = true,
    .h_prologue = log_h_prologue,
    .h_event = log_h_event,
};
