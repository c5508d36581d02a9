/*
 * simpletrace latency [OPTIONS] [TRACE-EVENTS...] TRACE...
 *
 * The spans of paired events measured (src/analysis/): per span name (and
 * group, --by) count, percentiles, a histogram and the slowest spans,
 * as text, JSON or an HTML page. This file parses the command line and
 * says what the figures leave out.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simpletrace/reader.h>

#include "analysis.h"
#include "commands.h"
#include "help_texts.h"
#include "reader_opts.h"
#include "span_opts.h"
#include "report_file.h"

#define PROG "simpletrace latency"
#define DEFAULT_SLOWEST 5u

enum latency_format { FORMAT_TEXT, FORMAT_JSON };

struct latency_cli {
    struct cli_input in;
    struct st__an_options an;
    enum latency_format format;
    const char *html;
    const char *pairs[CLI_MAX_PAIRS];
    char *print_prefix; /* "simpletrace print OPERANDS" for the slowest spans (owned) */
};

static int usage_error(const char *fmt, const char *arg)
{
    return cli_usage_error("latency", fmt, arg);
}

/* --- options -------------------------------------------------------------------- */

static int parse_slowest(const char *arg, struct latency_cli *o)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(arg, &end, 10);
    if (errno || end == arg || *end || arg[0] == '-' || v > 10000)
        return usage_error("bad --slowest '%s' (0..10000)", arg);
    o->an.slowest = (unsigned)v;
    return 0;
}

static int parse_format(const char *arg, struct latency_cli *o)
{
    if (!strcmp(arg, "text"))
        o->format = FORMAT_TEXT;
    else if (!strcmp(arg, "json"))
        o->format = FORMAT_JSON;
    else
        return usage_error("unknown format '%s' (text or json)", arg);
    return 0;
}

enum { OPT_PAIR = CLI_OPT_OWN, OPT_NO_DEFAULT_PAIRS, OPT_BY, OPT_SLOWEST, OPT_FUNCTIONS, OPT_FORMAT, OPT_HTML, OPT_HELP };

static int parse_one(int c, struct latency_cli *o, char **argv)
{
    switch (c) {
    case OPT_PAIR: return cli_add_pair("latency", optarg, o->pairs, &o->an.npairs);
    case OPT_NO_DEFAULT_PAIRS: o->an.no_default_pairs = true; return 0;
    case OPT_BY: return cli_parse_by("latency", optarg, &o->an);
    case OPT_SLOWEST: return parse_slowest(optarg, o);
    case OPT_FUNCTIONS: o->an.functions = optarg; return 0;
    case OPT_FORMAT: return parse_format(optarg, o);
    case OPT_HTML: o->html = optarg; return 0;
    case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
    default: {
        int r = cli_reader_option("latency", c, optarg, &o->in);
        return r < 0 ? usage_error("unknown option '%s'", argv[optind - 1]) : r;
    }
    }
}

/* Appends word to *s, quoted for a POSIX shell when it needs it. -ENOMEM. */
static int append_word(char **s, size_t *len, const char *word)
{
    bool plain = word[0] != '\0' && strspn(word, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                 "_-+./=:,@%") == strlen(word);
    size_t need = *len + 4 * strlen(word) + 4;
    char *n = realloc(*s, need);
    if (!n)
        return -ENOMEM;
    *s = n;
    char *p = n + *len;
    *p++ = ' ';
    if (!plain)
        *p++ = '\'';
    for (const char *w = word; *w; w++) {
        if (*w == '\'' && !plain) {
            memcpy(p, "'\\''", 4);
            p += 4;
        } else {
            *p++ = *w;
        }
    }
    if (!plain)
        *p++ = '\'';
    *p = '\0';
    *len = (size_t)(p - n);
    return 0;
}

/* The print command that shows what a slowest span's window holds: the same operands and clock. */
static int make_print_prefix(struct latency_cli *o, int argc, char **argv, int first)
{
    size_t len = strlen("simpletrace print");
    if (!(o->print_prefix = strdup("simpletrace print")))
        return -ENOMEM;
    if ((o->in.rd.flags & ST_READER_ALIGN_REALTIME) && append_word(&o->print_prefix, &len, "--align=realtime") < 0)
        return -ENOMEM;
    if ((o->in.rd.flags & ST_READER_NO_HEADER) && append_word(&o->print_prefix, &len, "--no-header") < 0)
        return -ENOMEM;
    for (size_t i = 0; i < o->in.noffset_args; i++) {
        char opt[4200];
        snprintf(opt, sizeof opt, "--offset=%s", o->in.offset_args[i]);
        if (append_word(&o->print_prefix, &len, opt) < 0)
            return -ENOMEM;
    }
    for (int i = first; i < argc; i++)
        if (append_word(&o->print_prefix, &len, argv[i]) < 0)
            return -ENOMEM;
    return 0;
}

