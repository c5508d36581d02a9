/*
 * The export driver: reads records one by one, finds each one's thread,
 * keeps that thread's stack of open frames, and tells the writer what
 * happened (enter, exit, instant, lost). Rules in export.h, "Nesting".
 *
 * Memory: the pairing table (per catalog event), one small struct and a
 * stack (at most max_depth entries) per thread, and whatever the writer
 * keeps (bounded buffers). Nothing grows with the number of records.
 *
 * A catalog read from the trace grows during the run (reader.h,
 * "Catalogs that grow"): a record whose event lies beyond ctx->ncat
 * first extends the pairing, then the writer's tables (its grow()).
 *
 * A trace damaged after its first record (cut by kill -9, say) still
 * gives an output: the records before the damage, frames still open
 * closed at the last timestamp; the run then returns the reader's error
 * with s->partial set. An error before any record, or one the caller
 * says is not damage (not_damage), writes nothing.
 */
#include "export_internal.h"
#include "uftrace_read.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_MAX_DEPTH 1024u
#define PROGRESS_EVERY 65536u

/* --- helpers for the writers ---------------------------------------------------- */

int st__ex_reserve(void *arr, size_t *cap, size_t n, size_t elem)
{
    if (n <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < n)
        c *= 2;
    char *v = realloc(*(void **)arr, c * elem);
    if (!v)
        return -ENOMEM;
    memset(v + *cap * elem, 0, (c - *cap) * elem);
    *(void **)arr = v;
    *cap = c;
    return 0;
}

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

uint32_t st__ex_process_id(const struct st__ex_process *p)
{
    if (p->have_desc)
        return p->desc_pid;
    return p->have_tid ? p->lowest_tid : 0;
}

const char *st__ex_program(const struct st__ex_process *p)
{
    return p->have_desc && p->program[0] ? p->program : ST__EX_PROGRAM;
}

void st__ex_process_label(const struct st__ex_process *p, char *buf, size_t len)
{
    const char *trace = st__ex_basename(p->trace);
    if (p->have_desc && !p->group_moved)
        snprintf(buf, len, "%.300s", st__ex_program(p));
    else if (p->have_desc)
        snprintf(buf, len, "%.300s (process %u; shown as %u: another process has its id)", st__ex_program(p),
                 (unsigned)p->desc_pid, (unsigned)p->group);
    else if (p->group_is_tid && st__ex_process_id(p) == p->group)
        snprintf(buf, len, ST__EX_PROGRAM " (trace %.300s)", trace);
    else
        snprintf(buf, len, ST__EX_PROGRAM " (trace %.300s; process id not recorded: grouped under %s %u)", trace,
                 p->group_is_tid ? "thread" : "id", (unsigned)p->group);
}

