/*
 * libFuzzer target for the trace reader: the input is decoded as a trace
 * file (in memory, with a fixed trace-events text) and every record is
 * formatted into a discarded buffer, four times: as a v0/v2/v3/v4 file
 * with a header to text, as a header-less file to JSON through a filter,
 * as a file with a header to the log backend's lines (its declared
 * formats), and as a trace in pieces (st_reader_open_pieces) cut before every later
 * header, as `cat FILE FILE.1 ...` of a rotated trace would be. Then the
 * declarations the input carries (meta_format.h) become a catalog through
 * st_catalog_load_trace() (it takes a path: the input goes into a memfd,
 * read through /proc/self/fd) and, when they parse, the input is read and
 * printed with that catalog alone; and the input is read in one pass
 * without a catalog, as `simpletrace print TRACE` does, the reader's own
 * catalog growing with its declarations. The reader must end every input with a clean end or an error, never a
 * crash, hang or unbounded allocation.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <simpletrace/reader.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Events of every argument kind; the qemu_mutex_* ones also decode the start of real QEMU traces. */
static const char events_text[] =
    "# fuzz catalogue\n"
    "ev_noargs(void) \"no args\"\n"
    "ev_int(int x, uint64_t y) \"x %d y %\" PRIu64\n"
    "ev_str(const char *s, int n) \"s %s n %d\"\n"
    "ev_ptr(void *p, char *s2) \"p %p s2 %s\"\n"
    "disable ev_off(int a) \"a %d\"\n"
    "ev_two_str(const char *a, const char *b) \"%s %s\"\n"
    "ev_ten(int a1, int a2, int a3, int a4, int a5, int a6, int a7, int a8, int a9, int a10) "
    "\"%d %d %d %d %d %d %d %d %d %d\"\n"
    "qemu_mutex_lock(void *mutex, const char *file, const int line) \"waiting on mutex %p (%s:%d)\"\n"
    "qemu_mutex_locked(void *mutex, const char *file, const int line) \"taken mutex %p (%s:%d)\"\n"
    "qemu_mutex_unlock(void *mutex, const char *file, const int line) \"released mutex %p (%s:%d)\"\n"
    /* For the typed outputs: stars, flags, narrow conversions, a PRI macro outside a conversion, a cut line. */
    "ev_typed(int8_t a, bool b, char c, int w, const char *s, int64_t d, uint16_t u) "
    "\"%-4hhd %d %c [%*.3s] %+\" PRId64 \" %#06\" PRIx16 \" 100%% \" PRIu64\n"
    "ev_wide(int x) \"%5000d\"\n";

static struct st_catalog *catalog(void)
{
    static struct st_catalog *cat;
    if (!cat && st_catalog_load_buffer(&cat, "fuzz-events", events_text, sizeof events_text - 1, NULL, 0) < 0)
        abort(); /* the fixed text must parse: a harness bug, not an input bug */
    return cat;
}

/* An error must be recorded, with a message naming where. */
static void check_end(struct st_reader *r, int ret)
{
    if (ret < 0) {
        char msg[1024];
        st_reader_format_error(r, msg, sizeof msg);
        if (st_reader_error(r)->code != ret || !msg[0])
            abort();
    }
}

/* Reads every record of r (pieces of size bytes in all), checks how it ended, closes r. */
static void drain(struct st_reader *r, size_t size)
{
    const struct st_record *rec;
    struct st_reader_counters c = {.struct_size = sizeof c};
    int ret;
    while ((ret = st_reader_next(r, &rec)) == 1)
        if (rec->offset >= size)
            abort(); /* an offset is within its piece */
    check_end(r, ret);
    if (st_reader_get_counters(r, &c) != 0 || c.bytes > size)
        abort(); /* bytes consumed sum over the pieces */
    st_reader_close(r);
}

/* The description, once records were read: every string set (possibly ""), or none at all. */
static void check_description(const struct st_reader *r)
{
    struct st_trace_description d = {.struct_size = sizeof d};
    int ret = st_reader_description(r, &d);

    if (ret == 0 && (!d.version || !d.program || !d.exe || !d.cmdline || !d.host || !d.clock))
        abort();
    if (ret < 0 && ret != -ENODATA)
        abort();
}

/* Reads and formats every record with cat; the outcome does not matter, only that it ends cleanly. */
static void run_with(const struct st_catalog *cat, const uint8_t *data, size_t size, const struct st_reader_options *ro,
                     const struct st_formatter_options *fo)
{
    struct st_reader *r = NULL;
    struct st_formatter *f = NULL;
    if (st_reader_open_memory(&r, data, size, "fuzz", cat, ro, NULL) < 0 || st_formatter_new(&f, cat, fo) < 0)
        abort();
    const struct st_record *rec;
    int ret;
    while ((ret = st_reader_next(r, &rec)) == 1)
        if (st_formatter_write(f, rec) < 0)
            abort();
    check_end(r, ret);
    check_description(r);
    st_formatter_flush(f);
    st_formatter_free(f);
    st_reader_close(r);
}

static void run(const uint8_t *data, size_t size, const struct st_reader_options *ro,
                const struct st_formatter_options *fo)
{
    run_with(catalog(), data, size, ro, fo);
}

/*
 * The catalog of the input's own declarations, then the input read and
 * printed (text and log lines) with it; an error must be said.
 */
