/*
 * The growing-structure rule of reader.h on every structure a caller
 * allocates: a struct_size below the first layout is -EINVAL (with a
 * message where there is an error channel, nothing written where the
 * structure itself is too small); a struct_size larger than the library
 * knows works, what lies beyond is ignored when read and zeroed when
 * written; arrays are walked with the first element's struct_size as the
 * stride; NULL options still mean defaults.
 *
 * usage: test_struct_size SHARED_DIR
 */
#include <errno.h>
#include <stddef.h>

#include <simpletrace/reader.h>

#include "rd_util.h"
#include "tap.h"

/* The first layouts, computed here independently of the library: up to the end of the last field. */
#define THROUGH(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))
#define OPTIONS_V1 THROUGH(struct st_reader_options, to_ns)
#define ERROR_V1 THROUGH(struct st_reader_error, message)
#define COUNTERS_V1 THROUGH(struct st_reader_counters, bytes)
#define PIECE_V1 THROUGH(struct st_reader_piece, size)
#define FORMATTER_V1 THROUGH(struct st_formatter_options, out)
#define ANALYZER_V1 THROUGH(struct st_analyzer, catchall)
#define HANDLER_V1 THROUGH(struct st_analyzer_handler, fn)

/* What a newer release's program could pass: the structure and fields this library does not know. */
#define FUTURE_BYTES 40
#define JUNK 0xa5

static struct st_catalog *cat;
static char *trace; /* arg_kinds.bin: 12 records, 7 of them ev_str */
static size_t trace_len;

/* Records a reader delivers to its end (-1 on an error). */
static int count(struct st_reader *r)
{
    const struct st_record *rec;
    int n = 0, ret;
    while ((ret = st_reader_next(r, &rec)) == 1)
        n++;
    return ret == 0 ? n : -1;
}

/* Whether the n bytes at p all equal c. */
static bool all_bytes(const void *p, size_t n, unsigned char c)
{
    for (size_t i = 0; i < n; i++)
        if (((const unsigned char *)p)[i] != c)
            return false;
    return true;
}

/* --- st_reader_options and st_reader_error ------------------------------------- */

static void test_options_too_small(void)
{
    struct st_reader *r = (struct st_reader *)&r;
    struct st_reader_error err = {.struct_size = sizeof err};
    struct st_reader_options o = {.struct_size = (uint32_t)OPTIONS_V1 - 1, .events = "ev_str"};

    is_int(st_reader_open_memory(&r, trace, trace_len, "m", cat, &o, &err), -EINVAL, "options one byte short: -EINVAL");
    ok(r == NULL && err.code == -EINVAL && strstr(err.message, "struct_size"), "... *out NULL, message: %s",
       err.message);
    o.struct_size = 0;
    is_int(st_reader_open(&r, "/nonexistent", cat, &o, &err), -EINVAL, "open: struct_size 0 is -EINVAL before open()");
    FILE *f = fmemopen(trace, trace_len, "rb");
    is_int(st_reader_open_stream(&r, f, "s", cat, &o, NULL), -EINVAL, "open_stream: -EINVAL, no error channel needed");
    fclose(f);
    struct st_reader_piece piece = {.struct_size = sizeof piece, .name = "m", .data = trace, .size = trace_len};
    is_int(st_reader_open_pieces(&r, &piece, 1, cat, &o, &err), -EINVAL, "open_pieces: -EINVAL");
    ok(r == NULL, "... and no reader");
}

