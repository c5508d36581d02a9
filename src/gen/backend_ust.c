/*
 * The ust backend: one LTTng-UST tracepoint per event, declared by the
 * provider files (--format=ust-events-h and ust-events-c, emit_ust.c):
 *
 *   #include "GROUP-ust.h"                            the provider header
 *   trace_NAME(): lttng_ust_tracepoint(PROVIDER, NAME, args...);
 *
 * The tracepoint is self-gated (gen.h): LTTng's own state for the event
 * (switched by `lttng enable-event`) decides, and trace_NAME_enabled() is
 * true while a session records it. Nothing here links libsimpletrace to
 * lttng-ust: the program that uses this header compiles the ust-events-c
 * file and links -llttng-ust -ldl.
 */
#include "gen.h"

static void ust_h_prologue(struct st__out *out, const struct st__gen *gen)
{
    char name[512];
    st__gen_ust_header_name(gen, name, sizeof name);
    st__out_printf(out, "#include \"");
    st__out_c_escaped(out, name);
    st__out_printf(out, "\"\n");
}

static void ust_h_enabled(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    st__out_printf(out, "lttng_ust_tracepoint_enabled(%s, %s)", st__gen_provider(gen), ev->name);
}

static void ust_h_event_unguarded(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    st__out_printf(out, "    if (");
    ust_h_enabled(out, gen, ev);
    st__out_printf(out, ")\n        lttng_ust_do_tracepoint(%s, %s", st__gen_provider(gen), ev->name);
    if (ev->nargs == 0)
        st__out_printf(out, ", "); /* an empty argument: ISO C wants one for the macro's "..." */
    for (unsigned i = 0; i < ev->nargs; i++) {
        st__out_printf(out, ", ");
        st__out_param(out, &ev->args[i]);
    }
    st__out_printf(out, ");\n");
}

const struct st__gen_backend st__gen_backend_ust = {
    .name = "ust",
    .summary = "LTTng-UST tracepoints (provider from --format=ust-events-h/ust-events-c)",
    .records = true,
    .h_prologue = ust_h_prologue,
    .h_event_unguarded = ust_h_event_unguarded,
    .h_enabled = ust_h_enabled,
};
