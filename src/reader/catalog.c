/*
 * The event catalogue: trace-events files parsed by the events module,
 * with the read-only views (st_event_info) that records point to. The
 * built-in Dropped_Event(uint64_t num_events_dropped) sits after the
 * declared events, at index count, as simpletrace.py declares it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "growbuf.h"
#include "reader_internal.h"
#include "trace_format.h"

/* Bytes looked at for the signs of a binary file: a trace-events file is text throughout. */
#define SNIFF_BYTES 4096u

static const struct st_arg_info dropped_arg = {
    .name = "num_events_dropped",
    .type = "uint64_t",
    .kind = ST_VALUE_INTEGER,
    .is_signed = false,
    .size = 8,
};

static enum st_value_kind value_kind(enum st_arg_kind k)
{
    switch (k) {
    case ST_ARG_STRING: return ST_VALUE_STRING;
    case ST_ARG_POINTER: return ST_VALUE_POINTER;
    default: return ST_VALUE_INTEGER;
    }
}

/* Builds the views over cat->list. 0 or -ENOMEM. */
static int build_views(struct st_catalog *cat)
{
    size_t n = cat->list.count, nargs = 0;
    for (size_t i = 0; i < n; i++)
        nargs += cat->list.events[i].nargs;
    cat->count = n;
    cat->events = calloc(n + 1, sizeof *cat->events);
    cat->args = calloc(nargs ? nargs : 1, sizeof *cat->args);
    if (!cat->events || !cat->args)
        return -ENOMEM;
    struct st_arg_info *a = cat->args;
    for (size_t i = 0; i < n; i++) {
        const struct st_event_decl *d = &cat->list.events[i];
        struct st_event_info *e = &cat->events[i];
        e->name = d->name;
        e->name_len = strlen(d->name);
        e->index = (unsigned)i;
        e->nargs = d->nargs;
        e->args = a;
        e->disabled = d->disabled;
        e->format = d->fmt;
        for (unsigned j = 0; j < d->nargs; j++, a++) {
            a->name = d->args[j].name;
            a->type = d->args[j].type;
            a->kind = value_kind(d->args[j].kind);
            a->is_signed = d->args[j].is_signed;
            a->size = d->args[j].size;
        }
    }
    struct st_event_info *drop = &cat->events[n];
    drop->name = ST_DROPPED_EVENT_NAME;
    drop->name_len = strlen(ST_DROPPED_EVENT_NAME);
    drop->index = (unsigned)n;
    drop->nargs = 1;
    drop->args = &dropped_arg;
    drop->format = "\"num_events_dropped %\" PRIu64";
    return 0;
}

static void put_error(char *errbuf, size_t errlen, const struct st_events_error *e)
{
    if (errbuf && errlen)
        st_events_error_format(e, errbuf, errlen);
}

/* Checks and indexes a parsed list, then builds the views. */
static int finish(struct st_catalog *cat, char *errbuf, size_t errlen)
{
    struct st_events_error e;
    memset(&e, 0, sizeof e);
    int ret = st_events_check(&cat->list, &e);
    if (ret < 0) {
        put_error(errbuf, errlen, &e);
        return ret;
    }
    ret = st_events_build_index(&cat->list);
    if (ret == 0)
        ret = build_views(cat);
    if (ret < 0 && errbuf && errlen)
        snprintf(errbuf, errlen, "%s", strerror(-ret));
    return ret;
}

static struct st_catalog *catalog_alloc(void)
{
    struct st_catalog *cat = calloc(1, sizeof *cat);
    if (cat)
        st_events_init(&cat->list);
    return cat;
}

/*
 * A trace (or any binary file) given where a trace-events file belongs, the
 * common mistake of swapped arguments, gets its own message instead of a
 * syntax error on line 1: -EMEDIUMTYPE with "NAME is a trace file, not a
 * trace-events file" (or "is not a text file"). 0 when text may be it.
 */
static int refuse_binary(const char *name, const uint8_t *p, size_t len, char *errbuf, size_t errlen)
{
    if (len >= 24 && st_fmt_get_u64(p) == ST_HEADER_EVENT_ID &&
        (st_fmt_get_u64(p + 8) == ST_HEADER_MAGIC || __builtin_bswap64(st_fmt_get_u64(p + 8)) == ST_HEADER_MAGIC)) {
        uint64_t v = st_fmt_get_u64(p + 16);
        if (st_fmt_get_u64(p + 8) != ST_HEADER_MAGIC)
            v = __builtin_bswap64(v);
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "%s is a trace file (format version %llu), not a trace-events file", name,
                     (unsigned long long)v);
        return -EMEDIUMTYPE;
    }
    for (size_t i = 0; i < len && i < SNIFF_BYTES; i++) {
        /* Text has no NUL and no control bytes but blanks; any byte >= 0x80 may be UTF-8. */
        if (p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r' && p[i] != '\f' && p[i] != '\v') {
            if (errbuf && errlen)
                snprintf(errbuf, errlen, "%s is not a text file (byte offset %zu holds 0x%02x), not a trace-events file",
                         name, i, p[i]);
            return -EMEDIUMTYPE;
        }
    }
    return 0;
}