/* Parses argv into *o. Returns -1 to go on, or the exit status (0 for --help). */
static int parse_args(int argc, char **argv, struct latency_cli *o)
{
    static const struct option longopts[] = {
        {"pair", required_argument, NULL, OPT_PAIR},
        {"no-default-pairs", no_argument, NULL, OPT_NO_DEFAULT_PAIRS},
        {"by", required_argument, NULL, OPT_BY},
        {"slowest", required_argument, NULL, OPT_SLOWEST},
        {"functions", required_argument, NULL, OPT_FUNCTIONS},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"html", required_argument, NULL, OPT_HTML},
        CLI_READER_LONGOPTS,
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    int c, ret = 0;
    opterr = 0;
    optind = 1;
    o->an.slowest = DEFAULT_SLOWEST;
    while (ret == 0 && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h' || c == OPT_HELP) {
            fputs(st__help_latency, stdout);
            return 0;
        }
        ret = parse_one(c, o, argv);
    }
    if (ret)
        return ret;
    int first = optind;
    if (cli_trace_operands("latency", argc, argv, optind, &o->in))
        return 2;
    if (o->an.functions && ((o->in.rd.flags & ST_READER_ALIGN_REALTIME) || o->in.noffset_args))
        return usage_error("%s", "--functions records one host's clock: its calls cannot be moved by --align or "
                                 "--offset (give traces of that host only)");
    o->an.pairs = o->pairs;
    o->an.trace_name = o->in.trace;
    if (make_print_prefix(o, argc, argv, first) < 0) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    return o->html ? cli_check_output("latency", &o->in, o->html, false, o->an.functions) : -1;
}

/* --- running it -------------------------------------------------------------------------- */

/* Says what the figures do not hold: a rule that paired nothing, an --by argument no event declares. */
static void warnings(const struct latency_cli *o, const struct st__an_result *res, const struct cli_trace *t)
{
    for (size_t k = 0; k < o->an.npairs && k < 64; k++)
        if (res->sum.unused_rules >> k & 1)
            fprintf(stderr, PROG ": warning: --pair=%s pairs no declared events%s\n", o->pairs[k],
                    strchr(o->pairs[k], '@') ? " (both must declare the key's argument)" : "");
    if (o->an.by == ST__AN_BY_ARG) {
        const struct st_catalog *cat = st_reader_catalog(t->r);
        bool declared = false;
        for (size_t i = 0; !declared && i <= st_catalog_count(cat); i++) {
            const struct st_event_info *ev = st_catalog_event(cat, i);
            for (unsigned k = 0; ev && k < ev->nargs && !declared; k++)
                declared = strcmp(ev->args[k].name, o->an.by_arg) == 0;
        }
        if (!declared)
            fprintf(stderr, PROG ": warning: --by=%s: no event declares an argument '%s' (every span is in group \"\")\n",
                    o->an.by_arg, o->an.by_arg);
    }
}

struct html_arg {
    const struct st__an_result *res;
    const struct st__an_report *rep;
};

static int write_html(FILE *f, const void *arg)
{
    const struct html_arg *h = arg;
    return st__an_write_html(f, h->res, h->rep);
}

static int report(const struct latency_cli *o, const struct st__an_result *res)
{
    struct st__an_report rep = {.print_prefix = o->print_prefix, .title = o->in.trace};
    int ret = o->format == FORMAT_JSON ? st__an_write_json(stdout, res, &rep) : st__an_write_text(stdout, res, &rep);
    if (fflush(stdout) != 0 || ret < 0) {
        fprintf(stderr, PROG ": writing standard output: %s\n", strerror(errno));
        return 1;
    }
    struct html_arg h = {res, &rep};
    return o->html ? cli_report_file("latency", o->html, write_html, &h) : 0;
}

static int run(struct latency_cli *o, const struct cli_trace *t)
{
    struct st__an_result *res;
    char err[2048];
    o->an.not_damage = cli_not_damage;
    o->an.not_damage_opaque = (void *)t;
    int ret = st__an_latency(t->r, &o->an, &res, err, sizeof err);
    int status = res ? report(o, res) : 0;
    if (ret == 0) {
        cli_trace_report_filters(t, &o->in);
        warnings(o, res, t);
    } else {
        if (st_reader_error(t->r)->code != 0)
            cli_reader_error("latency", t, &o->in, err, sizeof err);
        fprintf(stderr, PROG ": %s\n", err[0] ? err : strerror(-ret));
        if (res)
            fprintf(stderr, PROG ": the figures above are of the records before that point\n");
        status = 1;
    }
    st__an_result_free(res);
    return status;
}

int st__cmd_latency(int argc, char **argv)
{
    struct latency_cli o;
    memset(&o, 0, sizeof o);
    cli_input_init(&o.in);
    int status = parse_args(argc, argv, &o);
    if (status < 0) {
        struct cli_trace t;
        memset(&t, 0, sizeof t);
        if ((status = cli_trace_open("latency", &o.in, &t)) == 0)
            status = run(&o, &t);
        cli_trace_close(&t);
    }
    cli_input_free(&o.in);
    free(o.print_prefix);
    return status;
}
