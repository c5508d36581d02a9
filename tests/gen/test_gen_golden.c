/*
 * Golden files: for each tests/gen/golden/NAME.trace-events and each backend
 * selection TAG (simple, log, simple_log, nop, dtrace, ust, ftrace, syslog,
 * simple_ust_dtrace), `simpletrace gen` must print exactly NAME.TAG.h and
 * NAME.TAG.c; and for each other format F (d, stp, log-stp,
 * simpletrace-stp, ust-events-h, ust-events-c), exactly NAME.F. It runs in a scratch directory holding
 * a copy of the input, with relative paths, as a build would:
 *
 *   simpletrace gen --format=h --backends=simple,log -o NAME.h NAME.trace-events
 *
 * To regenerate every golden file after an intended change to the output,
 * run the test with ST_REGEN=1 and review the diff:
 *
 *   ST_REGEN=1 meson test -C BUILDDIR gen-golden
 *
 * usage: test_gen_golden SIMPLETRACE GOLDEN-DIR
 */
#include "gen_util.h"
#include "tap.h"

struct selection {
    const char *tag;      /* in the golden file names */
    const char *backends; /* --backends */
};

static const struct selection selections[] = {
    {"simple", "simple"},
    {"log", "log"},
    {"simple_log", "simple,log"},
    {"nop", "nop"},
    {"dtrace", "dtrace"},
    {"ust", "ust"},
    {"ftrace", "ftrace"},
    {"syslog", "syslog"},
    {"simple_ust_dtrace", "simple,ust,dtrace"},
};

/* The formats for other tools: --format, the output's name (%s: NAME), options. */
struct tool_format {
    const char *format;
    const char *output;
    const char *options[4];
};

static const struct tool_format tool_formats[] = {
    {"d", "%s.d", {"--backends=dtrace", "--provider=kinds_provider", NULL}},
    {"stp", "%s.stp", {"--backends=dtrace", "--binary=/usr/bin/kinds app", "--probe-prefix=kinds.app", NULL}},
    {"log-stp", "%s-log.stp", {"--backends=dtrace", "--binary=/usr/bin/kinds app", "--probe-prefix=kinds.app", NULL}},
    {"simpletrace-stp", "%s-simpletrace.stp",
     {"--backends=dtrace", "--binary=/usr/bin/kinds app", "--probe-prefix=kinds.app", NULL}},
    {"ust-events-h", "%s-ust.h", {"--backends=ust", NULL}},
    {"ust-events-c", "%s-ust.c", {"--backends=ust", NULL}},
};

static const char *const inputs[] = {"kinds", "empty"};

/* Prints where two texts first differ, to make a failure readable. */
static void diag_first_difference(const char *got, const char *want)
{
    size_t line = 1, i = 0;
    while (got[i] && got[i] == want[i]) {
        line += got[i] == '\n';
        i++;
    }
    diag("first difference at line %zu", line);
}

static void check_one(const char *exe, const char *golden_dir, const char *scratch, const char *name,
                      const struct selection *sel, const char *fmt, int regen)
{
    char format_opt[32], out[256], input[256], golden[4096], produced[4096];
    snprintf(format_opt, sizeof format_opt, "--format=%s", fmt);
    snprintf(out, sizeof out, "%s.%s", name, fmt);
    snprintf(input, sizeof input, "%s.trace-events", name);
    snprintf(golden, sizeof golden, "%s/%s.%s.%s", golden_dir, name, sel->tag, fmt);
    snprintf(produced, sizeof produced, "%s/%s", scratch, out);
    char backends_opt[64];
    snprintf(backends_opt, sizeof backends_opt, "--backends=%s", sel->backends);
    char *argv[] = {(char *)exe, "gen", format_opt, backends_opt, "-o", out, input, NULL};
    struct tu_run r;
    gu_run(argv, scratch, &r);
    if (!ok(r.status == 0, "%s %s %s: generated", name, sel->tag, fmt))
        diag("%s", r.err ? r.err : "");
    size_t len = 0;
    char *got = tu_slurp(produced, &len);
    if (regen && got) {
        ok(gu_write_file(golden, got, len) == 0, "%s regenerated", golden);
    } else {
        char *want = tu_slurp(golden, NULL);
        if (!ok(got && want && strcmp(got, want) == 0, "%s %s %s: matches %s", name, sel->tag, fmt, golden) &&
            got && want)
            diag_first_difference(got, want);
        free(want);
    }
    free(got);
    tu_run_free(&r);
}

