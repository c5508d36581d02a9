/*
 * End to end: a program traced by our runtime (export_app.c: requests made
 * of steps on two threads) is exported to uftrace.data and Chrome JSON,
 * and what uftrace and the JSON say is checked against the trace itself,
 * as `simpletrace print --format=json` decodes it: every record on its
 * thread, in order, with its exact timestamp, at the right depth.
 *
 *   test_export_runtime SIMPLETRACE EXPORT_APP UFTRACE PYTHON3 APP-EVENTS CHECKER
 */
#include "ex_util.h"

#include <inttypes.h>

static const char *st_bin, *app_bin, *uft_bin, *py_bin, *events, *checker;

/* One record of the trace, from print's JSON. */
struct rec {
    char name[32];
    uint64_t ts;
    unsigned tid;
};

static struct rec *recs;
static size_t nrecs;

/* Reads print --format=json lines: name, timestamp_ns, pid. */
static void parse_print(const char *text)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        const char *n = strstr(p, "\"name\":\""), *t = strstr(p, "\"timestamp_ns\":"), *d = strstr(p, "\"pid\":");
        if (n && t && d && (!nl || d < nl)) {
            recs = realloc(recs, (nrecs + 1) * sizeof *recs);
            struct rec *r = &recs[nrecs++];
            sscanf(n + 8, "%31[^\"]", r->name);
            r->ts = strtoull(t + 15, NULL, 10);
            r->tid = (unsigned)strtoul(d + 6, NULL, 10);
        }
        p = nl ? nl + 1 : p + strlen(p);
    }
}

/* begin/end/instant and the function of a record of app-events. */
static int kind_of(const char *name, const char **func)
{
    *func = strncmp(name, "request", 7) == 0 ? "request" : "step";
    if (!strcmp(name, "request_enter") || !strcmp(name, "step_begin"))
        return 'B';
    if (!strcmp(name, "request_exit") || !strcmp(name, "step_end"))
        return 'E';
    return 'i';
}

/*
 * The expected lines of thread tid, from the trace: `uftrace dump` style
 * ("S.NNNNNNNNN TID: [entry] step depth: 1", addresses left out) when
 * dump, else the checker's listing ("TID B step USEC.NNN").
 */
static char *expected(unsigned tid, bool dump)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    int depth = 0;
    for (size_t i = 0; i < nrecs; i++) {
        if (recs[i].tid != tid)
            continue;
        const char *func;
        int k = kind_of(recs[i].name, &func);
        int d = k == 'B' ? depth++ : k == 'E' ? --depth : depth;
        uint64_t ts = recs[i].ts;
        if (dump)
            fprintf(out, "%" PRIu64 ".%09" PRIu64 " %u: [%s] %s%s depth: %d\n", ts / 1000000000u, ts % 1000000000u,
                    tid, k == 'B' ? "entry" : k == 'E' ? "exit " : "event", k == 'i' ? "simpletrace:" : "",
                    k == 'i' ? recs[i].name : func, d);
        else
            fprintf(out, "%u %c %s %" PRIu64 ".%03" PRIu64 "\n", tid, k, k == 'i' ? recs[i].name : func, ts / 1000,
                    ts % 1000);
    }
    fclose(out);
    return buf;
}

/* The lines of text containing " TID" at the thread position, reduced to what expected() prints. */
static char *pick(const char *text, unsigned tid, bool dump)
{
    char *buf = NULL, key[32];
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    snprintf(key, sizeof key, dump ? " %u: [" : "%u ", tid);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        p += n + (nl != NULL);
        if (dump) {
            /* "4926.382629047  13706: [entry] job(401000) depth: 0" -> without the address and extra blanks */
            char *k = strstr(line, key), *paren = strchr(line, '(');
            if (!k || !paren || !strstr(paren, ") depth: "))
                continue;
            char *sp = line;
            while (*sp && *sp != ' ')
                sp++;
            fprintf(out, "%.*s%.*s%s\n", (int)(sp - line), line, (int)(paren - k), k, strchr(paren, ')') + 1);
        } else if (strncmp(line, key, strlen(key)) == 0 && line[strlen(key)] != 'M') {
            char *args = strstr(line, " {");
            fprintf(out, "%.*s\n", (int)(args ? args - line : (long)strlen(line)), line);
        }
    }
    fclose(out);
    return buf;
}

