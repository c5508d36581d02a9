/*
 * The `simpletrace` command itself (src/cli/main.c): a misspelt subcommand
 * is named with the nearest one and a pointer to --help, exit 2.
 *
 * usage: test_cli_commands SIMPLETRACE_EXE
 */
#include "rd_util.h"
#include "tap.h"

static const char *exe;

/* Runs simpletrace with the arguments up to a NULL, stdin from /dev/null. */
static void run(struct tu_run *res, ...)
{
    char *argv[16] = {(char *)exe};
    va_list ap;
    va_start(ap, res);
    for (int i = 1; i < 15 && (argv[i] = va_arg(ap, char *)) != NULL; i++)
        ;
    va_end(ap);
    if (rd_run(argv, NULL, res) != 0)
        memset(res, 0, sizeof *res);
}

/* A misspelt subcommand: one line naming the nearest command, a pointer to --help, exit 2. */
static void test_unknown_command(void)
{
    static const struct {
        const char *typed, *want;
    } cases[] = {
        {"prnt", "simpletrace: unknown command 'prnt' (did you mean 'print'?)\nTry 'simpletrace --help'.\n"},
        {"exprot", "simpletrace: unknown command 'exprot' (did you mean 'export'?)\nTry 'simpletrace --help'.\n"},
        {"stat", "simpletrace: unknown command 'stat' (did you mean 'stats'?)\nTry 'simpletrace --help'.\n"},
        {"xyzzy", "simpletrace: unknown command 'xyzzy'\nTry 'simpletrace --help'.\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tu_run r;
        run(&r, cases[i].typed, "trace", NULL);
        ok(r.status == 2 && r.out && !r.out[0] && r.err && !strcmp(r.err, cases[i].want),
           "simpletrace %s: exit 2, '%.*s'", cases[i].typed, (int)strcspn(r.err ? r.err : "", "\n"),
           r.err ? r.err : "");
        tu_run_free(&r);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SIMPLETRACE_EXE\n", argv[0]);
        return 2;
    }
    exe = argv[1];
    test_unknown_command();
    return done_testing();
}
