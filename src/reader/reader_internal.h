/*
 * Private parts of the reader library shared by its files. Nothing here is
 * exported from the shared library.
 */
#ifndef ST_READER_INTERNAL_H
#define ST_READER_INTERNAL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <simpletrace/reader.h>

#include "glob_match.h"
#include "events.h"

/* --- growing structures (reader.h, "Growing structures") -------------------- */

/* Bytes of type up to the end of field: its size in a release whose last field was field. */
#define ST__SIZE_THROUGH(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/*
 * The first layouts with struct_size: a caller's struct_size below these is
 * -EINVAL. Fixed for good: fields are only ever added after these.
 */
#define ST__READER_OPTIONS_V1 ST__SIZE_THROUGH(struct st_reader_options, to_ns)
#define ST__READER_ERROR_V1 ST__SIZE_THROUGH(struct st_reader_error, message)
#define ST__READER_COUNTERS_V1 ST__SIZE_THROUGH(struct st_reader_counters, bytes)
#define ST__READER_PIECE_V1 ST__SIZE_THROUGH(struct st_reader_piece, size)
#define ST__FORMATTER_OPTIONS_V1 ST__SIZE_THROUGH(struct st_formatter_options, out)
#define ST__ANALYZER_V1 ST__SIZE_THROUGH(struct st_analyzer, catchall)
#define ST__ANALYZER_HANDLER_V1 ST__SIZE_THROUGH(struct st_analyzer_handler, fn)
#define ST__TRACE_DESCRIPTION_V1 ST__SIZE_THROUGH(struct st_trace_description, anchor_real_ns)
#define ST__READER_SEEN_V1 ST__SIZE_THROUGH(struct st_reader_seen, tids)
#define ST__READER_COMPRESSION_V1 ST__SIZE_THROUGH(struct st_reader_compression, index_problem)

/* Adds what a skipped record shows (its timestamp, its pid field when it has one) to *s. */
static inline void st__seen_note(struct st_reader_seen *s, uint64_t ts, uint32_t tid, bool has_tid)
{
    if (!s->have_last || ts > s->last_ns)
        s->last_ns = ts;
    s->have_last = true;
    if (!has_tid || (s->ntids && s->tids[s->ntids - 1] == tid))
        return;
    for (size_t i = 0; i < s->ntids; i++)
        if (s->tids[i] == tid)
            return;
    if (s->ntids < ST_READER_SEEN_TIDS)
        s->tids[s->ntids++] = tid;
}

/* Adds b's skipped records to a. */
static inline void st__seen_add(struct st_reader_seen *a, const struct st_reader_seen *b)
{
    if (b->have_last)
        st__seen_note(a, b->last_ns, 0, false);
    for (size_t i = 0; i < b->ntids; i++)
        st__seen_note(a, b->last_ns, b->tids[i], true);
}

/* The struct_size a caller put first in the structure at p. */
static inline uint32_t st__struct_size(const void *p)
{
    uint32_t size;
    memcpy(&size, p, sizeof size);
    return size;
}

/*
 * Reads a caller's structure of size bytes at src into dst (ours, dst_size
 * bytes): the fields both know are copied, ours beyond size are zeroed,
 * theirs beyond dst_size ignored. dst's struct_size becomes dst_size.
 */
static inline void st__struct_in(void *dst, size_t dst_size, const void *src, size_t size)
{
    uint32_t own = (uint32_t)dst_size;

    memset(dst, 0, dst_size);
    memcpy(dst, src, size < dst_size ? size : dst_size);
    memcpy(dst, &own, sizeof own);
}

/*
 * Writes src (ours, src_size bytes) into the caller's structure dst, whose
 * struct_size it keeps: the fields both know are copied, theirs beyond
 * src_size zeroed (this library does not fill them in). 0, or -EINVAL when
 * dst's struct_size is below min (dst untouched).
 */
static inline int st__struct_out(void *dst, const void *src, size_t src_size, size_t min)
{
    size_t size = st__struct_size(dst), n = size < src_size ? size : src_size;

    if (size < min)
        return -EINVAL;
    memcpy((char *)dst + sizeof(uint32_t), (const char *)src + sizeof(uint32_t), n - sizeof(uint32_t));
    if (size > src_size)
        memset((char *)dst + src_size, 0, size - src_size);
    return 0;
}

/*
 * The catalog: the parsed list plus the public views of its events. A
 * catalog loaded from trace-events files is fixed: its views lie back to
 * back, Dropped_Event last (index count). One a reader makes from a
 * trace's declarations grows as they arrive (st__catalog_declare()): each
 * view is allocated alone so that none moves, Dropped_Event is index 0
 * and the k-th event declared is index k, so no index ever changes while
 * records and consumers hold them.
 */
