/*
 * print, stats and export --rotated as a user runs them: on built pieces
 * and on the demo's own rotate=64K pieces, the output is byte for byte the
 * output for the one-file equivalent (delta timestamps included); a
 * rotate-keep gap at the start is fine; a corrupt middle piece or a cut
 * last piece gives the same stdout and an error naming the piece and the
 * offset in it, exit 1; usage errors and --help.
 *
 * Each command runs in the directory of its trace with a relative name, so
 * the outputs that show the name (stats JSON, Chrome metadata) compare too.
 *
 * usage: test_rotated_cli SIMPLETRACE_EXE DEMO_EXE DEMO_TRACE_EVENTS
 */
#include <sys/stat.h>

#include "rd_util.h"
#include "rot_util.h"
#include "tap.h"

static const char *exe, *demo, *demo_events;
static char top[1024], events[2048];

/* Runs simpletrace in directory cwd with the arguments up to a NULL. */
static void run_in(struct tu_run *res, const char *cwd, ...)
{
    char *argv[24] = {(char *)exe};
    va_list ap;
    va_start(ap, cwd);
    for (int i = 1; i < 23 && (argv[i] = va_arg(ap, char *)) != NULL; i++)
        ;
    va_end(ap);
    if (chdir(cwd) != 0 || rd_run(argv, NULL, res) != 0)
        memset(res, 0, sizeof *res);
    if (chdir(top) != 0)
        abort();
}

