/*
 * Writes the seed corpus of the recover fuzz target (tests/fuzz/corpus/recover/):
 * ring files as the runtime lays them out (ring_image.h), whole and in every
 * state and kind of damage recover knows, with names and trace files, each
 * packed as fuzz_recover.c cuts its input (fuzz_recover_input.h). Nothing
 * in the corpus is a blob: regenerate it with
 *
 *   build/tests/recover/make_recover_corpus tests/fuzz/corpus/recover
 *
 * and `make_recover_corpus --check DIR` (the test recover-corpus) says
 * whether DIR holds exactly what this program writes.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_recover_input.h"
#include "meta_format.h"
#include "ring_image.h"
#include "tap.h"

#define RING 4096u
#define T1 11u /* ring 1's thread */
#define T2 12u /* ring 2's */

/* One seed: the files, then packed. */
struct seed {
    const char *name;
    unsigned flags;
    struct rbuf names, trace;
    struct ri r1, r2;
    bool have_r1, have_r2;
    size_t r1_len; /* ring 1 cut to this many bytes (0: whole) */
    bool empty;    /* the input is empty: not even the prefix */
};

static struct seed seeds[64];
static size_t nseeds;

/* A new seed with ring 1 of FZ_PID/T1 holding n records (seq 0..n-1 at ns 100, 200, ...) from position start. */
static struct seed *seed(const char *name, unsigned n, uint64_t start)
{
    struct seed *s = &seeds[nseeds++];

    memset(s, 0, sizeof *s);
    s->name = name;
    s->have_r1 = true;
    ri_init(&s->r1, FZ_PID, T1, RING, start);
    for (unsigned i = 0; i < n; i++)
        ri_event(&s->r1, i % 3, 100 * (i + 1), T1, (uint64_t[]){T1, i}, 2);
    ri_finish(&s->r1);
    return s;
}

/* Gives s a names file: IDs 0, 1, 2. */
static struct seed *with_names(struct seed *s)
{
    s->flags |= FZ_NAMES;
    rb_mapping(&s->names, 0, "ev_zero");
    rb_mapping(&s->names, 1, "ev_one");
    rb_mapping(&s->names, 2, "ev_two");
    return s;
}

/* Gives s a names file as the runtime writes it (crash_format.h): the description, then each ID's mapping and declaration. */
static struct seed *with_described_names(struct seed *s)
{
    static const char *const decl[] = {"ev_zero(int t, int seq) \"t %d seq %d\"", "ev_one(int t, uint64_t seq) \"%d %\" PRIu64",
                                       "disable ev_two(void *p, long n) \"p %p n %ld\""};
    static const char *const name[] = {"ev_zero", "ev_one", "ev_two"};

    s->flags |= FZ_NAMES;
    rb_mapping(&s->names, ST_META_INFO_ID,
               "simpletrace=1\nversion=0.3.0\npid=4000001\nprogram=crashed\ncmdline=crashed\\x20-v\nhost=h\n"
               "clock=tsc\ntsc_hz=2000000000\nanchor_mono_ns=100\nanchor_real_ns=1700000000000000000\n");
    for (uint32_t id = 0; id < 3; id++) {
        rb_mapping(&s->names, id, name[id]);
        rb_mapping(&s->names, ST_META_DECL_ID(id), decl[id]);
    }
    return s;
}

/* Ring 2: thread T2 of pid, n records at odd times between ring 1's. */
static void with_ring2(struct seed *s, uint32_t pid, unsigned n)
{
    s->flags |= FZ_RING2;
    s->have_r2 = true;
    ri_init(&s->r2, pid, T2, RING, 0);
    for (unsigned i = 0; i < n; i++)
        ri_event(&s->r2, 1, 100 * (i + 1) + 50, T2, (uint64_t[]){T2, i}, 2);
    ri_finish(&s->r2);
}

/* Stores v (width 4 or 8 bytes) at byte off of ring 1: damage after ri_finish(). */
static void poke(struct seed *s, size_t off, unsigned width, uint64_t v)
{
    if (width == 4)
        st__fmt_put_u32(s->r1.data + off, (uint32_t)v);
    else
        st__fmt_put_u64(s->r1.data + off, v);
}

/* Ring 1 with the write the death cut: its first 2 of 4 records and a dropped count of 3, to file (5, 6). */
static void with_inflight(struct seed *s)
{
    s->r1.h.inflight_seq = 1;
    s->r1.h.inflight_end = s->r1.tail + 2 * 48;
    s->r1.h.inflight_drop = 3;
    s->r1.h.inflight_off = ST_HEADER_SIZE;
    s->r1.h.inflight_len = 2 * 48 + 40;
    s->r1.h.file_dev = 5;
    s->r1.h.file_ino = 6;
    ri_finish(&s->r1);
}

