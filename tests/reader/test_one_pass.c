/*
 * The one-pass reader through the C API: a self-describing v4 trace built
 * here (header, description, a mapping and a declaration per event, events
 * with integers and strings, a dropped record, an event declared late, as a
 * merged file or a group loaded later declares it) is read without a
 * catalog, whole and cut at every byte offset, from memory and from a pipe
 * (st_reader_open_stream, read once). Every cut gives exactly the complete
 * records before it, then -ENODATA naming the cut record's offset (or a
 * clean end at a record boundary); the catalog grows with the declarations
 * and never moves an event. Filters judge the events declared late.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simpletrace/reader.h>

#include "tap.h"

/* --- a trace, built by hand (meta_format.h, trace_format.h) ----------------------------- */

struct buf {
    uint8_t data[8192];
    size_t len;
    size_t starts[64]; /* where each record after the header starts ... */
    int is_event[64];  /* ... and whether it is an event or dropped record */
    size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put64(struct buf *b, uint64_t v)
{
    put(b, &v, 8);
}

static void put32(struct buf *b, uint32_t v)
{
    put(b, &v, 4);
}

static void mapping(struct buf *b, uint64_t id, const char *name)
{
    b->starts[b->n] = b->len;
    b->is_event[b->n++] = 0;
    put64(b, 0);
    put64(b, id);
    put32(b, (uint32_t)strlen(name));
    put(b, name, strlen(name));
}

/* An event record of id with the integer x and the string s (NULL: no string). */
static void event(struct buf *b, uint64_t id, uint64_t ts, uint64_t x, const char *s)
{
    uint32_t len = 24 + 8 + (s ? 4 + (uint32_t)strlen(s) : 0);
    b->starts[b->n] = b->len;
    b->is_event[b->n++] = 1;
    put64(b, 1);
    put64(b, id);
    put64(b, ts);
    put32(b, len);
    put32(b, 4242);
    put64(b, x);
    if (s) {
        put32(b, (uint32_t)strlen(s));
        put(b, s, strlen(s));
    }
}

#define DECL(id) (UINT64_C(0xfffffffe00000000) + (id))

static void build(struct buf *b)
{
    memset(b, 0, sizeof *b);
    put64(b, UINT64_C(0xffffffffffffffff));
    put64(b, UINT64_C(0xf2b177cb0aa429b4));
    put64(b, 4);
    mapping(b, UINT64_C(0xffffffffffffff00), "simpletrace=1\npid=4242\nprogram=built\nhost=h\n");
    mapping(b, 0, "job_start");
    mapping(b, DECL(0), "job_start(int worker, const char *what) \"worker %d %s\"");
    mapping(b, 1, "job_done");
    mapping(b, DECL(1), "job_done(uint64_t job, const char *how) \"job %\" PRIu64 \" %s\"");
    event(b, 0, 1000, 1, "first");
    event(b, 1, 1100, 7, "ok");
    b->starts[b->n] = b->len; /* a dropped record: 3 events lost */
    b->is_event[b->n++] = 1;
    put64(b, 1);
    put64(b, UINT64_C(0xfffffffffffffffe));
    put64(b, 1150);
    put32(b, 32);
    put32(b, 4242);
    put64(b, 3);
    mapping(b, 2, "late_tick"); /* declared after records of others: the catalog grows mid-file */
    mapping(b, DECL(2), "late_tick(int n, const char *s) \"n %d %s\"");
    event(b, 2, 1200, 5, "late");
    event(b, 0, 1300, 2, "second");
    event(b, 2, 1400, 6, "later");
}

/* --- reading ------------------------------------------------------------------------- */

/* What one read gave: records (name, first integer), then the end. */
struct outcome {
    int nrec;
    char names[16][32];
    uint64_t first[16];
    int end;            /* 0, or the error */
    uint64_t err_offset;
    size_t count;       /* the catalog's events at the end */
    int stable;         /* every record's event was its catalog's at its index, and stayed so */
};

static void drain(struct st_reader *r, struct outcome *o)
{
    const struct st_record *rec;
    const struct st_event_info *seen[16];
    int ret;
    memset(o, 0, sizeof *o);
    o->stable = 1;
    while ((ret = st_reader_next(r, &rec)) == 1 && o->nrec < 16) {
        const struct st_catalog *cat = st_reader_catalog(r);
        if (st_catalog_event(cat, rec->event->index) != rec->event)
            o->stable = 0;
        seen[o->nrec] = rec->event;
        snprintf(o->names[o->nrec], sizeof o->names[0], "%s", rec->name);
        o->first[o->nrec++] = rec->args[0].u64;
    }
    o->end = ret;
    o->err_offset = st_reader_error(r)->offset;
    o->count = st_catalog_count(st_reader_catalog(r));
    for (int i = 0; i < o->nrec; i++)
        if (st_catalog_event(st_reader_catalog(r), seen[i]->index) != seen[i])
            o->stable = 0; /* an event moved after it was handed out */
}

static void read_memory(const uint8_t *data, size_t size, const char *events, struct outcome *o)
{
    struct st_reader_options opt = {.struct_size = sizeof opt, .events = events};
    struct st_reader *r = NULL;
    if (st_reader_open_memory(&r, data, size, "mem", NULL, &opt, NULL) < 0) {
        memset(o, 0, sizeof *o);
        o->end = -999;
        return;
    }
    drain(r, o);
    st_reader_close(r);
}

struct feeder {
    int fd;
    const uint8_t *data;
    size_t size;
};

static void *feed(void *arg)
{
    struct feeder *f = arg;
    for (size_t off = 0; off < f->size;) { /* in small writes: the reader meets partial records */
        size_t n = f->size - off < 7 ? f->size - off : 7;
        ssize_t w = write(f->fd, f->data + off, n);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(f->fd);
    return NULL;
}

static void read_pipe(const uint8_t *data, size_t size, struct outcome *o)
{
    int fds[2];
    pthread_t t;
    struct st_reader *r = NULL;
    if (pipe(fds) < 0)
        abort();
    struct feeder f = {fds[1], data, size};
    pthread_create(&t, NULL, feed, &f);
    FILE *in = fdopen(fds[0], "rb");
    if (st_reader_open_stream(&r, in, "pipe", NULL, NULL, NULL) < 0)
        abort();
    drain(r, o);
    st_reader_close(r);
    fclose(in);
    pthread_join(t, NULL);
}

/* The outcome a cut at cut must give, from the whole read's records. */
static void expected(const struct buf *b, const struct outcome *whole, size_t cut, int *nrec, int *end, uint64_t *at)
{
    int events = 0;
    *at = 0;
    *end = cut < 24 ? -ENODATA : 0;
    for (size_t i = 0; i < b->n; i++) {
        size_t stop = i + 1 < b->n ? b->starts[i + 1] : b->len;
        if (stop <= cut) {
            events += b->is_event[i];
        } else if (b->starts[i] < cut) {
            *end = -ENODATA;
            *at = b->starts[i];
        }
    }
    *nrec = events;
    (void)whole;
}

static int same_prefix(const struct outcome *o, const struct outcome *whole, int n)
{
    if (o->nrec != n)
        return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(o->names[i], whole->names[i]) || o->first[i] != whole->first[i])
            return 0;
    return 1;
}

int main(void)
{
    static struct buf b;
    struct outcome whole, o;
    build(&b);

    read_memory(b.data, b.len, NULL, &whole);
    ok(whole.end == 0 && whole.nrec == 6 && whole.stable, "whole: 6 records, a clean end (%d, %d)", whole.nrec,
       whole.end);
    ok(!strcmp(whole.names[2], "Dropped_Event") && whole.first[2] == 3, "the dropped record's count");
    ok(!strcmp(whole.names[3], "late_tick") && whole.first[3] == 5 && !strcmp(whole.names[5], "late_tick"),
       "an event declared after other records decodes");
    ok(whole.count == 3, "the catalog grew to the 3 declared events (%zu)", whole.count);

    int bad_mem = 0, bad_pipe = 0;
    size_t first_bad = 0;
    for (size_t cut = 0; cut <= b.len; cut++) {
        int n, end;
        uint64_t at;
        expected(&b, &whole, cut, &n, &end, &at);
        read_memory(b.data, cut, NULL, &o);
        if (!same_prefix(&o, &whole, n) || o.end != end || (end && cut >= 24 && o.err_offset != at) || !o.stable) {
            if (!bad_mem++)
                first_bad = cut;
        }
        read_pipe(b.data, cut, &o);
        if (!same_prefix(&o, &whole, n) || o.end != end || (end && cut >= 24 && o.err_offset != at))
            bad_pipe++;
    }
    ok(bad_mem == 0, "memory, cut at every byte (%zu cuts): the complete records, then -ENODATA at the cut record "
       "(%d wrong, the first at %zu)", b.len + 1, bad_mem, first_bad);
    ok(bad_pipe == 0, "a pipe, read once, cut at every byte: the same (%d wrong)", bad_pipe);

    read_memory(b.data, b.len, "late_*", &o);
    ok(o.end == 0 && o.nrec == 2 && !strcmp(o.names[0], "late_tick"),
       "a filter selects an event declared after it was compiled (%d records)", o.nrec);
    read_memory(b.data, b.len, "*,-late_*", &o);
    ok(o.end == 0 && o.nrec == 4, "... and excludes one (%d records)", o.nrec);

    struct st_catalog *cat = NULL;
    char err[256] = "";
    const char *path = "/dev/null";
    ok(st_catalog_load_trace(&cat, path, NULL, err, sizeof err) < 0 && strstr(err, "empty"),
       "st_catalog_load_trace of an empty file: an error saying so (%s)", err);
    return done_testing();
}