static void test_options_larger(void)
{
    struct big_options {
        struct st_reader_options o;
        unsigned char future[FUTURE_BYTES];
    } big;
    memset(&big, JUNK, sizeof big); /* also the padding and the fields we set below */
    big.o = (struct st_reader_options){.struct_size = sizeof big, .events = "ev_str"};
    memset(big.future, JUNK, sizeof big.future);
    struct st_reader *r = NULL;
    struct st_reader_error err = {.struct_size = sizeof err};
    is_int(st_reader_open_memory(&r, trace, trace_len, "m", cat, &big.o, &err), 0,
           "options with %zu bytes the library does not know: opens", sizeof big.future);
    is_int(count(r), 7, "... its known fields apply (--events=ev_str: 7 records), the rest is ignored");
    st_reader_close(r);

    struct st_reader_options exact = {.struct_size = (uint32_t)OPTIONS_V1, .events = "ev_str"};
    is_int(st_reader_open_memory(&r, trace, trace_len, "m", cat, &exact, NULL), 0, "struct_size = the first layout");
    is_int(count(r), 7, "... works the same");
    st_reader_close(r);

    /* A program built before filter_pid was added: whatever lies past its structure is not filter_pid. */
    union {
        struct st_reader_options o;
        unsigned char bytes[sizeof(struct st_reader_options)];
    } old;
    memset(&old, JUNK, sizeof old);
    old.o.struct_size = (uint32_t)OPTIONS_V1;
    old.o.flags = 0;
    old.o.buffer_size = 0;
    old.o.events = "ev_str";
    old.o.filter_tid = false;
    old.o.filter_from = old.o.filter_to = false;
    is_int(st_reader_open_memory(&r, trace, trace_len, "m", cat, &old.o, NULL), 0,
           "the first layout with junk where filter_pid now is: opens");
    is_int(count(r), 7, "... the junk is not read as a process filter (7 records, no -EOPNOTSUPP)");
    st_reader_close(r);
    /* filter_tid sits where that program's filter_pid was: the same field filter, same offset. */
    struct st_reader_options tid = {.struct_size = (uint32_t)OPTIONS_V1, .filter_tid = true, .tid = 4243};
    is_int(st_reader_open_memory(&r, trace, trace_len, "m", cat, &tid, NULL), 0, "the first layout, filter_tid");
    is_int(count(r), 0, "... selects by the pid field (no record is 4243's)");
    st_reader_close(r);

    is_int(st_reader_open_memory(&r, trace, trace_len, "m", cat, NULL, NULL), 0, "NULL options: defaults");
    is_int(count(r), 12, "... every record");
    st_reader_close(r);
}

static void test_error_sizes(void)
{
    struct st_reader *r = (struct st_reader *)&r;
    struct st_reader_options bad = {.struct_size = sizeof bad, .events = "ev_x,"}; /* an empty glob */
    union {
        struct st_reader_error e;
        unsigned char bytes[sizeof(struct st_reader_error)];
    } small;
    memset(&small, 'Z', sizeof small);
    small.e.struct_size = (uint32_t)ERROR_V1 - 1;
    is_int(st_reader_open_memory(&r, trace, trace_len, "m", cat, &bad, &small.e), -EINVAL,
           "an error structure one byte short: -EINVAL");
    ok(r == NULL && all_bytes(small.bytes + 4, sizeof small - 4, 'Z'), "... and nothing written to it");
    small.e.struct_size = (uint32_t)ERROR_V1 - 1;
    is_int(st_reader_open_memory(&r, trace, trace_len, "m", cat, NULL, &small.e), -EINVAL,
           "... even when the open would have worked");

    struct big_error {
        struct st_reader_error e;
        unsigned char future[FUTURE_BYTES];
    } big;
    memset(&big, JUNK, sizeof big);
    big.e.struct_size = sizeof big;
    is_int(st_reader_open_memory(&r, trace, trace_len, "m", cat, &bad, &big.e), -EINVAL, "a larger error structure");
    ok(big.e.code == -EINVAL && strstr(big.e.message, "ev_x,") && big.e.offset == 0 && big.e.record == 0,
       "... gets the error: %s", big.e.message);
    ok(big.e.struct_size == sizeof big, "... keeps the caller's struct_size");
    ok(all_bytes(big.future, sizeof big.future, 0), "... and what this library does not know reads as zero");
}

/* --- st_reader_counters ----------------------------------------------------------- */