/* The trace file holding the first record of the cut write. */
static void with_trace(struct seed *s, unsigned flags)
{
    s->flags |= FZ_TRACE | flags;
    rb_header(&s->trace);
    rb_event(&s->trace, 0, 100, T1, (uint64_t[]){T1, 0}, 2);
    rb_mapping(&s->trace, 3, "ev_late");
}

/*
 * The trace file as compress=zstd leaves it: one zstd frame, made by hand
 * so the seed is the same whatever libzstd (RFC 8878: magic, a frame
 * header of one segment with a 1-byte content size and no checksum, one
 * raw block), cut short by cut bytes (a writer killed inside it).
 */
static void zstd_trace(struct seed *s, size_t cut)
{
    struct rbuf plain = s->trace;
    uint8_t *p = s->trace.data;
    size_t n = plain.len;

    p[0] = 0x28, p[1] = 0xb5, p[2] = 0x2f, p[3] = 0xfd;
    p[4] = 0x20;                 /* Single_Segment, FCS field of 1 byte */
    p[5] = (uint8_t)n;           /* content size (< 256) */
    p[6] = (uint8_t)(1 | n << 3), p[7] = (uint8_t)(n >> 5), p[8] = (uint8_t)(n >> 13); /* last, raw, n bytes */
    memcpy(p + 9, plain.data, n);
    s->trace.len = 9 + n - cut;
}

/* Swaps every field of ring 1 (header, words, and records when asked) as a machine of the other byte order wrote it. */
static void swap_ring1(struct seed *s, bool records)
{
    static const struct {
        size_t off;
        unsigned width;
    } f[] = {{0, 8}, {8, 4}, {12, 4}, {16, 4}, {20, 4}, {24, 8}, {32, 8}, {40, 8}, {48, 8}, {56, 8}, {64, 4},
             {72, 8}, {80, 8}, {88, 8}, {96, 8}, {104, 8}, {RI_HEAD_OFF, 8}, {RI_TAIL_OFF, 8}, {RI_PENDING_OFF, 8}};
    uint8_t *base = s->r1.data + RI_RING_OFF;

    for (uint64_t pos = s->r1.tail; records && pos < s->r1.head;) {
        uint64_t size = 8 + (uint64_t)st__fmt_get_u32(base + (pos & (RING - 1)) + ST_EV_OFF_LENGTH);
        uint8_t *p = base + (pos & (RING - 1)); /* whole: the seed's rings do not wrap */
        st__fmt_put_u64(p, __builtin_bswap64(st__fmt_get_u64(p)));
        st__fmt_put_u64(p + 8, __builtin_bswap64(st__fmt_get_u64(p + 8)));
        st__fmt_put_u64(p + 16, __builtin_bswap64(st__fmt_get_u64(p + 16)));
        st__fmt_put_u32(p + 24, __builtin_bswap32(st__fmt_get_u32(p + 24)));
        st__fmt_put_u32(p + 28, __builtin_bswap32(st__fmt_get_u32(p + 28)));
        for (uint64_t a = ST_EVENT_FIXED_SIZE; a < size; a += 8)
            st__fmt_put_u64(p + a, __builtin_bswap64(st__fmt_get_u64(p + a)));
        pos += size;
    }
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        uint8_t *p = s->r1.data + f[i].off;
        if (f[i].width == 4)
            st__fmt_put_u32(p, __builtin_bswap32(st__fmt_get_u32(p)));
        else
            st__fmt_put_u64(p, __builtin_bswap64(st__fmt_get_u64(p)));
    }
}

/* Overwrites ring 1's ring with bytes of a fixed pseudo-random sequence. */
static void garbage_ring1(struct seed *s)
{
    uint64_t x = 0x9e3779b97f4a7c15u;

    for (size_t i = RI_RING_OFF; i < s->r1.len; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        s->r1.data[i] = (uint8_t)(x >> 56);
    }
}