const char *st__ex_basename(const char *path)
{
    if (!path || strcmp(path, "-") == 0)
        return "stdin";
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* --- processes -------------------------------------------------------------------- */

/* A new process, not described yet. */
static int process_new(struct st__ex_ctx *ctx, struct st__ex_process **out)
{
    if ((ctx->nprocs & (ctx->nprocs - 1)) == 0) { /* 0, 1, 2, 4, ...: double the array */
        struct st__ex_process **v = realloc(ctx->procs, (ctx->nprocs ? ctx->nprocs * 2 : 1) * sizeof *v);
        if (!v)
            return -ENOMEM;
        ctx->procs = v;
    }
    struct st__ex_process *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->index = ctx->nprocs;
    ctx->procs[ctx->nprocs++] = p;
    *out = p;
    return 0;
}

/* What input's trace says about its process p. */
static void process_describe(struct st__ex_process *p, const struct st_reader *input)
{
    struct st_trace_description d = {.struct_size = sizeof d};
    p->trace = st_reader_name(input);
    if (st_reader_description(input, &d) < 0 || d.pid == 0)
        return;
    p->have_desc = true;
    p->desc_pid = d.pid;
    snprintf(p->program, sizeof p->program, "%s", d.program);
    snprintf(p->cmdline, sizeof p->cmdline, "%s", d.cmdline);
    snprintf(p->exe, sizeof p->exe, "%s", d.exe ? d.exe : "");
    snprintf(p->host, sizeof p->host, "%s", d.host ? d.host : "");
    p->anchor_mono_ns = d.anchor_mono_ns;
    p->anchor_real_ns = d.anchor_real_ns;
}

/* The process of input i (inputs of one process share it: st_reader_input_process()). */
static int process_of(struct st__ex_ctx *ctx, struct st_reader *r, size_t i, struct st__ex_process **out)
{
    if (i >= ctx->ninputs)
        return -EINVAL; /* cannot happen: the reader numbers its inputs */
    if (!ctx->input_proc[i]) {
        size_t k = st_reader_input_process(r, i);
        if (!ctx->input_proc[k]) {
            int ret = process_new(ctx, &ctx->input_proc[k]);
            if (ret < 0)
                return ret;
            process_describe(ctx->input_proc[k], st_reader_input(r, k));
            if (st_reader_process_count(st_reader_input(r, k)) > 1)
                ctx->input_proc[k]->in_merged_file = k + 1;
        }
        ctx->input_proc[i] = ctx->input_proc[k];
    }
    *out = ctx->input_proc[i];
    return 0;
}

/*
 * The process of rec: its input's, except in a file simpletrace merge wrote
 * (several processes in one input), where rec->process_pid tells them
 * apart and the description in force when it is read is that process's.
 */
static int record_process(struct st__ex_ctx *ctx, struct st_reader *r, const struct st_record *rec,
                          struct st__ex_process **out)
{
    int ret = process_of(ctx, r, rec->input, out);
    if (ret < 0 || (*out)->in_merged_file == 0 || (*out)->desc_pid == rec->process_pid)
        return ret;
    for (size_t i = 0; i < ctx->nprocs; i++) {
        struct st__ex_process *p = ctx->procs[i];
        if (p->in_merged_file == rec->input + 1 && p->have_desc == (rec->process_pid != 0) &&
            p->desc_pid == rec->process_pid) {
            *out = p;
            return 0;
        }
    }
    if ((ret = process_new(ctx, out)) == 0) {
        process_describe(*out, st_reader_input(r, rec->input));
        (*out)->in_merged_file = rec->input + 1;
    }
    return ret;
}

static bool group_taken(const struct st__ex_ctx *ctx, uint32_t group)
{
    for (size_t i = 0; i < ctx->nprocs; i++)
        if (ctx->procs[i]->started && ctx->procs[i]->group == group)
            return true;
    return false;
}

/*
 * p's first record, on thread tid at ts: its Chrome grouping id is the
 * process id its trace records, else that thread's id; one taken by another
 * process (two hosts, the same pid) is replaced by a free one.
 */
static void process_start(struct st__ex_ctx *ctx, struct st__ex_process *p, uint32_t tid, uint64_t ts)
{
    p->group = p->have_desc ? p->desc_pid : tid;
    p->group_is_tid = !p->have_desc;
    while (group_taken(ctx, p->group)) {
        p->group += 0x10000000u;
        p->group_is_tid = false;
        p->group_moved = true;
    }
    p->first_ts = ts;
    p->started = true;
}

static void processes_free(struct st__ex_ctx *ctx)
{
    for (size_t i = 0; i < ctx->nprocs; i++)
        free(ctx->procs[i]);
    free(ctx->procs);
    free(ctx->input_proc);
}

/* --- the thread table ------------------------------------------------------------- */

/* Open addressing on (process, tid); slots hold thread index + 1 (0 = empty). */
struct table {
    uint32_t *slot;
    size_t mask;              /* capacity - 1, a power of two minus one */
    struct st__ex_thread *last; /* the previous record's thread: the common case */
};

static size_t hash_tid(const struct st__ex_process *p, uint32_t tid)
{
    return (size_t)((tid ^ (uint32_t)p->index << 22) * UINT32_C(2654435761));
}

static int table_grow(struct table *tb, struct st__ex_ctx *ctx)
{
    size_t cap = tb->slot ? (tb->mask + 1) * 2 : 64;
    uint32_t *slot = calloc(cap, sizeof *slot);
    if (!slot)
        return -ENOMEM;
    for (size_t i = 0; i < ctx->nthreads; i++) {
        size_t h = hash_tid(ctx->threads[i]->proc, ctx->threads[i]->tid) & (cap - 1);
        while (slot[h])
            h = (h + 1) & (cap - 1);
        slot[h] = (uint32_t)(i + 1);
    }
    free(tb->slot);
    tb->slot = slot;
    tb->mask = cap - 1;
    return 0;
}

/* A new thread tid of p whose first record is at ts, announced to the writer. */
static int thread_new(struct st__ex_ctx *ctx, struct table *tb, struct st__ex_process *p, uint32_t tid, uint64_t ts,
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
    *t = (struct st__ex_thread){
        .tid = tid, .proc = p, .index = ctx->nthreads, .first_ts = ts, .last_ts = ts, .slot = -1};
    ctx->threads[ctx->nthreads++] = t;
    size_t h = hash_tid(p, tid) & tb->mask;
    while (tb->slot[h])
        h = (h + 1) & tb->mask;
    tb->slot[h] = (uint32_t)ctx->nthreads;
    *out = t;
    return ctx->w->thread_new(ctx, t);
}

static int thread_get(struct st__ex_ctx *ctx, struct table *tb, struct st__ex_process *p, uint32_t tid, uint64_t ts,
                      struct st__ex_thread **out)
{
    if (tb->last && tb->last->tid == tid && tb->last->proc == p) {
        *out = tb->last;
        return 0;
    }
    for (size_t h = tb->slot ? hash_tid(p, tid) & tb->mask : 0; tb->slot && tb->slot[h]; h = (h + 1) & tb->mask) {
        struct st__ex_thread *t = ctx->threads[tb->slot[h] - 1];
        if (t->tid == tid && t->proc == p) {
            *out = tb->last = t;
            return 0;
        }
    }
    int ret = thread_new(ctx, tb, p, tid, ts, out);
    if (ret == 0)
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
        return ctx->w->skipped && rec ? ctx->w->skipped(ctx, t, rec, ts) : 0;
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
        return ctx->w->skipped && rec ? ctx->w->skipped(ctx, t, rec, ts) : 0;
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
    ctx->closing = true;
    ctx->close_reason = ST__EX_CLOSE_EARLY;
    while (ret == 0 && t->depth > i) {
        ctx->sum->closed_early++;
        ret = pop(ctx, t, NULL, ts);
    }
    ctx->closing = false;
    return ret ? ret : pop(ctx, t, rec, ts);
}

/* --- keyed spans ---------------------------------------------------------------------- */

/* Ends keyed span o (rec NULL: the engine closes it, for ctx->close_reason) and forgets it. */
static int keyed_end(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                     struct st__ex_open *o, uint64_t ts)
{
    int ret = ctx->w->async_end(ctx, t, rec, o, ts);
    st__ex_keyed_remove(&ctx->keyed, o);
    return ret;
}

static int do_keyed_begin(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                          uint32_t func, uint64_t ts)
{
    if (!ctx->w->async_begin) {
        ctx->sum->instants++;
        return ctx->w->instant(ctx, t, rec, t->depth, ts);
    }
    unsigned arg = ctx->pairs.key_arg[rec->event->index];
    struct st__ex_open *o;
    int ret = st__ex_keyed_get(&ctx->keyed, t->proc, func, &rec->args[arg], &rec->event->args[arg], &o);
    if (ret == 1) { /* the older span ends here: its end never came */
        ctx->sum->key_reused++;
        ctx->closing = true;
        ctx->close_reason = ST__EX_CLOSE_KEY_REUSED;
        ret = ctx->w->async_end(ctx, o->t, NULL, o, ts);
        ctx->closing = false;
        o->user = 0;
    }
    if (ret < 0)
        return ret;
    o->t = t;
    o->begin_ts = ts;
    ctx->sum->calls++;
    return ctx->w->async_begin(ctx, t, rec, o, ts);
}

static int do_keyed_end(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                        uint32_t func, uint64_t ts)
{
    unsigned arg = ctx->pairs.key_arg[rec->event->index];
    struct st__ex_open *o = ctx->w->async_end ? st__ex_keyed_find(&ctx->keyed, t->proc, func, &rec->args[arg]) : NULL;
    if (o)
        return keyed_end(ctx, t, rec, o, ts);
    if (ctx->w->async_end)
        ctx->sum->unmatched_ends++;
    ctx->sum->instants++;
    return ctx->w->instant(ctx, t, rec, t->depth, ts);
}

/* Every keyed span still open ends where the trace ends. */
static int close_keyed(struct st__ex_ctx *ctx)
{
    int ret = 0;
    ctx->closing = true;
    ctx->close_reason = ST__EX_CLOSE_NEVER_ENDED;
    for (size_t i = 0; ret == 0 && i < ctx->keyed.cap; i++) {
        struct st__ex_open *o = &ctx->keyed.slots[i];
        if (o->hash == 0)
            continue;
        ctx->sum->never_ended++;
        ret = ctx->w->async_end(ctx, o->t, NULL, o, ctx->last_ts);
    }
    ctx->closing = false;
    st__ex_keyed_free(&ctx->keyed);
    return ret;
}

/* Every frame still open ends where the trace ends. */
static int close_all(struct st__ex_ctx *ctx)
{
    int ret = close_keyed(ctx);
    ctx->closing = true;
    ctx->close_reason = ST__EX_CLOSE_NEVER_ENDED;
    for (size_t i = 0; i < ctx->nthreads && ret == 0; i++) {
        struct st__ex_thread *t = ctx->threads[i];
        while (ret == 0 && t->depth) {
            ctx->sum->never_ended++;
            ret = pop(ctx, t, NULL, ctx->last_ts);
        }
        t->overflow = 0;
    }
    ctx->closing = false;
    return ret;
}

/* --- the record loop ------------------------------------------------------------------- */

/* The catalog gained events since ctx->ncat: the pairing, then the writer, cover them. */
static int catalog_grow(struct st__ex_ctx *ctx)
{
    int ret = st__ex_pairs_grow(&ctx->pairs, ctx->cat);
    if (ret < 0)
        return ret;
    ctx->ncat = ctx->pairs.n;
    return ctx->w->grow(ctx);
}

/*
 * The thread of a record of process p on thread tid (has_tid: a real one)
 * at *ts, which is raised to the thread's latest time when it went back.
 */
static int place(struct st__ex_ctx *ctx, struct table *tb, struct st__ex_process *p, uint32_t tid, bool has_tid,
                 uint64_t *ts, struct st__ex_thread **out)
{
    if (!ctx->have_record) {
        ctx->have_record = true;
        ctx->first_ts = ctx->last_ts = *ts;
    }
    if (!p->started)
        process_start(ctx, p, tid, *ts);
    if (has_tid && !st__ex_pseudo_thread(tid) && (!p->have_tid || tid < p->lowest_tid)) {
        p->have_tid = true;
        p->lowest_tid = tid;
    }
    struct st__ex_thread *t;
    int ret = thread_get(ctx, tb, p, tid, *ts, &t);
    if (ret < 0)
        return ret;
    if (*ts < t->last_ts) {
        *ts = t->last_ts;
        ctx->sum->clamped++;
    }
    t->last_ts = *ts;
    if (*ts > ctx->last_ts)
        ctx->last_ts = *ts;
    *out = t;
    return 0;
}

static int convert(struct st__ex_ctx *ctx, struct table *tb, struct st_reader *r, const struct st_record *rec)
{
    /* v0 records carry no thread: one thread stands for them all. */
    uint64_t ts = rec->timestamp_ns;
    struct st__ex_process *p;
    struct st__ex_thread *t;
    int ret = rec->event && rec->event->index >= ctx->ncat ? catalog_grow(ctx) : 0;
    if (ret == 0)
        ret = record_process(ctx, r, rec, &p);
    if (ret == 0)
        ret = place(ctx, tb, p, rec->has_pid ? rec->pid : 1, rec->has_pid, &ts, &t);
    if (ret < 0)
        return ret;
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
    case ST__EX_KEYED_BEGIN: return do_keyed_begin(ctx, t, rec, ctx->pairs.func[idx], ts);
    case ST__EX_KEYED_END: return do_keyed_end(ctx, t, rec, ctx->pairs.func[idx], ts);
    default:
        ctx->sum->instants++;
        return ctx->w->instant(ctx, t, rec, t->depth, ts);
    }
}

