/*
 * SystemTap scripts over the dtrace backend's probes (tracetool's three
 * formats, written from the facts of its output, not its code):
 *
 *   --format=stp               probe PREFIX.NAME = process("BIN").provider("P").mark("NAME")
 *                              { ARG = $argN; ... }            one alias per event
 *   --format=log-stp           probe PREFIX.log.NAME = PREFIX.NAME ?
 *                              { printf("PID@NS NAME FMT\n", ...) }
 *   --format=simpletrace-stp   probe PREFIX.simpletrace.NAME = PREFIX.NAME ?
 *                              { one simpletrace v4 event record }
 *
 * The three are tapsets: put them in a directory, then e.g.
 *   stap -I DIR -e 'probe PREFIX.simpletrace.* {}' -o app.trace
 * simpletrace-stp writes the v4 header from a `begin` probe and each
 * event's mapping record when the event first fires (IDs in order of first
 * use), so `simpletrace print trace-events app.trace` reads the output as
 * it is, without --no-header. Its pid field is the thread id, as in files
 * the runtime writes; timestamps are gettimeofday_ns().
 *
 * C formats become SystemTap formats: PRI macros and length modifiers go
 * (SystemTap's integers are all 64-bit), the ' flag goes, %i becomes %d,
 * and a %s argument is read from the process with user_string_n(),
 * "(null)" for NULL. Argument names that are SystemTap keywords get a
 * trailing underscore.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <simpletrace/version.h>

#include "gen.h"
#include "meta_format.h"
#include "trace_format.h"

#define STAP_STRLEN 512 /* bytes read for a string argument, as the simple backend's limit */
#define STAP_DECL_MAX 500 /* longest declaration written: SystemTap's strings hold 512 bytes by default */

static const char *const stap_keywords[] = {
    "break", "catch", "continue", "delete", "else", "for", "foreach", "function", "global", "if",
    "in", "limit", "long", "next", "private", "probe", "return", "string", "try", "while",
};

/* Appends the SystemTap variable name of arg. */
static void emit_var(struct st__out *out, const struct st__arg *arg)
{
    bool kw = false;
    for (size_t i = 0; i < sizeof stap_keywords / sizeof stap_keywords[0]; i++)
        kw |= strcmp(arg->name, stap_keywords[i]) == 0;
    st__out_printf(out, "%s%s", arg->name, kw ? "_" : "");
}

/* Appends bytes as the body of a SystemTap string literal. */
static void emit_stap_bytes(struct st__out *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            st__out_printf(out, "\\%c", c);
        else if (c == '\n')
            st__out_printf(out, "\\n");
        else if (c == '\t')
            st__out_printf(out, "\\t");
        else if (c < 0x20 || c == 0x7f)
            st__out_printf(out, "\\%03o", c);
        else
            st__out_printf(out, "%c", c);
    }
}

static const char *prefix(const struct st__gen *gen)
{
    return gen->opt->probe_prefix ? gen->opt->probe_prefix : st__gen_provider(gen);
}

/* ---- C format -> SystemTap format ------------------------------------------ */

/* The format as the bytes it means, each PRI macro replaced by its conversion letter. */
struct flat_fmt {
    char text[4096];
    size_t len;
};

