/*
 * The generator's driver: parse every input, check the whole list, emit into
 * memory, then publish the text in one step (stdout, or a temporary file in
 * the output's directory renamed over the output). Any failure before the
 * rename leaves no output file behind and an existing one untouched.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "out_file.h"
#include "write_all.h"
#include "gen.h"

/* Every backend; --list-backends prints them in this order. */
static const struct st__gen_backend *const backends[] = {
    &st__gen_backend_nop,
    &st__gen_backend_log,
    &st__gen_backend_simple,
    &st__gen_backend_dtrace,
    &st__gen_backend_ust,
    &st__gen_backend_ftrace,
    &st__gen_backend_syslog,
    NULL,
};

/* Every output format; --help lists them in this order. */
static const struct st__gen_format_info formats[] = {
    {"h", ST_GEN_FORMAT_H, false, "the header with the trace_NAME() functions", st__gen_emit_h},
    {"c", ST_GEN_FORMAT_C, false, "the event definitions and their registration", st__gen_emit_c},
    {"d", ST_GEN_FORMAT_D, false, "DTrace provider file for the dtrace backend's probes", st__gen_emit_d},
    {"stp", ST_GEN_FORMAT_STP, true, "SystemTap tapset: probe PREFIX.NAME per event", st__gen_emit_stp},
    {"log-stp", ST_GEN_FORMAT_LOG_STP, true, "SystemTap: probe PREFIX.log.NAME prints each event",
     st__gen_emit_log_stp},
    {"simpletrace-stp", ST_GEN_FORMAT_SIMPLETRACE_STP, true,
     "SystemTap: probe PREFIX.simpletrace.NAME writes simpletrace v4", st__gen_emit_simpletrace_stp},
    {"ust-events-h", ST_GEN_FORMAT_UST_EVENTS_H, false, "LTTng-UST tracepoint provider header (GROUP-ust.h)",
     st__gen_emit_ust_h},
    {"ust-events-c", ST_GEN_FORMAT_UST_EVENTS_C, false, "LTTng-UST tracepoint provider source",
     st__gen_emit_ust_c},
    {NULL, ST_GEN_FORMAT_H, false, NULL, NULL},
};

const struct st__gen_format_info *st__gen_formats(void)
{
    return formats;
}

const struct st__gen_format_info *st__gen_format_find(const char *name)
{
    for (size_t i = 0; formats[i].name; i++)
        if (strcmp(formats[i].name, name) == 0)
            return &formats[i];
    return NULL;
}

const char *st__gen_provider(const struct st__gen *gen)
{
    return gen->opt->provider ? gen->opt->provider : gen->opt->group;
}

bool st__gen_has_self_gated(const struct st__gen *gen)
{
    for (unsigned i = 0; i < gen->opt->nbackends; i++)
        if (gen->opt->backends[i]->h_enabled)
            return true;
    return false;
}

const struct st__gen_backend *const *st__gen_backends(void)
{
    return backends;
}

const struct st__gen_backend *st__gen_backend_find(const char *name, size_t len)
{
    for (size_t i = 0; backends[i]; i++)
        if (strlen(backends[i]->name) == len && memcmp(backends[i]->name, name, len) == 0)
            return backends[i];
    return NULL;
}

