/*
 * The reader on a compressed trace of many frames (compress=zstd, written
 * here: 40 flushes, a group registered half-way so a frame in the middle
 * holds mappings), record by record against the same trace decompressed
 * by `zstd -d` (the real consumer of the format), read plain:
 *
 *   - a full read gives every record with the same number, offset,
 *     timestamp, event and values, from a file and from memory, with the
 *     decompress-ahead thread (frames_ahead > 0 in one of up to ten reads:
 *     the reading thread takes a frame the thread has not begun, so on a
 *     busy machine a read may go without it) and without it
 *     (SIMPLETRACE_DECOMPRESS_AHEAD=0: frames_ahead 0);
 *   - a --from/--to window skips frames, and the records it gives keep a
 *     full read's numbers and offsets; the counters are a full read's;
 *   - ST_READER_SUMMARY decompresses a few frames: the records it gives
 *     are the plain file's (same numbers), among them the first and the
 *     last timestamp; the counters and st_reader_summary_counts() per event
 *     are a full read's; on a plain file it changes nothing;
 *   - a damaged frame: with and without the thread, the same records
 *     before it and the same error (code, offset, record, message).
 */
#include <stdlib.h>

#include <simpletrace/reader.h>

#include "rt_test.h"

TEST_EVENT(ev_a, "zr_a", "int seq", "seq %d", "i", 1, 0);
TEST_EVENT(ev_s, "zr_s", "int a, int seq, const char *s", "a %d seq %d s %s", "iis", 3, 0);
TEST_GROUP(grp_zr, "zread", &ev_a, &ev_s)
/* Registered half-way: its mapping and declaration records land in a frame in the middle. */
static struct st_event ev_late = {sizeof(struct st_event), 0, 0, "zr_late", "int a, int b", "a %d b %d", "ii", 2, 0};
static struct st_event *const late_events[] = {&ev_late};
static struct st_group grp_late = {sizeof(struct st_group), "zread_late", late_events, 1, 0};

/* Writes the compressed trace: 40 frames of 2500 records (one flush each). */
static int write_trace(const char *path)
{
    static const char text[] = "abcdefghijklmnopqrstuvwxyz";
    char cfg[800];
    uint64_t seq = 0;

    snprintf(cfg, sizeof cfg, "zr_*,bufsize=4M,compress=zstd,file=%s", path);
    if (st_configure(cfg, NULL, 0) != 0)
        return -1;
    for (int k = 0; k < 40; k++) {
        if (k == 20)
            st_group_register(&grp_late);
        for (int i = 0; i < 2500; i++, seq++) {
            if (seq % 3 == 0)
                test_trace_iis(&ev_s, seq * 7, seq, text + seq % 20);
            else if (k >= 20 && seq % 3 == 1)
                test_trace_ii(&ev_late, seq, k);
            else
                test_trace_i(&ev_a, seq);
        }
        st_trace_file_flush();
    }
    return st_trace_file_set_enabled(false);
}

/* One record as compared: where it is and what it says. */
struct rec {
    uint64_t number, offset, ts, id, dropped_count, args[4];
    uint32_t pid;
    const char *name; /* the catalog's (the reader's catalog lives until close: names compared as strings at once) */
    unsigned nargs;
};

/* What a read gave. */
struct run {
    struct rec *r;
    size_t n, cap;
    char names[64][64];      /* the event names met, by catalog index */
    uint64_t per_event[64];  /* records per catalog index */
    struct st_reader_counters c;
    struct st_reader_compression z;
    struct st_reader_error err;
    int ret;                 /* the last st_reader_next() */
};

static void run_free(struct run *u)
{
    free(u->r);
    memset(u, 0, sizeof *u);
}

/* Reads everything into *u, from path or (data) memory. */
static void read_all(struct run *u, const char *path, const void *data, size_t size, const struct st_reader_options *o)
{
    struct st_reader *r;
    const struct st_record *rec;
    int ret;

    memset(u, 0, sizeof *u);
    u->c.struct_size = sizeof u->c;
    u->z.struct_size = sizeof u->z;
    ret = data ? st_reader_open_memory(&r, data, size, path, NULL, o, NULL) : st_reader_open(&r, path, NULL, o, NULL);
    if (ret != 0) {
        u->ret = ret;
        return;
    }
    while ((ret = st_reader_next(r, &rec)) == 1) {
        if (u->n == u->cap) {
            u->cap = u->cap ? 2 * u->cap : 4096;
            u->r = realloc(u->r, u->cap * sizeof *u->r);
        }
        struct rec *x = &u->r[u->n++];
        memset(x, 0, sizeof *x);
        x->number = rec->number, x->offset = rec->offset, x->ts = rec->timestamp_ns, x->id = rec->id;
        x->pid = rec->pid, x->dropped_count = rec->dropped_count, x->nargs = rec->nargs;
        for (unsigned i = 0; i < rec->nargs && i < 4; i++)
            x->args[i] = rec->args[i].u64;
        if (rec->event && rec->event->index < 64) {
            snprintf(u->names[rec->event->index], sizeof u->names[0], "%s", rec->event->name);
            if (!rec->dropped)
                u->per_event[rec->event->index]++;
        }
    }
    u->ret = ret;
    u->err = *st_reader_error(r);
    st_reader_get_counters(r, &u->c);
    st_reader_get_compression(r, &u->z);
    st_reader_close(r);
}

