/*
 * The reader API on the shared fixtures: decoded values of every format
 * version and byte order, errors with their offsets and record numbers,
 * truncation at every byte offset, follow mode, filters, JSON lines, the
 * analyzer, and constant memory on a large streamed trace.
 *
 * usage: test_reader_api SHARED_DIR
 */
#include <simpletrace/reader.h>

#include "rd_util.h"
#include "tap.h"

static const char *shared;
static char path_buf[4096];

static const char *fixture(const char *dir, const char *name)
{
    snprintf(path_buf, sizeof path_buf, "%s/fixtures/%s/%s", shared, dir, name);
    return path_buf;
}

static struct st_catalog *load_catalog(const char *dir, const char *name)
{
    struct st_catalog *cat = NULL;
    const char *p = fixture(dir, name);
    char err[1024] = "";
    int ret = st_catalog_load(&cat, &p, 1, err, sizeof err);
    ok(ret == 0, "catalog %s/%s loads %s", dir, name, err);
    return cat;
}

static struct st_reader *open_edge(struct st_catalog *cat, const char *name, unsigned flags)
{
    struct st_reader_options o = {.struct_size = sizeof o, .flags = flags};
    struct st_reader *r = NULL;
    int ret = st_reader_open(&r, fixture("edge", name), cat, &o, NULL);
    ok(ret == 0, "open %s", name);
    return r;
}

/* Offsets of the records of a v4 file, walked here independently of the reader. */
struct walk {
    size_t off[64];
    bool event[64];
    size_t n, end; /* end: offset after the last complete record */
};

/* True on a big-endian machine: the fixtures, written on a little-endian one, then read byte-swapped. */
static bool host_big(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 0;
}

