/*
 * `simpletrace export --format=ctf`, read back by babeltrace2 (the
 * command, and its Python bindings as scripts and Trace Compass users
 * would) and compared with `simpletrace print --format=json` by
 * tests/export/check_ctf.py: every event's name, timestamp, typed fields,
 * the threads, the losses babeltrace2 reports, the wall-clock times.
 *
 *   test_export_ctf SIMPLETRACE EXPORT_APP BABELTRACE2 PYTHON3 BT2-PYTHON3 CRAFTED-EVENTS APP-EVENTS CHECKER
 *
 * BT2-PYTHON3 is a python3 that imports bt2 (Debian's python3-bt2 is for
 * /usr/bin/python3). An empty tool: not found at configure time; the tests
 * that need it fail with a message (CI installs them).
 */
#include "ex_util.h"

static const char *st_bin, *app_bin, *bt_bin, *py_bin, *bt2_py, *events, *app_events, *checker;

#define run_export(...) ex_run(st_bin, "export", __VA_ARGS__)

static bool tools(void)
{
    if (bt_bin[0] && py_bin[0] && bt2_py[0])
        return true;
    ok(0, "babeltrace2, python3 and python3-bt2 are installed (CI installs them)");
    return false;
}

/* Runs the checker in mode "cli" or "bt2"; its "ok ..." line, or NULL with diagnostics. */
static char *check(const char *mode, const char *dir, const char *json)
{
    struct tu_run r = strcmp(mode, "cli") == 0 ? ex_run(py_bin, checker, "cli", bt_bin, dir, json)
                                               : ex_run(bt2_py, checker, "bt2", dir, json);
    if (r.status != 0) {
        ex_show(mode, r.out, 5);
        ex_show(mode, r.err, 5);
        tu_run_free(&r);
        return NULL;
    }
    free(r.err);
    return r.out;
}

/* Both readers agree with print; returns the bt2 checker's line (caller frees) for more checks. */
static char *check_both(const char *what, const char *dir, const char *json)
{
    char *cli = check("cli", dir, json), *bt2 = check("bt2", dir, json);
    ok(cli != NULL, "%s: babeltrace2 reads it: every event, timestamp and field equals print --format=json", what);
    ok(bt2 != NULL, "%s: python3-bt2 reads it: the same, with field types, wall-clock times and pids", what);
    if (cli) /* events, empty strings babeltrace2 2.0.4 shows wrong (its bug), events discarded */
        diag("%s: babeltrace2: %s", what, cli);
    free(cli);
    return bt2;
}

/* --- crafted traces ------------------------------------------------------------------------ */

static void test_kinds(void)
{
    char *trace = ex_path("kinds.trace"), *out = ex_path("kinds.ctf"), *json = ex_path("kinds.json");
    ex_build_kinds(trace);
    struct tu_run r = run_export("--format=ctf", "-o", out, events, trace);
    ok(r.status == 0 && ex_has(r.err, " (ctf): 13 records, 2 threads"), "kinds: export --format=ctf succeeds");
    tu_run_free(&r);
    ok(ex_count_entries(out, "stream-") == 2 && ex_count_entries(out, "metadata") == 1,
       "kinds: a metadata file and one stream per thread");
    char path[4400];
    snprintf(path, sizeof path, "%s/metadata", out);
    char *meta = tu_slurp(path, NULL);
    ok(ex_has(meta, "/* CTF 1.8 */\n") &&
           ex_has(meta, "\t\tpointer_t _ptr;\n") && ex_has(meta, "\t\tbool_t _flag;\n") &&
           ex_has(meta, "\t\tstring _msg;\n") && ex_has(meta, "\t\tuint64_t _big;\n") &&
           ex_has(meta, "\t\tint64_t _neg;\n") && ex_has(meta, "name = \"Dropped_Event\""),
       "kinds: the metadata types each field as declared");
    free(meta);
    if (!tools())
        return;
    ex_print_json(st_bin, events, trace, json);
    char *l = check_both("kinds", out, json);
    free(l);
    /* The checker itself: a changed value must fail it. */
    char *bad = ex_path("kinds-bad.json");
    ex_write_altered(json, bad, "\"neg\":-5", '6');
    struct tu_run c = ex_run(py_bin, checker, "cli", bt_bin, out, bad);
    ok(c.status == 1 && ex_has(c.out, "error: thread 4002, note at 100013001000: neg = ('int', -5), want -6"),
       "checker: a wrong value fails it, naming thread, event, field and both values");
    tu_run_free(&c);
}

/* Every record is an event, paired or not: unmatched ones, dropped ones, those beyond --max-depth. */
static void test_odd(void)
{
    char *trace = ex_path("odd.trace"), *out = ex_path("odd.ctf"), *json = ex_path("odd.json");
    ex_build_odd(trace);
    struct tu_run r = run_export("--format=ctf", "-o", out, events, trace);
    ok(r.status == 0 && ex_has(r.err, "2 drop marks (7 records lost)"), "odd: export succeeds");
    tu_run_free(&r);
    if (tools()) {
        ex_print_json(st_bin, events, trace, json);
        char *l = check_both("odd", out, json);
        ok(l && ex_has(l, " 7\n"), "odd: babeltrace2 reports the 7 lost events from the packets' events_discarded");
        free(l);
    }
    char *deep = ex_path("deep.ctf"), *kinds = ex_path("kinds.trace"), *kjson = ex_path("kinds.json");
    r = run_export("--format=ctf", "--max-depth=1", "-o", deep, events, kinds);
    ok(r.status == 0 && ex_has(r.err, "begins too deep"), "depth: --max-depth=1 leaves calls out of the others");
    tu_run_free(&r);
    if (tools()) {
        char *l = check("cli", deep, kjson);
        ok(l != NULL, "depth: ... but CTF, which has no calls, keeps every record");
        free(l);
    }
}

