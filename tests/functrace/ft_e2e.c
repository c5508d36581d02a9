/*
 * End-to-end tests of libsimpletrace-func: run an instrumented program
 * with SIMPLETRACE_FUNC_DIR pointing at a temporary directory, then read
 * the result with the real uftrace (replay, report, graph, info, dump,
 * dump --chrome) and check what it prints against what the program did.
 *
 *   ft_e2e SCENARIO UFTRACE PYTHON3 PROGRAM...
 *
 * UFTRACE empty: uftrace was not found at configure time; every scenario
 * fails with a message (CI and `make check` install it). PYTHON3 empty:
 * the chrome JSON is only checked for balanced events, not parsed.
 *
 * The strongest checks use `uftrace dump`, which prints every record with
 * its time, tid, name and depth: per thread the entries and exits must
 * nest exactly, depths must match the nesting, times never go backwards,
 * every frame is closed, and call counts equal what the program did.
 */
#include "tap.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *uftrace_bin, *python_bin;
static char tmp[4096];
static int nrun;

/* --- running programs -------------------------------------------------------- */

struct out {
    int rc;    /* exit code, 128+signal when killed */
    char *out; /* stdout, NUL-terminated */
    char *err; /* stderr */
};

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    char *buf = NULL;
    size_t cap = 0, len = 0, n;
    char chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            buf = realloc(buf, cap);
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!buf)
        return strdup("");
    buf[len] = '\0';
    return buf;
}

/* Runs argv with env changes ("K=V" sets, "K" unsets); captures output. */
static struct out run(const char *const *argv, const char *const *env)
{
    char out_path[4200], err_path[4200];
    snprintf(out_path, sizeof out_path, "%s/run%d.out", tmp, nrun);
    snprintf(err_path, sizeof err_path, "%s/run%d.err", tmp, nrun++);
    struct out r = {.rc = -1};
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0)
            _exit(126);
        dup2(o, 1);
        dup2(e, 2);
        for (size_t i = 0; env && env[i]; i++) {
            char *kv = strdup(env[i]), *eq = strchr(kv, '=');
            if (eq) {
                *eq = '\0';
                setenv(kv, eq + 1, 1);
            } else {
                unsetenv(kv);
            }
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status;
    if (pid > 0 && waitpid(pid, &status, 0) == pid)
        r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    return r;
}

static void out_free(struct out *r)
{
    free(r->out);
    free(r->err);
}

/* `uftrace SUB -d DIR [extra]`. */
static struct out uft(const char *sub, const char *dir, const char *extra)
{
    const char *argv[] = {uftrace_bin, sub, "-d", dir, extra, NULL};
    return run(argv, NULL);
}

/* Prints the first lines of a text as TAP diagnostics. */
static void show(const char *what, const char *text)
{
    int lines = 0;
    for (const char *p = text; *p && lines < 15; lines++) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        printf("#   %s: %.*s\n", what, len, p);
        p += len + (nl != NULL);
    }
}

/* Occurrences of needle; a plain loop (a sanitizer's strstr measures the
 * whole haystack on every call, which is quadratic here). */
static long count_of(const char *text, const char *needle)
{
    size_t nlen = strlen(needle);
    long n = 0;
    for (const char *p = text; *p; p++)
        if (*p == needle[0] && strncmp(p, needle, nlen) == 0)
            n++;
    return n;
}

static bool has(const char *text, const char *needle)
{
    return strstr(text, needle) != NULL;
}

/* A `<hex>` name: uftrace could not resolve an address. */
static bool has_hex_name(const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p != '<')
            continue;
        const char *q = p + 1;
        while (isxdigit((unsigned char)*q))
            q++;
        if (q - p > 4 && *q == '>')
            return true;
    }
    return false;
}

/* --- uftrace dump ------------------------------------------------------------- */

#define MAX_TIDS 64
#define MAX_NAMES 64
#define MAX_STACK 4096

struct frame {
    char name[64];
    unsigned depth;
    unsigned long long t;
};

struct tid_state {
    int tid;
    struct frame stack[MAX_STACK];
    int sp;
    unsigned long long last_t;
    long records;
};

