/*
 * The generated source (--format=c): one struct st_event per event, an
 * array of them, the group, and a constructor/destructor pair that registers
 * the group with the runtime when the program (or shared library) loads and
 * unregisters it when it unloads. Compiled-out events are still defined,
 * flagged ST_EVENT_COMPILED_OUT, so the runtime can list them as unavailable.
 * Events of a build without the simple backend are flagged
 * ST_EVENT_UNRECORDED: the runtime then leaves no trace file behind for a
 * program none of whose events could be written to one.
 */
#include <string.h>

#include "gen.h"

static void emit_prologue(struct st__out *out, const struct st__gen *gen)
{
    st__gen_emit_banner(out, gen);
    st__out_printf(out, "#include <inttypes.h>\n#include <simpletrace/trace.h>\n");
    for (unsigned i = 0; i < gen->opt->nbackends; i++)
        if (gen->opt->backends[i]->c_prologue)
            gen->opt->backends[i]->c_prologue(out, gen);
    st__out_printf(out, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
}

/* Writes the declared argument list as a C string body ("void" when none). */
static void emit_args_text(struct st__out *out, const struct st__event_decl *ev)
{
    if (ev->nargs == 0)
        st__out_printf(out, "void");
    for (unsigned i = 0; i < ev->nargs; i++) {
        const struct st__arg *arg = &ev->args[i];
        size_t n = strlen(arg->type);
        st__out_printf(out, "%s", i ? ", " : "");
        st__out_c_escaped(out, arg->type);
        st__out_printf(out, "%s", n && arg->type[n - 1] == '*' ? "" : " ");
        st__out_c_escaped(out, arg->name);
    }
}

/* Whether the simple backend, the one writing the trace file, is selected. */
static bool writes_trace_file(const struct st__gen *gen)
{
    for (unsigned i = 0; i < gen->opt->nbackends; i++)
        if (!strcmp(gen->opt->backends[i]->name, "simple"))
            return true;
    return false;
}

static void emit_event(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    st__out_printf(out, "\nextern ST__HIDDEN struct st_event st__event_%s;\n", ev->name);
    st__out_printf(out, "ST__HIDDEN struct st_event st__event_%s = {\n    sizeof(struct st_event), 0, 0, \"", ev->name);
    st__out_c_escaped(out, ev->name);
    st__out_printf(out, "\", \"");
    emit_args_text(out, ev);
    st__out_printf(out, "\",\n    ");
    st__out_format(out, ev->fmt ? ev->fmt : "\"\"");
    st__out_printf(out, ",\n    \"");
    for (unsigned i = 0; i < ev->nargs; i++)
        st__out_printf(out, "%c", ev->args[i].kind == ST_ARG_STRING ? 's' : 'i');
    st__out_printf(out, "\", %u, %s\n};\n", ev->nargs,
                  !st__gen_event_compiled_in(gen, ev) ? "ST_EVENT_COMPILED_OUT"
                  : writes_trace_file(gen)         ? "0"
                                                   : "ST_EVENT_UNRECORDED");
    for (unsigned i = 0; i < gen->opt->nbackends; i++)
        if (gen->opt->backends[i]->c_event)
            gen->opt->backends[i]->c_event(out, gen, ev);
}

/* The group, its event array (absent when empty: C has no empty arrays) and its constructor. */
static void emit_group(struct st__out *out, const struct st__gen *gen)
{
    const char *g = gen->opt->group;
    size_t n = gen->events->count;
    if (n) {
        st__out_printf(out, "\nstatic struct st_event *const st__%s_events[] = {\n", g);
        for (size_t i = 0; i < n; i++)
            st__out_printf(out, "    &st__event_%s,\n", gen->events->events[i].name);
        st__out_printf(out, "};\n");
    }
    st__out_printf(out, "\nstatic struct st_group st__%s_group = { sizeof(struct st_group), \"", g);
    st__out_c_escaped(out, g);
    if (n)
        st__out_printf(out, "\", st__%s_events, %zuu, 0 };\n", g, n);
    else
        st__out_printf(out, "\", NULL, 0u, 0 };\n");
    st__out_printf(out, "\nstatic ST__NO_INSTRUMENT void st__%s_register(void) __attribute__((constructor));\n", g);
    st__out_printf(out, "static ST__NO_INSTRUMENT void st__%s_register(void)\n{\n", g);
    st__out_printf(out, "    (void)st_group_register(&st__%s_group);\n}\n", g);
    st__out_printf(out, "\nstatic ST__NO_INSTRUMENT void st__%s_unregister(void) __attribute__((destructor));\n", g);
    st__out_printf(out, "static ST__NO_INSTRUMENT void st__%s_unregister(void)\n{\n", g);
    st__out_printf(out, "    st_group_unregister(&st__%s_group);\n}\n", g);
}

void st__gen_emit_c(struct st__out *out, const struct st__gen *gen)
{
    emit_prologue(out, gen);
    for (size_t i = 0; i < gen->events->count; i++)
        emit_event(out, gen, &gen->events->events[i]);
    emit_group(out, gen);
    for (unsigned i = 0; i < gen->opt->nbackends; i++)
        if (gen->opt->backends[i]->c_epilogue)
            gen->opt->backends[i]->c_epilogue(out, gen);
    st__out_printf(out, "\n#ifdef __cplusplus\n}\n#endif\n");
}
