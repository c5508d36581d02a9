/*
 * Recover (recover.h): one process's ring files into one v4 trace.
 *
 * Clock: raw timestamps of one process convert along the line through its
 * start-up anchor a (the same in every ring file) and the latest anchor b
 * of any of its files, as one st__clock_conv with those two knots. When b
 * is under 1 ms after a (the process died young) that line is too short to
 * trust, and the rate is this machine's, measured now (recover reads files
 * of the machine that wrote them).
 *
 * Output: header; the process's description (the names file's, else
 * the pid and clock the ring headers give); the names file's mappings by
 * ID, each followed by its declaration; an st_unknown_ID
 * mapping for each ID a recovered record uses that the names file lacks
 * (registered just before the death, or a full disk cut the names file);
 * the records of every thread, [tail, end) of each ring, merged by time
 * (merge.h: runs copied straight from the rings, timestamps converted and
 * kept non-decreasing per thread); then one dropped record per thread with
 * drops not yet reported, stamped with its last record's time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "growbuf.h"
#include "merge.h"
#include "meta_format.h"
#include "recover_internal.h"
#include "trace_format.h"

/* Anchors closer than this give too coarse a rate. */
#define MIN_ANCHOR_SPAN_NS UINT64_C(1000000)
/* How long the default measurement of this machine's rate takes. */
#define MEASURE_NS 20000000L
/* Output is handed to the write hook in pieces of about this size. */
#define OUT_CHUNK ((size_t)256 << 10)

/* --- choosing the process ------------------------------------------------- */

/*
 * DIR may hold the ring files of several crashes (nothing removed them
 * before recover did): pick one process, and say which and why, so that
 * `--trace crash2.trace` never silently recovers crash 1.
 */

/* One process of the ring files. */
struct proc {
    uint32_t pid;
    bool born;         /* one of its rings has a header */
    bool names_trace;  /* one of its ring headers names the trace file given */
    uint64_t start_ns; /* its start-up anchor: the latest started is the latest crash */
};

/* The processes of r's rings, in the order their first ring comes; *n of them (at most r->n). */
static struct proc *procs_of(const struct st__recover *r, const struct st__recover_trace *trace, size_t *n)
{
    struct proc *v = calloc(r->n ? r->n : 1, sizeof *v);

    *n = 0;
    for (size_t i = 0; v && i < r->n; i++) {
        const struct st__rv_ring *g = &r->rings[i];
        size_t k = 0;
        while (k < *n && v[k].pid != g->h.pid)
            k++;
        if (k == *n)
            v[(*n)++] = (struct proc){.pid = g->h.pid};
        if (g->unborn)
            continue;
        if (!v[k].born || g->h.a_ns > v[k].start_ns)
            v[k].start_ns = g->h.a_ns;
        v[k].born = true;
        v[k].names_trace |= trace && trace->ino != 0 && g->h.file_dev == trace->dev && g->h.file_ino == trace->ino;
    }
    return v;
}

/*
 * The latest started of the processes of v[0..n) with a header (by_trace:
 * of those naming the trace file); ties go to the first. None: v[0]
 * (by_trace: NULL).
 */
static const struct proc *latest(const struct proc *v, size_t n, bool by_trace)
{
    const struct proc *best = NULL;

    for (size_t i = 0; i < n; i++)
        if (v[i].born && (!by_trace || v[i].names_trace) && (!best || v[i].start_ns > best->start_ns))
            best = &v[i];
    return best || by_trace ? best : &v[0];
}

/*
 * A --trace no ring header names (rings of a runtime that noted the file
 * only at its first write, which an empty trace never had): the process
 * whose pid its base name holds as a whole number (trace-%p, dir='s
 * PROGRAM-PID.trace, a fork child's F-PID), when exactly one does.
 */
static const struct proc *by_name(const struct proc *v, size_t n, const char *path)
{
    const char *base = strrchr(path, '/'), *p;
    const struct proc *found = NULL;

    for (p = base ? base + 1 : path; *p;) {
        char *end;
        unsigned long x;
        if (*p < '0' || *p > '9') {
            p++;
            continue;
        }
        x = strtoul(p, &end, 10);
        for (size_t i = 0; i < n; i++) {
            if (!v[i].born || v[i].pid != x || found == &v[i])
                continue;
            if (found)
                return NULL; /* two pids in the name: no guess */
            found = &v[i];
        }
        p = end;
    }
    return found;
}

