/*
 * The export driver: reads records one by one, finds each one's thread,
 * keeps that thread's stack of open frames, and tells the writer what
 * happened (enter, exit, instant, lost). Rules in export.h, "Nesting".
 *
 * Memory: the pairing table (per catalog event), one small struct and a
 * stack (at most max_depth entries) per thread, and whatever the writer
 * keeps (bounded buffers). Nothing grows with the number of records.
 */
#include "export_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_MAX_DEPTH 1024u
#define PROGRESS_EVERY 65536u

/* --- helpers for the writers ---------------------------------------------------- */

int st__ex_fail(struct st__ex_ctx *ctx, int err, const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (ctx->errlen)
        snprintf(ctx->err, ctx->errlen, "%s: %s", what, strerror(-err));
    return err;
}

uint32_t st__ex_process_id(const struct st__ex_ctx *ctx)
{
    if (ctx->have_desc)
        return ctx->desc_pid;
    return ctx->have_tid ? ctx->lowest_tid : 0;
}

const char *st__ex_program(const struct st__ex_ctx *ctx)
{
    return ctx->have_desc && ctx->program[0] ? ctx->program : ST__EX_PROGRAM;
}

/* What the trace says about its process: asked once its first record was read (the description precedes it). */
static void take_description(struct st__ex_ctx *ctx, struct st_reader *r)
{
    struct st_trace_description d = {.struct_size = sizeof d};

    ctx->desc_taken = true;
    if (st_reader_description(r, &d) < 0 || d.pid == 0)
        return;
    ctx->have_desc = true;
    ctx->desc_pid = d.pid;
    snprintf(ctx->program, sizeof ctx->program, "%s", d.program);
    snprintf(ctx->cmdline, sizeof ctx->cmdline, "%s", d.cmdline);
    ctx->anchor_mono_ns = d.anchor_mono_ns;
    ctx->anchor_real_ns = d.anchor_real_ns;
}

