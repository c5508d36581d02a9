/*
 * The spans table: export's engine (st__export_run) run with a writer of
 * our own, as `simpletrace latency` runs it, so a row is exactly a span
 * latency measures: same rules, same nesting, same keyed matching.
 *
 * The engine pushes (it reads the whole trace, calling the writer); SQLite
 * pulls (a row at a time, and may stop early: LIMIT). So the engine runs
 * on a thread of its own and hands spans over in batches: it fills one
 * while SQLite reads another, and waits when SQLite has not taken the last
 * one yet. Memory is three batches, whatever the length of the trace. A
 * cursor closed early sets `cancel`; the writer's next call returns
 * -ECANCELED, which ends the run. The reader belongs to the thread until it
 * is joined. A batch carries its own copies of the names and keys: the
 * engine's tables grow (and move) while SQLite reads.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_internal.h"
#include "sql_internal.h"

#define BATCH_ROWS 4096

struct span_row {
    uint64_t begin, end;
    uint32_t tid, end_tid, pid;
    bool has_pid;
    uint8_t key_type;          /* SQLITE_NULL, SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT */
    sqlite3_int64 key_int;     /* also the key's double's bits */
    size_t name, name_len;     /* in the batch's text */
    size_t key, key_len;
};

struct batch {
    struct span_row *rows;
    size_t n, next;            /* rows filled; the next one to give */
    struct st__growbuf text;
};

/* Per thread of the trace: the begin times of its open frames (the engine keeps only their functions). */
struct stack {
    uint64_t *begin;
    size_t cap;
};

struct st__sql_spans {
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct batch b[3];
    struct batch *fill;        /* the engine's (thread only) */
    struct batch *handed;      /* full, waiting for SQLite (under mu; NULL: none) */
    struct batch *read;        /* SQLite's */
    struct batch *spare;       /* empty, for the engine to take (under mu) */
    bool done;                 /* the run ended (under mu) ... */
    int ret;                   /* ... with this */
    atomic_bool cancel;        /* SQLite stopped reading */
    char run_err[1024];        /* the engine's message */
    struct st_reader *r;
    struct st__export_options ex;
    struct st__export_summary sum;
    struct stack *stacks;      /* by thread index (thread only) */
    size_t nstacks;
    struct span_row *row;      /* the current row (SQLite's side) */
    struct batch *row_batch;
    struct st__growbuf scratch; /* SQLite's side: text made valid UTF-8 */
};

static struct st__sql_spans *spans_of(struct st__ex_ctx *ctx)
{
    return ctx->opts->writer_arg;
}

/* --- the engine's side ------------------------------------------------------------------------ */

/* Hands the filled batch over (waiting until SQLite took the one before) and takes an empty one. */
static int hand_over(struct st__sql_spans *sp)
{
    pthread_mutex_lock(&sp->mu);
    while (sp->handed && !atomic_load(&sp->cancel))
        pthread_cond_wait(&sp->cv, &sp->mu);
    if (atomic_load(&sp->cancel)) {
        pthread_mutex_unlock(&sp->mu);
        return -ECANCELED;
    }
    sp->handed = sp->fill;
    sp->fill = sp->spare;
    sp->spare = NULL;
    pthread_cond_broadcast(&sp->cv);
    while (!sp->fill && !atomic_load(&sp->cancel)) { /* SQLite gives back the batch it read */
        pthread_cond_wait(&sp->cv, &sp->mu);
        sp->fill = sp->spare;
        sp->spare = NULL;
    }
    pthread_mutex_unlock(&sp->mu);
    if (!sp->fill)
        return -ECANCELED;
    sp->fill->n = sp->fill->next = 0;
    sp->fill->text.len = 0;
    return 0;
}

static size_t put_text(struct batch *b, const char *s, size_t n)
{
    size_t at = b->text.len;
    st__growbuf_put(&b->text, s, n);
    return at;
}

