/*
 * The collapsed-stack writer ("folded" stacks, the input of flamegraph.pl,
 * inferno and speedscope): one line per distinct stack,
 *
 *   outer;middle;inner NANOSECONDS
 *
 * the number being the self time spent in exactly that stack: the time
 * its innermost frame was open minus the time its callees were, summed
 * over every call with that stack. Frames are the calls the engine makes
 * (paired events, the function trace's calls), nested per thread; instant
 * events and drop marks have no duration and are not written.
 *
 * What uftrace's `dump --flame-graph --sample-time=1ns` writes for the same
 * function trace, line for line (tests/export/folded_test.py checks it):
 *   - no root frame by default: the stacks of every thread and process are
 *     added together (the same stack string is one line); --folded-root
 *     puts the program (PROGRAM), the process (PROGRAM-PID) or the thread
 *     (PROGRAM-PID/TID) first, as perf's stack collapsing names them;
 *   - frames of the same name are one frame, whatever their ids (two static
 *     functions named alike, a function and a span named alike);
 *   - stacks whose self time is 0 are left out.
 * Unlike uftrace, frames the engine closes (never ended, closed early)
 * count their time until they were closed; uftrace counts a call only when
 * its exit is recorded.
 *
 * Names: after the repair every export makes (utf8.h: each byte of an
 * invalid UTF-8 sequence read as Latin-1), the bytes that would break a
 * line's syntax are written %XX (uppercase hex): ';' (%3B), ' ' (%20),
 * '%' itself (%25) and control characters (%0A, ...). So a frame never
 * holds ';' or blanks, and decoding %XX gives the name back.
 *
 * Memory: a node per distinct stack (a trie: parent, name, self time) with
 * a hash on (parent, name), and per thread a stack of its open frames
 * (node, begin time, callees' time); nothing grows with the number of
 * records. Everything is written at the end, sorted by stack (bytewise),
 * to a file under a temporary name renamed into place, or to standard
 * output ("-"): an error before the end writes nothing.
 */
#include "export_internal.h"
#include "growbuf.h"
#include "utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NO_NODE UINT32_MAX
#define ROOT_BIT UINT32_C(0x80000000) /* a node name: a root frame (thread index), not a function id */
#define MAX_NODES (ROOT_BIT - 1)
#define BUF_BYTES (1u << 16)

/* One distinct stack: its innermost frame's name under its parent's stack. */
struct node {
    uint32_t parent; /* NO_NODE for an outermost frame */
    uint32_t name;   /* function id, or ROOT_BIT | thread index for a root frame */
    uint64_t self;   /* ns spent in this exact stack */
};

/* An open frame of a thread. */
struct frame {
    uint32_t node;
    uint64_t begin; /* its begin's timestamp */
    uint64_t child; /* ns its closed callees took */
};

/* What the writer keeps per thread (by st__ex_thread.index). */
struct fthread {
    struct frame *frames; /* by depth */
    size_t cap;
    uint32_t root;        /* the root frame's node, NO_NODE without --folded-root */
};

/* A line to write: its stack string (off into the text being built, then s) and its self time. */
struct line {
    size_t off;
    const char *s;
    uint64_t self;
};

struct folded {
    struct st__ex_file file;
    bool to_stdout;
    struct node *nodes;
    size_t nnodes, capnodes;
    uint32_t *slot; /* open addressing on (parent, name): node index + 1, 0 = empty */
    size_t mask;    /* slots - 1 */
    struct fthread *threads;
    size_t capthreads;
};

/* --- the trie ---------------------------------------------------------------------- */

static size_t hash_key(uint32_t parent, uint32_t name)
{
    uint64_t k = (uint64_t)parent << 32 | name;
    k *= UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(k >> 32 ^ k);
}

