/*
 * The reader API on traces in pieces: ST_READER_ROTATED reads FILE,
 * FILE.1, ... record for record as the one-file equivalent (same names,
 * values, record numbers; offsets and names of the piece), counters summed,
 * st_rotated_find() with rotate-keep gaps and stray names, memory pieces
 * and byte order per piece, mapping IDs reset per piece, errors naming the
 * piece and the offset in it, and follow mode across a rotation.
 */
#include <errno.h>
#include <sys/stat.h>

#include <simpletrace/reader.h>

#include "rot_util.h"
#include "tap.h"

static struct st_catalog *cat;
static char dir[4096];

/* What a record said, kept past the next call. */
struct seen {
    char name[32], piece[4096];
    uint64_t ts, number, offset, v;
    uint32_t pid;
    bool dropped;
    uint64_t dropped_count;
    char s[32];
};

struct run {
    struct seen *r;
    size_t n;
    int ret; /* what ended it: 0 or an error */
    struct st_reader_counters c;
    uint64_t origin;
    char msg[1024];
    struct st_reader_error err;
};

static void keep(struct run *out, struct st_reader *r, const struct st_record *rec)
{
    struct seen *s = &out->r[out->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", rec->name);
    snprintf(s->piece, sizeof s->piece, "%s", st_reader_name(r));
    s->ts = rec->timestamp_ns;
    s->number = rec->number;
    s->offset = rec->offset;
    s->pid = rec->pid;
    s->v = rec->args[0].u64;
    s->dropped = rec->dropped;
    s->dropped_count = rec->dropped_count;
    if (rec->nargs > 1 && rec->args[1].kind == ST_VALUE_STRING)
        snprintf(s->s, sizeof s->s, "%.*s", (int)rec->args[1].len, rec->args[1].str);
}

/* Reads r to its end or error into *out, then closes it. */
static void drain(struct st_reader *r, struct run *out)
{
    memset(out, 0, sizeof *out);
    out->r = calloc(64, sizeof *out->r);
    const struct st_record *rec;
    int ret = 0;
    while (out->n < 64 && (ret = st_reader_next(r, &rec)) == 1)
        keep(out, r, rec);
    out->ret = ret;
    out->c.struct_size = sizeof out->c;
    st_reader_get_counters(r, &out->c);
    st_reader_origin(r, &out->origin);
    st_reader_format_error(r, out->msg, sizeof out->msg);
    out->err = *st_reader_error(r);
    st_reader_close(r);
}

static void run_free(struct run *x)
{
    free(x->r);
}

static int open_path(struct st_reader **r, const char *path, unsigned flags)
{
    struct st_reader_options o = {.struct_size = sizeof o, .flags = flags};
    return st_reader_open(r, path, cat, &o, NULL);
}

static void path_of(char *buf, size_t len, const char *name)
{
    if ((size_t)snprintf(buf, len, "%s/%s", dir, name) >= len)
        abort(); /* a test setup problem */
}

/* Same records: names, values, timestamps, pids, record numbers. */
static bool same_records(const struct run *a, const struct run *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        const struct seen *x = &a->r[i], *y = &b->r[i];
        if (strcmp(x->name, y->name) || x->ts != y->ts || x->pid != y->pid || x->v != y->v ||
            x->number != y->number || x->dropped != y->dropped || x->dropped_count != y->dropped_count ||
            strcmp(x->s, y->s)) {
            diag("record %zu differs: %s/%s", i, x->name, y->name);
            return false;
        }
    }
    return true;
}

/* --- reading pieces as one trace ---------------------------------------------- */

