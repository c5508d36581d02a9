/*
 * src/zseek: the compressed traces' writer (st__zout) and the reader of a
 * compressed trace's v4 bytes by offset (st__zrange_read), checked against
 * zstd itself, never against each other:
 *
 *   - a v4 stream of ~6 MiB (events of several sizes, a 60 KiB mapping in
 *     the middle), given in pieces of random sizes that cut records: `zstd
 *     -d` gives it back byte for byte; `zstd -l` counts its frames and the
 *     three skippable ones (summary, time index, seek table); the seek table, parsed here from zstd's
 *     seekable-format description, lists every frame (sizes, checksums
 *     equal to the frames' own), each frame decompressed alone by libzstd
 *     is a run of whole records (it starts where one starts) of at most
 *     1 MiB, and the time index's entries hold each frame's record, event
 *     and drop counts and its first and last timestamps, as the test made
 *     them; an empty stream is a file `zstd -d` makes an empty file of;
 *     a failing write stops the writer with its error;
 *   - byte ranges read back equal the stream's; a range after a frame
 *     whose compressed bytes are damaged still reads (frames before it are
 *     passed over, not decompressed), a range inside it names the frame;
 *     the file cut at many points (inside a frame header, a block, at a
 *     frame's end): what is read is exactly what `zstd -dc` writes of the
 *     cut file, and the cut frame, its compressed offset and where reading
 *     stopped are named; bytes that are no frame are named by offset.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "tap.h"
#include "test_util.h"
#include "trace_format.h"
#include "zrange.h"
#include "zwrite.h"

#define MAX_RECORDS 200000

/* The stream the test makes, and what it knows of it. */
struct stream {
    struct st__growbuf b;
    size_t starts[MAX_RECORDS]; /* each record's offset */
    uint64_t ts[MAX_RECORDS];   /* an event's timestamp, 0 for a mapping */
    bool dropped[MAX_RECORDS];
    uint64_t drop_count[MAX_RECORDS];
    size_t n;
};

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0)
        fprintf(stderr, "cannot write %s\n", path), exit(2);
}

static void add_mapping(struct stream *s, uint64_t id, const char *name, uint32_t len)
{
    uint8_t *p = st__growbuf_room(&s->b, st__fmt_mapping_size(len));
    s->starts[s->n] = s->b.len;
    s->ts[s->n] = 0;
    s->dropped[s->n] = false;
    s->n++;
    st__growbuf_commit(&s->b, st__fmt_put_mapping(p, id, name, len));
}

static void add_event(struct stream *s, uint64_t id, uint64_t ts, const uint8_t *payload, uint32_t plen)
{
    uint8_t *p = st__growbuf_room(&s->b, ST_EVENT_FIXED_SIZE + plen);
    s->starts[s->n] = s->b.len;
    s->ts[s->n] = ts;
    s->dropped[s->n] = id == ST_DROPPED_EVENT_ID;
    s->drop_count[s->n] = s->dropped[s->n] ? st__fmt_get_u64(payload) : 0;
    s->n++;
    st__fmt_put_event_header(p, id, ts, plen, 77);
    memcpy(p + ST_EV_OFF_PAYLOAD, payload, plen);
    st__growbuf_commit(&s->b, ST_EVENT_FIXED_SIZE + plen);
}

/* Header, mappings, ~6 MiB of events (strings of varying length, some dropped records), a big mapping midway. */
static void make_stream(struct stream *s)
{
    uint8_t pay[600], *h;
    char big[60000];
    uint64_t ts = 1000;

    memset(s, 0, sizeof *s);
    h = st__growbuf_room(&s->b, ST_HEADER_SIZE);
    st__growbuf_commit(&s->b, st__fmt_put_header(h));
    add_mapping(s, 0, "ev_small", 8);
    add_mapping(s, 1, "ev_string", 9);
    srand(7);
    for (unsigned i = 0; s->b.len < (6u << 20) && s->n < MAX_RECORDS - 2; i++) {
        ts += 1 + (uint64_t)(rand() % 50);
        if (i == 40000) {
            for (size_t k = 0; k < sizeof big; k++)
                big[k] = (char)('a' + k % 26);
            add_mapping(s, 2, big, sizeof big);
        }
        if (i % 997 == 0) {
            st__fmt_put_u64(pay, 3 + i % 5);
            add_event(s, ST_DROPPED_EVENT_ID, ts, pay, 8);
        } else if (i % 3) {
            st__fmt_put_u64(pay, i);
            add_event(s, 0, ts, pay, 8);
        } else {
            uint32_t len = (uint32_t)(rand() % 513);
            st__fmt_put_u32(pay, len);
            for (uint32_t k = 0; k < len; k++)
                pay[4 + k] = (uint8_t)(k % 7 ? 'x' : rand());
            add_event(s, 1, ts, pay, 4 + len);
        }
    }
}