/* The fixtures' integers: little-endian, whatever this machine's order. */
static uint64_t le_load(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void walk_v4(const uint8_t *d, size_t size, struct walk *w)
{
    size_t p = 24;
    w->n = 0;
    while (p + 8 <= size && w->n < 64) {
        uint64_t type = le_load(d + p, 8);
        size_t len;
        if (type == 0) {
            if (p + 20 > size)
                break;
            len = 20 + (size_t)le_load(d + p + 16, 4);
        } else {
            if (p + 32 > size)
                break;
            len = 8 + (size_t)le_load(d + p + 24, 4);
        }
        w->off[w->n] = p;
        w->event[w->n++] = type != 0;
        p += len;
    }
    w->end = p;
}

/* --- decoded values ------------------------------------------------------- */

static void test_versions(struct st_catalog *cat)
{
    static const struct {
        const char *file;
        int version;
        bool swapped, has_pid;
        uint32_t pid;
    } v[] = {
        {"version_0.bin", 0, false, false, 0},
        {"version_2.bin", 2, false, true, 0},
        {"version_3.bin", 3, false, true, 4242},
    };
    for (size_t i = 0; i < 3; i++) {
        struct st_reader *r = open_edge(cat, v[i].file, 0);
        const struct st_record *rec = NULL;
        is_int(st_reader_version(r), -EAGAIN, "%s: version unknown before reading", v[i].file);
        is_int(st_reader_next(r, &rec), 1, "%s: one record", v[i].file);
        is_int(st_reader_version(r), v[i].version, "%s: version", v[i].file);
        ok(st_reader_byte_swapped(r) == (v[i].swapped != host_big()), "%s: byte order", v[i].file);
        is_str(rec->name, "ev_int", "%s: ID 1 is the second trace-events entry", v[i].file);
        is_u64(rec->timestamp_ns, 10, "%s: timestamp", v[i].file);
        ok(rec->has_pid == v[i].has_pid && rec->pid == v[i].pid, "%s: pid %u", v[i].file, rec->pid);
        ok(rec->nargs == 2 && rec->args[0].u64 == 1 && rec->args[1].u64 == 2, "%s: x=1 y=2", v[i].file);
        is_int(st_reader_next(r, &rec), 0, "%s: then the end", v[i].file);
        st_reader_close(r);
    }

    struct st_reader *r = open_edge(cat, "big_endian_v4.bin", 0);
    const struct st_record *rec = NULL;
    is_int(st_reader_next(r, &rec), 1, "big endian: a record");
    ok(st_reader_byte_swapped(r) == !host_big() && st_reader_version(r) == 4, "big endian v4 detected");
    ok(rec && !strcmp(rec->name, "ev_noargs") && rec->pid == 4242 && rec->timestamp_ns == 10 && rec->id == 0,
       "big endian: ev_noargs ID 0 at 10 ns, pid 4242");
    is_int(st_reader_next(r, &rec), 0, "big endian: end");
    st_reader_close(r);
}

static void test_arg_kinds(struct st_catalog *cat)
{
    struct st_reader *r = open_edge(cat, "arg_kinds.bin", 0);
    const struct st_record *rec;
    int n = 0;
    bool ok_int = false, ok_str = false, ok_null = false, ok_long = false, ok_ptr = false, ok_ptrptr = false;
    while (st_reader_next(r, &rec) == 1) {
        n++;
        if (!strcmp(rec->name, "ev_int"))
            ok_int = rec->args[0].u64 == (uint64_t)-5 && rec->event->args[0].is_signed &&
                     rec->args[1].u64 == UINT64_MAX && !rec->event->args[1].is_signed;
        if (!strcmp(rec->name, "ev_str") && rec->args[1].u64 == 7)
            ok_str = rec->args[0].kind == ST_VALUE_STRING && rec->args[0].len == 5 &&
                     !memcmp(rec->args[0].str, "hello", 5);
        if (!strcmp(rec->name, "ev_str") && rec->args[1].u64 == 0)
            ok_null = rec->args[0].len == 0;
        if (!strcmp(rec->name, "ev_str") && rec->args[1].u64 == 5)
            ok_long = rec->args[0].len == 512 && rec->args[0].str[511] == 'x';
        if (!strcmp(rec->name, "ev_ptr"))
            ok_ptr = rec->args[0].kind == ST_VALUE_POINTER && rec->args[0].u64 == 0x7f0012345678 &&
                     rec->args[1].kind == ST_VALUE_STRING;
        if (!strcmp(rec->name, "ev_ptrptr"))
            ok_ptrptr = rec->args[0].kind == ST_VALUE_POINTER && rec->args[0].u64 == 0xdeadbeef;
    }
    is_int(n, 12, "arg_kinds: 12 records");
    ok(ok_int, "signed -5 and 2^64-1 decoded");
    ok(ok_str && ok_null && ok_long, "strings: hello, NULL, 512 bytes");
    ok(ok_ptr && ok_ptrptr, "void * and char ** are pointers");
    is_int(st_event_arg_index(st_catalog_find(cat, "ev_ten"), "a10"), 9, "argument index by name");
    is_int(st_event_arg_index(st_catalog_find(cat, "ev_ten"), "zz"), -ENOENT, "unknown argument name");
    st_reader_close(r);
}

/* Appends a v4 mapping record (type 0) of id with text to p; returns the end. */
static uint8_t *put_mapping(uint8_t *p, uint64_t id, const char *text)
{
    uint64_t type = 0;
    uint32_t n = (uint32_t)strlen(text);
    memcpy(p, &type, 8);
    memcpy(p + 8, &id, 8);
    memcpy(p + 16, &n, 4);
    memcpy(p + 20, text, n);
    return p + 20 + n;
}

/* The encodings of ev's arguments, one letter each (i b c p s; ? for an error), into out. */
static void encodings(const struct st_catalog *cat, const struct st_event_info *ev, char *out)
{
    static const char letter[] = "ibcps";
    unsigned i = 0;
    for (; ev && i < ev->nargs; i++) {
        int e = st_catalog_arg_encoding(cat, ev, i);
        out[i] = e >= 0 && e < 5 ? letter[e] : '?';
    }
    out[i] = '\0';
}

/*
 * st_catalog_arg_encoding(): decided once from the declared type's words,
 * the same for a catalog of trace-events files and one that grows with a
 * trace's declarations; Dropped_Event's count an integer; -EINVAL for an
 * argument beyond the event's or an event of another catalog.
 */
static void test_arg_encoding(void)
{
    static const char *const decls[] = {
        "enc_a(bool b, const bool cb, bool const bk, char c, const char cc, unsigned char uc, char unsigned cu, "
        "signed char sc, int i, uint8_t u8) \"\"",
        "enc_b(const uint64_t u, void *p, const char *s, char *t, char **pp, const bool *bp) \"\"",
    };
    static const char *const want[] = {"bbbcccccii", "ipsspp"};
    char text[512];
    snprintf(text, sizeof text, "%s\n%s\n", decls[0], decls[1]);
    struct st_catalog *files = NULL;
    char err[256] = "";
    if (!ok(st_catalog_load_buffer(&files, "enc", text, strlen(text), err, sizeof err) == 0, "encodings: the declarations load %s", err))
        return;

    static uint8_t trace[2048];
    uint64_t head[3] = {UINT64_C(0xffffffffffffffff), UINT64_C(0xf2b177cb0aa429b4), 4};
    memcpy(trace, head, sizeof head);
    uint8_t *p = trace + sizeof head;
    p = put_mapping(p, 0, "enc_a");
    p = put_mapping(p, UINT64_C(0xfffffffe00000000), decls[0]);
    p = put_mapping(p, 1, "enc_b");
    p = put_mapping(p, UINT64_C(0xfffffffe00000001), decls[1]);
    struct st_reader *r = NULL;
    ok(st_reader_open_memory(&r, trace, (size_t)(p - trace), "enc", NULL, NULL, NULL) == 0,
       "encodings: a trace carrying the declarations opens without a catalog");
    const struct st_catalog *grown = r ? st_reader_catalog(r) : NULL;

    const struct st_catalog *cats[2] = {files, grown};
    const char *kind[2] = {"trace-events", "declared"};
    for (int k = 0; k < 2 && cats[k]; k++) {
        for (int e = 0; e < 2; e++) {
            const struct st_event_info *ev = st_catalog_find(cats[k], e ? "enc_b" : "enc_a");
            char got[ST_READER_MAX_ARGS + 1] = "";
            encodings(cats[k], ev, got);
            is_str(got, want[e], "%s: %s's encodings (bool, const bool, bool const, chars of every spelling)",
                   kind[k], e ? "enc_b" : "enc_a");
            is_int(st_catalog_arg_encoding(cats[k], ev, ev ? ev->nargs : 0), -EINVAL,
                   "%s: an argument beyond the event's is -EINVAL", kind[k]);
        }
        const struct st_event_info *drop = st_catalog_dropped(cats[k]);
        is_int(st_catalog_arg_encoding(cats[k], drop, 0), ST_ARG_ENCODING_INTEGER, "%s: Dropped_Event's count",
               kind[k]);
        is_int(st_catalog_arg_encoding(cats[k], st_catalog_find(cats[!k], "enc_a"), 0), -EINVAL,
               "%s: an event of the other catalog is -EINVAL", kind[k]);
    }
    is_int(st_catalog_arg_encoding(files, NULL, 0), -EINVAL, "no event: -EINVAL");
    st_reader_close(r);
    st_catalog_free(files);
}

static void test_mappings_and_drops(struct st_catalog *cat)
{
    struct st_reader *r = open_edge(cat, "mapping_midstream.bin", 0);
    const struct st_record *rec;
    const char *want[] = {"ev_int", "ev_str", "ev_noargs"};
    int n = 0;
    while (st_reader_next(r, &rec) == 1 && n < 3) {
        ok(!strcmp(rec->name, want[n]), "midstream mapping record %d is %s (ID %llu)", n, want[n],
           (unsigned long long)rec->id);
        n++;
    }
    is_int(n, 3, "three records");
    st_reader_close(r);

    r = open_edge(cat, "dropped.bin", 0);
    uint64_t count = 0;
    bool flagged = false;
    while (st_reader_next(r, &rec) == 1)
        if (rec->dropped) {
            flagged = !strcmp(rec->name, "Dropped_Event") && rec->args[0].u64 == rec->dropped_count;
            count += rec->dropped_count;
        }
    ok(flagged && count == 1234, "dropped record flagged with its count 1234");
    struct st_reader_counters c = {.struct_size = sizeof c};
    is_int(st_reader_get_counters(r, &c), 0, "counters read");
    ok(c.dropped_records == 1 && c.dropped_events == 1234 && c.events == 2, "counters: 2 events, 1 drop of 1234");
    st_reader_close(r);

    r = open_edge(cat, "no_header.bin", ST_READER_NO_HEADER);
    const char *idx[] = {"ev_noargs", "ev_int", "ev_ten"};
    n = 0;
    while (st_reader_next(r, &rec) == 1 && n < 3) {
        ok(!strcmp(rec->name, idx[n]), "no header: ID %llu is %s", (unsigned long long)rec->id, idx[n]);
        n++;
    }
    st_reader_close(r);
}

/* --- errors --------------------------------------------------------------- */

static void expect_error(struct st_catalog *cat, const char *file, int code, const char *needle)
{
    size_t size;
    snprintf(path_buf, sizeof path_buf, "%s/fixtures/edge/%s", shared, file);
    uint8_t *data = (uint8_t *)tu_slurp(path_buf, &size);
    struct walk w;
    walk_v4(data, size, &w);
    struct st_reader *r = open_edge(cat, file, 0);
    const struct st_record *rec;
    int ret, n = 0;
    while ((ret = st_reader_next(r, &rec)) == 1)
        n++;
    const struct st_reader_error *e = st_reader_error(r);
    is_int(ret, code, "%s: error code", file);
    ok(e->code == ret && strstr(e->message, needle), "%s: message '%s'", file, e->message);
    if (code != -EBADMSG) { /* errors in records: the last walked record is the bad one */
        size_t last = w.n - 1;
        is_u64(e->offset, w.off[last], "%s: byte offset of the bad record", file);
        is_u64(e->record, last + 1, "%s: its record number", file);
    } else {
        ok(e->offset == 0 && e->record == 0, "%s: header error at offset 0, record 0", file);
    }
    is_int(st_reader_next(r, &rec), code, "%s: the error is sticky", file);
    char line[1024];
    st_reader_format_error(r, line, sizeof line);
    ok(strstr(line, "byte offset") && strstr(line, file), "formatted: %s", line);
    free(data);
    st_reader_close(r);
}

static void test_errors(struct st_catalog *cat)
{
    expect_error(cat, "unknown_id.bin", -ENOENT, "unknown event ID 555");
    expect_error(cat, "name_not_in_trace_events.bin", -ENOENT, "ev_not_declared");
    expect_error(cat, "truncated.bin", -ENODATA, "ends inside");
    expect_error(cat, "bad_magic.bin", -EBADMSG, "magic");
}

/* Reads r to its end: the return of the last st_reader_next(), the records delivered in *n. */
static int drain(struct st_reader *r, int *n)
{
    const struct st_record *rec;
    int ret;
    *n = 0;
    while ((ret = st_reader_next(r, &rec)) == 1)
        (*n)++;
    return ret;
}

/* The mistakes issue 12 made loud: swapped files, declarations that do not match, --pid. */
static void test_mistakes(struct st_catalog *cat)
{
    struct st_catalog *c2 = (struct st_catalog *)&c2;
    const char *p = fixture("edge", "arg_kinds.bin");
    char err[1024] = "";
    is_int(st_catalog_load(&c2, &p, 1, err, sizeof err), -EMEDIUMTYPE, "a trace as trace-events: -EMEDIUMTYPE");
    ok(c2 == NULL && strstr(err, "arg_kinds.bin is a trace file (format version 4), not a trace-events file"),
       "... no catalog, message: %s", err);
    static const char bin[] = "ev(int x)\n\x01\x02";
    is_int(st_catalog_load_buffer(&c2, "bin", bin, sizeof bin - 1, err, sizeof err), -EMEDIUMTYPE,
           "control bytes in trace-events text: -EMEDIUMTYPE");
    ok(strstr(err, "bin is not a text file (byte offset 10 holds 0x01)") != NULL, "... %s", err);

    int n;
    struct st_reader *r = open_edge(cat, "trace-events", 0); /* the trace-events file given as the trace */
    is_int(drain(r, &n), -EBADMSG, "trace-events as the trace: -EBADMSG");
    const struct st_reader_error *e = st_reader_error(r);
    ok(e->offset == 0 && e->record == 0 && strstr(e->message, "not a trace file: it begins with text (\"# edge-case"),
       "... at the header: %s", e->message);
    st_reader_close(r);

    r = open_edge(cat, "length_has_trailing_bytes.bin", 0);
    is_int(drain(r, &n), -EBADMSG, "a record longer than its declaration: -EBADMSG");
    e = st_reader_error(r);
    ok(n == 0 && e->offset == 217 && e->record == 8 &&
           !strcmp(e->message, "event ev_int: 8 bytes are left after the last declared argument (24 payload bytes "
                               "for 2 declared arguments): the trace-events files do not match the trace"),
       "... no record delivered, offset 217, record 8: %s", e->message);
    st_reader_close(r);
    /* A record a filter skips is not decoded, so not checked either (documented in reader.h). */
    struct st_reader_options o = {.struct_size = sizeof o, .events = "ev_noargs"};
    ok(st_reader_open(&r, fixture("edge", "length_has_trailing_bytes.bin"), cat, &o, NULL) == 0 && drain(r, &n) == 0 &&
           n == 1,
       "... filtered out: skipped by its length, the next record delivered");
    st_reader_close(r);

    struct st_reader_options pid = {.struct_size = sizeof pid, .filter_pid = true, .pid = 4242};
    ok(st_reader_open(&r, fixture("edge", "arg_kinds.bin"), cat, &pid, NULL) == 0, "filter_pid: opens");
    is_int(drain(r, &n), -EOPNOTSUPP, "... -EOPNOTSUPP when the header says nothing of the process");
    e = st_reader_error(r);
    ok(n == 0 && e->offset == 0 && e->record == 0 && strstr(e->message, "cannot select the records of process 4242"),
       "... nothing delivered: %s", e->message);
    st_reader_close(r);
    pid.flags = ST_READER_NO_HEADER;
    ok(st_reader_open(&r, fixture("edge", "no_header.bin"), cat, &pid, NULL) == 0 && drain(r, &n) == -EOPNOTSUPP &&
           n == 0,
       "... and without a header");
    st_reader_close(r);
}

/* Text of every record of r, formatted into a malloc'ed string. */
static char *format_all(struct st_catalog *cat, struct st_reader *r, enum st_output_format fmt, int *ret)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    struct st_formatter_options fo = {.struct_size = sizeof fo, .format = fmt, .out = mem};
    struct st_formatter *f = NULL;
    st_formatter_new(&f, cat, &fo);
    const struct st_record *rec;
    while ((*ret = st_reader_next(r, &rec)) == 1)
        st_formatter_write(f, rec);
    st_formatter_flush(f);
    st_formatter_free(f);
    fclose(mem);
    return text;
}

