/*
 * Several traces read as one (st_reader_open_many()): one reader per
 * input, every one decoding with the same catalog, and a k-way merge of
 * their records by timestamp.
 *
 * The merge keeps each input's next record, and a binary min-heap of the
 * inputs that have one, keyed on (timestamp, input number). An input is in
 * the heap at most once, so its records keep their file order, and equal
 * timestamps come out in input order: the same output every time. The
 * input whose record was returned is read on only at the next call, since
 * the record points into that input's buffer.
 *
 * Memory: the inputs' read buffers and three arrays of n entries,
 * whatever the traces' size.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "growbuf.h"
#include "reader_internal.h"

#define BIG_BUFFER (1u << 20)     /* each input's read buffer up to BIG_INPUTS inputs ... */
#define BIG_INPUTS 8u
#define SMALL_BUFFER (256u << 10) /* ... and at most 8 MiB in all beyond, but never less than this */

struct st__many {
    struct st_reader **in;         /* one reader per input */
    const struct st_record **head; /* head[i]: input i's next record, while i is in the heap */
    unsigned *heap;                /* inputs with a record, earliest first */
    size_t n, nheap;
    bool started;                  /* every input has been read up to its first record */
    bool pending;                  /* cur's record was returned: read cur on before the next pick */
    size_t cur;                    /* the input of the last record returned, or of the error */
    bool have_origin;
    uint64_t origin;               /* the earliest first record of all inputs */
    bool filter_from, filter_to;   /* applied here: they count from the merged origin */
    int64_t from_ns, to_ns;
    uint64_t filtered;             /* records the time window skipped */
    struct st_catalog *own_cat;    /* the union of the inputs' declarations, or NULL */
};

/* --- the heap --------------------------------------------------------------- */

/* Whether input a's next record comes before input b's. */
static bool before(const struct st__many *m, unsigned a, unsigned b)
{
    uint64_t x = m->head[a]->timestamp_ns, y = m->head[b]->timestamp_ns;
    return x != y ? x < y : a < b;
}

static void swap_at(unsigned *h, size_t i, size_t j)
{
    unsigned t = h[i];
    h[i] = h[j];
    h[j] = t;
}

