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
#include <sys/stat.h>

#include "growbuf.h"
#include "reader_internal.h"
#include "trace_format.h"

/*
 * A growing catalog's views lie back to back in blocks, in the order the
 * declarations came, as a loaded catalog's do in one array: reading a
 * record touches its event's view, and scattered allocations cost a
 * tenth of the reading speed in cache misses. A block never moves.
 */
#define VIEW_BLOCK (16u << 10)

struct st__view_block {
    struct st__view_block *next;
    size_t used, size;
    _Alignas(max_align_t) unsigned char data[];
};

/* Bytes looked at for the signs of a binary file: a trace-events file is text throughout. */
#define SNIFF_BYTES 4096u

static const struct st_arg_info dropped_arg = {
    .name = "num_events_dropped",
    .type = "uint64_t",
    .kind = ST_VALUE_INTEGER,
    .is_signed = false,
    .size = 8,
};

static enum st_value_kind value_kind(enum st__arg_kind k)
{
    switch (k) {
    case ST_ARG_STRING: return ST_VALUE_STRING;
    case ST_ARG_POINTER: return ST_VALUE_POINTER;
    default: return ST_VALUE_INTEGER;
    }
}

/* Fills view e of declaration d, its args at a, for index. */
static void fill_view(struct st_event_info *e, struct st_arg_info *a, const struct st__event_decl *d, size_t index)
{
    e->name = d->name;
    e->name_len = strlen(d->name);
    e->index = (unsigned)index;
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

/* Fills the built-in Dropped_Event's view at index. */
static void fill_dropped(struct st_event_info *drop, size_t index)
{
    drop->name = ST_DROPPED_EVENT_NAME;
    drop->name_len = strlen(ST_DROPPED_EVENT_NAME);
    drop->index = (unsigned)index;
    drop->nargs = 1;
    drop->args = &dropped_arg;
    drop->format = "\"num_events_dropped %\" PRIu64";
}

/* Builds a fixed catalog's views over cat->list, back to back. 0 or -ENOMEM. */
static int build_views(struct st_catalog *cat)
{
    size_t n = cat->list.count, nargs = 0;
    for (size_t i = 0; i < n; i++)
        nargs += cat->list.events[i].nargs;
    cat->count = cat->cap = n;
    cat->events = calloc(n + 1, sizeof *cat->events);
    cat->args = calloc(nargs ? nargs : 1, sizeof *cat->args);
    cat->at = calloc(n + 1, sizeof *cat->at);
    if (!cat->events || !cat->args || !cat->at)
        return -ENOMEM;
    struct st_arg_info *a = cat->args;
    for (size_t i = 0; i <= n; i++)
        cat->at[i] = &cat->events[i];
    for (size_t i = 0; i < n; a += cat->list.events[i].nargs, i++)
        fill_view(&cat->events[i], a, &cat->list.events[i], i);
    fill_dropped(&cat->events[n], n);
    return 0;
}

static void put_error(char *errbuf, size_t errlen, const struct st__events_error *e)
{
    if (errbuf && errlen)
        st__events_error_format(e, errbuf, errlen);
}

/* Checks and indexes a parsed list, then builds the views. */
static int finish(struct st_catalog *cat, char *errbuf, size_t errlen)
{
    struct st__events_error e;
    memset(&e, 0, sizeof e);
    int ret = st__events_check(&cat->list, &e);
    if (ret < 0) {
        put_error(errbuf, errlen, &e);
        return ret;
    }
    ret = st__events_build_index(&cat->list);
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
        st__events_init(&cat->list);
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
    if (len >= 24 && st__fmt_get_u64(p) == ST_HEADER_EVENT_ID &&
        (st__fmt_get_u64(p + 8) == ST_HEADER_MAGIC || __builtin_bswap64(st__fmt_get_u64(p + 8)) == ST_HEADER_MAGIC)) {
        uint64_t v = st__fmt_get_u64(p + 16);
        if (st__fmt_get_u64(p + 8) != ST_HEADER_MAGIC)
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

/*
 * Reads the file at path whole into b. 0 or -errno (errbuf says which file);
 * a directory (dir='s directory of traces, given before its trace-events
 * files) is -EMEDIUMTYPE, as a trace given there is.
 */
static int read_file(const char *path, struct st__growbuf *b, char *errbuf, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    int ret = 0;
    if (!f) {
        ret = -errno;
    } else if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "%s is a directory, not a trace-events file", path);
        return -EMEDIUMTYPE;
    } else {
        for (;;) {
            uint8_t *p = st__growbuf_room(b, 65536);
            if (!p) {
                ret = -ENOMEM;
                break;
            }
            errno = 0;
            size_t got = fread(p, 1, 65536, f);
            st__growbuf_commit(b, got);
            if (got == 0) {
                ret = ferror(f) ? -(errno ? errno : EIO) : 0;
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
    struct st__events_error e;
    memset(&e, 0, sizeof e);
    /* Lenient: a format that does not fit its arguments is a warning (st_catalog_warning()), as
       simpletrace.py reads such files; only the generator refuses them. */
    ret = st__events_parse_buffer_flags(&cat->list, name, text, len, ST_EVENTS_LENIENT, &e);
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
    while (cat->blocks) {
        struct st__view_block *b = cat->blocks;
        cat->blocks = b->next;
        free(b);
    }
    st__events_free(&cat->list);
    free(cat->at);
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
    return index <= cat->count ? cat->at[index] : NULL;
}

const struct st_event_info *st__catalog_find_n(const struct st_catalog *cat, const char *name, size_t name_len)
{
    const struct st__event_decl *d = st__events_find(&cat->list, name, name_len);
    return d ? cat->at[(size_t)(d - cat->list.events) + cat->grows] : NULL;
}

ST_API const struct st_event_info *st_catalog_find(const struct st_catalog *cat, const char *name)
{
    const struct st_event_info *ev = st__catalog_find_n(cat, name, strlen(name));
    if (!ev && !strcmp(name, ST_DROPPED_EVENT_NAME))
        return st__catalog_dropped(cat);
    return ev;
}

ST_API const struct st_event_info *st_catalog_dropped(const struct st_catalog *cat)
{
    return st__catalog_dropped(cat);
}

/* The declarations that were read with a warning: a scan, as they are few and the list may grow. */
ST_API size_t st_catalog_warning_count(const struct st_catalog *cat)
{
    size_t n = 0;
    for (size_t i = 0; i < cat->list.count; i++)
        n += cat->list.events[i].fmt_warning != NULL;
    return n;
}

ST_API const char *st_catalog_warning(const struct st_catalog *cat, size_t i)
{
    for (size_t k = 0; k < cat->list.count; k++)
        if (cat->list.events[k].fmt_warning && i-- == 0)
            return cat->list.events[k].fmt_warning;
    return NULL;
}

ST_API int st_event_arg_index(const struct st_event_info *ev, const char *name)
{
    for (unsigned i = 0; i < ev->nargs; i++)
        if (!strcmp(ev->args[i].name, name))
            return (int)i;
    return -ENOENT;
}

/* The events module decided the encoding when it parsed the declaration; this only names it publicly. */
ST_API int st_catalog_arg_encoding(const struct st_catalog *cat, const struct st_event_info *ev, unsigned i)
{
    if (!ev || ev->index > cat->count || cat->at[ev->index] != ev || i >= ev->nargs)
        return -EINVAL;
    const struct st__event_decl *d = st__catalog_decl(cat, ev);
    if (!d) /* Dropped_Event(uint64_t num_events_dropped) */
        return ST_ARG_ENCODING_INTEGER;
    switch (d->args[i].enc) {
    case ST__ENC_BOOL: return ST_ARG_ENCODING_BOOL;
    case ST__ENC_CHAR: return ST_ARG_ENCODING_CHAR;
    case ST__ENC_POINTER: return ST_ARG_ENCODING_POINTER;
    case ST__ENC_STRING: return ST_ARG_ENCODING_STRING;
    case ST__ENC_INTEGER: break;
    }
    return ST_ARG_ENCODING_INTEGER;
}

/* --- a catalog that grows with a trace's declarations ---------------------------------- */

struct st_catalog *st__catalog_new_growing(void)
{
    struct st_catalog *cat = catalog_alloc();
    if (!cat || !(cat->at = malloc(64 * sizeof *cat->at))) {
        free(cat);
        return NULL;
    }
    cat->grows = true;
    cat->cap = 64;
    fill_dropped(&cat->dropped, 0);
    cat->at[0] = &cat->dropped;
    return cat;
}

bool st__same_args(const struct st_event_info *a, const struct st__event_decl *b)
{
    if (a->nargs != b->nargs)
        return false;
    for (unsigned i = 0; i < a->nargs; i++)
        if (strcmp(a->args[i].type, b->args[i].type) || strcmp(a->args[i].name, b->args[i].name))
            return false;
    return true;
}

/* n bytes for a view and its args, from the newest block or a new one; NULL when out of memory. */
static void *view_alloc(struct st_catalog *cat, size_t n)
{
    struct st__view_block *b = cat->blocks;
    n = (n + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
    if (!b || b->size - b->used < n) {
        size_t size = n > VIEW_BLOCK ? n : VIEW_BLOCK;
        if (!(b = malloc(sizeof *b + size)))
            return NULL;
        *b = (struct st__view_block){cat->blocks, 0, size};
        cat->blocks = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

/* The view of the list's last declaration, appended to cat at index count + 1. 0 or -ENOMEM. */
static int append_view(struct st_catalog *cat)
{
    const struct st__event_decl *d = &cat->list.events[cat->list.count - 1];
    if (cat->count + 2 > cat->cap) {
        struct st_event_info **at = realloc(cat->at, 2 * cat->cap * sizeof *at);
        if (!at)
            return -ENOMEM;
        cat->at = at;
        cat->cap *= 2;
    }
    struct st_event_info *e = view_alloc(cat, sizeof *e + d->nargs * sizeof(struct st_arg_info));
    if (!e)
        return -ENOMEM;
    memset(e, 0, sizeof *e);
    fill_view(e, (struct st_arg_info *)(e + 1), d, cat->count + 1);
    cat->at[++cat->count] = e;
    return 0;
}

int st__catalog_declare(struct st_catalog *cat, const char *file, const char *text, size_t len,
                        const struct st_event_info **ev, char *msg, size_t msglen)
{
    struct st__event_list one;
    struct st__events_error e;
    const struct st_event_info *prev;
    int ret;

    memset(&e, 0, sizeof e);
    st__events_init(&one);
    *ev = NULL;
    /* Parsed alone first: its name decides whether it is new, and a known one is only compared. */
    if ((ret = st__events_add_line(&one, file, 1, text, len, &e)) < 0) {
        snprintf(msg, msglen, "declaration '%.*s' does not parse: %s", (int)(len < 200 ? len : 200), text,
                 e.message);
        goto out;
    }
    const struct st__event_decl *d = &one.events[0];
    if ((prev = st__catalog_find_n(cat, d->name, strlen(d->name)))) {
        const struct st__event_decl *first = &cat->list.events[prev->index - 1];
        if (!st__same_args(prev, d)) {
            ret = -EBADMSG;
            snprintf(msg, msglen, "event '%s' is declared twice, differently: other arguments than in its first "
                     "declaration (by %s)", d->name, first->file);
        }
        *ev = ret ? NULL : prev;
        goto out;
    }
    if ((ret = st__events_add_line(&cat->list, file, (unsigned)cat->count + 1, text, len, &e)) == 0 &&
        (ret = append_view(cat)) < 0)
        st__events_pop(&cat->list);
    if (ret < 0)
        snprintf(msg, msglen, "%s", ret == -ENOMEM ? "out of memory for the trace's declarations" : e.message);
    else
        *ev = cat->at[cat->count];
out:
    st__events_free(&one);
    return ret;
}