/*
 * Babeltrace 2.0.4 shows some empty strings with the value the same field
 * had in an earlier event (its upstream bug; many events are needed to
 * see it): the checker allows exactly that, and counts it.
 */
static void test_empty_strings(void)
{
    char *trace = ex_path("empty.trace"), *out = ex_path("empty.ctf"), *json = ex_path("empty.json");
    struct ex_trace t;
    ex_begin_crafted(&t);
    for (unsigned i = 0; i < 4000; i++) {
        char s[16];
        int n = i % 3 ? 0 : snprintf(s, sizeof s, "s%u", i);
        struct ex_arg msg = {.str = s, .slen = (size_t)n};
        ex_ev(&t, NOTE, EX_T0 + i * EX_US, 4001, msg, EX_INT(i), EX_INT(-(int64_t)i), EX_INT(i & 1), EX_INT(i));
    }
    ex_save(&t, trace);
    struct tu_run r = run_export("--format=ctf", "-q", "-o", out, events, trace);
    is_int(r.status, 0, "empty strings: export succeeds");
    tu_run_free(&r);
    if (!tools())
        return;
    ex_print_json(st_bin, events, trace, json);
    free(check_both("empty strings", out, json));
}

/* A program traced by the runtime: pid, program and wall clock from its description. */
static void test_runtime(void)
{
    char *trace = ex_path("app.trace"), *out = ex_path("app.ctf"), *json = ex_path("app.json"), cfg[4400];
    snprintf(cfg, sizeof cfg, "enable=*,file=%s", trace);
    setenv("SIMPLETRACE", cfg, 1);
    struct tu_run app = ex_run(app_bin);
    unsetenv("SIMPLETRACE");
    long pid = 0;
    sscanf(app.out, "pid %ld", &pid);
    ok(app.status == 0 && pid > 0, "runtime: the traced program ran");
    tu_run_free(&app);
    struct tu_run r = run_export("--format=ctf", "-o", out, app_events, trace);
    ok(r.status == 0, "runtime: export succeeds");
    tu_run_free(&r);
    char path[4400], want[128];
    snprintf(path, sizeof path, "%s/metadata", out);
    char *meta = tu_slurp(path, NULL);
    snprintf(want, sizeof want, "\tprocesses = 1;\n\tprocess0 = \"export_app\";\n\tprocess0_pid = %ld;\n", pid);
    ok(ex_has(meta, want) && ex_has(meta, "\tprocess0_cmdline = \"") &&
           ex_has(meta, "offset from the trace's clock anchor"),
       "runtime: the env names the process, its pid and command line; the clock's offset comes from the anchor");
    free(meta);
    if (!tools())
        return;
    ex_print_json(st_bin, app_events, trace, json);
    free(check_both("runtime", out, json));
}

/* --- output safety -------------------------------------------------------------------------- */

static void test_errors(void)
{
    char *trace = ex_path("kinds.trace"), *cut = ex_path("cut.trace"), *out = ex_path("cut.ctf");
    ex_cut(trace, cut, 5);
    struct tu_run r = run_export("--format=ctf", "-o", out, events, cut);
    ok(r.status == 1 && ex_has(r.err, "byte offset ") && ex_has(r.err, "holds the records before that point") &&
           ex_exists(out) && ex_count_entries(ex_tmpdir, ".cut") == 0,
       "errors: a cut trace: exit 1 with the reader's message, the directory holds what came before, no temporary");
    tu_run_free(&r);

    char *dir = ex_path("kinds.ctf"), file[4400];
    snprintf(file, sizeof file, "%s/stream-1-1", dir);
    FILE *f = fopen(file, "w");
    fclose(f);
    r = run_export("--format=ctf", "-o", dir, events, trace);
    ok(r.status == 0 && !ex_exists(file) && ex_count_entries(dir, "stream-") == 2 &&
           ex_count_entries(ex_tmpdir, ".kinds") == 0,
       "errors: an existing CTF directory is replaced whole (a stale stream is gone)");
    tu_run_free(&r);
    snprintf(file, sizeof file, "%s/notes.txt", dir);
    f = fopen(file, "w");
    fclose(f);
    r = run_export("--format=ctf", "-o", dir, events, trace);
    ok(r.status == 1 && ex_has(r.err, "holds 'notes.txt', which is not a CTF trace's file") && ex_exists(file),
       "errors: a directory holding anything else is refused and left as it was");
    tu_run_free(&r);
    r = run_export("--format=ctf", "-o", "-", events, trace);
    ok(r.status == 2 && ex_has(r.err, "-o - is for chrome and folded only, not ctf"), "errors: -o - is a usage error");
    tu_run_free(&r);
}

int main(int argc, char **argv)
{
    if (argc != 9) {
        fprintf(stderr, "usage: test_export_ctf SIMPLETRACE APP BABELTRACE2 PYTHON3 BT2-PYTHON3 EVENTS APP-EVENTS "
                        "CHECKER\n");
        return 2;
    }
    st_bin = argv[1], app_bin = argv[2], bt_bin = argv[3], py_bin = argv[4], bt2_py = argv[5];
    events = argv[6], app_events = argv[7], checker = argv[8];
    ex_make_tmpdir("ctf");
    test_kinds();
    test_odd();
    test_empty_strings();
    test_runtime();
    test_errors();
    ex_rm_rf(ex_tmpdir);
    return done_testing();
}