/* Cuts arg_kinds.bin at every length: earlier records come out, the error names the cut record. */
static void test_truncation(struct st_catalog *cat)
{
    size_t size, exp_len;
    snprintf(path_buf, sizeof path_buf, "%s/fixtures/edge/arg_kinds.bin", shared);
    uint8_t *data = (uint8_t *)tu_slurp(path_buf, &size);
    snprintf(path_buf, sizeof path_buf, "%s/fixtures/edge/arg_kinds.expected.txt", shared);
    char *expected = tu_slurp(path_buf, &exp_len);
    struct walk w; /* every record of the whole file */
    walk_v4(data, size, &w);
    int bad = 0, bad_stream = 0;
    for (size_t cut = 0; cut < size; cut++) {
        size_t complete_events = 0, i;
        for (i = 0; i < w.n; i++) {
            size_t rec_end = i + 1 < w.n ? w.off[i + 1] : w.end;
            if (rec_end > cut)
                break;
            complete_events += w.event[i];
        }
        /* cut inside record i (partial) unless it falls exactly between records */
        bool partial = cut >= 24 && i < w.n && cut != w.off[i];
        size_t next_off = i < w.n ? w.off[i] : w.end;
        size_t want_len = 0; /* the first complete_events lines of the expected text */
        for (size_t k = 0; k < complete_events; k++)
            want_len += strcspn(expected + want_len, "\n") + 1;

        struct st_reader *r = NULL;
        st_reader_open_memory(&r, data, cut, "cut", cat, NULL, NULL);
        int ret;
        char *text = format_all(cat, r, ST_OUTPUT_TEXT, &ret);
        const struct st_reader_error *e = st_reader_error(r);
        bool good = strlen(text) == want_len && !memcmp(text, expected, want_len);
        if (cut < 24)
            good = good && ret == -ENODATA && e->offset == 0;
        else if (partial)
            good = good && ret == -ENODATA && e->offset == next_off && strstr(e->message, "ends inside");
        else
            good = good && ret == 0;
        if (!good && bad++ < 5)
            diag("cut at %zu: ret %d offset %llu (want %zu) text %zu bytes (want %zu)", cut, ret,
                 (unsigned long long)e->offset, next_off, strlen(text), want_len);
        free(text);
        st_reader_close(r);

        if (cut == 0)
            continue;
        FILE *f = fmemopen(data, cut, "rb"); /* the same through a stream */
        st_reader_open_stream(&r, f, "cut", cat, NULL, NULL);
        char *text2 = format_all(cat, r, ST_OUTPUT_TEXT, &ret);
        if ((strlen(text2) != want_len || memcmp(text2, expected, want_len)) && bad_stream++ < 5)
            diag("stream cut at %zu differs", cut);
        free(text2);
        st_reader_close(r);
        fclose(f);
    }
    is_int(bad, 0, "every cut of arg_kinds.bin (%zu) prints the complete records and names the cut one", size);
    is_int(bad_stream, 0, "the same through fmemopen streams");
    free(data);
    free(expected);
}

