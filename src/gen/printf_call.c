/*
 * The call the text backends (log, ftrace, syslog) put in trace_NAME():
 *
 *   #line LINE "trace-events"                 compiler format warnings name
 *           FN("NAME " FMT NL, args...);      the line the user must fix
 *   #line N "OUTPUT"                          back to the generated file
 *
 * The #line pair needs the output's name, so it is left out on stdout.
 * Pointers passed to %p are cast to (const void *): -Wpedantic wants
 * exactly a void pointer there. With guard_null, a string passed to %s is
 * written (s ? s : "(null)"): printf's %s with NULL is undefined, and GCC
 * warns at call sites where it sees one.
 */
#include <string.h>

#include "gen.h"

/* True when arg must be cast for %p. */
static bool needs_void_cast(const struct st_arg *arg, char conv)
{
    if (conv != 'p' || arg->kind == ST_ARG_INTEGER)
        return false;
    return strcmp(arg->type, "void *") != 0 && strcmp(arg->type, "const void *") != 0;
}

/* Writes the arguments of the call, cast where the format needs it. */
static void emit_call_args(struct st_out *out, const struct st_event_decl *ev, bool guard_null)
{
    for (unsigned i = 0; i < ev->nargs; i++) {
        const struct st_arg *arg = &ev->args[i];
        st_out_printf(out, ", ");
        if (guard_null && arg->conv == 's') {
            st_out_printf(out, "(");
            st_out_param(out, arg);
            st_out_printf(out, " ? ");
            st_out_param(out, arg);
            st_out_printf(out, " : \"(null)\")");
            continue;
        }
        if (needs_void_cast(arg, arg->conv))
            st_out_printf(out, "(const void *)");
        st_out_param(out, arg);
    }
}

void st_gen_emit_printf_call(struct st_out *out, const struct st_gen *gen, const struct st_event_decl *ev,
                             const char *fn, const char *nl, bool guard_null, unsigned indent)
{
    const char *output = gen->opt->output;
    if (output) {
        st_out_printf(out, "#line %u \"", ev->line);
        st_out_c_escaped(out, ev->file);
        st_out_printf(out, "\"\n");
    }
    if (ev->fmt) {
        st_out_printf(out, "%*s%s(\"%s \" ", (int)indent, "", fn, ev->name);
        st_out_format(out, ev->fmt);
        if (nl[0])
            st_out_printf(out, " \"%s\"", nl);
        emit_call_args(out, ev, guard_null);
        st_out_printf(out, ");\n");
    } else {
        st_out_printf(out, "%*s%s(\"%s%s\");\n", (int)indent, "", fn, ev->name, nl);
    }
    if (output) {
        st_out_printf(out, "#line %u \"", out->line + 1);
        st_out_c_escaped(out, output);
        st_out_printf(out, "\"\n");
    }
    if (!ev->fmt)
        for (unsigned i = 0; i < ev->nargs; i++) {
            st_out_printf(out, "%*s(void)", (int)indent, "");
            st_out_param(out, &ev->args[i]);
            st_out_printf(out, ";\n");
        }
}