static void make_seeds(void)
{
    struct seed *s;

    seed("empty", 0, 0)->empty = true;
    with_names(seed("whole", 3, 0));
    with_names(seed("empty_ring", 3, 0))->r1.tail = 3 * 48;
    ri_finish(&seeds[nseeds - 1].r1);
    s = seed("no_names", 4, 0);
    s = seed("names_torn", 3, 0);
    with_names(s);
    s->names.len -= 4;
    s = seed("wrapped", 12, 5 * RING + RING - 200);
    with_names(s);

    s = seed("torn_record", 3, 0);
    s->r1.head -= 10;
    ri_finish(&s->r1);
    s = seed("bad_type", 3, 0);
    poke(s, RI_RING_OFF + 48, 8, 7);
    s = seed("bad_length", 3, 0);
    poke(s, RI_RING_OFF + 48 + ST_EV_OFF_LENGTH, 4, 1u << 20);
    s = seed("short_length", 3, 0);
    poke(s, RI_RING_OFF + 48 + ST_EV_OFF_LENGTH, 4, 8);

    poke(seed("bad_magic", 2, 0), 0, 8, 0x0123456789abcdefu);
    poke(seed("bad_version", 2, 0), 8, 4, 2);
    poke(seed("bad_hdr_size", 2, 0), 12, 4, 100);
    poke(seed("bad_ring_size", 2, 0), 32, 8, 5000);
    poke(seed("bad_ring_off", 2, 0), 24, 8, 1u << 30);
    poke(seed("bad_head_off", 2, 0), 40, 8, 16);
    poke(seed("bad_tail_off", 2, 0), 48, 8, RI_RING_OFF);
    poke(seed("bad_pending_off", 2, 0), 56, 8, 0);
    poke(seed("bad_clock_tsc", 2, 0), 64, 4, 3);
    poke(seed("bad_head_tail", 2, 0), RI_HEAD_OFF, 8, RING * 3);
    s = seed("big_endian", 3, 0);
    swap_ring1(s, true);
    s = seed("garbage", 3, 0);
    garbage_ring1(s);
    s = seed("garbage_big_endian", 3, 0);
    garbage_ring1(s);
    swap_ring1(s, false);

    s = seed("unborn_short", 0, 0);
    s->r1_len = 100;
    memset(s->r1.data, 0, s->r1.len);
    s = seed("unborn_zero_magic", 0, 0);
    memset(s->r1.data, 0, s->r1.len);
    s = seed("unborn_bad_name", 0, 0);
    s->r1_len = 10;
    s->flags |= FZ_BAD_NAME;

    with_inflight(s = seed("inflight_no_trace", 4, 0));
    with_inflight(s = seed("inflight_trace", 4, 0));
    with_trace(s, FZ_TRACE_SAME);
    with_inflight(s = seed("inflight_trace_zstd", 4, 0));
    with_trace(s, FZ_TRACE_SAME);
    zstd_trace(s, 0);
    with_inflight(s = seed("inflight_trace_zstd_cut", 4, 0));
    with_trace(s, FZ_TRACE_SAME);
    zstd_trace(s, 30);
    with_inflight(s = seed("inflight_other_file", 4, 0));
    with_trace(s, 0);
    s = seed("inflight_bad_end", 4, 0);
    s->r1.h.inflight_seq = 1;
    s->r1.h.inflight_end = 1u << 20;
    ri_finish(&s->r1);

    s = seed("drops", 2, 0);
    ri_dropped(&s->r1, 250, T1, 17);
    ri_event(&s->r1, 0, 300, T1, (uint64_t[]){T1, 2}, 2);
    s->r1.pending = 4;
    ri_finish(&s->r1);

    s = seed("tsc_far", 3, 0);
    s->r1.h.clock_tsc = 1;
    s->r1.h.a_raw = 50, s->r1.h.a_ns = 1000;
    s->r1.h.b_raw = 50 + 9000000, s->r1.h.b_ns = 1000 + 3000000;
    ri_finish(&s->r1);
    s = seed("tsc_close", 3, 0);
    s->r1.h.clock_tsc = 1;
    s->r1.h.a_raw = 50, s->r1.h.a_ns = 1000;
    s->r1.h.b_raw = 80, s->r1.h.b_ns = 1010;
    ri_finish(&s->r1);
    s = seed("anchor_torn", 3, 0);
    s->r1.h.clock_tsc = 1;
    s->r1.h.anchor_seq = 3;
    s->r1.h.b_raw = 50 + 9000000, s->r1.h.b_ns = 3000000;
    ri_finish(&s->r1);

    /* Names files carrying the description and declarations (meta_format.h). */
    with_described_names(seed("described", 4, 0));
    s = with_described_names(seed("described_torn", 4, 0));
    s->names.len -= 7; /* the death cut the last declaration */
    s = seed("described_bad", 4, 0);
    s->flags |= FZ_NAMES;
    rb_mapping(&s->names, ST_META_INFO_ID, "simpletrace=1\nhost=a\\qb\n"); /* an escape a reader refuses */
    rb_mapping(&s->names, 0, "ev_zero");
    rb_mapping(&s->names, ST_META_DECL_ID(0), "ev_zero(int t, \"");     /* does not parse */
    rb_mapping(&s->names, ST_META_DECL_ID(7), "ev_seven(void) \"\"");  /* of no mapped ID */
    rb_mapping(&s->names, ST_META_DECL_ID(UINT32_MAX), "ev_max(void) \"\"");
    rb_mapping(&s->names, UINT64_C(1) << 40, "ev_far");
    s = with_described_names(seed("meta_id_record", 2, 0));
    ri_event(&s->r1, ST_META_DECL_ID(1), 300, T1, NULL, 0); /* a record with a reserved ID ends the ring */
    ri_event(&s->r1, 1, 400, T1, (uint64_t[]){T1, 3}, 2);
    ri_finish(&s->r1);

    s = seed("header_id_record", 2, 0); /* ID ~0: not reserved by meta_format.h, named st_unknown_ID */
    ri_event(&s->r1, UINT64_MAX, 300, T1, NULL, 0);
    ri_finish(&s->r1);

    with_ring2(with_names(seed("two_threads", 5, 0)), FZ_PID, 4);
    s = seed("two_processes", 3, 0);
    with_ring2(s, FZ_PID + 1, 2);
    s->flags |= FZ_RING2_PID;
    s = seed("ask_pid", 3, 0);
    with_ring2(s, FZ_PID + 1, 2);
    s->flags |= FZ_RING2_PID | FZ_ASK_PID;
    s = seed("unborn_and_whole", 0, 0);
    memset(s->r1.data, 0, s->r1.len);
    with_ring2(s, FZ_PID, 3);
}