/* Reads the file at path whole into b. 0 or -errno (errbuf says which file). */
static int read_file(const char *path, struct st__growbuf *b, char *errbuf, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    int ret = 0;
    if (!f) {
        ret = -errno;
    } else {
        for (;;) {
            uint8_t *p = st__growbuf_room(b, 65536);
            if (!p) {
                ret = -ENOMEM;
                break;
            }
            size_t got = fread(p, 1, 65536, f);
            st__growbuf_commit(b, got);
            if (got == 0) {
                ret = ferror(f) ? -EIO : 0;
                break;
            }
            /* A binary file (a trace given here) is refused on its first bytes: never read it all. */
            if (b->len == got && refuse_binary(path, b->data, b->len, NULL, 0) < 0)
                break;
        }
        fclose(f);
    }
    if (ret < 0 && errbuf && errlen)
        snprintf(errbuf, errlen, "%s: %s", path, strerror(-ret));
    return ret;
}

/* Parses one trace-events text into cat's list. 0, -EMEDIUMTYPE (binary), -EINVAL (syntax) or -ENOMEM. */
static int parse_text(struct st_catalog *cat, const char *name, const char *text, size_t len, char *errbuf,
                      size_t errlen)
{
    int ret = refuse_binary(name, (const uint8_t *)text, len, errbuf, errlen);
    if (ret < 0)
        return ret;
    struct st_events_error e;
    memset(&e, 0, sizeof e);
    ret = st_events_parse_buffer(&cat->list, name, text, len, &e);
    if (ret < 0)
        put_error(errbuf, errlen, &e);
    return ret;
}

ST_API int st_catalog_load(struct st_catalog **out, const char *const *paths, size_t npaths,
                           char *errbuf, size_t errlen)
{
    *out = NULL;
    struct st_catalog *cat = catalog_alloc();
    if (!cat)
        return -ENOMEM;
    int ret = 0;
    for (size_t i = 0; i < npaths && ret == 0; i++) {
        struct st__growbuf b = {0};
        /* Read whole, not sniffed and reopened: a pipe (<(cat ...)) can be read only once. */
        ret = read_file(paths[i], &b, errbuf, errlen);
        if (ret == 0)
            ret = parse_text(cat, paths[i], b.data ? (const char *)b.data : "", b.len, errbuf, errlen);
        st__growbuf_free(&b);
    }
    if (ret == 0)
        ret = finish(cat, errbuf, errlen);
    if (ret < 0) {
        st_catalog_free(cat);
        return ret;
    }
    *out = cat;
    return 0;
}

ST_API int st_catalog_load_buffer(struct st_catalog **out, const char *name, const char *text, size_t len,
                                  char *errbuf, size_t errlen)
{
    *out = NULL;
    struct st_catalog *cat = catalog_alloc();
    if (!cat)
        return -ENOMEM;
    int ret = parse_text(cat, name ? name : "<input>", text, len, errbuf, errlen);
    if (ret == 0)
        ret = finish(cat, errbuf, errlen);
    if (ret < 0) {
        st_catalog_free(cat);
        return ret;
    }
    *out = cat;
    return 0;
}

ST_API void st_catalog_free(struct st_catalog *cat)
{
    if (!cat)
        return;
    st_events_free(&cat->list);
    free(cat->events);
    free(cat->args);
    free(cat);
}

ST_API size_t st_catalog_count(const struct st_catalog *cat)
{
    return cat->count;
}

ST_API const struct st_event_info *st_catalog_event(const struct st_catalog *cat, size_t index)
{
    return index <= cat->count ? &cat->events[index] : NULL;
}

ST_API const struct st_event_info *st_catalog_find(const struct st_catalog *cat, const char *name)
{
    size_t len = strlen(name);
    const struct st_event_decl *d = st_events_find(&cat->list, name, len);
    if (d && d->index < cat->count)
        return &cat->events[d->index];
    if (!strcmp(name, ST_DROPPED_EVENT_NAME))
        return &cat->events[cat->count];
    return NULL;
}

ST_API int st_event_arg_index(const struct st_event_info *ev, const char *name)
{
    for (unsigned i = 0; i < ev->nargs; i++)
        if (!strcmp(ev->args[i].name, name))
            return (int)i;
    return -ENOENT;
}

/* --- the declarations a trace carries ------------------------------------------------- */

/* The name of a declaration line: after "disable " if any, up to '(' (length in *len). */
static const char *decl_name(const char *line, size_t *len)
{
    if (strncmp(line, "disable ", 8) == 0)
        line += 8;
    *len = strcspn(line, "(");
    return line;
}

/* One kept declaration: its event ID and name, for finding the names declared twice. */
struct decl_ref {
    uint32_t id;
    const char *name;
    size_t len;
};