/* Sets the row's key from a keyed span's open entry: typed as the key's argument (sql.h). */
static void put_key(struct batch *b, struct span_row *row, const struct st__ex_open *o)
{
    if (o->is_str) {
        row->key_type = SQLITE_TEXT;
        row->key_len = strlen(o->str);
        row->key = put_text(b, o->str, row->key_len);
        return;
    }
    uint64_t v = o->arg->kind == ST_VALUE_POINTER ? o->value : st_arg_value(o->arg, o->value);
    row->key_type = SQLITE_INTEGER;
    row->key_int = (sqlite3_int64)v;
    if (o->arg->kind == ST_VALUE_INTEGER && !o->arg->is_signed && v > INT64_MAX) {
        double d = (double)v;
        row->key_type = SQLITE_FLOAT;
        memcpy(&row->key_int, &d, sizeof d);
    }
}

/* One span of function func, begin .. end. */
static int emit(struct st__ex_ctx *ctx, uint32_t func, struct st__ex_thread *begin, struct st__ex_thread *end,
                uint64_t begin_ts, uint64_t end_ts, const struct st__ex_open *o)
{
    struct st__sql_spans *sp = spans_of(ctx);
    if (sp->fill->n == BATCH_ROWS) {
        int ret = hand_over(sp);
        if (ret < 0)
            return ret;
    }
    struct batch *b = sp->fill;
    struct span_row *row = &b->rows[b->n];
    const char *name = ctx->pairs.names[func];
    *row = (struct span_row){.begin = begin_ts, .end = end_ts, .tid = begin->tid, .end_tid = end->tid,
                             .has_pid = begin->proc->have_desc, .pid = begin->proc->desc_pid,
                             .key_type = SQLITE_NULL, .name_len = strlen(name)};
    row->name = put_text(b, name, row->name_len);
    if (o)
        put_key(b, row, o);
    if (b->text.failed)
        return -ENOMEM;
    b->n++;
    return 0;
}

static int stopped(struct st__ex_ctx *ctx)
{
    return atomic_load_explicit(&spans_of(ctx)->cancel, memory_order_relaxed) ? -ECANCELED : 0;
}

static int sp_open(struct st__ex_ctx *ctx)
{
    (void)ctx;
    return 0;
}

static int sp_thread_new(struct st__ex_ctx *ctx, struct st__ex_thread *t)
{
    struct st__sql_spans *sp = spans_of(ctx);
    return st__ex_reserve(&sp->stacks, &sp->nstacks, t->index + 1, sizeof *sp->stacks);
}

static int sp_enter(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                    uint32_t depth, uint64_t ts)
{
    struct st__sql_spans *sp = spans_of(ctx);
    (void)rec, (void)func;
    if (st__ex_reserve(&sp->stacks, &sp->nstacks, t->index + 1, sizeof *sp->stacks) < 0)
        return -ENOMEM;
    struct stack *st = &sp->stacks[t->index];
    if (st__ex_reserve(&st->begin, &st->cap, depth + 1, sizeof *st->begin) < 0)
        return -ENOMEM;
    st->begin[depth] = ts;
    return stopped(ctx);
}

static int sp_exit(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                   uint32_t depth, uint64_t ts)
{
    struct st__sql_spans *sp = spans_of(ctx);
    (void)rec;
    if (ctx->closing) /* never ended, closed early: no span (latency counts them unfinished) */
        return 0;
    int ret = emit(ctx, func, t, t, sp->stacks[t->index].begin[depth], ts, NULL);
    return ret < 0 ? ret : stopped(ctx);
}

static int sp_instant(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t depth,
                      uint64_t ts)
{
    (void)t, (void)rec, (void)depth, (void)ts;
    return stopped(ctx);
}

static int sp_lost(struct st__ex_ctx *ctx, struct st__ex_thread *t, uint64_t n, uint32_t depth, uint64_t ts)
{
    (void)t, (void)n, (void)depth, (void)ts;
    return stopped(ctx);
}

