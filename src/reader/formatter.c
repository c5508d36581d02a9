/*
 * Record printers: simpletrace.py's text lines, JSON lines, and the log
 * backend's lines (logfmt.c).
 *
 * Text, as simpletrace.py's f'{name} {delta_ns / 1000:0.3f} {pid=} ' +
 * ' '.join(fields): integers 0x%x (unsigned 64-bit), strings as Python
 * bytes repr, and the space after pid=N even with no arguments. v0 records
 * have no pid and print without the pid field, as the v0-era reader did.
 *
 * JSON values are typed by the declaration (reader.h): how each argument
 * is written is decided once per event (enum json_kind), from its
 * encoding (st_catalog_arg_encoding(), as every exporter asks it).
 *
 * Speed: every event gets templates once ("name ", "arg=", " arg="; the
 * JSON keys likewise), fields are formatted by hand (textfmt.h) straight
 * into one output buffer that is written out in large blocks. Before a
 * record is formatted, its worst-case size is reserved, so the field
 * writers never check for room.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "growbuf.h"
#include "logfmt.h"
#include "reader_internal.h"
#include "textfmt.h"
#include "wall_time.h"

#define OUT_BUFFER (256u << 10) /* written out when full; small enough to stay in cache */
#define SLACK 64 /* scratch bytes the field writers may store past a line */

/* How JSON writes an integer argument, from its declared type. */
enum json_kind {
    JSON_UNSIGNED, /* a number */
    JSON_SIGNED,   /* a number, negative where the declared type holds a negative value */
    JSON_BOOL,     /* true / false */
    JSON_CHAR,     /* {"value":N,"char":"C"} ("char":null unless printable ASCII) */
};

/* Offsets into the template arena of one event's pieces. */
struct tmpl {
    uint32_t head, head_len;                 /* text: "name " / JSON: {"name":"name","id": */
    uint32_t arg[ST_READER_MAX_ARGS];        /* text: "a=", " b=" / JSON: "a":, ,"b": */
    uint32_t arg_len[ST_READER_MAX_ARGS];
    uint32_t bound;                          /* worst-case line size without string bytes */
    bool has_strings;
    uint8_t json[ST_READER_MAX_ARGS];        /* enum json_kind of each integer argument */
};

/*
 * A record's " pid=N " text, made once per pid field and input: a trace's
 * records are almost always of a few threads in runs, and a merge's come
 * from its inputs in turn, each with its own.
 */
struct pid_text {
    uint32_t pid;  /* the pid the text is of */
    uint32_t len;  /* 0: nothing made yet */
    char text[32]; /* st__put_short() reads 32 bytes */
};
#define PID_TEXTS 256

/*
 * A text line's "PROGRAM[PID] " field (show_process), kept per input while
 * its records' process stays the same. Checked against the record's
 * program name itself, not its address: a trace's description may be
 * replaced and its text land where the old one was.
 */
struct proc_text {
    unsigned input;    /* the record's input, pid and program name it was made from */
    uint32_t pid;
    char program[48];  /* NUL-terminated; a longer name is never kept */
    uint32_t len;      /* of text; 0: nothing kept */
    char text[80];     /* at most 47 + 13 bytes; st__put_short() reads 32 */
};

struct st_formatter {
    const struct st_catalog *cat;
    enum st_output_format format;
    enum st_timestamp_mode timestamps;
    FILE *out;
    struct tmpl *tmpl;       /* per event index */
    size_t ntmpl;            /* entries of tmpl: a growing catalog's later events are added when met */
    struct st__growbuf a;    /* the arena: template text, then SLACK bytes of padding */
    char *arena;             /* a.data */
    char *buf;               /* output lines */
    size_t used, cap;
    bool have_prev, have_origin, have_anchor;
    uint64_t prev_ts, origin;
    uint64_t anchor_mono, anchor_real; /* st_formatter_set_anchor() */
    bool show_process;       /* name each record's process (st_formatter_options) */
    struct pid_text pids[PID_TEXTS]; /* by input number (mod PID_TEXTS) */
    struct proc_text procs[PID_TEXTS]; /* likewise */
};

