/*
 * libFuzzer target for recover (src/recover/recover.h), which reads damaged
 * ring files by design: the input is cut into one or two ring file images,
 * a names file and a trace file (fuzz_recover_input.h) and recovered. It
 * must end with 0 or an error, never a crash, hang or read out of bounds;
 * what it writes must be a whole v4 trace whose every event ID is mapped
 * before use and whose counts are those it reports, and every message must
 * say where. The output is in meta_format.h's order: the description first
 * (recover always writes one), each declaration right after its mapping.
 *
 * Seeds: tests/fuzz/corpus/recover/, written by tests/recover/make_recover_corpus.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crash_format.h"
#include "fuzz_recover_input.h"
#include "meta_format.h"
#include "recover.h"
#include "trace_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The output, grown as recover writes it. */
struct sink {
    uint8_t *p;
    size_t len, cap;
    size_t biggest_image; /* messages' offsets lie within an image */
};

static int put(void *ctx, const void *p, size_t n)
{
    struct sink *s = ctx;

    if (s->cap - s->len < n) {
        size_t cap = (s->len + n) * 2;
        uint8_t *b = realloc(s->p, cap);
        if (!b)
            return -ENOMEM;
        s->p = b;
        s->cap = cap;
    }
    memcpy(s->p + s->len, p, n);
    s->len += n;
    return 0;
}

static void check_msg(void *ctx, const struct st__recover_msg *m)
{
    const struct sink *s = ctx;

    if (!m->text || !m->text[0] || strchr(m->text, '\n'))
        __builtin_trap(); /* one line, never empty */
    if (!m->file && m->what != ST_RECOVER_OTHER_PIDS)
        __builtin_trap(); /* every message about a file names it */
    if (m->what == ST_RECOVER_BAD_HEADER && (!m->field || m->offset >= sizeof(struct st__crash_hdr)))
        __builtin_trap(); /* a damaged header: by field, inside the header */
    if (m->offset > s->biggest_image)
        __builtin_trap();
}

/* A fixed rate for anchors too close together: fuzzing must not sleep. */
static void measure(void *ctx, struct st__clock_anchor *from, struct st__clock_anchor *to)
{
    (void)ctx;
    *from = (struct st__clock_anchor){1000, 1000};
    *to = (struct st__clock_anchor){1000 + 3000000, 1000 + 1000000};
}

static int by_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

    return a < b ? -1 : a > b;
}

/*
 * The mapping of id (name of n bytes at t) in the output's order (meta_format.h):
 * the description first of all, a declaration right after the mapping of
 * its event; prev is the ID of the mapping before (~0: none or a meta one).
 */
static void check_mapping(uint64_t id, const uint8_t *t, uint32_t n, uint64_t prev, bool first)
{
    if (st__meta_is_info(id)) {
        if (!first || n < strlen(ST_META_FIRST_LINE) || memcmp(t, ST_META_FIRST_LINE, strlen(ST_META_FIRST_LINE)))
            __builtin_trap(); /* the description, first, as a reader wants it */
    } else if (st__meta_is_decl(id)) {
        if (prev > UINT32_MAX || id != ST_META_DECL_ID(prev))
            __builtin_trap(); /* a declaration right after its event's mapping */
    } else if (first) {
        __builtin_trap(); /* recover always writes a description */
    }
}

/*
 * The output: a v4 header, the description, mappings (each maybe followed
 * by its declaration), then event records whose IDs were mapped (by a
 * mapping, not a description or declaration), whole to the end; its events
 * and dropped counts are those of stats.
 */
static void check_output(const struct sink *s, const struct st__recover_stats *st)
{
    const uint8_t *p = s->p;
    uint64_t *ids = malloc((s->len / ST_MAPPING_FIXED_SIZE + 1) * sizeof *ids), events = 0, drops = 0;
    uint64_t prev = ~UINT64_C(0);
    size_t at = ST_HEADER_SIZE, nids = 0;

    if (!ids)
        return;
    if (s->len < ST_HEADER_SIZE || st__fmt_get_u64(p) != ST_HEADER_EVENT_ID || st__fmt_get_u64(p + 8) != ST_HEADER_MAGIC)
        __builtin_trap();
    while (s->len - at >= ST_MAPPING_FIXED_SIZE && st__fmt_get_u64(p + at) == ST_RECORD_TYPE_MAPPING) {
        uint32_t n = st__fmt_get_u32(p + at + 16);
        uint64_t id = st__fmt_get_u64(p + at + 8);
        if (n == 0 || n > s->len - at - ST_MAPPING_FIXED_SIZE)
            __builtin_trap();
        check_mapping(id, p + at + ST_MAPPING_FIXED_SIZE, n, prev, at == ST_HEADER_SIZE);
        /* ~0 (no mapping before) is no event's 32-bit ID, so it never matches a declaration. */
        prev = st__meta_is_info(id) || st__meta_is_decl(id) ? ~UINT64_C(0) : id;
        if (!st__meta_is_info(id) && !st__meta_is_decl(id))
            ids[nids++] = id;
        at += ST_MAPPING_FIXED_SIZE + n;
    }
    if (at == ST_HEADER_SIZE)
        __builtin_trap(); /* not even the description */
    qsort(ids, nids, sizeof *ids, by_u64);
    while (at < s->len) {
        uint64_t size, id;
        if (s->len - at < ST_EVENT_FIXED_SIZE || st__fmt_get_u64(p + at) != ST_RECORD_TYPE_EVENT)
            __builtin_trap(); /* after the mappings, only whole event records */
        size = 8 + (uint64_t)st__fmt_get_u32(p + at + ST_EV_OFF_LENGTH);
        if (size < ST_EVENT_FIXED_SIZE || size > s->len - at)
            __builtin_trap();
        id = st__fmt_get_u64(p + at + ST_EV_OFF_ID);
        if (id == ST_DROPPED_EVENT_ID) {
            if (size >= ST_EVENT_FIXED_SIZE + 8)
                drops += st__fmt_get_u64(p + at + ST_EV_OFF_PAYLOAD);
        } else {
            if (!bsearch(&id, ids, nids, sizeof *ids, by_u64))
                __builtin_trap(); /* an ID with no mapping */
            events++;
        }
        at += size;
    }
    if (events != st->events || drops != st->drops)
        __builtin_trap();
    free(ids);
}

