/*
 * Generated code must compile warning-free as C11 (-Wpedantic -Werror) and
 * as C++11, for every backend selection: the golden inputs (every argument
 * kind, 10 arguments, void, disable, C++ keyword names), the shared edge
 * fixture and QEMU's real catalogue (932 events). Compile only (-c): the
 * runtime is not linked. The source file is also compiled with its header
 * included first, so their declarations must agree. With the ust backend
 * the LTTng-UST provider (--format=ust-events-h/-c) is generated beside
 * them and its source compiled too; the dtrace and ust backends need
 * <sys/sdt.h> and <lttng/tracepoint.h> (systemtap-sdt-dev,
 * liblttng-ust-dev: scripts/deps.sh check installs them).
 *
 * usage: test_gen_compile SIMPLETRACE INCLUDE-DIR SHARED-DIR GOLDEN-DIR
 * The compilers come from ST_CC and ST_CXX (commands split on blanks).
 */
#include "gen_util.h"
#include "tap.h"

static const char *const c_flags[] = {"-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", NULL};
static const char *const cxx_flags[] = {"-std=c++11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", NULL};

/* Splits a command line on blanks into argv (at most max - 1 words); returns the count. */
static int split_words(char *cmd, char **argv, int max)
{
    int n = 0;
    for (char *tok = strtok(cmd, " \t"); tok && n < max - 1; tok = strtok(NULL, " \t"))
        argv[n++] = tok;
    argv[n] = NULL;
    return n;
}

/* Compiles file with the compiler in env var cc_env as language lang; true when clean. */
static const char *scratch_dir; /* also on the include path: LTTng re-includes the provider header */

static bool compile(const char *cc_env, const char *const *flags, const char *lang, const char *include_dir,
                    const char *file, const char *pre_include)
{
    char *cmd = strdup(getenv(cc_env) ? getenv(cc_env) : "cc");
    char *argv[64];
    int n = split_words(cmd, argv, 32);
    for (int i = 0; flags[i]; i++)
        argv[n++] = (char *)flags[i];
    char inc[4096];
    snprintf(inc, sizeof inc, "-I%s", include_dir);
    argv[n++] = inc;
    char inc_scratch[4096];
    snprintf(inc_scratch, sizeof inc_scratch, "-I%s", scratch_dir);
    argv[n++] = inc_scratch;
    if (pre_include) {
        argv[n++] = "-include";
        argv[n++] = (char *)pre_include;
    }
    argv[n++] = "-x";
    argv[n++] = (char *)lang;
    argv[n++] = "-c";
    argv[n++] = (char *)file;
    argv[n++] = "-o";
    argv[n++] = "/dev/null";
    argv[n] = NULL;
    struct tu_run r;
    gu_run(argv, NULL, &r);
    bool clean = r.status == 0 && r.err && r.err[0] == '\0';
    if (!clean)
        diag("%s", r.err ? r.err : "(compiler did not run)");
    tu_run_free(&r);
    free(cmd);
    return clean;
}

/* Generates FORMAT output for input into out; true on success. */
static bool generate(const char *exe, const char *input, const char *backends, const char *format,
                     const char *out)
{
    char fopt[32], bopt[128];
    snprintf(fopt, sizeof fopt, "--format=%s", format);
    snprintf(bopt, sizeof bopt, "--backends=%s", backends);
    char *argv[] = {(char *)exe, "gen", fopt, bopt, "--group=under_test", "-o", (char *)out, (char *)input, NULL};
    struct tu_run r;
    gu_run(argv, NULL, &r);
    bool done = r.status == 0;
    if (!done)
        diag("%s", r.err ? r.err : "");
    tu_run_free(&r);
    return done;
}

/* Counts occurrences of needle in the file. */
static int count_in_file(const char *path, const char *needle)
{
    char *text = tu_slurp(path, NULL);
    int n = 0;
    for (const char *p = text ? strstr(text, needle) : NULL; p; p = strstr(p + 1, needle))
        n++;
    free(text);
    return n;
}

