/*
 * Scans of records: the records table, each event's table and drops. A
 * scan is one reader, opened with what the plan lets it skip, read as
 * SQLite asks for rows; a column's value is made from the current record
 * only when SQLite asks for that column.
 *
 * records.args is the reader's own JSON (st_formatter, ST_OUTPUT_JSON):
 * its line ends with the "args" object, which is cut out, so that SQL sees
 * the very values print --format=json shows.
 *
 * A count per name (the plan's grouped) reads every record once, counts
 * it by event, and then gives each name's rows one after the other, in
 * name order: SQLite's GROUP BY takes grouped rows as they come instead
 * of sorting millions of them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sql_internal.h"

/* The names of the events this scan reads: the plan's, or the event table's own. NULL: every event. */
static const char *const *scan_names(const struct st__sql_table *t, const struct st__sql_plan *p, size_t *n,
                                     const char **one)
{
    if (t->kind == ST__SQL_EVENT) {
        *one = t->ev->name;
        *n = 1;
        return one;
    }
    if (t->kind == ST__SQL_DROPS) {
        *one = ST_DROPPED_EVENT_NAME;
        *n = 1;
        return one;
    }
    *n = p->nnames;
    return (const char *const *)p->names;
}

static int count_groups(struct st__sql_scan *s, char *err, size_t errlen);

int st__sql_scan_start(struct st__sql_scan *s, const struct st__sql_table *t, const struct st__sql_plan *p, char *err,
                       size_t errlen)
{
    const char *one;
    size_t n;
    s->t = t;
    if (p->empty)
        return 0;
    const char *const *names = scan_names(t, p, &n, &one);
    int ret = st__sql_open(t->src, names, n, &p->range, &s->r, err, errlen);
    if (ret != 0)
        return ret < 0 ? ret : 0;
    if (p->grouped)
        return count_groups(s, err, errlen);
    return 0;
}

/* Adds what the scan's reader read to its table's connection's totals. */
static void count_reads(const struct st__sql_scan *s)
{
    struct st__sql_reads *rd = s->t ? s->t->reads : NULL;
    struct st_reader_counters c = {.struct_size = sizeof c};
    struct st_reader_compression z = {.struct_size = sizeof z};
    if (!rd || !s->r || st_reader_get_counters(s->r, &c) < 0)
        return;
    rd->scans++;
    rd->records += c.events + c.dropped_records;
    rd->skipped += c.filtered;
    rd->bytes += c.bytes;
    if (st_reader_get_compression(s->r, &z) == 0 && z.compressed) {
        rd->frames += z.frames;
        rd->frames_read += z.frames_read;
        rd->frames_skipped += z.frames_skipped;
    }
}

void st__sql_scan_stop(struct st__sql_scan *s)
{
    count_reads(s);
    st_reader_close(s->r);
    st_formatter_free(s->fmt);
    free(s->host);
    st__growbuf_free(&s->text);
    for (size_t i = 0; i < s->ngroups; i++)
        free(s->gnames[i]);
    free(s->gnames);
    free(s->gcounts);
    free(s->glens);
    free(s->by_index);
    memset(s, 0, sizeof *s);
}

/* --- a count per name ------------------------------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads every record counting it by event, then lists the names met, sorted, with their counts. */
static int count_groups(struct st__sql_scan *s, char *err, size_t errlen)
{
    const struct st_record *rec;
    int ret;
    while ((ret = st_reader_next(s->r, &rec)) == 1) {
        size_t i = rec->event->index;
        if (i >= s->by_index_cap) {
            size_t cap = st_catalog_count(st_reader_catalog(s->r)) + 1;
            uint64_t *c = realloc(s->by_index, cap * sizeof *c);
            if (!c)
                goto nomem;
            memset(c + s->by_index_cap, 0, (cap - s->by_index_cap) * sizeof *c);
            s->by_index = c;
            s->by_index_cap = cap;
        }
        s->by_index[i]++;
    }
    if (ret < 0) {
        st__sql_reader_error(s->r, err, errlen);
        return ret;
    }
    const struct st_catalog *cat = st_reader_catalog(s->r);
    if (!(s->gnames = calloc(s->by_index_cap + 1, sizeof *s->gnames)))
        goto nomem;
    for (size_t i = 0; i < s->by_index_cap; i++)
        if (s->by_index[i] && !(s->gnames[s->ngroups++] = strdup(st_catalog_event(cat, i)->name)))
            goto nomem;
    qsort(s->gnames, s->ngroups, sizeof *s->gnames, by_name);
    if (!(s->gcounts = calloc(s->ngroups + 1, sizeof *s->gcounts)))
        goto nomem;
    if (!(s->glens = calloc(s->ngroups + 1, sizeof *s->glens)))
        goto nomem;
    for (size_t g = 0; g < s->ngroups; g++) {
        s->gcounts[g] = s->by_index[st_catalog_find(cat, s->gnames[g])->index];
        s->glens[g] = strlen(s->gnames[g]);
    }
    s->gnext = 0;
    s->left = 0;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
}

