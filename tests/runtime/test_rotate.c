/*
 * rotate=SIZE and rotate-keep=N: the trace file in pieces FILE, FILE.1,
 * FILE.2, ... each a v4 trace on its own (header, every mapping, whole
 * records), none above SIZE, together holding every record once and in
 * order; off/on continues the current piece; a new name starts at its
 * first piece; rotate-keep removes old pieces; a group registered late
 * gets its mappings into every later piece; a piece that cannot be
 * created stops the file with the error, and turning it on again resumes.
 */
#include "rt_test.h"

TEST_EVENT(ev_a, "r_a", "int seq", "seq %d", "i", 1, 0);
TEST_EVENT(ev_s, "r_s", "int a, int seq, const char *s", "a %d seq %d s %s", "iis", 3, 0);
TEST_GROUP(grp_rot, "rotate", &ev_a, &ev_s)

/* Registered by hand mid-test, as a dlopen'ed module would. */
static struct st_event ev_late = {sizeof(struct st_event), 0, 0, "r_late", "int seq", "seq %d", "i", 1, 0};
static struct st_event *const late_events[] = {&ev_late};
static struct st_group grp_late = {sizeof(struct st_group), "late", late_events, 1, 0};

static struct st_group *const groups[] = {&grp_rot, &grp_late, NULL};

#define PIECE (64u << 10)

/* What a run of pieces held, summed. */
struct pieces {
    unsigned n;               /* pieces found: base, base.1, ... base.(n-1) */
    unsigned first;           /* lowest piece number present */
    int ok;                   /* every piece decoded, started with all mappings, <= limit */
    uint64_t events, drops, bytes;
    uint64_t first_seq;       /* r_a/r_s seqs must go first_seq, +1, +2, ... across pieces */
    uint64_t next_seq;        /* one past the last seq; UINT64_MAX before the first */
    int in_order;
    size_t late;              /* r_late records */
    int late_mapped_from;     /* first piece that maps r_late from its start, or -1 */
    long long largest;
};

static void piece_path(char *buf, size_t len, const char *base, unsigned k)
{
    if (k)
        snprintf(buf, len, "%s.%u", test_path(base), k);
    else
        snprintf(buf, len, "%s", test_path(base));
}

/* Checks one piece: decodes, opens with a mapping for every ID known when it began. */
static void check_piece(struct pieces *p, const char *path, unsigned k, uint64_t limit, uint32_t ids_min)
{
    struct test_trace t;
    long long size = test_file_size(path);
    uint32_t lead = 0;

    if (size > p->largest)
        p->largest = size;
    if (limit && (uint64_t)size > limit) {
        diag("%s: %lld bytes > %llu", path, size, (unsigned long long)limit);
        p->ok = 0;
    }
    if (test_collect(path, groups, &t) != 0) {
        p->ok = 0;
        return;
    }
    while (lead < t.n && t.r[lead].mapping && t.r[lead].id == lead)
        lead++;
    if (lead < ids_min) {
        diag("%s: starts with %u mappings, want %u", path, lead, ids_min);
        p->ok = 0;
    }
    if (lead == 3 && p->late_mapped_from < 0)
        p->late_mapped_from = (int)k;
    for (size_t i = 0; i < t.n; i++) {
        const struct test_rec *r = &t.r[i];
        if (r->mapping)
            continue;
        if (r->dropped) {
            p->drops += r->drop_count;
            continue;
        }
        p->events++;
        if (!strcmp(r->name, "r_late")) {
            p->late++;
            continue;
        }
        uint64_t seq = r->u[!strcmp(r->name, "r_s")];
        if (p->next_seq == UINT64_MAX)
            p->first_seq = p->next_seq = seq;
        if (seq != p->next_seq) {
            if (p->in_order)
                diag("%s record %zu: seq %llu, want %llu", path, i, (unsigned long long)seq,
                     (unsigned long long)p->next_seq);
            p->in_order = 0;
        }
        p->next_seq = seq + 1;
    }
    p->bytes += (uint64_t)size;
    test_trace_free(&t);
}

/* Reads pieces base, base.1, ... (from the first present) in order. */
static struct pieces read_pieces(const char *base, uint64_t limit, uint32_t ids_min)
{
    struct pieces p = {.ok = 1, .in_order = 1, .late_mapped_from = -1, .next_seq = UINT64_MAX};
    char path[400];
    unsigned k = 0;

    piece_path(path, sizeof path, base, 0);
    while (!test_exists(path) && k < 100000)
        piece_path(path, sizeof path, base, ++k);
    p.first = k;
    for (; test_exists(path); piece_path(path, sizeof path, base, ++k)) {
        check_piece(&p, path, k, limit, ids_min);
        p.n = k + 1;
    }
    return p;
}

