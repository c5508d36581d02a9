/*
 * The names of a trace's pieces, one rule (src/format/piece_format.h) for
 * the runtime that writes them, the reader that finds them and the command
 * that expands a directory: st_rotated_piece_name() and
 * st_rotated_piece_number() at their edges; FILE.0 and FILE.007, which the
 * runtime never writes, are no pieces to st_rotated_find(), the rotated
 * reader, st_reader_open_many() and the command's directory expansion
 * alike (there they are traces of their own, not hidden as pieces); every
 * piece the runtime writes (rotate=, rotate-keep=) is found.
 *
 * usage: test_piece_names SIMPLETRACE_EXE DEMO_EXE
 */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include <simpletrace/reader.h>

#include "rd_util.h"
#include "rot_util.h"
#include "tap.h"

static const char *exe, *demo;
static char top[1024];
static struct st_catalog *cat;

/* top/name into buf. */
static const char *path_of(char *buf, size_t len, const char *name)
{
    if ((size_t)snprintf(buf, len, "%s/%s", top, name) >= len)
        abort(); /* a test setup problem */
    return buf;
}

/* --- the two functions ------------------------------------------------------------ */

static void test_name(void)
{
    char buf[64];
    is_int(st_rotated_piece_name(buf, sizeof buf, "t.trace", 0), 0, "name: piece 0: 0");
    is_str(buf, "t.trace", "name: piece 0 is the trace itself");
    st_rotated_piece_name(buf, sizeof buf, "t.trace", 1);
    is_str(buf, "t.trace.1", "name: piece 1 is t.trace.1");
    st_rotated_piece_name(buf, sizeof buf, "d.1/t", 10);
    is_str(buf, "d.1/t.10", "name: piece 10, decimal, a dot in the directory kept");
    is_int(st_rotated_piece_name(buf, sizeof buf, "t", UINT64_MAX), 0, "name: piece 2^64 - 1 fits 64 bytes");
    is_str(buf, "t.18446744073709551615", "name: piece 2^64 - 1 in full");
    is_int(st_rotated_piece_name(buf, 11, "t.trace", 12), 0, "name: t.trace.12 fits 11 bytes exactly");
    is_int(st_rotated_piece_name(buf, 10, "t.trace", 12), -ENAMETOOLONG, "name: t.trace.12 in 10: -ENAMETOOLONG");
    is_str(buf, "t.trace.1", "name: cut short, NUL-terminated");
    is_int(st_rotated_piece_name(buf, sizeof buf, NULL, 1), -EINVAL, "name: NULL path: -EINVAL");
    is_int(st_rotated_piece_name(NULL, 8, "t", 1), -EINVAL, "name: NULL buffer with a length: -EINVAL");
    is_int(st_rotated_piece_name(NULL, 0, "t", 1), -ENAMETOOLONG, "name: no buffer: -ENAMETOOLONG");
}

static void test_number(void)
{
    static const struct {
        const char *name;
        uint64_t k;
        size_t base_len;
    } cases[] = {
        {"t.trace.1", 1, 7},
        {"t.trace.10", 10, 7},
        {"dir/t.trace.3", 3, 11},
        {"t.trace.3.1", 1, 9}, /* piece 1 of t.trace.3 */
        {"t.18446744073709551615", UINT64_MAX, 1},
        {"t.trace.0", 0, 0}, /* piece 0 is t.trace itself */
        {"t.trace.007", 0, 0},
        {"t.trace.01", 0, 0},
        {"t.trace.00", 0, 0},
        {"t.trace", 0, 0},
        {"t.trace.", 0, 0},
        {"t.trace.+7", 0, 0},
        {"t.trace.-1", 0, 0},
        {"t.trace. 7", 0, 0},
        {"t.trace.7x", 0, 0},
        {"t.trace.x7", 0, 0},
        {".7", 0, 0}, /* no base */
        {"7", 0, 0},
        {"", 0, 0},
        {"t.18446744073709551616", 0, 0}, /* beyond 64 bits */
        {"t.99999999999999999999", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t bl = 12345;
        uint64_t k = st_rotated_piece_number(cases[i].name, &bl);
        ok(k == cases[i].k && bl == (cases[i].k ? cases[i].base_len : 12345),
           "number: '%s' -> %" PRIu64 " (base %zu bytes)", cases[i].name, k, k ? bl : 0);
    }
    is_u64(st_rotated_piece_number("t.5", NULL), 5, "number: base_len may be NULL");
    is_u64(st_rotated_piece_number(NULL, NULL), 0, "number: NULL: 0");
    /* Each reads back what the other writes. */
    static const uint64_t ks[] = {1, 2, 9, 10, 99, 100, 4096, UINT64_C(1) << 32, UINT64_MAX - 1, UINT64_MAX};
    bool all = true;
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        char buf[64];
        size_t bl = 0;
        all &= st_rotated_piece_name(buf, sizeof buf, "a.b/t.trace", ks[i]) == 0 &&
               st_rotated_piece_number(buf, &bl) == ks[i] && bl == strlen("a.b/t.trace");
    }
    ok(all, "number(name(k)) == k, with the base's length, from 1 to 2^64 - 1");
}

