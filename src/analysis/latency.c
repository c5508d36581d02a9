/*
 * Spans measured (analysis.h): a writer of the export engine that writes
 * nothing, but adds each call's duration to the histogram of its span
 * name and group, counts what did not make a span, and keeps the slowest.
 *
 * Per thread it keeps a stack of its open frames' begin times (the
 * engine's stack holds only their functions): a frame's duration is its
 * exit's time minus its enter's, its self time that minus the time of the
 * frames nested in it. Keyed spans carry their group in the engine's open
 * entry (o->user).
 */
#include "analysis.h"
#include "export_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct frame {
    uint64_t begin_ts, child_ns;
    uint32_t group;
};

struct stack {
    struct frame *f;
    size_t cap;
};

/* (func, group) -> index in spans, open addressing. */
struct slot {
    uint64_t key; /* func << 32 | group, + 1 (0: empty) */
    size_t idx;
};

struct lat {
    const struct st__an_options *o;
    struct st__an_result *res;
    struct st__an_span **spans;
    size_t nspans, spans_cap;
    struct slot *map;
    size_t map_cap;
    char **groups;          /* group names by id; id 0 is "no group" (NULL) */
    size_t ngroups, groups_cap;
    struct slot *gmap;      /* group name hash + 1 -> id, open addressing (names compared) */
    size_t gmap_cap;
    uint32_t *thread_group; /* by thread index: its group + 1 (0: not yet known) */
    size_t thread_group_cap;
    uint32_t *proc_group;   /* by process index, the same */
    size_t proc_group_cap;
    struct stack *stacks;   /* by thread index */
    size_t stacks_cap;
    uint64_t *counts;       /* records per catalog index */
    size_t counts_cap;
    int16_t *by_arg;        /* per catalog index: the --by argument's index, -1 if the event has none */
    size_t by_arg_cap;
    size_t ncat;            /* catalog indices counts and by_arg cover */
};

static struct lat *lat_of(struct st__ex_ctx *ctx)
{
    return ctx->opts->writer_arg;
}

/* --- values as print shows them ------------------------------------------------------- */

/*
 * Writes value v into buf as print shows it, given its encoding and
 * signedness; *number: it is a bare JSON token (a number, true, false).
 */
static void value_text(const struct st_value *v, int enc, bool is_signed, char *buf, size_t len, bool *number)
{
    *number = v->kind != ST_VALUE_STRING && v->kind != ST_VALUE_POINTER && enc != ST_ARG_ENCODING_POINTER;
    if (v->kind == ST_VALUE_STRING)
        snprintf(buf, len, "%.*s", (int)v->len, v->str);
    else if (!*number)
        snprintf(buf, len, "0x%" PRIx64, v->u64);
    else if (enc == ST_ARG_ENCODING_BOOL)
        snprintf(buf, len, "%s", v->u64 ? "true" : "false");
    else if (is_signed)
        snprintf(buf, len, "%" PRId64, (int64_t)v->u64);
    else
        snprintf(buf, len, "%" PRIu64, v->u64);
}

/* Argument i of rec as print shows it. */
static void arg_text(const struct st_catalog *cat, const struct st_record *rec, unsigned i, char *buf, size_t len,
                     bool *number)
{
    struct st_value v = rec->args[i];
    v.u64 = st_arg_value(&rec->event->args[i], v.u64);
    value_text(&v, st_catalog_arg_encoding(cat, rec->event, i), rec->event->args[i].is_signed, buf, len, number);
}

/* A keyed span's key as print shows it. */
static void key_text(const struct st__ex_open *o, char *buf, size_t len, bool *number)
{
    struct st_value v = {.kind = o->is_str ? ST_VALUE_STRING : o->arg->kind,
                         .u64 = o->is_str ? o->value : st_arg_value(o->arg, o->value), .str = o->str,
                         .len = (uint32_t)o->value};
    value_text(&v, ST_ARG_ENCODING_INTEGER, o->arg->is_signed, buf, len, number);
}

/* --- groups ------------------------------------------------------------------------------ */

static uint64_t text_hash(const char *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
    return h;
}

static int gmap_grow(struct lat *L)
{
    size_t cap = L->gmap_cap ? L->gmap_cap * 2 : 64;
    struct slot *m = calloc(cap, sizeof *m);
    if (!m)
        return -ENOMEM;
    for (size_t id = 1; id < L->ngroups; id++) {
        size_t j = text_hash(L->groups[id]) & (cap - 1);
        while (m[j].key)
            j = (j + 1) & (cap - 1);
        m[j] = (struct slot){text_hash(L->groups[id]) | 1, id};
    }
    free(L->gmap);
    L->gmap = m;
    L->gmap_cap = cap;
    return 0;
}

