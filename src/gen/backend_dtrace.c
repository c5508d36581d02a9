/*
 * The dtrace backend: one USDT probe per event through <sys/sdt.h>, in the
 * form with semaphores, so a probe costs one load and one branch while no
 * tool (SystemTap, bpftrace, gdb, perf) is attached, and its arguments are
 * not even computed:
 *
 *   header:  extern ST__HIDDEN unsigned short PROVIDER_NAME_semaphore;
 *            trace_NAME(): if (ST__UNLIKELY(__atomic_load_n(&PROVIDER_NAME_semaphore, relaxed) != 0))
 *                              STAP_PROBEn(PROVIDER, NAME, args...);
 *   source:  ST__HIDDEN unsigned short PROVIDER_NAME_semaphore
 *                __attribute__((section(".probes"))) = 0;
 *
 * sdt.h names the semaphore PROVIDER_NAME_semaphore and stores its address
 * in the probe's note; a tool increments it while attached. We define the
 * semaphores ourselves (in .probes, where `dtrace -G` would put them), so
 * no dtrace tool runs at build time. The provider is --provider, else the
 * group name. The semaphore is read with a relaxed atomic load (a tool
 * changes it from outside the program, so the compiler must not cache it)
 * and declared as `dtrace -h` declares it. The probe fires whatever simpletrace's own switch says: it
 * is self-gated (gen.h), and trace_NAME_enabled() is true while attached.
 */
#include "gen.h"

/* Writes PROVIDER_NAME_semaphore. */
static void emit_semaphore(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    st__out_printf(out, "%s_%s_semaphore", st__gen_provider(gen), ev->name);
}

/*
 * sdt.h puts the semaphore's address in the notes only when
 * _SDT_HAS_SEMAPHORES is defined when it is first included; a program that
 * included it earlier without it would get probes no tool can switch on.
 */
static void dtrace_h_prologue(struct st__out *out, const struct st__gen *gen)
{
    (void)gen;
    st__out_printf(out, "#if defined(_SYS_SDT_H) && !defined(_SDT_HAS_SEMAPHORES)\n"
                       "#error \"include this header before <sys/sdt.h>, or define _SDT_HAS_SEMAPHORES\"\n"
                       "#endif\n"
                       "#ifndef _SDT_HAS_SEMAPHORES\n"
                       "#define _SDT_HAS_SEMAPHORES 1\n"
                       "#endif\n"
                       "#include <sys/sdt.h>\n");
}

static void dtrace_h_event_decl(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    st__out_printf(out, "extern ST__HIDDEN unsigned short ");
    emit_semaphore(out, gen, ev);
    st__out_printf(out, ";\n");
}

static void dtrace_h_enabled(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    st__out_printf(out, "ST__UNLIKELY(__atomic_load_n(&");
    emit_semaphore(out, gen, ev);
    st__out_printf(out, ", __ATOMIC_RELAXED) != 0)");
}

static void dtrace_h_event_unguarded(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    st__out_printf(out, "    if (");
    dtrace_h_enabled(out, gen, ev);
    st__out_printf(out, ") {\n        ST__SYSMACRO_BEGIN\n");
    if (ev->nargs == 0)
        st__out_printf(out, "        STAP_PROBE(%s, %s", st__gen_provider(gen), ev->name);
    else
        st__out_printf(out, "        STAP_PROBE%u(%s, %s", ev->nargs, st__gen_provider(gen), ev->name);
    for (unsigned i = 0; i < ev->nargs; i++) {
        st__out_printf(out, ", ");
        st__out_param(out, &ev->args[i]);
    }
    st__out_printf(out, ");\n        ST__SYSMACRO_END\n    }\n");
}

/* The semaphore a tool increments while attached; .probes as `dtrace -G` does. */
static void dtrace_c_event(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    if (!st__gen_event_compiled_in(gen, ev))
        return;
    dtrace_h_event_decl(out, gen, ev);
    st__out_printf(out, "ST__HIDDEN unsigned short ");
    emit_semaphore(out, gen, ev);
    st__out_printf(out, " __attribute__((section(\".probes\"))) = 0;\n");
}

const struct st__gen_backend st__gen_backend_dtrace = {
    .name = "dtrace",
    .summary = "USDT probes (<sys/sdt.h>, with semaphores) for SystemTap, bpftrace, perf, gdb",
    .records = true,
    .h_prologue = dtrace_h_prologue,
    .h_event_decl = dtrace_h_event_decl,
    .h_event_unguarded = dtrace_h_event_unguarded,
    .h_enabled = dtrace_h_enabled,
    .c_event = dtrace_c_event,
};
