/*
 * The reader API for traces of several hosts and processes (reader.h,
 * "Aligning clocks"; meta_format.h's process records), on traces built
 * here byte by byte:
 *   - ST_READER_ALIGN_REALTIME: timestamps become anchor_real + (t -
 *     anchor_mono), each piece's and process's own; the description then
 *     gives equal anchors; a trace without anchors is -ENODATA at its
 *     first record, with its offset;
 *   - offsets_ns: added after that (alone: a shift); noffsets other than
 *     0, 1 or n is -EINVAL; a caller compiled before the field is unaffected;
 *     a timestamp moved beyond 2^64 - 1 is -ERANGE;
 *   - process records: each record's process_pid/process_program, the
 *     description in force, st_reader_process_count(), filter_pid by process;
 *   - st_reader_open_many() with an offset per input.
 */
#include "tap.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simpletrace/reader.h>

#define INFO_ID UINT64_C(0xffffffffffffff00)
#define DECL_BASE UINT64_C(0xfffffffe00000000)
#define PROC_BASE UINT64_C(0xfffffffd00000000)

/* A trace being built. */
struct buf {
    uint8_t data[4096];
    size_t len;
};

static void put(struct buf *b, const void *p, size_t n)
{
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void u64(struct buf *b, uint64_t v)
{
    put(b, &v, 8);
}

static void u32(struct buf *b, uint32_t v)
{
    put(b, &v, 4);
}

static void header(struct buf *b)
{
    b->len = 0;
    u64(b, UINT64_MAX);
    u64(b, UINT64_C(0xf2b177cb0aa429b4));
    u64(b, 4);
}

static void mapping(struct buf *b, uint64_t id, const char *name)
{
    u64(b, 0);
    u64(b, id);
    u32(b, (uint32_t)strlen(name));
    put(b, name, strlen(name));
}

/* Event 1 (ev(uint64_t x)) at ts, pid field pid. */
static void event(struct buf *b, uint64_t ts, uint32_t pid, uint64_t x)
{
    u64(b, 1);
    u64(b, 1);
    u64(b, ts);
    u32(b, 32);
    u32(b, pid);
    u64(b, x);
}

static void declare(struct buf *b)
{
    mapping(b, 1, "ev");
    mapping(b, DECL_BASE + 1, "ev(uint64_t x) \"x %\" PRIu64");
}

/* A description of process pid whose CLOCK_MONOTONIC mono was CLOCK_REALTIME real. */
static void describe(struct buf *b, uint64_t id, uint32_t pid, uint64_t mono, uint64_t real)
{
    char text[256];
    snprintf(text, sizeof text, "simpletrace=1\npid=%u\nprogram=p%u\nanchor_mono_ns=%llu\nanchor_real_ns=%llu\n",
             (unsigned)pid, (unsigned)pid, (unsigned long long)mono, (unsigned long long)real);
    mapping(b, id, text);
}

static struct st_catalog *cat;

/* Opens b with flags and offsets (NULL: none); 0 or the open error. */
static int open_buf(struct st_reader **r, const struct buf *b, unsigned flags, const int64_t *offs, size_t noffs,
                    struct st_reader_error *err)
{
    struct st_reader_options o = {.struct_size = sizeof o, .flags = flags, .offsets_ns = offs, .noffsets = noffs};
    return st_reader_open_memory(r, b->data, b->len, "built", cat, &o, err);
}

/* The timestamps of every record, "t1 t2 ..." into out; the reader's result. */
static int timestamps(struct st_reader *r, char *out, size_t len)
{
    const struct st_record *rec;
    int ret;
    size_t n = 0;
    out[0] = '\0';
    while ((ret = st_reader_next(r, &rec)) == 1 && n < len)
        n += (size_t)snprintf(out + n, len - n, "%s%llu", n ? " " : "", (unsigned long long)rec->timestamp_ns);
    return ret;
}

static void test_align(void)
{
    struct buf b;
    struct st_reader *r;
    struct st_reader_error err = {.struct_size = sizeof err};
    struct st_trace_description d = {.struct_size = sizeof d};
    char ts[256];
    int64_t off = -30;

    header(&b);
    describe(&b, INFO_ID, 7, 1000, 5000000);
    declare(&b);
    event(&b, 1100, 7, 1);
    event(&b, 1300, 7, 2);
    is_int(open_buf(&r, &b, ST_READER_ALIGN_REALTIME, NULL, 0, &err), 0, "align: open");
    is_int(timestamps(r, ts, sizeof ts), 0, "align: read");
    is_str(ts, "5000100 5000300", "align: real + (t - mono)");
    ok(st_reader_description(r, &d) == 0 && d.anchor_mono_ns == 5000000 && d.anchor_real_ns == 5000000,
       "align: the description's anchors are those of the timestamps delivered (equal)");
    st_reader_close(r);

    is_int(open_buf(&r, &b, ST_READER_ALIGN_REALTIME, &off, 1, &err), 0, "align + offset: open");
    timestamps(r, ts, sizeof ts);
    is_str(ts, "5000070 5000270", "align + offset: the offset after the alignment");
    ok(st_reader_description(r, &d) == 0 && d.anchor_mono_ns == 4999970 && d.anchor_real_ns == 4999970,
       "align + offset: the wall-clock time moves with the timestamps");
    st_reader_close(r);

    is_int(open_buf(&r, &b, 0, &off, 1, &err), 0, "offset alone: open");
    timestamps(r, ts, sizeof ts);
    is_str(ts, "1070 1270", "offset alone: a shift of the recorded timestamps");
    ok(st_reader_description(r, &d) == 0 && d.anchor_mono_ns == 970 && d.anchor_real_ns == 4999970,
       "offset alone: both anchors move");
    st_reader_close(r);

    int64_t two[2] = {1, 2};
    is_int(open_buf(&r, &b, 0, two, 2, &err), -EINVAL, "two offsets for one trace: -EINVAL");
    ok(strstr(err.message, "2 offsets for 1 trace") != NULL, "... saying so (%s)", err.message);
    is_int(open_buf(&r, &b, 0, NULL, 1, &err), -EINVAL, "noffsets without offsets_ns: -EINVAL");

    /* A caller compiled before offsets_ns: what lies past its struct_size is never read. */
    struct {
        struct st_reader_options o;
        char garbage[64];
    } old;
    memset(&old, 0xff, sizeof old);
    memset(&old.o, 0, offsetof(struct st_reader_options, offsets_ns));
    old.o.struct_size = (uint32_t)offsetof(struct st_reader_options, offsets_ns);
    ok(st_reader_open_memory(&r, b.data, b.len, "old", cat, &old.o, &err) == 0 && timestamps(r, ts, sizeof ts) == 0 &&
           !strcmp(ts, "1100 1300"),
       "an older struct_size: no offsets, no error");
    st_reader_close(r);

    header(&b);
    declare(&b);
    event(&b, 1100, 7, 1);
    is_int(open_buf(&r, &b, ST_READER_ALIGN_REALTIME, NULL, 0, &err), 0, "no anchors: open");
    is_int(timestamps(r, ts, sizeof ts), -ENODATA, "no anchors: -ENODATA at the first record");
    ok(st_reader_error(r)->offset == b.len - 40 && strstr(st_reader_error(r)->message, "no clock anchors"),
       "... at its byte offset, saying why (%s)", st_reader_error(r)->message);
    st_reader_close(r);

    header(&b);
    declare(&b);
    event(&b, UINT64_MAX - 5, 7, 1);
    off = 10;
    is_int(open_buf(&r, &b, 0, &off, 1, &err), 0, "past 2^64: open");
    is_int(timestamps(r, ts, sizeof ts), -ERANGE, "a timestamp moved past 2^64 - 1: -ERANGE");
    st_reader_close(r);
}

static void test_processes(void)
{
    struct buf b;
    struct st_reader *r;
    struct st_reader_error err = {.struct_size = sizeof err};
    struct st_trace_description d = {.struct_size = sizeof d};
    const struct st_record *rec;
    char got[256];
    size_t n = 0;

    header(&b);
    describe(&b, PROC_BASE + 0, 100, 1000, 9000000);
    describe(&b, PROC_BASE + 1, 200, 50, 8000000);
    mapping(&b, PROC_BASE + 2, "");
    declare(&b);
    mapping(&b, PROC_BASE + 0, "");
    event(&b, 1100, 101, 1);
    mapping(&b, PROC_BASE + 1, "");
    event(&b, 60, 201, 2);
    mapping(&b, PROC_BASE + 2, "");
    event(&b, 70, 301, 3);
    mapping(&b, PROC_BASE + 0, "");
    event(&b, 1200, 102, 4);
    is_int(open_buf(&r, &b, 0, NULL, 0, &err), 0, "processes: open");
    got[0] = '\0';
    while (st_reader_next(r, &rec) == 1) {
        bool described = st_reader_description(r, &d) == 0;
        n += (size_t)snprintf(got + n, sizeof got - n, "%u:%s:%s ", (unsigned)rec->process_pid,
                              rec->process_program, described ? d.program : "-");
    }
    is_str(got, "100:p100:p100 200:p200:p200 0::- 100:p100:p100 ",
           "each record's process, and the description in force, follow the process records");
    is_u64(st_reader_process_count(r), 3, "st_reader_process_count(): the processes named");
    st_reader_close(r);

    is_int(open_buf(&r, &b, ST_READER_ALIGN_REALTIME, NULL, 0, &err), 0, "processes aligned: open");
    n = 0;
    got[0] = '\0';
    while (st_reader_next(r, &rec) == 1)
        n += (size_t)snprintf(got + n, sizeof got - n, "%llu ", (unsigned long long)rec->timestamp_ns);
    is_str(got, "9000100 8000010 ", "aligned: each process by its own anchors, until one has none");
    is_int(st_reader_error(r)->code, -ENODATA, "... the process without a description: -ENODATA");
    st_reader_close(r);

    struct st_reader_options o = {.struct_size = sizeof o, .filter_pid = true, .pid = 100};
    int ret = st_reader_open_memory(&r, b.data, b.len, "built", cat, &o, &err);
    n = 0;
    while (ret == 0 && (ret = st_reader_next(r, &rec)) == 1)
        n++, ret = rec->process_pid == 100 ? 0 : -1;
    is_int(n, 1, "filter_pid: the records of that process (another process's skipped) ...");
    is_int(ret, -EOPNOTSUPP, "... up to a process that does not say which it is: refused");
    st_reader_close(r);

    header(&b);
    declare(&b);
    event(&b, 5, 7, 1);
    ok(open_buf(&r, &b, 0, NULL, 0, &err) == 0 && st_reader_next(r, &rec) == 1 && st_reader_process_count(r) == 1,
       "a trace without process records holds one process");
    st_reader_close(r);
}

/* Writes b into a temporary file; its name in path. */
static void to_file(const struct buf *b, char *path, size_t len, const char *tag)
{
    snprintf(path, len, "/tmp/st-align-%s-XXXXXX", tag);
    int fd = mkstemp(path);
    ok(fd >= 0 && write(fd, b->data, b->len) == (ssize_t)b->len && close(fd) == 0, "%s written", tag);
}

static void test_many(void)
{
    struct buf a, b;
    char pa[64], pb[64], ts[256];
    struct st_reader *r;
    struct st_reader_error err = {.struct_size = sizeof err};
    int64_t offs[2] = {0, -250};

    header(&a);
    describe(&a, INFO_ID, 11, 1000000, 7000000000);
    declare(&a);
    event(&a, 1000100, 11, 1);
    event(&a, 1000300, 11, 3);
    header(&b);
    describe(&b, INFO_ID, 22, 9000000000, 7000000200);
    declare(&b);
    event(&b, 9000000000, 22, 2);
    event(&b, 9000000150, 22, 4);
    to_file(&a, pa, sizeof pa, "a");
    to_file(&b, pb, sizeof pb, "b");
    const char *paths[2] = {pa, pb};
    struct st_reader_options o = {.struct_size = sizeof o, .flags = ST_READER_ALIGN_REALTIME};
    is_int(st_reader_open_many(&r, paths, 2, cat, &o, &err), 0, "two hosts: open");
    timestamps(r, ts, sizeof ts);
    is_str(ts, "7000000100 7000000200 7000000300 7000000350", "two hosts aligned: one timeline");
    st_reader_close(r);
    o.offsets_ns = offs;
    o.noffsets = 2;
    is_int(st_reader_open_many(&r, paths, 2, cat, &o, &err), 0, "an offset per input: open");
    timestamps(r, ts, sizeof ts);
    is_str(ts, "6999999950 7000000100 7000000100 7000000300", "the second input 250 ns earlier");
    st_reader_close(r);
    o.noffsets = 1;
    is_int(st_reader_open_many(&r, paths, 2, cat, &o, &err), -EINVAL, "one offset for two inputs: -EINVAL");
    unlink(pa);
    unlink(pb);
}

int main(void)
{
    char msg[256];
    static const char events[] = "ev(uint64_t x) \"x %\" PRIu64\n";
    if (st_catalog_load_buffer(&cat, "events", events, strlen(events), msg, sizeof msg) < 0) {
        printf("Bail out! %s\n", msg);
        return 1;
    }
    test_align();
    test_processes();
    test_many();
    st_catalog_free(cat);
    return done_testing();
}