struct dump {
    int ntids;
    struct tid_state *tids;
    struct {
        char name[64];
        long calls;
    } names[MAX_NAMES];
    int nnames;
    long records, lost;
    unsigned max_depth;
    char error[256]; /* first structural error */
    int open_frames; /* frames never closed, all threads */
};

static struct tid_state *tid_of(struct dump *d, int tid)
{
    for (int i = 0; i < d->ntids; i++)
        if (d->tids[i].tid == tid)
            return &d->tids[i];
    if (d->ntids == MAX_TIDS)
        return NULL;
    struct tid_state *t = &d->tids[d->ntids++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    return t;
}

static void count_call(struct dump *d, const char *name)
{
    for (int i = 0; i < d->nnames; i++)
        if (strcmp(d->names[i].name, name) == 0) {
            d->names[i].calls++;
            return;
        }
    if (d->nnames < MAX_NAMES) {
        snprintf(d->names[d->nnames].name, sizeof d->names[0].name, "%.63s", name);
        d->names[d->nnames++].calls = 1;
    }
}

static long calls(const struct dump *d, const char *name)
{
    for (int i = 0; i < d->nnames; i++)
        if (strcmp(d->names[i].name, name) == 0)
            return d->names[i].calls;
    return 0;
}

static void dump_error(struct dump *d, const char *fmt, ...)
{
    if (d->error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->error, sizeof d->error, fmt, ap);
    va_end(ap);
}

/* One `<sec>.<ns>  <tid>: [entry] name(addr) depth: N` line. */
static void dump_line(struct dump *d, const char *line)
{
    unsigned long long sec, ns, addr;
    int tid;
    unsigned depth;
    char kind[16], name[256];
    if (sscanf(line, "%llu.%llu %d: [%15[^]]] %255[^(](%llx) depth: %u", &sec, &ns, &tid, kind, name, &addr,
               &depth) != 7) {
        if (strstr(line, "lost") || strstr(line, "LOST"))
            d->lost++;
        return;
    }
    struct tid_state *t = tid_of(d, tid);
    if (!t)
        return;
    unsigned long long time = sec * 1000000000ull + ns;
    d->records++;
    t->records++;
    if (time < t->last_t)
        dump_error(d, "tid %d: time goes back at %s", tid, name);
    t->last_t = time;
    if (depth > d->max_depth)
        d->max_depth = depth;
    if (name[0] == '<' || isdigit((unsigned char)name[0]))
        dump_error(d, "tid %d: unresolved name %s", tid, name);
    if (strncmp(kind, "entry", 5) == 0) {
        if (depth != (unsigned)t->sp)
            dump_error(d, "tid %d: %s entered at depth %u with %d frames open", tid, name, depth, t->sp);
        if (t->sp == MAX_STACK)
            return;
        struct frame *f = &t->stack[t->sp++];
        snprintf(f->name, sizeof f->name, "%.63s", name);
        f->depth = depth;
        f->t = time;
        count_call(d, name);
    } else if (strncmp(kind, "exit", 4) == 0) {
        if (t->sp == 0) {
            dump_error(d, "tid %d: exit of %s with no frame open", tid, name);
            return;
        }
        struct frame *f = &t->stack[--t->sp];
        if (strcmp(f->name, name) != 0 || f->depth != depth)
            dump_error(d, "tid %d: exit of %s/%u closes %s/%u", tid, name, depth, f->name, f->depth);
        if (time < f->t)
            dump_error(d, "tid %d: %s has a negative duration", tid, name);
    }
}

static struct dump *dump_parse(const char *text)
{
    struct dump *d = calloc(1, sizeof *d);
    d->tids = calloc(MAX_TIDS, sizeof *d->tids);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        dump_line(d, line);
        p += len + (nl != NULL);
    }
    for (int i = 0; i < d->ntids; i++)
        d->open_frames += d->tids[i].sp;
    return d;
}

static void dump_free(struct dump *d)
{
    free(d->tids);
    free(d);
}

/* --- report ---------------------------------------------------------------- */

