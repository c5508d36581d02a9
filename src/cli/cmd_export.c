/*
 * simpletrace export --format=uftrace|chrome|perfetto|ctf|folded|parquet -o OUT [OPTIONS] [TRACE-EVENTS...] TRACE-FILE...
 *
 * Converts a trace for uftrace (a uftrace.data directory), for Perfetto
 * UI / chrome://tracing (trace-event JSON), for Perfetto UI and
 * trace_processor (Perfetto's protobuf), for babeltrace2 and Trace
 * Compass (a CTF directory), for flame graphs (collapsed stacks) or for DuckDB, Spark and the other SQL
 * engines (a directory of Parquet files) with the exporter (src/export/),
 * which reads the trace through the public reader API: the same options
 * and the same error messages as `simpletrace print`. This file parses the
 * command line, shows progress on a terminal and prints the summary.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <simpletrace/reader.h>

#include "commands.h"
#include "help_texts.h"
#include "reader_opts.h"
#include "span_opts.h"
#include "export.h"
#include "out_file.h"
#include "uftrace_format.h"

#define PROG "simpletrace export"

/* --help: doc/simpletrace-export.1.txt, also the man page. */

struct export_cli {
    struct cli_input in;
    struct st__export_options ex;
    bool format_set, root_set, quiet;
    const char *pairs[CLI_MAX_PAIRS];
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

static int usage_error(const char *fmt, const char *arg)
{
    return cli_usage_error("export", fmt, arg);
}

/* --- options -------------------------------------------------------------------- */

static int parse_uint(const char *arg, unsigned long max, unsigned long *v)
{
    char *end;
    errno = 0;
    *v = strtoul(arg, &end, 10);
    return errno || end == arg || *end || *arg == '-' || *v > max ? -1 : 0;
}

static int parse_count(const char *arg, unsigned long max, unsigned *out, const char *what)
{
    unsigned long v;
    if (parse_uint(arg, max, &v) < 0 || v == 0)
        return usage_error(what, arg);
    *out = (unsigned)v;
    return 0;
}

/* --format names, by enum st__export_format. */
static const char *const format_names[] = {"uftrace", "chrome", "perfetto", "ctf", "folded", "parquet"};

static int parse_format(const char *arg, struct export_cli *o)
{
    for (size_t i = 0; i < sizeof format_names / sizeof *format_names; i++)
        if (!strcmp(arg, format_names[i])) {
            o->ex.format = (enum st__export_format)i;
            o->format_set = true;
            return 0;
        }
    return usage_error("unknown format '%s' (uftrace, chrome, perfetto, ctf, folded or parquet)", arg);
}

/* --folded-root names, by enum st__export_root. */
static const char *const root_names[] = {"none", "program", "process", "thread"};

static int parse_root(const char *arg, struct export_cli *o)
{
    for (size_t i = 0; i < sizeof root_names / sizeof *root_names; i++)
        if (!strcmp(arg, root_names[i])) {
            o->ex.folded_root = (enum st__export_root)i;
            o->root_set = true;
            return 0;
        }
    return usage_error("unknown --folded-root '%s' (none, program, process or thread)", arg);
}

/* --partition=host,pid (either, or both in any order): parquet's Hive-style directories. */
static int parse_partition(const char *arg, struct export_cli *o)
{
    char copy[64];
    if (strlen(arg) >= sizeof copy)
        return usage_error("bad --partition '%s' (host, pid or host,pid)", arg);
    strcpy(copy, arg);
    unsigned flags = 0;
    for (char *save, *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        unsigned f = !strcmp(w, "host") ? ST_EXPORT_PARTITION_HOST : !strcmp(w, "pid") ? ST_EXPORT_PARTITION_PID : 0;
        if (!f || (flags & f))
            return usage_error("bad --partition '%s' (host, pid or host,pid)", arg);
        flags |= f;
    }
    if (!flags)
        return usage_error("bad --partition '%s' (host, pid or host,pid)", arg);
    o->ex.partition = flags;
    return 0;
}

enum {
    OPT_FORMAT = CLI_OPT_OWN, OPT_PAIR, OPT_NO_DEFAULT_PAIRS, OPT_MAX_DEPTH, OPT_MAX_OPEN, OPT_FUNCTIONS, OPT_HELP,
    OPT_FOLDED_ROOT,
    OPT_PARTITION,
};

static int parse_one(int c, struct export_cli *o, char **argv)
{
    switch (c) {
    case OPT_FORMAT: return parse_format(optarg, o);
    case 'o': o->ex.output = optarg; return 0;
    case OPT_PAIR: return cli_add_pair("export", optarg, o->pairs, &o->ex.npairs);
    case OPT_NO_DEFAULT_PAIRS: o->ex.no_default_pairs = true; return 0;
    case OPT_FUNCTIONS: o->ex.functions = optarg; return 0;
    case OPT_FOLDED_ROOT: return parse_root(optarg, o);
    case OPT_PARTITION: return parse_partition(optarg, o);
    case OPT_MAX_DEPTH: return parse_count(optarg, 65535, &o->ex.max_depth, "bad --max-depth '%s' (1..65535)");
    case OPT_MAX_OPEN: return parse_count(optarg, 65536, &o->ex.max_open_files, "bad --max-open-files '%s'");
    case 'q': o->quiet = true; return 0;
    case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
    default: {
        int r = cli_reader_option("export", c, optarg, &o->in);
        return r < 0 ? usage_error("unknown option '%s'", argv[optind - 1]) : r;
    }
    }
}

/* True when name ends in suffix. */
static bool ends_with(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    return n >= s && strcmp(name + n - s, suffix) == 0;
}

/*
 * Refuses an -o that is one of the inputs: a trace (or its pieces), a
 * trace-events file, --functions's directory, or for a directory output
 * (uftrace, ctf, parquet) one holding any of them. -1 to go on, or the exit status.
 */
static int check_output(const struct export_cli *o)
{
    bool dir = o->ex.format == ST_EXPORT_UFTRACE || o->ex.format == ST_EXPORT_CTF || o->ex.format == ST_EXPORT_PARQUET;
    return cli_check_output("export", &o->in, o->ex.output, dir, o->ex.functions);
}

/* Parses argv into *o. Returns -1 to go on, or the exit status (0 for --help). */
static int parse_args(int argc, char **argv, struct export_cli *o)
{
    static const struct option longopts[] = {
        {"format", required_argument, NULL, OPT_FORMAT},   {"output", required_argument, NULL, 'o'},
        {"pair", required_argument, NULL, OPT_PAIR},       {"no-default-pairs", no_argument, NULL, OPT_NO_DEFAULT_PAIRS},
        {"max-depth", required_argument, NULL, OPT_MAX_DEPTH},
        {"max-open-files", required_argument, NULL, OPT_MAX_OPEN},
        {"functions", required_argument, NULL, OPT_FUNCTIONS},
        {"folded-root", required_argument, NULL, OPT_FOLDED_ROOT},
        {"partition", required_argument, NULL, OPT_PARTITION},
        CLI_READER_LONGOPTS,
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, OPT_HELP},             {NULL, 0, NULL, 0},
    };
    int c, ret = 0;
    opterr = 0;
    optind = 1;
    while (ret == 0 && (c = getopt_long(argc, argv, ":ho:q", longopts, NULL)) != -1) {
        if (c == 'h' || c == OPT_HELP) {
            fputs(st__help_export, stdout);
            return 0;
        }
        ret = parse_one(c, o, argv);
    }
    if (ret)
        return ret;
    if (cli_trace_operands("export", argc, argv, optind, &o->in))
        return 2;
    if (!o->ex.output)
        return usage_error("%s", "need -o OUT (a directory for uftrace, ctf and parquet, a file for chrome, perfetto "
                                 "and folded)");
    if (!o->format_set)
        o->ex.format = ends_with(o->ex.output, ".json") || !strcmp(o->ex.output, "-") ? ST_EXPORT_CHROME
                       : ends_with(o->ex.output, ".pftrace")                         ? ST_EXPORT_PERFETTO
                       : ends_with(o->ex.output, ".folded")                          ? ST_EXPORT_FOLDED
                                                                                      : ST_EXPORT_UFTRACE;
    if (o->root_set && o->ex.format != ST_EXPORT_FOLDED)
        return usage_error("--folded-root is for folded only, not %s", format_names[o->ex.format]);
    if (o->ex.functions && ((o->in.rd.flags & ST_READER_ALIGN_REALTIME) || o->in.noffset_args))
        return usage_error("%s", "--functions records one host's clock: its calls cannot be moved by --align or "
                                 "--offset (give traces of that host only)");
    if (o->ex.format != ST_EXPORT_CHROME && o->ex.format != ST_EXPORT_FOLDED && !strcmp(o->ex.output, "-"))
        return usage_error("-o - is for chrome and folded only, not %s", format_names[o->ex.format]);
    if (o->ex.partition && o->ex.format != ST_EXPORT_PARQUET)
        return usage_error("--partition is for parquet only, not %s", format_names[o->ex.format]);
    o->ex.realtime = (o->in.rd.flags & ST_READER_ALIGN_REALTIME) != 0;
    o->ex.pairs = o->pairs;
    o->ex.trace_name = o->in.trace;
    return check_output(o);
}