/* --- the function trace ------------------------------------------------------------------ */

/* A function trace being merged: its reader, its next record, and where its names start. */
struct calls {
    struct st__uft_data *d;
    struct st__uft_call next;
    bool have;          /* next holds a record */
    uint32_t first_func;
    struct st__ex_process **sess_proc; /* by session: its process, once found */
    struct st__ex_process *last;       /* the previous record's process ... */
    uint32_t last_pid;                 /* ... and its process id */
};

static const char *call_func_name(const void *d, size_t i)
{
    return st__uft_data_func(d, i);
}

static int calls_pull(struct st__ex_ctx *ctx, struct calls *c)
{
    int ret = st__uft_data_next(c->d, &c->next, ctx->err, ctx->errlen);
    c->have = ret > 0;
    return ret < 0 ? ret : 0;
}

/* Opens the function trace of o->functions and adds its function names. */
static int calls_open(struct st__ex_ctx *ctx, struct calls *c)
{
    int ret = st__uft_data_open(&c->d, ctx->opts->functions, ctx->err, ctx->errlen);
    if (ret == 0 && !(c->sess_proc = calloc(st__uft_data_sessions(c->d) + 1, sizeof *c->sess_proc)))
        ret = -ENOMEM;
    if (ret == 0)
        ret = st__ex_pairs_add(&ctx->pairs, st__uft_data_funcs(c->d), call_func_name, c->d, &c->first_func);
    return ret;
}

