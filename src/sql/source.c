/*
 * The source of the tables: the traces and how to read them, the schema of
 * the event tables (read from the head of the traces once), and the readers
 * each scan opens with what the query lets it skip.
 *
 * Every scan opens its own reader: SQLite may run several scans of one
 * table at once (a join of a table with itself), and a reader reads
 * forward only. With trace-events files, every reader shares their catalog;
 * without, each reads the traces' declarations as they come, and the event
 * tables are those the head of the traces declares (simpletrace's writer
 * declares every event before its first record).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "glob_match.h"
#include "json_escape.h"
#include "sql_internal.h"
#include "utf8.h"

/* --- rows of cells ----------------------------------------------------------------------------- */

struct st__sql_cell *st__sql_rows_new(struct st__sql_rows *rows, size_t ncols)
{
    rows->ncols = ncols;
    if ((rows->nrows + 1) * ncols > rows->cap) {
        size_t cap = rows->cap ? rows->cap * 2 : 16 * ncols;
        struct st__sql_cell *c = realloc(rows->cells, cap * sizeof *c);
        if (!c)
            return NULL;
        rows->cells = c;
        rows->cap = cap;
    }
    struct st__sql_cell *row = rows->cells + rows->nrows++ * ncols;
    memset(row, 0, ncols * sizeof *row);
    return row;
}

int st__sql_cell_copy(struct st__sql_cell *dst, const struct st__sql_cell *src)
{
    *dst = *src;
    if (src->type != SQLITE_TEXT)
        return 0;
    char *copy = malloc(src->n + 1);
    if (!copy) {
        dst->type = SQLITE_NULL;
        return -ENOMEM;
    }
    memcpy(copy, src->s, src->n);
    copy[src->n] = '\0';
    dst->s = copy;
    return 0;
}

int st__sql_rows_add(struct st__sql_rows *rows, const struct st__sql_cell *cells, size_t ncols)
{
    struct st__sql_cell *row = st__sql_rows_new(rows, ncols);
    if (!row)
        return -ENOMEM;
    for (size_t i = 0; i < ncols; i++)
        if (st__sql_cell_copy(&row[i], &cells[i]) < 0)
            return -ENOMEM; /* the row stays, what was copied freed with the rows */
    return 0;
}

void st__sql_rows_free(struct st__sql_rows *rows)
{
    for (size_t i = 0; i < rows->nrows * rows->ncols; i++)
        if (rows->cells[i].type == SQLITE_TEXT)
            free((char *)rows->cells[i].s);
    free(rows->cells);
    memset(rows, 0, sizeof *rows);
}

int st__sql_text_cell(struct st__sql_cell *c, struct st__growbuf *buf, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (unsigned char)s[i] < 0x80)
        i++;
    if (i < n) { /* not all ASCII: repaired where it is not UTF-8 */
        buf->len = 0;
        uint8_t *p = st__growbuf_room(buf, ST__UTF8_REPAIRED_MAX(n));
        if (!p)
            return -ENOMEM;
        n = (size_t)(st__utf8_repair(p, (const uint8_t *)s, n) - p);
        s = (const char *)p;
    }
    *c = (struct st__sql_cell){.type = SQLITE_TEXT, .s = s, .n = n};
    return 0;
}

/* --- opening a scan ------------------------------------------------------------------------------ */

void st__sql_reader_error(const struct st_reader *r, char *err, size_t errlen)
{
    st_reader_format_error(r, err, errlen);
}

/*
 * Whether the events filter spec selects name: globs left to right, the
 * last one matching decides, and a name none matches is selected only when
 * the list starts by excluding (the reader's rule, reader.h).
 */
static bool spec_selects(const char *spec, const char *name)
{
    bool sel = false, first = true;
    for (const char *s = spec;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        bool exclude = len > 0 && s[0] == '-';
        if (first)
            sel = exclude;
        first = false;
        if (len > (size_t)exclude && st__glob_match_n(s + exclude, len - exclude, name))
            sel = !exclude;
        if (!comma)
            return sel;
        s = comma + 1;
    }
}