static void compare(const char *got, const char *want, const char *what)
{
    if (!ok(got && strcmp(got, want) == 0, "%s", what)) {
        ex_show("got ", got, 12);
        ex_show("want", want, 12);
    }
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: test_export_runtime SIMPLETRACE APP UFTRACE PYTHON3 EVENTS CHECKER\n");
        return 2;
    }
    st_bin = argv[1], app_bin = argv[2], uft_bin = argv[3], py_bin = argv[4], events = argv[5], checker = argv[6];
    ex_make_tmpdir("runtime");
    char trace[4300], dir[4300], json[4300], cfg[4400];
    snprintf(trace, sizeof trace, "%s/app.trace", ex_tmpdir);
    snprintf(dir, sizeof dir, "%s/app.data", ex_tmpdir);
    snprintf(json, sizeof json, "%s/app.json", ex_tmpdir);
    snprintf(cfg, sizeof cfg, "SIMPLETRACE=enable=*,file=%s", trace);
    putenv(cfg);
    struct tu_run app = ex_run(app_bin);
    unsetenv("SIMPLETRACE");
    unsigned tid[2] = {0, 0}, pid = 0;
    sscanf(app.out, "pid %u\nworker 0 tid %u\nworker 1 tid %u", &pid, &tid[0], &tid[1]);
    ok(app.status == 0 && pid && tid[0] && tid[1], "the traced program ran (pid %u, worker tids %u, %u)", pid, tid[0],
       tid[1]);
    tu_run_free(&app);

    struct tu_run p = ex_run(st_bin, "print", "--format=json", events, trace);
    parse_print(p.out);
    tu_run_free(&p);
    size_t per[2] = {0, 0};
    for (size_t i = 0; i < nrecs; i++)
        for (int k = 0; k < 2; k++)
            per[k] += recs[i].tid == tid[k];
    /* Thread 0: 3 x (2 + 2 x 3) = 24 records; thread 1: 2 x (2 + 4 x 3) = 28; main: app_start. */
    ok(nrecs == 53 && per[0] == 24 && per[1] == 28, "the trace holds every record (%zu: %zu + %zu + 1)", nrecs,
       per[0], per[1]);

    struct tu_run r = ex_run(st_bin, "export", "--format=uftrace", "-o", dir, events, trace);
    ok(r.status == 0 && ex_has(r.err, ": 53 records, 3 threads: 19 calls of 2 functions, 15 instant events") &&
           !ex_has(r.err, "unmatched"),
       "export to uftrace: 19 calls (5 requests, 14 steps), nothing unmatched");
    ex_show("summary", r.err, 2);
    tu_run_free(&r);
    r = ex_run(st_bin, "export", "--format=chrome", "-o", json, events, trace);
    is_int(r.status, 0, "export to chrome");
    tu_run_free(&r);

    if (uft_bin[0]) {
        struct tu_run u = ex_run(uft_bin, "report", "-d", dir);
        ok(u.status == 0 && ex_has(u.out, "           5  request\n") && ex_has(u.out, "          14  step\n"),
           "uftrace report: 5 request calls, 14 step calls");
        tu_run_free(&u);
        u = ex_run(uft_bin, "graph", "-d", dir);
        /* A chain of single children is drawn without indentation: step right under request. */
        const char *req = strstr(u.out, " : (5) request\n");
        const char *next = req ? strchr(req, '\n') + 1 : "";
        ok(u.status == 0 && req && strncmp(strchr(next, ':') ? strchr(next, ':') : "", ": (14) step\n", 12) == 0,
           "uftrace graph: 5 requests, and on the line under them the 14 steps");
        if (!ex_has(u.out, "(14) step"))
            ex_show("graph", u.out, 12);
        tu_run_free(&u);
        u = ex_run(uft_bin, "dump", "-d", dir);
        for (int k = 0; k < 2; k++) {
            char *got = pick(u.out, tid[k], true), *want = expected(tid[k], true);
            compare(got, want, k ? "uftrace dump, worker 1: every record in order, exact ns times, depths"
                                 : "uftrace dump, worker 0: every record in order, exact ns times, depths");
            free(got);
            free(want);
        }
        tu_run_free(&u);
        u = ex_run(uft_bin, "info", "-d", dir);
        char tasks[128], image[PATH_MAX + 64];
        char *real = realpath(app_bin, NULL);
        snprintf(tasks, sizeof tasks, "# task list           : %u(export_app), ", pid);
        /* The traced executable, as the trace's description records it (/proc/self/exe). */
        snprintf(image, sizeof image, "# exe image           : %s\n", real ? real : app_bin);
        free(real);
        ok(u.status == 0 && ex_has(u.out, "# number of tasks     : 3\n") && ex_has(u.out, tasks) &&
               ex_has(u.out, image) &&
               ex_has(u.out, "# cmdline             : ") && ex_has(u.out, "export_app") &&
               !ex_has(u.out, "(app.trace)"),
           "uftrace info: 3 tasks, the process id first, named after the program the trace records, the traced "
           "executable as the exe image, its cmdline");
        if (!ex_has(u.out, tasks))
            ex_show("info", u.out, 30);
        tu_run_free(&u);
        /* The session (flag S) is the process: the main thread's id, which is the pid. */
        u = ex_run(uft_bin, "info", "--task", "-d", dir);
        char root[64];
        snprintf(root, sizeof root, "S     [%6u]  export_app", pid);
        ok(u.status == 0 && ex_has(u.out, root) && ex_count(u.out, "S     [") == 1,
           "uftrace info --task: one session, the process %u", pid);
        if (!ex_has(u.out, root))
            ex_show("info --task", u.out, 10);
        tu_run_free(&u);
    } else {
        ok(0, "uftrace is installed (configure found none; CI installs it)");
    }

    if (py_bin[0]) {
        struct tu_run c = ex_run(py_bin, checker, json);
        ok(c.status == 0 && ex_has(c.out, "\nok 57\n"), "chrome JSON parses and nests (53 records + 4 metadata)");
        for (int k = 0; k < 2; k++) {
            char *got = pick(c.out, tid[k], false), *want = expected(tid[k], false);
            compare(got, want, k ? "chrome, worker 1: B/E/i in order at the exact timestamps"
                                 : "chrome, worker 0: B/E/i in order at the exact timestamps");
            free(got);
            free(want);
        }
        ok(ex_has(c.out, " B request ") && ex_has(c.out, "{\"thread\":1,\"id\":1}") &&
               ex_has(c.out, "{\"thread\":1,\"id\":1,\"status\":0}"),
           "chrome: a request's B has request_enter's arguments, its E request_exit's");
        char want[256];
        snprintf(want, sizeof want, "%u M process_name - {\"name\":\"export_app\"}\n", pid);
        ok(ex_has(c.out, want), "chrome: the process is named after the program the trace records");
        tu_run_free(&c);
        /* Every event of the process carries its id: the main thread traced, its id is the pid. */
        c = ex_run(py_bin, "-c",
                   "import json, sys\n"
                   "d = json.load(open(sys.argv[1]))\n"
                   "print(sorted({e['pid'] for e in d['traceEvents']}), d['otherData']['program'])\n",
                   json);
        snprintf(want, sizeof want, "[%u] export_app\n", pid);
        ok(c.status == 0 && c.out && !strcmp(c.out, want), "chrome: every event's pid is the process's, %u: %s", pid,
           c.out ? c.out : "");
        tu_run_free(&c);
    } else {
        ok(0, "python3 is installed");
    }
    free(recs);
    if (tap__failed == 0)
        ex_rm_rf(ex_tmpdir);
    return done_testing();
}