/* "pids 7, 8, 9" of v[0..n) but skip (at most 8 named), into buf. */
static void pid_list(char *buf, size_t len, const struct proc *v, size_t n, uint32_t skip, bool by_trace)
{
    size_t used = 0, named = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++) {
        if (v[i].pid == skip || (by_trace && !v[i].names_trace))
            continue;
        if (named++ == 8) {
            snprintf(buf + used, len - used, ", ...");
            break;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%lu", used ? ", " : "", (unsigned long)v[i].pid);
    }
}

/* Picks r->pid (see recover.h) and says what was chosen and why when there was a choice. */
static void choose(struct st__recover *r, long want, const struct st__recover_trace *trace, const struct proc *v,
                   size_t n)
{
    const struct st__recover_hooks *hk = &r->hooks;
    const struct proc *by_file = trace ? latest(v, n, true) : NULL, *p;
    char others[160], matching[160];
    size_t nmatch = 0;

    for (size_t i = 0; i < n; i++)
        nmatch += v[i].names_trace;
    if (want >= 0) {
        r->pid = (uint32_t)want;
        pid_list(others, sizeof others, v, n, r->pid, false);
        if (others[0])
            st__rv_say(hk, ST_RECOVER_OTHER_PIDS, NULL, NULL, 0, r->pid,
                       "recovering pid %lu as asked; the ring files of other processes are left as they are (pids %s)",
                       (unsigned long)r->pid, others);
        return;
    }
    if (trace && !by_file && (p = by_name(v, n, trace->img.name))) {
        r->pid = p->pid;
        pid_list(others, sizeof others, v, n, r->pid, false);
        st__rv_say(hk, ST_RECOVER_TRACE_UNNAMED, trace->img.name, NULL, 0, r->pid,
                   "no ring file names it as its trace file: recovering pid %lu, which its name holds%s%s%s",
                   (unsigned long)r->pid, others[0] ? " (other pids: " : "", others, others[0] ? ")" : "");
        return;
    }
    p = by_file ? by_file : latest(v, n, false);
    r->pid = p->pid;
    pid_list(others, sizeof others, v, n, r->pid, false);
    if (trace && !by_file)
        st__rv_say(hk, ST_RECOVER_TRACE_UNNAMED, trace->img.name, NULL, 0, r->pid,
                   "no ring file names it as its trace file: recovering pid %lu%s%s%s", (unsigned long)r->pid, others[0] ? ", the one started last (other pids: " : "", others,
                   others[0] ? "; choose with --pid)" : "");
    else if (by_file && nmatch > 1) {
        pid_list(matching, sizeof matching, v, n, r->pid, true);
        st__rv_say(hk, ST_RECOVER_OTHER_PIDS, NULL, NULL, 0, r->pid,
                   "ring files of several processes name %s as their trace file: recovering pid %lu, the one "
                   "started last (also: pids %s; choose with --pid)",
                   trace->img.name, (unsigned long)r->pid, matching);
    } else if (by_file && others[0])
        st__rv_say(hk, ST_RECOVER_OTHER_PIDS, NULL, NULL, 0, r->pid,
                   "ring files of several processes: recovering pid %lu, whose ring files name %s as their trace "
                   "file (other pids: %s)",
                   (unsigned long)r->pid, trace->img.name, others);
    else if (others[0])
        st__rv_say(hk, ST_RECOVER_OTHER_PIDS, NULL, NULL, 0, r->pid,
                   "ring files of several processes: recovering pid %lu, the one started last (other pids: %s; "
                   "choose with --pid, or --trace its trace file)",
                   (unsigned long)r->pid, others);
}

/* Keeps the rings of the chosen process, in order. 0 or -ENOMEM. */
static int keep_pid(struct st__recover *r, long want, const struct st__recover_trace *trace)
{
    size_t kept = 0, n;
    struct proc *v;

    if (want > (long)UINT32_MAX) {
        r->n = 0; /* no process has it */
        return 0;
    }
    if (!(v = procs_of(r, trace, &n)))
        return -ENOMEM;
    choose(r, want, trace, v, n);
    free(v);
    for (size_t i = 0; i < r->n; i++)
        if (r->rings[i].h.pid == r->pid)
            r->rings[kept++] = r->rings[i];
    r->n = kept;
    return 0;
}