/* --- FILE.0 and FILE.007: no pieces, to every reader path ----------------------------- */

/* Records of pieces 0 and 1 of rot_util.h's trace carry seq < 20 (or 17000); pieces 2 and 3 others. */
static bool of_pieces_0_1(uint64_t v)
{
    return v < 20 || v == 17000;
}

/* Reads r to its end and closes it: the records read, and in *foreign those not of pieces 0 and 1. */
static size_t count_records(struct st_reader *r, size_t *foreign)
{
    const struct st_record *rec;
    size_t n = 0;
    *foreign = 0;
    while (st_reader_next(r, &rec) == 1) {
        n++;
        if (rec->nargs > 0 && !of_pieces_0_1(rec->args[0].u64))
            ++*foreign;
    }
    st_reader_close(r);
    return n;
}

/* Runs simpletrace with the arguments up to a NULL. */
static void run_cli(struct tu_run *res, ...)
{
    char *argv[16] = {(char *)exe};
    va_list ap;
    va_start(ap, res);
    for (int i = 1; i < 15 && (argv[i] = va_arg(ap, char *)) != NULL; i++)
        ;
    va_end(ap);
    if (rd_run(argv, NULL, res) != 0)
        memset(res, 0, sizeof *res);
}

/* How often needle occurs in text. */
static size_t occurrences(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text ? strstr(text, needle) : NULL; p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_stray_names(const struct tbuf p[ROT_N])
{
    char d[2048], base[2048], path[2048], events[2048];
    mkdir(path_of(d, sizeof d, "stray"), 0700);
    path_of(base, sizeof base, "stray/t.trace");
    path_of(events, sizeof events, "trace-events");
    /* t.trace, t.trace.1 a trace in two pieces; t.trace.0 and t.trace.007 traces of their own. */
    ok(rot_write_file(events, rot_events_text, sizeof rot_events_text - 1) &&
           rot_write_file(base, p[0].d, p[0].n) &&
           rot_write_file(path_of(path, sizeof path, "stray/t.trace.1"), p[1].d, p[1].n) &&
           rot_write_file(path_of(path, sizeof path, "stray/t.trace.0"), p[2].d, p[2].n) &&
           rot_write_file(path_of(path, sizeof path, "stray/t.trace.007"), p[3].d, p[3].n),
       "stray: t.trace, t.trace.1, t.trace.0, t.trace.007 written");

    uint64_t first = 99, count = 99;
    int ret = st_rotated_find(base, &first, &count);
    ok(ret == 0 && first == 0 && count == 2,
       "stray: st_rotated_find: t.trace and t.trace.1 only (%" PRIu64 ", %" PRIu64 ")", first, count);

    struct st_reader_options o = {.struct_size = sizeof o, .flags = ST_READER_ROTATED};
    struct st_reader *r;
    size_t foreign = 99, n = 0;
    if (st_reader_open(&r, base, cat, &o, NULL) == 0)
        n = count_records(r, &foreign);
    ok(n == 2 * ROT_RECS && foreign == 0,
       "stray: the rotated reader reads t.trace and t.trace.1, nothing of t.trace.0 or t.trace.007 (%zu, %zu)", n,
       foreign);

    const char *paths[] = {base};
    n = 0, foreign = 99;
    if (st_reader_open_many(&r, paths, 1, cat, &o, NULL) == 0)
        n = count_records(r, &foreign);
    ok(n == 2 * ROT_RECS && foreign == 0, "stray: st_reader_open_many, rotated: the same two pieces (%zu, %zu)", n,
       foreign);

    /* The directory: t.trace.1 read with t.trace; t.trace.0 and t.trace.007 each a trace. */
    struct tu_run res;
    run_cli(&res, "print", "--format=json", events, d, NULL);
    size_t lines = occurrences(res.out, "\n");
    ok(res.status == 0 && lines == 4 * ROT_RECS, "stray: print DIR: the records of all four files, once (%zu) %s",
       lines, res.err ? res.err : "");
    ok(occurrences(res.out, "\"input\":0") == 2 * ROT_RECS && occurrences(res.out, "\"input\":3") == 0,
       "stray: ... t.trace with its piece t.trace.1 one input");
    ok(occurrences(res.out, "\"seq\":25}") == 1 && occurrences(res.out, "\"seq\":35}") == 1,
       "stray: ... t.trace.0's and t.trace.007's records among them");
    tu_run_free(&res);
    run_cli(&res, "info", events, d, NULL);
    ok(res.status == 0 && occurrences(res.out, "\ntrace: ") + (res.out && !strncmp(res.out, "trace: ", 7)) == 3 &&
           occurrences(res.out, "/t.trace.0\n") == 2 && occurrences(res.out, "/t.trace.007\n") == 2 &&
           occurrences(res.out, "/t.trace.1\n") == 1,
       "stray: info DIR: three traces, t.trace in 2 pieces, t.trace.0 and t.trace.007 of their own");
    if (res.status != 0 || !res.out)
        diag("%s", res.err ? res.err : "no output");
    tu_run_free(&res);

    /* t.trace gone (as rotate-keep removes it): t.trace.1 is the lowest piece, t.trace.0 still none. */
    unlink(base);
    ret = st_rotated_find(base, &first, &count);
    ok(ret == 0 && first == 1 && count == 1,
       "stray: without t.trace: from t.trace.1, one piece (%" PRIu64 ", %" PRIu64 ")", first, count);
    n = 0, foreign = 99;
    if (st_reader_open(&r, base, cat, &o, NULL) == 0)
        n = count_records(r, &foreign);
    ok(n == ROT_RECS && foreign == 0, "stray: ... and the rotated reader reads t.trace.1 alone (%zu, %zu)", n,
       foreign);
    run_cli(&res, "print", "--format=json", events, base, NULL);
    ok(res.status == 0 && occurrences(res.out, "\n") == ROT_RECS && occurrences(res.out, "\"seq\":15,") == 1 &&
           res.err && strstr(res.err, "reading its 1 remaining piece ") && strstr(res.err, "t.trace.1 to "),
       "stray: print FILE: FILE gone, its piece t.trace.1 read, named: %s", res.err ? res.err : "");
    tu_run_free(&res);
    rot_rmtree(d);
}

/* --- the runtime's pieces ------------------------------------------------------------- */

/* Runs the demo tracing to dir/t.trace with the extra configuration; its exit status. */
static int run_demo(const char *dir, const char *extra)
{
    char config[4200];
    snprintf(config, sizeof config, "enable=*,file=%s/t.trace,%s", dir, extra);
    char *argv[] = {(char *)demo, "--workers", "2", "--jobs", "3000", NULL};
    struct tu_run r;
    setenv("SIMPLETRACE", config, 1);
    rd_run(argv, NULL, &r);
    unsetenv("SIMPLETRACE");
    int status = r.status;
    if (status != 0)
        diag("demo: exit %d: %s", status, r.err ? r.err : "");
    tu_run_free(&r);
    return status;
}

/*
 * The files in dir: whether each is t.trace or a piece of it by the
 * reader's rule; their number, and the lowest and highest piece numbers
 * (0 for t.trace itself).
 */
static bool scan_pieces(const char *dir, uint64_t *n, uint64_t *lo, uint64_t *hi)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    bool all = d != NULL;
    *n = 0, *lo = UINT64_MAX, *hi = 0;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        size_t bl = 0;
        uint64_t k = strcmp(e->d_name, "t.trace") ? st_rotated_piece_number(e->d_name, &bl) : 0;
        if (strcmp(e->d_name, "t.trace") && (!k || bl != strlen("t.trace"))) {
            diag("%s: not a piece of t.trace", e->d_name);
            all = false;
        }
        ++*n;
        *lo = k < *lo ? k : *lo;
        *hi = k > *hi ? k : *hi;
    }
    if (d)
        closedir(d);
    return all;
}

