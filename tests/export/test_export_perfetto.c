/*
 * `simpletrace export --format=perfetto`, read back by protoc with
 * Perfetto's own schema and compared with `simpletrace print
 * --format=json` by tests/export/check_perfetto.py (sequence flags,
 * interning, the incremental clock, tracks, then every event, timestamp
 * and typed argument).
 *
 *   test_export_perfetto SIMPLETRACE EXPORT_APP PROTOC PYTHON3 CRAFTED-EVENTS APP-EVENTS CHECKER PROTO
 *
 * PROTOC or PYTHON3 empty: not found at configure time; the tests that
 * need them fail with a message (CI installs both).
 */
#include "ex_util.h"

static const char *st_bin, *app_bin, *protoc, *py_bin, *events, *app_events, *checker, *proto;

static bool tools(void)
{
    if (protoc[0] && py_bin[0])
        return true;
    ok(0, "protoc and python3 are installed (configure found %s%s; CI installs them)", protoc[0] ? "" : "no protoc ",
       py_bin[0] ? "" : "no python3");
    return false;
}

/* Runs the checker; its output (listing and "ok ..."), or NULL with diagnostics when it failed. */
static char *check(const char *pftrace, const char *json, const char *pair1, const char *pair2)
{
    struct tu_run r = pair2   ? ex_run(py_bin, checker, protoc, proto, pftrace, json, pair1, pair2)
                      : pair1 ? ex_run(py_bin, checker, protoc, proto, pftrace, json, pair1)
                              : ex_run(py_bin, checker, protoc, proto, pftrace, json);
    if (r.status != 0) {
        const char *e = strstr(r.out, "error: ");
        ex_show("check_perfetto", e ? e : r.out, 5);
        ex_show("check_perfetto", r.err, 5);
        tu_run_free(&r);
        return NULL;
    }
    free(r.err);
    return r.out;
}

/* protoc's text of pftrace (for looking at exact fields). */
static char *decode(const char *pftrace)
{
    char cmd[9000];
    const char *slash = strrchr(proto, '/');
    snprintf(cmd, sizeof cmd, "%s --decode=perfetto.protos.Trace -I %.*s %s < %s", protoc,
             slash ? (int)(slash - proto) : 1, slash ? proto : ".", proto, pftrace);
    struct tu_run r = ex_run("/bin/sh", "-c", cmd);
    free(r.err);
    return r.out;
}

#define run_export(...) ex_run(st_bin, "export", __VA_ARGS__)

/* --- crafted traces ------------------------------------------------------------------------ */

static void test_nested(void)
{
    char *trace = ex_path("nested.trace"), *out = ex_path("nested.pftrace"), *json = ex_path("nested.json");
    ex_build_kinds(trace);
    struct tu_run r = run_export("--format=perfetto", "--pair=lock_acquire:lock_release", "-o", out, events, trace);
    ok(r.status == 0 && ex_has(r.err, "wrote ") && ex_has(r.err, " (perfetto): 13 records, 2 threads: 5 calls"),
       "nested: export --format=perfetto succeeds; the summary names the format");
    ex_show("summary", r.err, 2);
    tu_run_free(&r);
    r = run_export("-q", "--pair=lock_acquire:lock_release", "-o", ex_path("by-name.pftrace"), events, trace);
    size_t a, b;
    char *x = tu_slurp(out, &a), *y = tu_slurp(ex_path("by-name.pftrace"), &b);
    ok(r.status == 0 && a == b && a > 0 && memcmp(x, y, a) == 0, "nested: an output named *.pftrace means perfetto");
    free(x);
    free(y);
    tu_run_free(&r);
    if (!tools())
        return;
    ex_print_json(st_bin, events, trace, json);
    char *l = check(out, json, "lock_acquire=B:lock", "lock_release=E:lock");
    ok(l && ex_has(l, "\nok "), "nested: protoc decodes every packet; flags, interning, clock, tracks and every "
                                "event, timestamp and typed argument equal print --format=json");
    ok(ex_has(l, "4001 100006200001 INSTANT note msg=string:caf\xc3\xa9 \xc3\xbf \"q\" \x01,big=uint:18446744073709551615,"
                 "neg=int:-9223372036854775808,flag=bool:True,ptr=pointer:3735928559\n"),
       "nested: note's arguments typed as declared: string (invalid byte as U+00FF), uint64 2^64-1, int64 "
       "INT64_MIN, bool, pointer");
    if (!ok(ex_has(l, "4002 100014000000 SLICE_BEGIN lock m=pointer:16\n"),
            "nested: --pair=lock_acquire:lock_release pairs them as calls of lock"))
        ex_show("listing", l, 30);
    free(l);
    char *text = decode(out);
    ok(ex_count(text, "first_packet_on_sequence: true") == 2 && ex_count(text, "sequence_flags: 1\n") == 2 &&
           ex_count(text, "name: \"note\"") == 2 && ex_count(text, "name: \"msg\"") == 2,
       "nested: one sequence per thread, each starting with cleared state and interning its own names once");
    ok(ex_has(text, "timestamp: 500000\n") && ex_has(text, "timestamp: 1\n"),
       "nested: timestamps are deltas on the thread's incremental clock (0.5 ms, then 1 ns)");
    ok(ex_has(text, "process_name: \"unknown-program (trace nested.trace)\"") &&
           ex_has(text, "thread_name: \"unknown-program\""),
       "nested: a trace without a description: unknown-program, as the other exports say");
    free(text);
    /* The checker itself: a value changed in print's records must fail it. */
    char *bad = ex_path("nested-bad.json");
    ex_write_altered(json, bad, "\"big\":18446744073709551615", '4');
    struct tu_run c = ex_run(py_bin, checker, protoc, proto, out, bad, "lock_acquire=B:lock", "lock_release=E:lock");
    ok(c.status == 1 && ex_has(c.out, "error: thread 4001, note at 100006200001: big = uint 18446744073709551615, "
                                      "want 18446744073709551614"),
       "checker: a wrong value fails it, naming thread, event, argument and both values");
    tu_run_free(&c);
}

