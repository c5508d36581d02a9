/*
 * `simpletrace export` on hand-crafted v4 traces with known timestamps,
 * read back by the real uftrace (replay, report, graph, info, dump
 * --chrome) and by python3's json module (tests/export/check_chrome.py).
 *
 *   test_export_cli SIMPLETRACE UFTRACE PYTHON3 CRAFTED-EVENTS CHECKER FIXTURES
 *
 * UFTRACE or PYTHON3 empty: not found at configure time; the tests that
 * need them fail with a message (CI installs both).
 *
 * Times: T0 = 100 s, MS = 1 ms; every expectation below is computed from
 * the timestamps the trace is built with.
 */
#include "ex_util.h"

#include <ctype.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>

#define T0 UINT64_C(100000000000)
#define MS UINT64_C(1000000)
#define US UINT64_C(1000)


static const char *st_bin, *uft_bin, *py_bin, *events, *checker, *fixtures;


static bool need(const char *bin, const char *what)
{
    if (bin && *bin)
        return true;
    ok(0, "%s is installed (configure found none; CI installs it)", what);
    return false;
}

/* Output lines with runs of blanks squeezed to one space and leading blanks cut. */
static char *squeeze(const char *text)
{
    char *out = malloc(strlen(text) + 1), *o = out;
    bool bol = true, blank = false;
    for (const char *p = text; *p; p++) {
        if (*p == '\n') {
            *o++ = '\n';
            bol = true;
            blank = false;
        } else if (*p == ' ' || *p == '\t') {
            blank = !bol;
        } else {
            if (blank)
                *o++ = ' ';
            blank = bol = false;
            *o++ = *p;
        }
    }
    *o = '\0';
    return out;
}

/* Runs `uftrace SUB [OPT] -d DIR` and returns its squeezed stdout (stderr in *err if err). */
static char *uft(const char *sub, const char *opt, const char *dir, int *status)
{
    struct tu_run r = opt ? ex_run(uft_bin, sub, opt, "-d", dir) : ex_run(uft_bin, sub, "-d", dir);
    if (status)
        *status = r.status;
    if (r.status != 0)
        ex_show(sub, r.err, 10);
    char *s = squeeze(r.out);
    tu_run_free(&r);
    return s;
}

/* Runs the checker on a JSON file; its listing, or NULL (with diagnostics) if it failed. */
static char *chrome_listing(const char *json)
{
    struct tu_run r = ex_run(py_bin, checker, json);
    if (r.status != 0) {
        ex_show("check_chrome", r.out, 5);
        ex_show("check_chrome", r.err, 5);
        tu_run_free(&r);
        return NULL;
    }
    free(r.err);
    return r.out;
}

/* Compares text with want line by line, showing the first difference. */
static void same_text(const char *got, const char *want, const char *what)
{
    if (!ok(got && strcmp(got, want) == 0, "%s", what)) {
        ex_show("got ", got ? got : "(nothing)", 40);
        ex_show("want", want, 40);
    }
}

/* Runs the export; its result (the caller frees it). */
#define run_export(...) ex_run(st_bin, "export", __VA_ARGS__)

/* --- 1. nested calls on two threads ------------------------------------------------------ */

/*
 * 4001: outer[1.0-9.0] { inner[1.5-6.0] { leaf[2.0-3.0]; leaf[3.5-4.5] }; note @6.2; leaf[6.5-7.5] }
 * 4002: outer[12.5-18.0] { inner[13.0-17.0] { leaf[14.0-16.0] } }    (after 4001: replay is sequential)
 * Expected (report): outer 2 calls 13.5 ms total, 4.0 ms self; inner 2, 8.5 / 4.5; leaf 4, 5.0 / 5.0.
 */
static void build_nested(const char *path)
{
    struct ex_trace t;
    ex_begin_crafted(&t);
    ex_ev(&t, OUTER_START, T0 + 1 * MS, 4001, EX_INT(1));
    ex_ev(&t, INNER_BEGIN, T0 + 1 * MS + 500 * US, 4001, EX_INT(7));
    ex_ev0(&t, LEAF_ENTER, T0 + 2 * MS, 4001);
    ex_ev(&t, LEAF_EXIT, T0 + 3 * MS, 4001, EX_INT(-1));
    ex_ev0(&t, LEAF_ENTER, T0 + 3 * MS + 500 * US, 4001);
    ex_ev(&t, LEAF_EXIT, T0 + 4 * MS + 500 * US, 4001, EX_INT(-2));
    ex_ev0(&t, INNER_END, T0 + 6 * MS, 4001);
    /* Strings: UTF-8 kept, an invalid byte, a quote, a control character; integers at 2^64-1 and -2^63. */
    ex_ev(&t, NOTE, T0 + 6 * MS + 200 * US + 1, 4001, EX_STR("caf\xc3\xa9 \xff \"q\" \x01"), EX_INT(UINT64_MAX),
          EX_INT(INT64_MIN), EX_INT(1), EX_INT(0xdeadbeef));
    ex_ev0(&t, LEAF_ENTER, T0 + 6 * MS + 500 * US, 4001);
    ex_ev(&t, LEAF_EXIT, T0 + 7 * MS + 500 * US, 4001, EX_INT(0));
    ex_ev(&t, OUTER_DONE, T0 + 9 * MS, 4001, EX_INT(1));
    ex_ev(&t, OUTER_START, T0 + 12 * MS + 500 * US, 4002, EX_INT(2));
    ex_ev(&t, INNER_BEGIN, T0 + 13 * MS, 4002, EX_INT(8));
    /* 2^53 is exact as a JSON number, 2^53 + 1 is not. */
    ex_ev(&t, NOTE, T0 + 13 * MS + 999, 4002, EX_STR(""), EX_INT(UINT64_C(1) << 53), EX_INT(-(INT64_C(1) << 53)),
          EX_INT(0), EX_INT(0));
    ex_ev(&t, NOTE, T0 + 13 * MS + 1000, 4002, EX_STR("x"), EX_INT((UINT64_C(1) << 53) + 1),
          EX_INT(-(INT64_C(1) << 53) - 1), EX_INT(0), EX_INT(0));
    ex_ev0(&t, LEAF_ENTER, T0 + 14 * MS, 4002);
    ex_ev(&t, LEAF_EXIT, T0 + 16 * MS, 4002, EX_INT(3));
    ex_ev0(&t, INNER_END, T0 + 17 * MS, 4002);
    ex_ev(&t, OUTER_DONE, T0 + 18 * MS, 4002, EX_INT(2));
    ex_save(&t, path);
}