/* The id of group name text (added if new): > 0, or -ENOMEM. */
static long group_id(struct lat *L, const char *text)
{
    if (L->ngroups == 0)
        L->ngroups = 1; /* id 0: no group */
    if (L->ngroups * 2 >= L->gmap_cap && gmap_grow(L) < 0)
        return -ENOMEM;
    uint64_t h = text_hash(text) | 1;
    size_t j = h & (L->gmap_cap - 1);
    for (; L->gmap[j].key; j = (j + 1) & (L->gmap_cap - 1))
        if (L->gmap[j].key == h && strcmp(L->groups[L->gmap[j].idx], text) == 0)
            return (long)L->gmap[j].idx;
    if (st__ex_reserve(&L->groups, &L->groups_cap, L->ngroups + 1, sizeof *L->groups) < 0 ||
        !(L->groups[L->ngroups] = strdup(text)))
        return -ENOMEM;
    L->gmap[j] = (struct slot){h, L->ngroups};
    return (long)L->ngroups++;
}

/* A group cached by index (a thread's, a process's) in *cache: its id, or -ENOMEM. */
static long cached_group(struct lat *L, uint32_t **cache, size_t *cap, size_t index, uint32_t number)
{
    if (st__ex_reserve(cache, cap, index + 1, sizeof **cache) < 0)
        return -ENOMEM;
    if ((*cache)[index] == 0) {
        char text[16];
        snprintf(text, sizeof text, "%" PRIu32, number);
        long id = group_id(L, text);
        if (id < 0)
            return id;
        (*cache)[index] = (uint32_t)id;
    }
    return (*cache)[index];
}

/* The group of a span beginning (or, without begin, ending) with record rec (NULL: a call) on thread t. */
static long group_of(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec)
{
    struct lat *L = lat_of(ctx);
    char text[256];
    bool number;
    switch (L->o->by) {
    case ST__AN_BY_THREAD: return cached_group(L, &L->thread_group, &L->thread_group_cap, t->index, t->tid);
    case ST__AN_BY_PROCESS:
        return cached_group(L, &L->proc_group, &L->proc_group_cap, t->proc->index, st__ex_process_id(t->proc));
    case ST__AN_BY_ARG:
        if (!rec || !rec->event || rec->event->index >= L->ncat || L->by_arg[rec->event->index] < 0)
            return group_id(L, "");
        arg_text(ctx->cat, rec, (unsigned)L->by_arg[rec->event->index], text, sizeof text, &number);
        return group_id(L, text);
    default: return 0;
    }
}

/* --- spans -------------------------------------------------------------------------------- */

static int map_grow(struct lat *L)
{
    size_t cap = L->map_cap ? L->map_cap * 2 : 64;
    struct slot *m = calloc(cap, sizeof *m);
    if (!m)
        return -ENOMEM;
    for (size_t i = 0; i < L->map_cap; i++) {
        if (!L->map[i].key)
            continue;
        size_t j = (L->map[i].key * UINT64_C(0x9e3779b97f4a7c15) >> 32) & (cap - 1);
        while (m[j].key)
            j = (j + 1) & (cap - 1);
        m[j] = L->map[i];
    }
    free(L->map);
    L->map = m;
    L->map_cap = cap;
    return 0;
}

/* The figures of (func, group), made if new; NULL when memory is short. */
static struct st__an_span *span_of(struct st__ex_ctx *ctx, uint32_t func, uint32_t group)
{
    struct lat *L = lat_of(ctx);
    if ((L->nspans + 1) * 2 > L->map_cap && map_grow(L) < 0)
        return NULL;
    uint64_t key = ((uint64_t)func << 32 | group) + 1;
    size_t j = (key * UINT64_C(0x9e3779b97f4a7c15) >> 32) & (L->map_cap - 1);
    for (; L->map[j].key; j = (j + 1) & (L->map_cap - 1))
        if (L->map[j].key == key)
            return L->spans[L->map[j].idx];
    struct st__an_span *s = calloc(1, sizeof *s);
    if (!s || st__ex_reserve(&L->spans, &L->spans_cap, L->nspans + 1, sizeof *L->spans) < 0 ||
        (L->o->slowest && !(s->slow = calloc(L->o->slowest, sizeof *s->slow)))) {
        free(s);
        return NULL;
    }
    s->func = func;
    s->gid = group;
    L->spans[L->nspans] = s;
    L->map[j] = (struct slot){key, L->nspans++};
    return s;
}

