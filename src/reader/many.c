/*
 * Several traces read as one (st_reader_open_many()): a kind of reader of
 * its own (struct st__many, reader_internal.h) over one trace reader per
 * input, every one decoding with the same catalog (without one given: one
 * that all their declarations grow), and a k-way merge of their records
 * by timestamp. Inputs are read through st__trace_next() directly.
 *
 * The merge is a loser tree (a tournament) over the inputs, keyed on
 * (timestamp, input number): each inner node keeps the key that lost the
 * match played there, the root the winner's, the next record. After a
 * record is taken, only its input's path to the root is played again:
 * log2(n) matches, each against the one key its node holds, without
 * touching the n readers' records. When the input keeps winning, the earliest key on its
 * path bounds a run: its next records below it win without a match (an
 * input that traced a burst). An input holds one leaf, so its records keep
 * their file order, and equal timestamps come out in input order: the same
 * output every time. An input that ended gets a key after every record
 * (the padding leaves up to a power of two start so). The input whose
 * record was returned is read on only at the next call, since the record
 * points into that input's buffer; its state is fetched into the cache
 * meanwhile.
 *
 *            tree[1]            tree[0]: the winner's key (the earliest)
 *          /        \           tree[j], 0 < j < size: the key that lost at node j
 *      tree[2]     tree[3]      leaf of input i: node size + i, its parent
 *      /    \      /    \       (size + i) / 2
 *    in0   in1   in2   in3
 *
 * Memory: the inputs' read buffers and a few arrays of n entries,
 * whatever the traces' size.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reader_internal.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

#define BIG_BUFFER (1u << 20)     /* each input's read buffer up to BIG_INPUTS inputs ... */
#define BIG_INPUTS 8u
#define SMALL_BUFFER (256u << 10) /* ... and at most 8 MiB in all beyond, but never less than this */

/*
 * An input's place in the merge: its next record's timestamp, then its
 * rank: the input number i, or size + i once it ended (after every
 * record). The input is rank & (size - 1).
 */
struct key {
    uint64_t ts;
    uint64_t rank;
};

struct st__many {
    struct st_reader base;         /* first: what the public functions are handed (st__many_ops) */
    const struct st_catalog *cat;  /* every input's (the caller's, or own_cat) */
    struct st_reader_error err;    /* the merged reader's: an input's error, copied */
    struct st__trace **in;         /* one trace per input */
    const struct st_record **head; /* head[i]: input i's next record, while it has one */
    uint8_t *state;                /* per input: HAS_RECORD, WAITING (follow mode) or ENDED */
    struct key *tree;              /* the loser tree (above): the keys of the losers, tree[0] the winner's */
    size_t n, size;                /* inputs; leaves, a power of two >= n */
    size_t run_input;              /* the winner whose path replay() last kept, or SIZE_MAX ... */
    struct key run_bound;          /* ... and the earliest key on that path */
    bool started;                  /* every input has been read up to its first record */
    bool pending;                  /* cur's record was returned: read cur on before the next pick */
    size_t cur;                    /* the input of the last record returned, or of the error */
    bool have_origin;
    uint64_t origin;               /* the earliest first record of all inputs */
    bool window;                   /* filter_from or filter_to ... */
    bool filter_from, filter_to;   /* ... applied here: they count from the merged origin */
    int64_t from_ns, to_ns;
    uint64_t filtered;             /* records the time window skipped ... */
    struct st_reader_seen seen;    /* ... and what they were */
    struct st_catalog *own_cat;    /* without a catalog: the one every input's declarations grow, or NULL */
};

enum { HAS_RECORD, WAITING, ENDED };

/* --- the loser tree ------------------------------------------------------------ */

/* Whether key a comes before key b. */
static inline bool before(struct key a, struct key b)
{
    return a.ts < b.ts || (a.ts == b.ts && a.rank < b.rank);
}

/* The earliest key on the path of input i, its leaf excluded. */
static struct key path_min(const struct st__many *m, size_t i)
{
    struct key low = {UINT64_MAX, UINT64_MAX};
    for (size_t j = (m->size + i) / 2; j > 0; j /= 2)
        if (before(m->tree[j], low))
            low = m->tree[j];
    return low;
}

