/*
 * simpletrace compare [OPTIONS] [TRACE-EVENTS...] BASE NEW
 *
 * Two runs measured as latency measures one (src/analysis/) and compared:
 * each event's count and rate, each span's figures side by side with their
 * change and the Mann-Whitney U test of its durations; --fail-if turns a
 * change into exit status 3 for CI. This file parses the command line,
 * reads the runs one after the other (one reader open at a time) and says
 * which conditions were met.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simpletrace/reader.h>

#include "analysis.h"
#include "commands.h"
#include "duration.h"
#include "help_texts.h"
#include "nearest.h"
#include "reader_opts.h"
#include "span_opts.h"
#include "report_file.h"

#define PROG "simpletrace compare"
#define MAX_CONDS 64
#define DEFAULT_ALPHA 0.01
#define EXIT_FAIL_IF 3

enum compare_format { FORMAT_TEXT, FORMAT_JSON };

struct compare_cli {
    struct cli_input in[2]; /* base, new */
    struct st__an_options an;
    const char *functions[2]; /* --functions, given once per run */
    size_t nfunctions;
    enum compare_format format;
    const char *html;
    double alpha;
    const char *pairs[CLI_MAX_PAIRS];
    struct st__an_cond conds[MAX_CONDS];
    size_t nconds;
};

static const char *const run_name[2] = {"BASE", "NEW"};

static int usage_error(const char *fmt, const char *arg)
{
    return cli_usage_error("compare", fmt, arg);
}

/* --- options -------------------------------------------------------------------- */

static int parse_format(const char *arg, struct compare_cli *o)
{
    if (!strcmp(arg, "text"))
        o->format = FORMAT_TEXT;
    else if (!strcmp(arg, "json"))
        o->format = FORMAT_JSON;
    else
        return usage_error("unknown format '%s' (text or json)", arg);
    return 0;
}

static int parse_alpha(const char *arg, struct compare_cli *o)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !(v > 0 && v < 1))
        return usage_error("bad --alpha '%s' (a probability between 0 and 1, e.g. 0.01)", arg);
    o->alpha = v;
    return 0;
}

static int add_cond(const char *arg, struct compare_cli *o)
{
    char err[1024];
    if (o->nconds == MAX_CONDS)
        return usage_error("more than %s --fail-if conditions", "64");
    int ret = st__an_cond_parse(arg, &o->conds[o->nconds], err, sizeof err);
    if (ret == -ENOMEM) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    if (ret < 0)
        return usage_error("%s", err);
    o->nconds++;
    return 0;
}

static int add_functions(const char *arg, struct compare_cli *o)
{
    if (o->nfunctions == 2)
        return usage_error("--functions given more than twice ('%s'): once for BASE, then once for NEW", arg);
    o->functions[o->nfunctions++] = arg;
    return 0;
}

enum { OPT_PAIR = CLI_OPT_OWN, OPT_NO_DEFAULT_PAIRS, OPT_BY, OPT_FUNCTIONS, OPT_FORMAT, OPT_HTML, OPT_ALPHA,
       OPT_FAIL_IF, OPT_HELP };

static int parse_one(int c, struct compare_cli *o, char **argv)
{
    switch (c) {
    case OPT_PAIR: return cli_add_pair("compare", optarg, o->pairs, &o->an.npairs);
    case OPT_NO_DEFAULT_PAIRS: o->an.no_default_pairs = true; return 0;
    case OPT_BY: return cli_parse_by("compare", optarg, &o->an);
    case OPT_FUNCTIONS: return add_functions(optarg, o);
    case OPT_FORMAT: return parse_format(optarg, o);
    case OPT_HTML: o->html = optarg; return 0;
    case OPT_ALPHA: return parse_alpha(optarg, o);
    case OPT_FAIL_IF: return add_cond(optarg, o);
    case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
    default: {
        int r = cli_reader_option("compare", c, optarg, &o->in[0]);
        return r < 0 ? usage_error("unknown option '%s'", argv[optind - 1]) : r;
    }
    }
}

/* The checks that need the operands: --functions and the clock options, --html against the inputs. */
static int check_args(struct compare_cli *o)
{
    if (o->nfunctions == 1)
        return usage_error("--functions=%s: give it twice, the BASE run's function trace, then the NEW run's",
                           o->functions[0]);
    if (o->nfunctions && ((o->in[0].rd.flags & ST_READER_ALIGN_REALTIME) || o->in[0].noffset_args))
        return usage_error("%s", "--functions records one host's clock: its calls cannot be moved by --align or "
                                 "--offset (give traces of that host only)");
    for (int k = 0; o->html && k < 2; k++) {
        int ret = cli_check_output("compare", &o->in[k], o->html, false, o->functions[k]);
        if (ret >= 0)
            return ret;
    }
    return -1;
}