/* A file that grows: follow mode waits for the rest of a record. */
static void test_follow(struct st_catalog *cat)
{
    size_t size;
    snprintf(path_buf, sizeof path_buf, "%s/fixtures/edge/dropped.bin", shared);
    uint8_t *data = (uint8_t *)tu_slurp(path_buf, &size);
    char tmp[256];
    rd_tmpname(tmp, sizeof tmp, "follow");
    FILE *w = fopen(tmp, "wb");
    size_t first = size - 10; /* the last record is incomplete at first */
    fwrite(data, 1, first, w);
    fflush(w);
    struct st_reader_options o = {.struct_size = sizeof o, .flags = ST_READER_FOLLOW};
    struct st_reader *r = NULL;
    st_reader_open(&r, tmp, cat, &o, NULL);
    const struct st_record *rec;
    int n = 0, ret;
    while ((ret = st_reader_next(r, &rec)) == 1)
        n++;
    ok(n == 2 && ret == -EAGAIN, "follow: 2 records, then -EAGAIN on the partial one (%d, %d)", n, ret);
    fwrite(data + first, 1, size - first, w);
    fflush(w);
    ret = st_reader_next(r, &rec);
    ok(ret == 1 && !strcmp(rec->name, "ev_int") && rec->args[0].u64 == 2, "follow: the completed record comes");
    is_int(st_reader_next(r, &rec), -EAGAIN, "follow: then waits again");
    st_reader_close(r);
    fclose(w);
    unlink(tmp);
    free(data);
}