static void nested_uftrace(const char *trace, const char *dir)
{
    struct tu_run r = run_export("--format=uftrace", "-o", dir, events, trace);
    is_int(r.status, 0, "nested: export to uftrace succeeds");
    ok(ex_has(r.err, ": 19 records, 2 threads: 8 calls of 3 functions, 3 instant events, 0 drop marks") &&
           !ex_has(r.err, "unmatched") && ex_has(r.err, "left out: the arguments of instant events"),
       "nested: the summary counts 8 calls of 3 functions, 3 instant events, nothing unmatched");
    ok(!ex_has(r.err, "\r"), "nested: no progress line when stderr is not a terminal");
    ex_show("summary", r.err, 3);
    tu_run_free(&r);
    if (!need(uft_bin, "uftrace"))
        return;

    int st;
    char *report = uft("report", NULL, dir, &st);
    same_text(report,
              "Total time Self time Calls Function\n"
              "========== ========== ========== ====================\n"
              "13.500 ms 4.000 ms 2 outer\n"
              "8.500 ms 4.500 ms 2 inner\n"
              "5.000 ms 5.000 ms 4 leaf\n",
              "nested: uftrace report: names, call counts, total and self times from the timestamps");
    free(report);

    char *replay = uft("replay", NULL, dir, &st);
    same_text(replay,
              "# DURATION TID FUNCTION\n"
              "[ 4001] | outer() {\n"
              "[ 4001] | inner() {\n"
              "1.000 ms [ 4001] | leaf();\n"
              "1.000 ms [ 4001] | leaf();\n"
              "4.500 ms [ 4001] | } /* inner */\n"
              "[ 4001] | /* simpletrace:note */\n"
              "1.000 ms [ 4001] | leaf();\n"
              "8.000 ms [ 4001] | } /* outer */\n"
              "[ 4002] | outer() {\n"
              "[ 4002] | inner() {\n"
              "[ 4002] | /* simpletrace:note */\n"
              "[ 4002] | /* simpletrace:note */\n"
              "2.000 ms [ 4002] | leaf();\n"
              "4.000 ms [ 4002] | } /* inner */\n"
              "5.500 ms [ 4002] | } /* outer */\n",
              "nested: uftrace replay: nesting order, leaves, durations, instant events by name");
    free(replay);

    char *graph = uft("graph", NULL, dir, &st);
    ok(st == 0 && ex_has(graph, "13.500 ms : (2) outer\n8.500 ms : +-(2) inner\n4.000 ms : | (3) leaf\n") &&
           ex_has(graph, "1.000 ms : +-(1) leaf\n"),
       "nested: uftrace graph: outer -> inner -> leaf (3 calls), outer -> leaf (1 call)");
    if (!ex_has(graph, "(2) outer"))
        ex_show("graph", graph, 20);
    free(graph);

    char *info = uft("info", NULL, dir, &st);
    /* The trace does not say which program wrote it: neither the exe image nor the tasks are the trace file. */
    ok(st == 0 && ex_has(info, "# number of tasks : 2\n") &&
           ex_has(info, "# task list : 4001(unknown-program), 4002(unknown-program)\n") &&
           ex_has(info, "# exe image : /simpletrace/unknown-program\n") && ex_has(info, "nested.trace\n") &&
           ex_has(info, "# program version : simpletrace export") && ex_has(info, "# elapsed time : 0.017000000 sec"),
       "nested: uftrace info: the program unknown, tasks by thread id, the trace in the cmdline, our version, "
       "the trace's duration");
    if (!ex_has(info, "number of tasks"))
        ex_show("info", info, 20);
    free(info);

    struct tu_run d = ex_run(uft_bin, "dump", "--chrome", "-d", dir);
    char *dump_json = ex_path("nested-dump.json");
    FILE *f = fopen(dump_json, "w");
    fputs(d.out, f);
    fclose(f);
    ok(d.status == 0, "nested: uftrace dump --chrome succeeds");
    tu_run_free(&d);
    if (need(py_bin, "python3")) {
        char *l = chrome_listing(dump_json);
        ok(l && ex_count(l, " B ") == 8 && ex_count(l, " E ") == 8 && ex_has(l, "4002 B outer 100012500.000"),
           "nested: uftrace dump --chrome is valid JSON with 8 balanced calls at the recorded times");
        free(l);
    }
}