static void run_embedded(const uint8_t *data, size_t size)
{
    struct st_reader_options ro = {.struct_size = sizeof ro, .buffer_size = 4096};
    struct st_formatter_options fo = {.struct_size = sizeof fo};
    struct st_catalog *cat = NULL;
    char path[64], err[512] = "";
    int fd = memfd_create("fuzz-trace", MFD_CLOEXEC), ret;

    if (fd < 0)
        return; /* no memfd: nothing to check here */
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return;
    }
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ret = st_catalog_load_trace(&cat, path, &ro, err, sizeof err);
    if ((ret < 0) != (cat == NULL) || (ret < 0 && !err[0]))
        abort(); /* a catalog exactly when 0; an error always says what */
    if (cat) {
        run_with(cat, data, size, &ro, &fo);
        fo.format = ST_OUTPUT_LOG;
        run_with(cat, data, size, &ro, &fo);
    }
    st_catalog_free(cat);
    close(fd);
}

/*
 * The one pass of `simpletrace print TRACE`: no catalog, the reader's own
 * grows with the declarations as they come; every record's event is the
 * catalog's at its index, and the formatter follows the growth. With a
 * filter, the events declared later are judged as they come.
 */
static void run_one_pass(const uint8_t *data, size_t size, const char *filter, enum st_output_format format)
{
    struct st_reader_options ro = {.struct_size = sizeof ro, .buffer_size = 4096, .events = filter};
    struct st_formatter_options fo = {.struct_size = sizeof fo, .format = format};
    struct st_reader *r = NULL;
    struct st_formatter *f = NULL;
    if (st_reader_open_memory(&r, data, size, "fuzz", NULL, &ro, NULL) < 0 ||
        st_formatter_new(&f, st_reader_catalog(r), &fo) < 0)
        abort();
    const struct st_catalog *cat = st_reader_catalog(r);
    const struct st_record *rec;
    int ret;
    while ((ret = st_reader_next(r, &rec)) == 1)
        if (st_catalog_event(cat, rec->event->index) != rec->event || st_formatter_write(f, rec) < 0)
            abort();
    check_end(r, ret);
    if (st_catalog_dropped(cat)->index != 0)
        abort(); /* a catalog that grows holds Dropped_Event first */
    st_formatter_flush(f);
    st_formatter_free(f);
    st_reader_close(r);
}

#define MAX_PIECES 16

/* Whether a v4 header's first 16 bytes (ID and magic, either byte order) start at p. */
static int header_at(const uint8_t *p)
{
    static const uint8_t id[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    static const uint8_t le[8] = {0xb4, 0x29, 0xa4, 0x0a, 0xcb, 0x77, 0xb1, 0xf2};
    static const uint8_t be[8] = {0xf2, 0xb1, 0x77, 0xcb, 0x0a, 0xa4, 0x29, 0xb4};
    return !memcmp(p, id, 8) && (!memcmp(p + 8, le, 8) || !memcmp(p + 8, be, 8));
}

/* Reads the input cut into memory pieces before every header after the first. */
static void run_pieces(const uint8_t *data, size_t size)
{
    static const char *const names[MAX_PIECES] = {"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7",
                                                  "p8", "p9", "p10", "p11", "p12", "p13", "p14", "p15"};
    struct st_reader_piece pieces[MAX_PIECES];
    size_t n = 0, start = 0;
    for (size_t i = 1; i + 16 <= size && n + 1 < MAX_PIECES; i++) {
        if (header_at(data + i)) {
            pieces[n] = (struct st_reader_piece){sizeof pieces[0], names[n], data + start, i - start};
            n++;
            start = i;
        }
    }
    pieces[n] = (struct st_reader_piece){sizeof pieces[0], names[n], size ? data + start : (const uint8_t *)"",
                                         size - start};
    n++;
    struct st_reader_options ro;
    memset(&ro, 0, sizeof ro);
    ro.struct_size = sizeof ro;
    ro.buffer_size = 4096;
    ro.filter_from = true; /* the origin runs across pieces */
    ro.from_ns = 1;
    struct st_reader *r = NULL;
    if (st_reader_open_pieces(&r, pieces, n, catalog(), &ro, NULL) < 0)
        abort();
    drain(r, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_reader_options ro;
    struct st_formatter_options fo;
    memset(&ro, 0, sizeof ro);
    memset(&fo, 0, sizeof fo);
    ro.struct_size = sizeof ro;
    fo.struct_size = sizeof fo;
    ro.buffer_size = 4096; /* small limit: exercises the record-too-long path */
    run(data, size, &ro, &fo);

    ro.flags = ST_READER_NO_HEADER;
    ro.events = "ev_*,-ev_ten,qemu_mutex_lock*";
    ro.filter_to = true;
    ro.to_ns = 1000000;
    fo.format = ST_OUTPUT_JSON;
    fo.timestamps = ST_TIMESTAMP_RELATIVE;
    run(data, size, &ro, &fo);

    memset(&ro, 0, sizeof ro);
    ro.struct_size = sizeof ro;
    fo.format = ST_OUTPUT_LOG;
    run(data, size, &ro, &fo);

    run_pieces(data, size);
    run_embedded(data, size);
    run_one_pass(data, size, NULL, ST_OUTPUT_TEXT);
    run_one_pass(data, size, "*,-ev_int,qemu_*", ST_OUTPUT_JSON);
    return 0;
}