static int slots_grow(struct folded *f)
{
    size_t cap = f->slot ? (f->mask + 1) * 2 : 1024;
    uint32_t *slot = calloc(cap, sizeof *slot);
    if (!slot)
        return -ENOMEM;
    for (size_t i = 0; i < f->nnodes; i++) {
        size_t h = hash_key(f->nodes[i].parent, f->nodes[i].name) & (cap - 1);
        while (slot[h])
            h = (h + 1) & (cap - 1);
        slot[h] = (uint32_t)(i + 1);
    }
    free(f->slot);
    f->slot = slot;
    f->mask = cap - 1;
    return 0;
}

/* The node of name under parent, made if new: *out. 0, -ENOMEM or -EOVERFLOW (with a message). */
static int node_get(struct st__ex_ctx *ctx, struct folded *f, uint32_t parent, uint32_t name, uint32_t *out)
{
    size_t h = f->slot ? hash_key(parent, name) & f->mask : 0;
    for (; f->slot && f->slot[h]; h = (h + 1) & f->mask) {
        const struct node *n = &f->nodes[f->slot[h] - 1];
        if (n->parent == parent && n->name == name) {
            *out = f->slot[h] - 1;
            return 0;
        }
    }
    if (f->nnodes == MAX_NODES)
        return st__ex_fail(ctx, -EOVERFLOW, "more than %u distinct stacks", (unsigned)MAX_NODES);
    if (st__ex_reserve(&f->nodes, &f->capnodes, f->nnodes + 1, sizeof *f->nodes) < 0)
        return -ENOMEM;
    if (!f->slot || (f->nnodes + 1) * 2 > f->mask + 1) {
        int ret = slots_grow(f);
        if (ret < 0)
            return ret;
        h = hash_key(parent, name) & f->mask;
        while (f->slot[h])
            h = (h + 1) & f->mask;
    }
    f->nodes[f->nnodes] = (struct node){.parent = parent, .name = name};
    f->slot[h] = (uint32_t)++f->nnodes;
    *out = (uint32_t)(f->nnodes - 1);
    return 0;
}

/* --- calls --------------------------------------------------------------------------- */

static int folded_open(struct st__ex_ctx *ctx)
{
    struct folded *f = calloc(1, sizeof *f);
    if (!f)
        return -ENOMEM;
    ctx->out = f;
    st__ex_file_init(&f->file);
    const char *out = ctx->opts->output;
    if (!out || !*out)
        return st__ex_fail(ctx, -EINVAL, "no output file");
    f->to_stdout = strcmp(out, "-") == 0;
    return f->to_stdout ? 0 : st__ex_file_open(ctx, &f->file, out);
}

static int folded_grow(struct st__ex_ctx *ctx)
{
    (void)ctx; /* names are looked up by id at the end */
    return 0;
}

static int folded_thread_new(struct st__ex_ctx *ctx, struct st__ex_thread *t)
{
    struct folded *f = ctx->out;
    if (st__ex_reserve(&f->threads, &f->capthreads, t->index + 1, sizeof *f->threads) < 0)
        return -ENOMEM;
    f->threads[t->index].root = NO_NODE;
    if (ctx->opts->folded_root == ST_EXPORT_ROOT_NONE)
        return 0;
    if (t->index >= ROOT_BIT)
        return st__ex_fail(ctx, -EOVERFLOW, "more than %u threads", (unsigned)ROOT_BIT);
    return node_get(ctx, f, NO_NODE, ROOT_BIT | (uint32_t)t->index, &f->threads[t->index].root);
}

static int folded_enter(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                        uint32_t depth, uint64_t ts)
{
    struct folded *f = ctx->out;
    struct fthread *ft = &f->threads[t->index];
    (void)rec;
    if (st__ex_reserve(&ft->frames, &ft->cap, (size_t)depth + 1, sizeof *ft->frames) < 0)
        return -ENOMEM;
    uint32_t parent = depth ? ft->frames[depth - 1].node : ft->root;
    struct frame *fr = &ft->frames[depth];
    fr->begin = ts;
    fr->child = 0;
    return node_get(ctx, f, parent, func, &fr->node);
}

