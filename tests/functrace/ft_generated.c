/*
 * Generated tracepoints stay out of function tracing: ft_generated_app,
 * built with -finstrument-functions from code `simpletrace gen` wrote, runs
 * with its events enabled under libsimpletrace-func, and the real uftrace
 * must show its own functions with their call counts and nothing of
 * tracing's (trace_*, st__*, st_event_enabled: ST__NO_INSTRUMENT in
 * trace.h and in generated code). The events must have fired, in the trace
 * file and in the ftrace stand-in, or the check would prove nothing.
 *
 *   ft_generated UFTRACE SIMPLETRACE TRACE-EVENTS PROGRAM...
 *
 * Each PROGRAM is the same source at another optimisation level.
 */
#include "gen/gen_util.h"
#include "tap.h"

#define JOBS 4

static const char *uftrace_bin, *simpletrace_bin, *events_file;

/* Runs argv with the environment as it is now; fills r. */
static void run(const char *const *argv, struct tu_run *r)
{
    gu_run((char *const *)argv, NULL, r);
}

static long count_lines_starting(const char *text, const char *prefix)
{
    long n = 0;
    size_t len = strlen(prefix);
    for (const char *p = text; p && *p;) {
        n += strncmp(p, prefix, len) == 0;
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

/* A function of `uftrace report`: its name and calls. */
struct row {
    char name[256];
    long calls;
};

/* Parses the rows of `uftrace report` (total, self, calls, name); returns how many, at most max. */
static int report_rows(const char *text, struct row *rows, int max)
{
    int n = 0;
    for (const char *p = text; p && *p && n < max;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[512], u1[8], u2[8];
        double total, self;
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        if (sscanf(line, " %lf %7s %lf %7s %ld %255s", &total, u1, &self, u2, &rows[n].calls, rows[n].name) == 6)
            n++;
        p = nl ? nl + 1 : NULL;
    }
    return n;
}

static long calls_of(const struct row *rows, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0)
            return rows[i].calls;
    return 0;
}

/* True for a function of simpletrace's, which must never be recorded. */
static bool is_tracing_function(const char *name)
{
    return strncmp(name, "trace_", 6) == 0 || strncmp(name, "st__", 4) == 0 || strncmp(name, "st_", 3) == 0 ||
           strstr(name, "_nocheck__trace_") != NULL;
}

/* The events fired: three records per job in the trace file, two lines per job in the ftrace stand-in. */
static void check_events_fired(const char *what, const char *trace, const char *marker)
{
    const char *argv[] = {simpletrace_bin, "print", events_file, trace, NULL};
    struct tu_run r;
    run(argv, &r);
    is_int(r.status, 0, "%s: simpletrace print reads the trace", what);
    is_int(count_lines_starting(r.out, "ftg_"), 3 * JOBS, "%s: %d records in the trace file", what, 3 * JOBS);
    tu_run_free(&r);
    char *text = tu_slurp(marker, NULL);
    is_int(count_lines_starting(text, "ftg_job_start worker "), JOBS, "%s: ftrace lines of ftg_job_start", what);
    is_int(count_lines_starting(text, "ftg_lookup table "), JOBS, "%s: ftrace lines of ftg_lookup", what);
    free(text);
}

/* uftrace shows the program's functions, each as often as it ran, and no function of tracing. */
static void check_functions(const char *what, const char *dir)
{
    const char *report[] = {uftrace_bin, "report", "-d", dir, NULL};
    struct tu_run r;
    run(report, &r);
    struct row rows[64];
    int n = report_rows(r.out, rows, 64);
    ok(r.status == 0 && n > 0, "%s: uftrace report lists %d functions", what, n);
    is_int(calls_of(rows, n, "main"), 1, "%s: main once", what);
    is_int(calls_of(rows, n, "handle_job"), JOBS, "%s: handle_job per job", what);
    is_int(calls_of(rows, n, "checksum"), JOBS, "%s: checksum per job (under trace_ftg_lookup_enabled())", what);
    int tracing = 0;
    for (int i = 0; i < n; i++)
        if (is_tracing_function(rows[i].name)) {
            diag("%s: recorded %s (%ld calls)", what, rows[i].name, rows[i].calls);
            tracing++;
        }
    is_int(tracing, 0, "%s: report has no trace_*, st__* or st_* function", what);
    is_int(n, 3, "%s: main, handle_job and checksum only", what);
    tu_run_free(&r);

    const char *replay[] = {uftrace_bin, "replay", "-d", dir, NULL};
    run(replay, &r);
    ok(r.status == 0 && strstr(r.out, "main() {") && strstr(r.out, "handle_job() {") && strstr(r.out, "checksum();"),
       "%s: replay shows main { handle_job { checksum } }", what);
    ok(!strstr(r.out, "trace_") && !strstr(r.out, "st__") && !strstr(r.out, "st_event_enabled"),
       "%s: replay shows no tracing function", what);
    tu_run_free(&r);
}

static void check_program(const char *prog)
{
    const char *what = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
    char *scratch = gu_mkdtemp();
    if (!ok(scratch != NULL, "%s: scratch directory", what))
        return;
    char dir[4200], trace[4200], marker[4200], config[8600];
    snprintf(dir, sizeof dir, "%s/uftrace.data", scratch);
    snprintf(trace, sizeof trace, "%s/app.trace", scratch);
    snprintf(marker, sizeof marker, "%s/trace_marker", scratch);
    snprintf(config, sizeof config, "enable=ftg_*,file=%s", trace);
    gu_write_file(marker, "", 0);
    setenv("SIMPLETRACE_FUNC_DIR", dir, 1);
    setenv("SIMPLETRACE", config, 1);
    setenv("SIMPLETRACE_FTRACE_MARKER", marker, 1);
    char jobs[16];
    snprintf(jobs, sizeof jobs, "%d", JOBS);
    const char *argv[] = {prog, jobs, NULL};
    struct tu_run r;
    run(argv, &r);
    if (!ok(r.status == 0 && r.err && r.err[0] == '\0', "%s: runs traced, exit 0, nothing on stderr", what))
        diag("status %d, stderr: %s", r.status, r.err ? r.err : "");
    tu_run_free(&r);
    unsetenv("SIMPLETRACE_FUNC_DIR");
    unsetenv("SIMPLETRACE");
    unsetenv("SIMPLETRACE_FTRACE_MARKER");
    check_events_fired(what, trace, marker);
    check_functions(what, dir);
    gu_rm_rf(scratch);
    free(scratch);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: %s UFTRACE SIMPLETRACE TRACE-EVENTS PROGRAM...\n", argv[0]);
        return 2;
    }
    uftrace_bin = argv[1];
    simpletrace_bin = argv[2];
    events_file = argv[3];
    if (!ok(uftrace_bin[0] != '\0', "uftrace was found at configure time (apt-get install uftrace)"))
        return done_testing();
    unsetenv("SIMPLETRACE_FUNC_JOIN");
    for (int i = 4; i < argc; i++)
        check_program(argv[i]);
    return done_testing();
}