/*
 * The process of function-trace process pid: the one a trace describes
 * with that id (every input's description is known once the first record
 * was read), else one named after the function trace's executable.
 */
static int call_process(struct st__ex_ctx *ctx, struct st_reader *r, struct calls *c, struct st__ex_process **out)
{
    if (c->last && c->last_pid == c->next.pid) {
        *out = c->last;
        return 0;
    }
    c->last_pid = c->next.pid;
    for (size_t i = 0; i < ctx->ninputs; i++) {
        struct st__ex_process *p;
        int ret = process_of(ctx, r, i, &p);
        if (ret < 0)
            return ret;
        if (p->have_desc && p->desc_pid == c->next.pid) {
            *out = c->last = p;
            return 0;
        }
    }
    size_t n = st__uft_data_sessions(c->d), s = 0;
    while (s < n && st__uft_data_session(c->d, s)->pid != (int)c->next.pid)
        s++;
    if (!c->sess_proc[s]) { /* s == n cannot happen: each thread belongs to a session */
        const struct st__uft_session *us = st__uft_data_session(c->d, s);
        int ret = process_new(ctx, &c->sess_proc[s]);
        if (ret < 0)
            return ret;
        struct st__ex_process *p = c->sess_proc[s];
        p->trace = ctx->opts->functions;
        p->have_desc = true;
        p->desc_pid = c->next.pid;
        snprintf(p->program, sizeof p->program, "%s", us ? st__ex_basename(us->exename) : "");
    }
    *out = c->last = c->sess_proc[s];
    return 0;
}

