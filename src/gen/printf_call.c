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
static bool needs_void_cast(const struct st__arg *arg, char conv)
{
    if (conv != 'p' || arg->kind == ST_ARG_INTEGER)
        return false;
    return strcmp(arg->type, "void *") != 0 && strcmp(arg->type, "const void *") != 0;
}

/* Writes the arguments of the call, cast where the format needs it. */
static void emit_call_args(struct st__out *out, const struct st__event_decl *ev, bool guard_null)
{
    for (unsigned i = 0; i < ev->nargs; i++) {
        const struct st__arg *arg = &ev->args[i];
        st__out_printf(out, ", ");
        if (guard_null && arg->conv == 's') {
            st__out_printf(out, "(");
            st__out_param(out, arg);
            st__out_printf(out, " ? ");
            st__out_param(out, arg);
            st__out_printf(out, " : \"(null)\")");
            continue;
        }
        if (needs_void_cast(arg, arg->conv))
            st__out_printf(out, "(const void *)");
        st__out_param(out, arg);
    }
}

void st__gen_emit_printf_call(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev,
                             const char *fn, const char *nl, bool guard_null, unsigned indent)
{
    const char *output = gen->opt->output;
    if (output) {
        st__out_printf(out, "#line %u \"", ev->line);
        st__out_c_escaped(out, ev->file);
        st__out_printf(out, "\"\n");
    }
    if (ev->fmt) {
        st__out_printf(out, "%*s%s(\"%s \" ", (int)indent, "", fn, ev->name);
        st__out_format(out, ev->fmt);
        if (nl[0])
            st__out_printf(out, " \"%s\"", nl);
        emit_call_args(out, ev, guard_null);
        st__out_printf(out, ");\n");
    } else {
        st__out_printf(out, "%*s%s(\"%s%s\");\n", (int)indent, "", fn, ev->name, nl);
    }
    if (output) {
        st__out_printf(out, "#line %u \"", out->line + 1);
        st__out_c_escaped(out, output);
        st__out_printf(out, "\"\n");
    }
    if (!ev->fmt)
        for (unsigned i = 0; i < ev->nargs; i++) {
            st__out_printf(out, "%*s(void)", (int)indent, "");
            st__out_param(out, &ev->args[i]);
            st__out_printf(out, ";\n");
        }
}