struct st_catalog {
    struct st__event_list list;    /* owns every string the views point to */
    struct st_event_info **at;    /* at[index]: count + 1 entries, Dropped_Event included */
    size_t count;                 /* declared events */
    size_t cap;                   /* entries at has room for */
    bool grows;                   /* made from a trace's declarations (st__catalog_new_growing()) */
    struct st_event_info *events; /* a fixed catalog's views, back to back; NULL when it grows */
    struct st_arg_info *args;     /* the args of those views, back to back */
    struct st_event_info dropped; /* a growing catalog's Dropped_Event */
    struct st__view_block *blocks; /* a growing catalog's views, back to back in blocks (newest first) */
};

/* The built-in Dropped_Event of cat. */
static inline const struct st_event_info *st__catalog_dropped(const struct st_catalog *cat)
{
    return cat->at[cat->grows ? 0 : cat->count];
}

/* An empty catalog that grows with a trace's declarations, or NULL when out of memory. */
struct st_catalog *st__catalog_new_growing(void);

/*
 * Adds the declaration line text[0..len) that the trace file carries to a
 * growing catalog, and gives its event in *ev: a new one, or the event of
 * that name already there when its arguments are the same (types and
 * names; the first declaration's format is kept). 0, or with msg filled:
 * -EBADMSG (declared before with other arguments, by the file named),
 * -EINVAL (does not parse) or -ENOMEM.
 */
int st__catalog_declare(struct st_catalog *cat, const char *file, const char *text, size_t len,
                        const struct st_event_info **ev, char *msg, size_t msglen);

/* The declaration of cat's event ev, or NULL for Dropped_Event. */
static inline const struct st__event_decl *st__catalog_decl(const struct st_catalog *cat, const struct st_event_info *ev)
{
    size_t pos = ev->index - cat->grows; /* a growing catalog's events start at index 1 */
    return ev == st__catalog_dropped(cat) || pos >= cat->list.count ? NULL : &cat->list.events[pos];
}

/* Whether the catalog's event ev takes the arguments d declares: the same number, types and names. */
bool st__same_args(const struct st_event_info *ev, const struct st__event_decl *d);

/* The event of that name (name_len bytes) in cat, Dropped_Event excluded, or NULL. */
const struct st_event_info *st__catalog_find_n(const struct st_catalog *cat, const char *name, size_t name_len);

/*
 * An event-name filter compiled against a catalog: one byte per event index
 * (Dropped_Event included), 1 = selected. Returns a malloc'ed array (caller
 * frees) in *out, NULL when spec selects everything. 0, -EINVAL or -ENOMEM.
 */
int st__filter_compile(const struct st_catalog *cat, const char *spec, uint8_t **out);

/*
 * Extends the compiled filter *sel of *n entries to every event cat has
 * now (a growing catalog gained some). 0 or -ENOMEM (*sel unchanged).
 */
int st__filter_extend(const struct st_catalog *cat, const char *spec, uint8_t **sel, size_t *n);

/* --- what a trace says about itself (meta.c, format in meta_format.h) ---------- */

/* One description (meta_format.h): its text as in the file and what it says. */
struct st__desc {
    char *info;         /* the description's text as in the file, or NULL: none */
    size_t info_len;
    struct st_trace_description desc; /* parsed from info; strings point into values */
    char *values;       /* the description's values, unescaped, NUL-separated */
    bool met;           /* a process record named it (several processes in one file) */
};

struct st__meta {
    struct st__desc main;        /* the description record's */
    struct st__desc *procs;      /* a file of several processes: procs[k], process k's */
    uint32_t nprocs;             /* entries of procs */
    uint32_t nmet;               /* process numbers met in process records */
    const struct st__desc *cur;  /* the description of the records that follow, or NULL */
    char **decls;       /* decls[id]: the declaration of event ID id (NUL-terminated), or NULL */
    uint32_t ndecls;    /* entries of decls */
};

/* Keeps a copy of the description (the last one wins), parses it, makes it current. 0, -ENOMEM or -EBADMSG. */
int st__meta_set_info(struct st__meta *m, const char *text, size_t len);

/*
 * A process record for process k: its description when len > 0 (kept and
 * parsed, as st__meta_set_info()), and k's description current (none when
 * k was never described). 0, -ENOMEM, -EBADMSG or -E2BIG (k >= 2^16).
 */
int st__meta_set_proc(struct st__meta *m, uint32_t k, const char *text, size_t len);

/* Keeps a copy of event ID id's declaration (the last one wins). 0, 1 (the same text was there), -ENOMEM or -E2BIG (id >= 2^20). */
int st__meta_set_decl(struct st__meta *m, uint32_t id, const char *text, size_t len);

/* Frees what the setters kept. */
void st__meta_free(struct st__meta *m);

/* Forgets the descriptions (a new piece starts; its own follow), keeping the declarations. */
void st__meta_new_piece(struct st__meta *m);


/* --- conflicts between the catalog and a trace's declarations (conflict.c) ------ */

/* Most event names reported as conflicts per reader. */
#define ST__MAX_CONFLICTS 256

/* Who is told about conflicts, and the event names told already. */
struct st__conflicts {
    st_conflict_fn fn;                    /* NULL: nothing is compared */
    void *opaque;
    char *names[ST__MAX_CONFLICTS];       /* reported, owned */
    size_t n;
};