/* With the ust backend: generates the LTTng-UST provider the header includes, and compiles its source. */
static void check_ust_provider(const char *exe, const char *inc, const char *scratch, const char *input,
                               const char *label, const char *b)
{
    char uh[4096], uc[4096];
    snprintf(uh, sizeof uh, "%s/under_test-ust.h", scratch);
    snprintf(uc, sizeof uc, "%s/under_test-ust.c", scratch);
    ok(generate(exe, input, b, "ust-events-h", uh) && generate(exe, input, b, "ust-events-c", uc),
       "%s [%s]: LTTng-UST provider generated", label, b);
    ok(compile("ST_CC", c_flags, "c", inc, uc, NULL), "%s [%s]: LTTng-UST provider compiles as C11", label, b);
    ok(compile("ST_CXX", cxx_flags, "c++", inc, uc, NULL), "%s [%s]: LTTng-UST provider compiles as C++11", label,
       b);
}

static void check_input(const char *exe, const char *inc, const char *scratch, const char *input,
                        const char *label, const char *const *selections)
{
    for (size_t s = 0; selections[s]; s++) {
        const char *b = selections[s];
        char h[4096], c[4096];
        snprintf(h, sizeof h, "%s/under_test.h", scratch);
        snprintf(c, sizeof c, "%s/under_test.c", scratch);
        ok(generate(exe, input, b, "h", h) && generate(exe, input, b, "c", c), "%s [%s]: generated", label, b);
        if (strstr(b, "ust"))
            check_ust_provider(exe, inc, scratch, input, label, b);
        ok(compile("ST_CC", c_flags, "c", inc, h, NULL), "%s [%s]: header compiles as C11", label, b);
        ok(compile("ST_CXX", cxx_flags, "c++", inc, h, NULL), "%s [%s]: header compiles as C++11", label, b);
        ok(compile("ST_CC", c_flags, "c", inc, c, h), "%s [%s]: source compiles as C11 after its header", label, b);
        ok(compile("ST_CXX", cxx_flags, "c++", inc, c, h), "%s [%s]: source compiles as C++11 after its header",
           label, b);
    }
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s SIMPLETRACE INCLUDE-DIR SHARED-DIR GOLDEN-DIR\n", argv[0]);
        return 2;
    }
    const char *exe = argv[1], *inc = argv[2], *shared = argv[3], *golden = argv[4];
    char *scratch = gu_mkdtemp();
    if (!ok(scratch != NULL, "scratch directory"))
        return done_testing();
    scratch_dir = scratch;
    static const char *const all[] = {"simple", "log",    "simple,log", "log,simple",        "nop", "nop,simple",
                                      "dtrace", "ust",    "ftrace",     "syslog",            "nop,dtrace",
                                      "ftrace,syslog,log", "simple,ust,dtrace", NULL};
    static const char *const main_ones[] = {"simple,log", "nop", "simple,ust,dtrace,ftrace,syslog", NULL};
    static const char *const qemu_ones[] = {"simple,log", "nop", "dtrace,ftrace,syslog", NULL};
    char path[4096];
    snprintf(path, sizeof path, "%s/kinds.trace-events", golden);
    check_input(exe, inc, scratch, path, "kinds", all);
    snprintf(path, sizeof path, "%s/empty.trace-events", golden);
    check_input(exe, inc, scratch, path, "empty", main_ones);
    snprintf(path, sizeof path, "%s/fixtures/edge/trace-events", shared);
    check_input(exe, inc, scratch, path, "edge", main_ones);
    snprintf(path, sizeof path, "%s/fixtures/qemu/trace-events-all", shared);
    check_input(exe, inc, scratch, path, "qemu", qemu_ones);

    char h[4096], c[4096];
    snprintf(h, sizeof h, "%s/under_test.h", scratch);
    snprintf(c, sizeof c, "%s/under_test.c", scratch);
    ok(generate(exe, path, "simple", "h", h) && generate(exe, path, "simple", "c", c), "qemu regenerated");
    is_int(count_in_file(h, "static inline ST__NO_INSTRUMENT void trace_"), 932, "qemu header: 932 tracepoints");
    is_int(count_in_file(h, "_ENABLED 1\n"), 932, "qemu header: all compiled in");
    is_int(count_in_file(c, "\nST__HIDDEN struct st_event st__event_"), 932, "qemu source: 932 event definitions");
    gu_rm_rf(scratch);
    free(scratch);
    return done_testing();
}
