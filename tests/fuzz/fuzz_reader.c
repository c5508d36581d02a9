/*
 * libFuzzer target for the trace reader: the input is decoded as a trace
 * file (in memory, with a fixed trace-events text) and every record is
 * formatted into a discarded buffer, twice: as a v0/v2/v3/v4 file with a
 * header to text, and as a header-less file to JSON through a filter.
 * The reader must end every input with a clean end or an error, never a
 * crash, hang or unbounded allocation.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    "qemu_mutex_unlock(void *mutex, const char *file, const int line) \"released mutex %p (%s:%d)\"\n";

static struct st_catalog *catalog(void)
{
    static struct st_catalog *cat;
    if (!cat && st_catalog_load_buffer(&cat, "fuzz-events", events_text, sizeof events_text - 1, NULL, 0) < 0)
        abort(); /* the fixed text must parse: a harness bug, not an input bug */
    return cat;
}

/* Reads and formats every record; the outcome does not matter, only that it ends cleanly. */
static void run(const uint8_t *data, size_t size, const struct st_reader_options *ro,
                const struct st_formatter_options *fo)
{
    struct st_catalog *cat = catalog();
    struct st_reader *r = NULL;
    struct st_formatter *f = NULL;
    if (st_reader_open_memory(&r, data, size, "fuzz", cat, ro, NULL) < 0 || st_formatter_new(&f, cat, fo) < 0)
        abort();
    const struct st_record *rec;
    int ret;
    while ((ret = st_reader_next(r, &rec)) == 1)
        if (st_formatter_write(f, rec) < 0)
            abort();
    if (ret < 0) {
        char msg[1024];
        st_reader_format_error(r, msg, sizeof msg);
        if (st_reader_error(r)->code != ret || !msg[0])
            abort(); /* an error must be recorded with a message */
    }
    st_formatter_flush(f);
    st_formatter_free(f);
    st_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st_reader_options ro;
    struct st_formatter_options fo;
    memset(&ro, 0, sizeof ro);
    memset(&fo, 0, sizeof fo);
    ro.buffer_size = 4096; /* small limit: exercises the record-too-long path */
    run(data, size, &ro, &fo);

    ro.flags = ST_READER_NO_HEADER;
    ro.events = "ev_*,-ev_ten,qemu_mutex_lock*";
    ro.filter_to = true;
    ro.to_ns = 1000000;
    fo.format = ST_OUTPUT_JSON;
    fo.timestamps = ST_TIMESTAMP_RELATIVE;
    run(data, size, &ro, &fo);
    return 0;
}