/* The slowest spans: a min-heap on duration while the run lasts. */
static bool slower(const struct st__an_slow *a, const struct st__an_slow *b)
{
    return a->duration_ns != b->duration_ns ? a->duration_ns > b->duration_ns : a->begin_ns < b->begin_ns;
}

static void heap_down(struct st__an_slow *h, unsigned n, unsigned i)
{
    for (;;) {
        unsigned l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && slower(&h[m], &h[l]))
            m = l;
        if (r < n && slower(&h[m], &h[r]))
            m = r;
        if (m == i)
            return;
        struct st__an_slow tmp = h[i];
        h[i] = h[m];
        h[m] = tmp;
        i = m;
    }
}

static void heap_up(struct st__an_slow *h, unsigned i)
{
    while (i && slower(&h[(i - 1) / 2], &h[i])) {
        struct st__an_slow tmp = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
}

/* Keeps *c among the slowest of s when it is one. */
static void keep_slow(struct st__an_span *s, unsigned max, const struct st__an_slow *c)
{
    if (s->nslow < max) {
        s->slow[s->nslow] = *c;
        heap_up(s->slow, s->nslow++);
    } else if (max && slower(c, &s->slow[0])) {
        s->slow[0] = *c;
        heap_down(s->slow, s->nslow, 0);
    }
}

/* A span of func in group ended: begin_ts .. ts, with child_ns of it in nested spans. */
static int measured(struct st__ex_ctx *ctx, uint32_t func, uint32_t group, struct st__ex_thread *begin,
                    struct st__ex_thread *end, uint64_t begin_ts, uint64_t ts, uint64_t child_ns,
                    const struct st__ex_open *o)
{
    struct lat *L = lat_of(ctx);
    struct st__an_span *s = span_of(ctx, func, group);
    uint64_t dur = ts - begin_ts;
    if (!s || st__hist_add(&s->hist, dur) < 0)
        return -ENOMEM;
    s->self_total += dur > child_ns ? dur - child_ns : 0;
    if (L->o->slowest && (s->nslow < L->o->slowest || dur >= s->slow[0].duration_ns)) {
        struct st__an_slow c = {.begin_ns = begin_ts, .duration_ns = dur, .pid = st__ex_process_id(begin->proc),
                                .tid = begin->tid, .end_tid = end->tid};
        if (o) {
            c.has_key = true;
            key_text(o, c.key, sizeof c.key, &c.key_is_number);
        }
        keep_slow(s, L->o->slowest, &c);
    }
    return 0;
}

/* --- the writer ------------------------------------------------------------------------------ */

static void count(struct st__ex_ctx *ctx, const struct st_record *rec)
{
    struct lat *L = lat_of(ctx);
    if (rec && rec->event && rec->event->index < L->ncat)
        L->counts[rec->event->index]++;
}

static int lat_grow(struct st__ex_ctx *ctx)
{
    struct lat *L = lat_of(ctx);
    size_t n = ctx->ncat;
    if (st__ex_reserve(&L->counts, &L->counts_cap, n, sizeof *L->counts) < 0 ||
        st__ex_reserve(&L->by_arg, &L->by_arg_cap, n, sizeof *L->by_arg) < 0)
        return -ENOMEM;
    for (size_t i = L->ncat; i < n; i++) {
        const struct st_event_info *ev = st_catalog_event(ctx->cat, i);
        L->by_arg[i] = -1;
        for (unsigned k = 0; L->o->by == ST__AN_BY_ARG && ev && k < ev->nargs; k++)
            if (strcmp(ev->args[k].name, L->o->by_arg) == 0)
                L->by_arg[i] = (int16_t)k;
    }
    L->ncat = n;
    return 0;
}

/* The tables cover the catalog as it is when the run starts (grow() extends them). */
static int lat_open(struct st__ex_ctx *ctx)
{
    return lat_grow(ctx);
}

static int lat_thread_new(struct st__ex_ctx *ctx, struct st__ex_thread *t)
{
    (void)ctx;
    (void)t;
    return 0;
}

static int lat_enter(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                     uint32_t depth, uint64_t ts)
{
    struct lat *L = lat_of(ctx);
    (void)func;
    count(ctx, rec);
    if (st__ex_reserve(&L->stacks, &L->stacks_cap, t->index + 1, sizeof *L->stacks) < 0)
        return -ENOMEM;
    struct stack *st = &L->stacks[t->index];
    if (st__ex_reserve(&st->f, &st->cap, depth + 1, sizeof *st->f) < 0)
        return -ENOMEM;
    long group = group_of(ctx, t, rec);
    if (group < 0)
        return (int)group;
    st->f[depth] = (struct frame){.begin_ts = ts, .group = (uint32_t)group};
    return 0;
}

static int lat_exit(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                    uint32_t depth, uint64_t ts)
{
    struct lat *L = lat_of(ctx);
    count(ctx, rec);
    struct frame *f = &L->stacks[t->index].f[depth];
    if (depth > 0)
        L->stacks[t->index].f[depth - 1].child_ns += ts - f->begin_ts;
    if (ctx->closing) {
        struct st__an_span *s = span_of(ctx, func, f->group);
        if (!s)
            return -ENOMEM;
        s->unfinished++;
        return 0;
    }
    return measured(ctx, func, f->group, t, t, f->begin_ts, ts, f->child_ns, NULL);
}

static int lat_async_begin(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                           struct st__ex_open *o, uint64_t ts)
{
    (void)ts;
    count(ctx, rec);
    long group = group_of(ctx, t, rec);
    if (group < 0)
        return (int)group;
    o->user = (uint64_t)group;
    return 0;
}

static int lat_async_end(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                         const struct st__ex_open *o, uint64_t ts)
{
    count(ctx, rec);
    if (ctx->closing) {
        struct st__an_span *s = span_of(ctx, o->func, (uint32_t)o->user);
        if (!s)
            return -ENOMEM;
        if (ctx->close_reason == ST__EX_CLOSE_KEY_REUSED)
            s->key_reused++;
        else
            s->unfinished++;
        return 0;
    }
    return measured(ctx, o->func, (uint32_t)o->user, o->t, t, o->begin_ts, ts, 0, o);
}

/* An instant: an event that is no begin or end, or an end without an open begin. */
static int lat_instant(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t depth,
                       uint64_t ts)
{
    (void)depth;
    (void)ts;
    count(ctx, rec);
    unsigned idx = rec->event->index;
    if (ctx->pairs.role[idx] != ST__EX_END && ctx->pairs.role[idx] != ST__EX_KEYED_END)
        return 0;
    long group = group_of(ctx, t, rec);
    struct st__an_span *s = group < 0 ? NULL : span_of(ctx, ctx->pairs.func[idx], (uint32_t)group);
    if (!s)
        return -ENOMEM;
    s->unmatched_end++;
    return 0;
}

static int lat_lost(struct st__ex_ctx *ctx, struct st__ex_thread *t, uint64_t n, uint32_t depth, uint64_t ts)
{
    struct lat *L = lat_of(ctx);
    (void)t, (void)n, (void)depth, (void)ts;
    size_t dropped = st_catalog_dropped(ctx->cat)->index;
    if (dropped < L->ncat)
        L->counts[dropped]++;
    return 0;
}

static void lat_discard(struct st__ex_ctx *ctx)
{
    (void)ctx;
}

static int lat_finish(struct st__ex_ctx *ctx);

static const struct st__ex_writer latency_writer = {
    .open = lat_open,
    .grow = lat_grow,
    .thread_new = lat_thread_new,
    .enter = lat_enter,
    .exit = lat_exit,
    .instant = lat_instant,
    .lost = lat_lost,
    .async_begin = lat_async_begin,
    .async_end = lat_async_end,
    .finish = lat_finish,
    .discard = lat_discard,
};

/* --- the result ------------------------------------------------------------------------------ */

static int by_name_group(const void *a, const void *b)
{
    const struct st__an_span *x = *(struct st__an_span *const *)a, *y = *(struct st__an_span *const *)b;
    int c = strcmp(x->name, y->name);
    if (c || !x->group || !y->group)
        return c;
    return strcmp(x->group, y->group);
}

static int slow_order(const void *a, const void *b)
{
    return slower(a, b) ? -1 : slower(b, a) ? 1 : 0;
}

/* Names the spans and events (the engine's names are freed with it) and orders what is shown. */
static int make_result(struct lat *L, struct st__ex_ctx *ctx, struct st__an_result *res)
{
    res->spans = L->spans;
    res->nspans = L->nspans;
    L->spans = NULL;
    L->nspans = 0;
    for (size_t i = 0; i < res->nspans; i++) {
        struct st__an_span *s = res->spans[i];
        s->group = s->gid ? L->groups[s->gid] : NULL;
        if (!(s->name = strdup(ctx->pairs.names[s->func])))
            return -ENOMEM;
        if (s->nslow) /* --slowest=0: no array at all, and qsort wants one */
            qsort(s->slow, s->nslow, sizeof *s->slow, slow_order);
    }
    if (res->nspans) /* none: spans is NULL */
        qsort(res->spans, res->nspans, sizeof *res->spans, by_name_group);
    size_t n = st_catalog_count(ctx->cat) + 1;
    if (!(res->events = calloc(n, sizeof *res->events)))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct st_event_info *ev = st_catalog_event(ctx->cat, i);
        if (!ev || !(res->events[res->nevents].name = strdup(ev->name)))
            return ev ? -ENOMEM : 0;
        res->events[res->nevents++].count = i < L->ncat ? L->counts[i] : 0;
    }
    return 0;
}