/* --- templates -----------------------------------------------------------
 *
 * The template text of every event goes, back to back, into one growable
 * buffer (the arena); templates refer to it by offset, since it moves as
 * it grows.
 */

/* Appends n bytes to the arena; returns their offset, or -1 on ENOMEM. */
static long arena_add(struct st__growbuf *a, const char *s, size_t n)
{
    size_t off = a->len;
    st__growbuf_put(a, s, n);
    return a->failed ? -1 : (long)off;
}

/* Adds the concatenation of up to three strings; offset or -1. */
static long arena_add3(struct st__growbuf *a, const char *x, const char *y, const char *z)
{
    long off = arena_add(a, x, strlen(x));
    if (off < 0 || arena_add(a, y, strlen(y)) < 0 || arena_add(a, z, strlen(z)) < 0)
        return -1;
    return off;
}

static enum json_kind json_kind(const struct st_catalog *cat, const struct st_event_info *ev, unsigned i)
{
    switch (st_catalog_arg_encoding(cat, ev, i)) {
    case ST_ARG_ENCODING_BOOL: return JSON_BOOL;
    case ST_ARG_ENCODING_CHAR: return JSON_CHAR;
    default: return ev->args[i].is_signed ? JSON_SIGNED : JSON_UNSIGNED;
    }
}

/* Builds the templates of one event. 0 or -ENOMEM. */
static int build_tmpl(struct st__growbuf *a, struct tmpl *t, const struct st_catalog *cat,
                      const struct st_event_info *ev, bool json)
{
    long off;
    size_t bound;
    if (json) {
        /* Event and argument names are C identifiers: no JSON escaping needed. */
        off = arena_add3(a, "{\"name\":\"", ev->name, "\",\"id\":");
        /* id, ,"timestamp_ns": ts, ,"pid": pid, ,"wall_time":"...", ,"args":{ ... }}\n */
        bound = 20 + 16 + 20 + 7 + 10 + 15 + ST__UTC_ROOM + 10 + 3;
    } else {
        off = arena_add3(a, ev->name, " ", "");
        /* time (a delta or a UTC time), " pid=", pid, " ", "\n" */
        bound = (ST__US_ROOM > ST__UTC_ROOM ? ST__US_ROOM : ST__UTC_ROOM) + 5 + 10 + 1 + 1;
    }
    if (off < 0)
        return -ENOMEM;
    t->head = (uint32_t)off;
    t->head_len = (uint32_t)(a->len - (size_t)off);
    bound += t->head_len;
    t->has_strings = false;
    for (unsigned i = 0; i < ev->nargs; i++) {
        const char *sep = i == 0 ? "" : json ? "," : " ";
        off = json ? arena_add3(a, sep, "\"", ev->args[i].name) : arena_add3(a, sep, ev->args[i].name, "=");
        if (off < 0 || (json && arena_add(a, "\":", 2) < 0))
            return -ENOMEM;
        t->arg[i] = (uint32_t)off;
        t->arg_len[i] = (uint32_t)(a->len - (size_t)off);
        /* widest value: {"value":-128,"char":null}; a number, a pointer's "0x...", a string's quotes */
        bound += t->arg_len[i] + 32;
        t->json[i] = (uint8_t)json_kind(cat, ev, i);
        if (ev->args[i].kind == ST_VALUE_STRING)
            t->has_strings = true;
    }
    t->bound = (uint32_t)bound;
    return 0;
}

/*
 * Builds the templates of the catalog's events from index ntmpl on (all at
 * first; those a growing catalog gained later), padding the arena's end
 * again. 0 or -ENOMEM.
 */