static int sp_async_begin(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                          struct st__ex_open *o, uint64_t ts)
{
    (void)t, (void)rec, (void)o, (void)ts;
    return stopped(ctx);
}

static int sp_async_end(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                        const struct st__ex_open *o, uint64_t ts)
{
    (void)rec;
    if (ctx->closing) /* key reused, never ended: no span */
        return 0;
    int ret = emit(ctx, o->func, o->t, t, o->begin_ts, ts, o);
    return ret < 0 ? ret : stopped(ctx);
}

static int sp_finish(struct st__ex_ctx *ctx)
{
    (void)ctx;
    return 0;
}

static void sp_discard(struct st__ex_ctx *ctx)
{
    (void)ctx;
}

static const struct st__ex_writer spans_writer = {
    .open = sp_open,
    .grow = sp_open,
    .thread_new = sp_thread_new,
    .enter = sp_enter,
    .exit = sp_exit,
    .instant = sp_instant,
    .lost = sp_lost,
    .async_begin = sp_async_begin,
    .async_end = sp_async_end,
    .finish = sp_finish,
    .discard = sp_discard,
};

static void *run(void *arg)
{
    struct st__sql_spans *sp = arg;
    int ret = st__export_run(sp->r, &sp->ex, &sp->sum, sp->run_err, sizeof sp->run_err);
    if (ret < 0 && ret != -ECANCELED && st_reader_error(sp->r)->code != 0)
        st__sql_reader_error(sp->r, sp->run_err, sizeof sp->run_err);
    pthread_mutex_lock(&sp->mu);
    /* The last batch (after damage too: the spans before it are given), once SQLite took the one before. */
    if (ret != -ECANCELED && sp->fill && sp->fill->n > 0) {
        while (sp->handed && !atomic_load(&sp->cancel))
            pthread_cond_wait(&sp->cv, &sp->mu);
        if (!atomic_load(&sp->cancel)) {
            sp->handed = sp->fill;
            sp->fill = NULL;
        }
    }
    sp->done = true;
    sp->ret = ret;
    pthread_cond_broadcast(&sp->cv);
    pthread_mutex_unlock(&sp->mu);
    return NULL;
}

/* --- SQLite's side ---------------------------------------------------------------------------------- */

int st__sql_spans_start(struct st__sql_spans **out, const struct st__sql_table *t, const struct st__sql_plan *p,
                        char *err, size_t errlen)
{
    struct st__sql_spans *sp = calloc(1, sizeof *sp);
    *out = sp;
    if (!sp)
        goto nomem;
    pthread_mutex_init(&sp->mu, NULL);
    pthread_cond_init(&sp->cv, NULL);
    atomic_init(&sp->cancel, false);
    for (int i = 0; i < 3; i++)
        if (!(sp->b[i].rows = malloc(BATCH_ROWS * sizeof *sp->b[i].rows)))
            goto nomem;
    sp->fill = &sp->b[0];
    sp->read = &sp->b[1];
    sp->spare = &sp->b[2];
    sp->done = true; /* until the thread runs */
    if (p->empty)
        return 0;
    /* Only an end_ts bound is pushed (begin_ts bounds would change what pairs: see vtab.c). */
    struct st__sql_range range = {.have_to = p->range.have_to, .to = p->range.to};
    int ret = st__sql_open(t->src, NULL, 0, &range, &sp->r, err, errlen);
    if (ret != 0)
        return ret < 0 ? ret : 0;
    const struct st__sql_source *src = t->src;
    sp->ex = (struct st__export_options){
        .pairs = (const char *const *)src->pairs,
        .npairs = src->npairs,
        .no_default_pairs = src->no_default_pairs,
        .max_depth = 65535, /* as latency: every span measured */
        .trace_name = src->traces[0],
        .writer = &spans_writer,
        .writer_arg = sp,
    };
    sp->done = false;
    if ((ret = pthread_create(&sp->thread, NULL, run, sp)) != 0) {
        sp->done = true;
        snprintf(err, errlen, "cannot start the spans' thread: %s", strerror(ret));
        return -ret;
    }
    sp->started = true;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
}