int st__recover_open(struct st__recover **out, const struct st__recover_image *rings, size_t n, long pid,
                     const struct st__recover_trace *trace, const struct st__recover_hooks *hooks)
{
    struct st__recover *r = calloc(1, sizeof *r);

    *out = NULL;
    if (!r)
        return -ENOMEM;
    if (hooks)
        r->hooks = *hooks;
    r->rings = calloc(n ? n : 1, sizeof *r->rings);
    if (!r->rings) {
        free(r);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        r->n += st__rv_ring_check(&rings[i], &r->rings[r->n], &r->hooks);
    if (r->n && keep_pid(r, pid, trace) < 0) {
        st__recover_free(r);
        return -ENOMEM;
    }
    if (!r->n) {
        st__recover_free(r);
        return -ENOENT;
    }
    for (size_t i = 0; i < r->n; i++)
        st__rv_ring_scan(&r->rings[i], &r->hooks);
    *out = r;
    return 0;
}

size_t st__recover_ring_count(const struct st__recover *r)
{
    return r->n;
}

const char *st__recover_ring_name(const struct st__recover *r, size_t i)
{
    return i < r->n ? r->rings[i].img.name : NULL;
}

uint32_t st__recover_pid(const struct st__recover *r)
{
    return r->pid;
}

const char *st__recover_first_name(const struct st__recover *r)
{
    return r->rings[0].img.name;
}

void st__recover_free(struct st__recover *r)
{
    if (!r)
        return;
    free(r->rings);
    free(r);
}

/* --- the clock ---------------------------------------------------------------- */

/* The default measurement: two samples MEASURE_NS apart. */
static void measure_here(struct st__clock_anchor *from, struct st__clock_anchor *to)
{
    struct timespec d = {0, MEASURE_NS};

    *from = st__clock_sample(true, NULL);
    while (nanosleep(&d, &d) != 0 && errno == EINTR)
        ;
    *to = st__clock_sample(true, NULL);
}

/*
 * The conversion of r's raw timestamps (see the top). A line that cannot
 * be drawn (the anchors or the measurement go backwards: a damaged file)
 * leaves one knot, which converts every value to a's ns.
 */
static void clock_build(const struct st__recover *r, struct st__clock_conv *cv)
{
    const struct st__rv_ring *first = NULL;
    struct st__clock_anchor a, b = {0, 0}, from, to;

    for (size_t i = 0; i < r->n && !first; i++)
        if (!r->rings[i].unborn)
            first = &r->rings[i];
    if (!first) {
        st__clock_conv_init(cv, false, b); /* no header: no record to convert */
        return;
    }
    a = (struct st__clock_anchor){first->h.a_raw, first->h.a_ns};
    st__clock_conv_init(cv, first->h.clock_tsc != 0, a);
    if (!first->h.clock_tsc)
        return;
    for (size_t i = 0; i < r->n; i++)
        if (!r->rings[i].unborn && r->rings[i].anchor_ok && r->rings[i].h.b_ns > b.ns)
            b = (struct st__clock_anchor){r->rings[i].h.b_raw, r->rings[i].h.b_ns};
    if (b.ns > a.ns && b.ns - a.ns > MIN_ANCHOR_SPAN_NS && b.raw > a.raw) {
        st__clock_conv_add(cv, b, 0, true);
        return;
    }
    if (r->hooks.measure)
        r->hooks.measure(r->hooks.ctx, &from, &to);
    else
        measure_here(&from, &to);
    if (to.raw > from.raw && to.ns >= from.ns)
        st__clock_conv_add(cv, (struct st__clock_anchor){a.raw + (to.raw - from.raw), a.ns + (to.ns - from.ns)}, 0,
                           true);
}

/* --- output --------------------------------------------------------------------- */

/* The trace being written: a buffer handed to the write hook when full. */
struct out {
    const struct st__recover_hooks *hk;
    struct st__growbuf b;   /* written out once OUT_CHUNK is filled */
    int err;                /* the first error; nothing is written after it */
    uint64_t events, drops; /* what the records written hold */
};

static void out_flush(struct out *o)
{
    int e;

    if (o->err || !o->b.len)
        return;
    e = o->hk->write ? o->hk->write(o->hk->ctx, o->b.data, o->b.len) : 0;
    if (e < 0)
        o->err = e;
    o->b.len = 0;
}

/* Room for n bytes at the end of the buffer (written out first when a chunk is full); NULL after an error. */
static uint8_t *out_room(struct out *o, size_t n)
{
    uint8_t *p;

    if (o->b.len && o->b.len + n > OUT_CHUNK)
        out_flush(o);
    if (o->err)
        return NULL;
    if (!(p = st__growbuf_room(&o->b, n)))
        o->err = -ENOMEM;
    return p;
}

static void out_mapping(struct out *o, uint64_t id, const char *name, uint32_t len)
{
    uint8_t *p = out_room(o, st__fmt_mapping_size(len));

    if (p)
        st__growbuf_commit(&o->b, st__fmt_put_mapping(p, id, name, len));
}

/* The merge's sink: runs go straight into the buffer. */
static uint8_t *sink_reserve(void *ctx, uint64_t need, uint64_t want, uint64_t *room)
{
    struct out *o = ctx;
    uint8_t *p = out_room(o, (size_t)need);

    (void)want;
    *room = o->b.cap - o->b.len;
    return p;
}

static void sink_commit(void *ctx, struct st__merge_src *s, size_t n, uint64_t events, uint64_t drops)
{
    struct out *o = ctx;

    (void)s;
    st__growbuf_commit(&o->b, n);
    o->events += events;
    o->drops += drops;
}

/* --- IDs the names file lacks ---------------------------------------------------- */

static int by_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

    return a < b ? -1 : a > b;
}