/* top/name, created as a directory. */
static const char *subdir(const char *name)
{
    static char bufs[8][2048];
    static int i;
    char *b = bufs[i++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", top, name);
    mkdir(b, 0700);
    return b;
}

static bool same_output(const struct tu_run *a, const struct tu_run *b)
{
    return a->out && b->out && a->out_len == b->out_len && !memcmp(a->out, b->out, a->out_len);
}

static bool same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = tu_slurp(a, &na), *y = tu_slurp(b, &nb);
    bool same = x && y && na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

/* The text after "record N: " in an error line (what is wrong, without where). */
static const char *what(const char *err)
{
    const char *p = err ? strstr(err, ", record ") : NULL;
    p = p ? strstr(p, ": ") : NULL;
    return p ? p + 2 : "";
}

/* --- the same output as one file ------------------------------------------------------ */

/* print with the options opt1/opt2 (NULL: none) in rot/ (--rotated) and one/. */
static void compare_print(const char *rot, const char *one, const char *opt1, const char *opt2, const char *label)
{
    struct tu_run a, b;
    if (opt2)
        run_in(&a, rot, "print", "--rotated", opt1, opt2, events, "t.trace", NULL);
    else if (opt1)
        run_in(&a, rot, "print", "--rotated", opt1, events, "t.trace", NULL);
    else
        run_in(&a, rot, "print", "--rotated", events, "t.trace", NULL);
    if (opt2)
        run_in(&b, one, "print", opt1, opt2, events, "t.trace", NULL);
    else if (opt1)
        run_in(&b, one, "print", opt1, events, "t.trace", NULL);
    else
        run_in(&b, one, "print", events, "t.trace", NULL);
    ok(same_output(&a, &b) && a.out_len > 0 && a.status == 0 && a.err_len == 0,
       "print --rotated %s: byte-identical to the one file (%zu bytes), exit 0", label, a.out_len);
    tu_run_free(&a);
    tu_run_free(&b);
}

static void compare_stats(const char *rot, const char *one, const char *fmt, const char *label)
{
    struct tu_run a, b;
    run_in(&a, rot, "stats", "--rotated", fmt, events, "t.trace", NULL);
    run_in(&b, one, "stats", fmt, events, "t.trace", NULL);
    ok(same_output(&a, &b) && a.status == 0 && a.err_len == 0, "stats --rotated %s: identical totals and rows",
       label);
    tu_run_free(&a);
    tu_run_free(&b);
}

static void compare_export(const char *rot, const char *one)
{
    struct tu_run a, b;
    run_in(&a, rot, "export", "--rotated", "-o", "out.json", events, "t.trace", NULL);
    run_in(&b, one, "export", "-o", "out.json", events, "t.trace", NULL);
    char x[4096], y[4096];
    snprintf(x, sizeof x, "%s/out.json", rot);
    snprintf(y, sizeof y, "%s/out.json", one);
    ok(a.status == 0 && b.status == 0 && same_file(x, y) && a.err && b.err && !strcmp(a.err, b.err),
       "export --rotated to chrome: the same JSON and summary: %s", a.err ? a.err : "");
    tu_run_free(&a);
    tu_run_free(&b);
    run_in(&a, rot, "export", "--rotated", "--format=uftrace", "-o", "out.data", events, "t.trace", NULL);
    run_in(&b, one, "export", "--format=uftrace", "-o", "out.data", events, "t.trace", NULL);
    ok(a.status == 0 && b.status == 0 && a.err && b.err && !strcmp(a.err, b.err),
       "export --rotated to uftrace: exit 0, the same summary");
    tu_run_free(&a);
    tu_run_free(&b);
}

static void test_built_pieces(const struct tbuf *p)
{
    const char *rot = subdir("rot"), *one = subdir("one");
    char base[4096], onef[4096];
    snprintf(base, sizeof base, "%s/t.trace", rot);
    snprintf(onef, sizeof onef, "%s/t.trace", one);
    ok(rot_write(base, p, 0, ROT_N) && rot_write_concat(onef, p, 0, ROT_N), "4 pieces and the one file");
    compare_print(rot, one, NULL, NULL, "(delta timestamps)");
    compare_print(rot, one, "--timestamps=relative", NULL, "--timestamps=relative");
    compare_print(rot, one, "--format=json", NULL, "--format=json");
    compare_print(rot, one, "--events=ev_s,ev_late", "--from=10us", "--events --from");
    compare_stats(rot, one, "--format=text", "text");
    compare_stats(rot, one, "--format=json", "json");
    compare_export(rot, one);

    /* Without --rotated, the pieces are found all the same (issue 12: stopping at the end of the first
     * piece without a word lost the rest); --no-rotated reads the first piece alone. */
    struct tu_run a, b;
    run_in(&a, rot, "stats", "--format=json", events, "t.trace", NULL);
    run_in(&b, rot, "stats", "--format=json", "--rotated", events, "t.trace", NULL);
    ok(same_output(&a, &b) && a.status == 0 && a.err_len == 0, "without --rotated: every piece, as --rotated, silently");
    tu_run_free(&a);
    tu_run_free(&b);
    run_in(&a, rot, "stats", "--format=json", "--no-rotated", events, "t.trace", NULL);
    ok(a.status == 0 && a.out && strstr(a.out, "\"events\":10,"), "--no-rotated: the first piece alone");
    tu_run_free(&a);

    /* rotate-keep removed the first two pieces. */
    const char *gap = subdir("gap"), *gapone = subdir("gapone");
    snprintf(base, sizeof base, "%s/t.trace", gap);
    snprintf(onef, sizeof onef, "%s/t.trace", gapone);
    ok(rot_write(base, p, 2, ROT_N) && rot_write_concat(onef, p, 2, ROT_N), "pieces 2 and 3 only (a rotate-keep gap)");
    compare_print(gap, gapone, NULL, NULL, "from t.trace.2");
    compare_stats(gap, gapone, "--format=json", "from t.trace.2");
}

/* --- errors ------------------------------------------------------------------------------------- */

/* Pieces with piece k replaced by d[0..n), and the one-file equivalent of the same bytes. */
static void write_bad(const char *rot, const char *one, const struct tbuf *p, unsigned k, const uint8_t *d, size_t n)
{
    struct tbuf q[ROT_N];
    memcpy(q, p, sizeof q);
    q[k].d = (uint8_t *)d;
    q[k].n = n;
    char base[4096], onef[4096];
    snprintf(base, sizeof base, "%s/t.trace", rot);
    snprintf(onef, sizeof onef, "%s/t.trace", one);
    rot_write(base, q, 0, ROT_N);
    rot_write_concat(onef, q, 0, ROT_N);
}

static void test_bad_pieces(const struct tbuf *p)
{
    const char *bad = subdir("bad"), *badone = subdir("badone");
    uint8_t *d = malloc(p[1].n);
    memcpy(d, p[1].d, p[1].n);
    size_t at = p[1].rec_off[3];
    memset(d + at + 24, 0, 4); /* a record length below the minimum */
    write_bad(bad, badone, p, 1, d, p[1].n);
    struct tu_run a, b;
    run_in(&a, bad, "print", "--rotated", events, "t.trace", NULL);
    run_in(&b, badone, "print", events, "t.trace", NULL);
    char want[256];
    snprintf(want, sizeof want, "simpletrace print: t.trace.1: byte offset %zu, record ", at);
    ok(same_output(&a, &b) && a.status == 1 && a.err && !strncmp(a.err, want, strlen(want)) &&
           !strcmp(what(a.err), what(b.err)),
       "corrupt middle piece: the lines before, then exit 1 and %s", a.err ? a.err : "");
    tu_run_free(&a);
    tu_run_free(&b);
    run_in(&a, bad, "stats", "--rotated", events, "t.trace", NULL);
    snprintf(want, sizeof want, "simpletrace stats: t.trace.1: byte offset %zu, record ", at);
    ok(a.status == 1 && a.err && !strncmp(a.err, want, strlen(want)), "stats: exit 1, %s", a.err ? a.err : "");
    tu_run_free(&a);
    run_in(&a, bad, "export", "--rotated", "-o", "bad.json", events, "t.trace", NULL);
    snprintf(want, sizeof want, "simpletrace export: t.trace.1: byte offset %zu, record ", at);
    struct stat st;
    ok(a.status == 1 && a.err && !strncmp(a.err, want, strlen(want)) &&
           strstr(a.err, "\nsimpletrace export: bad.json holds the records before that point\n") &&
           stat("bad/bad.json", &st) == 0,
       "export: exit 1, the records before the damage written, and said so: %s", a.err ? a.err : "");
    tu_run_free(&a);
    free(d);

    /* The last piece cut inside a record: as a cut single file. */
    const char *cut = subdir("cut"), *cutone = subdir("cutone");
    at = p[3].rec_off[8];
    write_bad(cut, cutone, p, 3, p[3].d, at + 20);
    run_in(&a, cut, "print", "--rotated", events, "t.trace", NULL);
    run_in(&b, cutone, "print", events, "t.trace", NULL);
    snprintf(want, sizeof want, "simpletrace print: t.trace.3: byte offset %zu, record ", at);
    ok(same_output(&a, &b) && a.status == 1 && b.status == 1 && a.err && !strncmp(a.err, want, strlen(want)) &&
           !strcmp(what(a.err), what(b.err)),
       "last piece cut: the same lines as the cut file, exit 1, %s", a.err ? a.err : "");
    tu_run_free(&a);
    tu_run_free(&b);
}

static void test_usage(void)
{
    static const char *const cmds[] = {"print", "stats", "export"};
    for (size_t i = 0; i < 3; i++) {
        struct tu_run a;
        if (i == 2)
            run_in(&a, top, cmds[i], "--rotated", "-o", "x.json", events, "-", NULL);
        else
            run_in(&a, top, cmds[i], "--rotated", events, "-", NULL);
        ok(a.status == 2 && a.err && strstr(a.err, "--rotated") && strstr(a.err, "--help"),
           "%s --rotated -: usage error, exit 2", cmds[i]);
        tu_run_free(&a);
        run_in(&a, top, cmds[i], "--help", NULL);
        ok(a.status == 0 && a.out && strstr(a.out, "--rotated") && strstr(a.out, "TRACE-FILE.1"),
           "%s --help documents --rotated", cmds[i]);
        tu_run_free(&a);
    }
    struct tu_run a;
    run_in(&a, top, "print", "--rotated", events, "missing.trace", NULL);
    ok(a.status == 1 && a.err && strstr(a.err, "missing.trace: no such file, nor any piece missing.trace.N"),
       "no piece at all: exit 1, %s", a.err ? a.err : "");
    tu_run_free(&a);
}

/* --- the runtime's pieces ----------------------------------------------------------------------- */

/* Concatenates base's pieces [first, first+count) into the one-file equivalent at out. */
static bool concat_files(const char *base, unsigned first, unsigned count, const char *out)
{
    FILE *f = fopen(out, "wb");
    bool good = f != NULL;
    for (unsigned k = first; k < first + count && good; k++) {
        char path[4096];
        size_t n;
        rot_piece_path(path, sizeof path, base, k);
        char *d = tu_slurp(path, &n);
        size_t skip = k == first ? 0 : 24;
        good = d && n >= skip && fwrite(d + skip, 1, n - skip, f) == n - skip;
        free(d);
    }
    return f && !fclose(f) && good;
}

/* Runs the demo with SIMPLETRACE=config; returns the lowest piece of base and *count. */
static unsigned run_demo(const char *config, const char *base, unsigned *count)
{
    char *argv[] = {(char *)demo, "--workers", "2", "--jobs", "3000", NULL};
    struct tu_run r;
    setenv("SIMPLETRACE", config, 1);
    rd_run(argv, NULL, &r);
    unsetenv("SIMPLETRACE");
    if (r.status != 0)
        diag("demo: exit %d: %s", r.status, r.err ? r.err : "");
    tu_run_free(&r);
    unsigned first = 0;
    char path[4096];
    for (rot_piece_path(path, sizeof path, base, first); first < 1000 && access(path, F_OK) != 0;)
        rot_piece_path(path, sizeof path, base, ++first);
    *count = 0;
    while (rot_piece_path(path, sizeof path, base, first + *count), access(path, F_OK) == 0)
        ++*count;
    return first;
}

static void test_demo(void)
{
    const char *rt = subdir("rt"), *rtone = subdir("rtone");
    char saved[2048];
    snprintf(saved, sizeof saved, "%s", events);
    snprintf(events, sizeof events, "%s", demo_events);
    char base[4096], onef[4096], config[4200];
    snprintf(base, sizeof base, "%s/t.trace", rt);
    snprintf(onef, sizeof onef, "%s/t.trace", rtone);
    snprintf(config, sizeof config, "enable=*,file=%s,rotate=64K", base);
    unsigned count, first = run_demo(config, base, &count);
    ok(first == 0 && count >= 3 && concat_files(base, first, count, onef),
       "demo with rotate=64K: %u pieces from t.trace", count);
    compare_print(rt, rtone, NULL, NULL, "on the demo's pieces");
    compare_print(rt, rtone, "--timestamps=relative", NULL, "--timestamps=relative on the demo's pieces");
    compare_stats(rt, rtone, "--format=json", "on the demo's pieces");

    const char *keep = subdir("keep"), *keepone = subdir("keepone");
    snprintf(base, sizeof base, "%s/t.trace", keep);
    snprintf(onef, sizeof onef, "%s/t.trace", keepone);
    snprintf(config, sizeof config, "enable=*,file=%s,rotate=64K,rotate-keep=2", base);
    first = run_demo(config, base, &count);
    ok(first >= 2 && count == 2 && concat_files(base, first, count, onef),
       "demo with rotate-keep=2: pieces t.trace.%u and .%u remain", first, first + 1);
    compare_print(keep, keepone, NULL, NULL, "on the kept pieces");
    compare_stats(keep, keepone, "--format=text", "on the kept pieces");
    snprintf(events, sizeof events, "%s", saved);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s SIMPLETRACE_EXE DEMO_EXE DEMO_TRACE_EVENTS\n", argv[0]);
        return 2;
    }
    exe = argv[1];
    demo = argv[2];
    demo_events = argv[3];
    if (!rot_tmpdir(top, sizeof top, "cli") || chdir(top) != 0) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(events, sizeof events, "%s/trace-events", top);
    rot_write_file(events, rot_events_text, sizeof rot_events_text - 1);
    struct tbuf p[ROT_N];
    rot_build(p);
    test_built_pieces(p);
    test_bad_pieces(p);
    test_usage();
    test_demo();
    rot_free(p);
    rot_rmtree(top);
    return done_testing();
}