/* --- filters, JSON ---------------------------------------------------------- */

static int count_filtered(struct st_catalog *cat, const char *file, const struct st_reader_options *o,
                          char *names, size_t len)
{
    struct st_reader *r = NULL;
    if (st_reader_open(&r, fixture("edge", file), cat, o, NULL) < 0)
        return -1;
    const struct st_record *rec;
    int n = 0;
    names[0] = 0;
    while (st_reader_next(r, &rec) == 1) {
        n++;
        strncat(names, rec->name, len - strlen(names) - 2);
        strcat(names, " ");
    }
    st_reader_close(r);
    return n;
}

static void test_filters(struct st_catalog *cat)
{
    char names[4096];
    struct st_reader_options o = {.struct_size = sizeof o, .events = "ev_str"};
    is_int(count_filtered(cat, "arg_kinds.bin", &o, names, sizeof names), 7, "--events=ev_str: 7 records");
    o.events = "ev_*,-ev_str";
    is_int(count_filtered(cat, "arg_kinds.bin", &o, names, sizeof names), 5, "ev_*,-ev_str: 5 records");
    o.events = "-ev_str,ev_str";
    is_int(count_filtered(cat, "arg_kinds.bin", &o, names, sizeof names), 12, "last match wins");
    o.events = "-ev_?tr";
    is_int(count_filtered(cat, "arg_kinds.bin", &o, names, sizeof names), 4, "? glob, exclude only (ev_str, ev_ptr)");
    o.events = "Dropped_Event";
    is_int(count_filtered(cat, "dropped.bin", &o, names, sizeof names), 1, "Dropped_Event by name");
    o.events = "ev_x,";
    struct st_reader *r = NULL;
    struct st_reader_error e = {.struct_size = sizeof e};
    ok(st_reader_open(&r, fixture("edge", "dropped.bin"), cat, &o, &e) == -EINVAL && !r, "empty glob rejected: %s",
       e.message);

    struct st_reader_options p = {.struct_size = sizeof p, .filter_tid = true, .tid = 4243};
    is_int(count_filtered(cat, "non_monotonic.bin", &p, names, sizeof names), 1, "--pid=4243: 1 record");
    struct st_reader_options t = {.struct_size = sizeof t, .filter_from = true, .from_ns = 1000};
    is_int(count_filtered(cat, "non_monotonic.bin", &t, names, sizeof names), 1, "--from=1us: the record at +1000 ns");
    struct st_reader_options t2 = {.struct_size = sizeof t2, .filter_to = true, .to_ns = 0};
    is_int(count_filtered(cat, "non_monotonic.bin", &t2, names, sizeof names), 2, "--to=0: the first and the earlier one");

    int64_t ns;
    ok(st_parse_duration_ns("1.5ms", &ns) == 0 && ns == 1500000, "1.5ms");
    ok(st_parse_duration_ns("20us", &ns) == 0 && ns == 20000, "20us");
    ok(st_parse_duration_ns("2s", &ns) == 0 && ns == 2000000000, "2s");
    ok(st_parse_duration_ns("1500", &ns) == 0 && ns == 1500, "plain ns");
    ok(st_parse_duration_ns("5 min", &ns) < 0 && st_parse_duration_ns("", &ns) < 0, "bad durations rejected");
}