static void nested_chrome(const char *trace, const char *json)
{
    struct tu_run r = run_export("--format=chrome", "-o", json, events, trace);
    is_int(r.status, 0, "nested: export to chrome succeeds");
    ok(!ex_has(r.err, "names only"), "nested: chrome keeps the arguments of instant events");
    tu_run_free(&r);
    size_t len;
    char *raw = tu_slurp(json, &len);
    ok(ex_has(raw, "\"msg\":\"caf\xc3\xa9 \\u00ff \\\"q\\\" \\u0001\""),
       "nested: strings keep valid UTF-8, escape the invalid byte, the quote and the control character");
    ok(ex_has(raw, "\"ts\":100006200.001,") && ex_has(raw, "\"ts\":100013000.999,"),
       "nested: ts is the ns timestamp as microseconds with three exact decimals");
    free(raw);
    if (!need(py_bin, "python3"))
        return;
    char *l = chrome_listing(json);
    same_text(l,
              "4001 M thread_name - {\"name\":\"thread 4001\"}\n"
              "4001 B outer 100001000.000 {\"n\":1}\n"
              "4001 B inner 100001500.000 {\"x\":7}\n"
              "4001 B leaf 100002000.000 {}\n"
              "4001 E leaf 100003000.000 {\"r\":-1}\n"
              "4001 B leaf 100003500.000 {}\n"
              "4001 E leaf 100004500.000 {\"r\":-2}\n"
              "4001 E inner 100006000.000 {}\n"
              "4001 i note 100006200.001 {\"msg\":\"caf\\u00e9 \\u00ff \\\"q\\\" \\u0001\",\"big\":\"18446744073709551615\","
              "\"neg\":\"-9223372036854775808\",\"flag\":true,\"ptr\":\"0xdeadbeef\"}\n"
              "4001 B leaf 100006500.000 {}\n"
              "4001 E leaf 100007500.000 {\"r\":0}\n"
              "4001 E outer 100009000.000 {\"n\":1}\n"
              "4002 M thread_name - {\"name\":\"thread 4002\"}\n"
              "4002 B outer 100012500.000 {\"n\":2}\n"
              "4002 B inner 100013000.000 {\"x\":8}\n"
              "4002 i note 100013000.999 {\"msg\":\"\",\"big\":9007199254740992,\"neg\":-9007199254740992,"
              "\"flag\":false,\"ptr\":\"0x0\"}\n"
              "4002 i note 100013001.000 {\"msg\":\"x\",\"big\":\"9007199254740993\",\"neg\":\"-9007199254740993\","
              "\"flag\":false,\"ptr\":\"0x0\"}\n"
              "4002 B leaf 100014000.000 {}\n"
              "4002 E leaf 100016000.000 {\"r\":3}\n"
              "4002 E inner 100017000.000 {}\n"
              "4002 E outer 100018000.000 {\"n\":2}\n"
              "4001 M process_name - {\"name\":\"unknown-program (trace nested.trace)\"}\n"
              "ok 22\n",
              "nested: chrome JSON parses; B/E nest per thread with both records' arguments; "
              "integers exact (strings beyond 2^53), bools, pointers as hex strings");
    free(l);
}

static void test_nested(void)
{
    char *trace = ex_path("nested.trace");
    build_nested(trace);
    nested_uftrace(trace, ex_path("nested.data"));
    nested_chrome(trace, ex_path("nested.json"));

    /* Standard output: the same JSON. */
    struct tu_run r = run_export("--format=chrome", "-q", "-o", "-", events, trace);
    char *file = tu_slurp(ex_path("nested.json"), NULL);
    ok(r.status == 0 && strcmp(r.out, file) == 0 && r.err[0] == '\0',
       "nested: -o - writes the same JSON to standard output; -q prints nothing else");
    free(file);
    tu_run_free(&r);
}

/* --- 2. unmatched events -------------------------------------------------------------------- */

/*
 * 4001: inner_end @1 (no begin); outer[2-4] { inner[3-4, closed early by outer's end] }; leaf from 5,
 *       never ended; 4002: a note @9, the last record: the leaf is closed there (4 ms).
 */
static void test_unmatched(void)
{
    char *trace = ex_path("unmatched.trace"), *dir = ex_path("unmatched.data");
    struct ex_trace t;
    ex_begin_crafted(&t);
    ex_ev0(&t, INNER_END, T0 + 1 * MS, 4001);
    ex_ev(&t, OUTER_START, T0 + 2 * MS, 4001, EX_INT(1));
    ex_ev(&t, INNER_BEGIN, T0 + 3 * MS, 4001, EX_INT(1));
    ex_ev(&t, OUTER_DONE, T0 + 4 * MS, 4001, EX_INT(1));
    ex_ev0(&t, LEAF_ENTER, T0 + 5 * MS, 4001);
    ex_ev(&t, NOTE, T0 + 9 * MS, 4002, EX_STR("end"), EX_INT(0), EX_INT(0), EX_INT(0), EX_INT(0));
    ex_save(&t, trace);

    struct tu_run r = run_export("-o", dir, events, trace);
    ok(r.status == 0 && ex_has(r.err, "; unmatched: 1 end without a begin (kept as an instant event), 1 begin never "
                                      "ended (closed at the end of the trace), 1 call closed early by the end of an "
                                      "outer one; left out"),
       "unmatched: the summary counts each case");
    tu_run_free(&r);
    if (need(uft_bin, "uftrace")) {
        char *report = uft("report", NULL, dir, NULL);
        ok(ex_has(report, "4.000 ms 4.000 ms 1 leaf\n") && ex_has(report, "2.000 ms 1.000 ms 1 outer\n") &&
               ex_has(report, "1.000 ms 1.000 ms 1 inner\n"),
           "unmatched: uftrace report: the open leaf lasts to the trace's end, inner ends with outer");
        if (!ex_has(report, "leaf"))
            ex_show("report", report, 10);
        free(report);
        char *replay = uft("replay", "--event-full", dir, NULL);
        ok(ex_has(replay, "[ 4001] | /* simpletrace:inner_end */\n[ 4001] | outer() {\n"),
           "unmatched: the end without a begin is an event before the calls (replay --event-full)");
        free(replay);
    }
    char *json = ex_path("unmatched.json");
    r = run_export("-o", json, events, trace);
    is_int(r.status, 0, "unmatched: chrome export succeeds (format from the .json name)");
    tu_run_free(&r);
    if (need(py_bin, "python3")) {
        char *l = chrome_listing(json);
        ok(ex_has(l, "4001 i inner_end 100001000.000 {}\n4001 B outer 100002000.000 {\"n\":1}\n"
                     "4001 B inner 100003000.000 {\"x\":1}\n4001 E inner 100004000.000 {\"unfinished\":true}\n"
                     "4001 E outer 100004000.000 {\"n\":1}\n4001 B leaf 100005000.000 {}\n") &&
               ex_has(l, "4001 E leaf 100009000.000 {\"unfinished\":true}\n"
                         "4001 M process_name - {\"name\":\"unknown-program (trace unmatched.trace)\"}\nok "),
           "unmatched: chrome: instant for the lone end, frames we close marked unfinished, all balanced");
        if (!l)
            ok(0, "unmatched: chrome JSON checks");
        free(l);
    }
}

