/*
 * The DTrace provider file (--format=d) describing the dtrace backend's
 * probes, for DTrace users and tools that read .d files:
 *
 *   provider PROVIDER {
 *       probe NAME(TYPE ARG, ...);
 *   };
 *
 * Only compiled-in events have probes. bool becomes uint8_t (D has no
 * bool; the probe stores one unsigned byte); argument names that are D
 * keywords get a trailing underscore. The generated source file already
 * defines the semaphores, so the output of `dtrace -G` on this file must
 * not be linked with it; `dtrace -h` is fine for listing the probes.
 */
#include <string.h>

#include "gen.h"

/* Words of D that cannot name a probe argument. */
static const char *const d_keywords[] = {
    "auto",     "break",   "case",     "char",     "const",   "continue", "counter", "default", "do",
    "double",   "else",    "enum",     "extern",   "float",   "for",      "goto",    "if",      "import",
    "inline",   "int",     "long",     "offsetof", "probe",   "provider", "register", "restrict", "return",
    "self",     "short",   "signed",   "sizeof",   "static",  "string",   "stringof", "struct",  "switch",
    "this",     "translator", "typedef", "union",  "unsigned", "userland", "void",   "volatile", "while",
    "xlate",
};

static bool is_d_keyword(const char *s)
{
    for (size_t i = 0; i < sizeof d_keywords / sizeof d_keywords[0]; i++)
        if (strcmp(s, d_keywords[i]) == 0)
            return true;
    return false;
}

/* Writes the argument's type in D: the declared one, bool as uint8_t. */
static void emit_d_type(struct st__out *out, const struct st__arg *arg)
{
    if (arg->enc == ST__ENC_BOOL)
        st__out_printf(out, "uint8_t ");
    else
        st__out_printf(out, "%s%s", arg->type, arg->type[strlen(arg->type) - 1] == '*' ? "" : " ");
}

void st__gen_emit_d(struct st__out *out, const struct st__gen *gen)
{
    st__gen_emit_banner(out, gen);
    st__out_printf(out, "\nprovider %s {\n", st__gen_provider(gen));
    for (size_t i = 0; i < gen->events->count; i++) {
        const struct st__event_decl *ev = &gen->events->events[i];
        if (!st__gen_event_compiled_in(gen, ev))
            continue;
        st__out_printf(out, "    probe %s(", ev->name);
        for (unsigned a = 0; a < ev->nargs; a++) {
            st__out_printf(out, "%s", a ? ", " : "");
            emit_d_type(out, &ev->args[a]);
            st__out_printf(out, "%s%s", ev->args[a].name, is_d_keyword(ev->args[a].name) ? "_" : "");
        }
        st__out_printf(out, ");\n");
    }
    st__out_printf(out, "};\n");
}
