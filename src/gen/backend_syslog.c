/*
 * The syslog backend: each enabled event becomes one syslog message
 * "NAME FORMAT" at LOG_INFO (runtime: backend_syslog.c, which opens the log
 * once with openlog(NULL, LOG_PID, LOG_DAEMON)):
 *
 *   st__syslog("NAME " FMT, args...);
 *
 * The parser rejects %m, which syslog() would expand.
 */
#include "gen.h"

/* The formats paste PRI macros into the calls. */
static void syslog_h_prologue(struct st__out *out, const struct st__gen *gen)
{
    (void)gen;
    st__out_printf(out, "#include <inttypes.h>\n");
}

static void syslog_h_event(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    st__gen_emit_printf_call(out, gen, ev, "st__syslog", "", true, 8);
}

const struct st__gen_backend st__gen_backend_syslog = {
    .name = "syslog",
    .summary = "send \"NAME FORMAT\" to syslog at LOG_INFO",
    .records = true,
    .h_prologue = syslog_h_prologue,
    .h_event = syslog_h_event,
};