/* --- 3. dropped records ------------------------------------------------------------------------ */

static void test_dropped(void)
{
    char *trace = ex_path("dropped.trace"), *dir = ex_path("dropped.data");
    struct ex_trace t;
    ex_begin_crafted(&t);
    ex_ev(&t, OUTER_START, T0 + 1 * MS, 4001, EX_INT(1));
    ex_dropped(&t, T0 + 2 * MS, 4001, 5);
    ex_ev(&t, OUTER_DONE, T0 + 3 * MS, 4001, EX_INT(1));
    ex_dropped(&t, T0 + 4 * MS, 4003, 2);
    ex_save(&t, trace);
    struct tu_run r = run_export("-o", dir, events, trace);
    ok(r.status == 0 && ex_has(r.err, "2 drop marks (7 records lost)"), "dropped: the summary counts marks and losses");
    tu_run_free(&r);
    if (need(uft_bin, "uftrace")) {
        char *replay = uft("replay", NULL, dir, NULL);
        ok(ex_has(replay, "[ 4001] | outer() {\n[ 4001] | /* LOST 5 records!! */\n2.000 ms [ 4001] | } /* outer */\n"),
           "dropped: uftrace replay shows the LOST record with its count inside the call");
        free(replay);
        /* uftrace hides LOST records outside any call unless asked (--kernel-full). */
        replay = uft("replay", "--kernel-full", dir, NULL);
        ok(ex_has(replay, "[ 4003] | /* LOST 2 records!! */\n"),
           "dropped: replay --kernel-full shows the one outside calls, on its own thread");
        if (!ex_has(replay, "LOST"))
            ex_show("replay", replay, 10);
        free(replay);
    }
    char *json = ex_path("dropped.json");
    r = run_export("-o", json, events, trace);
    tu_run_free(&r);
    if (need(py_bin, "python3")) {
        char *l = chrome_listing(json);
        ok(ex_has(l, "4001 i dropped 100002000.000 {\"count\":5}\n") &&
               ex_has(l, "4003 i dropped 100004000.000 {\"count\":2}\n"),
           "dropped: chrome has a thread instant \"dropped\" with the count");
        free(l);
    }
}

/*
 * The trace does not record its process. The first record here is thread
 * 4002's and 4001 comes later, with events no thread could take (pid field
 * 0xffffffff): uftrace's session is 4001, the lowest thread id (the main
 * thread's id is the process id); Chrome groups under 4002, the first
 * record's (it streams), and says the process id is not recorded.
 */
static void test_process(void)
{
    char *trace = ex_path("process.trace"), *dir = ex_path("process.data"), *json = ex_path("process.json");
    struct ex_trace t;
    ex_begin_crafted(&t);
    ex_ev(&t, OUTER_START, T0 + 1 * MS, 4002, EX_INT(1));
    ex_ev(&t, OUTER_DONE, T0 + 2 * MS, 4002, EX_INT(1));
    ex_dropped(&t, T0 + 3 * MS, 0xffffffffu, 3);
    ex_ev(&t, OUTER_START, T0 + 4 * MS, 4001, EX_INT(2));
    ex_ev(&t, OUTER_DONE, T0 + 5 * MS, 4001, EX_INT(2));
    ex_save(&t, trace);
    struct tu_run r = run_export("-o", dir, events, trace);
    is_int(r.status, 0, "process: export to uftrace");
    tu_run_free(&r);
    if (need(uft_bin, "uftrace")) {
        char *info = uft("info", "--task", dir, NULL);
        ok(ex_has(info, "FS [ 4001] unknown-program") && !ex_has(info, "S [ 4002]"),
           "process: uftrace's session is the lowest thread id, 4001");
        if (!ex_has(info, "4001"))
            ex_show("info --task", info, 10);
        free(info);
    }
    r = run_export("-o", json, events, trace);
    is_int(r.status, 0, "process: export to chrome");
    tu_run_free(&r);
    if (need(py_bin, "python3")) {
        char *l = chrome_listing(json);
        ok(ex_has(l, "4294967295 M thread_name - {\"name\":\"lost events (no thread could record them)\"}\n") &&
               ex_has(l, "4002 M process_name - {\"name\":\"unknown-program (trace process.trace; process id not "
                         "recorded: grouped under thread 4002)\"}\n"),
           "process: chrome names the lost-events track, and says the grouping id is not the process id");
        if (!ex_has(l, "process_name"))
            ex_show("chrome", l, 20);
        free(l);
    }
}

