/*
 * simpletrace gen: C code (and DTrace, SystemTap and LTTng-UST files) from
 * trace-events files (the generator is in src/gen/). Exit status: 0 done, 1 bad input or I/O error (nothing
 * written), 2 usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "help_texts.h"
#include "gen.h"
#include "out_file.h"

#define EXIT_INPUT 1
#define EXIT_USAGE 2

/* --help: doc/simpletrace-gen.1.txt, also the man page (doc/check_gen_help.c checks its --format list). */
static void usage(FILE *f)
{
    fputs(st__help_gen, f);
}

static int usage_error(const char *fmt, const char *what)
{
    fprintf(stderr, "simpletrace gen: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\nTry 'simpletrace gen --help'.\n");
    return EXIT_USAGE;
}

static void list_backends(FILE *f)
{
    const struct st__gen_backend *const *b = st__gen_backends();
    for (size_t i = 0; b[i]; i++)
        fprintf(f, "%-8s %s\n", b[i]->name, b[i]->summary);
}

/* Fills opt->backends from a comma-separated list; 0 or the exit status. */
static int parse_backends(struct st__gen_options *opt, const char *list)
{
    opt->nbackends = 0;
    const char *p = list;
    for (;;) {
        size_t n = strcspn(p, ",");
        const struct st__gen_backend *b = st__gen_backend_find(p, n);
        if (!b) {
            fprintf(stderr, "simpletrace gen: unknown backend '%.*s'; known backends:", (int)n, p);
            const struct st__gen_backend *const *all = st__gen_backends();
            for (size_t i = 0; all[i]; i++)
                fprintf(stderr, " %s", all[i]->name);
            fprintf(stderr, "\n");
            return EXIT_USAGE;
        }
        for (unsigned i = 0; i < opt->nbackends; i++)
            if (opt->backends[i] == b)
                return usage_error("backend '%s' given twice", b->name);
        if (opt->nbackends == ST_GEN_MAX_BACKENDS)
            return usage_error("too many backends in '%s'", list);
        opt->backends[opt->nbackends++] = b;
        if (p[n] == '\0')
            return 0;
        p += n + 1;
    }
}

/* Command-line state before validation. */
struct gen_args {
    const char *format, *backends, *group, *output, *provider, *binary, *probe_prefix;
    bool list, help;
    char **inputs;
    size_t ninputs;
};

/*
 * Matches argv[*i] against option name ("--format"): accepts "--format=V" and
 * "--format V". Returns 1 with *value set, 0 if it is another option, or
 * -1 when the value is missing.
 */
static int take_value(char **argv, int argc, int *i, const char *name, const char **value)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *value = argv[++*i];
    return 1;
}

/* Parses one option at argv[*i]; 0 or the exit status. */
static int parse_option(struct gen_args *a, int argc, char **argv, int *i)
{
    static const char *const names[] = {"--format", "--backends", "--group",       "--output",
                                        "-o",       "--provider", "--probe-prefix", "--binary"};
    const char **slots[] = {&a->format, &a->backends, &a->group,        &a->output,
                            &a->output, &a->provider, &a->probe_prefix, &a->binary};
    const char *arg = argv[*i];
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
        a->help = true;
        return 0;
    }
    if (!strcmp(arg, "--list-backends")) {
        a->list = true;
        return 0;
    }
    if (!strncmp(arg, "-o", 2) && arg[2] != '\0') {
        a->output = arg + 2; /* -oOUT */
        return 0;
    }
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        int r = take_value(argv, argc, i, names[k], slots[k]);
        if (r < 0)
            return usage_error("option '%s' needs a value", names[k]);
        if (r > 0)
            return 0;
    }
    return usage_error("unknown option '%s'", arg);
}

static int parse_command_line(struct gen_args *a, int argc, char **argv)
{
    a->inputs = calloc((size_t)argc + 1, sizeof *a->inputs);
    if (!a->inputs) {
        fprintf(stderr, "simpletrace gen: out of memory\n");
        return EXIT_INPUT;
    }
    bool options_done = false;
    for (int i = 1; i < argc; i++) {
        if (!options_done && !strcmp(argv[i], "--")) {
            options_done = true;
        } else if (!options_done && argv[i][0] == '-' && argv[i][1] != '\0') {
            int rc = parse_option(a, argc, argv, &i);
            if (rc)
                return rc;
        } else {
            a->inputs[a->ninputs++] = argv[i];
        }
    }
    return 0;
}

