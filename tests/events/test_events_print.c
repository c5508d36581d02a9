/*
 * The reader parses trace-events files with the generator's parser, but
 * leniently (issue 21, "Read what QEMU reads"): QEMU's simpletrace.py
 * reads a file whose format does not fit its arguments (tracetool never
 * looks at formats), so `simpletrace print` reads it too, with one
 * warning per such event naming FILE:LINE, the default text unchanged and
 * `--format=log` showing that event's arguments instead of its format;
 * `simpletrace gen` still refuses it (the C would not compile
 * warning-free). QEMU's own catalogue (whose formats all fit) still reads
 * byte for byte as simpletrace.py does.
 *
 * usage: test_events_print SIMPLETRACE SHARED-DIR
 */
#include <stdint.h>

#include "gen/gen_util.h"
#include "tap.h"

/* Line 3: a compiled-out event with no conversion for x; line 4: a string the format never prints. */
static const char lenient_events[] = "# formats simpletrace.py reads and gen refuses\n"
                                     "fits(int n) \"n %d\"\n"
                                     "disable nh_never(int x) \"compiled out\"\n"
                                     "nh_odd(int x, const char *s) \"odd %d\"\n";

/* A format that crashes the log backend (%s of an int): read, never rendered. */
static const char crash_events[] = "# a format that crashes the log backend\n"
                                   "crash(int x) \"x %s\"\n";

/* Runs `simpletrace ARGS...` in dir; fills r. */
static void run(const char *exe, const char *dir, struct tu_run *r, char *a1, char *a2, char *a3, char *a4)
{
    char *argv[] = {(char *)exe, a1, a2, a3, a4, NULL};
    gu_run(argv, dir, r);
}

/* A v4 trace built by hand (no simpletrace code): little-endian words. */
struct tb {
    uint8_t d[1024];
    size_t n;
};

static void put(struct tb *b, const void *p, size_t n)
{
    memcpy(b->d + b->n, p, n);
    b->n += n;
}

static void put64(struct tb *b, uint64_t v)
{
    put(b, &v, 8);
}

static void put32(struct tb *b, uint32_t v)
{
    put(b, &v, 4);
}

static void mapping(struct tb *b, uint64_t id, const char *name)
{
    put64(b, 0);
    put64(b, id);
    put32(b, (uint32_t)strlen(name));
    put(b, name, strlen(name));
}

/* An event record of integer x and, when s, a string after it. */
static void record(struct tb *b, uint64_t id, uint64_t ts, uint64_t x, const char *s)
{
    uint32_t payload = 8 + (s ? 4 + (uint32_t)strlen(s) : 0);
    put64(b, 1);
    put64(b, id);
    put64(b, ts);
    put32(b, 24 + payload);
    put32(b, 4242);
    put64(b, x);
    if (s) {
        put32(b, (uint32_t)strlen(s));
        put(b, s, strlen(s));
    }
}

/* The number of times needle occurs in hay. */
static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; p && (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* print reads what gen refuses: the records, one warning per event, the log format's fallback. */
static void test_lenient(const char *exe, const char *scratch)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/trace-events", scratch);
    ok(gu_write_file(path, lenient_events, sizeof lenient_events - 1) == 0, "trace-events written");
    struct tb b = {.n = 0};
    put64(&b, UINT64_MAX);
    put64(&b, UINT64_C(0xf2b177cb0aa429b4));
    put64(&b, 4);
    mapping(&b, 0, "fits");
    mapping(&b, 1, "nh_odd");
    record(&b, 0, 1000, 7, NULL);
    record(&b, 1, 3000, 5, "hi");
    record(&b, 1, 4000, (uint64_t)-1, "");
    snprintf(path, sizeof path, "%s/t.trace", scratch);
    ok(gu_write_file(path, (const char *)b.d, b.n) == 0, "trace written");

    static const char warn_never[] = "trace-events:3: warning: event 'nh_never': Argument 1 'x' has no "
                                     "conversion: the format prints 0 of the 1 arguments (read anyway, as QEMU's "
                                     "simpletrace.py reads it: its format is not used, the log format shows its "
                                     "arguments instead; simpletrace gen refuses it)\n";
    static const char warn_odd[] = "trace-events:4: warning: event 'nh_odd': Argument 2 's' has no "
                                   "conversion: the format prints 1 of the 2 arguments (read anyway, as QEMU's "
                                   "simpletrace.py reads it: its format is not used, the log format shows its "
                                   "arguments instead; simpletrace gen refuses it)\n";
    char warnings[2 * sizeof warn_never + sizeof warn_odd];
    snprintf(warnings, sizeof warnings, "%s%s", warn_never, warn_odd);

    struct tu_run r;
    run(exe, scratch, &r, "print", "trace-events", "t.trace", NULL);
    is_int(r.status, 0, "print: exit 0");
    is_str(r.out,
           "fits 0.000 pid=4242 n=0x7\n"
           "nh_odd 2.000 pid=4242 x=0x5 s=b'hi'\n"
           "nh_odd 1.000 pid=4242 x=0xffffffffffffffff s=b''\n",
           "print: the default text, arguments shown as simpletrace.py shows them");
    is_str(r.err, warnings, "print: one warning per event naming FILE:LINE, in declaration order");
    tu_run_free(&r);

    run(exe, scratch, &r, "print", "--format=log", "trace-events", "t.trace");
    is_int(r.status, 0, "print --format=log: exit 0");
    is_str(r.out,
           "fits n 7\n"
           "nh_odd x=0x5 s=b'hi'\n"
           "nh_odd x=0xffffffffffffffff s=b''\n",
           "print --format=log: the format where it fits, NAME arg=VALUE... where it does not");
    is_int(count(r.err, "trace-events:3: warning:"), 1, "print --format=log: line 3 warned once");
    is_int(count(r.err, "trace-events:4: warning:"), 1, "print --format=log: line 4 warned once");
    tu_run_free(&r);

    run(exe, scratch, &r, "print", "--format=json", "trace-events", "t.trace");
    ok(r.status == 0 && strstr(r.out ? r.out : "", "\"args\":{\"x\":5,\"s\":\"hi\"}") != NULL,
       "print --format=json: typed by the declaration as ever");
    tu_run_free(&r);

    run(exe, scratch, &r, "gen", "--format=h", "--backends=log", "trace-events");
    is_int(r.status, 1, "gen: still refuses the file");
    is_str(r.err, "simpletrace gen: trace-events:3: Argument 1 'x' has no conversion: the format prints 0 of the 1 arguments\n",
           "gen: the error, with FILE:LINE and no warning");
    is_str(r.out, "", "gen: nothing written");
    tu_run_free(&r);
}