/* Appends id to the list (a repeat of the last one is left out: records of one ID come in runs); 0 or -ENOMEM. */
static int ids_push(uint64_t **ids, size_t *n, size_t *cap, uint64_t id)
{
    if (*n && (*ids)[*n - 1] == id)
        return 0;
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        uint64_t *v = realloc(*ids, c * sizeof *v);
        if (!v)
            return -ENOMEM;
        *ids = v;
        *cap = c;
    }
    (*ids)[(*n)++] = id;
    return 0;
}

/* Writes a mapping st_unknown_ID for each ID in src's records that nm lacks, by ID. 0 or -ENOMEM. */
static int put_unknown(struct out *o, const struct st__recover *r, const struct st__merge_src *src,
                       const struct st__rv_names *nm)
{
    uint64_t *ids = NULL;
    size_t n = 0, cap = 0, k = 0;

    for (size_t i = 0; i < r->n; i++) {
        const struct st__rv_ring *g = &r->rings[i];
        uint64_t size;
        for (uint64_t pos = src[i].pos; pos < src[i].end && (size = st__rv_record_size(g, pos, src[i].end, NULL));
             pos += size) {
            uint8_t idb[8];
            uint64_t id;
            st__rv_ring_copy(g, pos + ST_EV_OFF_ID, idb, sizeof idb);
            id = st__fmt_get_u64(idb);
            if (id != ST_DROPPED_EVENT_ID && !st__rv_names_find(nm, id) && ids_push(&ids, &n, &cap, id) < 0) {
                free(ids);
                return -ENOMEM;
            }
        }
    }
    if (n)
        qsort(ids, n, sizeof *ids, by_u64);
    for (size_t i = 0; i < n; i++) {
        char name[40];
        int len;
        if (i && ids[i] == ids[k])
            continue;
        k = i;
        len = snprintf(name, sizeof name, "st_unknown_%llu", (unsigned long long)ids[i]);
        out_mapping(o, ids[i], name, (uint32_t)len);
    }
    free(ids);
    return 0;
}

/* --- the trace ------------------------------------------------------------------- */

/* True when the description's text [t, t + len) reads as the reader reads it: first line, then KEY=VALUE lines. */
static bool description_ok(const char *t, size_t len)
{
    size_t first = strlen(ST_META_FIRST_LINE), at;
    char *scratch;
    bool ok;

    if (len < first || memcmp(t, ST_META_FIRST_LINE, first) != 0 || !(scratch = malloc(len)))
        return false;
    for (at = first, ok = true; ok && at < len;) {
        const char *nl = memchr(t + at, '\n', len - at), *eq;
        size_t line = nl ? (size_t)(nl - (t + at)) : len - at;
        eq = memchr(t + at, '=', line);
        ok = eq && st__meta_unescape(scratch, eq + 1, line - (size_t)(eq + 1 - (t + at))) >= 0;
        at += line + 1;
    }
    free(scratch);
    return ok;
}

/*
 * The names file's description when it has a whole one; else (no names
 * file, a torn one, a runtime that wrote none) what the ring headers say:
 * the pid and the clock, so the trace still names its process.
 */
static void put_description(struct out *o, const struct st__recover *r, const struct st__rv_names *nm)
{
    const struct st__rv_name *info = st__rv_names_find(nm, ST_META_INFO_ID);
    const char *clock = NULL;
    char text[96];
    int len;

    if (info && description_ok((const char *)nm->data + info->off, info->len)) {
        out_mapping(o, ST_META_INFO_ID, (const char *)nm->data + info->off, info->len);
        return;
    }
    for (size_t i = 0; i < r->n && !clock; i++)
        if (!r->rings[i].unborn)
            clock = r->rings[i].h.clock_tsc ? "tsc" : "monotonic";
    len = snprintf(text, sizeof text, ST_META_FIRST_LINE "pid=%lu\n%s%s%s", (unsigned long)r->pid,
                   clock ? "clock=" : "", clock ? clock : "", clock ? "\n" : "");
    out_mapping(o, ST_META_INFO_ID, text, (uint32_t)len);
}