static bool same_rec(const struct rec *a, const struct rec *b)
{
    return a->number == b->number && a->offset == b->offset && a->ts == b->ts && a->id == b->id &&
           a->pid == b->pid && a->dropped_count == b->dropped_count && a->nargs == b->nargs &&
           !memcmp(a->args, b->args, sizeof a->args);
}

/* Whether a and b gave the same records; on a difference, which. */
static bool same_records(const struct run *a, const struct run *b)
{
    if (a->n != b->n) {
        diag("%zu records against %zu", a->n, b->n);
        return false;
    }
    for (size_t i = 0; i < a->n; i++)
        if (!same_rec(&a->r[i], &b->r[i])) {
            diag("record %zu: number %llu offset %llu against number %llu offset %llu", i,
                 (unsigned long long)a->r[i].number, (unsigned long long)a->r[i].offset,
                 (unsigned long long)b->r[i].number, (unsigned long long)b->r[i].offset);
            return false;
        }
    return true;
}

/* Whether every record of sub is in full (found by number) and the same there. */
static bool subset(const struct run *sub, const struct run *full)
{
    size_t j = 0;
    for (size_t i = 0; i < sub->n; i++) {
        while (j < full->n && full->r[j].number < sub->r[i].number)
            j++;
        if (j == full->n || !same_rec(&sub->r[i], &full->r[j])) {
            diag("record number %llu (offset %llu) is not the full read's", (unsigned long long)sub->r[i].number,
                 (unsigned long long)sub->r[i].offset);
            return false;
        }
    }
    return true;
}

static bool same_counters(const struct st_reader_counters *a, const struct st_reader_counters *b)
{
    return a->records == b->records && a->mappings == b->mappings && a->events == b->events &&
           a->dropped_records == b->dropped_records && a->dropped_events == b->dropped_events;
}

/* The smallest and largest timestamp of the event and dropped records. */
static void extremes(const struct run *u, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX, *hi = 0;
    for (size_t i = 0; i < u->n; i++) {
        if (u->r[i].ts < *lo)
            *lo = u->r[i].ts;
        if (u->r[i].ts > *hi)
            *hi = u->r[i].ts;
    }
}

struct counted {
    struct run *u; /* the catalog names of the plain read, to compare by name */
    uint64_t by_name[64];
    uint64_t unknown;
};

static void count_cb(void *opaque, const struct st_event_info *ev, const char *name, uint64_t id, uint64_t count)
{
    struct counted *k = opaque;
    (void)id;
    for (size_t i = 0; i < 64; i++)
        if (ev && name && !strcmp(k->u->names[i], name)) {
            k->by_name[i] += count;
            return;
        }
    k->unknown += count;
}

static void set_ahead(bool on)
{
    if (on)
        unsetenv("SIMPLETRACE_DECOMPRESS_AHEAD");
    else
        setenv("SIMPLETRACE_DECOMPRESS_AHEAD", "0", 1);
}