static void test_rotated_equals_one_file(const struct tbuf *p)
{
    char base[4096], one[4096];
    path_of(base, sizeof base, "t.trace");
    path_of(one, sizeof one, "one.trace");
    ok(rot_write(base, p, 0, ROT_N) && rot_write_concat(one, p, 0, ROT_N), "pieces and one-file equivalent written");

    struct st_reader *r;
    struct run rot, ref;
    is_int(open_path(&r, base, ST_READER_ROTATED), 0, "open with ST_READER_ROTATED");
    is_str(st_reader_name(r), base, "before reading, the name is the first piece's");
    drain(r, &rot);
    is_int(open_path(&r, one, 0), 0, "open the one-file equivalent");
    drain(r, &ref);

    is_int(rot.ret, 0, "pieces: a clean end (%s)", rot.msg);
    is_int(rot.n, ROT_N * ROT_RECS, "pieces: every record once");
    ok(same_records(&rot, &ref), "pieces: names, values, timestamps, pids and record numbers as the one file");
    bool offsets = true, names = true;
    for (size_t i = 0; i < rot.n; i++) {
        unsigned k = (unsigned)(i / ROT_RECS);
        char want[4096];
        rot_piece_path(want, sizeof want, base, k);
        names &= !strcmp(rot.r[i].piece, want);
        offsets &= rot.r[i].offset == p[k].rec_off[i % ROT_RECS];
    }
    ok(names, "st_reader_name() names the piece each record comes from");
    ok(offsets, "record offsets are within their piece");
    is_u64(rot.r[ROT_RECS].number, rot.r[ROT_RECS - 1].number + 4,
           "record numbers go on across pieces (3 mappings between, the header unnumbered)");
    is_u64(rot.origin, ROT_TS0, "origin: the first record of the first piece");
    is_u64(rot.c.records, ref.c.records, "counters: records summed (%llu)", (unsigned long long)rot.c.records);
    is_u64(rot.c.mappings, 2 + 3 * (ROT_N - 1), "counters: every piece's mappings");
    is_u64(rot.c.events, ref.c.events, "counters: events summed");
    ok(rot.c.dropped_records == 1 && rot.c.dropped_events == 7, "counters: the dropped record and its 7 events");
    size_t total = 0;
    for (unsigned k = 0; k < ROT_N; k++)
        total += p[k].n;
    is_u64(rot.c.bytes, total, "counters: bytes of every piece, headers included");
    is_u64(ref.c.bytes + 24 * (ROT_N - 1), total, "(the one file lacks only the later headers)");
    run_free(&rot);
    run_free(&ref);

    /* Filters run from the origin of the whole trace: --from in the second piece. */
    struct st_reader_options o = {.struct_size = sizeof o, .flags = ST_READER_ROTATED, .filter_from = true,
                                  .from_ns = 15 * 1500, .events = "ev_a"};
    is_int(st_reader_open(&r, base, cat, &o, NULL), 0, "open with filters");
    drain(r, &rot);
    bool from_ok = rot.ret == 0 && rot.n > 0;
    for (size_t i = 0; i < rot.n; i++)
        from_ok &= rot.r[i].ts >= ROT_TS0 + 15 * 1500 && !strcmp(rot.r[i].name, "ev_a");
    ok(from_ok && rot.c.filtered + rot.n == ROT_N * ROT_RECS, "--from/--events across pieces: %zu records", rot.n);
    run_free(&rot);
    unlink(one);
}

/* --- finding the pieces ------------------------------------------------------------- */

static void touch(const char *name)
{
    char path[4096];
    path_of(path, sizeof path, name);
    rot_write_file(path, "", 0);
}