/* Compares (or with regen, rewrites) golden file with what the scratch output holds. */
static void compare_golden(const char *golden, const char *produced, const char *what, int regen)
{
    size_t len = 0;
    char *got = tu_slurp(produced, &len);
    if (regen && got) {
        ok(gu_write_file(golden, got, len) == 0, "%s regenerated", golden);
    } else {
        char *want = tu_slurp(golden, NULL);
        if (!ok(got && want && strcmp(got, want) == 0, "%s: matches %s", what, golden) && got && want)
            diag_first_difference(got, want);
        free(want);
    }
    free(got);
}

static void check_tool_format(const char *exe, const char *golden_dir, const char *scratch, const char *name,
                              const struct tool_format *tf, int regen)
{
    char format_opt[64], group_opt[128], out[256], input[256], golden[4096], produced[4096];
    snprintf(format_opt, sizeof format_opt, "--format=%s", tf->format);
    snprintf(group_opt, sizeof group_opt, "--group=%s", name);
    snprintf(out, sizeof out, tf->output, name);
    snprintf(input, sizeof input, "%s.trace-events", name);
    snprintf(golden, sizeof golden, "%s/%s.%s", golden_dir, name, tf->format);
    snprintf(produced, sizeof produced, "%s/%s", scratch, out);
    char *argv[16] = {(char *)exe, "gen", format_opt, group_opt};
    int n = 4;
    for (int i = 0; tf->options[i]; i++)
        argv[n++] = (char *)tf->options[i];
    argv[n++] = "-o";
    argv[n++] = out;
    argv[n++] = input;
    argv[n] = NULL;
    struct tu_run r;
    gu_run(argv, scratch, &r);
    if (!ok(r.status == 0, "%s --format=%s: generated", name, tf->format))
        diag("%s", r.err ? r.err : "");
    char what[128];
    snprintf(what, sizeof what, "%s --format=%s", name, tf->format);
    compare_golden(golden, produced, what, regen);
    tu_run_free(&r);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s SIMPLETRACE GOLDEN-DIR\n", argv[0]);
        return 2;
    }
    const char *regen_env = getenv("ST_REGEN");
    int regen = regen_env && strcmp(regen_env, "1") == 0;
    char *exe = gu_abspath(argv[1]);
    char *scratch = gu_mkdtemp();
    ok(scratch != NULL, "scratch directory");
    for (size_t i = 0; scratch && i < sizeof inputs / sizeof inputs[0]; i++) {
        char src[4096], dst[4096];
        snprintf(src, sizeof src, "%s/%s.trace-events", argv[2], inputs[i]);
        snprintf(dst, sizeof dst, "%s/%s.trace-events", scratch, inputs[i]);
        size_t len = 0;
        char *text = tu_slurp(src, &len);
        ok(text && gu_write_file(dst, text, len) == 0, "input %s copied", inputs[i]);
        free(text);
        for (size_t s = 0; s < sizeof selections / sizeof selections[0]; s++) {
            check_one(exe, argv[2], scratch, inputs[i], &selections[s], "h", regen);
            check_one(exe, argv[2], scratch, inputs[i], &selections[s], "c", regen);
        }
        for (size_t f = 0; f < sizeof tool_formats / sizeof tool_formats[0]; f++)
            check_tool_format(exe, argv[2], scratch, inputs[i], &tool_formats[f], regen);
    }
    if (scratch)
        gu_rm_rf(scratch);
    free(scratch);
    free(exe);
    return done_testing();
}
