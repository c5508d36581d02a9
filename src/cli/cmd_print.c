/*
 * simpletrace print [OPTIONS] TRACE-EVENTS... TRACE-FILE
 *
 * Prints a trace as QEMU's simpletrace.py does (same arguments, same
 * bytes on stdout), decodes what it cannot (v0/v2/v3, big-endian), and
 * stops at the first bad record with a message naming its byte offset
 * after printing every good record before it. Uses only the public
 * reader API.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <simpletrace/reader.h>

#include "commands.h"
#include "help_texts.h"
#include "reader_opts.h"

#define PROG "simpletrace print"

/* --help: doc/simpletrace-print.1.txt, also the man page. */

struct print_opts {
    struct cli_input in;
    struct st_formatter_options fmt;
    bool follow;
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static int usage_error(const char *fmt, const char *arg)
{
    return cli_usage_error("print", fmt, arg);
}

static int parse_format(const char *arg, enum st_output_format *f)
{
    if (!strcmp(arg, "text"))
        *f = ST_OUTPUT_TEXT;
    else if (!strcmp(arg, "json"))
        *f = ST_OUTPUT_JSON;
    else if (!strcmp(arg, "log"))
        *f = ST_OUTPUT_LOG;
    else
        return usage_error("unknown format '%s' (text, json or log)", arg);
    return 0;
}

/*
 * --time (and its older name --timestamps): uftrace's field names where it
 * has one (delta, elapsed), "relative" kept as elapsed's older name.
 */
static int parse_time_mode(const char *arg, enum st_timestamp_mode *m)
{
    if (!strcmp(arg, "delta"))
        *m = ST_TIMESTAMP_DELTA;
    else if (!strcmp(arg, "elapsed") || !strcmp(arg, "relative"))
        *m = ST_TIMESTAMP_RELATIVE;
    else if (!strcmp(arg, "absolute"))
        *m = ST_TIMESTAMP_ABSOLUTE;
    else if (!strcmp(arg, "wall"))
        *m = ST_TIMESTAMP_WALL;
    else
        return usage_error("unknown time mode '%s' (delta, elapsed, absolute or wall)", arg);
    return 0;
}

enum { OPT_FORMAT = CLI_OPT_OWN, OPT_TIME, OPT_FOLLOW, OPT_HELP };

/* Parses argv into *o. Returns -1 to go on, or the exit status (0 for --help). */
static int parse_args(int argc, char **argv, struct print_opts *o)
{
    static const struct option longopts[] = {
        CLI_READER_LONGOPTS,
        {"format", required_argument, NULL, OPT_FORMAT},
        {"time", required_argument, NULL, OPT_TIME},
        {"timestamps", required_argument, NULL, OPT_TIME},
        {"follow", no_argument, NULL, OPT_FOLLOW},       {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    int c, ret = 0;
    opterr = 0;
    optind = 1;
    while (ret == 0 && (c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_FORMAT: ret = parse_format(optarg, &o->fmt.format); break;
        case OPT_TIME: ret = parse_time_mode(optarg, &o->fmt.timestamps); break;
        case OPT_FOLLOW: o->follow = true; break;
        case 'h':
        case OPT_HELP: fputs(st__help_print, stdout); return 0;
        case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            ret = cli_reader_option("print", c, optarg, &o->in);
            if (ret < 0)
                return usage_error("unknown option '%s'", argv[optind - 1]);
            break;
        }
    }
    if (ret)
        return ret;
    if (cli_trace_operands("print", argc, argv, optind, &o->in))
        return 2;
    if (o->follow)
        o->in.rd.flags |= ST_READER_FOLLOW;
    return -1;
}

/* Reports the reader's error after everything printed so far is out. */
static int report(const struct cli_trace *t, const struct cli_input *in, struct st_formatter *f)
{
    st_formatter_flush(f);
    char msg[2048];
    cli_reader_error("print", t, in, msg, sizeof msg);
    fprintf(stderr, PROG ": %s\n", msg);
    return 1;
}

static void nap(void)
{
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL); /* SIGINT cuts it short */
}

/* Keeps the formatter's clock anchor that of the records being read, for --time=wall and JSON. */
struct anchor_sync {
    bool needed;        /* JSON or --time=wall: the default text never looks */
    bool wall;          /* --time=wall: a trace without anchor is an error */
    bool set;           /* the formatter has an anchor ... */
    uint64_t mono, real; /* ... this one */
};

/*
 * Sets the anchor of the description in force (each piece, input and
 * process of a merged file has its own) when it is another. 0, or 1 after
 * the message (wall time without anchor).
 */
static int sync_anchor(struct anchor_sync *a, const struct cli_trace *t, struct st_formatter *f)
{
    struct st_trace_description d = {.struct_size = sizeof d};

    if (!a->needed)
        return 0;
    if (st_reader_description(t->r, &d) == 0 && (d.anchor_mono_ns || d.anchor_real_ns)) {
        if (!a->set || d.anchor_mono_ns != a->mono || d.anchor_real_ns != a->real)
            st_formatter_set_anchor(f, d.anchor_mono_ns, d.anchor_real_ns);
        a->set = true;
        a->mono = d.anchor_mono_ns;
        a->real = d.anchor_real_ns;
        return 0;
    }
    if (!a->wall)
        return 0;
    st_formatter_flush(f);
    fprintf(stderr,
            PROG ": %s: no clock anchor in the trace (written by QEMU, or by simpletrace before 0.2): "
                 "--time=wall cannot tell wall-clock time; --time=absolute prints the recorded timestamps\n",
            st_reader_name(t->r));
    return 1;
}

/*
 * Makes the formatter once the first st_reader_next() has read every
 * input's description (and a merged file's processes): only then is it
 * known whether they hold several processes, whose records then name
 * theirs. 0, or 1 after the message.
 */
static int make_formatter(const struct cli_trace *t, struct st_formatter_options *fo, struct st_formatter **f)
{
    fo->show_process = cli_trace_processes(t) > 1 || st_reader_process_count(t->r) > 1;
    int ret = st_formatter_new(f, t->cat, fo);
    if (ret < 0)
        fprintf(stderr, PROG ": %s\n", strerror(-ret));
    return ret < 0;
}

/* The record loop. Returns the exit status. */
static int print_all(const struct cli_trace *t, const struct cli_input *in, struct st_formatter_options *fo,
                     struct st_formatter **fp, bool follow, struct anchor_sync *anchor)
{
    struct st_reader *r = t->r;
    const struct st_record *rec;
    struct st_formatter *f = NULL;
    bool origin_set = false;
    for (;;) {
        int ret = st_reader_next(r, &rec);
        if (!f && (ret == 1 || ret == 0 || ret == -EAGAIN)) {
            if (make_formatter(t, fo, fp))
                return 1;
            f = *fp;
        }
        if (ret == 1) {
            if (anchor->needed && sync_anchor(anchor, t, f)) /* the default text needs no anchor: no call */
                return 1;
            if (!origin_set) {
                uint64_t origin;
                origin_set = st_reader_origin(r, &origin) == 0;
                if (origin_set)
                    st_formatter_set_origin(f, origin);
            }
            if ((ret = st_formatter_write(f, rec)) < 0)
                break;
        } else if (ret == 0) {
            if (sync_anchor(anchor, t, f)) /* a trace without records still says it has no anchor */
                return 1;
            break;
        } else if (ret == -EAGAIN && follow) {
            if ((ret = st_formatter_flush(f)) < 0 || interrupted)
                break;
            nap();
            if (interrupted)
                break;
        } else if (f) {
            return report(t, in, f);
        } else {
            char msg[2048];
            cli_reader_error("print", t, in, msg, sizeof msg);
            fprintf(stderr, PROG ": %s\n", msg);
            return 1;
        }
        if (ret < 0)
            break;
    }
    int ret = st_formatter_flush(f);
    if (ret < 0) {
        fprintf(stderr, PROG ": write error: %s\n", strerror(-ret));
        return 1;
    }
    return 0;
}

static void catch_sigint(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint; /* no SA_RESTART: a blocked read returns */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

int st_cmd_print(int argc, char **argv)
{
    struct print_opts o;
    memset(&o, 0, sizeof o);
    cli_input_init(&o.in);
    o.fmt.struct_size = sizeof o.fmt;
    o.fmt.out = stdout;
    int status = parse_args(argc, argv, &o);
    if (status >= 0) {
        cli_input_free(&o.in); /* the traces found before a later usage error */
        return status;
    }

    struct cli_trace t;
    struct st_formatter *f = NULL;
    if ((status = cli_trace_open("print", &o.in, &t)) != 0)
        goto out;
    if (o.follow)
        catch_sigint();
    struct anchor_sync anchor = {.needed = o.fmt.format == ST_OUTPUT_JSON || o.fmt.timestamps == ST_TIMESTAMP_WALL,
                                 .wall = o.fmt.timestamps == ST_TIMESTAMP_WALL && o.fmt.format == ST_OUTPUT_TEXT};
    status = print_all(&t, &o.in, &o.fmt, &f, o.follow, &anchor);
out:
    st_formatter_free(f);
    cli_trace_close(&t);
    cli_input_free(&o.in);
    return status;
}