/* seq from..to-1 as alternating r_a and r_s records (string of varying length). */
static void trace_range(uint64_t from, uint64_t to)
{
    static const char text[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (uint64_t seq = from; seq < to; seq++) {
        if (seq % 2)
            test_trace_iis(&ev_s, seq * 3, seq, text + seq % (sizeof text - 1));
        else
            test_trace_i(&ev_a, seq);
    }
}

static void config_errors(void)
{
    char err[256];
    struct st_file_status fs = {.struct_size = sizeof fs};

    is_int(st_configure("rotate=1K", err, sizeof err), -EINVAL, "rotate below 64K refused");
    ok(strstr(err, "rotate '1K'") && strstr(err, "64K"), "message names the value and the minimum");
    is_int(st_configure("rotate=12X", err, sizeof err), -EINVAL, "rotate=12X refused");
    is_int(st_configure("rotate=", err, sizeof err), -EINVAL, "empty rotate refused");
    is_int(st_configure("rotate-keep=-1", err, sizeof err), -EINVAL, "rotate-keep=-1 refused");
    ok(strstr(err, "rotate-keep '-1'") != NULL, "message names rotate-keep");
    is_int(st_configure("rotate-keep=2000000", err, sizeof err), -EINVAL, "rotate-keep too large refused");
    is_int(st_configure("rotate=64K,rotate-keep=0", err, sizeof err), 0, "rotate=64K accepted");
    st_trace_file_status(&fs);
    ok(!fs.enabled, "rotate= alone does not enable the file");
}

/* Pieces hold everything once, in order, each <= SIZE; stats agree. */
static void basic(void)
{
    struct st_file_status fs = {.struct_size = sizeof fs};
    struct st_stats st = {.struct_size = sizeof st};
    struct pieces p;
    char last[400];

    is_int(st_configure("file=r.trace,r_a,r_s,rotate=64K", NULL, 0), 0, "file=r.trace rotate=64K");
    trace_range(0, 20000);
    is_int(st_trace_file_flush(), 0, "flush");
    p = read_pieces("r.trace", PIECE, 2);
    ok(p.ok && p.first == 0, "every piece decodes, starts with its mappings, <= 64K");
    ok(p.n >= 10, "about 1 MB of records made several pieces (%u)", p.n);
    ok(p.in_order && p.first_seq == 0 && p.next_seq == 20000 && p.drops == 0,
       "20000 records once and in order across pieces");
    ok(p.largest > (long long)PIECE - 200, "pieces are filled up to the limit (largest %lld)", p.largest);
    st_stats_get(&st);
    ok(st.written == p.events && st.bytes_written == p.bytes, "stats: written %llu = %llu records, bytes %llu = %llu",
       (unsigned long long)st.written, (unsigned long long)p.events, (unsigned long long)st.bytes_written,
       (unsigned long long)p.bytes);
    st_trace_file_status(&fs);
    piece_path(last, sizeof last, "r.trace", p.n - 1);
    ok(strlen(last) >= strlen(fs.path) && !strcmp(last + strlen(last) - strlen(fs.path), fs.path) && fs.enabled,
       "status names the current piece (%s)", fs.path);

    /* Off, records while off, on: the current piece goes on, then rotates. */
    is_int(st_trace_file_set_enabled(false), 0, "file off");
    trace_range(20000, 21000);
    is_int(st_trace_file_set_enabled(true), 0, "file on again");
    trace_range(21000, 30000);
    is_int(st_trace_file_flush(), 0, "flush");
    p = read_pieces("r.trace", PIECE, 2);
    ok(p.ok && p.in_order && p.first_seq == 0 && p.next_seq == 30000, "off/on: the current piece continued, nothing lost (%llu)",
       (unsigned long long)p.next_seq);

    /* A group registered now: mapped where it appears, and from the start of every later piece. */
    st_group_register(&grp_late);
    is_int(st_event_set_enabled("r_late", true), 1, "enable the late event");
    for (uint64_t i = 0; i < 3000; i++) {
        test_trace_i(&ev_late, i);
        trace_range(30000 + i, 30000 + i + 1);
    }
    is_int(st_trace_file_flush(), 0, "flush");
    p = read_pieces("r.trace", PIECE, 2);
    ok(p.ok && p.in_order && p.late == 3000, "late records decoded (mapped before use) in every piece");
    ok(p.late_mapped_from > 0 && (unsigned)p.late_mapped_from < p.n - 1,
       "pieces after it begin with its mapping (from piece %d of %u)", p.late_mapped_from, p.n);
    is_int(st_event_set_enabled("r_late", false), 1, "disable the late event");
}

/* A new name starts at its own first piece; rotate=off lets the piece grow. */
static void rename_and_off(void)
{
    struct pieces p;
    char err[256];

    is_int(st_trace_file_set_name(test_path("s.trace")), 0, "set name s.trace");
    trace_range(0, 5000);
    is_int(st_trace_file_flush(), 0, "flush");
    p = read_pieces("s.trace", PIECE, 3);
    ok(p.ok && p.first == 0 && p.n >= 3 && p.in_order && p.first_seq == 0 && p.next_seq == 5000, "s.trace, s.trace.1, ...: %u pieces",
       p.n);
    is_int(st_configure("rotate=off", err, sizeof err), 0, "rotate=off");
    trace_range(5000, 12000);
    is_int(st_trace_file_flush(), 0, "flush");
    p = read_pieces("s.trace", 0, 3);
    ok(p.ok && p.in_order && p.next_seq == 12000 && p.largest > (long long)PIECE,
       "without rotation the last piece grew past 64K (%lld)", p.largest);
}

/* rotate-keep=3: only the newest three pieces remain, the newest complete. */
static void keep(void)
{
    struct pieces p;
    char path[400];

    is_int(st_configure("file=k.trace,rotate=64K,rotate-keep=3", NULL, 0), 0, "rotate-keep=3");
    trace_range(0, 20000);
    is_int(st_trace_file_flush(), 0, "flush");
    p = read_pieces("k.trace", PIECE, 3);
    ok(p.ok && p.n - p.first == 3 && p.first >= 7, "pieces %u..%u remain (3)", p.first, p.n - 1);
    piece_path(path, sizeof path, "k.trace", 0);
    ok(!test_exists(path), "the first piece was removed");
    ok(p.in_order && p.first_seq > 0 && p.next_seq == 20000,
       "the kept pieces hold the newest records, contiguous, from seq %llu", (unsigned long long)p.first_seq);
    is_int(st_configure("rotate-keep=0", NULL, 0), 0, "rotate-keep=0 keeps every piece again");
}

/* Pieces left by an earlier, longer run never read as this trace's continuation. */
static void stale(void)
{
    struct pieces p;
    char path[400];

    for (unsigned k = 1; k <= 40; k++) {
        piece_path(path, sizeof path, "t.trace", k);
        test_write_file(path, "stale piece of an earlier run\n");
    }
    is_int(st_configure("file=t.trace,rotate=64K", NULL, 0), 0, "file=t.trace over 40 stale pieces");
    trace_range(0, 3000);
    is_int(st_trace_file_flush(), 0, "flush");
    p = read_pieces("t.trace", PIECE, 3);
    ok(p.ok && p.n >= 2 && p.n < 10 && p.in_order && p.first_seq == 0 && p.next_seq == 3000,
       "pieces 0..%u hold this run only, read up to the first missing number", p.n - 1);
    piece_path(path, sizeof path, "t.trace", p.n);
    ok(!test_exists(path), "the piece after the current one was removed");
}

/* A piece that cannot be created: writing stops with the error; on again resumes. */
static void cannot_create(void)
{
    struct st_file_status fs = {.struct_size = sizeof fs};
    struct pieces p;
    char path[400];
    uint64_t seq = 0;

    is_int(st_configure("file=e.trace,rotate=64K", NULL, 0), 0, "file=e.trace");
    piece_path(path, sizeof path, "e.trace", 1);
    ok(mkdir(path, 0700) == 0, "e.trace.1 made a directory, so the piece cannot be opened");
    fflush(stderr);
    for (; seq < 6000; seq += 500) {
        trace_range(seq, seq + 500);
        st_trace_file_flush();
    }
    st_trace_file_status(&fs);
    ok(!fs.enabled && fs.error == -EISDIR, "the file stopped with -EISDIR (%d)", fs.error);
    ok(test_file_size(test_path("e.trace")) <= (long long)PIECE, "the full piece was not overrun");
    rmdir(path);
    is_int(st_trace_file_set_enabled(true), 0, "on again");
    trace_range(6000, 7000);
    is_int(st_trace_file_flush(), 0, "flush");
    p = read_pieces("e.trace", PIECE, 3);
    ok(p.ok && p.n >= 2, "writing resumed in the next piece (%u pieces)", p.n);
    ok(p.in_order && p.first_seq == 0 && p.next_seq == 7000 && p.drops == 0,
       "records traced while stopped waited in the buffers: 0..6999 in order");
}

int main(void)
{
    char cwd[600];

    test_tmpdir();
    if (!getcwd(cwd, sizeof cwd) || chdir(test_dir) != 0)
        return 2;
    config_errors();
    basic();
    rename_and_off();
    keep();
    stale();
    cannot_create();
    if (chdir(cwd) != 0)
        return 2;
    return done_testing();
}
