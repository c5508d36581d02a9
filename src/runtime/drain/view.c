/*
 * `info trace`: the records still in the thread buffers, as a v4 trace.
 *
 * QEMU's `info trace` dumps its one ring with simple formatting. Here the
 * monitor thread copies every thread's unwritten records without consuming
 * them (st__ring_peek, buffer.c), so the trace file later gets them all the
 * same, and turns the copy into what the writer would have written: a
 * header, a mapping for each ID used, and the records merged into time
 * order with their raw timestamps converted to CLOCK_MONOTONIC ns. The
 * client decodes it with the reader library, so `simpletrace ctl PID info
 * trace` prints what `simpletrace print` prints for a file.
 *
 * Conversion: our own st_clock_conv, started afresh for every snapshot, so
 * it interpolates between the start-up anchor and now (the writer's state
 * belongs to the writeout thread and is not shared). For TSC timestamps the
 * result may differ from what the writer will write for the same record by
 * the clock's slew over the segment (microseconds at most), which is why a
 * snapshot is a view, not part of the file.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"
#include "ring.h"
#include "timestamp.h"
#include "rt_internal.h"
#include "monitor.h"

/* One record of the copy, with its converted timestamp. */
struct rec_ref {
    uint64_t ns;   /* CLOCK_MONOTONIC ns */
    size_t off;    /* offset in the copy */
    size_t seq;    /* position in the copy: keeps equal timestamps in buffer order */
};

static int ref_cmp(const void *a, const void *b)
{
    const struct rec_ref *x = a, *y = b;

    if (x->ns != y->ns)
        return x->ns < y->ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Copies the buffers into a fresh allocation: *len bytes, *left that did not fit. */
static uint8_t *copy_buffers(size_t *len, uint64_t *left)
{
    struct st_stats st;
    size_t cap;
    uint8_t *copy;

    st_stats_get(&st);
    /* What is buffered now, with slack for what arrives while we copy. */
    cap = st.buffered + ((size_t)256 << 10);
    for (int attempt = 0;; attempt++) {
        if (cap > ST_MON_TRACE_MAX)
            cap = ST_MON_TRACE_MAX;
        copy = malloc(cap);
        if (!copy)
            return NULL;
        *len = st__ring_peek(copy, cap, left);
        if (*left == 0 || cap == ST_MON_TRACE_MAX || attempt == 2)
            return copy;
        free(copy);
        cap = cap * 2 + (size_t)*left;
    }
}

/*
 * Kept from one snapshot to the next (only the monitor thread takes them):
 * a record converts to the same ns in every snapshot that holds it.
 */
static struct st_clock_conv conv;

int st__mon_trace_snapshot(struct st_mon_buf *out, struct st_mon_snapshot *snap)
{
    struct rec_ref *refs = NULL;
    uint8_t *copy, *used = NULL, hdr[ST_HEADER_SIZE];
    size_t len = 0, n = 0, cap = 0, total, dlen = 0;
    uint64_t max_raw = 0;
    char *decls;
    uint32_t nids = st__reg_count();
    int ret = -ENOMEM;

    memset(snap, 0, sizeof *snap);
    copy = copy_buffers(&len, &snap->left);
    if (!copy)
        return -ENOMEM;
    /* The IDs the records use, for their mappings. */
    used = calloc(nids ? nids : 1, 1);
    if (!used)
        goto out;
    for (size_t off = 0; off + ST_EVENT_FIXED_SIZE <= len;) {
        uint64_t id = st_fmt_get_u64(copy + off + ST_EV_OFF_ID);
        size_t rlen = 8 + (size_t)st_fmt_get_u32(copy + off + ST_EV_OFF_LENGTH);
        if (rlen < ST_EVENT_FIXED_SIZE || rlen > len - off)
            break; /* cannot happen: st__ring_peek keeps whole records */
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 1024;
            struct rec_ref *r = realloc(refs, ncap * sizeof *r);
            if (!r)
                goto out;
            refs = r;
            cap = ncap;
        }
        refs[n] = (struct rec_ref){st_fmt_get_u64(copy + off + ST_EV_OFF_TIMESTAMP), off, n}; /* raw for now */
        if (refs[n].ns > max_raw)
            max_raw = refs[n].ns;
        n++;
        if (id < nids)
            used[id] = 1;
        off += rlen;
    }
    st__ts_conv_update_past(&conv, max_raw);
    for (size_t i = 0; i < n; i++)
        refs[i].ns = st__clock_conv(&conv, refs[i].ns);
    if (n)
        qsort(refs, n, sizeof *refs, ref_cmp);

    /* Size first, so the framing lines go straight before the stream in out. */
    total = ST_HEADER_SIZE;
    for (uint32_t first = 0; first < nids; first += 64) {
        const char *names[64];
        uint32_t got = st__reg_names(first, names, nids - first < 64 ? nids - first : 64);
        for (uint32_t i = 0; i < got; i++)
            if (used[first + i])
                total += st_fmt_mapping_size(strlen(names[i]));
    }
    for (size_t i = 0; i < n; i++)
        total += 8 + (size_t)st_fmt_get_u32(copy + refs[i].off + ST_EV_OFF_LENGTH);
    /* The declarations first, so the client decodes arguments without files. */
    decls = st__reg_decls(&dlen);
    if (decls) {
        st__mon_printf(out, "events %zu\n", dlen);
        st__mon_put(out, decls, dlen);
        free(decls);
    }
    if (snap->left)
        st__mon_printf(out, "truncated %" PRIu64 "\n", snap->left);
    st__mon_printf(out, "data %zu\n", total);

    st__mon_put(out, hdr, st_fmt_put_header(hdr));
    for (uint32_t first = 0; first < nids; first += 64) {
        const char *names[64];
        uint32_t got = st__reg_names(first, names, nids - first < 64 ? nids - first : 64);
        for (uint32_t i = 0; i < got; i++) {
            uint8_t m[ST_MAPPING_FIXED_SIZE];
            size_t nl;
            if (!used[first + i])
                continue;
            nl = strlen(names[i]);
            st_fmt_put_u64(m, ST_RECORD_TYPE_MAPPING);
            st_fmt_put_u64(m + 8, first + i);
            st_fmt_put_u32(m + 16, (uint32_t)nl);
            st__mon_put(out, m, sizeof m);
            st__mon_put(out, names[i], nl);
        }
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = copy + refs[i].off;
        st_fmt_put_u64(p + ST_EV_OFF_TIMESTAMP, refs[i].ns);
        st__mon_put(out, p, 8 + (size_t)st_fmt_get_u32(p + ST_EV_OFF_LENGTH));
    }
    snap->records = n;
    ret = out->failed ? -ENOMEM : 0;
out:
    free(used);
    free(refs);
    free(copy);
    return ret;
}