/* Parses argv into *o. Returns -1 to go on, or the exit status (0 for --help). */
static int parse_args(int argc, char **argv, struct compare_cli *o)
{
    static const struct option longopts[] = {
        {"pair", required_argument, NULL, OPT_PAIR},
        {"no-default-pairs", no_argument, NULL, OPT_NO_DEFAULT_PAIRS},
        {"by", required_argument, NULL, OPT_BY},
        {"functions", required_argument, NULL, OPT_FUNCTIONS},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"html", required_argument, NULL, OPT_HTML},
        {"alpha", required_argument, NULL, OPT_ALPHA},
        {"fail-if", required_argument, NULL, OPT_FAIL_IF},
        CLI_READER_LONGOPTS,
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    int c, ret = 0;
    opterr = 0;
    optind = 1;
    o->alpha = DEFAULT_ALPHA;
    while (ret == 0 && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h' || c == OPT_HELP) {
            fputs(st__help_compare, stdout);
            return 0;
        }
        ret = parse_one(c, o, argv);
    }
    if (ret)
        return ret;
    if ((ret = cli_trace_operands_pair("compare", argc, argv, optind, &o->in[0], &o->in[1])) != 0)
        return ret;
    o->an.pairs = o->pairs;
    o->an.slowest = 0; /* compare shows no single spans */
    return check_args(o);
}

/* --- reading the runs ------------------------------------------------------------------ */

/* Says what a run's figures do not hold: a rule that paired nothing, an --by argument no event declares. */
static void warnings(const struct compare_cli *o, int k, const struct st__an_result *res, const struct cli_trace *t)
{
    for (size_t i = 0; i < o->an.npairs && i < 64; i++)
        if (res->sum.unused_rules >> i & 1)
            fprintf(stderr, PROG ": warning: %s %s: --pair=%s pairs no declared events%s\n", run_name[k], t->trace,
                    o->pairs[i], strchr(o->pairs[i], '@') ? " (both must declare the key's argument)" : "");
    if (o->an.by != ST__AN_BY_ARG)
        return;
    const struct st_catalog *cat = st_reader_catalog(t->r);
    for (size_t i = 0; i <= st_catalog_count(cat); i++) {
        const struct st_event_info *ev = st_catalog_event(cat, i);
        for (unsigned a = 0; ev && a < ev->nargs; a++)
            if (strcmp(ev->args[a].name, o->an.by_arg) == 0)
                return;
    }
    fprintf(stderr, PROG ": warning: %s %s: --by=%s: no event declares an argument '%s' (every span is in group \"\")\n",
            run_name[k], t->trace, o->an.by_arg, o->an.by_arg);
}

/*
 * Measures run k into *res. 0; 1 after the messages when the trace is bad
 * (*res then holds the records before the damage, or is NULL); 2 for bad
 * options.
 */
static int measure(struct compare_cli *o, int k, struct st__an_result **res)
{
    struct cli_trace t;
    char err[2048];
    struct st__an_options an = o->an;
    *res = NULL;
    int status = cli_trace_open("compare", &o->in[k], &t);
    if (status != 0) {
        cli_trace_close(&t);
        return status;
    }
    an.trace_name = o->in[k].trace;
    an.functions = o->functions[k];
    an.not_damage = cli_not_damage;
    an.not_damage_opaque = &t;
    int ret = st__an_latency(t.r, &an, res, err, sizeof err);
    if (ret == 0) {
        cli_trace_report_filters(&t, &o->in[k]);
        warnings(o, k, *res, &t);
    } else {
        if (st_reader_error(t.r)->code != 0)
            cli_reader_error("compare", &t, &o->in[k], err, sizeof err);
        fprintf(stderr, PROG ": %s: %s\n", run_name[k], err[0] ? err : strerror(-ret));
        if (*res)
            fprintf(stderr, PROG ": the %s run's figures are of the records before that point\n", run_name[k]);
        status = 1;
    }
    cli_trace_close(&t);
    return status;
}

/* --- reports --------------------------------------------------------------------------- */

struct html_arg {
    const struct st__an_comparison *cmp;
    const struct st__an_report *rep;
};

static int write_html(FILE *f, const void *arg)
{
    const struct html_arg *h = arg;
    return st__an_write_compare_html(f, h->cmp, h->rep);
}