/* A format that would make the log backend crash: read with a warning, never handed to printf. */
static void test_bad_format(const char *exe, const char *shared, const char *scratch)
{
    char path[4096], trace[4096];
    snprintf(path, sizeof path, "%s/trace-events", scratch);
    snprintf(trace, sizeof trace, "%s/fixtures/qemu/check_qcow2.bin", shared);
    ok(gu_write_file(path, crash_events, sizeof crash_events - 1) == 0, "bad trace-events written");
    static const char message[] = "trace-events:2: Argument 1 'x' is int but '%s' wants a string";

    struct tu_run r;
    run(exe, scratch, &r, "print", "trace-events", trace, NULL);
    is_int(r.status, 1, "print: exit status 1 (the QEMU trace's events are not declared)");
    char warning[1024];
    snprintf(warning, sizeof warning, "trace-events:2: warning: event 'crash': %s",
             message + strlen("trace-events:2: "));
    ok(r.err && strncmp(r.err, warning, strlen(warning)) == 0, "print: the format's fault is a warning first");
    tu_run_free(&r);

    run(exe, scratch, &r, "gen", "--format=h", "--backends=log", "trace-events");
    is_int(r.status, 1, "gen: exit status 1");
    char gen_message[sizeof message + 32];
    snprintf(gen_message, sizeof gen_message, "simpletrace gen: %s\n", message);
    is_str(r.err, gen_message, "gen: the same message, after its own prefix");
    tu_run_free(&r);
}

/* QEMU's catalogue still reads: the text is simpletrace.py's. */
static void test_qemu_catalogue(const char *exe, const char *shared)
{
    char events[4096], trace[4096], expected_path[4096];
    snprintf(events, sizeof events, "%s/fixtures/qemu/trace-events-all", shared);
    snprintf(trace, sizeof trace, "%s/fixtures/qemu/check_qcow2.bin", shared);
    snprintf(expected_path, sizeof expected_path, "%s/fixtures/qemu/check_qcow2.expected.txt", shared);
    char *expected = tu_slurp(expected_path, NULL);
    struct tu_run r;
    run(exe, NULL, &r, "print", events, trace, NULL);
    is_int(r.status, 0, "print with QEMU's trace-events-all: exit 0");
    is_str(r.err, "", "no message");
    ok(expected && r.out && strcmp(r.out, expected) == 0, "output is simpletrace.py's, byte for byte");
    tu_run_free(&r);
    free(expected);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s SIMPLETRACE SHARED-DIR\n", argv[0]);
        return 2;
    }
    char *exe = gu_abspath(argv[1]);
    char *scratch = gu_mkdtemp();
    if (ok(scratch != NULL, "scratch directory")) {
        test_lenient(exe, scratch);
        test_bad_format(exe, argv[2], scratch);
        gu_rm_rf(scratch);
    }
    test_qemu_catalogue(exe, argv[2]);
    free(scratch);
    free(exe);
    return done_testing();
}