static void test_json(struct st_catalog *cat)
{
    struct st_reader *r = open_edge(cat, "arg_kinds.bin", 0);
    int ret;
    char *text = format_all(cat, r, ST_OUTPUT_JSON, &ret);
    ok(strstr(text, "{\"name\":\"ev_noargs\",\"id\":100,\"timestamp_ns\":1000000,\"pid\":4242,\"args\":{}}\n") == text,
       "JSON line of a no-argument event");
    ok(strstr(text, "{\"name\":\"ev_int\",\"id\":101,\"timestamp_ns\":1000500,\"pid\":4242,"
                    "\"args\":{\"x\":-5,\"y\":18446744073709551615}}\n") != NULL,
       "JSON integers typed: int -5 negative, uint64_t 2^64-1 exact");
    ok(strstr(text, "\"args\":{\"p\":\"0x7f0012345678\",\"s2\":\"second\"}") != NULL, "JSON pointer as a \"0x...\" string");
    ok(strstr(text, "\"args\":{\"s\":\"caf\xc3\xa9\",\"n\":2}") != NULL, "JSON keeps valid UTF-8");
    ok(strstr(text, "\"args\":{\"s\":\"\\u00ff\\u00fe bad utf8\",\"n\":3}") != NULL, "JSON \\u00XX for invalid bytes");
    ok(strstr(text, "\"args\":{\"s\":\"it's \\\"quoted\\\"\",\"n\":4}") != NULL, "JSON escapes quotes");
    int lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    is_int(lines, 12, "one JSON line per record");
    free(text);
    st_reader_close(r);
}