/*
 * Header, the description, then the names file's mappings by ID, each with
 * its declaration right after it (meta_format.h's order); declarations of
 * IDs the file does not map are left out.
 */
static void put_head(struct out *o, const struct st__recover *r, const struct st__rv_names *nm)
{
    uint8_t *p = out_room(o, ST_HEADER_SIZE);

    if (p)
        st__growbuf_commit(&o->b, st__fmt_put_header(p));
    put_description(o, r, nm);
    for (size_t i = 0; i < nm->n; i++) {
        const struct st__rv_name *e = &nm->v[i], *decl;
        if (st__meta_is_info(e->id) || st__meta_is_decl(e->id))
            continue;
        out_mapping(o, e->id, (const char *)nm->data + e->off, e->len);
        if (e->id <= UINT32_MAX && (decl = st__rv_names_find(nm, ST_META_DECL_ID(e->id))))
            out_mapping(o, decl->id, (const char *)nm->data + decl->off, decl->len);
    }
}

/* One dropped record per thread with unreported drops, after its last record. */
static void put_drops(struct out *o, const struct st__recover *r, const struct st__merge_src *src,
                      const uint64_t *pending)
{
    for (size_t i = 0; i < r->n; i++) {
        uint8_t *p;
        if (!pending[i] || !(p = out_room(o, ST_EVENT_FIXED_SIZE + 8)))
            continue;
        st__growbuf_commit(&o->b, st__fmt_put_dropped(p, src[i].last_ns ? src[i].last_ns : r->rings[i].h.b_ns,
                                                      r->rings[i].h.tid, pending[i]));
        o->drops += pending[i];
    }
}

/* The merge's sources, one per ring (an unborn one is empty), after the cut write is settled. 0 or -ENOMEM. */
static int sources(const struct st__recover *r, const struct st__recover_trace *trace, struct st__merge_src *src,
                   uint64_t *pending)
{
    struct st__rv_stream stream;

    if (st__rv_stream_open(&stream, r, trace) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < r->n; i++) {
        const struct st__rv_ring *g = &r->rings[i];
        uint64_t tail = g->tail;
        pending[i] = g->pending;
        st__rv_inflight(g, trace, &stream, &r->hooks, &tail, &pending[i]);
        src[i] = (struct st__merge_src){.ring = g->ring, .mask = g->mask, .size = g->mask + 1, .pos = tail,
                                        .end = g->end, .owner = (void *)g};
    }
    st__rv_stream_free(&stream);
    return 0;
}

int st__recover_write(struct st__recover *r, const struct st__recover_image *names,
                      const struct st__recover_trace *trace, struct st__recover_stats *stats)
{
    /* Every record in [pos, end) was checked: the merge never finds bytes that are not one (no bad hook). */
    struct out o = {.hk = &r->hooks};
    struct st__merge_sink sink = {sink_reserve, sink_commit, NULL, &o};
    struct st__merge merge = {0};
    struct st__rv_names nm;
    struct st__clock_conv cv;
    struct st__merge_src *src = calloc(r->n, sizeof *src);
    uint64_t *pending = calloc(r->n, sizeof *pending);
    int ret = -ENOMEM;

    if (!src || !pending || sources(r, trace, src, pending) < 0)
        goto out_free;
    if ((ret = st__rv_names_load(&nm, names, &r->hooks)) < 0)
        goto out_free;
    clock_build(r, &cv);
    put_head(&o, r, &nm);
    if ((ret = put_unknown(&o, r, src, &nm)) < 0)
        goto out_names;
    if (!o.err && st__merge_run(&merge, src, r->n, &cv, &sink) == -ENOMEM)
        o.err = -ENOMEM;
    put_drops(&o, r, src, pending);
    out_flush(&o);
    ret = o.err;
    if (stats)
        *stats = (struct st__recover_stats){r->pid, r->n, o.events, o.drops};
out_names:
    st__rv_names_free(&nm);
out_free:
    st__merge_free(&merge);
    st__growbuf_free(&o.b);
    free(pending);
    free(src);
    return ret;
}