static int report(const struct compare_cli *o, const struct st__an_comparison *cmp)
{
    struct st__an_report rep = {.title = o->in[0].trace, .run_title = {o->in[0].trace, o->in[1].trace}};
    int ret = o->format == FORMAT_JSON ? st__an_write_compare_json(stdout, cmp, &rep)
                                       : st__an_write_compare_text(stdout, cmp, &rep);
    if (fflush(stdout) != 0 || ret < 0) {
        fprintf(stderr, PROG ": writing standard output: %s\n", strerror(errno));
        return 1;
    }
    struct html_arg h = {cmp, &rep};
    return o->html ? cli_report_file("compare", o->html, write_html, &h) : 0;
}

/* --- --fail-if -------------------------------------------------------------------------- */

static void print_value(FILE *f, enum st__an_field field, double v)
{
    char buf[32];
    if (field == ST__AN_F_COUNT)
        fprintf(f, "%.0f", v);
    else if (field == ST__AN_F_RATE)
        fprintf(f, "%.4g/s", v);
    else
        fputs(st__duration_text(buf, sizeof buf, (int64_t)llround(v)), f);
}

/* One line on stderr per span or event that met a condition. */
static void print_hit(const struct st__an_hit *h, void *opaque)
{
    (void)opaque;
    fprintf(stderr, PROG ": --fail-if=%s met by %s %s", h->cond->text, h->is_event ? "event" : "span", h->name);
    if (h->group)
        fprintf(stderr, " in group %s", h->group);
    fprintf(stderr, ": %s ", st__an_field_name(h->cond->field));
    print_value(stderr, h->cond->field, h->base);
    fputs(" -> ", stderr);
    print_value(stderr, h->cond->field, h->new_value);
    if (h->infinite)
        fputs(" (none in BASE)", stderr);
    else
        fprintf(stderr, " (%+.1f%%)", h->pct);
    if (st__an_field_tested(h->cond->field))
        fprintf(stderr, ", p = %.3g", h->p);
    fputc('\n', stderr);
}

/* A named condition whose name is in neither run: a misspelling, most likely. */
static void unknown_name(const struct st__an_comparison *cmp, const struct st__an_cond *c)
{
    struct st__nearest near;
    char names[256];
    bool events = !st__an_field_tested(c->field) && c->field != ST__AN_F_TOTAL;
    st__nearest_init(&near, c->name);
    for (size_t i = 0; i < cmp->nspans; i++)
        st__nearest_offer(&near, cmp->spans[i].name);
    for (size_t i = 0; events && i < cmp->nevents; i++)
        st__nearest_offer(&near, cmp->events[i].name);
    st__nearest_list(&near, names, sizeof names);
    fprintf(stderr, PROG ": warning: --fail-if=%s: no span%s named '%s' in either run%s%s%s\n", c->text,
            events ? " or event" : "", c->name, names[0] ? " (did you mean " : "", names, names[0] ? "?)" : "");
}

/* EXIT_FAIL_IF when any condition is met, else 0. */
static int fail_if(const struct compare_cli *o, const struct st__an_comparison *cmp)
{
    size_t met = 0;
    for (size_t i = 0; i < o->nconds; i++) {
        bool seen;
        met += st__an_cond_eval(cmp, &o->conds[i], &seen, print_hit, NULL);
        if (!seen)
            unknown_name(cmp, &o->conds[i]);
    }
    return met ? EXIT_FAIL_IF : 0;
}

/* --- running it -------------------------------------------------------------------------- */

static int run(struct compare_cli *o)
{
    struct st__an_result *res[2] = {NULL, NULL};
    struct st__an_comparison cmp;
    int status[2];
    for (int k = 0; k < 2; k++)
        if ((status[k] = measure(o, k, &res[k])) == 2 || (status[k] && !res[k])) {
            st__an_result_free(res[0]);
            return status[k];
        }
    int ret = 0;
    if (st__an_compare(res[0], res[1], o->alpha, &cmp) < 0) {
        fprintf(stderr, PROG ": out of memory\n");
        ret = 1;
    } else {
        ret = report(o, &cmp);
        if (ret == 0 && (status[0] || status[1])) {
            if (o->nconds)
                fprintf(stderr, PROG ": --fail-if not evaluated: a run's trace is damaged\n");
            ret = 1;
        } else if (ret == 0) {
            ret = fail_if(o, &cmp);
        }
        st__an_comparison_free(&cmp);
    }
    st__an_result_free(res[0]);
    st__an_result_free(res[1]);
    return ret;
}

int st__cmd_compare(int argc, char **argv)
{
    struct compare_cli o;
    memset(&o, 0, sizeof o);
    cli_input_init(&o.in[0]);
    cli_input_init(&o.in[1]);
    int status = parse_args(argc, argv, &o);
    if (status < 0)
        status = run(&o);
    cli_input_free(&o.in[0]);
    cli_input_free(&o.in[1]);
    for (size_t i = 0; i < o.nconds; i++)
        st__an_cond_free(&o.conds[i]);
    return status;
}