/* The writer's sink: memory, failing once fail_after bytes are taken (SIZE_MAX: never). */
struct mem {
    struct st__growbuf b;
    size_t fail_after;
};

static int to_mem(void *ctx, const void *p, size_t n)
{
    struct mem *m = ctx;
    if (m->b.len + n > m->fail_after)
        return -ENOSPC;
    st__growbuf_put(&m->b, p, n);
    return m->b.failed ? -ENOMEM : 0;
}

/* Compresses s through st__zout in pieces of random sizes (some of 1 byte). 0 or the error. */
static int compress_pieces(const struct stream *s, struct mem *m)
{
    struct st__zout z;
    size_t at = 0;
    int ret = 0;

    st__zout_init(&z, 0, to_mem, m);
    while (at < s->b.len && ret == 0) {
        size_t k = rand() % 5 == 0 ? 1 : 1 + (size_t)(rand() % 300000);
        if (k > s->b.len - at)
            k = s->b.len - at;
        ret = st__zout_put(&z, s->b.data + at, k);
        at += k;
    }
    if (ret == 0)
        ret = st__zout_finish(&z);
    st__zout_free(&z);
    return ret;
}

/* Runs argv, stdout captured in *r. */
static int run(char **argv, struct tu_run *r)
{
    return tu_run(argv, NULL, NULL, false, r) < 0 ? -1 : r->status;
}

/* One frame of the seek table, parsed here. */
struct entry {
    uint64_t coff, doff;
    uint32_t csize, dsize, sum;
};

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return le32(p) | (uint64_t)le32(p + 4) << 32;
}

/*
 * zstd's seekable format (contrib/seekable_format): the last 9 bytes are
 * u32 frames, u8 descriptor, u32 0x8F92EAB1; before them the entries, in
 * a skippable frame of magic 0x184D2A5E. The entries into e; how many, or -1.
 */
static long seek_table(const uint8_t *f, size_t len, struct entry *e, size_t cap, size_t *table_size)
{
    if (len < 17 || le32(f + len - 4) != 0x8F92EAB1u || f[len - 5] != 0x80)
        return -1;
    uint32_t n = le32(f + len - 9);
    size_t size = 8 + (size_t)n * 12 + 9;
    if (n > cap || size > len || le32(f + len - size) != 0x184D2A5Eu || le32(f + len - size + 4) != size - 8)
        return -1;
    uint64_t coff = 0, doff = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = f + len - size + 8 + (size_t)i * 12;
        e[i] = (struct entry){coff, doff, le32(p), le32(p + 4), le32(p + 8)};
        coff += e[i].csize;
        doff += e[i].dsize;
    }
    *table_size = size;
    return coff == len - size ? (long)n : -1;
}

/* The index of the record starting at off, or -1. */
static long record_at(const struct stream *s, size_t off)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->starts[mid] < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n && s->starts[lo] == off ? (long)lo : -1;
}