/* The log backend's lines, from the declared formats. */
static void test_log(struct st_catalog *cat)
{
    struct st_reader *r = open_edge(cat, "arg_kinds.bin", 0);
    int ret;
    char *text = format_all(cat, r, ST_OUTPUT_LOG, &ret);
    ok(strncmp(text,
               "ev_noargs no args\n"
               "ev_int x -5 y 18446744073709551615\n"
               "ev_str s hello n 7\n"
               "ev_str s  n 0\n",
               strlen("ev_noargs no args\nev_int x -5 y 18446744073709551615\nev_str s hello n 7\nev_str s  n 0\n")) == 0,
       "log lines: the format printf'd with typed values");
    ok(strstr(text, "\nev_ptr p 0x7f0012345678 s2 second\nev_ptrptr pp 0xdeadbeef s s\n") != NULL,
       "log lines: %%p and %%s");
    ok(strstr(text, "\nev_ten 1 2 3 4 5 6 7 8 9 10\n") != NULL, "log line of ten arguments");
    free(text);
    st_reader_close(r);

    r = open_edge(cat, "dropped.bin", 0);
    text = format_all(cat, r, ST_OUTPUT_LOG, &ret);
    ok(ret == 0 && strstr(text, "Dropped_Event num_events_dropped ") != NULL, "log line of a dropped record");
    free(text);
    st_reader_close(r);
    const struct st_event_info *ev = st_catalog_find(cat, "ev_int");
    ok(ev && ev->format && !strcmp(ev->format, "\"x %d y %\" PRIu64"), "st_event_info.format is the format as declared");
}

/* --- analyzer --------------------------------------------------------------- */

struct counts {
    int begin, end_status, ends;
    long lock, unlock, other, total;
};

static int begin_cb(void *o)
{
    ((struct counts *)o)->begin++;
    return 0;
}

static void end_cb(int status, void *o)
{
    ((struct counts *)o)->end_status = status;
    ((struct counts *)o)->ends++;
}

static int lock_cb(const struct st_record *rec, void *o)
{
    ((struct counts *)o)->lock += !strcmp(rec->name, "qemu_mutex_lock");
    ((struct counts *)o)->total++;
    return 0;
}

static int unlock_cb(const struct st_record *rec, void *o)
{
    ((struct counts *)o)->unlock += !strcmp(rec->name, "qemu_mutex_unlock");
    ((struct counts *)o)->total++;
    return 0;
}

static int other_cb(const struct st_record *rec, void *o)
{
    (void)rec;
    ((struct counts *)o)->other++;
    ((struct counts *)o)->total++;
    return ((struct counts *)o)->total == 100 && rec->number == 0 ? 7 : 0;
}

static int stop_cb(const struct st_record *rec, void *o)
{
    (void)rec;
    return ++((struct counts *)o)->total == 10 ? 42 : 0;
}

static void test_analyzer(void)
{
    struct st_catalog *cat = load_catalog("qemu", "trace-events-all");
    size_t len;
    snprintf(path_buf, sizeof path_buf, "%s/fixtures/qemu/bench_small_drops.expected.txt", shared);
    char *text = tu_slurp(path_buf, &len);
    long want_lock = 0, want_unlock = 0, want_total = 0;
    size_t pos = 0;
    struct rd_line l;
    while (rd_next_line(text, &pos, &l)) {
        want_total++;
        want_lock += !strcmp(l.name, "qemu_mutex_lock");
        want_unlock += !strcmp(l.name, "qemu_mutex_unlock");
    }
    const struct st_analyzer_handler h[] = {{sizeof h[0], "qemu_mutex_lock", lock_cb},
                                            {sizeof h[0], "qemu_mutex_unlock", unlock_cb},
                                            {sizeof h[0], "no_such_event", stop_cb}};
    struct counts c = {0};
    struct st_analyzer a = {sizeof a, &c, begin_cb, end_cb, h, 3, other_cb};
    struct st_reader *r = NULL;
    st_reader_open(&r, fixture("qemu", "bench_small_drops.bin"), cat, NULL, NULL);
    int ret = st_analyzer_run(&a, r);
    is_int(ret, 0, "analyzer run ends at the end of the trace");
    ok(c.begin == 1 && c.ends == 1 && c.end_status == 0, "begin and end once");
    is_int(c.lock, want_lock, "qemu_mutex_lock callbacks = lines in the expected text");
    is_int(c.unlock, want_unlock, "qemu_mutex_unlock callbacks = lines");
    is_int(c.total, want_total, "every record reaches a callback (catch-all for the rest)");
    is_int(c.other, want_total - want_lock - want_unlock, "catch-all gets the others");
    st_reader_close(r);

    struct counts c2 = {0};
    struct st_analyzer stop = {sizeof stop, &c2, NULL, end_cb, NULL, 0, stop_cb};
    st_reader_open(&r, fixture("qemu", "bench_small_drops.bin"), cat, NULL, NULL);
    ret = st_analyzer_run(&stop, r);
    ok(ret == 42 && c2.total == 10 && c2.end_status == 42, "a callback stops the run with its value");
    st_reader_close(r);
    free(text);
    st_catalog_free(cat);
}