/* Calls of name in `uftrace report` (rows: total, self, calls, name). */
static long report_calls(const char *text, const char *name)
{
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        char line[512], fn[256], u1[8], u2[8];
        double total, self;
        long n;
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        if (sscanf(line, " %lf %7s %lf %7s %ld %255s", &total, u1, &self, u2, &n, fn) == 6 &&
            strcmp(fn, name) == 0)
            return n;
        p += len + (nl != NULL);
    }
    return -1;
}

/* --- common checks --------------------------------------------------------- */

/* Number of calls of fib(n). */
static long fib_calls(int n)
{
    return n < 2 ? 1 : 1 + fib_calls(n - 1) + fib_calls(n - 2);
}

/* Runs every uftrace command on dir and checks what holds for any trace;
 * returns the parsed dump (caller frees). allow_open: frames may stay open
 * (a trace flushed by a program that then died). */
static struct dump *check_all(const char *what, const char *dir, bool allow_open)
{
    struct out r = uft("replay", dir, NULL);
    if (!ok(r.rc == 0 && !has(r.err, "WARN") && !has(r.out, "inverted") && !has(r.out, "broken"),
            "%s: uftrace replay exits 0 without warnings", what)) {
        show("stdout", r.out);
        show("stderr", r.err);
    }
    ok(has(r.out, "main() {") || has(r.out, "main();"), "%s: replay shows main()", what);
    ok(!has_hex_name(r.out), "%s: replay resolves every name (no <hex>)", what);
    if (!allow_open)
        ok(!has(r.err, "remaining functions") && !has(r.out, "remaining functions"),
           "%s: replay finds every function finished", what);
    out_free(&r);

    r = uft("report", dir, NULL);
    ok(r.rc == 0 && report_calls(r.out, "main") >= 1 && !has_hex_name(r.out), "%s: uftrace report lists main",
       what);
    out_free(&r);

    r = uft("graph", dir, NULL);
    if (!ok(r.rc == 0 && has(r.out, "main") && !has(r.err, "WARN") && !has_hex_name(r.out),
            "%s: uftrace graph exits 0, shows main, no warnings", what))
        show("stderr", r.err);
    out_free(&r);

    r = uft("info", dir, NULL);
    ok(r.rc == 0 && has(r.out, "# exe image") && has(r.out, "# task list"), "%s: uftrace info reads the info file",
       what);
    out_free(&r);

    r = uft("dump", dir, "--chrome");
    long b = count_of(r.out, "\"ph\":\"B\""), e = count_of(r.out, "\"ph\":\"E\"");
    ok(r.rc == 0 && b > 0 && (allow_open || b == e), "%s: dump --chrome has %ld begin and %ld end events", what, b,
       e);
    if (python_bin && *python_bin) {
        char json[4200];
        snprintf(json, sizeof json, "%s/chrome.json", tmp);
        FILE *f = fopen(json, "w");
        if (f) {
            fputs(r.out, f);
            fclose(f);
        }
        const char *argv[] = {python_bin, "-c", "import json,sys; json.load(open(sys.argv[1]))", json, NULL};
        struct out j = run(argv, NULL);
        if (!ok(j.rc == 0, "%s: dump --chrome is valid JSON", what))
            show("python", j.err);
        out_free(&j);
    }
    out_free(&r);

    r = uft("dump", dir, NULL);
    struct dump *d = dump_parse(r.out);
    ok(r.rc == 0 && d->records > 0, "%s: uftrace dump prints %ld records", what, d->records);
    if (!ok(!d->error[0], "%s: per thread, entries and exits nest, depths match, times never go back", what))
        diag("%s", d->error);
    if (!allow_open)
        is_int(d->open_frames, 0, "%s: every frame is closed", what);
    out_free(&r);
    return d;
}

/* A path under the scratch directory, valid until the end of main(). */
static char *paths[64];
static int npaths;
static const char *data_dir(const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", tmp, name);
    if (npaths == 64)
        return "/nonexistent";
    return paths[npaths++] = strdup(path);
}

static bool exists(const char *dir, const char *file)
{
    char path[8400];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return access(path, F_OK) == 0;
}

