/*
 * The reader parses trace-events files with the same parser as the
 * generator, so `simpletrace print` refuses a format that does not fit its
 * arguments with the message `simpletrace gen` gives, and still reads
 * QEMU's own catalogue (whose formats all fit) byte for byte as
 * simpletrace.py does.
 *
 * usage: test_events_print SIMPLETRACE SHARED-DIR
 */
#include "gen/gen_util.h"
#include "tap.h"

static const char bad_events[] = "# a format that crashes the log backend\n"
                                 "crash(int x) \"x %s\"\n";

/* Runs `simpletrace ARGS...` in dir; fills r. */
static void run(const char *exe, const char *dir, struct gu_result *r, char *a1, char *a2, char *a3, char *a4)
{
    char *argv[] = {(char *)exe, a1, a2, a3, a4, NULL};
    gu_run(argv, dir, r);
}

/* print and gen name the same FILE:LINE and say the same thing. */
static void test_bad_format(const char *exe, const char *shared, const char *scratch)
{
    char path[4096], trace[4096];
    snprintf(path, sizeof path, "%s/trace-events", scratch);
    snprintf(trace, sizeof trace, "%s/fixtures/qemu/check_qcow2.bin", shared);
    ok(gu_write_file(path, bad_events, sizeof bad_events - 1) == 0, "bad trace-events written");
    static const char message[] = "trace-events:2: Argument 1 'x' is int but '%s' wants a string\n";

    struct gu_result r;
    run(exe, scratch, &r, "print", "trace-events", trace, NULL);
    is_int(r.status, 1, "print: exit status 1");
    char print_message[sizeof message + 32];
    snprintf(print_message, sizeof print_message, "simpletrace print: %s", message);
    is_str(r.err, print_message, "print: the format error with FILE:LINE");
    is_str(r.out, "", "print: nothing printed");
    gu_result_free(&r);

    run(exe, scratch, &r, "gen", "--format=h", "--backends=log", "trace-events");
    is_int(r.status, 1, "gen: exit status 1");
    char gen_message[sizeof message + 32];
    snprintf(gen_message, sizeof gen_message, "simpletrace gen: %s", message);
    is_str(r.err, gen_message, "gen: the same message, after its own prefix");
    gu_result_free(&r);
}

/* QEMU's catalogue still reads: the text is simpletrace.py's. */
static void test_qemu_catalogue(const char *exe, const char *shared)
{
    char events[4096], trace[4096], expected_path[4096];
    snprintf(events, sizeof events, "%s/fixtures/qemu/trace-events-all", shared);
    snprintf(trace, sizeof trace, "%s/fixtures/qemu/check_qcow2.bin", shared);
    snprintf(expected_path, sizeof expected_path, "%s/fixtures/qemu/check_qcow2.expected.txt", shared);
    char *expected = gu_read_file(expected_path, NULL);
    struct gu_result r;
    run(exe, NULL, &r, "print", events, trace, NULL);
    is_int(r.status, 0, "print with QEMU's trace-events-all: exit 0");
    is_str(r.err, "", "no message");
    ok(expected && r.out && strcmp(r.out, expected) == 0, "output is simpletrace.py's, byte for byte");
    gu_result_free(&r);
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
        test_bad_format(exe, argv[2], scratch);
        gu_rm_rf(scratch);
    }
    test_qemu_catalogue(exe, argv[2]);
    free(scratch);
    free(exe);
    return done_testing();
}