/* A timestamp older than its thread's previous one is raised to it: uftrace needs time order per file. */
static void test_clamped(void)
{
    char *trace = ex_path("clamped.trace"), *dir = ex_path("clamped.data");
    struct ex_trace t;
    ex_begin_crafted(&t);
    ex_ev(&t, OUTER_START, T0 + 5 * MS, 4001, EX_INT(1));
    ex_ev0(&t, LEAF_ENTER, T0 + 3 * MS, 4001);
    ex_ev(&t, LEAF_EXIT, T0 + 6 * MS, 4001, EX_INT(0));
    ex_ev(&t, OUTER_DONE, T0 + 7 * MS, 4001, EX_INT(1));
    ex_save(&t, trace);
    struct tu_run r = run_export("-o", dir, events, trace);
    ok(r.status == 0 && ex_has(r.err, "simpletrace export: 1 timestamp went back within its thread and was raised\n"),
       "clamped: the summary says a timestamp was raised");
    tu_run_free(&r);
    if (need(uft_bin, "uftrace")) {
        int st;
        char *replay = uft("replay", NULL, dir, &st);
        ok(st == 0 && ex_has(replay, "1.000 ms [ 4001] | leaf();\n2.000 ms [ 4001] | } /* outer */\n") &&
               !ex_has(replay, "inverted"),
           "clamped: uftrace sees the leaf from 5 to 6 ms, no inverted time");
        free(replay);
    }
}

/* --- 4. depth limit, pairing rules, filters ------------------------------------------------------- */

static void test_depth(void)
{
    char *trace = ex_path("nested.trace"), *dir = ex_path("depth.data");
    struct tu_run r = run_export("--max-depth=2", "-o", dir, events, trace);
    ok(r.status == 0 && ex_has(r.err, "5 calls of 3 functions") &&
           ex_has(r.err, "unmatched: 3 begins too deep (left out, see --max-depth)"),
       "depth: --max-depth=2 leaves out the 3 leaves at depth 2 and counts them");
    tu_run_free(&r);
    if (need(uft_bin, "uftrace")) {
        char *report = uft("report", NULL, dir, NULL);
        same_text(report,
                  "Total time Self time Calls Function\n"
                  "========== ========== ========== ====================\n"
                  "13.500 ms 4.000 ms 2 outer\n"
                  "8.500 ms 8.500 ms 2 inner\n"
                  "1.000 ms 1.000 ms 1 leaf\n",
                  "depth: uftrace report: outer and inner with their full times, only the leaf at depth 1");
        free(report);
    }
}

