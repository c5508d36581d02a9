/*
 * The simple backend: each enabled event becomes one binary record in the
 * calling thread's buffer (a v4 event record, src/format/trace_format.h;
 * the runtime writes it out).
 *
 *   uint32_t st__len_s = st__strlen(s);                 per string argument
 *   struct st__record st__rec;
 *   if (st__simple_begin(&st__rec, &st__event_NAME, PAYLOAD) == 0) {
 *       st__put_u64(&st__rec, (uint64_t)x);             integers, sign-extended
 *       st__put_u64(&st__rec, (uint64_t)(uintptr_t)p);  pointers
 *       st__put_str(&st__rec, s, st__len_s);            strings
 *       st__simple_commit(&st__rec);
 *   }
 *
 * PAYLOAD is 8 per integer or pointer plus 4 + length per string; string
 * lengths are computed once, before reserving, so the size is exact.
 */
#include "gen.h"

/* Writes the payload size expression: the constant part, then each string's length. */
static void emit_payload(struct st__out *out, const struct st__event_decl *ev)
{
    unsigned fixed = 0;
    for (unsigned i = 0; i < ev->nargs; i++)
        fixed += ev->args[i].kind == ST_ARG_STRING ? 4 : 8;
    st__out_printf(out, "%u", fixed);
    for (unsigned i = 0; i < ev->nargs; i++)
        if (ev->args[i].kind == ST_ARG_STRING)
            st__out_printf(out, " + (size_t)st__len_%s", ev->args[i].name);
}

/* Writes the store of one argument. */
static void emit_put(struct st__out *out, const struct st__arg *arg)
{
    switch (arg->kind) {
    case ST_ARG_STRING:
        st__out_printf(out, "            st__put_str(&st__rec, ");
        st__out_param(out, arg);
        st__out_printf(out, ", st__len_%s);\n", arg->name);
        break;
    case ST_ARG_POINTER:
        st__out_printf(out, "            st__put_u64(&st__rec, (uint64_t)(uintptr_t)");
        st__out_param(out, arg);
        st__out_printf(out, ");\n");
        break;
    case ST_ARG_INTEGER:
        st__out_printf(out, "            st__put_u64(&st__rec, (uint64_t)");
        st__out_param(out, arg);
        st__out_printf(out, ");\n");
        break;
    }
}

static void simple_h_event(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    (void)gen;
    for (unsigned i = 0; i < ev->nargs; i++) {
        if (ev->args[i].kind != ST_ARG_STRING)
            continue;
        st__out_printf(out, "        uint32_t st__len_%s = st__strlen(", ev->args[i].name);
        st__out_param(out, &ev->args[i]);
        st__out_printf(out, ");\n");
    }
    st__out_printf(out, "        struct st__record st__rec;\n");
    st__out_printf(out, "        if (st__simple_begin(&st__rec, &st__event_%s, ", ev->name);
    emit_payload(out, ev);
    st__out_printf(out, ") == 0) {\n");
    for (unsigned i = 0; i < ev->nargs; i++)
        emit_put(out, &ev->args[i]);
    st__out_printf(out, "            st__simple_commit(&st__rec);\n");
    st__out_printf(out, "        }\n");
}

const struct st__gen_backend st__gen_backend_simple = {
    .name = "simple",
    .summary = "binary records in per-thread buffers, written to a QEMU simpletrace v4 file",
    .records = true,
    .h_event = simple_h_event,
};