/* What the result owns beyond its arrays. */
struct owned {
    char **groups;
    size_t ngroups;
};

static int lat_finish(struct st__ex_ctx *ctx)
{
    struct lat *L = lat_of(ctx);
    struct st__an_result *res = L->res;
    struct owned *own = calloc(1, sizeof *own);
    if (!own)
        return -ENOMEM;
    res->first_ns = ctx->first_ts;
    res->last_ns = ctx->last_ts;
    int ret = make_result(L, ctx, res);
    own->groups = L->groups;
    own->ngroups = L->ngroups;
    L->groups = NULL;
    L->ngroups = 0;
    res->priv = own;
    return ret;
}

static void lat_free(struct lat *L)
{
    for (size_t i = 0; i < L->nspans; i++) {
        st__hist_free(&L->spans[i]->hist);
        free(L->spans[i]->slow);
        free(L->spans[i]);
    }
    free(L->spans);
    free(L->map);
    for (size_t i = 1; i < L->ngroups; i++)
        free(L->groups[i]);
    free(L->groups);
    free(L->gmap);
    free(L->thread_group);
    free(L->proc_group);
    for (size_t i = 0; i < L->stacks_cap; i++)
        free(L->stacks[i].f);
    free(L->stacks);
    free(L->counts);
    free(L->by_arg);
}