static void test_pairs(void)
{
    char *trace = ex_path("pairs.trace");
    struct ex_trace t;
    ex_begin_crafted(&t);
    ex_ev(&t, LOCK_ACQ, T0 + 1 * MS, 7, EX_INT(0x10));
    ex_ev(&t, OUTER_START, T0 + 2 * MS, 7, EX_INT(1));
    ex_ev(&t, OUTER_DONE, T0 + 3 * MS, 7, EX_INT(1));
    ex_ev(&t, LOCK_REL, T0 + 4 * MS, 7, EX_INT(0x10));
    ex_ev0(&t, ORPHAN, T0 + 5 * MS, 7);
    ex_save(&t, trace);
    char *json = ex_path("pairs.json");
    struct {
        const char *rule, *second, *want;
    } cases[] = {
        {"--pair=lock_acquire:lock_release", NULL, "7 B lock 100001000.000"},
        {"--pair=*_acquire:*_release", NULL, "7 B lock 100001000.000"},
        {"--pair=lock_acquire:lock_release=mutex", NULL, "7 B mutex 100001000.000"},
        {"--pair=lock_*:lock_*", "--pair=*_acquire:*_release=held_*", "7 B held_lock 100001000.000"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct tu_run r = cases[i].second ? run_export(cases[i].rule, cases[i].second, "-o", json, events, trace)
                                          : run_export(cases[i].rule, "-o", json, events, trace);
        char *l = r.status == 0 && need(py_bin, "python3") ? chrome_listing(json) : NULL;
        ok(l && ex_has(l, cases[i].want) && ex_has(l, "7 B outer 100002000.000") &&
               ex_has(l, "7 i orphan_start 100005000.000"),
           "pairs: %s%s%s -> '%s'; outer_start/outer_done still pair; orphan_start (no orphan_done) is an instant",
           cases[i].rule, cases[i].second ? " " : "", cases[i].second ? cases[i].second : "", cases[i].want);
        if (i == 3)
            ok(ex_has(r.err, "warning: --pair=lock_*:lock_* pairs no declared events"), "pairs: a rule pairing nothing is named");
        free(l);
        tu_run_free(&r);
    }
    {
        struct tu_run r = run_export("--pair=never_a:never_b", "--pair=lock_acquire:lock_release",
                                     "--pair=never_c:never_d", "-o", json, events, trace);
        ok(r.status == 0 && ex_has(r.err, "warning: --pair=never_a:never_b pairs no declared events") &&
               ex_has(r.err, "warning: --pair=never_c:never_d pairs no declared events") &&
               !ex_has(r.err, "--pair=lock_acquire:lock_release pairs"),
           "pairs: each rule pairing nothing is named, not only the first");
        tu_run_free(&r);
    }
    struct tu_run r = run_export("--no-default-pairs", "-o", json, events, trace);
    char *l = r.status == 0 && py_bin[0] ? chrome_listing(json) : NULL;
    ok(l && ex_has(l, "7 i outer_start 100002000.000") && !ex_has(l, " B "),
       "pairs: --no-default-pairs makes every event an instant");
    free(l);
    tu_run_free(&r);
    const char *bad[] = {"--pair=lock", "--pair=a*:b", "--pair=a**:b**", "--pair=a:b:c", "--pair=a*:b*=x*y*"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        r = run_export(bad[i], "-o", json, events, trace);
        ok(r.status == 2 && ex_has(r.err, "bad pairing rule"), "pairs: %s is a usage error (exit 2)", bad[i]);
        tu_run_free(&r);
    }
}

/*
 * Names longer than uftrace reads: uftrace 0.13 reads an events.txt name into
 * 512 bytes with an unbounded %s, so a 600-byte event name crashed replay,
 * report and dump. Names are cut to 511 bytes, said in one line, and every
 * uftrace command reads the result. Here a 900-byte call name (a _enter /
 * _exit pair) and a 600-byte instant event, with a short call around them.
 */
static void test_long_names(void)
{
    char *te = ex_path("long.trace-events"), *trace = ex_path("long.trace"), *dir = ex_path("long.data");
    char call[901], inst[601], enter[920], leave[920];
    memset(call, 'c', 900);
    call[900] = '\0';
    memset(inst, 'i', 600);
    inst[600] = '\0';
    snprintf(enter, sizeof enter, "%s_enter", call);
    snprintf(leave, sizeof leave, "%s_exit", call);
    FILE *f = fopen(te, "w");
    if (f) {
        fprintf(f, "%s(void) \"in\"\n%s(void) \"out\"\n%s(int x) \"x %%d\"\nshort_enter(void) \"\"\n"
                   "short_exit(void) \"\"\n", enter, leave, inst);
        fclose(f);
    }
    struct ex_trace t;
    memset(&t, 0, sizeof t);
    ex_header(&t);
    const char *names[] = {enter, leave, inst, "short_enter", "short_exit"};
    for (unsigned i = 0; i < 5; i++)
        ex_mapping(&t, i, names[i]);
    ex_ev0(&t, 3, T0 + 1 * MS, 4001);
    ex_ev0(&t, 0, T0 + 2 * MS, 4001);
    ex_ev(&t, 2, T0 + 3 * MS, 4001, EX_INT(5));
    ex_ev0(&t, 1, T0 + 4 * MS, 4001);
    ex_ev0(&t, 4, T0 + 5 * MS, 4001);
    ex_save(&t, trace);
    struct tu_run r = run_export("--format=uftrace", "-o", dir, te, trace);
    ok(r.status == 0 && ex_has(r.err, "2 names longer than 511 bytes cut to that, ending in \"...\""),
       "long names: exported, the two names cut said in one line");
    tu_run_free(&r);
    char *evs = tu_slurp(ex_path("long.data/events.txt"), NULL);
    size_t longest = 0;
    for (char *line = evs; line && *line;) {
        char *nl = strchr(line, '\n'), *colon = strrchr(line, ':');
        size_t end = nl ? (size_t)(nl - line) : strlen(line);
        if (colon && (size_t)(colon - line) < end && end - (size_t)(colon - line) - 1 > longest)
            longest = end - (size_t)(colon - line) - 1;
        line = nl ? nl + 1 : line + end;
    }
    ok(longest == 511, "long names: the longest events.txt name is 511 bytes (%zu)", longest);
    free(evs);
    if (need(uft_bin, "uftrace")) {
        static const char *const subs[] = {"replay", "report", "graph", "dump", "info"};
        for (size_t i = 0; i < sizeof subs / sizeof *subs; i++) {
            int status = -1;
            char *out = uft(subs[i], NULL, dir, &status);
            ok(status == 0, "long names: uftrace %s reads the data (exit %d)", subs[i], status);
            free(out);
        }
        int status = -1;
        char *out = uft("dump", "--chrome", dir, &status);
        ok(status == 0, "long names: uftrace dump --chrome reads the data (exit %d)", status);
        free(out);
        char cut[520];
        snprintf(cut, sizeof cut, "%.508s...() {", call);
        out = uft("replay", NULL, dir, &status);
        ok(ex_has(out, "short() {") && ex_has(out, cut) && ex_has(out, "iiiiiiii..."),
           "long names: replay shows the calls and the event by their cut names");
        free(out);
    }
}

static void test_filters(void)
{
    char *trace = ex_path("nested.trace"), *dir = ex_path("filter.data");
    struct tu_run r = run_export("--tid=4002", "--events=*_start,*_done,inner_*", "-o", dir, events, trace);
    ok(r.status == 0 && ex_has(r.err, ": 4 records, 1 thread: 2 calls of 3 functions"),
       "filters: --tid and --events select records as print does");
    tu_run_free(&r);
    if (need(uft_bin, "uftrace")) {
        char *report = uft("report", NULL, dir, NULL);
        ok(ex_has(report, "5.500 ms 1.500 ms 1 outer\n4.000 ms 4.000 ms 1 inner\n") && !ex_has(report, "leaf"),
           "filters: uftrace report has thread 4002's outer and inner only");
        free(report);
    }
    /* Relative to the first record (T0 + 1 ms): [T0 + 12 ms, T0 + 16.5 ms] holds 4002's outer_start
     * to leaf_exit. */
    r = run_export("--from=11ms", "--to=15.5ms", "-o", ex_path("window.json"), events, trace);
    ok(r.status == 0 && ex_has(r.err, ": 6 records, 1 thread: 3 calls") && ex_has(r.err, "2 begins never ended"),
       "filters: --from/--to keep a window (the leaf ends inside it; outer and inner do not)");
    tu_run_free(&r);
}

/* --- 5. bad input, output safety -------------------------------------------------------------------- */

/* print's message with its prefix swapped: what export must say. */
static char *as_export_message(const char *print_err)
{
    const char *p = strstr(print_err, "simpletrace print: ");
    if (!p)
        return strdup(print_err);
    char *out = malloc(strlen(print_err) + 8);
    sprintf(out, "simpletrace export: %s", p + strlen("simpletrace print: "));
    return out;
}

static void test_fixtures(void)
{
    DIR *d = opendir(fixtures);
    if (!ok(d != NULL, "fixtures: %s readable", fixtures))
        return;
    char fevents[4300];
    snprintf(fevents, sizeof fevents, "%s/trace-events", fixtures);
    int checked = 0, failing = 0, partials = 0;
    bool all_same = true, all_clean = true;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".bin") != 0)
            continue;
        char bin[4300];
        snprintf(bin, sizeof bin, "%s/%s", fixtures, e->d_name);
        bool no_header = strncmp(e->d_name, "no_header", 9) == 0;
        struct tu_run p = no_header ? ex_run(st_bin, "print", "--no-header", fevents, bin)
                                    : ex_run(st_bin, "print", fevents, bin);
        char *want = as_export_message(p.err);
        /* Records before the error (print printed some): they are written, and a line says so. */
        bool partial = p.status != 0 && p.out[0];
        static const char *const outs[] = {"fixture.data", "fixture.json", "fixture.pftrace", "fixture.ctf"};
        static const char *const fmts[] = {"--format=uftrace", "--format=chrome", "--format=perfetto", "--format=ctf"};
        for (int fmt = 0; fmt < 4; fmt++) {
            char *out = ex_path(outs[fmt]);
            const char *f = fmts[fmt];
            struct tu_run x = no_header ? run_export(f, "-q", "--no-header", "-o", out, fevents, bin)
                                        : run_export(f, "-q", "-o", out, fevents, bin);
            char holds[4500];
            snprintf(holds, sizeof holds, "%ssimpletrace export: %s holds the records before that point\n", want, out);
            bool same = x.status == p.status && strcmp(x.err, partial ? holds : want) == 0;
            if (!same) {
                diag("%s %s: export %d, print %d", e->d_name, f, x.status, p.status);
                ex_show("export", x.err, 3);
                ex_show("want  ", want, 3);
            }
            all_same &= same;
            if (p.status != 0) {
                bool clean = ex_exists(out) == partial && ex_count_entries(ex_tmpdir, ".fixture") == 0;
                all_clean &= clean;
                failing += fmt == 0;
                partials += fmt == 0 && partial;
            }
            ex_rm_rf(out);
            tu_run_free(&x);
        }
        checked++;
        free(want);
        tu_run_free(&p);
    }
    closedir(d);
    ok(checked >= 10 && failing >= 3, "fixtures: %d edge-case traces tried, %d of them bad", checked, failing);
    ok(all_same, "fixtures: export to each format exits and reports exactly as print does (byte offset, record "
                 "number)");
    ok(all_clean && partials > 0 && partials < failing,
       "fixtures: after an error before any record nothing is left; after records (%d traces) the output holds "
       "them; never a temporary", partials);
}