/* Dropped records, the lost-events pseudo-thread, unmatched events and frames the exporter closes. */
static void test_unmatched(void)
{
    char *trace = ex_path("odd.trace"), *out = ex_path("odd.pftrace"), *json = ex_path("odd.json");
    ex_build_odd(trace);
    struct tu_run r = run_export("--format=perfetto", "-o", out, events, trace);
    ok(r.status == 0 && ex_has(r.err, "2 drop marks (7 records lost)"), "odd: export succeeds, counting the drops");
    tu_run_free(&r);
    if (!tools())
        return;
    ex_print_json(st_bin, events, trace, json);
    char *l = check(out, json, "inner_end=I:", "leaf_enter=B:leaf");
    ok(l && ex_has(l, "\nok ") && ex_has(l, " 2\n"), "odd: the checker agrees; 2 slice ends added by the exporter");
    ok(ex_has(l, "4001 100003000001 INSTANT dropped count=uint:5\n") &&
           ex_has(l, "4294967295 100004000000 INSTANT dropped count=uint:2\n"),
       "odd: dropped records are instants \"dropped\" with their count, on their thread or the lost-events track");
    ok(ex_has(l, "4001 100004000000 SLICE_END - unfinished=bool:True\n4001 100004000000 SLICE_END - n=int:1\n") &&
           ex_has(l, "4001 100009000000 SLICE_END - unfinished=bool:True\n"),
       "odd: a call closed early and one never ended end with unfinished=true (at the outer end, the trace's end)");
    free(l);
    char *text = decode(out);
    ok(ex_has(text, "name: \"lost events (no thread could record them)\"") && ex_has(text, "parent_uuid: 1\n"),
       "odd: the lost-events pseudo-thread is a named track under the process");
    free(text);
}

/* A program traced by the runtime: its description names the process; its clock anchor gives REALTIME. */
static void test_runtime(void)
{
    char *trace = ex_path("app.trace"), *out = ex_path("app.pftrace"), *json = ex_path("app.json");
    char cfg[4400];
    snprintf(cfg, sizeof cfg, "enable=*,file=%s", trace);
    setenv("SIMPLETRACE", cfg, 1);
    struct tu_run app = ex_run(app_bin);
    unsetenv("SIMPLETRACE");
    long pid = 0;
    sscanf(app.out, "pid %ld", &pid);
    ok(app.status == 0 && pid > 0, "runtime: the traced program ran");
    tu_run_free(&app);
    struct tu_run r = run_export("--format=perfetto", "-o", out, app_events, trace);
    ok(r.status == 0 && ex_has(r.err, "3 threads: 19 calls of 2 functions"), "runtime: export succeeds");
    tu_run_free(&r);
    if (!tools())
        return;
    ex_print_json(st_bin, app_events, trace, json);
    char *l = check(out, json, NULL, NULL);
    ok(l && ex_has(l, "\nok "), "runtime: the checker agrees (REALTIME equals print's wall time of each thread)");
    free(l);
    char *text = decode(out), want[128];
    snprintf(want, sizeof want, "process {\n      pid: %ld\n      cmdline: \"", pid);
    ok(ex_has(text, want) && ex_has(text, "export_app\"\n      process_name: \"export_app\"") &&
           ex_count(text, "thread_name: \"export_app\"") == 3 && ex_count(text, "clock_id: 1\n") == 3,
       "runtime: the process track has the recorded pid, command line and program; threads are named after it; "
       "each sequence states REALTIME");
    free(text);
}

/* --- output safety ------------------------------------------------------------------------------ */

static void test_errors(void)
{
    char *trace = ex_path("nested.trace"), *cut = ex_path("cut.trace"), *out = ex_path("cut.pftrace");
    ex_cut(trace, cut, 5);
    struct tu_run r = run_export("--format=perfetto", "-o", out, events, cut);
    ok(r.status == 1 && ex_has(r.err, "byte offset ") && ex_has(r.err, "holds the records before that point") &&
           ex_exists(out) && ex_count_entries(ex_tmpdir, ".cut") == 0,
       "errors: a cut trace: exit 1 with the reader's message, the output holds what came before, no temporary");
    tu_run_free(&r);
    r = run_export("--format=perfetto", "-o", "/nonexistent-dir/x.pftrace", events, trace);
    ok(r.status == 1 && ex_has(r.err, "cannot create a file next to /nonexistent-dir/x.pftrace"),
       "errors: an output in a missing directory: exit 1 with a message");
    tu_run_free(&r);
    r = run_export("--format=perfetto", "-o", "-", events, trace);
    ok(r.status == 2 && ex_has(r.err, "-o - is for chrome and folded only, not perfetto"), "errors: -o - is a usage error");
    tu_run_free(&r);
}

int main(int argc, char **argv)
{
    if (argc != 9) {
        fprintf(stderr, "usage: test_export_perfetto SIMPLETRACE APP PROTOC PYTHON3 EVENTS APP-EVENTS CHECKER PROTO\n");
        return 2;
    }
    st_bin = argv[1], app_bin = argv[2], protoc = argv[3], py_bin = argv[4], events = argv[5], app_events = argv[6];
    checker = argv[7], proto = argv[8];
    ex_make_tmpdir("perfetto");
    test_nested();
    test_unmatched();
    test_runtime();
    test_errors();
    ex_rm_rf(ex_tmpdir);
    return done_testing();
}