static void test_counters(void)
{
    struct st_reader *r = NULL;
    st_reader_open_memory(&r, trace, trace_len, "m", cat, NULL, NULL);
    is_int(count(r), 12, "read to the end");

    union {
        struct st_reader_counters c;
        unsigned char bytes[sizeof(struct st_reader_counters)];
    } small;
    memset(&small, 'Z', sizeof small);
    small.c.struct_size = (uint32_t)COUNTERS_V1 - 1;
    is_int(st_reader_get_counters(r, &small.c), -EINVAL, "counters one byte short: -EINVAL");
    ok(all_bytes(small.bytes + 4, sizeof small - 4, 'Z'), "... and nothing written");

    struct st_reader_counters c = {.struct_size = sizeof c};
    is_int(st_reader_get_counters(r, &c), 0, "counters of the right size");
    struct big_counters {
        struct st_reader_counters c;
        unsigned char future[FUTURE_BYTES];
    } big;
    memset(&big, JUNK, sizeof big);
    big.c.struct_size = sizeof big;
    is_int(st_reader_get_counters(r, &big.c), 0, "larger counters: 0");
    ok(big.c.records == c.records && big.c.events == c.events && big.c.bytes == c.bytes && c.events == 12 &&
           c.bytes == trace_len,
       "... the same values (%llu events, %llu bytes)", (unsigned long long)big.c.events,
       (unsigned long long)big.c.bytes);
    ok(big.c.struct_size == sizeof big && all_bytes(big.future, sizeof big.future, 0),
       "... struct_size kept, unknown counters zero");
    st_reader_close(r);
}

/* --- st_reader_piece arrays ----------------------------------------------------------- */

static void test_pieces(void)
{
    struct big_piece {
        struct st_reader_piece p;
        unsigned char future[FUTURE_BYTES];
    } big[3];
    static const char *const names[3] = {"p0", "p1", "p2"};
    memset(big, JUNK, sizeof big);
    for (int i = 0; i < 3; i++)
        big[i].p = (struct st_reader_piece){.struct_size = sizeof big[0], .name = names[i], .data = trace,
                                            .size = trace_len};
    struct st_reader *r = NULL;
    is_int(st_reader_open_pieces(&r, &big[0].p, 3, cat, NULL, NULL), 0,
           "pieces %zu bytes apart (struct_size %zu > sizeof %zu)", sizeof big[0], sizeof big[0],
           sizeof(struct st_reader_piece));
    is_int(count(r), 36, "... all three pieces are read (3 x 12 records)");
    is_str(st_reader_name(r), "p2", "... the last one by its name");
    st_reader_close(r);

    struct st_reader_piece small[2] = {{.struct_size = (uint32_t)PIECE_V1 - 1, .name = "a", .data = trace,
                                        .size = trace_len},
                                       {.struct_size = sizeof small[1], .name = "b", .data = trace,
                                        .size = trace_len}};
    struct st_reader_error err = {.struct_size = sizeof err};
    r = (struct st_reader *)&r;
    is_int(st_reader_open_pieces(&r, small, 2, cat, NULL, &err), -EINVAL, "first piece one byte short: -EINVAL");
    ok(r == NULL && strstr(err.message, "st_reader_piece"), "... message: %s", err.message);
}

/* --- st_formatter_options ------------------------------------------------------------ */

/* The text of every record of the trace through a formatter made with opts; NULL if it cannot be made. */
static char *format_with(const struct st_formatter_options *opts, int *ret)
{
    struct st_formatter *f = NULL;
    if ((*ret = st_formatter_new(&f, cat, opts)) < 0)
        return NULL;
    struct st_reader *r = NULL;
    st_reader_open_memory(&r, trace, trace_len, "m", cat, NULL, NULL);
    const struct st_record *rec;
    while (st_reader_next(r, &rec) == 1)
        st_formatter_write(f, rec);
    size_t len;
    const char *text = st_formatter_buffered(f, &len);
    char *copy = strndup(text, len);
    st_formatter_free(f);
    st_reader_close(r);
    return copy;
}

static void test_formatter(void)
{
    int ret;
    struct st_formatter_options small = {.struct_size = (uint32_t)FORMATTER_V1 - 1, .format = ST_OUTPUT_JSON};
    ok(format_with(&small, &ret) == NULL && ret == -EINVAL, "formatter options one byte short: -EINVAL");

    struct st_formatter_options plain = {.struct_size = sizeof plain, .format = ST_OUTPUT_JSON};
    char *want = format_with(&plain, &ret);
    struct big_fo {
        struct st_formatter_options o;
        unsigned char future[FUTURE_BYTES];
    } big;
    memset(&big, JUNK, sizeof big);
    big.o = (struct st_formatter_options){.struct_size = sizeof big, .format = ST_OUTPUT_JSON};
    memset(big.future, JUNK, sizeof big.future);
    char *got = format_with(&big.o, &ret);
    ok(want && got && strlen(want) > 100 && !strcmp(want, got), "larger formatter options: the same JSON (%zu bytes)",
       want ? strlen(want) : 0);
    free(want);
    free(got);
}