static void test_truncated(void)
{
    char *trace = ex_path("cut.trace");
    size_t len;
    char *whole = tu_slurp(ex_path("nested.trace"), &len);
    FILE *f = fopen(trace, "wb");
    fwrite(whole, 1, len - 5, f);
    fclose(f);
    free(whole);
    char *dir = ex_path("cut.data");
    struct tu_run p = ex_run(st_bin, "print", events, trace);
    char *want = as_export_message(p.err);
    struct tu_run r = run_export("-q", "-o", dir, events, trace);
    char holds[4500];
    snprintf(holds, sizeof holds, "%ssimpletrace export: %s holds the records before that point\n", want, dir);
    ok(r.status == 1 && strcmp(r.err, holds) == 0 && ex_has(r.err, "byte offset ") && ex_has(r.err, "record 29"),
       "truncated: exit 1 with print's message (byte offset and record number of the cut record), then what the "
       "output holds");
    ex_show("error", r.err, 3);
    free(want);
    tu_run_free(&p);
    ok(ex_exists(dir) && ex_count_entries(ex_tmpdir, ".cut") == 0,
       "truncated: the directory holds what came before, no temporary left");
    tu_run_free(&r);
    r = run_export("-o", "-", events, trace);
    char *json = ex_path("cut-stdout.json");
    f = fopen(json, "w");
    fputs(r.out, f);
    fclose(f);
    char *l = r.status == 1 && py_bin[0] ? chrome_listing(json) : NULL;
    ok(l && ex_has(l, "4002 E inner 100017000.000 {}\n4002 E outer 100017000.000 {\"unfinished\":true}\n") &&
           ex_has(r.err, "simpletrace export: standard output holds the records before that point\n"),
       "truncated: JSON on standard output is closed: valid, the records before, open calls ended");
    free(l);
    tu_run_free(&r);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void test_output_dirs(void)
{
    char *trace = ex_path("nested.trace"), *dir = ex_path("old.data"), file[4400];
    mkdir(dir, 0755);
    snprintf(file, sizeof file, "%s/999.dat", dir);
    write_file(file, "stale");
    struct tu_run r = run_export("-o", dir, events, trace);
    ok(r.status == 0 && !ex_exists(file) && ex_count_entries(dir, "4001.dat") == 1 &&
           ex_count_entries(ex_tmpdir, ".old") == 0,
       "dirs: an existing directory of uftrace data is replaced whole (the stale file is gone)");
    tu_run_free(&r);

    snprintf(file, sizeof file, "%s/notes.txt", dir);
    write_file(file, "mine");
    r = run_export("-o", dir, events, trace);
    ok(r.status == 1 && ex_has(r.err, "holds 'notes.txt', which is not uftrace data; not replacing it") &&
           ex_exists(file) && ex_count_entries(dir, "4001.dat") == 1 && ex_count_entries(ex_tmpdir, ".old") == 0,
       "dirs: a directory holding anything else is refused and left untouched");
    tu_run_free(&r);

    r = run_export("-o", file, events, trace);
    ok(r.status == 1 && ex_has(r.err, "exists: Not a directory"), "dirs: a file in the way is refused");
    tu_run_free(&r);

    r = run_export("-o", "/nonexistent-dir/x.json", events, trace);
    ok(r.status == 1 && ex_has(r.err, "cannot create a file next to /nonexistent-dir/x.json"),
       "dirs: chrome output in a missing directory: exit 1 with a message");
    tu_run_free(&r);
    r = run_export("--format=uftrace", "-o", "-", events, trace);
    is_int(r.status, 2, "dirs: -o - with uftrace is a usage error");
    tu_run_free(&r);
}

/* --- 6. many threads, few open files ------------------------------------------------------------------ */

static void test_threads(void)
{
    enum { THREADS = 40, CALLS = 20 }; /* 640 bytes a thread: more than a thread holds without a file */
    char *trace = ex_path("threads.trace"), *dir = ex_path("threads.data");
    struct ex_trace t;
    ex_begin_crafted(&t);
    uint64_t ts = T0;
    for (int c = 0; c < CALLS; c++)
        for (int phase = 0; phase < 2; phase++)
            for (int k = 0; k < THREADS; k++)
                ex_ev(&t, phase ? OUTER_DONE : OUTER_START, ts += US, (uint32_t)(5000 + k), EX_INT(k));
    ex_save(&t, trace);
    struct tu_run r = run_export("--max-open-files=3", "-o", dir, events, trace);
    ok(r.status == 0 && ex_has(r.err, "40 threads: 800 calls"), "threads: 40 threads through 3 open files");
    tu_run_free(&r);
    bool sizes = true;
    for (int k = 0; k < THREADS; k++) {
        char dat[4400];
        struct stat st;
        snprintf(dat, sizeof dat, "%s/%d.dat", dir, 5000 + k);
        sizes &= stat(dat, &st) == 0 && st.st_size == 2 * CALLS * 16;
    }
    ok(sizes, "threads: every thread's .dat holds its 40 records (files closed and reopened for appending)");
    if (need(uft_bin, "uftrace")) {
        char *report = uft("report", NULL, dir, NULL);
        ok(ex_has(report, " 800 outer\n"), "threads: uftrace report counts 800 calls");
        free(report);
        char *info = uft("info", NULL, dir, NULL);
        ok(ex_has(info, "# number of tasks : 40\n"), "threads: uftrace info lists 40 tasks");
        free(info);
    }
}

/* --- 7. progress on a terminal, interruption -------------------------------------------------------- */

/* Writes n note records for thread 9 to fd. */
static void feed(int fd, uint64_t *ts, int n)
{
    struct ex_trace t = {0};
    for (int i = 0; i < n; i++)
        ex_ev(&t, NOTE, (*ts)++, 9, EX_STR("p"), EX_INT(i), EX_INT(0), EX_INT(0), EX_INT(0));
    ssize_t w = write(fd, t.buf, t.len);
    (void)w;
    free(t.buf);
}

/*
 * Runs an export reading a FIFO with stderr on a pseudo-terminal: 70000
 * records, a pause of 1.3 s (progress shows only after a second), then
 * 70000 more. With interrupt, SIGINT arrives during the pause.
 */
static void progress_run(bool interrupt, int *status, char **err, const char *out)
{
    char *fifo = ex_path("feed.fifo");
    unlink(fifo);
    mkfifo(fifo, 0600);
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    grantpt(master);
    unlockpt(master);
    char *slave_name = ptsname(master);
    pid_t pid = fork();
    if (pid == 0) {
        int slave = open(slave_name, O_RDWR);
        dup2(slave, 2);
        execl(st_bin, st_bin, "export", "-o", out, events, fifo, (char *)NULL);
        _exit(127);
    }
    int fd = open(fifo, O_WRONLY);
    struct ex_trace t;
    ex_begin_crafted(&t);
    ssize_t w = write(fd, t.buf, t.len);
    (void)w;
    free(t.buf);
    uint64_t ts = T0;
    feed(fd, &ts, 70000);
    struct timespec pause = {1, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    if (interrupt)
        kill(pid, SIGINT);
    feed(fd, &ts, 70000);
    close(fd);
    char *text = calloc(1, 1 << 16);
    size_t len = 0;
    ssize_t n;
    int st;
    waitpid(pid, &st, 0);
    fcntl(master, F_SETFL, O_NONBLOCK);
    while ((n = read(master, text + len, (1 << 16) - 1 - len)) > 0)
        len += (size_t)n;
    close(master);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    *err = text;
}

static void test_progress(void)
{
    int st;
    char *err, *out = ex_path("progress.json");
    progress_run(false, &st, &err, out);
    ok(st == 0 && ex_has(err, "\rsimpletrace export: 0.1M records") && ex_has(err, "\r\033[K") &&
           ex_has(err, "wrote ") && strstr(err, "\r\033[K") < strstr(err, "wrote "),
       "progress: on a terminal a records line appears, is cleared at the end, then the summary");
    if (st != 0 || !ex_has(err, "records"))
        ex_show("tty", err, 5);
    free(err);
    ex_rm_rf(out);
    progress_run(true, &st, &err, out);
    ok(st == 1 && ex_has(err, "simpletrace export: interrupted") && !ex_exists(out) &&
           ex_count_entries(ex_tmpdir, ".progress") == 0,
       "progress: SIGINT stops the export: exit 1, nothing left behind");
    free(err);
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: test_export_cli SIMPLETRACE UFTRACE PYTHON3 EVENTS CHECKER FIXTURES\n");
        return 2;
    }
    st_bin = argv[1];
    uft_bin = argv[2];
    py_bin = argv[3];
    events = argv[4];
    checker = argv[5];
    fixtures = argv[6];
    ex_make_tmpdir("cli");
    signal(SIGPIPE, SIG_IGN); /* the interrupted export stops reading its FIFO */
    test_nested();
    test_unmatched();
    test_dropped();
    test_clamped();
    test_process();
    test_depth();
    test_pairs();
    test_long_names();
    test_filters();
    test_fixtures();
    test_truncated();
    test_output_dirs();
    test_threads();
    test_progress();
    if (tap__failed == 0)
        ex_rm_rf(ex_tmpdir);
    else
        diag("files kept in %s", ex_tmpdir);
    return done_testing();
}