/*
 * Plays input i's new key k (its next record, or the end) from its leaf
 * up, i being the last winner: at each node the earlier key goes on, the
 * later one stays. The nodes hold the keys themselves, so a match touches
 * one node only. A plain branch: inputs that take turns in a pattern (a
 * merge's worst case) make one the predictor learns, which a branch-free
 * swap, with its chain of dependent instructions, loses to by half. When
 * i wins every match, the keys on its path are the runner-ups: the
 * earliest of them is the bound below which i's next keys win without a
 * match (a run of records from one input: update()).
 */
static inline struct key replay(struct st__many *m, size_t i, struct key k)
{
    struct key *t = m->tree;
    uint64_t ts = k.ts, rank = k.rank; /* the key going up, in two registers: a match is a compare and a branch */
    for (size_t j = (m->size + i) >> 1; j > 0; j >>= 1) {
        uint64_t ots = t[j].ts;
        if (ots < ts || (ots == ts && t[j].rank < rank)) { /* equal timestamps are rare: the branch costs nothing */
            uint64_t orank = t[j].rank;
            t[j].ts = ts;
            t[j].rank = rank;
            ts = ots;
            rank = orank;
        }
    }
    t[0].ts = ts;
    t[0].rank = rank;
    bool kept = rank == k.rank; /* ranks are unique: i's own key came out on top */
    m->run_input = kept ? i : SIZE_MAX;
    if (UNLIKELY(kept))
        m->run_bound = path_min(m, i);
    return (struct key){ts, rank};
}

/*
 * Input i's new key k, i being the last winner: it stays the winner while
 * k comes before the bound, else a replay. Returns the winner's key, in
 * registers: read back from tree[0] at once, a 16-byte load of what two
 * 8-byte stores just wrote, it would wait for them to reach the cache.
 */
static inline struct key update(struct st__many *m, size_t i, struct key k)
{
    if (i == m->run_input && before(k, m->run_bound)) {
        m->tree[0] = k;
        return k;
    }
    return replay(m, i, k);
}

/* Plays every match, bottom up, from the leaves' keys (leaf: 2 * size entries, leaf[size + i] input i's key). */
static void build(struct st__many *m, struct key *leaf)
{
    for (size_t j = m->size - 1; j > 0; j--) {
        struct key a = leaf[2 * j], b = leaf[2 * j + 1];
        bool a_wins = before(a, b);
        leaf[j] = a_wins ? a : b; /* the winner goes up; the loser stays at j */
        m->tree[j] = a_wins ? b : a;
    }
    m->tree[0] = leaf[1];
    m->run_input = SIZE_MAX;
}

/*
 * The key of input i: its record's; in follow mode, after every record while
 * it waits for its writer (a waiting input holds no other back: records are
 * merged as they arrive); after everything once it ended.
 */
static struct key key_of(const struct st__many *m, size_t i)
{
    if (i >= m->n || m->state[i] == ENDED)
        return (struct key){UINT64_MAX, m->size + i};
    if (m->state[i] == WAITING)
        return (struct key){UINT64_MAX, i};
    return (struct key){m->head[i]->timestamp_ns, i};
}

/* --- reading ---------------------------------------------------------------- */

/* Input i gave no record (st__trace_next() returned ret): its state, and its error copied to err. Returns ret. */
static int stopped(struct st__many *m, size_t i, int ret, struct st_reader_error *err)
{
    m->state[i] = ret == -EAGAIN ? WAITING : ENDED;
    if (ret < 0 && ret != -EAGAIN) {
        m->cur = i;
        memcpy(err, st_reader_error(pub(m->in[i])), sizeof *err); /* both the library's own size */
    }
    return ret;
}

/*
 * Reads input i's next record into its head and state: 1, 0 when the input
 * ended, -EAGAIN when it waits for its writer (follow mode), or its error,
 * copied to err.
 */
static inline int advance(struct st__many *m, size_t i, struct st_reader_error *err)
{
    int ret = st__trace_next(m->in[i], &m->head[i]);
    if (LIKELY(ret == 1)) {
        m->state[i] = HAS_RECORD;
        return 1;
    }
    return stopped(m, i, ret, err);
}

/*
 * Follow mode, every input still going waits: reads each on and plays
 * every match anew (the tree replays only its winner's path). 1 when one
 * has a record now, -EAGAIN when none has, or an input's error.
 */