/* The writer's file, checked frame by frame against what the test made. */
static void check_frames(const struct stream *s, const uint8_t *f, size_t len)
{
    static struct entry e[4096];
    size_t tsize, n_data;
    long n = seek_table(f, len, e, 4096, &tsize);
    bool whole = true, sizes = true, sums = true, alone = true, times = true, counts = true;

    if (!ok(n > 2, "the seek table (zstd's seekable format) lists %ld frames", n))
        return;
    /* The time index is the last entry, the summary (magic 0x184D2A5C, "STSM") the one before it. */
    ok(n > 3 && e[n - 2].dsize == 0 && le32(f + e[n - 2].coff) == 0x184D2A5Cu && le32(f + e[n - 2].coff + 8) == 0x4D535453u,
       "the entry before it is the summary, a skippable frame");
    n_data = (size_t)n - 2;
    ok(e[n - 1].dsize == 0 && e[n - 1].sum == 0 && le32(f + e[n - 1].coff) == 0x184D2A5Bu,
       "its last entry is the time index, a skippable frame");
    ok(e[n - 1].doff == s->b.len, "the data frames hold the stream's %zu bytes", s->b.len);
    const uint8_t *ti = f + e[n - 1].coff;
    ok(le32(ti + 8) == 0x5A545453u && le32(ti + 12) == 1 && le32(ti + 16) == n - 1 && le32(ti + 20) == 40,
       "the time index: STTZ, version 1, an entry per frame before it (the summary's included), 40 bytes each");
    for (size_t i = 0; i < n_data; i++) {
        uint8_t *out = malloc(e[i].dsize + 1);
        size_t got = ZSTD_decompress(out, e[i].dsize + 1, f + e[i].coff, e[i].csize);
        long first = record_at(s, (size_t)e[i].doff), last;
        alone &= !ZSTD_isError(got) && got == e[i].dsize && !memcmp(out, s->b.data + e[i].doff, got) &&
                 ZSTD_getFrameContentSize(f + e[i].coff, e[i].csize) == e[i].dsize;
        sums &= le32(f + e[i].coff + e[i].csize - 4) == e[i].sum;
        free(out);
        /* Whole records: the frame starts where one starts (the first at the header's end) and ends where the next does. */
        if (i == 0)
            first = record_at(s, ST_HEADER_SIZE);
        last = e[i].doff + e[i].dsize == s->b.len ? (long)s->n : record_at(s, (size_t)(e[i].doff + e[i].dsize));
        whole &= first >= 0 && last > first;
        if (first < 0 || last <= first)
            continue;
        sizes &= e[i].dsize <= ST__ZW_FRAME_BYTES || last == first + 1;
        /* Its time-index entry, against the records the test put there. */
        const uint8_t *t = ti + 24 + i * 40;
        uint64_t lo = UINT64_MAX, hi = 0, drops = 0;
        uint32_t ev = 0, dr = 0, meta = i == 0;
        for (long k = first; k < last; k++) {
            if (!s->ts[k]) {
                meta = 1;
                continue;
            }
            lo = s->ts[k] < lo ? s->ts[k] : lo;
            hi = s->ts[k] > hi ? s->ts[k] : hi;
            if (s->dropped[k])
                dr++, drops += s->drop_count[k];
            else
                ev++;
        }
        times &= le64(t) == (lo == UINT64_MAX ? 0 : lo) && le64(t + 8) == hi;
        counts &= le32(t + 16) == (uint32_t)(last - first) && le32(t + 20) == ev && le32(t + 24) == dr &&
                  (le32(t + 28) & 1) == meta && le64(t + 32) == drops;
    }
    ok(n_data >= s->b.len / ST__ZW_FRAME_BYTES, "%zu data frames for %zu bytes", n_data, s->b.len);
    ok(alone, "each frame decompresses alone (libzstd) to its stretch of the stream, its content size in its header");
    ok(sums, "each entry's checksum is its frame's own content checksum");
    ok(whole, "each frame is a run of whole records, the first one starting after the header");
    ok(sizes, "each frame holds at most 1 MiB, or a single larger record");
    ok(times, "the time index's first and last timestamps are each frame's");
    ok(counts, "... its record, event and drop counts and the meta flag too");
}

static void writer(const struct stream *s, struct mem *m)
{
    struct tu_run r;
    char *argv_d[] = {"zstd", "-q", "-d", "-c", (char *)tmp_path("s.zst"), NULL};
    char *argv_l[] = {"zstd", "-l", "-v", (char *)tmp_path("s.zst"), NULL};

    m->fail_after = SIZE_MAX;
    is_int(compress_pieces(s, m), 0, "the stream written in pieces that cut records anywhere");
    write_file(tmp_path("s.zst"), m->b.data, m->b.len);
    int st = run(argv_d, &r);
    ok(st == 0 && r.out_len == s->b.len && !memcmp(r.out, s->b.data, s->b.len),
       "zstd -d gives the stream back byte for byte (%zu bytes from %zu)", r.out_len, m->b.len);
    tu_run_free(&r);
    run(argv_l, &r);
    const char *fr = strstr(r.out, "Zstandard Frames: "), *sk = strstr(r.out, "Skippable Frames: ");
    ok(fr && atoi(fr + 18) >= 6 && sk && atoi(sk + 18) == 3, "zstd -l: %d data frames, %d skippable ones",
       fr ? atoi(fr + 18) : -1, sk ? atoi(sk + 18) : -1);
    tu_run_free(&r);
    check_frames(s, m->b.data, m->b.len);

    /* Nothing at all: still a file zstd reads, to nothing. */
    struct mem empty = {.fail_after = SIZE_MAX};
    struct st__zout z;
    st__zout_init(&z, 0, to_mem, &empty);
    is_int(st__zout_finish(&z), 0, "an empty stream is finished");
    st__zout_free(&z);
    write_file(tmp_path("empty.zst"), empty.b.data, empty.b.len);
    char *argv_e[] = {"zstd", "-q", "-d", "-c", (char *)tmp_path("empty.zst"), NULL};
    ok(run(argv_e, &r) == 0 && r.out_len == 0, "zstd -d of it: exit 0, no byte (%zu bytes of file)", empty.b.len);
    tu_run_free(&r);
    st__growbuf_free(&empty.b);

    /* A write that fails stops the writer with its error, and it stays. */
    struct mem full = {.fail_after = 100000};
    st__zout_init(&z, 0, to_mem, &full);
    int e1 = st__zout_put(&z, s->b.data, s->b.len), e2 = st__zout_put(&z, s->b.data, 10), e3 = st__zout_finish(&z);
    ok(e1 == -ENOSPC && e2 == -ENOSPC && e3 == -ENOSPC, "a full disk: put, put again and finish say -ENOSPC (%d %d %d)",
       e1, e2, e3);
    st__zout_free(&z);
    st__growbuf_free(&full.b);
}