/* The input fuzz_recover.c cuts into s's files; *len its size. */
static uint8_t *pack(const struct seed *s, size_t *len)
{
    size_t r1 = s->have_r1 ? (s->r1_len ? s->r1_len : s->r1.len) : 0, r2 = s->have_r2 ? s->r2.len : 0;
    uint8_t *p = calloc(1, FZ_PREFIX + s->names.len + s->trace.len + r1 + r2), *at = p + FZ_PREFIX;

    if (!p || s->empty) {
        *len = 0;
        return p;
    }
    p[0] = (uint8_t)s->flags;
    p[1] = (uint8_t)s->names.len, p[2] = (uint8_t)(s->names.len >> 8);
    p[3] = (uint8_t)s->trace.len, p[4] = (uint8_t)(s->trace.len >> 8);
    p[5] = (uint8_t)r2, p[6] = (uint8_t)(r2 >> 8);
    memcpy(at, s->names.data, s->names.len);
    at += s->names.len;
    memcpy(at, s->trace.data, s->trace.len);
    at += s->trace.len;
    if (r1)
        memcpy(at, s->r1.data, r1);
    if (r2)
        memcpy(at + r1, s->r2.data, r2);
    *len = FZ_PREFIX + s->names.len + s->trace.len + r1 + r2;
    return p;
}

static bool write_file(const char *path, const uint8_t *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    bool done = f && fwrite(p, 1, len, f) == len;

    return (f && fclose(f) == 0) && done;
}

/* The bytes of path (NULL if it cannot be read); *len their count. */
static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *p = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (p = malloc((size_t)n + 1)) && fread(p, 1, (size_t)n, f) == (size_t)n) {
        *len = (size_t)n;
    } else {
        free(p);
        p = NULL;
    }
    fclose(f);
    return p;
}

/* Files in dir (dot files left out). */
static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return d ? n : -1;
}

/* Writes every seed into dir (check: compares instead, as TAP). 0 or 1. */
static int run(const char *dir, bool check)
{
    int bad = 0;

    for (size_t i = 0; i < nseeds; i++) {
        char path[4096];
        size_t len, have_len = 0;
        uint8_t *p = pack(&seeds[i], &len), *have;
        snprintf(path, sizeof path, "%s/%s", dir, seeds[i].name);
        if (!p) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        if (check) {
            have = read_file(path, &have_len);
            ok(have && have_len == len && !memcmp(have, p, len), "%s is what the generator writes", seeds[i].name);
            free(have);
        } else if (!write_file(path, p, len)) {
            fprintf(stderr, "%s: %s\n", path, strerror(errno));
            bad = 1;
        }
        free(p);
    }
    if (check) {
        is_int(count_files(dir), (int)nseeds, "%s holds the seeds, nothing else", dir);
        return done_testing();
    }
    return bad;
}

int main(int argc, char **argv)
{
    bool check = argc == 3 && !strcmp(argv[1], "--check");
    int ret;

    if (argc != 2 && !check) {
        fprintf(stderr, "usage: %s [--check] CORPUS-DIR\n", argv[0]);
        return 2;
    }
    if (check && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) {
        /* Ring files are in the writing machine's byte order (crash_format.h): the corpus holds a
         * little-endian machine's; what this program writes here is a big-endian one's. */
        puts("1..0 # SKIP the committed corpus is a little-endian machine's ring files");
        return 0;
    }
    make_seeds();
    ret = run(argv[argc - 1], check);
    for (size_t i = 0; i < nseeds; i++) {
        ri_free(&seeds[i].r1);
        ri_free(&seeds[i].r2);
    }
    return ret;
}
