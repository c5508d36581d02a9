/*
 * Golden files: for each tests/gen/golden/NAME.trace-events and each backend
 * selection TAG (simple, log, simple_log, nop), `simpletrace gen` must print
 * exactly NAME.TAG.h and NAME.TAG.c. It runs in a scratch directory holding
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
    struct gu_result r;
    gu_run(argv, scratch, &r);
    if (!ok(r.status == 0, "%s %s %s: generated", name, sel->tag, fmt))
        diag("%s", r.err ? r.err : "");
    size_t len = 0;
    char *got = gu_read_file(produced, &len);
    if (regen && got) {
        ok(gu_write_file(golden, got, len) == 0, "%s regenerated", golden);
    } else {
        char *want = gu_read_file(golden, NULL);
        if (!ok(got && want && strcmp(got, want) == 0, "%s %s %s: matches %s", name, sel->tag, fmt, golden) &&
            got && want)
            diag_first_difference(got, want);
        free(want);
    }
    free(got);
    gu_result_free(&r);
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
        char *text = gu_read_file(src, &len);
        ok(text && gu_write_file(dst, text, len) == 0, "input %s copied", inputs[i]);
        free(text);
        for (size_t s = 0; s < sizeof selections / sizeof selections[0]; s++) {
            check_one(exe, argv[2], scratch, inputs[i], &selections[s], "h", regen);
            check_one(exe, argv[2], scratch, inputs[i], &selections[s], "c", regen);
        }
    }
    if (scratch)
        gu_rm_rf(scratch);
    free(scratch);
    free(exe);
    return done_testing();
}
