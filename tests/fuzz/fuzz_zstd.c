/*
 * libFuzzer target for compressed traces (zstd_input.c, zstd_seek_format.h):
 * the input is parsed as the end of a file by the seek-table and
 * time-index parser (every entry it accepts must lie inside the file),
 * then read as a trace in memory: whole, with --from/--to windows that
 * make the reader skip frames by the time index, with a process filter,
 * and answered from its summary (ST_READER_SUMMARY, the counts asked). Inputs that do not start with a zstd frame are made to
 * (the first 4 bytes replaced by the frame magic), so the fuzzer spends
 * its time in the decompressor's paths. Every read must end cleanly or
 * with a recorded error naming where; never a crash, hang or unbounded
 * allocation.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <simpletrace/reader.h>

#include "zstd_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_index(const uint8_t *data, size_t size)
{
    struct st__zindex ix;
    uint64_t need = 0;
    char why[160];
    int ret = st__zindex_parse(data, size, size, &ix, &need, why, sizeof why);

    if (ret == -ENOSPC && need <= size)
        abort(); /* asked for bytes it had */
    if (ret != 1)
        return;
    for (uint32_t i = 0; i < ix.n; i++)
        if (ix.frames[i].coff + ix.frames[i].csize > size)
            abort(); /* an entry outside the file */
    if (ix.k_first > ix.n || ix.k_last > ix.n || (ix.have_sum && ix.nsum && !ix.sum))
        abort(); /* extremes outside the table, a summary without its entries */
    st__zindex_free(&ix);
}

static void count_one(void *opaque, const struct st_event_info *ev, const char *name, uint64_t id, uint64_t count)
{
    (void)ev, (void)name, (void)id;
    *(uint64_t *)opaque += count;
}

static void read_all(const uint8_t *data, size_t size, const struct st_reader_options *o)
{
    struct st_reader *r;
    const struct st_record *rec;
    struct st_reader_compression c = {.struct_size = sizeof c};
    int ret;

    if (st_reader_open_memory(&r, data, size, "fuzz.zst", NULL, o, NULL) < 0)
        return;
    while ((ret = st_reader_next(r, &rec)) == 1)
        ;
    if (ret < 0 && !st_reader_error(r)->message[0])
        abort(); /* an error without a word */
    st_reader_get_compression(r, &c);
    uint64_t total = 0;
    (void)st_reader_summary_counts(r, count_one, &total); /* whatever the summary says, resolved without harm */
    st_reader_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;

    check_index(data, size);
    if (size < 4 || !(copy = malloc(size)))
        return 0;
    memcpy(copy, data, size);
    if (!st__zin_magic(copy, size))
        st__zle_put32(copy, ST_ZSTD_FRAME_MAGIC);
    struct st_reader_options o = {.struct_size = sizeof o};
    read_all(copy, size, &o);
    o.filter_from = o.filter_to = true;
    o.from_ns = 1000;
    o.to_ns = 50000;
    read_all(copy, size, &o);
    o.from_ns = 0;
    o.to_ns = 0;
    read_all(copy, size, &o);
    o.filter_from = o.filter_to = false;
    o.filter_pid = true;
    o.pid = 1;
    read_all(copy, size, &o);
    o.filter_pid = false;
    o.flags = ST_READER_SUMMARY | ST_READER_UNDECLARED;
    read_all(copy, size, &o);
    free(copy);
    return 0;
}