int main(void)
{
    char zpath[600], plain[600], bad[600];
    struct run p, z, y;
    struct st_reader_options o = {.struct_size = sizeof o};

    test_tmpdir();
    snprintf(zpath, sizeof zpath, "%s", test_path("z.trace.zst"));
    snprintf(plain, sizeof plain, "%s", test_path("z.trace"));
    snprintf(bad, sizeof bad, "%s", test_path("bad.trace.zst"));

    is_int(write_trace(zpath), 0, "compress=zstd: 40 flushes of 2500 records, a group registered half-way");
    ok(tu_unzstd(zpath, plain) == 0, "zstd -d decompresses it");

    read_all(&p, plain, NULL, 0, &o);
    ok(p.ret == 0 && p.n == 100000, "the plain file reads (%zu records)", p.n);

    /* Full reads. */
    uint64_t ahead = 0;
    bool same = true, counters = true, seekable = true;
    for (int i = 0; i < 10 && !ahead; i++) {
        read_all(&z, zpath, NULL, 0, &o);
        same &= z.ret == 0 && same_records(&z, &p);
        counters &= same_counters(&z.c, &p.c);
        seekable &= z.z.compressed && z.z.seekable && z.z.frames >= 40;
        ahead = z.z.frames_ahead;
        diag("read %d: %llu of %llu frames decompressed ahead", i + 1, (unsigned long long)ahead,
             (unsigned long long)z.z.frames);
        run_free(&z);
    }
    ok(same, "the compressed file: the same records, numbers and offsets");
    ok(counters, "the same counters");
    ok(seekable, "seekable, 40 frames at least");
    ok(ahead > 0, "the second thread decompressed frames ahead (%llu)", (unsigned long long)ahead);
    set_ahead(false);
    read_all(&z, zpath, NULL, 0, &o);
    ok(z.ret == 0 && same_records(&z, &p) && z.z.frames_ahead == 0,
       "SIMPLETRACE_DECOMPRESS_AHEAD=0: the same records, none decompressed ahead");
    run_free(&z);
    set_ahead(true);
    size_t zsize = 0;
    char *zdata = tu_slurp(zpath, &zsize);
    ahead = 0;
    same = true;
    for (int i = 0; i < 10 && !ahead; i++) {
        read_all(&z, "mem.zst", zdata, zsize, &o);
        same &= z.ret == 0 && same_records(&z, &p);
        ahead = z.z.frames_ahead;
        run_free(&z);
    }
    ok(same, "from memory: the same records");
    ok(ahead > 0, "from memory: frames decompressed ahead (%llu)", (unsigned long long)ahead);

    /* A window: frames skipped, numbers kept. */
    uint64_t lo, hi;
    extremes(&p, &lo, &hi);
    o.filter_from = o.filter_to = true; /* the records from 40% to 45% of the trace (the times come in bursts) */
    o.from_ns = (int64_t)(p.r[p.n / 100 * 40].ts - lo);
    o.to_ns = (int64_t)(p.r[p.n / 100 * 45].ts - lo);
    read_all(&y, plain, NULL, 0, &o);
    read_all(&z, zpath, NULL, 0, &o);
    ok(z.ret == 0 && y.n > 0 && same_records(&z, &y), "--from/--to: the plain read's %zu records, numbers and offsets",
       y.n);
    ok(same_counters(&z.c, &y.c) && z.c.filtered == y.c.filtered, "--from/--to: the same counters");
    ok(z.z.frames_skipped > 0, "--from/--to: %llu frames skipped", (unsigned long long)z.z.frames_skipped);
    run_free(&z);
    run_free(&y);
    o.filter_from = o.filter_to = false;

    /* ST_READER_SUMMARY: a few frames; counts from the summary. */
    o.flags = ST_READER_SUMMARY;
    read_all(&z, zpath, NULL, 0, &o);
    ok(z.ret == 0 && z.err.code == 0, "summary: the reader ends cleanly");
    ok(z.z.summarized, "summary: the file's seek table has a summary");
    ok(z.z.frames_skipped > 0 && (z.z.frames - z.z.frames_skipped) * 5 < z.z.frames,
       "summary: %llu of %llu frames decompressed", (unsigned long long)(z.z.frames - z.z.frames_skipped),
       (unsigned long long)z.z.frames);
    ok(z.n < p.n && subset(&z, &p), "summary: the %zu records given are the full read's (numbers, offsets)", z.n);
    uint64_t zlo, zhi;
    extremes(&z, &zlo, &zhi);
    ok(zlo == lo && zhi == hi, "summary: the first and last timestamps are among them");
    ok(same_counters(&z.c, &p.c), "summary: the counters are a full read's");
    struct counted k = {.u = &p};
    struct st_reader *r;
    ok(st_reader_open(&r, zpath, NULL, &o, NULL) == 0, "summary: opened again for its counts");
    const struct st_record *rec;
    while (st_reader_next(r, &rec) == 1)
        ;
    is_int(st_reader_summary_counts(r, count_cb, &k), 0, "summary: st_reader_summary_counts()");
    st_reader_close(r);
    same = k.unknown == 0;
    for (size_t i = 0; i < 64; i++)
        same &= k.by_name[i] == p.per_event[i];
    ok(same, "summary: every event's count is the full read's");
    is_u64(z.z.write_lost_events, 0, "summary: no write-lost events (none in the file)");
    run_free(&z);
    read_all(&z, plain, NULL, 0, &o);
    ok(z.ret == 0 && same_records(&z, &p) && !z.z.summarized, "summary on a plain file: every record, no summary");
    run_free(&z);
    o.flags = 0;

    /* A damaged frame, in the middle: the same with and without the thread. */
    uint64_t mid = zsize / 2;
    zdata[mid] ^= 0x5A;
    FILE *f = fopen(bad, "wb");
    ok(f && fwrite(zdata, 1, zsize, f) == zsize && fclose(f) == 0, "a copy with a damaged byte at %llu",
       (unsigned long long)mid);
    read_all(&z, bad, NULL, 0, &o);
    set_ahead(false);
    read_all(&y, bad, NULL, 0, &o);
    set_ahead(true);
    ok(z.ret < 0 && z.err.code == y.err.code && z.err.offset == y.err.offset && z.err.record == y.err.record &&
       !strcmp(z.err.message, y.err.message), "damaged: the same error with and without the thread: %s",
       z.err.message);
    ok(strstr(z.err.message, "damaged zstd frame") != NULL, "damaged: the message names the zstd frame");
    ok(same_records(&z, &y) && z.n > 0 && subset(&z, &p), "damaged: the same %zu records before it, the full read's",
       z.n);
    run_free(&z);
    run_free(&y);

    free(zdata);
    run_free(&p);
    return done_testing();
}