/* An event's name: letters, digits, '_' (anything else would be read as a glob, and names no event). */
static bool is_event_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

/* The events filter for names: those the source's own filter keeps, comma-separated, into *out (NULL: none). */
static int names_filter(const struct st__sql_source *src, const char *const *names, size_t n, char **out)
{
    struct st__growbuf b = {0};
    *out = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!is_event_name(names[i]) || (src->events && !spec_selects(src->events, names[i])))
            continue;
        if (b.len)
            st__growbuf_put(&b, ",", 1);
        st__growbuf_puts(&b, names[i]);
    }
    if (b.len == 0 || b.failed) {
        bool failed = b.failed;
        st__growbuf_free(&b);
        return failed ? -ENOMEM : 0;
    }
    st__growbuf_put(&b, "", 1);
    if (b.failed) {
        st__growbuf_free(&b);
        return -ENOMEM;
    }
    *out = (char *)b.data;
    return 0;
}

/* A timestamp as the reader's --from/--to take it: ns after the origin (o <= INT64_MAX), saturated. */
static int64_t relative(int64_t ts, uint64_t origin)
{
    int64_t o = (int64_t)origin;
    return ts < INT64_MIN + o ? INT64_MIN : ts - o;
}

/* Narrows the options' time window by range: false when nothing can pass. */
static bool narrow(const struct st__sql_source *src, const struct st__sql_range *range,
                   struct st_reader_options *o)
{
    if (!range || !src->have_origin || src->origin > INT64_MAX)
        return true;
    if (range->have_from) {
        int64_t from = relative(range->from, src->origin);
        if (!o->filter_from || from > o->from_ns)
            o->from_ns = from;
        o->filter_from = true;
    }
    if (range->have_to) {
        int64_t to = relative(range->to, src->origin);
        if (!o->filter_to || to < o->to_ns)
            o->to_ns = to;
        o->filter_to = true;
    }
    return !(o->filter_from && o->filter_to && o->from_ns > o->to_ns);
}

static int open_reader(const struct st__sql_source *src, const struct st_reader_options *o, struct st_reader **out,
                       char *err, size_t errlen)
{
    struct st_reader_error e = {.struct_size = sizeof e};
    int ret = src->ntraces == 1 ? st_reader_open(out, src->traces[0], src->cat, o, &e)
                                : st_reader_open_many(out, (const char *const *)src->traces, src->ntraces, src->cat,
                                                      o, &e);
    if (ret < 0) {
        if (ret == -EINVAL || src->ntraces > 1) /* bad options, or open_many's message naming the file */
            snprintf(err, errlen, "%s", e.message);
        else
            snprintf(err, errlen, "%s: %s", src->traces[0], e.message);
    }
    return ret;
}

int st__sql_open(const struct st__sql_source *src, const char *const *names, size_t nnames,
                 const struct st__sql_range *range, struct st_reader **out, char *err, size_t errlen)
{
    struct st_reader_options o = src->rd;
    char *filter = NULL;
    *out = NULL;
    if (names) {
        int ret = names_filter(src, names, nnames, &filter);
        if (ret < 0) {
            snprintf(err, errlen, "out of memory");
            return ret;
        }
        if (!filter)
            return 1;
        o.events = filter;
    }
    if (!narrow(src, range, &o)) {
        free(filter);
        return 1;
    }
    int ret = open_reader(src, &o, out, err, errlen);
    free(filter);
    return ret;
}

/* --- the source ------------------------------------------------------------------------------------ */

/* Whether column name is taken by one of ev's columns before argument k (SQL compares names ignoring case). */
static bool column_taken(const struct st__sql_event *ev, unsigned k, const char *name)
{
    static const char *const fixed[] = {"ts", "pid", "tid"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strcasecmp(fixed[i], name))
            return true;
    for (unsigned i = 0; i < k; i++)
        if (!strcasecmp(ev->args[i].column, name))
            return true;
    return false;
}