static void test_find(void)
{
    char sub[4096], base[4096];
    path_of(sub, sizeof sub, "find");
    mkdir(sub, 0700);
    path_of(base, sizeof base, "find/f");
    uint64_t first = 99, count = 99;
    int ret;
    is_int(st_rotated_find(base, &first, &count), -ENOENT, "find: no piece -> -ENOENT");
    is_int(st_rotated_find("-", &first, &count), -EINVAL, "find: \"-\" -> -EINVAL");
    static const char *const names[] = {"find/f", "find/f.1", "find/f.2", "find/f.4", "find/f.01", "find/f.x",
                                        "find/fx.3", "find/f.3.1", "find/g.1"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        touch(names[i]);
    ret = st_rotated_find(base, &first, &count);
    ok(ret == 0 && first == 0 && count == 3,
       "find: f, f.1, f.2, stop at the missing f.3 (%llu, %llu)", (unsigned long long)first,
       (unsigned long long)count);
    char p[4096];
    path_of(p, sizeof p, "find/f");
    unlink(p);
    path_of(p, sizeof p, "find/f.1");
    unlink(p);
    ret = st_rotated_find(base, &first, &count);
    ok(ret == 0 && first == 2 && count == 1,
       "find: rotate-keep removed f and f.1: from f.2, one piece; f.01, f.x, fx.3, f.3.1 ignored (%llu, %llu)",
       (unsigned long long)first, (unsigned long long)count);
    touch("find/f.3");
    ret = st_rotated_find(base, &first, &count);
    ok(ret == 0 && first == 2 && count == 3, "find: f.2, f.3, f.4 (%llu, %llu)",
       (unsigned long long)first, (unsigned long long)count);
    touch("find/f.10");
    path_of(p, sizeof p, "find/f.2");
    unlink(p);
    ret = st_rotated_find(base, &first, &count);
    ok(ret == 0 && first == 3 && count == 2,
       "find: the smallest number by value, not by name (f.10 < f.3 as text) (%llu, %llu)",
       (unsigned long long)first, (unsigned long long)count);
    struct st_reader *r;
    struct st_reader_error err = {.struct_size = sizeof err};
    struct st_reader_options o = {.struct_size = sizeof o, .flags = ST_READER_ROTATED};
    path_of(p, sizeof p, "find/nothing");
    ok(st_reader_open(&r, p, cat, &o, &err) == -ENOENT && r == NULL && strstr(err.message, "nothing.N"),
       "open a rotated trace with no piece: -ENOENT: %s", err.message);
    ok(st_reader_open(&r, "-", cat, &o, &err) == -EINVAL && r == NULL, "open \"-\" rotated: -EINVAL: %s",
       err.message);
    rot_rmtree(sub);
}

/* --- memory pieces, byte order, misuse --------------------------------------------- */

static void test_memory_pieces(const struct tbuf *p)
{
    struct tbuf swapped;
    rot_build_piece(&swapped, 1, true);
    struct st_reader_piece pieces[ROT_N];
    static const char *const names[] = {"m0", "m1", "m2", "m3"};
    for (unsigned k = 0; k < ROT_N; k++)
        pieces[k] = (struct st_reader_piece){sizeof pieces[k], names[k], k == 1 ? swapped.d : p[k].d,
                                             k == 1 ? swapped.n : p[k].n};
    struct st_reader *r;
    is_int(st_reader_open_pieces(&r, pieces, ROT_N, cat, NULL, NULL), 0, "open_pieces: memory pieces");
    const struct st_record *rec;
    bool swap_ok = true;
    size_t n = 0;
    int ret;
    while ((ret = st_reader_next(r, &rec)) == 1) {
        bool in1 = !strcmp(st_reader_name(r), "m1");
        swap_ok &= st_reader_byte_swapped(r) == in1 && st_reader_version(r) == 4;
        n++;
    }
    ok(ret == 0 && n == ROT_N * ROT_RECS, "open_pieces: every record (%zu)", n);
    ok(swap_ok, "byte order is each piece's own (m1 swapped, the others not)");
    is_str(st_reader_name(r), "m3", "at the end, the name is the last piece's");
    st_reader_close(r);

    /* Mixed: a file then memory. */
    char base[4096];
    path_of(base, sizeof base, "mixed");
    rot_write_file(base, p[0].d, p[0].n);
    struct st_reader_piece mixed[2] = {{sizeof mixed[0], base, NULL, 0}, {sizeof mixed[1], "mem", p[1].d, p[1].n}};
    struct run x;
    is_int(st_reader_open_pieces(&r, mixed, 2, cat, NULL, NULL), 0, "open_pieces: a file and memory");
    drain(r, &x);
    ok(x.ret == 0 && x.n == 2 * ROT_RECS && !strcmp(x.r[0].piece, base) && !strcmp(x.r[ROT_RECS].piece, "mem"),
       "file then memory piece: %zu records", x.n);
    run_free(&x);
    unlink(base);

    struct st_reader_error err = {.struct_size = sizeof err};
    struct st_reader_options rot = {.struct_size = sizeof rot, .flags = ST_READER_ROTATED};
    ok(st_reader_open_pieces(&r, pieces, 0, cat, NULL, &err) == -EINVAL && r == NULL, "no pieces: -EINVAL");
    ok(st_reader_open_pieces(&r, pieces, 1, cat, &rot, &err) == -EINVAL && r == NULL,
       "open_pieces with ST_READER_ROTATED: -EINVAL");
    ok(st_reader_open_memory(&r, p[0].d, p[0].n, "m", cat, &rot, &err) == -EINVAL && r == NULL,
       "open_memory with ST_READER_ROTATED: -EINVAL: %s", err.message);
    ok(st_reader_open_stream(&r, stdin, "s", cat, &rot, &err) == -EINVAL && r == NULL,
       "open_stream with ST_READER_ROTATED: -EINVAL");
    struct st_reader_piece missing = {sizeof missing, "/nonexistent/piece", NULL, 0};
    ok(st_reader_open_pieces(&r, &missing, 1, cat, NULL, &err) == -ENOENT && r == NULL,
       "open_pieces: the first file's open() error at open");
    free(swapped.d);
}

/* --- errors ---------------------------------------------------------------------------------- */

/* Reads pieces (files named base, base.1, ...) of which piece `bad` is replaced by data[0..size). */
static void read_with_bad_piece(const struct tbuf *p, unsigned bad, const void *data, size_t size, struct run *x)
{
    char base[4096];
    path_of(base, sizeof base, "bad.trace");
    rot_write(base, p, 0, ROT_N);
    char path[4096];
    rot_piece_path(path, sizeof path, base, bad);
    rot_write_file(path, data, size);
    struct st_reader *r;
    if (open_path(&r, base, ST_READER_ROTATED) == 0)
        drain(r, x);
    else
        memset(x, 0, sizeof *x);
}

static void test_errors(const struct tbuf *p)
{
    struct run x;
    char want[4096];
    path_of(want, sizeof want, "bad.trace.1");

    /* A record length below the minimum in the middle piece. */
    uint8_t *d = malloc(p[1].n);
    memcpy(d, p[1].d, p[1].n);
    size_t at = p[1].rec_off[3];
    memset(d + at + 24, 0, 4);
    read_with_bad_piece(p, 1, d, p[1].n, &x);
    char prefix[4096 + 64];
    snprintf(prefix, sizeof prefix, "%s: byte offset %zu, record ", want, at);
    ok(x.ret == -EBADMSG && x.n == ROT_RECS + 3 && x.err.offset == at && !strncmp(x.msg, prefix, strlen(prefix)),
       "corrupt record in the middle piece: the records before, then %s", x.msg);
    is_u64(x.err.record, x.r[x.n - 1].number + 1, "its record number follows the last delivered");
    run_free(&x);

    /* The middle piece cut inside a record: an error, not the start of the next piece. */
    at = p[1].rec_off[6];
    read_with_bad_piece(p, 1, p[1].d, at + 10, &x);
    snprintf(prefix, sizeof prefix, "%s: byte offset %zu, record ", want, at);
    ok(x.ret == -ENODATA && x.n == ROT_RECS + 6 && !strncmp(x.msg, prefix, strlen(prefix)) &&
           strstr(x.msg, "ends inside"),
       "middle piece cut inside a record: %s", x.msg);
    run_free(&x);

    /* The middle piece with a bad header. */
    memcpy(d, p[1].d, p[1].n);
    d[8] ^= 0xff;
    read_with_bad_piece(p, 1, d, p[1].n, &x);
    snprintf(prefix, sizeof prefix, "%s: byte offset 0, record 0: not a simpletrace file", want);
    ok(x.ret == -EBADMSG && x.n == ROT_RECS && !strncmp(x.msg, prefix, strlen(prefix)), "bad magic in piece 1: %s",
       x.msg);
    run_free(&x);

    /* An empty middle piece. */
    read_with_bad_piece(p, 1, "", 0, &x);
    ok(x.ret == -ENODATA && x.n == ROT_RECS && strstr(x.msg, "bad.trace.1: byte offset 0, record 0:"),
       "empty piece 1: %s", x.msg);
    run_free(&x);

    /* The last piece cut: as a cut single file. */
    path_of(want, sizeof want, "bad.trace.3");
    at = p[3].rec_off[9];
    read_with_bad_piece(p, 3, p[3].d, at + 3, &x);
    snprintf(prefix, sizeof prefix, "%s: byte offset %zu, record ", want, at);
    ok(x.ret == -ENODATA && x.n == 4 * ROT_RECS - 1 && !strncmp(x.msg, prefix, strlen(prefix)),
       "last piece cut: every whole record, then %s", x.msg);
    run_free(&x);

    /* IDs are per piece: piece 2 uses ID 2 without mapping it, although piece 1 did. */
    struct tbuf q;
    memset(&q, 0, sizeof q);
    tb_header(&q);
    tb_mapping(&q, 0, "ev_a");
    tb_event(&q, 0, ROT_TS0 + 100000, 100, 1, NULL);
    at = q.n;
    tb_event(&q, 2, ROT_TS0 + 100001, 100, 2, NULL);
    read_with_bad_piece(p, 2, q.d, q.n, &x);
    path_of(want, sizeof want, "bad.trace.2");
    snprintf(prefix, sizeof prefix, "%s: byte offset %zu, record ", want, at);
    ok(x.ret == -ENOENT && x.n == 2 * ROT_RECS + 1 && !strncmp(x.msg, prefix, strlen(prefix)) &&
           strstr(x.msg, "no mapping"),
       "ID mapped in piece 1 only, used in piece 2: %s", x.msg);
    run_free(&x);
    char one[4096];
    path_of(one, sizeof one, "ids-one.trace");
    FILE *f = fopen(one, "wb");
    fwrite(p[0].d, 1, p[0].n, f);
    fwrite(p[1].d + 24, 1, p[1].n - 24, f);
    fwrite(q.d + 24, 1, q.n - 24, f);
    fclose(f);
    struct st_reader *r;
    open_path(&r, one, 0);
    drain(r, &x);
    ok(x.ret == 0 && x.n == 2 * ROT_RECS + 2, "(the same bytes as one file read fine: the reset is per piece)");
    run_free(&x);
    unlink(one);
    free(q.d);

    /* A piece removed after open (rotate-keep on a live program): named when its turn comes. */
    char base[4096], path[4096];
    path_of(base, sizeof base, "bad.trace");
    rot_write(base, p, 0, ROT_N);
    open_path(&r, base, ST_READER_ROTATED);
    rot_piece_path(path, sizeof path, base, 2);
    unlink(path);
    drain(r, &x);
    ok(x.ret == -ENOENT && x.n == 2 * ROT_RECS && strstr(x.msg, "bad.trace.2: byte offset 0, record 0: cannot open"),
       "piece removed while reading: %s", x.msg);
    run_free(&x);
    for (unsigned k = 0; k < ROT_N; k++) {
        rot_piece_path(path, sizeof path, base, k);
        unlink(path);
    }
    free(d);
}

/* --- follow mode -------------------------------------------------------------------------------- */

static void append(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "ab");
    fwrite(d, 1, n, f);
    fclose(f);
}