/* zrange over data[0..len): off..off+n read into *out; the end in *e. */
static int range(const uint8_t *data, size_t len, uint64_t off, uint64_t n, struct st__growbuf *out,
                 struct st__zrange_end *e)
{
    out->len = 0;
    return st__zrange_read(data, len, off, n, out, e);
}

static void reader(const struct stream *s, const struct mem *m)
{
    static struct entry e[4096];
    struct st__growbuf out = {0};
    struct st__zrange_end end;
    size_t tsize;
    long n = seek_table(m->b.data, m->b.len, e, 4096, &tsize);
    uint64_t offs[][2] = {{0, 100}, {0, s->b.len}, {1 << 20, 12345}, {(3 << 20) - 7, 1 << 20}, {s->b.len - 50, 50},
                          {s->b.len - 50, 5000}};
    bool same = true;

    if (n < 4)
        return;
    for (size_t i = 0; i < sizeof offs / sizeof *offs; i++) {
        uint64_t want = offs[i][0] + offs[i][1] > s->b.len ? s->b.len - offs[i][0] : offs[i][1];
        same &= range(m->b.data, m->b.len, offs[i][0], offs[i][1], &out, &end) == 0 && end.stop == ST_ZRANGE_DONE &&
                out.len == want && !memcmp(out.data, s->b.data + offs[i][0], want);
    }
    ok(same, "byte ranges (start, middle, across frames, the end, past the end) read as the stream holds them");

    /* Frame 1's compressed bytes damaged (not its header): ranges after it read, one inside names it. */
    uint8_t *bad = malloc(m->b.len);
    memcpy(bad, m->b.data, m->b.len);
    bad[e[1].coff + e[1].csize / 2] ^= 0x5a;
    ok(range(bad, m->b.len, e[3].doff + 10, 1000, &out, &end) == 0 && end.stop == ST_ZRANGE_DONE && out.len == 1000 &&
           !memcmp(out.data, s->b.data + e[3].doff + 10, 1000),
       "a range in frame 3 reads though frame 1 is damaged: the frames before are passed over, not decompressed");
    range(bad, m->b.len, e[1].doff + 10, 1000, &out, &end);
    ok(end.stop == ST_ZRANGE_DAMAGED && end.frame == 1 && end.frame_off == e[1].coff && end.why[0] &&
           end.stop_off > e[1].coff && end.stop_off <= e[1].coff + e[1].csize,
       "a range inside it, however short: damaged (its checksum is checked), frame 1 at compressed byte %llu "
       "named, reading stopped at %llu (%s)",
       (unsigned long long)end.frame_off, (unsigned long long)end.stop_off, end.why);
    free(bad);

    /* Bytes that are no frame after the frames. */
    uint8_t *junk = malloc(e[2].coff + 16);
    memcpy(junk, m->b.data, e[2].coff);
    memset(junk + e[2].coff, 0x41, 16);
    range(junk, e[2].coff + 16, 0, UINT64_MAX, &out, &end);
    ok(end.stop == ST_ZRANGE_DAMAGED && end.frame_off == e[2].coff && end.dend == e[2].doff && out.len == e[2].doff,
       "bytes that are no frame at compressed byte %llu: named, the frames before read (%s)",
       (unsigned long long)e[2].coff, end.why);
    free(junk);

    /* Cut at many points: what is read is what zstd -dc writes of the cut file. */
    uint64_t cuts[] = {e[1].coff, e[1].coff + 2, e[1].coff + 6, e[1].coff + 40, e[1].coff + e[1].csize / 3,
                       e[2].coff + e[2].csize - 1, e[2].coff + e[2].csize - 4, e[n - 2].coff + e[n - 2].csize / 2,
                       e[n - 1].coff + 5};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        size_t cut = (size_t)cuts[i];
        long k = 0;
        while (k + 1 < n && e[k + 1].coff <= cut)
            k++;
        bool at_boundary = e[k].coff == cut;
        write_file(tmp_path("cut.zst"), m->b.data, cut);
        struct tu_run r;
        char *argv[] = {"zstd", "-q", "-d", "-c", (char *)tmp_path("cut.zst"), NULL};
        int st = run(argv, &r);
        range(m->b.data, cut, 0, UINT64_MAX, &out, &end);
        bool equal = out.len == r.out_len && (!out.len || !memcmp(out.data, r.out, out.len));
        if (at_boundary)
            ok(equal && st == 0 && end.stop == ST_ZRANGE_DONE && end.dend == e[k].doff,
               "cut at frame %ld's start (compressed byte %zu): every byte of the frames before, no cut", k, cut);
        else
            ok(equal && st != 0 && end.stop == ST_ZRANGE_CUT && end.frame == (uint64_t)k &&
                   end.frame_off == e[k].coff && end.stop_off == cut && end.dend == out.len,
               "cut inside frame %ld at compressed byte %zu: the %zu bytes zstd -dc gives of it (%zu), frame %llu at "
               "compressed byte %llu and the stop at %llu named",
               k, cut, out.len, r.out_len, (unsigned long long)end.frame, (unsigned long long)end.frame_off,
               (unsigned long long)end.stop_off);
        tu_run_free(&r);
    }
    ok(!st__zrange_is_zstd(s->b.data, s->b.len) && st__zrange_is_zstd(m->b.data, m->b.len) &&
           !st__zrange_is_zstd(m->b.data, 3),
       "a plain trace is told from a compressed one by its first bytes");
    st__growbuf_free(&out);
}