/* True when s is identifiers joined by dots (a SystemTap probe name prefix). */
static bool is_probe_prefix(const char *s)
{
    char part[256];
    for (;;) {
        size_t n = strcspn(s, ".");
        if (n == 0 || n >= sizeof part)
            return false;
        memcpy(part, s, n);
        part[n] = '\0';
        if (!st__gen_is_identifier(part))
            return false;
        if (s[n] == '\0')
            return true;
        s += n + 1;
    }
}

/* Checks --provider, --binary and --probe-prefix; 0 or the exit status. */
static int check_tool_options(const struct gen_args *a, const struct st__gen_format_info *fmt,
                              struct st__gen_options *opt)
{
    if (a->provider && (!st__gen_is_identifier(a->provider) || strlen(a->provider) > 200))
        return usage_error("provider name '%s' is not a C identifier (of at most 200 characters)", a->provider);
    if (a->probe_prefix && !is_probe_prefix(a->probe_prefix))
        return usage_error("probe prefix '%s' is not identifiers joined by dots", a->probe_prefix);
    if (fmt->needs_binary && (!a->binary || !a->binary[0]))
        return usage_error("--format=%s needs --binary=PATH (the traced program)", fmt->name);
    opt->provider = a->provider;
    opt->binary = a->binary;
    opt->probe_prefix = a->probe_prefix;
    return 0;
}

/* Turns parsed arguments into generator options; 0 or the exit status. */
static int make_options(const struct gen_args *a, struct st__gen_options *opt, char *group, size_t group_len)
{
    if (!a->format)
        return usage_error("%s", "--format=h or --format=c is required");
    const struct st__gen_format_info *fmt = st__gen_format_find(a->format);
    if (!fmt)
        return usage_error("unknown format '%s' (see --help)", a->format);
    opt->format = fmt->format;
    int rc = parse_backends(opt, a->backends ? a->backends : "simple");
    if (rc)
        return rc;
    rc = check_tool_options(a, fmt, opt);
    if (rc)
        return rc;
    if (a->output && a->output[0] == '\0')
        return usage_error("%s", "empty output file name");
    opt->output = a->output;
    if (a->group) {
        if (!st__gen_is_identifier(a->group) || strlen(a->group) >= group_len)
            return usage_error("group name '%s' is not a C identifier (of at most 255 characters)", a->group);
        snprintf(group, group_len, "%s", a->group);
    } else {
        st__gen_default_group(a->output, group, group_len);
    }
    opt->group = group;
    if (a->ninputs == 0)
        return usage_error("%s", "no trace-events file given");
    return 0;
}

/* Refuses an -o that is one of the trace-events files or the --binary (it would be replaced); 0 or the exit status. */
static int check_output(const struct gen_args *a)
{
    struct st__out_input *in = calloc(a->ninputs + 1, sizeof *in);
    char msg[8400];
    bool clash;

    if (!in) {
        fprintf(stderr, "simpletrace gen: out of memory\n");
        return EXIT_INPUT;
    }
    for (size_t i = 0; i < a->ninputs; i++)
        in[i].path = a->inputs[i];
    in[a->ninputs].path = a->binary;
    clash = st__out_is_input(a->output, false, in, a->ninputs + 1, msg, sizeof msg);
    free(in);
    return clash ? usage_error("%s", msg) : 0;
}

int st__cmd_gen(int argc, char **argv)
{
    struct gen_args a = {0};
    struct st__gen_options opt = {0};
    char group[256];
    int rc = parse_command_line(&a, argc, argv);
    if (rc == 0 && a.help) {
        usage(stdout);
    } else if (rc == 0 && a.list) {
        list_backends(stdout);
    } else if (rc == 0 && (rc = make_options(&a, &opt, group, sizeof group)) == 0 && (rc = check_output(&a)) == 0) {
        char err[2048];
        if (st__gen_run(&opt, a.inputs, a.ninputs, err, sizeof err) != 0) {
            fprintf(stderr, "simpletrace gen: %s\n", err);
            rc = EXIT_INPUT;
        }
    }
    free(a.inputs);
    return rc;
}