/* The table of event e: its arguments' columns. 0 or -ENOMEM. */
static int add_event(struct st__sql_source *src, const struct st_event_info *e)
{
    struct st__sql_event *ev = &src->ev[src->nev];
    memset(ev, 0, sizeof *ev);
    if (!(ev->name = strdup(e->name)))
        return -ENOMEM;
    src->nev++;
    for (unsigned k = 0; k < e->nargs; k++) {
        struct st__sql_arg *a = &ev->args[k];
        size_t len = strlen(e->args[k].name);
        /* room for the name with as many "_arg" as it takes to be unique (at most one per earlier column) */
        a->column = malloc(len + 4 * (ST_READER_MAX_ARGS + 3) + 1);
        a->decl = strdup(e->args[k].name);
        a->type = strdup(e->args[k].type);
        a->text = e->args[k].kind == ST_VALUE_STRING;
        ev->nargs = k + 1;
        if (!a->column || !a->decl || !a->type)
            return -ENOMEM;
        memcpy(a->column, e->args[k].name, len + 1);
        for (size_t n = len; column_taken(ev, k, a->column); n += 4)
            memcpy(a->column + n, "_arg", 5);
    }
    return 0;
}

/* The events table's row of e: name, id, args, format. */
static int add_catalog_row(struct st__sql_source *src, const struct st_event_info *e)
{
    struct st__growbuf args = {0};
    st__growbuf_put(&args, "[", 1);
    for (unsigned k = 0; k < e->nargs; k++) {
        st__growbuf_puts(&args, k ? ",{\"name\":" : "{\"name\":");
        st__growbuf_json(&args, e->args[k].name);
        st__growbuf_puts(&args, ",\"type\":");
        st__growbuf_json(&args, e->args[k].type);
        st__growbuf_put(&args, "}", 1);
    }
    st__growbuf_put(&args, "]", 2); /* with its NUL */
    if (args.failed) {
        st__growbuf_free(&args);
        return -ENOMEM;
    }
    struct st__sql_cell row[CAT_NCOLS] = {
        [CAT_NAME] = st__sql_str_cell(e->name),
        [CAT_ID] = {.type = SQLITE_INTEGER, .i = e->index},
        [CAT_ARGS] = st__sql_str_cell((const char *)args.data),
        [CAT_FORMAT] = st__sql_str_cell(e->format),
    };
    int ret = st__sql_rows_add(&src->catalog, row, CAT_NCOLS);
    st__growbuf_free(&args);
    return ret;
}

/* The schema from the catalog the head of the traces gives. */
static int make_schema(struct st__sql_source *src, const struct st_catalog *cat)
{
    size_t n = st_catalog_count(cat) + 1;
    if (!(src->ev = calloc(n, sizeof *src->ev)))
        return -ENOMEM;
    const struct st_event_info *dropped = st_catalog_dropped(cat);
    for (size_t i = 0; i < n; i++) {
        const struct st_event_info *e = st_catalog_event(cat, i);
        if (!e)
            continue;
        int ret = add_catalog_row(src, e);
        if (ret == 0 && e != dropped)
            ret = add_event(src, e);
        if (ret < 0)
            return ret;
    }
    return 0;
}

int st__sql_open_plain(const struct st__sql_source *src, struct st_reader **out, char *err, size_t errlen)
{
    /* No filter: a filter might read to the end to find its first record. */
    struct st_reader_options o = {.struct_size = sizeof o, .flags = src->rd.flags, .buffer_size = src->rd.buffer_size,
                                  .offsets_ns = src->rd.offsets_ns, .noffsets = src->rd.noffsets};
    return open_reader(src, &o, out, err, errlen);
}