/*
 * Compares the declaration line [line, line + len) a trace carries with
 * cat's event of the same name, and reports a conflict (once per name).
 * Never fails: what cannot be compared is not reported.
 */
void st__conflict_check(struct st__conflicts *c, const struct st_catalog *cat, const char *line, size_t len);

/* Frees the names kept. */
void st__conflicts_free(struct st__conflicts *c);

/* Piece k of the rotated trace base (base itself for 0, else base.k), malloc'ed; NULL if out of memory. */
char *st__piece_name(const char *base, uint64_t k);

/* Whether a piece is there: anything but "no such file" counts, so opening it reports the real problem. */
bool st__piece_exists(const char *path);

/* --- opening (reader.c) --------------------------------------------------------------- */

/*
 * What every open function does first: *out = NULL, err's struct_size
 * checked (too small: -EINVAL, nothing written), the caller's options read
 * into *o (defaults for NULL; too small a struct_size, or offsets for other
 * than ntraces traces: -EINVAL in err).
 */
int st__open_args(struct st_reader **out, const struct st_reader_options *opts, size_t ntraces,
                  struct st_reader_error *err, struct st_reader_options *o);

/* Fills the caller's err (NULL is fine; its struct_size checked by st__open_args()). */
void st__set_open_error(struct st_reader_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* --- what a reader is: a source behind a small interface (source.c) ---------------------- */

/*
 * A reader, as the public functions see it, is one of two types, each
 * starting with this: one trace (struct st__trace, reader.c: a file, a
 * stream, memory, or a rotated trace's pieces) or several merged by
 * timestamp (struct st__many, many.c), whose inputs are traces. The
 * public functions (source.c) hand the work to the reader's kind; the
 * accessors that describe one file (name, version, description) ask the
 * kind for the trace they describe: itself, or the merge's current input.
 */
struct st_reader {
    const struct st__source_ops *ops;
};

struct st__trace;

/* What each kind of reader does for the public functions. */
struct st__source_ops {
    int (*next)(struct st_reader *r, const struct st_record **rec);
    const struct st_reader_error *(*error)(const struct st_reader *r);
    const struct st__trace *(*current)(const struct st_reader *r); /* the trace the accessors describe */
    size_t (*input_count)(const struct st_reader *r);
    const struct st_reader *(*input)(const struct st_reader *r, size_t i);
    int (*origin)(const struct st_reader *r, uint64_t *ts);
    void (*counters)(const struct st_reader *r, struct st_reader_counters *c); /* struct_size set by the kind */
    void (*seen)(const struct st_reader *r, struct st_reader_seen *s);
    const struct st_catalog *(*catalog)(const struct st_reader *r);
    size_t (*process_count)(const struct st_reader *r);
    void (*close)(struct st_reader *r);
};

extern const struct st__source_ops st__trace_ops, st__many_ops;

/* --- one trace (reader.c) ------------------------------------------------------------ */

/* The trace reader r is (r->ops == &st__trace_ops). */
static inline struct st__trace *st__trace_of(struct st_reader *r)
{
    return (struct st__trace *)r;
}

static inline const struct st__trace *st__trace_of_c(const struct st_reader *r)
{
    return (const struct st__trace *)r;
}

/* The public handle of trace t (NULL for NULL). */
static inline struct st_reader *pub(struct st__trace *t)
{
    return (struct st_reader *)t;
}

/* st_reader_next() of one trace: 1, 0 at its end, -EAGAIN (follow mode) or its sticky error. */
int st__trace_next(struct st__trace *t, const struct st_record **rec);

/*
 * st_reader_open() of one input of several read without a catalog: grow is
 * the catalog they all add their declarations to (not owned). 0 or as
 * st_reader_open().
 */
int st__trace_open_shared(struct st__trace **out, const char *path, struct st_catalog *grow,
                          const struct st_reader_options *o, struct st_reader_error *err);

/* Asks the CPU for t's state and its next record bytes ahead of st__trace_next() (a merge's next winner). */
void st__trace_prefetch(const struct st__trace *t);

/* Makes every record of t say it comes from input number input. */
void st__trace_set_input(struct st__trace *t, unsigned input);

/* st_catalog_load_trace(): only the declarations are read, every event record skipped (before the first record). */
void st__trace_scan_only(struct st__trace *t);

/* The growing catalog of a trace opened without one, handed to the caller (who frees it after closing t). */
struct st_catalog *st__trace_take_catalog(struct st__trace *t);

/* What the accessors of reader.h say of one trace: as st_reader_description(), _name(), _version(), _byte_swapped(). */
int st__trace_description(const struct st__trace *t, struct st_trace_description *d);
const char *st__trace_name(const struct st__trace *t);
int st__trace_version(const struct st__trace *t);
bool st__trace_swapped(const struct st__trace *t);

#endif /* ST_READER_INTERNAL_H */
