/*
 * simpletrace print [OPTIONS] TRACE-EVENTS... TRACE-FILE
 *
 * Prints a trace as QEMU's simpletrace.py does (same arguments, same
 * bytes on stdout), decodes what it cannot (v0/v2/v3, big-endian), and
 * stops at the first bad record with a message naming its byte offset
 * after printing every good record before it. Uses only the public
 * reader API.
 *
 * --follow ends by itself (issue 21, item 2) once every input's writer is
 * gone and its file drained: a writer is gone when the trace's description
 * names a process of this host (the host name as the runtime writes it)
 * that no longer runs (kill(pid, 0) says ESRCH, or it is a zombie: exited,
 * its files closed); drained means a read begun after every writer was
 * seen gone found no more records. A file that then still holds bytes after
 * its last record (the writer killed inside one) ends with the error a
 * plain print gives there. A trace without a description (QEMU's) or from
 * another host cannot be told apart from one still being written: it is
 * followed until Ctrl-C, as before.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <simpletrace/reader.h>

#include "catalog_warn.h"
#include "commands.h"
#include "help_texts.h"
#include "name_template.h"
#include "process_gone.h"
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

/* --- when --follow ends by itself ------------------------------------------------------------- */

/* What the follow loop knows about the writers. */
struct follow_end {
    char host[256]; /* this host's name as the runtime writes it into descriptions ("" unknown) */
    bool gone;      /* every input's writer was seen gone before the read in progress began */
};

static void follow_end_init(struct follow_end *e)
{
    struct st__name_vars v;

    st__name_vars_get(&v, 0); /* the runtime's own source of the name: '/' made '_' alike */
    snprintf(e->host, sizeof e->host, "%s", strcmp(v.host, "unknown") ? v.host : "");
    e->gone = false;
}

/* Whether the writer of input in is known to be gone: a process of this host that no longer runs. */
static bool writer_gone(const struct follow_end *e, const struct st_reader *in)
{
    struct st_trace_description d = {.struct_size = sizeof d};

    if (!e->host[0] || st_reader_description(in, &d) != 0 || d.pid == 0 || strcmp(d.host, e->host) != 0)
        return false;
    return st__process_gone(d.pid);
}

static bool all_writers_gone(const struct follow_end *e, const struct st_reader *r)
{
    size_t n = st_reader_input_count(r);
    for (size_t i = 0; i < n; i++)
        if (!writer_gone(e, st_reader_input(r, i)))
            return false;
    return n > 0;
}

/*
 * The file of input in, whose writer is gone, read to its end: 0 when it
 * ends with its last record, else 1 after the reader's message (a record
 * cut short by a writer killed inside it). The follow reader would wait for
 * the rest of that record forever, so a reader of the file alone, which
 * ends there, says what a plain print says (st_reader_format_error()'s
 * words, record numbers counted across pieces). It reads the file again only
 * when its size is not where the follow reader stopped: a piece of a
 * rotated trace (whose counters also count the earlier pieces, and which
 * rotate= keeps small) or a file with a cut record.
 */
static int check_tail(const struct cli_trace *t, const struct cli_input *in, const struct st_reader *inp,
                      struct st_formatter *f)
{
    struct st_reader_counters c = {.struct_size = sizeof c};
    struct st_reader_error err = {.struct_size = sizeof err};
    const char *name = st_reader_name(inp);
    struct st_reader *v = NULL;
    const struct st_record *rec;
    struct stat st;
    int ret;

    if (st_reader_get_counters(inp, &c) < 0 || stat(name, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size == c.bytes)
        return 0;
    struct st_reader_options o = in->rd; /* the same decoding; no filter can hide the end */
    o.flags &= ~(unsigned)(ST_READER_FOLLOW | ST_READER_ROTATED | ST_READER_ALIGN_REALTIME);
    o.events = NULL;
    o.conflict = NULL; /* said once already, by the follow reader */
    o.filter_tid = o.filter_pid = o.filter_from = o.filter_to = false;
    o.offsets_ns = NULL;
    o.noffsets = 0;
    if (st_reader_open(&v, name, t->cat, &o, &err) < 0)
        return 0; /* gone meanwhile: nothing more to say about it */
    while ((ret = st_reader_next(v, &rec)) > 0)
        ;
    if (ret < 0) {
        /* Record numbers go on across pieces: those of the pieces before this one come first (a
           header is record 0 in every piece). */
        struct st_reader_counters here = {.struct_size = sizeof here};
        const struct st_reader_error *e = st_reader_error(v);
        uint64_t before = 0;
        if (e->record && st_reader_get_counters(v, &here) == 0 && c.records > here.records)
            before = c.records - here.records;
        st_formatter_flush(f);
        fprintf(stderr, PROG ": %s: byte offset %llu, record %llu: %s\n", name, (unsigned long long)e->offset,
                (unsigned long long)(e->record + before), e->message);
    }
    st_reader_close(v);
    return ret < 0;
}

/* The end of --follow, every writer gone and drained: the exit status. */
static int follow_done(const struct cli_trace *t, const struct cli_input *in, struct st_formatter *f)
{
    size_t n = st_reader_input_count(t->r);
    for (size_t i = 0; i < n; i++)
        if (check_tail(t, in, st_reader_input(t->r, i), f))
            return 1;
    int ret = st_formatter_flush(f);
    if (ret < 0) {
        fprintf(stderr, PROG ": write error: %s\n", strerror(-ret));
        return 1;
    }
    return 0;
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
    struct follow_end end = {.host = "", .gone = false};
    if (follow)
        follow_end_init(&end);
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
            cli_trace_report_filters(t, in);
            break;
        } else if (ret == -EAGAIN && follow) {
            if ((ret = st_formatter_flush(f)) < 0 || interrupted)
                break;
            if (end.gone) /* this read began after every writer was gone: nothing more comes */
                return follow_done(t, in, f);
            if (all_writers_gone(&end, r)) {
                end.gone = true;
                continue; /* once more: what they wrote before they exited */
            }
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

int st__cmd_print(int argc, char **argv)
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