/* An EXIT of the function trace: ends its call when open (nothing to show otherwise). */
static int call_end(struct st__ex_ctx *ctx, struct st__ex_thread *t, uint32_t func, uint64_t ts)
{
    for (uint32_t i = t->depth; i > 0; i--)
        if (t->stack[i - 1] == func)
            return do_end(ctx, t, NULL, func, ts);
    if (t->overflow)
        return do_end(ctx, t, NULL, func, ts);
    ctx->sum->unmatched_ends++; /* its ENTRY is before a --from, or was closed early by an event's end */
    return 0;
}

static int convert_call(struct st__ex_ctx *ctx, struct table *tb, struct st_reader *r, struct calls *c)
{
    const struct st__uft_call *k = &c->next;
    uint64_t ts = k->ts;
    struct st__ex_process *p;
    struct st__ex_thread *t;
    if (k->type == ST_UFT_REC_EVENT) {
        ctx->sum->function_events++;
        return 0;
    }
    int ret = call_process(ctx, r, c, &p);
    if (ret == 0)
        ret = place(ctx, tb, p, k->tid, true, &ts, &t);
    if (ret < 0)
        return ret;
    ctx->sum->function_records++;
    switch (k->type) {
    case ST_UFT_REC_ENTRY: return do_begin(ctx, t, NULL, c->first_func + k->func, ts);
    case ST_UFT_REC_EXIT: return call_end(ctx, t, c->first_func + k->func, ts);
    default:
        ctx->sum->drop_marks++;
        ctx->sum->dropped_events += k->addr;
        return ctx->w->lost(ctx, t, k->addr, t->depth, ts);
    }
}

static void calls_close(struct calls *c)
{
    st__uft_data_close(c->d);
    free(c->sess_proc);
}

/* --- the record loop ------------------------------------------------------------------- */

static int progress(struct st__ex_ctx *ctx, struct st_reader *r)
{
    if (!ctx->opts->progress)
        return 0;
    struct st_reader_counters c = {.struct_size = sizeof c};
    if (st_reader_get_counters(r, &c) < 0)
        return 0; /* cannot happen with our own sizeof; progress is only a display */
    struct st__export_progress p = {.records = c.records, .bytes = c.bytes};
    return ctx->opts->progress(&p, ctx->opts->progress_opaque) ? -EINTR : 0;
}

