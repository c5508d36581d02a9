/*
 * The code generator behind `simpletrace gen`.
 *
 *   trace-events files --parse--> st__event_list --emit_h.c / emit_c.c--> text
 *                                                     |
 *                                    one struct st__gen_backend per backend
 *                                    (backend_simple.c, backend_log.c, ...)
 *
 * The emitters own the layout every output shares (banner, includes, the
 * enabled guard, the event definitions and the group); a backend only adds
 * its pieces through the hooks of struct st__gen_backend. A new backend is one
 * file defining such a struct plus one line in the table in gen.c.
 *
 * Output is built in memory and written only when complete: to stdout, or
 * to a temporary file in the output's directory renamed over the output, so
 * a failed run never leaves a partial file. Generated text contains no
 * dates and no paths other than the ones given on the command line.
 */
#ifndef ST_GEN_H
#define ST_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "events.h"
#include "growbuf.h"

#define ST_GEN_MAX_BACKENDS 8u

enum st__gen_format {
    ST_GEN_FORMAT_H,               /* the header with trace_NAME() functions */
    ST_GEN_FORMAT_C,               /* the event definitions and the group registration */
    ST_GEN_FORMAT_D,               /* DTrace provider file (.d) for the dtrace backend's probes */
    ST_GEN_FORMAT_STP,             /* SystemTap tapset: one probe alias per event */
    ST_GEN_FORMAT_LOG_STP,         /* SystemTap: print each event as a text line */
    ST_GEN_FORMAT_SIMPLETRACE_STP, /* SystemTap: write each event as simpletrace v4 records */
    ST_GEN_FORMAT_UST_EVENTS_H,    /* LTTng-UST tracepoint provider header */
    ST_GEN_FORMAT_UST_EVENTS_C,    /* LTTng-UST tracepoint provider source */
};

struct st__out;
struct st__gen;

/*
 * One backend. Every hook may be NULL. Hooks write through st__out_printf();
 * memory errors are remembered in the st__out and reported by the driver.
 */
struct st__gen_backend {
    const char *name;    /* as given in --backends */
    const char *summary; /* one line for --list-backends */
    bool records;        /* false (nop): selecting only such backends compiles every event out */
    /* Header, after the common includes: the backend's own includes or declarations. */
    void (*h_prologue)(struct st__out *out, const struct st__gen *gen);
    /* Header, at file scope before trace_NAME_enabled(), for events compiled in: the backend's declarations. */
    void (*h_event_decl)(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev);
    /* Header, inside trace_NAME() under `if (trace_NAME_enabled())`, for events compiled in. */
    void (*h_event)(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev);
    /* Header, inside trace_NAME() before the guard: self-gated backends (dtrace, ust) test their own switch. */
    void (*h_event_unguarded)(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev);
    /* Header, inside trace_NAME_enabled(): the self-gated backend's switch, an expression (no "||"). */
    void (*h_enabled)(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev);
    /* Source, after the common includes. */
    void (*c_prologue)(struct st__out *out, const struct st__gen *gen);
    /* Source, after each event's definition (compiled in or not: check st__gen_event_compiled_in()). */
    void (*c_event)(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev);
    /* Source, at the end. */
    void (*c_epilogue)(struct st__out *out, const struct st__gen *gen);
};

/* What to generate; filled by the command line. */
struct st__gen_options {
    enum st__gen_format format;
    const struct st__gen_backend *backends[ST_GEN_MAX_BACKENDS]; /* in --backends order */
    unsigned nbackends;
    const char *group;  /* C identifier naming the group */
    const char *output; /* output path as given (also used in #line); NULL: stdout */
    const char *provider;     /* dtrace/ust provider: a C identifier; NULL: the group name */
    const char *binary;       /* stp formats: the traced binary's path as the probes name it */
    const char *probe_prefix; /* stp formats: probe alias prefix; NULL: the provider name */
    FILE *warnings;           /* where warnings go ("FILE:LINE: warning: ..."); NULL: stderr */
};

/* A generation run: the options and the parsed events, for the emitters. */
struct st__gen {
    const struct st__gen_options *opt;
    const struct st__event_list *events;
    bool any_records; /* some selected backend records events (not only nop) */
};

/* ---- the driver (gen.c) ------------------------------------------------- */

/* One output format: its --format name and its emitter. */
struct st__gen_format_info {
    const char *name;          /* as given in --format */
    enum st__gen_format format;
    bool needs_binary;         /* the SystemTap formats name the traced binary */
    const char *summary;       /* one line for --help */
    void (*emit)(struct st__out *out, const struct st__gen *gen);
};

/* The format called name, or NULL. */
const struct st__gen_format_info *st__gen_format_find(const char *name);

/* The known formats, terminated by an entry with a NULL name. */
const struct st__gen_format_info *st__gen_formats(void);

/* The provider name for dtrace and ust: --provider, else the group. */
const char *st__gen_provider(const struct st__gen *gen);

