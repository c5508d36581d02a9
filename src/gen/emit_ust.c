/*
 * The LTTng-UST tracepoint provider for the ust backend (LTTng-UST 2.13
 * API names), one LTTNG_UST_TRACEPOINT_EVENT per compiled-in event:
 *
 *   GROUP-ust.h (--format=ust-events-h)     included by the generated trace
 *                                           header and, through
 *                                           LTTNG_UST_TRACEPOINT_INCLUDE,
 *                                           re-read by LTTng's macros
 *   GROUP-ust.c (--format=ust-events-c)     the one file that creates the
 *                                           probes and defines the tracepoints
 *
 * Fields follow the declared kinds: integers keep their size and signedness
 * (lttng_ust_field_integer with the fixed-width type of the declared one, so
 * `long` is int64_t on LP64 and bool is uint8_t), pointers are hexadecimal
 * uintptr_t, strings are lttng_ust_field_string (LTTng records a NULL
 * string as "(null)"). The tracepoint arguments keep the declared types,
 * so the compiler converts exactly as for trace_NAME().
 */
#include <stdio.h>

#include "gen.h"

void st__gen_ust_header_name(const struct st__gen *gen, char *buf, size_t len)
{
    snprintf(buf, len, "%s-ust.h", gen->opt->group);
}

/* Writes the fixed-width type of an integer argument. */
static void emit_int_type(struct st__out *out, const struct st__arg *arg)
{
    unsigned bits = (arg->size ? arg->size : 8) * 8;
    st__out_printf(out, "%sint%u_t", arg->is_signed ? "" : "u", bits);
}

static void emit_field(struct st__out *out, const struct st__arg *arg)
{
    switch (arg->kind) {
    case ST_ARG_STRING:
        st__out_printf(out, "        lttng_ust_field_string(%s, ", arg->name);
        st__out_param(out, arg);
        st__out_printf(out, ")\n");
        break;
    case ST_ARG_POINTER:
        st__out_printf(out, "        lttng_ust_field_integer_hex(uintptr_t, %s, (uintptr_t)", arg->name);
        st__out_param(out, arg);
        st__out_printf(out, ")\n");
        break;
    case ST_ARG_INTEGER:
        st__out_printf(out, "        lttng_ust_field_integer(");
        emit_int_type(out, arg);
        st__out_printf(out, ", %s, ", arg->name);
        st__out_param(out, arg);
        st__out_printf(out, ")\n");
        break;
    }
}

static void emit_event(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    st__out_printf(out, "\nLTTNG_UST_TRACEPOINT_EVENT(%s, %s,\n    LTTNG_UST_TP_ARGS(", st__gen_provider(gen), ev->name);
    for (unsigned i = 0; i < ev->nargs; i++) {
        st__out_printf(out, "%s%s, ", i ? ", " : "", ev->args[i].type);
        st__out_param(out, &ev->args[i]);
    }
    st__out_printf(out, "),\n    LTTNG_UST_TP_FIELDS(\n");
    for (unsigned i = 0; i < ev->nargs; i++)
        emit_field(out, &ev->args[i]);
    st__out_printf(out, "    )\n)\n");
}

/* True when some compiled-in event takes a bool: C needs <stdbool.h>. */
static bool uses_bool(const struct st__gen *gen)
{
    for (size_t i = 0; i < gen->events->count; i++) {
        const struct st__event_decl *ev = &gen->events->events[i];
        for (unsigned a = 0; a < ev->nargs && st__gen_event_compiled_in(gen, ev); a++)
            if (ev->args[a].names_bool)
                return true;
    }
    return false;
}

/* True when the provider has at least one tracepoint (LTTng needs one). */
static bool has_events(const struct st__gen *gen)
{
    for (size_t i = 0; i < gen->events->count; i++)
        if (st__gen_event_compiled_in(gen, &gen->events->events[i]))
            return true;
    return false;
}

void st__gen_emit_ust_h(struct st__out *out, const struct st__gen *gen)
{
    char name[512];
    st__gen_ust_header_name(gen, name, sizeof name);
    st__gen_emit_banner(out, gen);
    if (!has_events(gen)) {
        st__out_printf(out, "/* No compiled-in event: no tracepoint provider. */\n");
        return;
    }
    /* Each (re-)inclusion balanced: clang reports LTTng's empty variadic macro arguments under -Wpedantic. */
    st__out_printf(out, "#if defined(__clang__)\n#pragma clang diagnostic push\n"
                       "#pragma clang diagnostic ignored \"-Wgnu-zero-variadic-macro-arguments\"\n#endif\n");
    st__out_printf(out, "#undef LTTNG_UST_TRACEPOINT_PROVIDER\n#define LTTNG_UST_TRACEPOINT_PROVIDER %s\n",
                  st__gen_provider(gen));
    st__out_printf(out, "#undef LTTNG_UST_TRACEPOINT_INCLUDE\n#define LTTNG_UST_TRACEPOINT_INCLUDE \"");
    st__out_c_escaped(out, name);
    st__out_printf(out, "\"\n\n#if !defined(ST_UST_");
    st__out_upper(out, gen->opt->group);
    st__out_printf(out, "_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)\n#define ST_UST_");
    st__out_upper(out, gen->opt->group);
    st__out_printf(out, "_H\n\n");
    if (uses_bool(gen))
        st__out_printf(out, "#include <stdbool.h>\n");
    st__out_printf(out, "#include <stdint.h>\n#include <lttng/tracepoint.h>\n");
    for (size_t i = 0; i < gen->events->count; i++)
        if (st__gen_event_compiled_in(gen, &gen->events->events[i]))
            emit_event(out, gen, &gen->events->events[i]);
    st__out_printf(out, "\n#endif\n\n#include <lttng/tracepoint-event.h>\n");
    st__out_printf(out, "\n#if defined(__clang__)\n#pragma clang diagnostic pop\n#endif\n");
}

void st__gen_emit_ust_c(struct st__out *out, const struct st__gen *gen)
{
    char name[512];
    st__gen_ust_header_name(gen, name, sizeof name);
    st__gen_emit_banner(out, gen);
    if (!has_events(gen)) {
        /* ISO C forbids an empty translation unit. */
        st__out_printf(out, "/* No compiled-in event: no tracepoint provider. */\ntypedef int st__%s_no_tracepoints;\n",
                      gen->opt->group);
        return;
    }
    st__out_printf(out, "/* Creates the probes and defines the tracepoints: link with -llttng-ust -ldl. */\n");
    st__out_printf(out, "#define LTTNG_UST_TRACEPOINT_CREATE_PROBES\n#define LTTNG_UST_TRACEPOINT_DEFINE\n");
    st__out_printf(out, "#include \"");
    st__out_c_escaped(out, name);
    st__out_printf(out, "\"\n");
}