/* --- st_analyzer and its handlers ------------------------------------------------------ */

struct tally {
    int begins, str, other;
};

static int on_begin(void *o)
{
    ((struct tally *)o)->begins++;
    return 0;
}

static int on_str(const struct st_record *rec, void *o)
{
    (void)rec;
    ((struct tally *)o)->str++;
    return 0;
}

static int on_other(const struct st_record *rec, void *o)
{
    (void)rec;
    ((struct tally *)o)->other++;
    return 0;
}

/* Runs a over the trace into *t; what st_analyzer_run returned. */
static int run(const struct st_analyzer *a, struct tally *t)
{
    struct st_reader *r = NULL;
    memset(t, 0, sizeof *t);
    st_reader_open_memory(&r, trace, trace_len, "m", cat, NULL, NULL);
    int ret = st_analyzer_run(a, r);
    st_reader_close(r);
    return ret;
}

static void test_analyzer(void)
{
    struct tally t;
    struct big_handler {
        struct st_analyzer_handler h;
        unsigned char future[FUTURE_BYTES];
    } hs[2];
    memset(hs, JUNK, sizeof hs);
    hs[0].h = (struct st_analyzer_handler){.struct_size = sizeof hs[0], .event = "ev_noargs", .fn = on_other};
    hs[1].h = (struct st_analyzer_handler){.struct_size = sizeof hs[1], .event = "ev_str", .fn = on_str};
    struct big_analyzer {
        struct st_analyzer a;
        unsigned char future[FUTURE_BYTES];
    } big;
    memset(&big, JUNK, sizeof big);
    big.a = (struct st_analyzer){.struct_size = sizeof big, .opaque = &t, .begin = on_begin, .handlers = &hs[0].h,
                                 .nhandlers = 2};
    memset(big.future, JUNK, sizeof big.future);
    is_int(run(&big.a, &t), 0, "larger analyzer and handlers %zu bytes apart: runs", sizeof hs[0]);
    ok(t.begins == 1 && t.str == 7 && t.other == 1, "... both handlers found by stride (%d ev_str, %d ev_noargs)",
       t.str, t.other);

    struct st_analyzer small = big.a;
    small.struct_size = (uint32_t)ANALYZER_V1 - 1;
    is_int(run(&small, &t), -EINVAL, "analyzer one byte short: -EINVAL");
    ok(t.begins == 0 && t.str == 0, "... and nothing is called");

    struct st_analyzer_handler short_h[1] = {{.struct_size = (uint32_t)HANDLER_V1 - 1, .event = "ev_str",
                                              .fn = on_str}};
    struct st_analyzer a = {.struct_size = sizeof a, .opaque = &t, .begin = on_begin, .handlers = short_h,
                            .nhandlers = 1};
    is_int(run(&a, &t), -EINVAL, "handlers one byte short: -EINVAL");
    ok(t.begins == 0, "... before begin()");
    a.nhandlers = 0;
    a.catchall = on_other;
    is_int(run(&a, &t), 0, "no handlers: their struct_size is not read");
    is_int(t.other, 12, "... the catch-all gets every record");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SHARED_DIR\n", argv[0]);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/fixtures/edge/trace-events", argv[1]);
    const char *p = path;
    char err[1024] = "";
    ok(st_catalog_load(&cat, &p, 1, err, sizeof err) == 0, "catalog loads %s", err);
    snprintf(path, sizeof path, "%s/fixtures/edge/arg_kinds.bin", argv[1]);
    trace = tu_slurp(path, &trace_len);
    if (!ok(cat && trace, "fixtures read"))
        return done_testing();
    test_options_too_small();
    test_options_larger();
    test_error_sizes();
    test_counters();
    test_pieces();
    test_formatter();
    test_analyzer();
    free(trace);
    st_catalog_free(cat);
    return done_testing();
}