/* Runs prog with the trace going to dir; checks it ran as expected. */
static struct out traced(const char *what, const char *dir, const char *const *argv, const char *const *env,
                         int want_rc)
{
    char dir_env[4300];
    snprintf(dir_env, sizeof dir_env, "SIMPLETRACE_FUNC_DIR=%s", dir);
    const char *all[16] = {dir_env, "SIMPLETRACE_FUNC_JOIN"};
    size_t n = 2;
    for (size_t i = 0; env && env[i] && n < 15; i++)
        all[n++] = env[i];
    all[n] = NULL;
    struct out r = run(argv, all);
    if (!ok(r.rc == want_rc, "%s: the traced program exits %d", what, want_rc)) {
        diag("rc %d", r.rc);
        show("stderr", r.err);
    }
    return r;
}

/* --- scenarios -------------------------------------------------------------- */

/* ftdemo THREADS FIB LEAVES: counts of everything. env: extra settings. */
static void scenario_demo(const char *what, const char *prog, int threads, int fib_n, int leaves,
                          const char *const *env)
{
    char a1[16], a2[16], a3[16];
    snprintf(a1, sizeof a1, "%d", threads);
    snprintf(a2, sizeof a2, "%d", fib_n);
    snprintf(a3, sizeof a3, "%d", leaves);
    const char *argv[] = {prog, a1, a2, a3, NULL};
    const char *dir = data_dir(what);
    struct out r = traced(what, dir, argv, env, 0);
    ok(!has(r.err, "simpletrace-func"), "%s: the tracer prints nothing", what);
    out_free(&r);
    struct dump *d = check_all(what, dir, false);
    is_int(calls(d, "main"), 1, "%s: main called once", what);
    is_int(calls(d, "fib"), (threads + 1) * fib_calls(fib_n), "%s: fib calls = %d x calls of fib(%d)", what,
           threads + 1, fib_n);
    is_int(calls(d, "worker"), threads, "%s: one worker per thread", what);
    is_int(calls(d, "leaf"), (long)threads * leaves, "%s: leaf calls", what);
    is_int(d->ntids, threads + 1, "%s: every thread has records", what);
    is_int(d->max_depth, fib_n, "%s: the deepest fib is at depth %d", what, fib_n);
    dump_free(d);

    r = uft("report", dir, NULL);
    is_int(report_calls(r.out, "fib"), (threads + 1) * fib_calls(fib_n), "%s: report counts fib calls", what);
    out_free(&r);
    r = uft("info", dir, NULL);
    char want[64];
    snprintf(want, sizeof want, "# number of tasks     : %d", threads + 1);
    ok(has(r.out, want) && has(r.out, "exited with code: 0"), "%s: info lists %d tasks and exit code 0", what,
       threads + 1);
    out_free(&r);
    r = uft("graph", dir, NULL);
    ok(has(r.out, "(1) main") && (threads == 0 || has(r.out, "worker")), "%s: graph has main and the workers",
       what);
    out_free(&r);
}

static void scenario_depth(const char *prog)
{
    const char *argv[] = {prog, "0", "10", "0", NULL};
    const char *env[] = {"SIMPLETRACE_FUNC_DEPTH=3", NULL};
    const char *dir = data_dir("depth");
    struct out r = traced("depth", dir, argv, env, 0);
    out_free(&r);
    struct dump *d = check_all("depth", dir, false);
    is_int(d->max_depth, 2, "depth: SIMPLETRACE_FUNC_DEPTH=3 records depths 0..2");
    is_int(calls(d, "fib"), 3, "depth: only the 3 fib calls within the limit");
    dump_free(d);
}

static void scenario_filter(const char *prog)
{
    const char *argv[] = {prog, "2", "8", "5", NULL};
    const char *env[] = {"SIMPLETRACE_FUNC_FILTER=main,sum_*,leaf", NULL};
    const char *dir = data_dir("filter");
    struct out r = traced("filter", dir, argv, env, 0);
    out_free(&r);
    struct dump *d = check_all("filter", dir, false);
    is_int(calls(d, "fib"), 0, "filter: fib is filtered out");
    is_int(calls(d, "worker"), 0, "filter: worker is filtered out");
    is_int(calls(d, "sum_leaves"), 2, "filter: sum_leaves recorded");
    is_int(calls(d, "leaf"), 10, "filter: leaf recorded");
    is_int(d->max_depth, 1, "filter: depth counts recorded frames only");
    dump_free(d);
    const char *env2[] = {"SIMPLETRACE_FUNC_FILTER=main,no_such_function", NULL};
    r = traced("filter", data_dir("filter2"), argv, env2, 0);
    ok(has(r.err, "no function matches 'no_such_function'"), "filter: a pattern matching nothing is reported");
    out_free(&r);
}