/* --- progress ------------------------------------------------------------------------ */

struct progress {
    bool show;            /* stderr is a terminal and not --quiet */
    bool shown;           /* a progress line is on the screen */
    uint64_t total;       /* size of the trace file, 0 if unknown (a pipe) */
    struct timespec next; /* no update before this */
};

static bool time_passed(struct timespec *next)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec < next->tv_sec || (now.tv_sec == next->tv_sec && now.tv_nsec < next->tv_nsec))
        return false;
    *next = now;
    next->tv_nsec += 250 * 1000 * 1000; /* four updates a second at most */
    if (next->tv_nsec >= 1000000000) {
        next->tv_sec++;
        next->tv_nsec -= 1000000000;
    }
    return true;
}

/* The exporter's callback: shows where it is, and stops it on a signal. */
static int on_progress(const struct st__export_progress *p, void *opaque)
{
    struct progress *pr = opaque;
    if (pr->show && time_passed(&pr->next)) {
        if (pr->total)
            fprintf(stderr, "\r" PROG ": %3u%%  %.1fM records", (unsigned)(p->bytes * 100 / pr->total),
                    (double)p->records / 1e6);
        else
            fprintf(stderr, "\r" PROG ": %.1fM records", (double)p->records / 1e6);
        pr->shown = true;
    }
    return interrupted;
}