/* The records of r, merged by time with the function trace's (events first at equal times). */
static int run_records(struct st__ex_ctx *ctx, struct table *tb, struct st_reader *r, struct calls *c)
{
    unsigned countdown = PROGRESS_EVERY;
    const struct st_record *rec = NULL;
    bool more = true; /* r may have records left */
    int ret = c->d ? calls_pull(ctx, c) : 0;
    while (ret == 0 && (more || c->have)) {
        if (more && !rec) {
            ret = st_reader_next(r, &rec);
            if (ret < 0)
                return ret == -EAGAIN ? -EIO : ret; /* -EAGAIN: a follow-mode reader, not ours */
            more = ret > 0;
            if (!more)
                continue;
        }
        if (rec && (!c->have || rec->timestamp_ns <= c->next.ts)) {
            ret = convert(ctx, tb, r, rec);
            rec = NULL;
        } else {
            ret = convert_call(ctx, tb, r, c);
            if (ret == 0)
                ret = calls_pull(ctx, c);
        }
        if (ret == 0 && --countdown == 0) {
            countdown = PROGRESS_EVERY;
            ret = progress(ctx, r);
        }
    }
    return ret;
}

static const struct st__ex_writer *writer_of(enum st__export_format f)
{
    switch (f) {
    case ST_EXPORT_CHROME: return &st__ex_chrome_writer;
    case ST_EXPORT_PERFETTO: return &st__ex_perfetto_writer;
    case ST_EXPORT_CTF: return &st__ex_ctf_writer;
    case ST_EXPORT_FOLDED: return &st__ex_folded_writer;
    case ST_EXPORT_PARQUET: return &st__ex_parquet_writer;
    default: return &st__ex_uftrace_writer;
    }
}

int st__export_run(struct st_reader *r, const struct st__export_options *o, struct st__export_summary *s, char *err,
                  size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (errlen)
        err[0] = '\0';
    struct st__ex_ctx ctx = {.opts = o, .cat = st_reader_catalog(r), .sum = s, .err = err, .errlen = errlen};
    ctx.w = o->writer ? o->writer : writer_of(o->format);
    struct table tb = {0};
    bool opened = false;
    ctx.ninputs = st_reader_input_count(r);
    if (!(ctx.input_proc = calloc(ctx.ninputs, sizeof *ctx.input_proc)))
        return -ENOMEM;
    struct calls calls = {0};
    int ret = st__ex_pairs_build(&ctx.pairs, ctx.cat, o->pairs, o->npairs, o->no_default_pairs, err, errlen);
    ctx.ncat = ctx.pairs.n;
    if (ret == 0 && o->functions)
        ret = calls_open(&ctx, &calls);
    if (ret == 0) {
        ret = ctx.w->open(&ctx);
        opened = true;
    }
    int damage = 0; /* the reader's error after records: what came before is written */
    if (ret == 0) {
        ret = run_records(&ctx, &tb, r, &calls);
        if (ret < 0 && st_reader_error(r)->code != 0 && s->records &&
            !(o->not_damage && o->not_damage(r, o->not_damage_opaque))) {
            damage = ret;
            ret = 0;
        } else if (ret < 0 && st_reader_error(r)->code != 0) {
            /* Nothing read, or not damage: frames open so far are closed anyway, so that JSON on standard
             * output (the only output kept) stays balanced. */
            close_all(&ctx);
        }
    }
    if (ret == 0)
        ret = close_all(&ctx);
    if (ret == 0 && st_catalog_count(ctx.cat) + 1 > ctx.ncat) /* declarations after the last record's */
        ret = catalog_grow(&ctx);
    if (ret == 0 && ctx.nprocs == 0) { /* no record: the writers still name the trace's process */
        struct st__ex_process *p;
        ret = process_of(&ctx, r, 0, &p);
    }
    if (ret == 0)
        ret = ctx.w->finish(&ctx);
    if (opened)
        ctx.w->discard(&ctx);
    const char *unused = st__ex_pairs_unused(&ctx.pairs);
    if (ret == 0 && unused)
        snprintf(s->unused_rule, sizeof s->unused_rule, "%s", unused);
    if (ret == 0)
        s->unused_rules = st__ex_pairs_unused_mask(&ctx.pairs);
    if (ret == 0 && damage) {
        s->partial = true;
        ret = damage;
    }
    if (ret == -ENOMEM && errlen && !err[0])
        snprintf(err, errlen, "out of memory");
    if (ret == -EINTR && errlen && !err[0])
        snprintf(err, errlen, "interrupted");
    s->threads = ctx.nthreads;
    s->functions = ctx.pairs.nfuncs; /* pairs found during the run included */
    threads_free(&ctx, &tb);
    processes_free(&ctx);
    calls_close(&calls);
    st__ex_pairs_free(&ctx.pairs);
    st__ex_keyed_free(&ctx.keyed);
    return ret;
}