static void scenario_exit(const char *prog)
{
    const char *argv[] = {prog, "exit", "40", NULL};
    const char *dir = data_dir("exit");
    struct out r = traced("exit", dir, argv, NULL, 3);
    out_free(&r);
    struct dump *d = check_all("exit", dir, false);
    is_int(calls(d, "deep"), 40, "exit: 40 nested deep() calls, all closed at exit");
    is_int(d->ntids, 2, "exit: the thread still running at exit is in the trace");
    ok(calls(d, "spin") == 1 && calls(d, "tick") > 0, "exit: its open spin() frame is closed too");
    dump_free(d);
    r = uft("info", dir, NULL);
    ok(has(r.out, "exited with code: 3"), "exit: info shows exit code 3");
    out_free(&r);
}

static void scenario_early(const char *prog)
{
    const char *argv[] = {prog, "early", NULL};
    const char *dir = data_dir("early");
    struct out r = traced("early", dir, argv, NULL, 0);
    out_free(&r);
    struct dump *d = check_all("early", dir, false);
    is_int(d->ntids, 4, "early: main and three threads");
    is_int(calls(d, "short_task"), 1, "early: the thread that ended first is complete");
    is_int(calls(d, "leave_from"), 5, "early: pthread_exit from 5 deep: its frames are closed");
    is_int(calls(d, "fib"), fib_calls(5) + fib_calls(8) + fib_calls(6), "early: fib calls of all threads");
    dump_free(d);
}

static void scenario_fork(const char *prog)
{
    const char *argv[] = {prog, "fork", NULL};
    const char *dir = data_dir("fork");
    struct out r = traced("fork", dir, argv, NULL, 0);
    int child = 0;
    sscanf(r.out, "child %d", &child);
    ok(child > 0, "fork: the child ran");
    out_free(&r);
    struct dump *d = check_all("fork", dir, false);
    is_int(d->ntids, 2, "fork: parent and child each have their thread");
    is_int(calls(d, "fib"), fib_calls(4) + fib_calls(10) + fib_calls(3), "fork: fib calls of both processes");
    is_int(calls(d, "child_work"), 1, "fork: child_work only in the child");
    is_int(calls(d, "main"), 2, "fork: the child's file re-enters main and spawn");
    is_int(calls(d, "after_fork"), 1, "fork: the parent goes on after the child");
    dump_free(d);
    char path[8400];
    snprintf(path, sizeof path, "%s/task.txt", dir);
    char *tasks = slurp(path);
    is_int(count_of(tasks, "SESS "), 2, "fork: task.txt has a session per process");
    char want[64];
    snprintf(want, sizeof want, "tid=%d pid=%d", child, child);
    ok(has(tasks, want), "fork: the child's task has its own pid");
    free(tasks);
    r = uft("replay", dir, NULL);
    ok(has(r.out, "child_work() {"), "fork: replay shows the child's work");
    out_free(&r);
}

static void scenario_signal(const char *prog)
{
    const char *argv[] = {prog, "signal", "1000000", NULL};
    const char *dir = data_dir("signal");
    struct out r = traced("signal", dir, argv, NULL, 0);
    int signals = -1;
    sscanf(r.out, "signals %d", &signals);
    out_free(&r);
    struct dump *d = check_all("signal", dir, false);
    is_int(calls(d, "work_leaf"), 1000000, "signal: every call of the interrupted loop recorded");
    ok(calls(d, "on_tick") <= signals && calls(d, "handler_work") == calls(d, "on_tick"),
       "signal: handler calls recorded only when they did not interrupt a hook (%ld of %d)", calls(d, "on_tick"),
       signals);
    dump_free(d);
}