/* By name, then by ID. */
static int cmp_decl_ref(const void *pa, const void *pb)
{
    const struct decl_ref *a = pa, *b = pb;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->name, b->name, n);

    if (c || a->len != b->len)
        return c ? c : a->len < b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/*
 * The trace-events text of the kept declarations, one line each, in ID
 * order. A name declared under several IDs (a group registered again) is
 * kept once when the declarations are the same; different ones are
 * -EINVAL naming the event (one catalog entry cannot decode both IDs'
 * records). Sorting finds them in n log n: a damaged trace with many
 * declarations must not make this quadratic. 0, -EINVAL or -ENOMEM.
 */
static int decls_text(const struct st__meta *m, const char *path, struct st__growbuf *text, size_t *count,
                      char *errbuf, size_t errlen)
{
    struct decl_ref *refs = malloc((m->ndecls ? m->ndecls : 1) * sizeof *refs);
    bool *skip = calloc(m->ndecls ? m->ndecls : 1, sizeof *skip);
    size_t n = 0;

    *count = 0;
    if (!refs || !skip) {
        free(refs);
        free(skip);
        return -ENOMEM;
    }
    for (uint32_t id = 0; id < m->ndecls; id++)
        if (m->decls[id]) {
            refs[n].id = id;
            refs[n].name = decl_name(m->decls[id], &refs[n].len);
            n++;
        }
    qsort(refs, n, sizeof *refs, cmp_decl_ref);
    for (size_t k = 0; k + 1 < n; k++) {
        const struct decl_ref *a = &refs[k], *b = &refs[k + 1];
        if (a->len != b->len || memcmp(a->name, b->name, a->len))
            continue;
        if (strcmp(m->decls[a->id], m->decls[b->id])) {
            if (errbuf)
                snprintf(errbuf, errlen, "%s: event '%.*s' is declared twice, differently (IDs %u and %u): "
                         "give the trace-events files to read it", path, (int)(a->len < 200 ? a->len : 200),
                         a->name, a->id, b->id);
            free(refs);
            free(skip);
            return -EINVAL;
        }
        skip[a->id] = true;
    }
    for (uint32_t id = 0; id < m->ndecls; id++) {
        if (!m->decls[id] || skip[id])
            continue;
        st__growbuf_puts(text, m->decls[id]);
        st__growbuf_puts(text, "\n");
        (*count)++;
    }
    free(refs);
    free(skip);
    return text->failed ? -ENOMEM : 0;
}

/* Reads every record of the trace, keeping the declarations only. 0 or the reader's error (in errbuf). */
static int scan_decls(struct st_reader *r, char *errbuf, size_t errlen)
{
    const struct st_record *rec;
    int ret;

    st__reader_meta(r)->scan_only = true;
    while ((ret = st_reader_next(r, &rec)) > 0)
        ;
    if (ret < 0 && errbuf)
        st_reader_format_error(r, errbuf, errlen);
    return ret;
}

int st__trace_decls_text(const char *path, const struct st_reader_options *opts, struct st__growbuf *text,
                         size_t *count, char *errbuf, size_t errlen)
{
    struct st_reader_error err = {.struct_size = sizeof err};
    struct st_reader_options o = {.struct_size = sizeof o};
    struct st_catalog *none = NULL;
    struct st_reader *r = NULL;
    int ret;

    *count = 0;
    if (opts)
        st__struct_in(&o, sizeof o, opts, st__struct_size(opts));
    o.events = NULL; /* the filters would need the catalog being made */
    o.conflict = NULL; /* nothing to compare with: the catalog is being made from them */
    o.filter_tid = o.filter_pid = o.filter_from = o.filter_to = false;
    o.flags &= ~(unsigned)(ST_READER_FOLLOW | ST_READER_ALIGN_REALTIME); /* no record is delivered */
    o.offsets_ns = NULL;
    o.noffsets = 0;
    if ((ret = st_catalog_load_buffer(&none, path, "", 0, NULL, 0)) < 0)
        return ret;
    ret = st_reader_open(&r, path, none, &o, &err);
    if (ret < 0) {
        if (errbuf)
            snprintf(errbuf, errlen, "%s: %s", path, err.message);
    } else if ((ret = scan_decls(r, errbuf, errlen)) == 0) {
        ret = decls_text(st__reader_meta(r), path, text, count, errbuf, errlen);
    }
    st_reader_close(r);
    st_catalog_free(none);
    return ret;
}

ST_API int st_catalog_load_trace(struct st_catalog **out, const char *path, const struct st_reader_options *opts,
                                 char *errbuf, size_t errlen)
{
    struct st__growbuf text = {0};
    size_t count = 0;
    int ret;

    *out = NULL;
    ret = st__trace_decls_text(path, opts, &text, &count, errbuf, errlen);
    if (ret == 0 && count == 0) {
        ret = -ENODATA;
        if (errbuf)
            snprintf(errbuf, errlen,
                     "%s carries no event declarations (written by QEMU, or by simpletrace before 0.2): "
                     "give its trace-events files",
                     path);
    } else if (ret == 0) {
        ret = st_catalog_load_buffer(out, path, (const char *)text.data, text.len, errbuf, errlen);
    }
    st__growbuf_free(&text);
    return ret;
}