int st__sql_spans_next(struct st__sql_spans *sp, char *err, size_t errlen)
{
    struct batch *b = sp->read;
    if (b->next < b->n) {
        sp->row = &b->rows[b->next++];
        sp->row_batch = b;
        return 1;
    }
    pthread_mutex_lock(&sp->mu);
    while (!sp->handed && !sp->done)
        pthread_cond_wait(&sp->cv, &sp->mu);
    if (sp->handed) { /* take it, give back the one read */
        b->n = b->next = 0;
        b->text.len = 0;
        sp->spare = b;
        sp->read = b = sp->handed;
        sp->handed = NULL;
        pthread_cond_broadcast(&sp->cv);
        pthread_mutex_unlock(&sp->mu);
        b->next = 0;
        if (b->n == 0)
            return st__sql_spans_next(sp, err, errlen);
        sp->row = &b->rows[b->next++];
        sp->row_batch = b;
        return 1;
    }
    int ret = sp->ret;
    pthread_mutex_unlock(&sp->mu);
    if (ret < 0) {
        snprintf(err, errlen, "%s", sp->run_err[0] ? sp->run_err : strerror(-ret));
        return ret;
    }
    return 0;
}

int st__sql_spans_cell(struct st__sql_spans *sp, int col, struct st__sql_cell *out)
{
    const struct span_row *row = sp->row;
    const char *text = (const char *)sp->row_batch->text.data;
    struct st__sql_cell c = {.type = SQLITE_INTEGER};
    switch (col) {
    case SPAN_NAME: c = (struct st__sql_cell){.type = SQLITE_TEXT, .s = text + row->name, .n = row->name_len}; break;
    case SPAN_BEGIN: c.i = (sqlite3_int64)row->begin; break;
    case SPAN_END: c.i = (sqlite3_int64)row->end; break;
    case SPAN_DUR: c.i = (sqlite3_int64)(row->end - row->begin); break;
    case SPAN_PID:
        c.i = row->pid;
        c.type = row->has_pid ? SQLITE_INTEGER : SQLITE_NULL;
        break;
    case SPAN_TID: c.i = row->tid; break;
    case SPAN_END_TID: c.i = row->end_tid; break;
    case SPAN_KEY:
        c.type = row->key_type;
        if (row->key_type == SQLITE_TEXT && st__sql_text_cell(&c, &sp->scratch, text + row->key, row->key_len) < 0)
            return -ENOMEM;
        if (row->key_type == SQLITE_INTEGER)
            c.i = row->key_int;
        if (row->key_type == SQLITE_FLOAT)
            memcpy(&c.d, &row->key_int, sizeof c.d);
        break;
    default: c.type = SQLITE_NULL; break;
    }
    *out = c;
    return 0;
}

void st__sql_spans_stop(struct st__sql_spans *sp)
{
    if (!sp)
        return;
    if (sp->started) {
        pthread_mutex_lock(&sp->mu);
        atomic_store(&sp->cancel, true);
        pthread_cond_broadcast(&sp->cv);
        pthread_mutex_unlock(&sp->mu);
        pthread_join(sp->thread, NULL);
    }
    st_reader_close(sp->r);
    for (int i = 0; i < 3; i++) {
        free(sp->b[i].rows);
        st__growbuf_free(&sp->b[i].text);
    }
    for (size_t i = 0; i < sp->nstacks; i++)
        free(sp->stacks[i].begin);
    free(sp->stacks);
    st__growbuf_free(&sp->scratch);
    pthread_mutex_destroy(&sp->mu);
    pthread_cond_destroy(&sp->cv);
    free(sp);
}