/* A frame closes (by its end, or by the engine): its self time goes to its stack, its time to its caller. */
static int folded_exit(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                       uint32_t depth, uint64_t ts)
{
    struct folded *f = ctx->out;
    struct frame *fr = &f->threads[t->index].frames[depth];
    (void)rec;
    (void)func;
    uint64_t dur = ts - fr->begin; /* the engine keeps each thread's times from going back */
    f->nodes[fr->node].self += dur > fr->child ? dur - fr->child : 0;
    if (depth)
        fr[-1].child += dur;
    return 0;
}

static int folded_instant(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                          uint32_t depth, uint64_t ts)
{
    (void)ctx, (void)t, (void)rec, (void)depth, (void)ts;
    return 0; /* no duration: nothing to add */
}

static int folded_lost(struct st__ex_ctx *ctx, struct st__ex_thread *t, uint64_t count, uint32_t depth, uint64_t ts)
{
    (void)ctx, (void)t, (void)count, (void)depth, (void)ts;
    return 0;
}

/* --- the end: stack strings, sorted, merged, written ----------------------------------------- */

/* Appends name as a frame (see the top: repaired UTF-8, ';', ' ', '%' and controls as %XX). */
static void put_frame(struct st__growbuf *b, const char *name)
{
    static const char hex[] = "0123456789ABCDEF";
    const uint8_t *s = (const uint8_t *)name;
    size_t n = strlen(name);
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        size_t len = c >= 0x80 ? st__utf8_seq(s + i, n - i) : 1;
        uint8_t *p = st__growbuf_room(b, 4);
        if (!p)
            return;
        if (c >= 0x80 && len == 0) { /* an invalid byte: its Latin-1 character */
            p[0] = (uint8_t)(0xc0 | c >> 6);
            p[1] = (uint8_t)(0x80 | (c & 0x3f));
            st__growbuf_commit(b, 2);
            i++;
        } else if (c >= 0x80) {
            st__growbuf_put(b, s + i, len);
            i += len;
        } else if (c == ';' || c == ' ' || c == '%' || c < 0x20 || c == 0x7f) {
            p[0] = '%';
            p[1] = (uint8_t)hex[c >> 4];
            p[2] = (uint8_t)hex[c & 15];
            st__growbuf_commit(b, 3);
            i++;
        } else {
            *p = c;
            st__growbuf_commit(b, 1);
            i++;
        }
    }
}

/* The label of root frame (thread index i) as --folded-root asks. */
static void put_root(struct st__ex_ctx *ctx, struct st__growbuf *b, size_t i)
{
    const struct st__ex_thread *t = ctx->threads[i];
    char label[600];
    const char *prog = st__ex_program(t->proc);
    unsigned pid = (unsigned)st__ex_process_id(t->proc);
    switch (ctx->opts->folded_root) {
    case ST_EXPORT_ROOT_THREAD: snprintf(label, sizeof label, "%.500s-%u/%u", prog, pid, (unsigned)t->tid); break;
    case ST_EXPORT_ROOT_PROCESS: snprintf(label, sizeof label, "%.500s-%u", prog, pid); break;
    default: snprintf(label, sizeof label, "%.500s", prog); break;
    }
    put_frame(b, label);
}

/* Appends node's stack string, outermost frame first, and a NUL. */
static void put_stack(struct st__ex_ctx *ctx, const struct folded *f, struct st__growbuf *b, uint32_t node,
                      uint32_t *path)
{
    size_t n = 0;
    for (uint32_t k = node; k != NO_NODE; k = f->nodes[k].parent)
        path[n++] = k;
    while (n--) {
        uint32_t name = f->nodes[path[n]].name;
        if (name & ROOT_BIT)
            put_root(ctx, b, name & ~ROOT_BIT);
        else
            put_frame(b, ctx->pairs.names[name]);
        st__growbuf_put(b, n ? ";" : "", 1); /* the NUL ends the stack */
    }
}

