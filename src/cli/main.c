/* `simpletrace`: one command, one subcommand per job (cmd_*.c). */
#include <stdio.h>
#include <string.h>

#include <simpletrace/version.h>

#include "commands.h"
#include "help_texts.h"
#include "nearest.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
};

/* The summaries are in doc/simpletrace.1.txt, which makes the --help text and the man page. */
static const struct command commands[] = {
    {"gen", st__cmd_gen}, {"print", st__cmd_print},     {"stats", st__cmd_stats},
    {"ctl", st__cmd_ctl}, {"recover", st__cmd_recover}, {"export", st__cmd_export},
    {"info", st__cmd_info}, {"merge", st__cmd_merge},     {"latency", st__cmd_latency},
    {"compare", st__cmd_compare},
    {"sql", st__cmd_sql},
};

static void usage(FILE *out)
{
    fputs(st__help_main, out);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("simpletrace %s\n", SIMPLETRACE_VERSION_STRING);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    struct st__nearest near;
    char names[256];
    st__nearest_init(&near, argv[1]);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        st__nearest_offer(&near, commands[i].name);
    if (st__nearest_list(&near, names, sizeof names))
        fprintf(stderr, "simpletrace: unknown command '%s' (did you mean %s?)\n", argv[1], names);
    else
        fprintf(stderr, "simpletrace: unknown command '%s'\n", argv[1]);
    fputs("Try 'simpletrace --help'.\n", stderr);
    return 2;
}