int st__an_latency(struct st_reader *r, const struct st__an_options *o, struct st__an_result **out, char *err,
                   size_t errlen)
{
    *out = NULL;
    struct st__an_result *res = calloc(1, sizeof *res);
    if (!res)
        return -ENOMEM;
    struct lat L = {.o = o, .res = res};
    struct st__export_options ex = {
        .pairs = o->pairs,
        .npairs = o->npairs,
        .no_default_pairs = o->no_default_pairs,
        .max_depth = 65535,
        .trace_name = o->trace_name,
        .functions = o->functions,
        .not_damage = o->not_damage,
        .not_damage_opaque = o->not_damage_opaque,
        .writer = &latency_writer,
        .writer_arg = &L,
    };
    int ret = st__export_run(r, &ex, &res->sum, err, errlen);
    lat_free(&L);
    if (ret < 0 && !res->sum.partial) {
        st__an_result_free(res);
        return ret;
    }
    res->records = res->sum.records;
    res->unused_rule = res->sum.unused_rule[0] ? res->sum.unused_rule : NULL;
    res->have_origin = st_reader_origin(r, &res->origin_ns) == 0;
    *out = res;
    return ret;
}

void st__an_result_free(struct st__an_result *res)
{
    if (!res)
        return;
    for (size_t i = 0; i < res->nspans; i++) {
        st__hist_free(&res->spans[i]->hist);
        free(res->spans[i]->slow);
        free((char *)res->spans[i]->name);
        free(res->spans[i]);
    }
    free(res->spans);
    for (size_t i = 0; i < res->nevents; i++)
        free((char *)res->events[i].name);
    free(res->events);
    struct owned *own = res->priv;
    for (size_t i = 1; own && i < own->ngroups; i++)
        free(own->groups[i]);
    if (own)
        free(own->groups);
    free(own);
    free(res);
}

int st__an_check_pair(const char *rule, char *err, size_t errlen)
{
    return st__export_check_pair(rule, err, errlen);
}