static int line_cmp(const void *a, const void *b)
{
    return strcmp(((const struct line *)a)->s, ((const struct line *)b)->s);
}

/* Writes what out holds to the output; empties it. */
static int flush_out(struct st__ex_ctx *ctx, struct folded *f, struct st__growbuf *out)
{
    int ret = st__write_all(f->to_stdout ? STDOUT_FILENO : f->file.out.fd, out->data, out->len);
    out->len = 0;
    return ret ? st__ex_fail(ctx, ret, "cannot write %s", f->to_stdout ? "standard output" : f->file.path) : 0;
}

/* The lines in order, equal stacks merged, stacks of no time left out. */
static int write_lines(struct st__ex_ctx *ctx, struct folded *f, const struct line *lines, size_t n)
{
    struct st__growbuf out = {0};
    int ret = 0;
    for (size_t i = 0; i < n && ret == 0;) {
        uint64_t self = 0;
        size_t j = i;
        for (; j < n && strcmp(lines[j].s, lines[i].s) == 0; j++)
            self += lines[j].self;
        if (self)
            st__growbuf_printf(&out, "%s %llu\n", lines[i].s, (unsigned long long)self);
        i = j;
        if (out.failed)
            ret = -ENOMEM;
        else if (out.len >= BUF_BYTES || i == n)
            ret = flush_out(ctx, f, &out);
    }
    st__growbuf_free(&out);
    return ret;
}

static int folded_finish(struct st__ex_ctx *ctx)
{
    struct folded *f = ctx->out;
    struct st__growbuf text = {0};
    struct line *lines = NULL;
    size_t nlines = 0, maxdepth = 1;
    int ret = -ENOMEM;
    for (size_t i = 0; i < f->capthreads; i++)
        maxdepth = f->threads[i].cap + 1 > maxdepth ? f->threads[i].cap + 1 : maxdepth;
    uint32_t *path = malloc(maxdepth * sizeof *path); /* a stack is at most the deepest thread's, and a root */
    if (!path || (f->nnodes && !(lines = malloc(f->nnodes * sizeof *lines))))
        goto out;
    for (size_t i = 0; i < f->nnodes; i++) {
        if (!f->nodes[i].self)
            continue;
        lines[nlines++] = (struct line){.off = text.len, .self = f->nodes[i].self};
        put_stack(ctx, f, &text, (uint32_t)i, path);
    }
    if (text.failed)
        goto out;
    for (size_t i = 0; i < nlines; i++) /* the text is complete: it moves no more */
        lines[i].s = (const char *)text.data + lines[i].off;
    if (nlines) /* qsort wants an array, even of none */
        qsort(lines, nlines, sizeof *lines, line_cmp);
    ret = write_lines(ctx, f, lines, nlines);
    if (ret == 0 && !f->to_stdout)
        ret = st__ex_file_install(ctx, &f->file);
out:
    free(path);
    free(lines);
    st__growbuf_free(&text);
    return ret;
}

static void folded_discard(struct st__ex_ctx *ctx)
{
    struct folded *f = ctx->out;
    if (!f)
        return;
    st__ex_file_discard(&f->file);
    for (size_t i = 0; i < f->capthreads; i++) /* zeroed beyond the threads seen */
        free(f->threads[i].frames);
    free(f->threads);
    free(f->nodes);
    free(f->slot);
    free(f);
    ctx->out = NULL;
}

const struct st__ex_writer st__ex_folded_writer = {
    .open = folded_open,
    .grow = folded_grow,
    .thread_new = folded_thread_new,
    .enter = folded_enter,
    .exit = folded_exit,
    .instant = folded_instant,
    .lost = folded_lost,
    .finish = folded_finish,
    .discard = folded_discard,
};