const char *st__ex_basename(const char *path)
{
    if (!path || strcmp(path, "-") == 0)
        return "stdin";
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* --- the thread table ------------------------------------------------------------- */

/* Open addressing on the tid; slots hold thread index + 1 (0 = empty). */
struct table {
    uint32_t *slot;
    size_t mask;              /* capacity - 1, a power of two minus one */
    struct st__ex_thread *last; /* the previous record's thread: the common case */
};

static size_t hash_tid(uint32_t tid)
{
    return (size_t)(tid * UINT32_C(2654435761));
}

static int table_grow(struct table *tb, struct st__ex_ctx *ctx)
{
    size_t cap = tb->slot ? (tb->mask + 1) * 2 : 64;
    uint32_t *slot = calloc(cap, sizeof *slot);
    if (!slot)
        return -ENOMEM;
    for (size_t i = 0; i < ctx->nthreads; i++) {
        size_t h = hash_tid(ctx->threads[i]->tid) & (cap - 1);
        while (slot[h])
            h = (h + 1) & (cap - 1);
        slot[h] = (uint32_t)(i + 1);
    }
    free(tb->slot);
    tb->slot = slot;
    tb->mask = cap - 1;
    return 0;
}

/* A new thread tid whose first record is at ts, announced to the writer. */
static int thread_new(struct st__ex_ctx *ctx, struct table *tb, uint32_t tid, uint64_t ts,
                      struct st__ex_thread **out)
{
    if ((ctx->nthreads + 1) * 2 > tb->mask + 1 || !tb->slot) {
        int ret = table_grow(tb, ctx);
        if (ret < 0)
            return ret;
    }
    if ((ctx->nthreads & (ctx->nthreads - 1)) == 0) { /* 0, 1, 2, 4, ...: double the array */
        struct st__ex_thread **v = realloc(ctx->threads, (ctx->nthreads ? ctx->nthreads * 2 : 1) * sizeof *v);
        if (!v)
            return -ENOMEM;
        ctx->threads = v;
    }
    struct st__ex_thread *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    *t = (struct st__ex_thread){.tid = tid, .index = ctx->nthreads, .first_ts = ts, .last_ts = ts, .slot = -1};
    ctx->threads[ctx->nthreads++] = t;
    size_t h = hash_tid(tid) & tb->mask;
    while (tb->slot[h])
        h = (h + 1) & tb->mask;
    tb->slot[h] = (uint32_t)ctx->nthreads;
    *out = t;
    return ctx->w->thread_new(ctx, t);
}

static int thread_get(struct st__ex_ctx *ctx, struct table *tb, uint32_t tid, uint64_t ts, struct st__ex_thread **out)
{
    if (tb->last && tb->last->tid == tid) {
        *out = tb->last;
        return 0;
    }
    for (size_t h = tb->slot ? hash_tid(tid) & tb->mask : 0; tb->slot && tb->slot[h]; h = (h + 1) & tb->mask)
        if (ctx->threads[tb->slot[h] - 1]->tid == tid) {
            *out = tb->last = ctx->threads[tb->slot[h] - 1];
            return 0;
        }
    int ret = thread_new(ctx, tb, tid, ts, out);
    tb->last = *out;
    return ret;
}

static void threads_free(struct st__ex_ctx *ctx, struct table *tb)
{
    for (size_t i = 0; i < ctx->nthreads; i++) {
        free(ctx->threads[i]->stack);
        free(ctx->threads[i]);
    }
    free(ctx->threads);
    free(tb->slot);
}

/* --- nesting ------------------------------------------------------------------------- */

static unsigned max_depth(const struct st__ex_ctx *ctx)
{
    return ctx->opts->max_depth ? ctx->opts->max_depth : DEFAULT_MAX_DEPTH;
}

static int do_begin(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                    uint64_t ts)
{
    if (t->depth >= max_depth(ctx)) {
        t->overflow++;
        ctx->sum->too_deep++;
        return 0;
    }
    if (t->depth == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 16;
        uint32_t *s = realloc(t->stack, cap * sizeof *s);
        if (!s)
            return -ENOMEM;
        t->stack = s;
        t->cap = cap;
    }
    ctx->sum->calls++;
    int ret = ctx->w->enter(ctx, t, rec, func, t->depth, ts);
    t->stack[t->depth++] = func;
    return ret;
}

/* Closes the top frame at ts; rec is its end record, NULL when we close it. */
static int pop(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint64_t ts)
{
    uint32_t func = t->stack[--t->depth];
    return ctx->w->exit(ctx, t, rec, func, t->depth, ts);
}

static int do_end(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                  uint64_t ts)
{
    if (t->overflow) { /* LIFO: it ends the innermost frame, one we did not write */
        t->overflow--;
        return 0;
    }
    uint32_t i = t->depth;
    while (i > 0 && t->stack[i - 1] != func)
        i--;
    if (i == 0) {
        ctx->sum->unmatched_ends++;
        ctx->sum->instants++;
        return ctx->w->instant(ctx, t, rec, t->depth, ts);
    }
    int ret = 0;
    while (ret == 0 && t->depth > i) {
        ctx->sum->closed_early++;
        ret = pop(ctx, t, NULL, ts);
    }
    return ret ? ret : pop(ctx, t, rec, ts);
}

/* Every frame still open ends where the trace ends. */
static int close_all(struct st__ex_ctx *ctx)
{
    int ret = 0;
    for (size_t i = 0; i < ctx->nthreads && ret == 0; i++) {
        struct st__ex_thread *t = ctx->threads[i];
        while (ret == 0 && t->depth) {
            ctx->sum->never_ended++;
            ret = pop(ctx, t, NULL, ctx->last_ts);
        }
        t->overflow = 0;
    }
    return ret;
}

/* --- the record loop ------------------------------------------------------------------- */

static int convert(struct st__ex_ctx *ctx, struct table *tb, const struct st_record *rec)
{
    /* v0 records carry no thread: one thread stands for them all. */
    uint32_t tid = rec->has_pid ? rec->pid : 1;
    uint64_t ts = rec->timestamp_ns;
    if (!ctx->have_pid) {
        ctx->have_pid = true;
        ctx->pid = ctx->have_desc ? ctx->desc_pid : tid;
        ctx->first_ts = ctx->last_ts = ts;
    }
    if (rec->has_pid && tid != ST__EX_LOST_TID && (!ctx->have_tid || tid < ctx->lowest_tid)) {
        ctx->have_tid = true;
        ctx->lowest_tid = tid;
    }
    struct st__ex_thread *t;
    int ret = thread_get(ctx, tb, tid, ts, &t);
    if (ret < 0)
        return ret;
    if (ts < t->last_ts) {
        ts = t->last_ts;
        ctx->sum->clamped++;
    }
    t->last_ts = ts;
    if (ts > ctx->last_ts)
        ctx->last_ts = ts;
    ctx->sum->records++;
    if (rec->dropped) {
        ctx->sum->drop_marks++;
        ctx->sum->dropped_events += rec->dropped_count;
        return ctx->w->lost(ctx, t, rec->dropped_count, t->depth, ts);
    }
    unsigned idx = rec->event->index;
    switch (ctx->pairs.role[idx]) {
    case ST__EX_BEGIN: return do_begin(ctx, t, rec, ctx->pairs.func[idx], ts);
    case ST__EX_END: return do_end(ctx, t, rec, ctx->pairs.func[idx], ts);
    default:
        ctx->sum->instants++;
        return ctx->w->instant(ctx, t, rec, t->depth, ts);
    }
}

static int progress(struct st__ex_ctx *ctx, struct st_reader *r)
{
    if (!ctx->opts->progress)
        return 0;
    struct st_reader_counters c = {.struct_size = sizeof c};
    if (st_reader_get_counters(r, &c) < 0)
        return 0; /* cannot happen with our own sizeof; progress is only a display */
    struct st_export_progress p = {.records = c.records, .bytes = c.bytes};
    return ctx->opts->progress(&p, ctx->opts->progress_opaque) ? -EINTR : 0;
}

static int run_records(struct st__ex_ctx *ctx, struct table *tb, struct st_reader *r)
{
    unsigned countdown = PROGRESS_EVERY;
    for (;;) {
        const struct st_record *rec;
        int ret = st_reader_next(r, &rec);
        if (ret == 0)
            return 0;
        if (ret < 0)
            return ret == -EAGAIN ? -EIO : ret; /* -EAGAIN: a follow-mode reader, not ours */
        if (!ctx->desc_taken)
            take_description(ctx, r);
        if ((ret = convert(ctx, tb, rec)) < 0)
            return ret;
        if (--countdown == 0) {
            countdown = PROGRESS_EVERY;
            if ((ret = progress(ctx, r)) < 0)
                return ret;
        }
    }
}

int st_export_run(struct st_reader *r, const struct st_export_options *o, struct st_export_summary *s, char *err,
                  size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (errlen)
        err[0] = '\0';
    struct st__ex_ctx ctx = {.opts = o, .cat = st_reader_catalog(r), .sum = s, .err = err, .errlen = errlen};
    ctx.w = o->format == ST_EXPORT_CHROME ? &st__ex_chrome_writer : &st__ex_uftrace_writer;
    struct table tb = {0};
    bool opened = false;
    int ret = st__ex_pairs_build(&ctx.pairs, ctx.cat, o->pairs, o->npairs, o->no_default_pairs, s->unused_rule,
                                 sizeof s->unused_rule, err, errlen);
    if (ret == 0) {
        s->functions = ctx.pairs.nfuncs;
        ret = ctx.w->open(&ctx);
        opened = true;
    }
    if (ret == 0) {
        ret = run_records(&ctx, &tb, r);
        /* A bad trace: frames open so far are closed anyway, so that JSON
         * on standard output (the only output kept) stays balanced. */
        if (ret < 0 && st_reader_error(r)->code != 0)
            close_all(&ctx);
    }
    if (ret == 0)
        ret = close_all(&ctx);
    if (ret == 0)
        ret = ctx.w->finish(&ctx);
    if (opened)
        ctx.w->discard(&ctx);
    if (ret == -ENOMEM && errlen && !err[0])
        snprintf(err, errlen, "out of memory");
    if (ret == -EINTR && errlen && !err[0])
        snprintf(err, errlen, "interrupted");
    s->threads = ctx.nthreads;
    threads_free(&ctx, &tb);
    st__ex_pairs_free(&ctx.pairs);
    return ret;
}