/* Decodes one escape after a backslash at *p; returns the byte and advances *p. */
static char decode_escape(const char **p)
{
    const char *s = *p;
    static const char from[] = "abfnrtv", to[] = "\a\b\f\n\r\t\v";
    const char *k = strchr(from, *s);
    if (*s && k) {
        *p = s + 1;
        return to[k - from];
    }
    if (*s >= '0' && *s <= '7') {
        unsigned v = 0;
        for (int i = 0; i < 3 && *s >= '0' && *s <= '7'; i++)
            v = v * 8 + (unsigned)(*s++ - '0');
        *p = s;
        return (char)v;
    }
    if (*s == 'x') {
        unsigned v = 0;
        for (s++; (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F'); s++)
            v = v * 16 + (unsigned)(*s <= '9' ? *s - '0' : (*s | 0x20) - 'a' + 10);
        *p = s;
        return (char)v;
    }
    *p = *s ? s + 1 : s;
    return *s; /* \\ \" \' \? */
}

static void flat_put(struct flat_fmt *f, char c)
{
    if (f->len + 1 < sizeof f->text)
        f->text[f->len++] = c;
}

/* Flattens a validated format: string literals and PRI macros. */
static void flatten(const char *fmt, struct flat_fmt *f)
{
    f->len = 0;
    for (const char *p = fmt; *p;) {
        if (*p == '"') {
            for (p++; *p && *p != '"';) {
                if (*p == '\\') {
                    p++;
                    flat_put(f, decode_escape(&p));
                } else {
                    flat_put(f, *p++);
                }
            }
            if (*p)
                p++;
        } else if (strncmp(p, "PRI", 3) == 0 && p[3]) {
            flat_put(f, p[3]);
            for (p += 4; (*p >= '0' && *p <= '9') || (*p >= 'A' && *p <= 'Z'); p++) {
            }
        } else {
            p++;
        }
    }
    f->text[f->len] = '\0';
}

/* A SystemTap format (which argument each conversion prints: the arguments' conv). */
struct stap_fmt {
    struct st__out text; /* literal body */
};

/* Converts one conversion spec at f->text[*i] (just after '%'). */
static void convert_spec(const struct flat_fmt *f, size_t *i, struct stap_fmt *sf)
{
    char spec[64];
    size_t n = 0;
    spec[n++] = '%';
    for (; *i < f->len; (*i)++) {
        char c = f->text[*i];
        if (c == '\'' || strchr("hlLqjzt", c))
            continue; /* no grouping, no length: all integers are 64-bit */
        if (!strchr("-+ #0123456789.*", c)) {
            spec[n++] = c == 'i' ? 'd' : c;
            (*i)++;
            break;
        }
        if (n + 2 < sizeof spec)
            spec[n++] = c;
    }
    st__out_printf(&sf->text, "%.*s", (int)n, spec);
}

static void stap_format(const char *fmt, struct stap_fmt *sf)
{
    struct flat_fmt f;
    flatten(fmt ? fmt : "", &f);
    st__out_init(&sf->text);
    size_t i = 0, start = 0;
    while (i < f.len) {
        if (f.text[i] != '%') {
            i++;
            continue;
        }
        emit_stap_bytes(&sf->text, f.text + start, i - start);
        i++;
        convert_spec(&f, &i, sf);
        start = i;
    }
    emit_stap_bytes(&sf->text, f.text + start, f.len - start);
}

/* ---- the three scripts ------------------------------------------------------ */

static void emit_binary(struct st__out *out, const struct st__gen *gen)
{
    const char *b = gen->opt->binary ? gen->opt->binary : "";
    emit_stap_bytes(out, b, strlen(b));
}

void st__gen_emit_stp(struct st__out *out, const struct st__gen *gen)
{
    st__gen_emit_banner(out, gen);
    for (size_t i = 0; i < gen->events->count; i++) {
        const struct st__event_decl *ev = &gen->events->events[i];
        if (!st__gen_event_compiled_in(gen, ev))
            continue;
        st__out_printf(out, "\nprobe %s.%s = process(\"", prefix(gen), ev->name);
        emit_binary(out, gen);
        st__out_printf(out, "\").provider(\"%s\").mark(\"%s\")\n{\n", st__gen_provider(gen), ev->name);
        for (unsigned a = 0; a < ev->nargs; a++) {
            st__out_printf(out, "    ");
            emit_var(out, &ev->args[a]);
            st__out_printf(out, " = $arg%u;\n", a + 1);
        }
        st__out_printf(out, "}\n");
    }
}

/* Appends the value printed for argument a under conversion c. */
static void emit_log_value(struct st__out *out, const struct st__arg *arg, char c)
{
    if (c != 's') {
        emit_var(out, arg);
        return;
    }
    st__out_printf(out, "(");
    emit_var(out, arg);
    st__out_printf(out, " ? user_string_n(");
    emit_var(out, arg);
    st__out_printf(out, ", %d) : \"(null)\")", STAP_STRLEN);
}

void st__gen_emit_log_stp(struct st__out *out, const struct st__gen *gen)
{
    st__gen_emit_banner(out, gen);
    for (size_t i = 0; i < gen->events->count; i++) {
        const struct st__event_decl *ev = &gen->events->events[i];
        if (!st__gen_event_compiled_in(gen, ev))
            continue;
        struct stap_fmt sf;
        stap_format(ev->fmt, &sf);
        st__out_printf(out, "\nprobe %s.log.%s = %s.%s ?\n{\n", prefix(gen), ev->name, prefix(gen), ev->name);
        st__out_printf(out, "    printf(\"%%d@%%d %s%s%.*s\\n\", pid(), gettimeofday_ns()", ev->name,
                      ev->fmt ? " " : "", (int)sf.text.text.len,
                      sf.text.text.data ? (const char *)sf.text.text.data : "");
        for (unsigned a = 0; a < ev->nargs && ev->fmt; a++) {
            st__out_printf(out, ", ");
            emit_log_value(out, &ev->args[a], ev->args[a].conv);
        }
        st__out_printf(out, ")\n}\n");
        if (sf.text.text.failed)
            out->text.failed = true;
        st__out_free(&sf.text);
    }
}

/* The record's length field: 24 + 8 per integer or pointer + 4 + length per string. */
static void emit_record_length(struct st__out *out, const struct st__event_decl *ev)
{
    unsigned fixed = 24;
    for (unsigned a = 0; a < ev->nargs; a++)
        fixed += ev->args[a].kind == ST_ARG_STRING ? 4 : 8;
    st__out_printf(out, "%u", fixed);
    for (unsigned a = 0; a < ev->nargs; a++)
        if (ev->args[a].kind == ST_ARG_STRING)
            st__out_printf(out, " + st__len_%s", ev->args[a].name);
}

/*
 * The event's trace-events line (meta_format.h's declaration), as it is
 * written: ASCII, a byte outside it as an octal escape (only the format
 * can hold one).
 */
static void decl_line(struct st__out *line, const struct st__event_decl *ev)
{
    st__out_printf(line, "%s%s(", ev->disabled ? "disable " : "", ev->name);
    for (unsigned a = 0; a < ev->nargs; a++)
        st__out_printf(line, "%s%s%s%s", a ? ", " : "", ev->args[a].type,
                      ev->args[a].type[strlen(ev->args[a].type) - 1] == '*' ? "" : " ", ev->args[a].name);
    st__out_printf(line, "%s)", ev->nargs ? "" : "void");
    if (ev->fmt) {
        st__out_printf(line, " ");
        for (const unsigned char *c = (const unsigned char *)ev->fmt; *c; c++)
            st__out_printf(line, c[0] < 0x20 || c[0] > 0x7e ? "\\%03o" : "%c", c[0]);
    }
}

/* len bytes of s as a SystemTap string literal's body: backslashes and quotes escaped (and %, in a format: percent). */
static void stap_string(struct st__out *out, const char *s, size_t len, bool percent)
{
    for (size_t i = 0; i < len; i++)
        st__out_printf(out, s[i] == '\\' || s[i] == '"' ? "\\%c" : s[i] == '%' && percent ? "%%%%" : "%c", s[i]);
}

static void emit_simpletrace_event(struct st__out *out, const struct st__gen *gen, const struct st__event_decl *ev)
{
    struct st__out line = {0};

    decl_line(&line, ev);
    st__out_printf(out, "\nprobe %s.simpletrace.%s = %s.%s ?\n{\n", prefix(gen), ev->name, prefix(gen), ev->name);
    st__out_printf(out, "    st__id = st__map_event(\"%s\", \"", ev->name);
    /* SystemTap cuts strings at MAXSTRINGLEN (512): a longer declaration is left out, not cut. */
    if (!line.text.failed && line.text.len < STAP_DECL_MAX)
        stap_string(out, (const char *)line.text.data, line.text.len, false);
    st__out_printf(out, "\")\n");
    st__out_free(&line);
    for (unsigned a = 0; a < ev->nargs; a++) {
        const struct st__arg *arg = &ev->args[a];
        if (arg->kind != ST_ARG_STRING)
            continue;
        st__out_printf(out, "    st__str_%s = ", arg->name);
        emit_var(out, arg);
        st__out_printf(out, " ? user_string_n(");
        emit_var(out, arg);
        st__out_printf(out, ", %d) : \"\"\n", STAP_STRLEN);
        st__out_printf(out, "    st__len_%s = strlen(st__str_%s)\n", arg->name, arg->name);
    }
    st__out_printf(out, "    printf(\"%%8b%%8b%%8b%%4b%%4b");
    for (unsigned a = 0; a < ev->nargs; a++)
        st__out_printf(out, "%s", ev->args[a].kind == ST_ARG_STRING ? "%4b%.*s" : "%8b");
    st__out_printf(out, "\",\n           1, st__id, gettimeofday_ns(), ");
    emit_record_length(out, ev);
    st__out_printf(out, ", tid()");
    for (unsigned a = 0; a < ev->nargs; a++) {
        const struct st__arg *arg = &ev->args[a];
        if (arg->kind == ST_ARG_STRING) {
            st__out_printf(out, ",\n           st__len_%s, st__len_%s, st__str_%s", arg->name, arg->name, arg->name);
        } else {
            st__out_printf(out, ", ");
            emit_var(out, arg);
        }
    }
    st__out_printf(out, ")\n}\n");
}

/*
 * The description's keys after its first line, as a SystemTap sprintf
 * format: what the script knows (the traced binary, the clock); each
 * process's pid is in its records' pid field (tid()).
 */
static void emit_description_keys(struct st__out *out, const struct st__gen *gen)
{
    const char *binary = gen->opt->binary ? gen->opt->binary : "";
    const char *base = strrchr(binary, '/') ? strrchr(binary, '/') + 1 : binary;
    char value[3 * 4096 + 1];

    st__out_printf(out, "version=%s\\n", SIMPLETRACE_VERSION_STRING);
    st__meta_escape(value, sizeof value, base, strlen(base));
    st__out_printf(out, "program=");
    stap_string(out, value, strlen(value), true);
    st__meta_escape(value, sizeof value, binary, strlen(binary));
    st__out_printf(out, "\\nexe=");
    stap_string(out, value, strlen(value), true);
    st__out_printf(out, "\\nclock=realtime\\nanchor_mono_ns=%%d\\nanchor_real_ns=%%d\\n");
}

void st__gen_emit_simpletrace_stp(struct st__out *out, const struct st__gen *gen)
{
    st__gen_emit_banner(out, gen);
    st__out_printf(out,
                  "\n/* Event name -> ID in this output, assigned at first use. */\n"
                  "global st__ids\n"
                  "global st__next_id\n"
                  "\n/* The ID of name; writes its mapping record, and its declaration (decl, if any), when it is new. */\n"
                  "function st__map_event:long(name:string, decl:string)\n{\n"
                  "    if (!(name in st__ids)) {\n"
                  "        st__ids[name] = st__next_id\n"
                  "        printf(\"%%8b%%8b%%4b%%s\", %d, st__next_id, strlen(name), name)\n"
                  "        if (decl != \"\")\n"
                  "            printf(\"%%8b%%8b%%4b%%s\", %d, 0x%" PRIx64 " + st__next_id, strlen(decl), decl)\n"
                  "        st__next_id++\n"
                  "    }\n"
                  "    return st__ids[name]\n}\n"
                  "\n/*\n * The simpletrace v4 header (ID, magic, version), then the description\n"
                  " * (meta_format.h): timestamps are gettimeofday_ns(), CLOCK_REALTIME, so\n"
                  " * the anchor is one instant of that clock twice.\n */\n"
                  "probe begin\n{\n"
                  "    printf(\"%%8b%%8b%%8b\", 0x%" PRIx64 ", 0x%" PRIx64 ", %d)\n"
                  "    st__now = gettimeofday_ns()\n"
                  "    st__desc = sprintf(\"%s",
                  ST_RECORD_TYPE_MAPPING, ST_RECORD_TYPE_MAPPING, ST_META_DECL_BASE, ST_HEADER_EVENT_ID, ST_HEADER_MAGIC,
                  ST_FORMAT_VERSION, "simpletrace=1\\n");
    emit_description_keys(out, gen);
    st__out_printf(out, "\", st__now, st__now)\n"
                  "    printf(\"%%8b%%8b%%4b%%s\", %d, 0x%" PRIx64 ", strlen(st__desc), st__desc)\n}\n",
                  ST_RECORD_TYPE_MAPPING, ST_META_INFO_ID);
    for (size_t i = 0; i < gen->events->count; i++)
        if (st__gen_event_compiled_in(gen, &gen->events->events[i]))
            emit_simpletrace_event(out, gen, &gen->events->events[i]);
}