static int next_name(struct st_reader *r, char *name, size_t len)
{
    const struct st_record *rec;
    int ret = st_reader_next(r, &rec);
    if (ret == 1)
        snprintf(name, len, "%s/%llu", st_reader_name(r), (unsigned long long)rec->args[0].u64);
    return ret;
}

/* The writer's order: it finishes a piece, then creates the next (empty at first). */
static void test_follow(const struct tbuf *p)
{
    char base[4096], p1[4096], p2[4096], p3[4096];
    path_of(base, sizeof base, "fol.trace");
    rot_piece_path(p1, sizeof p1, base, 1);
    rot_piece_path(p2, sizeof p2, base, 2);
    rot_piece_path(p3, sizeof p3, base, 3);
    size_t cut0 = p[0].rec_off[5];
    rot_write_file(base, p[0].d, cut0 + 7); /* 5 records and part of the sixth */
    struct st_reader *r;
    is_int(open_path(&r, base, ST_READER_ROTATED | ST_READER_FOLLOW), 0, "follow: open the first piece alone");
    char name[4200];
    int n = 0, ret;
    while ((ret = next_name(r, name, sizeof name)) == 1)
        n++;
    ok(n == 5 && ret == -EAGAIN, "follow: 5 records, then waits in the sixth (%d, %d)", n, ret);
    /* The writer completes piece 0 and starts piece 1, empty. */
    append(base, p[0].d + cut0 + 7, p[0].n - cut0 - 7);
    rot_write_file(p1, "", 0);
    n = 0;
    while ((ret = next_name(r, name, sizeof name)) == 1)
        n++;
    ok(n == 5 && ret == -EAGAIN, "follow: the rest of piece 0, then waits for piece 1's header (%d, %d)", n, ret);
    append(p1, p[1].d, p[1].n);
    n = 0;
    while ((ret = next_name(r, name, sizeof name)) == 1)
        n++;
    char want[4200];
    snprintf(want, sizeof want, "%s/19", p1);
    ok(n == ROT_RECS && ret == -EAGAIN && !strcmp(name, want), "follow: piece 1 once written, then waits: %s", name);
    is_int(st_reader_next(r, &(const struct st_record *){0}), -EAGAIN, "follow: still waiting at the end of piece 1");

    /* A piece cut inside a record and then left for the next one: an error naming it. */
    rot_write_file(p2, p[2].d, p[2].rec_off[3] + 5);
    n = 0;
    while ((ret = next_name(r, name, sizeof name)) == 1)
        n++;
    ok(n == 3 && ret == -EAGAIN, "follow: piece 2 partly written: 3 records, waits (%d, %d)", n, ret);
    rot_write_file(p3, p[3].d, p[3].n);
    ret = st_reader_next(r, &(const struct st_record *){0});
    char msg[8300];
    st_reader_format_error(r, msg, sizeof msg);
    snprintf(want, sizeof want, "%s: byte offset %zu, record ", p2, p[2].rec_off[3]);
    ok(ret == -ENODATA && !strncmp(msg, want, strlen(want)),
       "follow: once piece 3 exists, piece 2's cut record is an error: %s", msg);
    st_reader_close(r);
    unlink(base);
    unlink(p1);
    unlink(p2);
    unlink(p3);
}

int main(void)
{
    if (!rot_tmpdir(dir, sizeof dir, "api")) {
        perror("mkdtemp");
        return 1;
    }
    ok(st_catalog_load_buffer(&cat, "rot-events", rot_events_text, sizeof rot_events_text - 1, NULL, 0) == 0,
       "catalog");
    struct tbuf p[ROT_N];
    rot_build(p);
    test_rotated_equals_one_file(p);
    test_find();
    test_memory_pieces(p);
    test_errors(p);
    test_follow(p);
    rot_free(p);
    st_catalog_free(cat);
    rot_rmtree(dir);
    return done_testing();
}