static int wake_waiting(struct st__many *m, struct st_reader_error *err)
{
    struct key *leaf = malloc(2 * m->size * sizeof *leaf);
    int ret = -EAGAIN;
    if (!leaf) {
        st__set_open_error(err, -ENOMEM, "%s", "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->size; i++) {
        if (i < m->n && m->state[i] == WAITING) {
            int r = advance(m, i, err);
            if (r < 0 && r != -EAGAIN) {
                free(leaf);
                return r;
            }
            if (r == 1)
                ret = 1;
        }
        leaf[m->size + i] = key_of(m, i);
    }
    build(m, leaf);
    free(leaf);
    return ret;
}

/* An input's description, as far as a copy of the trace would repeat it. */
struct ident {
    uint64_t real, mono; /* clock anchors, taken when the file started, to the ns */
    uint32_t pid;
    const char *host;
    size_t input;
};

static int cmp_ident(const void *pa, const void *pb)
{
    const struct ident *a = pa, *b = pb;
    if (a->real != b->real)
        return a->real < b->real ? -1 : 1;
    if (a->mono != b->mono)
        return a->mono < b->mono ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    int c = strcmp(a->host, b->host);
    return c ? c : a->input < b->input ? -1 : 1;
}

/*
 * Refuses two inputs that describe one trace: the same process, host and
 * clock anchors (taken when the file started, to the ns) are a copy of one
 * file, which would count every record twice; pieces of one trace, a
 * recovered tail and snapshots each take their own anchors. 0, or -EINVAL
 * in err naming both.
 */
static int check_copies(struct st__many *m, struct st_reader_error *err)
{
    struct ident *ids = malloc(m->n * sizeof *ids);
    size_t k = 0;
    int ret = 0;
    if (!ids)
        return 0; /* a check that could not run refuses nothing */
    for (size_t i = 0; i < m->n; i++) {
        struct st_trace_description d = {.struct_size = sizeof d};
        if (st__trace_description(m->in[i], &d) == 0 && (d.anchor_mono_ns || d.anchor_real_ns))
            ids[k++] = (struct ident){d.anchor_real_ns, d.anchor_mono_ns, d.pid, d.host, i};
    }
    qsort(ids, k, sizeof *ids, cmp_ident);
    for (size_t j = 1; j < k && ret == 0; j++) {
        const struct ident *a = &ids[j - 1], *b = &ids[j];
        if (a->real != b->real || a->mono != b->mono || a->pid != b->pid || strcmp(a->host, b->host))
            continue;
        m->cur = b->input;
        ret = -EINVAL;
        st__set_open_error(err, ret, "%s and %s hold the same trace (process %lu, the same clock anchors): "
                           "a copy? give each trace once", st__trace_name(m->in[a->input]),
                           st__trace_name(m->in[b->input]), (unsigned long)a->pid);
    }
    free(ids);
    return ret;
}

/* Reads every input up to its first record; the origin is the earliest. 0 or an input's error. */
static int start(struct st__many *m, struct st_reader_error *err)
{
    struct key *leaf = malloc(2 * m->size * sizeof *leaf);
    int ret = 0;
    if (!leaf) {
        st__set_open_error(err, -ENOMEM, "%s", "out of memory");
        return -ENOMEM;
    }
    m->started = true;
    for (size_t i = 0; i < m->size; i++) {
        if ((ret = i < m->n ? advance(m, i, err) : 0) < 0 && ret != -EAGAIN) /* the padding leaves have ended */
            break;
        leaf[m->size + i] = key_of(m, i);
        uint64_t ts;
        if (ret == 1 && st_reader_origin(pub(m->in[i]), &ts) == 0 && (!m->have_origin || ts < m->origin)) {
            m->have_origin = true;
            m->origin = ts;
        }
    }
    if (ret >= 0 || ret == -EAGAIN)
        build(m, leaf);
    free(leaf);
    return ret < 0 && ret != -EAGAIN ? ret : check_copies(m, err);
}

static bool in_window(const struct st__many *m, uint64_t ts)
{
    int64_t rel = (int64_t)(ts - m->origin);
    return !(m->filter_from && rel < m->from_ns) && !(m->filter_to && rel > m->to_ns);
}

/*
 * The merged reader's next record after the earliest key is an end, a
 * wait or a timestamp of 2^64 - 1 (rare: many_next() keeps them off its
 * path): 1 with w the winner's key, 0 at the end, or a wake's error.
 */
static int next_rare(struct st__many *m, struct key *w)
{
    int ret;
    for (;;) {
        *w = m->tree[0];
        if (w->rank >= m->size)
            return 0; /* the earliest input has ended: all have */
        if (m->state[w->rank] != WAITING)
            return 1;
        if ((ret = wake_waiting(m, &m->err)) < 0) /* every input still going waits */
            return ret;
    }
}

/* st_reader_next() of the merged reader: the earliest input's next record; an input's error is the merge's. */
static int many_next(struct st__many *m, const struct st_record **rec)
{
    struct st_reader_error *err = &m->err;
    int ret;
    if (UNLIKELY(err->code))
        return err->code; /* sticky, as each input's */
    if (UNLIKELY(!m->started) && (ret = start(m, err)) < 0)
        return ret;
    for (;;) {
        struct key w;
        if (m->pending) {
            size_t i = m->cur;
            m->pending = false;
            if (UNLIKELY((ret = advance(m, i, err)) != 1)) {
                if (ret < 0 && ret != -EAGAIN)
                    return ret;
                w = update(m, i, key_of(m, i));
            } else {
                w = update(m, i, (struct key){m->head[i]->timestamp_ns, i});
            }
        } else {
            w = m->tree[0];
        }
        if (UNLIKELY(w.ts == UINT64_MAX) && (ret = next_rare(m, &w)) <= 0)
            return ret;
        m->cur = w.rank;
        m->pending = true;
        st__trace_prefetch(m->in[m->cur]); /* read on at the next call, while the caller uses the record */
        if (LIKELY(!m->window) || in_window(m, w.ts)) {
            *rec = m->head[m->cur];
            return 1;
        }
        m->filtered++;
        st__seen_note(&m->seen, w.ts, m->head[m->cur]->pid, m->head[m->cur]->has_pid);
    }
}

/* --- the public interface of a merged reader (st__source_ops) --------------------------- */

static struct st__many *many_of(struct st_reader *r)
{
    return (struct st__many *)r;
}

static const struct st__many *many_of_c(const struct st_reader *r)
{
    return (const struct st__many *)r;
}

static int many_next_public(struct st_reader *r, const struct st_record **rec)
{
    return many_next(many_of(r), rec);
}

static const struct st_reader_error *many_error(const struct st_reader *r)
{
    return &many_of_c(r)->err;
}

/* The input of the last record returned (or of the error); the first before any. */
static const struct st__trace *many_current(const struct st_reader *r)
{
    const struct st__many *m = many_of_c(r);
    return m->in[m->cur];
}

static size_t many_input_count(const struct st_reader *r)
{
    return many_of_c(r)->n;
}

static const struct st_reader *many_input(const struct st_reader *r, size_t i)
{
    const struct st__many *m = many_of_c(r);
    return i < m->n ? pub(m->in[i]) : NULL;
}

static int many_origin(const struct st_reader *r, uint64_t *ts)
{
    const struct st__many *m = many_of_c(r);
    if (!m->have_origin)
        return -ENODATA;
    *ts = m->origin;
    return 0;
}

/* The inputs' counters summed, and the merge's own filtered records. */
static void many_counters(const struct st_reader *r, struct st_reader_counters *c)
{
    const struct st__many *m = many_of_c(r);
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    for (size_t i = 0; i < m->n; i++) {
        struct st_reader_counters one = {.struct_size = sizeof one};
        st_reader_get_counters(pub(m->in[i]), &one);
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

/* What the inputs' filters and the merge's time window skipped. */
static void many_seen(const struct st_reader *r, struct st_reader_seen *s)
{
    const struct st__many *m = many_of_c(r);
    *s = m->seen;
    for (size_t i = 0; i < m->n; i++) {
        struct st_reader_seen one = {.struct_size = sizeof one};
        st_reader_get_seen(pub(m->in[i]), &one);
        st__seen_add(s, &one);
    }
}

static const struct st_catalog *many_catalog(const struct st_reader *r)
{
    return many_of_c(r)->cat;
}

static size_t many_process_count(const struct st_reader *r)
{
    const struct st__many *m = many_of_c(r);
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++)
        n += st_reader_process_count(pub(m->in[i]));
    return n;
}

/* Closes every input and frees m (NULL is fine). */
static void many_free(struct st__many *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        st_reader_close(pub(m->in[i]));
    st_catalog_free(m->own_cat); /* after the inputs that decode with it */
    free(m->in);
    free(m->head);
    free(m->state);
    free(m->tree);
    free(m);
}

static void many_close(struct st_reader *r)
{
    many_free(many_of(r));
}

const struct st__source_ops st__many_ops = {
    .next = many_next_public,
    .error = many_error,
    .current = many_current,
    .input_count = many_input_count,
    .input = many_input,
    .origin = many_origin,
    .counters = many_counters,
    .seen = many_seen,
    .catalog = many_catalog,
    .process_count = many_process_count,
    .close = many_close,
};

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

/* --- opening ---------------------------------------------------------------- */

/* Each input's read buffer: the caller's size, else less as inputs grow in number. */
static size_t input_buffer(const struct st_reader_options *o, size_t n)
{
    if (o->buffer_size || n <= BIG_INPUTS)
        return o->buffer_size;
    size_t share = (size_t)BIG_BUFFER * BIG_INPUTS / n;
    return share > SMALL_BUFFER ? share : SMALL_BUFFER;
}

/*
 * Opens the inputs into m->in, decoding with cat, or (cat NULL) with
 * m->own_cat, which grows with every input's declarations. 0 or the
 * error, in err (naming the file).
 */
static int open_inputs(struct st__many *m, const char *const *paths, const struct st_catalog *cat,
                       const struct st_reader_options *o, struct st_reader_error *err)
{
    struct st_reader_options one = *o;
    one.filter_from = one.filter_to = false; /* the merge applies them, from the merged origin */
    one.buffer_size = input_buffer(o, m->n);
    for (size_t i = 0; i < m->n; i++) {
        struct st_reader_error e = {.struct_size = sizeof e};
        one.offsets_ns = o->offsets_ns ? &o->offsets_ns[i] : NULL;
        one.noffsets = o->offsets_ns ? 1 : 0;
        struct st_reader *given = NULL;
        int ret = cat ? st_reader_open(&given, paths[i], cat, &one, &e)
                      : st__trace_open_shared(&m->in[i], paths[i], m->own_cat, &one, &e);
        if (given)
            m->in[i] = st__trace_of(given);
        if (ret < 0) {
            st__set_open_error(err, ret, "%s: %s", paths[i], e.message);
            return ret;
        }
        st__trace_set_input(m->in[i], (unsigned)i);
    }
    return 0;
}

static struct st__many *merge_new(size_t n, const struct st_reader_options *o)
{
    struct st__many *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->base.ops = &st__many_ops;
    m->err.struct_size = sizeof m->err;
    m->n = n;
    for (m->size = 1; m->size < n; m->size *= 2)
        ;
    m->in = calloc(n, sizeof *m->in);
    m->head = calloc(n, sizeof *m->head);
    m->state = calloc(n, sizeof *m->state);
    m->tree = calloc(m->size, sizeof *m->tree);
    if (!m->in || !m->head || !m->state || !m->tree) {
        many_free(m);
        return NULL;
    }
    m->filter_from = o->filter_from;
    m->from_ns = o->from_ns;
    m->filter_to = o->filter_to;
    m->to_ns = o->to_ns;
    m->window = m->filter_from || m->filter_to;
    return m;
}

/* The checks that need no file: inputs there. */
static int check_many_args(size_t n, const struct st_reader_options *o, struct st_reader_error *err)
{
    if (n == 0 || n > UINT32_MAX) {
        st__set_open_error(err, -EINVAL, "%s", "no traces to read");
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
    int ret = st__open_args(out, opts, n, err, &o);
    if (ret < 0 || (ret = check_many_args(n, &o, err)) < 0 ||
        (ret = check_distinct(paths, n, (o.flags & ST_READER_ROTATED) != 0, err)) < 0)
        return ret;
    if (!(m = merge_new(n, &o))) {
        st__set_open_error(err, -ENOMEM, "%s", "out of memory");
        return -ENOMEM;
    }
    if (!cat && !(m->own_cat = st__catalog_new_growing())) {
        st__set_open_error(err, -ENOMEM, "%s", "out of memory");
        ret = -ENOMEM;
        goto fail;
    }
    if ((ret = open_inputs(m, paths, cat, &o, err)) < 0)
        goto fail;
    m->cat = cat ? cat : m->own_cat;
    *out = &m->base;
    return 0;
fail:
    many_free(m);
    return ret;
}