/* Size of the regular file at path, 0 if it is something else or unknown. */
static uint64_t file_size(const char *path)
{
    struct stat st;
    return strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
}

/* The bytes of a rotated trace's pieces (the reader's byte count runs over all of them), or 0. */
static uint64_t pieces_size(const char *path)
{
    uint64_t first, count, total = 0;
    if (st_rotated_find(path, &first, &count) < 0)
        return 0;
    for (uint64_t k = first; k - first < count; k++) {
        char name[4096];
        if (st_rotated_piece_name(name, sizeof name, path, k) == 0)
            total += file_size(name);
    }
    return total;
}

static void progress_init(struct progress *pr, const struct export_cli *o)
{
    memset(pr, 0, sizeof *pr);
    pr->show = !o->quiet && isatty(STDERR_FILENO);
    for (size_t i = 0; i < o->in.ntraces; i++)
        pr->total += o->in.rd.flags & ST_READER_ROTATED ? pieces_size(o->in.traces[i]) : file_size(o->in.traces[i]);
    clock_gettime(CLOCK_MONOTONIC, &pr->next);
    pr->next.tv_sec++; /* short conversions show nothing */
}

static void progress_clear(struct progress *pr)
{
    if (pr->shown)
        fputs("\r\033[K", stderr);
    pr->shown = false;
}

/* --- the summary ----------------------------------------------------------------------- */

static const char *plural(uint64_t n)
{
    return n == 1 ? "" : "s";
}

/* Appends ", N WHAT" (WHATS when N != 1) to the unmatched list when N is not 0. */
static void add_count(char *buf, size_t len, uint64_t n, const char *one, const char *many)
{
    size_t used = strlen(buf);
    if (n && used < len)
        snprintf(buf + used, len - used, "%s%" PRIu64 " %s", used ? ", " : "", n, n == 1 ? one : many);
}