static void heap_push(struct st__many *m, unsigned input)
{
    size_t i = m->nheap++;
    m->heap[i] = input;
    while (i > 0 && before(m, m->heap[i], m->heap[(i - 1) / 2])) {
        swap_at(m->heap, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static unsigned heap_pop(struct st__many *m)
{
    unsigned top = m->heap[0];
    size_t i = 0;
    m->heap[0] = m->heap[--m->nheap];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, min = i;
        if (l < m->nheap && before(m, m->heap[l], m->heap[min]))
            min = l;
        if (r < m->nheap && before(m, m->heap[r], m->heap[min]))
            min = r;
        if (min == i)
            return top;
        swap_at(m->heap, i, min);
        i = min;
    }
}

/* --- reading ---------------------------------------------------------------- */

/* Reads input i's next record into the heap: 0 (read, or the input ended) or its error, copied to err. */
static int advance(struct st__many *m, size_t i, struct st_reader_error *err)
{
    int ret = st_reader_next(m->in[i], &m->head[i]);
    if (ret == 1) {
        heap_push(m, (unsigned)i);
        return 0;
    }
    if (ret < 0) {
        m->cur = i;
        memcpy(err, st_reader_error(m->in[i]), sizeof *err); /* both the library's own size */
    }
    return ret;
}

/* Reads every input up to its first record; the origin is the earliest. 0 or an input's error. */
static int start(struct st__many *m, struct st_reader_error *err)
{
    m->started = true;
    for (size_t i = 0; i < m->n; i++) {
        int ret = advance(m, i, err);
        if (ret < 0)
            return ret;
        uint64_t ts;
        if (st_reader_origin(m->in[i], &ts) == 0 && (!m->have_origin || ts < m->origin)) {
            m->have_origin = true;
            m->origin = ts;
        }
    }
    return 0;
}

static bool in_window(const struct st__many *m, uint64_t ts)
{
    int64_t rel = (int64_t)(ts - m->origin);
    return !(m->filter_from && rel < m->from_ns) && !(m->filter_to && rel > m->to_ns);
}

int st__many_next(struct st__many *m, const struct st_record **rec, struct st_reader_error *err)
{
    int ret;
    if (!m->started && (ret = start(m, err)) < 0)
        return ret;
    for (;;) {
        if (m->pending) {
            m->pending = false;
            if ((ret = advance(m, m->cur, err)) < 0)
                return ret;
        }
        if (m->nheap == 0)
            return 0;
        m->cur = heap_pop(m);
        m->pending = true;
        if (in_window(m, m->head[m->cur]->timestamp_ns)) {
            *rec = m->head[m->cur];
            return 1;
        }
        m->filtered++;
    }
}

/* --- accessors -------------------------------------------------------------- */

const struct st_reader *st__many_current(const struct st__many *m)
{
    return m->in[m->cur];
}

size_t st__many_count(const struct st__many *m)
{
    return m->n;
}

const struct st_reader *st__many_input(const struct st__many *m, size_t i)
{
    return i < m->n ? m->in[i] : NULL;
}

int st__many_origin(const struct st__many *m, uint64_t *ts)
{
    if (!m->have_origin)
        return -ENODATA;
    *ts = m->origin;
    return 0;
}

void st__many_counters(const struct st__many *m, struct st_reader_counters *c)
{
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    for (size_t i = 0; i < m->n; i++) {
        struct st_reader_counters one = {.struct_size = sizeof one};
        st_reader_get_counters(m->in[i], &one);
        c->records += one.records;
        c->mappings += one.mappings;
        c->events += one.events;
        c->dropped_records += one.dropped_records;
        c->dropped_events += one.dropped_events;
        c->filtered += one.filtered;
        c->bytes += one.bytes;
    }
    c->filtered += m->filtered;
}

void st__many_free(struct st__many *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        st_reader_close(m->in[i]);
    st_catalog_free(m->own_cat); /* after the inputs that decode with it */
    free(m->in);
    free(m->head);
    free(m->heap);
    free(m);
}

/* --- one file given twice ------------------------------------------------------ */

/* A file an input reads, as the kernel knows it. */
struct file_id {
    dev_t dev;
    ino_t ino;
    char *name;
};

/* Adds the file name (taken over) to ids, failing when it is one already there. 0 or -errno, in err. */
static int add_file(struct file_id *ids, size_t *n, char *name, struct st_reader_error *err)
{
    struct stat st;
    if (!name) {
        st__set_open_error(err, -ENOMEM, "%s", "out of memory");
        return -ENOMEM;
    }
    if (stat(name, &st) != 0) {
        int code = -errno;
        st__set_open_error(err, code, "%s: %s", name, strerror(errno));
        free(name);
        return code;
    }
    for (size_t i = 0; i < *n; i++) {
        if (ids[i].dev != st.st_dev || ids[i].ino != st.st_ino)
            continue;
        if (strcmp(ids[i].name, name))
            st__set_open_error(err, -EINVAL, "%s and %s are the same file: give each trace once", ids[i].name, name);
        else
            st__set_open_error(err, -EINVAL, "%s is given twice: give each trace once", name);
        free(name);
        return -EINVAL;
    }
    ids[(*n)++] = (struct file_id){st.st_dev, st.st_ino, name};
    return 0;
}

/* Adds the files of input path: itself, or with ST_READER_ROTATED its pieces. */
static int add_input_files(struct file_id **ids, size_t *n, size_t *cap, const char *path, bool rotated,
                           struct st_reader_error *err)
{
    uint64_t first = 0, count = 1;
    int ret;
    if (rotated && (ret = st_rotated_find(path, &first, &count)) < 0) {
        st__set_open_error(err, ret, "%s: no such file, nor any piece %s.N of it", path, path);
        return ret;
    }
    if (*n + count > *cap) {
        size_t c = 2 * (*n + count);
        struct file_id *more = realloc(*ids, c * sizeof *more);
        if (!more) {
            st__set_open_error(err, -ENOMEM, "%s", "out of memory");
            return -ENOMEM;
        }
        *ids = more;
        *cap = c;
    }
    for (uint64_t k = first; k - first < count; k++)
        if ((ret = add_file(*ids, n, rotated ? st__piece_name(path, k) : strdup(path), err)) < 0)
            return ret;
    return 0;
}

/* Refuses "-" and a file given twice (by device and inode, pieces included). */
static int check_distinct(const char *const *paths, size_t n, bool rotated, struct st_reader_error *err)
{
    struct file_id *ids = NULL;
    size_t nids = 0, cap = 0;
    int ret = 0;
    for (size_t i = 0; i < n && ret == 0; i++) {
        if (!strcmp(paths[i], "-")) {
            st__set_open_error(err, -EINVAL, "%s", "standard input cannot be one of several traces");
            ret = -EINVAL;
        } else {
            ret = add_input_files(&ids, &nids, &cap, paths[i], rotated, err);
        }
    }
    for (size_t i = 0; i < nids; i++)
        free(ids[i].name);
    free(ids);
    return ret;
}

/* --- the union of the inputs' declarations ------------------------------------------ */

static bool same_args(const struct st_event_info *a, const struct st_event_info *b)
{
    if (a->nargs != b->nargs)
        return false;
    for (unsigned i = 0; i < a->nargs; i++)
        if (strcmp(a->args[i].type, b->args[i].type) || strcmp(a->args[i].name, b->args[i].name))
            return false;
    return true;
}

/*
 * Appends to u the lines of text (input k's declarations, parsed as cats[k])
 * that name events no earlier input declares; an event an earlier input
 * declares with other arguments is -EBADMSG naming both files.
 */
static int add_decls(struct st__growbuf *u, struct st_catalog *const *cats, const char *const *paths, size_t k,
                     const struct st__growbuf *text, struct st_reader_error *err)
{
    const char *line = (const char *)text->data, *end = line + text->len;
    for (size_t e = 0; e < st_catalog_count(cats[k]) && line < end; e++) {
        const struct st_event_info *ev = st_catalog_event(cats[k], e);
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t len = nl ? (size_t)(nl - line) + 1 : (size_t)(end - line);
        size_t j = 0;
        const struct st_event_info *prev = NULL;
        while (j < k && !(cats[j] && (prev = st_catalog_find(cats[j], ev->name))))
            j++;
        if (prev && !same_args(prev, ev)) {
            st__set_open_error(err, -EBADMSG, "event '%s' is declared with other arguments in %s than in %s",
                               ev->name, paths[k], paths[j]);
            return -EBADMSG;
        }
        if (!prev)
            st__growbuf_put(u, line, len); /* one line per event, in the catalog's order */
        line += len;
    }
    return 0;
}

/* Input k's declarations: parsed into cats[k] (NULL when it has none and undeclared is fine), added to u. */
static int load_input_decls(struct st__growbuf *u, struct st_catalog **cats, const char *const *paths, size_t k,
                            const struct st_reader_options *o, struct st_reader_error *err)
{
    struct st__growbuf text = {0};
    size_t count;
    char msg[1024];
    int ret = st__trace_decls_text(paths[k], o, &text, &count, msg, sizeof msg);
    if (ret < 0) {
        st__set_open_error(err, ret, "%s", msg);
    } else if (count == 0 && !(o->flags & ST_READER_UNDECLARED)) {
        ret = -ENODATA;
        st__set_open_error(err, ret,
                           "%s carries no event declarations (written by QEMU, or by simpletrace before 0.3): "
                           "give the trace-events files",
                           paths[k]);
    } else if (count && (ret = st_catalog_load_buffer(&cats[k], paths[k], (const char *)text.data, text.len,
                                                      msg, sizeof msg)) < 0) {
        st__set_open_error(err, ret, "%s", msg);
    } else if (count) {
        ret = add_decls(u, cats, paths, k, &text, err);
    }
    st__growbuf_free(&text);
    return ret;
}

/* The catalog of every event the inputs declare, into *out. 0 or the error, in err. */
static int union_catalog(struct st_catalog **out, const char *const *paths, size_t n,
                         const struct st_reader_options *o, struct st_reader_error *err)
{
    struct st__growbuf u = {0};
    struct st_catalog **cats = calloc(n, sizeof *cats);
    char msg[1024];
    int ret = cats ? 0 : -ENOMEM;
    for (size_t k = 0; k < n && ret == 0; k++)
        ret = load_input_decls(&u, cats, paths, k, o, err);
    if (ret == 0 && u.failed)
        ret = -ENOMEM;
    if (ret == 0 && (ret = st_catalog_load_buffer(out, paths[0], u.data ? (const char *)u.data : "", u.len, msg,
                                                  sizeof msg)) < 0)
        st__set_open_error(err, ret, "%s", msg);
    if (ret == -ENOMEM)
        st__set_open_error(err, ret, "%s", "out of memory");
    for (size_t k = 0; cats && k < n; k++)
        st_catalog_free(cats[k]);
    free(cats);
    st__growbuf_free(&u);
    return ret;
}

/* --- opening ---------------------------------------------------------------- */

/* Each input's read buffer: the caller's size, else less as inputs grow in number. */
static size_t input_buffer(const struct st_reader_options *o, size_t n)
{
    if (o->buffer_size || n <= BIG_INPUTS)
        return o->buffer_size;
    size_t share = (size_t)BIG_BUFFER * BIG_INPUTS / n;
    return share > SMALL_BUFFER ? share : SMALL_BUFFER;
}

/* Opens the inputs into m->in, decoding with cat. 0 or the error, in err (naming the file). */
static int open_inputs(struct st__many *m, const char *const *paths, const struct st_catalog *cat,
                       const struct st_reader_options *o, struct st_reader_error *err)
{
    struct st_reader_options one = *o;
    one.filter_from = one.filter_to = false; /* the merge applies them, from the merged origin */
    one.buffer_size = input_buffer(o, m->n);
    for (size_t i = 0; i < m->n; i++) {
        struct st_reader_error e = {.struct_size = sizeof e};
        int ret = st_reader_open(&m->in[i], paths[i], cat, &one, &e);
        if (ret < 0) {
            st__set_open_error(err, ret, "%s: %s", paths[i], e.message);
            return ret;
        }
        st__reader_set_input(m->in[i], (unsigned)i);
    }
    return 0;
}

static struct st__many *merge_new(size_t n, const struct st_reader_options *o)
{
    struct st__many *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->n = n;
    m->in = calloc(n, sizeof *m->in);
    m->head = calloc(n, sizeof *m->head);
    m->heap = calloc(n, sizeof *m->heap);
    if (!m->in || !m->head || !m->heap) {
        st__many_free(m);
        return NULL;
    }
    m->filter_from = o->filter_from;
    m->from_ns = o->from_ns;
    m->filter_to = o->filter_to;
    m->to_ns = o->to_ns;
    return m;
}

/* The checks that need no file: inputs there, one pass over each (no follow mode). */
static int check_many_args(size_t n, const struct st_reader_options *o, struct st_reader_error *err)
{
    if (n == 0 || n > UINT32_MAX) {
        st__set_open_error(err, -EINVAL, "%s", "no traces to read");
        return -EINVAL;
    }
    if (o->flags & ST_READER_FOLLOW) {
        st__set_open_error(err, -EINVAL, "%s", "ST_READER_FOLLOW reads one trace, not several");
        return -EINVAL;
    }
    return 0;
}

ST_API int st_reader_open_many(struct st_reader **out, const char *const *paths, size_t n,
                               const struct st_catalog *cat, const struct st_reader_options *opts,
                               struct st_reader_error *err)
{
    struct st_reader_options o;
    struct st__many *m = NULL;
    int ret = st__open_args(out, opts, err, &o);
    if (ret < 0 || (ret = check_many_args(n, &o, err)) < 0 ||
        (ret = check_distinct(paths, n, (o.flags & ST_READER_ROTATED) != 0, err)) < 0)
        return ret;
    if (!(m = merge_new(n, &o))) {
        st__set_open_error(err, -ENOMEM, "%s", "out of memory");
        return -ENOMEM;
    }
    if (!cat && (ret = union_catalog(&m->own_cat, paths, n, &o, err)) < 0)
        goto fail;
    if (!cat)
        cat = m->own_cat;
    if ((ret = open_inputs(m, paths, cat, &o, err)) < 0)
        goto fail;
    if (!(*out = st__reader_wrap(paths[0], cat, m))) {
        ret = -ENOMEM;
        st__set_open_error(err, ret, "%s", "out of memory");
        goto fail;
    }
    return 0;
fail:
    st__many_free(m);
    return ret;
}