/* --- memory ------------------------------------------------------------------- */

static long maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Child: writes a v4 trace of `chunks` copies of a 64 KiB block of records to fd. */
static void write_stream(int fd, int chunks)
{
    static uint8_t block[65536];
    static const char name[] = "ev_str";
    size_t p = 0;
    memcpy(block, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
    uint64_t magic = 0xf2b177cb0aa429b4ULL, version = 4;
    memcpy(block + 8, &magic, 8);
    memcpy(block + 16, &version, 8);
    uint64_t zero = 0, id = 3;
    uint32_t nl = 6;
    memcpy(block + 24, &zero, 8);
    memcpy(block + 32, &id, 8);
    memcpy(block + 40, &nl, 4);
    memcpy(block + 44, name, 6);
    if (write(fd, block, 50) != 50)
        _exit(1);
    for (p = 0; p + 64 <= sizeof block; p += 64) { /* 64-byte ev_str records */
        uint64_t type = 1, ts = p;
        uint32_t len = 56, pid = 7, slen = 20;
        uint64_t n = 1;
        memcpy(block + p, &type, 8);
        memcpy(block + p + 8, &id, 8);
        memcpy(block + p + 16, &ts, 8);
        memcpy(block + p + 24, &len, 4);
        memcpy(block + p + 28, &pid, 4);
        memcpy(block + p + 32, &slen, 4);
        memcpy(block + p + 36, "twenty bytes of text", 20);
        memcpy(block + p + 56, &n, 8);
    }
    for (int i = 0; i < chunks; i++)
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block)
            _exit(1);
    _exit(0);
}

static void test_memory(struct st_catalog *cat)
{
    int fds[2];
    if (pipe(fds) != 0) {
        ok(0, "pipe");
        return;
    }
    const int chunks = 2048; /* 128 MiB, 2M records */
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        write_stream(fds[1], chunks);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "rb");
    struct st_reader *r = NULL;
    st_reader_open_stream(&r, f, "pipe", cat, NULL, NULL);
    struct st_formatter *fmt = NULL;
    struct st_formatter_options fo = {.struct_size = sizeof fo, .format = ST_OUTPUT_TEXT, .out = NULL};
    st_formatter_new(&fmt, cat, &fo);
    const struct st_record *rec;
    long n = 0, before = 0;
    int ret;
    while ((ret = st_reader_next(r, &rec)) == 1) {
        st_formatter_write(fmt, rec);
        if (++n == 100000)
            before = maxrss_kb(); /* buffers are allocated and touched by now */
    }
    long after = maxrss_kb();
    is_int(ret, 0, "streamed trace read to the end");
    is_int(n, (long)chunks * 1024, "all records of the 128 MiB stream");
    ok(after - before < 4096, "peak RSS grew %ld KiB while reading 128 MiB (bounded)", after - before);
    st_formatter_free(fmt);
    st_reader_close(r);
    fclose(f);
    int st;
    waitpid(pid, &st, 0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SHARED_DIR\n", argv[0]);
        return 2;
    }
    shared = argv[1];
    struct st_catalog *cat = load_catalog("edge", "trace-events");
    if (!cat)
        return done_testing();
    test_versions(cat);
    test_arg_kinds(cat);
    test_mappings_and_drops(cat);
    test_errors(cat);
    test_mistakes(cat);
    test_truncation(cat);
    test_follow(cat);
    test_filters(cat);
    test_json(cat);
    test_log(cat);
    test_memory(cat);
    st_catalog_free(cat);
    test_arg_encoding();
    test_analyzer();
    return done_testing();
}