/* The summary line (and a second one for odd cases), on stderr. */
static void summary(const struct export_cli *o, const struct st__export_summary *s)
{
    bool uft = o->ex.format == ST_EXPORT_UFTRACE, folded = o->ex.format == ST_EXPORT_FOLDED;
    const char *fmt = format_names[o->ex.format];
    char odd[1024] = "";
    add_count(odd, sizeof odd, s->unmatched_ends, "end without a begin (kept as an instant event)",
              "ends without a begin (kept as instant events)");
    add_count(odd, sizeof odd, s->never_ended, "begin never ended (closed at the end of the trace)",
              "begins never ended (closed at the end of the trace)");
    add_count(odd, sizeof odd, s->closed_early, "call closed early by the end of an outer one",
              "calls closed early by the end of outer ones");
    add_count(odd, sizeof odd, s->key_reused, "keyed span ended by its key beginning again",
              "keyed spans ended by their key beginning again");
    add_count(odd, sizeof odd, s->too_deep, "begin too deep (left out, see --max-depth)",
              "begins too deep (left out, see --max-depth)");
    fprintf(stderr,
            PROG ": wrote %s (%s): %" PRIu64 " record%s, %" PRIu64 " thread%s: %" PRIu64 " call%s of %" PRIu64
                 " function%s, %" PRIu64 " instant event%s, %" PRIu64 " drop mark%s (%" PRIu64 " records lost)%s%s%s\n",
            o->ex.output, fmt, s->records, plural(s->records), s->threads, plural(s->threads),
            s->calls, plural(s->calls), s->functions, plural(s->functions), s->instants, plural(s->instants),
            s->drop_marks, plural(s->drop_marks), s->dropped_events, odd[0] ? "; unmatched: " : "", odd,
            uft && s->instants ? "; left out: the arguments of instant events (uftrace events have names only)"
            : folded && (s->instants || s->drop_marks) ? "; left out: instant events and drop marks (stacks hold calls)"
                                                        : "");
    if (s->function_records || o->ex.functions)
        fprintf(stderr, PROG ": %" PRIu64 " record%s of the function trace %s merged%s\n", s->function_records,
                plural(s->function_records), o->ex.functions,
                s->function_events ? " (its EVENT records left out: only calls are read)" : "");
    if (s->clamped)
        fprintf(stderr, PROG ": %" PRIu64 " timestamp%s went back within %s thread and %s raised\n", s->clamped,
                plural(s->clamped), s->clamped == 1 ? "its" : "their", s->clamped == 1 ? "was" : "were");
    if (s->names_cut)
        fprintf(stderr, PROG ": %" PRIu64 " name%s longer than %u bytes cut to that, ending in \"" ST_UFT_NAME_CUT
                "\" (uftrace reads no longer names)\n", s->names_cut, plural(s->names_cut), ST_UFT_NAME_MAX);
    for (size_t k = 0; k < o->ex.npairs && k < 64; k++)
        if (s->unused_rules >> k & 1)
            fprintf(stderr, PROG ": warning: --pair=%s pairs no declared events\n", o->pairs[k]);
}

/* --- running it -------------------------------------------------------------------------- */

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART; /* stop between records, not inside a read */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* "simpletrace export ARGS...", for uftrace's `info`; NULL when memory is short. */
static char *join_args(int argc, char **argv)
{
    size_t len = sizeof "simpletrace";
    for (int i = 0; i < argc; i++)
        len += strlen(argv[i]) + 1;
    char *s = malloc(len);
    if (!s)
        return NULL;
    strcpy(s, "simpletrace");
    for (int i = 0; i < argc; i++) {
        strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

/* Converts, then reports. Returns the exit status. */
static int run(struct export_cli *o, const struct cli_trace *t)
{
    struct progress pr;
    progress_init(&pr, o);
    o->ex.progress = on_progress;
    o->ex.progress_opaque = &pr;
    o->ex.not_damage = cli_not_damage;
    o->ex.not_damage_opaque = (void *)t;
    struct st__export_summary s;
    char err[2048];
    catch_signals();
    int ret = st__export_run(t->r, &o->ex, &s, err, sizeof err);
    progress_clear(&pr);
    if (ret == 0) {
        cli_trace_report_filters(t, &o->in);
        if (!o->quiet)
            summary(o, &s);
        if (o->ex.format == ST_EXPORT_FOLDED && s.calls == 0) /* an empty flame graph must not pass unnoticed */
            fprintf(stderr, PROG ": warning: %s holds no stacks: no call was found (no begin and end events paired, "
                            "see --pair; or --functions)\n", o->ex.output);
        return 0;
    }
    if (st_reader_error(t->r)->code != 0)
        cli_reader_error("export", t, &o->in, err, sizeof err);
    fprintf(stderr, PROG ": %s\n", err[0] ? err : strerror(-ret));
    if (s.partial) /* a damaged trace: what came before the damage is written, and the run fails */
        fprintf(stderr, PROG ": %s holds the records before that point\n",
                strcmp(o->ex.output, "-") ? o->ex.output : "standard output");
    return 1;
}

int st__cmd_export(int argc, char **argv)
{
    struct export_cli o;
    memset(&o, 0, sizeof o);
    cli_input_init(&o.in);
    int status = parse_args(argc, argv, &o);
    if (status >= 0) {
        cli_input_free(&o.in); /* the traces found before a later usage error */
        return status;
    }

    struct cli_trace t;
    memset(&t, 0, sizeof t);
    char *cmdline = join_args(argc, argv);
    o.ex.cmdline = cmdline;
    if ((status = cli_trace_open("export", &o.in, &t)) == 0) {
        status = run(&o, &t);
    }
    cli_trace_close(&t);
    cli_input_free(&o.in);
    free(cmdline);
    return status;
}