bool st__gen_is_identifier(const char *s)
{
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

void st__gen_default_group(const char *path, char *buf, size_t len)
{
    if (len == 0)
        return;
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : (path ? path : "");
    const char *dot = strrchr(base, '.');
    size_t n = dot ? (size_t)(dot - base) : strlen(base);
    size_t o = 0;
    if (n && base[0] >= '0' && base[0] <= '9' && o + 1 < len)
        buf[o++] = '_'; /* identifiers cannot start with a digit */
    for (size_t i = 0; i < n && o + 1 < len; i++) {
        char c = base[i];
        bool ident = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        buf[o++] = ident ? c : '_';
    }
    buf[o] = '\0';
    if (o == 0)
        snprintf(buf, len, "root");
}

bool st__gen_event_compiled_in(const struct st__gen *gen, const struct st__event_decl *ev)
{
    return gen->any_records && !ev->disabled;
}

/* ---- publishing the output ------------------------------------------------ */

/* Writes the text to path, which shows the old file or the whole new one, never a part (out_file.h). 0 or -errno. */
static int write_file_atomic(const char *path, const struct st__out *out)
{
    struct st__out_file f;
    int rc = st__out_file_open(&f, path);

    if (rc != 0)
        return rc;
    rc = st__write_all(f.fd, out->text.data ? out->text.data : (const uint8_t *)"", out->text.len);
    if (rc != 0) {
        st__out_file_discard(&f);
        return rc;
    }
    return st__out_file_commit(&f);
}

/* Publishes the generated text; 0 or -errno with errbuf naming the output. */
static int publish(const struct st__gen_options *opt, const struct st__out *out, char *errbuf, size_t errlen)
{
    int rc;
    if (opt->output) {
        rc = write_file_atomic(opt->output, out);
    } else {
        rc = st__write_all(STDOUT_FILENO, out->text.data ? out->text.data : (const uint8_t *)"", out->text.len);
    }
    if (rc)
        snprintf(errbuf, errlen, "%s: %s", opt->output ? opt->output : "<stdout>", strerror(-rc));
    return rc;
}

/* ---- names the generated code defines -------------------------------------- */

/* Case-insensitive order of event names, declaration order among equals. */
static int cmp_upper(const void *a, const void *b)
{
    const struct st__event_decl *x = *(const struct st__event_decl *const *)a;
    const struct st__event_decl *y = *(const struct st__event_decl *const *)b;
    int rc = strcasecmp(x->name, y->name);
    if (rc)
        return rc;
    return x < y ? -1 : 1; /* all point into one array */
}

/* Reports that ev's generated names clash with those of other; returns -EINVAL. */
static int clash(const struct st__event_decl *ev, const struct st__event_decl *other, const char *what, char *errbuf,
                 size_t errlen)
{
    snprintf(errbuf, errlen, "%s:%u: Event '%s' clashes with event '%s' (%s:%u): %s", ev->file, ev->line, ev->name,
             other->name, other->file, other->line, what);
    return -EINVAL;
}

/* Two events whose names differ only in case would both define TRACE_NAME_ENABLED. */
static int check_case_clashes(const struct st__event_list *list, char *errbuf, size_t errlen)
{
    if (list->count < 2)
        return 0;
    const struct st__event_decl **order = malloc(list->count * sizeof *order);
    if (!order) {
        snprintf(errbuf, errlen, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < list->count; i++)
        order[i] = &list->events[i];
    qsort(order, list->count, sizeof *order, cmp_upper);
    int rc = 0;
    for (size_t i = 1; i < list->count && rc == 0; i++)
        if (strcasecmp(order[i - 1]->name, order[i]->name) == 0)
            rc = clash(order[i], order[i - 1], "both would define the same TRACE_<NAME>_ENABLED macro", errbuf,
                       errlen);
    free(order);
    return rc;
}

/* An event NAME_enabled would define trace_NAME_enabled(), which event NAME also defines. */
static int check_enabled_clashes(const struct st__event_list *list, char *errbuf, size_t errlen)
{
    static const char suffix[] = "_enabled";
    const size_t n = sizeof suffix - 1;
    for (size_t i = 0; i < list->count; i++) {
        const struct st__event_decl *ev = &list->events[i];
        size_t len = strlen(ev->name);
        if (len <= n || strcmp(ev->name + len - n, suffix) != 0)
            continue;
        const struct st__event_decl *other = st__events_find(list, ev->name, len - n);
        if (other)
            return clash(ev, other, "both would define the same trace_<NAME>_enabled() function", errbuf, errlen);
    }
    return 0;
}

/* ---- warnings ------------------------------------------------------------------ */

/* Fields of a `simpletrace print` line written as NAME=VALUE: "ev 1.000 pid=14220 a=0x1". */
static const char *const reader_fields[] = {"pid"};

/* The reader field called name, or NULL. */
static const char *reader_field(const char *name)
{
    for (size_t i = 0; i < sizeof reader_fields / sizeof reader_fields[0]; i++)
        if (strcmp(name, reader_fields[i]) == 0)
            return reader_fields[i];
    return NULL;
}

/*
 * An argument named like a reader field prints next to it: "pid=14220
 * pid=0x378c", the record's pid and then the argument. Only a warning:
 * the text must stay simpletrace.py's, which prints it so, and QEMU's own
 * catalogue has such arguments (qio_channel_command_*(int pid)); the JSON
 * output keeps the arguments apart under "args".
 */
static void warn_reader_fields(const struct st__gen_options *opt, const struct st__event_list *list)
{
    FILE *out = opt->warnings ? opt->warnings : stderr;
    for (size_t i = 0; i < list->count; i++) {
        const struct st__event_decl *ev = &list->events[i];
        for (unsigned a = 0; a < ev->nargs; a++) {
            const char *f = reader_field(ev->args[a].name);
            if (f)
                fprintf(out,
                        "simpletrace gen: %s:%u: warning: argument '%s' of event '%s' prints as a second %s= field in "
                        "`simpletrace print`, after the record's own (%s=14220 %s=0x378c); rename it to tell "
                        "them apart\n",
                        ev->file, ev->line, f, ev->name, f, f, f);
        }
    }
}

/* ---- the run ----------------------------------------------------------------- */

/* Parses every input and checks the whole list and the names it would generate; 0 or the error with errbuf filled. */
static int parse_inputs(struct st__event_list *list, char *const *inputs, size_t ninputs, char *errbuf,
                        size_t errlen)
{
    struct st__events_error err;
    int rc = 0;
    for (size_t i = 0; i < ninputs && rc == 0; i++)
        rc = st__events_parse_file(list, inputs[i], &err);
    if (rc == 0)
        rc = st__events_check(list, &err);
    if (rc) {
        st__events_error_format(&err, errbuf, errlen);
        return rc;
    }
    rc = st__events_build_index(list);
    if (rc) {
        snprintf(errbuf, errlen, "out of memory");
        return rc;
    }
    rc = check_case_clashes(list, errbuf, errlen);
    if (rc == 0)
        rc = check_enabled_clashes(list, errbuf, errlen);
    return rc;
}

int st__gen_run(const struct st__gen_options *opt, char *const *inputs, size_t ninputs, char *errbuf,
               size_t errlen)
{
    struct st__event_list list;
    struct st__out out;
    st__events_init(&list);
    st__out_init(&out);
    int rc = parse_inputs(&list, inputs, ninputs, errbuf, errlen);
    if (rc)
        goto done;
    if (opt->format == ST_GEN_FORMAT_H)
        warn_reader_fields(opt, &list);
    struct st__gen gen = {opt, &list, false};
    for (unsigned i = 0; i < opt->nbackends; i++)
        gen.any_records |= opt->backends[i]->records;
    for (size_t i = 0; formats[i].name; i++)
        if (formats[i].format == opt->format)
            formats[i].emit(&out, &gen);
    if (out.text.failed) {
        rc = -ENOMEM;
        snprintf(errbuf, errlen, "out of memory");
        goto done;
    }
    rc = publish(opt, &out, errbuf, errlen);
done:
    st__out_free(&out);
    st__events_free(&list);
    return rc;
}