static void scenario_api(const char *prog)
{
    const char *dir = data_dir("api-env");
    const char *api_dir = data_dir("api-set");
    /* Arguments the program ignores, for the command line in info: quotes, a backslash,
     * control bytes, UTF-8 and a byte that is not (check_all parses dump --chrome). */
    const char *argv[] = {prog, "api", api_dir, "say \"hi\"", "a\\b", "two\nlines\t", "caf\xc3\xa9", "\xff", NULL};
    struct out r = traced("api", dir, argv, NULL, 0);
    ok(has(r.out, "set_dir 0\n") && has(r.out, "pause 0\n") && has(r.out, "resume 0\n") && has(r.out, "flush 0\n"),
       "api: set_dir, set_enabled and flush return 0");
    ok(has(r.out, "set_dir_again -16"), "api: set_dir after data was written gives -EBUSY");
    ok(has(r.out, "stats 0 written ") && has(r.out, "threads 1"), "api: stats returns 0 and counts the thread");
    out_free(&r);
    ok(access(dir, F_OK) != 0, "api: the unused SIMPLETRACE_FUNC_DIR we created is removed");
    struct dump *d = check_all("api", api_dir, true);
    r = uft("info", api_dir, NULL);
    ok(has(r.out, "say \\\"hi\\\" a\\\\b two\\nlines\\t caf\xc3\xa9 \\u00ff"),
       "api: uftrace info shows the command line JSON-escaped on one line");
    out_free(&r);
    is_int(calls(d, "hidden"), 0, "api: calls while disabled are not recorded");
    is_int(calls(d, "visible"), 7, "api: calls after re-enabling are recorded");
    is_int(calls(d, "after_flush"), 0, "api: after flush + _exit, only flushed records exist");
    ok(d->open_frames >= 1, "api: main is still open in the flushed trace");
    dump_free(d);
}

/* A traced program started by a traced program joins its directory. */
static void scenario_exec(const char *prog, const char *demo)
{
    const char *argv[] = {prog, "spawn", demo, "1", "5", "5", NULL};
    const char *dir = data_dir("exec");
    struct out r = traced("exec", dir, argv, NULL, 0);
    out_free(&r);
    struct dump *d = check_all("exec", dir, false);
    is_int(d->ntids, 3, "exec: the spawning program's thread and both of the spawned one's");
    is_int(calls(d, "run_child"), 1, "exec: the parent's calls are there");
    is_int(calls(d, "fib"), 2 * fib_calls(5), "exec: the child's calls are there");
    dump_free(d);
    const char *base = strrchr(demo, '/') ? strrchr(demo, '/') + 1 : demo;
    char sym[4200];
    snprintf(sym, sizeof sym, "%s.sym", base);
    ok(exists(dir, "ft_scenarios.sym") && exists(dir, sym), "exec: symbols of both programs");
}

static void scenario_config(const char *prog)
{
    const char *argv[] = {prog, "1", "5", "5", NULL};
    /* SIMPLETRACE_FUNC=off: nothing at all. */
    const char *off[] = {"SIMPLETRACE_FUNC=off", NULL};
    const char *dir = data_dir("off");
    struct out r = traced("off", dir, argv, off, 0);
    ok(access(dir, F_OK) != 0 && r.err[0] == '\0', "off: SIMPLETRACE_FUNC=off creates nothing, prints nothing");
    out_free(&r);

    /* A directory holding other files is refused, untouched. */
    dir = data_dir("foreign");
    mkdir(dir, 0755);
    char path[8400];
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    FILE *f = fopen(path, "w");
    fputs("mine\n", f);
    fclose(f);
    r = traced("foreign", dir, argv, NULL, 0);
    ok(has(r.err, "not tracing") && has(r.err, "notes.txt"), "foreign: a directory with other files is refused");
    ok(exists(dir, "notes.txt") && !exists(dir, "info"), "foreign: and left untouched");
    out_free(&r);

    /* An old trace directory is replaced: no file of the old run survives. */
    dir = data_dir("replace");
    r = traced("replace", dir, argv, NULL, 0);
    out_free(&r);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/1.dat", dir);
    f = fopen(path, "w");
    fputs("stale", f);
    fclose(f);
    r = traced("replace", dir, argv, NULL, 0);
    ok(r.err[0] == '\0' && !exists(dir, "1.dat") && exists(dir, "info"), "replace: an old trace is replaced");
    out_free(&r);
    struct dump *d = check_all("replace", dir, false);
    is_int(d->ntids, 2, "replace: only the new run's threads");
    dump_free(d);
}