/* A copy of n bytes of p in an allocation of its own (NULL data for n == 0). */
static struct st__recover_image image(const char *name, const uint8_t *p, size_t n)
{
    uint8_t *c = n ? malloc(n) : NULL;

    if (c)
        memcpy(c, p, n);
    return (struct st__recover_image){name, c, c ? n : 0};
}

/* Takes the length at bytes b, b + 1 when flag is set, cut to what is left. */
static size_t take_len(const uint8_t *data, unsigned flags, unsigned flag, size_t b, size_t *left)
{
    size_t n = (flags & flag) ? (size_t)data[b] | (size_t)data[b + 1] << 8 : 0;

    if (n > *left)
        n = *left;
    *left -= n;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sink s = {0};
    struct st__recover_hooks hooks = {check_msg, put, measure, &s};
    struct st__recover_image rings[2], names;
    struct st__recover_trace trace;
    struct st__recover_stats st;
    struct st__recover *r = NULL;
    size_t left, n_names, n_trace, n_ring2, n_ring1;
    unsigned flags;
    long pid = -1;
    int ret;

    if (size < FZ_PREFIX)
        return 0;
    flags = data[0];
    left = size - FZ_PREFIX;
    n_names = take_len(data, flags, FZ_NAMES, 1, &left);
    n_trace = take_len(data, flags, FZ_TRACE, 3, &left);
    n_ring2 = take_len(data, flags, FZ_RING2, 5, &left);
    n_ring1 = left;
    data += FZ_PREFIX;
    names = image("fz/st-4000001.names", data, n_names);
    trace.img = image("fz/trace", data + n_names, n_trace);
    rings[0] = image(flags & FZ_BAD_NAME ? "fz/ring-file" : "fz/st-4000001-11.ring", data + n_names + n_trace, n_ring1);
    rings[1] = image(flags & FZ_RING2_PID ? "fz/st-4000002-12.ring" : "fz/st-4000001-12.ring",
                     data + n_names + n_trace + n_ring1, n_ring2);
    s.biggest_image = n_ring1 > n_ring2 ? n_ring1 : n_ring2;
    s.biggest_image = s.biggest_image > n_names ? s.biggest_image : n_names;
    trace.dev = 1, trace.ino = 2;
    if ((flags & FZ_TRACE_SAME) && n_ring1 >= sizeof(struct st__crash_hdr)) {
        trace.dev = st__fmt_get_u64(rings[0].data + offsetof(struct st__crash_hdr, file_dev));
        trace.ino = st__fmt_get_u64(rings[0].data + offsetof(struct st__crash_hdr, file_ino));
    }
    if ((flags & FZ_ASK_PID) && n_ring2 >= sizeof(struct st__crash_hdr))
        pid = (long)st__fmt_get_u32(rings[1].data + offsetof(struct st__crash_hdr, pid));
    ret = st__recover_open(&r, rings, (flags & FZ_RING2) ? 2 : 1, pid, (flags & FZ_TRACE) ? &trace : NULL, &hooks);
    if (ret < 0 && ret != -ENOENT && ret != -ENOMEM)
        __builtin_trap();
    if (ret == 0) {
        if (!st__recover_first_name(r))
            __builtin_trap();
        ret = st__recover_write(r, (flags & FZ_NAMES) ? &names : NULL, (flags & FZ_TRACE) ? &trace : NULL, &st);
        if (ret < 0 && ret != -ENOMEM)
            __builtin_trap();
        if (ret == 0)
            check_output(&s, &st);
    }
    st__recover_free(r);
    free((void *)names.data);
    free((void *)trace.img.data);
    free((void *)rings[0].data);
    free((void *)rings[1].data);
    free(s.p);
    return 0;
}