/* The next row of a count per name: 1, or 0 after the last. */
static int next_grouped(struct st__sql_scan *s)
{
    if (s->left > 0) {
        s->left--;
        return 1;
    }
    if (s->gnext >= s->ngroups)
        return 0;
    s->group = s->gnext++;
    s->left = s->gcounts[s->group] - 1; /* every name listed was counted at least once */
    return 1;
}

/* --- rows ------------------------------------------------------------------------------------------- */

/* Whether the reader's event ev is the one the table was made for (same arguments); err says how not. */
static int check_event(struct st__sql_scan *s, const struct st_event_info *ev, char *err, size_t errlen)
{
    const struct st__sql_event *want = s->t->ev;
    bool same = ev->nargs == want->nargs;
    for (unsigned k = 0; same && k < ev->nargs; k++)
        same = strcmp(ev->args[k].name, want->args[k].decl) == 0;
    if (!same) {
        snprintf(err, errlen, "event %s: the traces declare it with other arguments than its table has", ev->name);
        return -EBADMSG;
    }
    const struct st_catalog *cat = st_reader_catalog(s->r);
    for (unsigned k = 0; k < ev->nargs; k++)
        s->enc[k] = st_catalog_arg_encoding(cat, ev, k);
    s->checked = ev;
    return 0;
}

int st__sql_scan_next(struct st__sql_scan *s, char *err, size_t errlen)
{
    if (!s->r)
        return 0;
    if (s->gnames)
        return next_grouped(s);
    int ret = st_reader_next(s->r, &s->rec);
    if (ret < 0) {
        st__sql_reader_error(s->r, err, errlen);
        return ret;
    }
    if (ret == 1 && s->t->kind == ST__SQL_EVENT && s->rec->event != s->checked) {
        int r2 = check_event(s, s->rec->event, err, errlen);
        if (r2 < 0)
            return r2;
    }
    return ret;
}

/* --- columns ------------------------------------------------------------------------------------------ */

static struct st__sql_cell int_cell(sqlite3_int64 v)
{
    return (struct st__sql_cell){.type = SQLITE_INTEGER, .i = v};
}

static struct st__sql_cell pid_cell(const struct st_record *rec)
{
    return rec->process_pid ? int_cell(rec->process_pid) : (struct st__sql_cell){0};
}

static struct st__sql_cell tid_cell(const struct st_record *rec)
{
    return rec->has_pid ? int_cell(rec->pid) : (struct st__sql_cell){0};
}

/* The host the description of the record's process names (looked up when the process changes). */
static int host_cell(struct st__sql_scan *s, struct st__sql_cell *out)
{
    const struct st_record *rec = s->rec;
    if (s->host_input != rec->input + 1 || s->host_pid != rec->process_pid) {
        struct st_trace_description d = {.struct_size = sizeof d};
        free(s->host);
        s->host = NULL;
        if (st_reader_description(st_reader_input(s->r, rec->input), &d) == 0 && d.host[0] &&
            !(s->host = strdup(d.host)))
            return -ENOMEM;
        s->host_input = rec->input + 1;
        s->host_pid = rec->process_pid;
    }
    *out = st__sql_str_cell(s->host);
    return 0;
}