/* True when a selected backend has a self-gated switch (h_enabled). */
bool st__gen_has_self_gated(const struct st__gen *gen);

/* The backend called name, or NULL. */
const struct st__gen_backend *st__gen_backend_find(const char *name, size_t len);

/* The known backends, NULL-terminated, in a stable order. */
const struct st__gen_backend *const *st__gen_backends(void);

/*
 * Parses the ninputs trace-events files and writes the output opt asks for.
 * Returns 0; -EINVAL for bad input (errbuf holds "FILE:LINE: message");
 * -errno for I/O (errbuf names the file). On error no output is written.
 * With --format=h, what is legal but likely unwanted (an argument named
 * like a field `simpletrace print` shows itself) is written to
 * opt->warnings, once per build since every program generates one header.
 */
int st__gen_run(const struct st__gen_options *opt, char *const *inputs, size_t ninputs, char *errbuf,
               size_t errlen);

/* Writes into buf a C identifier made from the base name of path without its extension ("root" if empty). */
void st__gen_default_group(const char *path, char *buf, size_t len);

/* True when s is a C identifier. */
bool st__gen_is_identifier(const char *s);

/* True when the event is compiled in: not `disable`d and a recording backend is selected. */
bool st__gen_event_compiled_in(const struct st__gen *gen, const struct st__event_decl *ev);

/* ---- output buffer (out.c) ----------------------------------------------- */

/* Text being generated, in memory; counts lines for #line directives. */
struct st__out {
    struct st__growbuf text; /* the text; text.failed: an allocation failed, it is incomplete */
    unsigned line;           /* 1-based number of the line being written */
};

/* Initialises an empty buffer. */
void st__out_init(struct st__out *out);

/* Frees the text. */
void st__out_free(struct st__out *out);

/* Appends printf-style text. Sets out->failed when out of memory. */
void st__out_printf(struct st__out *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends s as the body of a C string literal (escaped, without quotes). */
void st__out_c_escaped(struct st__out *out, const char *s);

/* Appends the name generated code uses for arg (the declared one, renamed if a C++ keyword). */
void st__out_param(struct st__out *out, const struct st__arg *arg);

/* Appends "type name" of arg as declared (normalised type). */
void st__out_arg_decl(struct st__out *out, const struct st__arg *arg, bool cxx_safe);

/* Appends name in upper case. */
void st__out_upper(struct st__out *out, const char *name);

/* ---- emitters (emit_h.c, emit_c.c) ---------------------------------------- */

/* Writes the header. */
void st__gen_emit_h(struct st__out *out, const struct st__gen *gen);

/* Writes the source file. */
void st__gen_emit_c(struct st__out *out, const struct st__gen *gen);

/* Shared by both: the "Generated by" banner. */
void st__gen_emit_banner(struct st__out *out, const struct st__gen *gen);

/* Writes the .d provider file (emit_d.c). */
void st__gen_emit_d(struct st__out *out, const struct st__gen *gen);

/* Write the SystemTap scripts (emit_stp.c). */
void st__gen_emit_stp(struct st__out *out, const struct st__gen *gen);
void st__gen_emit_log_stp(struct st__out *out, const struct st__gen *gen);
void st__gen_emit_simpletrace_stp(struct st__out *out, const struct st__gen *gen);

/* Write the LTTng-UST tracepoint provider header and source (emit_ust.c). */
void st__gen_emit_ust_h(struct st__out *out, const struct st__gen *gen);
void st__gen_emit_ust_c(struct st__out *out, const struct st__gen *gen);

/* The file name the ust backend's header includes for the provider: "GROUP-ust.h". */
void st__gen_ust_header_name(const struct st__gen *gen, char *buf, size_t len);

/*
 * Shared by the text backends (log, ftrace, syslog): writes
 * `fn("NAME " FMT nl, args);` at indent, wrapped in #line directives that
 * point at the trace-events line (when writing to a file), then casts the
 * arguments to void when the event has no format. guard_null passes
 * (s ? s : "(null)") for a string printed with %s.
 */
void st__gen_emit_printf_call(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev,
                             const char *fn, const char *nl, bool guard_null, unsigned indent);

/* ---- formats (format_conv.c) -------------------------------------- */

/*
 * Appends a validated format with its tokens (literals, PRI macros) separated
 * by one space: C++11 reads "x"PRIu64 as a user-defined literal suffix.
 */
void st__out_format(struct st__out *out, const char *fmt);

/* ---- backends ------------------------------------------------------------ */

extern const struct st__gen_backend st__gen_backend_nop;
extern const struct st__gen_backend st__gen_backend_log;
extern const struct st__gen_backend st__gen_backend_simple;
extern const struct st__gen_backend st__gen_backend_dtrace;
extern const struct st__gen_backend st__gen_backend_ust;
extern const struct st__gen_backend st__gen_backend_ftrace;
extern const struct st__gen_backend st__gen_backend_syslog;

#endif /* ST_GEN_H */