/*
 * compress=zstd's adaptive level (the writer's backlog in 256ths of a
 * buffer): the configured level while caught up, never slower than it,
 * faster or the same as the backlog grows, and at a full buffer one that
 * libzstd takes and that about stores; the values compress=zstd[:LEVEL][:fixed] parses.
 */
static void adapt_and_parse(void)
{
    static const int levels[] = {19, 3, 1, -1, -50, -5000};
    int monotone = 1, never_slower = 1, level;
    bool fixed;

    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        int l = levels[i], last = l;
        is_int(st__zw_adapt_level(l, 0), l, "level %d: caught up, its own level", l);
        for (unsigned f = 0; f <= 256; f++) {
            int a = st__zw_adapt_level(l, f);
            never_slower &= a <= l;
            monotone &= a <= last;
            last = a;
        }
    }
    ok(never_slower, "a faster level than the configured one, or it, whatever the backlog");
    ok(monotone, "more backlog never gives a slower level");
    ok(st__zw_adapt_level(19, 64) < 19 && st__zw_adapt_level(19, 63) == 19, "level 19 eased from a quarter on");
    level = st__zw_adapt_level(1, 256);
    ok(level >= ZSTD_minCLevel() && level <= -100, "a full buffer: a level libzstd takes, near storing (%d)", level);
    ok(st__zw_parse("zstd", &level, &fixed) == 1 && level == ST__ZW_DEFAULT_LEVEL && !fixed, "zstd: default level, adapting");
    ok(st__zw_parse("zstd:-7:fixed", &level, &fixed) == 1 && level == -7 && fixed, "zstd:-7:fixed");
    ok(st__zw_parse("zstd:fixed", &level, &fixed) == 1 && level == ST__ZW_DEFAULT_LEVEL && fixed, "zstd:fixed");
    is_int(st__zw_parse("zstd:3:fixed", &level, NULL), -EINVAL, ":fixed refused where nothing adapts (merge -o)");
    is_int(st__zw_parse("zstd:3:", &level, &fixed), -EINVAL, "zstd:3: refused");
    ok(st__zw_parse("off", &level, &fixed) == 0 && level == 0, "off");
}

int main(void)
{
    static struct stream s;
    struct mem m = {0};
    const char *t = getenv("TMPDIR");

    snprintf(tmpdir, sizeof tmpdir, "%s/st-zseek-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpdir))
        return 2;
    adapt_and_parse();
    make_stream(&s);
    writer(&s, &m);
    reader(&s, &m);
    st__growbuf_free(&m.b);
    st__growbuf_free(&s.b);
    char *rm[] = {"rm", "-rf", tmpdir, NULL};
    struct tu_run r;
    tu_run(rm, NULL, NULL, true, &r);
    tu_run_free(&r);
    return done_testing();
}