static int add_templates(struct st_formatter *f)
{
    static const char pad[SLACK]; /* st__put_short() reads whole blocks past a piece */
    size_t n = f->cat->count + 1;
    struct tmpl *t = realloc(f->tmpl, n * sizeof *t);
    if (!t)
        return -ENOMEM;
    f->tmpl = t;
    if (f->a.len >= SLACK)
        f->a.len -= SLACK; /* the old padding: the new templates go over it */
    for (size_t i = f->ntmpl; i < n; i++)
        if (build_tmpl(&f->a, &t[i], f->cat, st_catalog_event(f->cat, i), f->format == ST_OUTPUT_JSON) < 0)
            return -ENOMEM;
    if (arena_add(&f->a, pad, sizeof pad) < 0)
        return -ENOMEM;
    f->ntmpl = n;
    f->arena = (char *)f->a.data;
    return 0;
}

ST_API int st_formatter_new(struct st_formatter **out, const struct st_catalog *cat,
                            const struct st_formatter_options *caller)
{
    struct st_formatter_options opts;
    *out = NULL;
    if (!caller || st__struct_size(caller) < ST__FORMATTER_OPTIONS_V1)
        return -EINVAL;
    st__struct_in(&opts, sizeof opts, caller, st__struct_size(caller));
    if (opts.format > ST_OUTPUT_LOG || opts.timestamps > ST_TIMESTAMP_WALL)
        return -EINVAL;
    struct st_formatter *f = calloc(1, sizeof *f);
    int ret = -ENOMEM;
    if (!f)
        goto fail;
    f->cat = cat;
    f->format = opts.format;
    f->timestamps = opts.timestamps;
    f->out = opts.out;
    f->show_process = opts.show_process;
    f->cap = OUT_BUFFER;
    f->buf = malloc(f->cap);
    if (!f->buf || (ret = add_templates(f)) < 0)
        goto fail;
    *out = f;
    return 0;
fail:
    st_formatter_free(f);
    return ret;
}

ST_API void st_formatter_free(struct st_formatter *f)
{
    if (!f)
        return;
    st__growbuf_free(&f->a);
    free(f->tmpl);
    free(f->buf);
    free(f);
}

ST_API void st_formatter_set_origin(struct st_formatter *f, uint64_t timestamp_ns)
{
    f->origin = timestamp_ns;
    f->have_origin = true;
}

ST_API void st_formatter_set_anchor(struct st_formatter *f, uint64_t anchor_mono_ns, uint64_t anchor_real_ns)
{
    f->anchor_mono = anchor_mono_ns;
    f->anchor_real = anchor_real_ns;
    f->have_anchor = true;
}

/* The wall-clock time of ts from the anchor. */
static char *put_wall(const struct st_formatter *f, char *p, uint64_t ts)
{
    return st__put_utc_ns(p, st__wall_ns(f->anchor_mono, f->anchor_real, ts));
}

/* --- output buffer ------------------------------------------------------- */

/* Writes the buffered bytes out (or drops them for a NULL out). 0 or -errno. */
static int drain(struct st_formatter *f)
{
    if (f->out && f->used && fwrite(f->buf, 1, f->used, f->out) != f->used) {
        int e = errno ? errno : EIO;
        f->used = 0;
        return -e;
    }
    f->used = 0;
    return 0;
}

/* Makes room for n more bytes. 0, -ENOMEM or a write error. */
static int reserve(struct st_formatter *f, size_t n)
{
    if (f->used + n <= f->cap)
        return 0;
    int ret = drain(f);
    if (ret < 0 || n <= f->cap)
        return ret;
    char *b = realloc(f->buf, n); /* a line longer than the buffer: only huge strings */
    if (!b)
        return -ENOMEM;
    f->buf = b;
    f->cap = n;
    return 0;
}

ST_API int st_formatter_flush(struct st_formatter *f)
{
    int ret = drain(f);
    if (ret == 0 && f->out && fflush(f->out) != 0)
        ret = errno ? -errno : -EIO;
    return ret;
}

ST_API const char *st_formatter_buffered(const struct st_formatter *f, size_t *len)
{
    *len = f->used;
    return f->buf;
}

/* --- lines ---------------------------------------------------------------- */

