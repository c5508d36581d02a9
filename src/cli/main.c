/* `simpletrace`: one command, one subcommand per job (cmd_*.c). */
#include <stdio.h>
#include <string.h>

#include <simpletrace/version.h>

#include "commands.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"gen", st_cmd_gen, "generate C code from trace-events files"},
    {"print", st_cmd_print, "print a trace file as text (like QEMU's simpletrace.py)"},
    {"stats", st_cmd_stats, "per-event counts, rates and drops of a trace file"},
    {"ctl", st_cmd_ctl, "list and steer running traced programs (monitor=on)"},
    {"recover", st_cmd_recover, "rebuild a trace from a dead program's crash=DIR ring files"},
    {"export", st_cmd_export, "convert a trace for uftrace or Perfetto/chrome://tracing"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: simpletrace COMMAND [ARGS...]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`simpletrace COMMAND --help` describes a command.\n");
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
    fprintf(stderr, "simpletrace: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