/* The "args" object of the record's JSON line (the formatter's; "args" is its last key). */
static int args_cell(struct st__sql_scan *s, struct st__sql_cell *out, char *err, size_t errlen)
{
    if (!s->fmt) {
        struct st_formatter_options o = {.struct_size = sizeof o, .format = ST_OUTPUT_JSON};
        if (st_formatter_new(&s->fmt, st_reader_catalog(s->r), &o) < 0)
            return -ENOMEM;
    }
    size_t len;
    st_formatter_flush(s->fmt); /* discards the line before: out is NULL */
    if (st_formatter_write(s->fmt, s->rec) < 0)
        return -ENOMEM;
    const char *line = st_formatter_buffered(s->fmt, &len);
    /* A quote inside a string is escaped: the first ,"args": is the key. */
    const char *a = memmem(line, len, ",\"args\":", 8);
    if (!a || len < 3 || line[len - 1] != '\n') {
        snprintf(err, errlen, "the reader's JSON line has no args");
        return -EPROTO;
    }
    a += 8;
    *out = (struct st__sql_cell){.type = SQLITE_TEXT, .s = a, .n = (size_t)(line + len - 2 - a)};
    return 0;
}

static int records_cell(struct st__sql_scan *s, int col, struct st__sql_cell *out, char *err, size_t errlen)
{
    const struct st_record *rec = s->rec;
    switch (col) {
    case REC_TS: *out = int_cell((sqlite3_int64)rec->timestamp_ns); return 0;
    case REC_NAME: *out = (struct st__sql_cell){.type = SQLITE_TEXT, .s = rec->name, .n = rec->event->name_len}; return 0;
    case REC_PID: *out = pid_cell(rec); return 0;
    case REC_TID: *out = tid_cell(rec); return 0;
    case REC_PROGRAM: *out = st__sql_str_cell(rec->process_program); return 0;
    case REC_HOST: return host_cell(s, out);
    case REC_ARGS: return args_cell(s, out, err, errlen);
    default: return 0;
    }
}

static int event_cell(struct st__sql_scan *s, int col, struct st__sql_cell *out)
{
    const struct st_record *rec = s->rec;
    switch (col) {
    case EV_TS: *out = int_cell((sqlite3_int64)rec->timestamp_ns); return 0;
    case EV_PID: *out = pid_cell(rec); return 0;
    case EV_TID: *out = tid_cell(rec); return 0;
    default: break;
    }
    unsigned k = (unsigned)(col - EV_ARG0);
    if (k >= rec->nargs)
        return 0;
    const struct st_value *v = &rec->args[k];
    if (v->kind == ST_VALUE_STRING)
        return st__sql_text_cell(out, &s->text, v->str, v->len);
    if (v->kind == ST_VALUE_POINTER) /* a pointer, or a v0 trace's string (its address) */
        *out = int_cell((sqlite3_int64)v->u64);
    else
        *out = st__sql_int_cell(&rec->event->args[k], s->enc[k], v->u64);
    return 0;
}

static int drops_cell(struct st__sql_scan *s, int col, struct st__sql_cell *out)
{
    const struct st_record *rec = s->rec;
    switch (col) {
    case DROP_TS: *out = int_cell((sqlite3_int64)rec->timestamp_ns); break;
    case DROP_TID: *out = tid_cell(rec); break;
    case DROP_COUNT: *out = int_cell((sqlite3_int64)rec->dropped_count); break;
    case DROP_PID: *out = pid_cell(rec); break;
    default: break;
    }
    return 0;
}

int st__sql_scan_cell(struct st__sql_scan *s, int col, struct st__sql_cell *out, char *err, size_t errlen)
{
    *out = (struct st__sql_cell){0};
    if (s->gnames) { /* a count per name: only the name is asked for */
        if (col == REC_NAME)
            *out = (struct st__sql_cell){.type = SQLITE_TEXT, .s = s->gnames[s->group], .n = s->glens[s->group]};
        return 0;
    }
    switch (s->t->kind) {
    case ST__SQL_RECORDS: return records_cell(s, col, out, err, errlen);
    case ST__SQL_EVENT: return event_cell(s, col, out);
    case ST__SQL_DROPS: return drops_cell(s, col, out);
    default: return 0;
    }
}