/* The time column of a text line. */
static char *put_time(struct st_formatter *f, char *p, uint64_t ts)
{
    switch (f->timestamps) {
    case ST_TIMESTAMP_DELTA: {
        uint64_t prev = f->have_prev ? f->prev_ts : ts;
        f->have_prev = true;
        f->prev_ts = ts;
        return ts >= prev ? st__put_delta_us(p, false, ts - prev) : st__put_delta_us(p, true, prev - ts);
    }
    case ST_TIMESTAMP_RELATIVE:
        if (!f->have_origin)
            st_formatter_set_origin(f, ts);
        return ts >= f->origin ? st__put_us_exact(p, false, ts - f->origin) : st__put_us_exact(p, true, f->origin - ts);
    case ST_TIMESTAMP_WALL: return put_wall(f, p, ts);
    default:
        return st__put_us_exact(p, false, ts);
    }
}

/* The " pid=N " text of rec, made when its input's last record had another pid field. */
static const struct pid_text *pid_text(struct st_formatter *f, const struct st_record *rec)
{
    struct pid_text *c = &f->pids[rec->input % PID_TEXTS];
    if (c->pid != rec->pid || !c->len) {
        memcpy(c->text, " pid=", 5);
        char *e = st__put_dec(c->text + 5, rec->pid);
        *e++ = ' ';
        c->pid = rec->pid;
        c->len = (uint32_t)(e - c->text);
    }
    return c;
}