/* Reads the head of the traces: the catalog (the given one, or their declarations) and the first record's time. */
static int read_head(struct st__sql_source *src, char *err, size_t errlen)
{
    struct st_reader *r;
    const struct st_record *rec;
    int ret = st__sql_open_plain(src, &r, err, errlen);
    if (ret < 0)
        return ret;
    ret = st_reader_next(r, &rec);
    if (ret < 0) {
        st__sql_reader_error(r, err, errlen);
    } else {
        src->have_origin = ret == 1 && st_reader_origin(r, &src->origin) == 0;
        ret = make_schema(src, st_reader_catalog(r));
        if (ret < 0)
            snprintf(err, errlen, "out of memory");
    }
    st_reader_close(r);
    return ret;
}

static char *dup_or_null(const char *s, bool *failed)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *failed = true;
    return d;
}

int st__sql_source_new(struct st__sql_source **out, const struct st__sql_input *in, char *err, size_t errlen)
{
    struct st__sql_source *src = calloc(1, sizeof *src);
    bool failed = !src;
    *out = NULL;
    if (src) {
        src->cat = in->cat;
        src->rd.struct_size = sizeof src->rd;
        if (in->rd)
            memcpy(&src->rd, in->rd, in->rd->struct_size < sizeof src->rd ? in->rd->struct_size : sizeof src->rd);
        src->rd.struct_size = sizeof src->rd;
        src->rd.conflict = NULL; /* the caller said them when it opened the traces */
        src->rd.events = src->events = dup_or_null(src->rd.events, &failed);
        if (src->rd.offsets_ns && src->rd.noffsets) {
            if ((src->offsets = malloc(src->rd.noffsets * sizeof *src->offsets)))
                memcpy(src->offsets, src->rd.offsets_ns, src->rd.noffsets * sizeof *src->offsets);
            failed |= !src->offsets;
        }
        src->rd.offsets_ns = src->offsets;
        src->traces = calloc(in->ntraces ? in->ntraces : 1, sizeof *src->traces);
        src->pairs = calloc(in->npairs ? in->npairs : 1, sizeof *src->pairs);
        failed |= !src->traces || !src->pairs;
        for (size_t i = 0; !failed && i < in->ntraces; i++, src->ntraces++)
            src->traces[i] = dup_or_null(in->traces[i], &failed);
        for (size_t i = 0; !failed && i < in->npairs; i++, src->npairs++)
            src->pairs[i] = dup_or_null(in->pairs[i], &failed);
        src->no_default_pairs = in->no_default_pairs;
    }
    if (failed) {
        st__sql_source_free(src);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    if (src->ntraces == 0) {
        st__sql_source_free(src);
        snprintf(err, errlen, "no trace to read");
        return -EINVAL;
    }
    for (size_t i = 0; i < src->ntraces; i++)
        if (!strcmp(src->traces[i], "-")) { /* a pipe reads once: the head read here, then each scan anew */
            st__sql_source_free(src);
            snprintf(err, errlen, "a trace from standard input ('-') cannot be read: each table scan reads the "
                                  "traces anew, from their start; give a file");
            return -EINVAL;
        }
    int ret = read_head(src, err, errlen);
    if (ret < 0) {
        st__sql_source_free(src);
        return ret;
    }
    *out = src;
    return 0;
}

void st__sql_source_free(struct st__sql_source *src)
{
    if (!src)
        return;
    for (size_t i = 0; i < src->ntraces; i++)
        free(src->traces[i]);
    free(src->traces);
    for (size_t i = 0; i < src->npairs; i++)
        free(src->pairs[i]);
    free(src->pairs);
    free(src->events);
    free(src->offsets);
    for (size_t i = 0; i < src->nev; i++) {
        for (unsigned k = 0; k < src->ev[i].nargs; k++) {
            free(src->ev[i].args[k].column);
            free(src->ev[i].args[k].decl);
            free(src->ev[i].args[k].type);
        }
        free(src->ev[i].name);
    }
    free(src->ev);
    st__sql_rows_free(&src->catalog);
    free(src);
}