static void test_runtime_pieces(void)
{
    char dir[2048], base[2200], name[2300];
    mkdir(path_of(dir, sizeof dir, "rt"), 0700);
    snprintf(base, sizeof base, "%s/t.trace", dir);
    uint64_t n = 0, lo = 0, hi = 0, first = 99, count = 99;
    bool good = run_demo(dir, "rotate=64K") == 0 && scan_pieces(dir, &n, &lo, &hi);
    ok(good && n >= 3 && lo == 0 && hi == n - 1,
       "runtime: rotate=64K: t.trace and t.trace.1 to .%" PRIu64 ", every name a piece by the reader's rule", hi);
    int ret = st_rotated_find(base, &first, &count);
    ok(ret == 0 && first == 0 && count == n,
       "runtime: st_rotated_find finds all %" PRIu64 " (%" PRIu64 ", %" PRIu64 ")", n, first, count);
    bool there = true;
    for (uint64_t k = first; k - first < count; k++)
        there &= st_rotated_piece_name(name, sizeof name, base, k) == 0 && access(name, F_OK) == 0;
    ok(there, "runtime: st_rotated_piece_name names each of them");
    struct tu_run a, b;
    run_cli(&a, "print", "--format=json", dir, NULL);
    run_cli(&b, "print", "--format=json", "--rotated", base, NULL);
    ok(a.status == 0 && a.out_len > 0 && a.out_len == b.out_len && !memcmp(a.out, b.out, a.out_len) &&
           !occurrences(a.out, "\"input\":1"),
       "runtime: print DIR is print --rotated DIR/t.trace: one trace, its pieces none of their own: %s",
       a.err ? a.err : "");
    tu_run_free(&a);
    tu_run_free(&b);
    rot_rmtree(dir);

    mkdir(dir, 0700);
    good = run_demo(dir, "rotate=64K,rotate-keep=2") == 0 && scan_pieces(dir, &n, &lo, &hi);
    ok(good && n == 2 && lo >= 2 && hi == lo + 1,
       "runtime: rotate-keep=2: t.trace.%" PRIu64 " and .%" PRIu64 " remain, pieces by the reader's rule", lo, hi);
    ret = st_rotated_find(base, &first, &count);
    ok(ret == 0 && first == lo && count == 2,
       "runtime: st_rotated_find finds them (%" PRIu64 ", %" PRIu64 ")", first, count);
    rot_rmtree(dir);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s SIMPLETRACE_EXE DEMO_EXE\n", argv[0]);
        return 2;
    }
    exe = argv[1];
    demo = argv[2];
    if (!rot_tmpdir(top, sizeof top, "names")) {
        perror("mkdtemp");
        return 1;
    }
    ok(st_catalog_load_buffer(&cat, "rot-events", rot_events_text, sizeof rot_events_text - 1, NULL, 0) == 0,
       "catalog");
    struct tbuf p[ROT_N];
    rot_build(p);
    test_name();
    test_number();
    test_stray_names(p);
    test_runtime_pieces();
    rot_free(p);
    st_catalog_free(cat);
    rot_rmtree(top);
    return done_testing();
}