static char *put_lit_text(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

/* Bytes the process field of rec may take, quotes and escapes included. */
static size_t process_room(const struct st_formatter *f, const struct st_record *rec)
{
    return f->show_process ? ST__JSON_ESCAPED_MAX(strlen(rec->process_program)) + 80 : 0;
}

/*
 * The text field "PROGRAM[PID] " (blanks and unprintable bytes of the name
 * as '?', so the line still splits on spaces), or "input#N " for an input
 * whose trace does not say which process wrote it.
 */
static char *put_process_text(char *p, const struct st_record *rec)
{
    if (!rec->process_pid && !rec->process_program[0]) {
        p = put_lit_text(p, "input#", 6);
        p = st__put_dec(p, rec->input);
        *p++ = ' ';
        return p;
    }
    for (const unsigned char *s = (const unsigned char *)rec->process_program; *s; s++)
        *p++ = *s > 0x20 && *s < 0x7f ? (char)*s : '?';
    *p++ = '[';
    p = st__put_dec(p, rec->process_pid);
    *p++ = ']';
    *p++ = ' ';
    return p;
}

/* "process":{"input":N,"pid":P,"program":"..."}, null for what the trace does not record. */
static char *put_process_json(char *p, const struct st_record *rec)
{
    bool known = rec->process_pid || rec->process_program[0];
    p = put_lit_text(p, ",\"process\":{\"input\":", 20);
    p = st__put_dec(p, rec->input);
    p = put_lit_text(p, ",\"pid\":", 7);
    p = known ? st__put_dec(p, rec->process_pid) : put_lit_text(p, "null", 4);
    p = put_lit_text(p, ",\"program\":", 11);
    if (known)
        p = st__json_string(p, (const uint8_t *)rec->process_program, strlen(rec->process_program));
    else
        p = put_lit_text(p, "null", 4);
    *p++ = '}';
    return p;
}

/* The kept "PROGRAM[PID] " text of rec's process, made when its input's last record had another; NULL: too long to keep. */
static const struct proc_text *proc_text(struct st_formatter *f, const struct st_record *rec)
{
    struct proc_text *c = &f->procs[rec->input % PID_TEXTS];
    if (c->len && c->input == rec->input && c->pid == rec->process_pid && !strcmp(c->program, rec->process_program))
        return c;
    size_t n = strlen(rec->process_program);
    c->len = 0;
    if (n >= sizeof c->program)
        return NULL;
    memcpy(c->program, rec->process_program, n + 1);
    c->input = rec->input;
    c->pid = rec->process_pid;
    c->len = (uint32_t)(put_process_text(c->text, rec) - c->text);
    return c;
}

/* A text line; proc: rec's kept process text (show_process), NULL to make it here. */
static char *put_text(struct st_formatter *f, char *p, const struct tmpl *t, const struct st_record *rec,
                      const struct proc_text *proc)
{
    p = st__put_short(p, f->arena + t->head, t->head_len);
    if (proc)
        p = st__put_short(p, proc->text, proc->len);
    else if (f->show_process)
        p = put_process_text(p, rec);
    p = put_time(f, p, rec->timestamp_ns);
    if (rec->has_pid) {
        const struct pid_text *c = pid_text(f, rec);
        p = st__put_short(p, c->text, c->len);
    } else {
        *p++ = ' ';
    }
    for (unsigned i = 0; i < rec->nargs; i++) {
        const struct st_value *v = &rec->args[i];
        p = st__put_short(p, f->arena + t->arg[i], t->arg_len[i]);
        if (v->kind == ST_VALUE_STRING)
            p = st__put_bytes_repr(p, (const uint8_t *)v->str, v->len);
        else
            p = st__put_hex(p, v->u64);
    }
    *p++ = '\n';
    return p;
}

/* A signed 64-bit value in decimal (INT64_MIN included). */
static char *put_i64(char *p, uint64_t v)
{
    if (v >> 63) {
        *p++ = '-';
        return st__put_dec(p, ~v + 1); /* the magnitude, 2^63 for INT64_MIN */
    }
    return st__put_dec(p, v);
}

static char *put_lit(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

/* A char argument: {"value":N,"char":"C"}, "char":null where C is not printable ASCII. */
static char *put_json_char(char *p, const struct st_arg_info *a, uint64_t v)
{
    p = put_lit(p, "{\"value\":", 9);
    p = a->is_signed ? put_i64(p, v) : st__put_dec(p, v);
    p = put_lit(p, ",\"char\":", 8);
    uint8_t c = (uint8_t)v;
    if (c >= 0x20 && c < 0x7f)
        p = st__json_string(p, &c, 1);
    else
        p = put_lit(p, "null", 4);
    *p++ = '}';
    return p;
}

/* One argument's JSON value, typed by its declaration. */
static char *put_json_value(char *p, const struct tmpl *t, const struct st_arg_info *a, unsigned i,
                            const struct st_value *v)
{
    if (v->kind == ST_VALUE_STRING)
        return st__json_string(p, (const uint8_t *)v->str, v->len);
    if (v->kind == ST_VALUE_POINTER) {
        *p++ = '"';
        p = st__put_hex(p, v->u64);
        *p++ = '"';
        return p;
    }
    uint64_t x = st_arg_value(a, v->u64);
    switch (t->json[i]) {
    case JSON_SIGNED: return put_i64(p, x);
    case JSON_BOOL: return x ? put_lit(p, "true", 4) : put_lit(p, "false", 5);
    case JSON_CHAR: return put_json_char(p, a, x);
    default: return st__put_dec(p, x);
    }
}

static char *put_json(struct st_formatter *f, char *p, const struct tmpl *t, const struct st_record *rec)
{
    p = st__put_short(p, f->arena + t->head, t->head_len);
    p = st__put_dec(p, rec->id);
    memcpy(p, ",\"timestamp_ns\":", 16);
    p = st__put_dec(p + 16, rec->timestamp_ns);
    memcpy(p, ",\"pid\":", 7);
    p += 7;
    if (rec->has_pid) {
        p = st__put_dec(p, rec->pid);
    } else {
        memcpy(p, "null", 4);
        p += 4;
    }
    if (f->have_anchor) {
        p = put_lit(p, ",\"wall_time\":\"", 14);
        p = put_wall(f, p, rec->timestamp_ns);
        *p++ = '"';
    }
    if (f->show_process)
        p = put_process_json(p, rec);
    memcpy(p, ",\"args\":{", 9);
    p += 9;
    for (unsigned i = 0; i < rec->nargs; i++) {
        const struct st_value *v = &rec->args[i];
        p = st__put_short(p, f->arena + t->arg[i], t->arg_len[i]);
        p = put_json_value(p, t, &rec->event->args[i], i, v);
    }
    /* Keys added later go before "args", which stays last. */
    memcpy(p, "}}\n", 3);
    return p + 3;
}

/*
 * The log line of an event whose format does not fit its arguments (read
 * leniently, st_catalog_warning()): no log backend could print it, and
 * rendering it would read arguments the format does not describe, so it
 * is "NAME a=VALUE b=VALUE" with the values as the default text shows
 * them (integers 0x..., strings b'...').
 */
static int put_log_unfit(struct st_formatter *f, const struct st_record *rec)
{
    const struct st_event_info *ev = rec->event;
    size_t need = ev->name_len + 2;
    for (unsigned i = 0; i < rec->nargs; i++)
        need += strlen(ev->args[i].name) + 2 +
                (rec->args[i].kind == ST_VALUE_STRING ? 4 * (size_t)rec->args[i].len + 3 : ST__NUM_ROOM);
    int ret = reserve(f, need);
    if (ret < 0)
        return ret;
    char *p = put_lit(f->buf + f->used, ev->name, ev->name_len);
    for (unsigned i = 0; i < rec->nargs; i++) {
        const struct st_value *v = &rec->args[i];
        *p++ = ' ';
        p = put_lit(p, ev->args[i].name, strlen(ev->args[i].name));
        *p++ = '=';
        if (v->kind == ST_VALUE_STRING)
            p = st__put_bytes_repr(p, (const uint8_t *)v->str, v->len);
        else
            p = st__put_hex(p, v->u64);
    }
    *p++ = '\n';
    f->used = (size_t)(p - f->buf);
    return 0;
}

/* Whether ev's format was read leniently and does not fit its arguments. */
static bool format_unfit(const struct st_formatter *f, const struct st_event_info *ev)
{
    const struct st__event_decl *d = st__catalog_decl(f->cat, ev);
    return d && d->fmt_unfit;
}

/* The log backend's line for rec. */
static int put_log(struct st_formatter *f, const struct st_record *rec)
{
    if (format_unfit(f, rec->event))
        return put_log_unfit(f, rec);
    int ret = reserve(f, ST__LOG_LINE_MAX);
    if (ret < 0)
        return ret;
    long n = st__log_line(rec->event, rec, f->buf + f->used);
    if (n < 0)
        return (int)n;
    f->used += (size_t)n;
    return 0;
}

ST_API int st_formatter_write(struct st_formatter *f, const struct st_record *rec)
{
    const struct st_event_info *ev = rec->event;
    if (!ev || ev->index > f->cat->count || ev != f->cat->at[ev->index] || rec->nargs != ev->nargs)
        return -EINVAL;
    int ret;
    if (ev->index >= f->ntmpl && (ret = add_templates(f)) < 0)
        return ret;
    const struct tmpl *t = &f->tmpl[ev->index];
    if (f->format == ST_OUTPUT_LOG)
        return put_log(f, rec);
    if (f->format == ST_OUTPUT_TEXT && f->timestamps == ST_TIMESTAMP_WALL && !f->have_anchor)
        return -ENODATA;
    const struct proc_text *proc = f->show_process && f->format == ST_OUTPUT_TEXT ? proc_text(f, rec) : NULL;
    size_t need = t->bound + SLACK + (proc ? proc->len : process_room(f, rec));
    if (t->has_strings) {
        bool json = f->format == ST_OUTPUT_JSON;
        for (unsigned i = 0; i < rec->nargs; i++)
            if (rec->args[i].kind == ST_VALUE_STRING) /* quotes and prefix are in the bound */
                need += json ? ST__JSON_ESCAPED_MAX(rec->args[i].len) : 4 * (size_t)rec->args[i].len;
    }
    ret = reserve(f, need);
    if (ret < 0)
        return ret;
    char *p = f->buf + f->used;
    p = f->format == ST_OUTPUT_JSON ? put_json(f, p, t, rec) : put_text(f, p, t, rec, proc);
    f->used = (size_t)(p - f->buf);
    return 0;
}