static void scenario_drops(const char *prog)
{
    const char *argv[] = {prog, "0", "22", "0", NULL};
    const char *env[] = {"SIMPLETRACE_FUNC_BUFSIZE=4K", "SIMPLETRACE_FUNC_BUFFERS=1", NULL};
    const char *dir = data_dir("drops");
    struct out r = traced("drops", dir, argv, env, 0);
    ok(has(r.err, "records lost"), "drops: lost records are reported at exit");
    out_free(&r);
    r = uft("replay", dir, NULL);
    ok(r.rc == 0 && has(r.out, "LOST") && !has_hex_name(r.out), "drops: replay shows the LOST records, names resolved");
    out_free(&r);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: ft_e2e SCENARIO UFTRACE PYTHON3 PROGRAM...\n");
        return 2;
    }
    const char *scenario = argv[1];
    uftrace_bin = argv[2];
    python_bin = argv[3];
    if (!uftrace_bin[0] || access(uftrace_bin, X_OK) != 0) {
        ok(0, "uftrace is installed (Debian package `uftrace`; scripts/deps.sh check installs it)");
        return done_testing();
    }
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmp, sizeof tmp, "%s/ft-e2e-%s-XXXXXX", base, scenario);
    if (!mkdtemp(tmp)) {
        ok(0, "mkdtemp %s: %s", tmp, strerror(errno));
        return done_testing();
    }
    const char *prog = argv[4];
    /* Small chunks, many of them: the writer thread runs while the
     * threads trace (the sanitizer runs see both sides), nothing dropped. */
    const char *small_chunks[] = {"SIMPLETRACE_FUNC_BUFSIZE=16K", "SIMPLETRACE_FUNC_BUFFERS=256", NULL};
    if (strcmp(scenario, "basic") == 0)
        scenario_demo("basic", prog, 0, 15, 0, NULL);
    else if (strcmp(scenario, "threads") == 0)
        scenario_demo("threads", prog, 4, 12, 500, small_chunks);
    else if (strcmp(scenario, "nopie") == 0)
        scenario_demo("nopie", prog, 1, 10, 10, NULL);
    else if (strcmp(scenario, "shared") == 0)
        scenario_demo("shared", prog, 2, 10, 10, NULL);
    else if (strcmp(scenario, "depth") == 0)
        scenario_depth(prog);
    else if (strcmp(scenario, "filter") == 0)
        scenario_filter(prog);
    else if (strcmp(scenario, "exit") == 0)
        scenario_exit(prog);
    else if (strcmp(scenario, "early") == 0)
        scenario_early(prog);
    else if (strcmp(scenario, "fork") == 0)
        scenario_fork(prog);
    else if (strcmp(scenario, "signal") == 0)
        scenario_signal(prog);
    else if (strcmp(scenario, "api") == 0)
        scenario_api(prog);
    else if (strcmp(scenario, "exec") == 0 && argc > 5)
        scenario_exec(prog, argv[5]);
    else if (strcmp(scenario, "config") == 0)
        scenario_config(prog);
    else if (strcmp(scenario, "drops") == 0)
        scenario_drops(prog);
    else
        ok(0, "unknown scenario %s", scenario);
    int rc = done_testing();
    for (int i = 0; i < npaths; i++)
        free(paths[i]);
    if (rc == 0) { /* keep the data of a failing run for a look */
        const char *rm[] = {"/bin/rm", "-rf", tmp, NULL};
        struct out r = run(rm, NULL);
        out_free(&r);
    } else {
        printf("# trace directories kept in %s\n", tmp);
    }
    return rc;
}
