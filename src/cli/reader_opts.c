/* Options, operands and opening shared by the trace-reading subcommands (reader_opts.h). */
#include "reader_opts.h"
#include "duration.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_warn.h"
#include "glob_match.h"
#include "nearest.h"
#include "out_file.h"
#include "trace_format.h"
#include "zstd_seek_format.h"

/* The operands, for the hints that tell their order. */
#define OPERANDS "TRACE-EVENTS... TRACE-FILE"

void cli_input_init(struct cli_input *in)
{
    memset(in, 0, sizeof *in);
    in->rd.struct_size = sizeof in->rd;
}

void cli_input_free(struct cli_input *in)
{
    for (size_t i = 0; i < in->ntraces; i++)
        free(in->traces[i]);
    free(in->traces);
    in->traces = NULL;
    in->ntraces = 0;
    free(in->offset_args);
    free(in->offsets);
    in->offset_args = NULL;
    in->offsets = NULL;
    in->noffset_args = 0;
    in->rd.offsets_ns = NULL;
    in->rd.noffsets = 0;
}

int cli_usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "simpletrace %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'simpletrace %s --help'.\n", cmd);
    return 2;
}

/* A thread or process id: a decimal number that fits the pid field. 0 or the usage error's status. */
static int parse_id(const char *cmd, const char *what, const char *arg, bool *set, uint32_t *id)
{
    char *end;
    unsigned long v;
    char fmt[64];

    errno = 0;
    v = strtoul(arg, &end, 10);
    if (errno || end == arg || *end || *arg == '-' || v > UINT32_MAX) {
        snprintf(fmt, sizeof fmt, "bad %s '%%s' (a decimal number)", what);
        return cli_usage_error(cmd, fmt, arg);
    }
    *set = true;
    *id = (uint32_t)v;
    return 0;
}

static int parse_time(const char *cmd, const char *arg, bool *set, int64_t *ns)
{
    if (st_parse_duration_ns(arg, ns) < 0)
        return cli_usage_error(cmd, "bad time '%s' (want e.g. 1500, 20us, 1.5ms, 2s)", arg);
    *set = true;
    return 0;
}

/* --align=realtime: the only clock traces of several hosts share. */
static int parse_align(const char *cmd, const char *arg, struct st_reader_options *rd)
{
    if (strcmp(arg, "realtime"))
        return cli_usage_error(cmd, "unknown --align '%s' (realtime)", arg);
    rd->flags |= ST_READER_ALIGN_REALTIME;
    return 0;
}

/* --offset=TRACE=TIME: kept as given until the traces are known (resolve_offsets()). */
static int add_offset(const char *cmd, const char *arg, struct cli_input *in)
{
    const char **more = realloc(in->offset_args, (in->noffset_args + 1) * sizeof *more);
    if (!more) {
        fprintf(stderr, "simpletrace %s: out of memory\n", cmd);
        return 1;
    }
    in->offset_args = more;
    more[in->noffset_args++] = arg;
    return 0;
}

int cli_reader_option(const char *cmd, int c, const char *arg, struct cli_input *in)
{
    struct st_reader_options *rd = &in->rd;
    switch (c) {
    case CLI_OPT_NO_HEADER: rd->flags |= ST_READER_NO_HEADER; return 0;
    case CLI_OPT_EVENTS: rd->events = arg; return 0;
    case CLI_OPT_TID: return parse_id(cmd, "thread id", arg, &rd->filter_tid, &rd->tid);
    case CLI_OPT_PID: return parse_id(cmd, "process id", arg, &rd->filter_pid, &rd->pid);
    case CLI_OPT_FROM: return parse_time(cmd, arg, &rd->filter_from, &rd->from_ns);
    case CLI_OPT_TO: return parse_time(cmd, arg, &rd->filter_to, &rd->to_ns);
    case CLI_OPT_ROTATED: rd->flags |= ST_READER_ROTATED; return 0;
    case CLI_OPT_NO_ROTATED: in->rotated_off = true; return 0;
    case CLI_OPT_ALIGN: return parse_align(cmd, arg, rd);
    case CLI_OPT_OFFSET: return add_offset(cmd, arg, in);
    default: return -1;
    }
}

bool cli_is_events_file(const char *path)
{
    struct st_catalog *cat = NULL;
    struct stat st;
    /*
     * Only a regular file is read to find out: a FIFO's bytes belong to the
     * reader that comes next. An empty file parses as trace-events with no
     * event, but alone it is the trace of a program that died before its
     * first write: the reader says so.
     */
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0 ||
        st_catalog_load(&cat, &path, 1, NULL, 0) < 0)
        return false;
    st_catalog_free(cat);
    return true;
}

/*
 * Whether path is a regular file that starts as a trace does. Anything else
 * is not opened at all: opening a FIFO would wake, and closing it break,
 * the program feeding it.
 */
static bool starts_as_trace(const char *path)
{
    uint8_t head[8]; /* the header record's ID: all ones, in either byte order; or a zstd frame (compressed) */
    struct stat st;
    int fd;
    bool yes;

    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return false;
    yes = read(fd, head, sizeof head) == (ssize_t)sizeof head &&
          (st__fmt_get_u64(head) == ST_HEADER_EVENT_ID || st__zle_get32(head) == ST_ZSTD_FRAME_MAGIC);
    close(fd);
    return yes;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * Whether a leading operand goes with the trace-events files: it parses as
 * one, or is neither "-", a directory, nor a file that starts as a trace
 * (so a broken trace-events file gets the parser's message, as with one trace).
 */
static bool events_operand(const char *path)
{
    return strcmp(path, "-") && !is_dir(path) && !starts_as_trace(path);
}

/* Appends a copy of path to the traces. 0 or -ENOMEM. */
static int add_trace(struct cli_input *in, const char *path)
{
    char **more = realloc(in->traces, (in->ntraces + 1) * sizeof *more);
    if (!more)
        return -ENOMEM;
    in->traces = more;
    if (!(more[in->ntraces] = strdup(path)))
        return -ENOMEM;
    in->ntraces++;
    return 0;
}

/* dir/name into buf. */
static const char *join(char *buf, size_t len, const char *dir, const char *name)
{
    snprintf(buf, len, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
    return buf;
}

/* Whether name is a piece BASE.N (the reader's rule) and dir holds the trace BASE: read with BASE (rotate=). */
static bool piece_of_other(const char *dir, const char *name)
{
    char base[4096], path[8192];
    size_t blen;
    if (!st_rotated_piece_number(name, &blen) || blen >= sizeof base)
        return false;
    snprintf(base, sizeof base, "%.*s", (int)blen, name);
    return starts_as_trace(join(path, sizeof path, dir, base));
}

static int skip_dots(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

/* Adds the traces in dir, by name. 0, or 1 after the message. */
static int add_dir(const char *cmd, const char *dir, struct cli_input *in)
{
    struct dirent **names;
    char path[8192];
    size_t before = in->ntraces;
    int n = scandir(dir, &names, skip_dots, alphasort), ret = 0;
    if (n < 0) {
        fprintf(stderr, "simpletrace %s: %s: %s\n", cmd, dir, strerror(errno));
        return 1;
    }
    for (int i = 0; i < n; i++) {
        join(path, sizeof path, dir, names[i]->d_name);
        if (ret == 0 && starts_as_trace(path) && !piece_of_other(dir, names[i]->d_name) && add_trace(in, path) < 0)
            ret = 1;
        free(names[i]);
    }
    free(names);
    if (ret)
        fprintf(stderr, "simpletrace %s: out of memory\n", cmd);
    else if (in->ntraces == before && (ret = 1))
        fprintf(stderr, "simpletrace %s: %s holds no trace file\n", cmd, dir);
    return ret;
}

/* The traces of operands ops[0..n): files as given, directories expanded. 0, or 1 after the message. */
static int expand_traces(const char *cmd, char **ops, size_t n, struct cli_input *in)
{
    for (size_t i = 0; i < n; i++) {
        if (is_dir(ops[i])) {
            if (add_dir(cmd, ops[i], in))
                return 1;
        } else if (add_trace(in, ops[i]) < 0) {
            fprintf(stderr, "simpletrace %s: out of memory\n", cmd);
            return 1;
        }
    }
    return 0;
}

int cli_first_trace(int argc, char **argv, int first)
{
    int i = first;
    while (i < argc - 1 && events_operand(argv[i]))
        i++;
    /* The last operand is no trace (operands swapped?): one trace, so the messages say what is wrong with it. */
    if (events_operand(argv[argc - 1]))
        i = argc - 1;
    return i;
}

/* "[+|-]DURATION" in ns into *ns. 0 or -EINVAL. */
static int parse_signed_time(const char *text, int64_t *ns)
{
    bool minus = *text == '-';
    text += *text == '-' || *text == '+';
    if (*text == '-' || *text == '+' || st_parse_duration_ns(text, ns) < 0)
        return -EINVAL;
    if (minus)
        *ns = -*ns;
    return 0;
}

/* Whether a and b name one file (the same device and inode). */
static bool same_file(const char *a, const char *b)
{
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/*
 * The --offset=TRACE=TIME options as one offset per trace (TRACE names one
 * of the traces read, the same file; TIME after its last '='). With found
 * (one per option), an option naming none of in's traces is marked
 * unfound rather than refused (compare: it is the other run's). 0, or the
 * status after a message.
 */
static int resolve_offsets(const char *cmd, struct cli_input *in, bool *found)
{
    if (!in->noffset_args)
        return 0;
    if (!(in->offsets = calloc(in->ntraces, sizeof *in->offsets))) {
        fprintf(stderr, "simpletrace %s: out of memory\n", cmd);
        return 1;
    }
    for (size_t k = 0; k < in->noffset_args; k++) {
        const char *arg = in->offset_args[k], *eq = strrchr(arg, '=');
        char path[4096];
        int64_t ns;
        size_t i = 0;
        if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof path || parse_signed_time(eq + 1, &ns) < 0)
            return cli_usage_error(cmd, "bad --offset '%s' (want TRACE=TIME, e.g. b.trace=-1.5ms)", arg);
        snprintf(path, sizeof path, "%.*s", (int)(eq - arg), arg);
        while (i < in->ntraces && !same_file(path, in->traces[i]))
            i++;
        if (i == in->ntraces && !found)
            return cli_usage_error(cmd, "--offset names '%s', which is none of the traces read", path);
        if (i == in->ntraces)
            continue;
        if (found)
            found[k] = true;
        in->offsets[i] += ns;
    }
    in->rd.offsets_ns = in->offsets;
    in->rd.noffsets = in->ntraces;
    return 0;
}

int cli_trace_operands(const char *cmd, int argc, char **argv, int first, struct cli_input *in)
{
    if (argc - first < 1)
        return cli_usage_error(cmd, "%s", "need [TRACE-EVENTS...] TRACE...");
    int i = cli_first_trace(argc, argv, first);
    in->events_files = (const char **)(argv + first);
    in->nevents_files = (size_t)(i - first);
    if (argc - first == 1 && cli_is_events_file(argv[first]))
        return cli_usage_error(cmd, "need the TRACE-FILE after the trace-events files (%s is one)", argv[first]);
    if ((in->rd.flags & ST_READER_ROTATED) && in->rotated_off)
        return cli_usage_error(cmd, "%s", "--rotated and --no-rotated contradict each other");
    /* Pieces are found by their names: standard input has none. */
    if ((in->rd.flags & ST_READER_ROTATED) && !strcmp(argv[i], "-"))
        return cli_usage_error(cmd, "%s", "--rotated needs a TRACE-FILE path, not \"-\"");
    int ret = expand_traces(cmd, argv + i, (size_t)(argc - i), in);
    if (ret == 0)
        ret = resolve_offsets(cmd, in, NULL);
    if (ret) {
        cli_input_free(in);
        return ret;
    }
    in->trace = in->traces[0];
    return 0;
}

/* The options of base for a second run: the same, but its own copy of what cli_input_free() frees. */
static int copy_options(const struct cli_input *base, struct cli_input *run2)
{
    *run2 = *base;
    run2->traces = NULL;
    run2->ntraces = 0;
    run2->offsets = NULL;
    run2->offset_args = NULL;
    if (base->noffset_args && !(run2->offset_args = malloc(base->noffset_args * sizeof *run2->offset_args)))
        return -1;
    if (base->noffset_args)
        memcpy(run2->offset_args, base->offset_args, base->noffset_args * sizeof *run2->offset_args);
    return 0;
}

/* Each run's offsets; an --offset naming a trace of neither run is refused. 0 or the status. */
static int resolve_pair_offsets(const char *cmd, struct cli_input *base, struct cli_input *run2)
{
    bool *found = calloc(base->noffset_args + 1, sizeof *found);
    int ret = 0;
    if (!found) {
        fprintf(stderr, "simpletrace %s: out of memory\n", cmd);
        return 1;
    }
    if ((ret = resolve_offsets(cmd, base, found)) == 0 && (ret = resolve_offsets(cmd, run2, found)) == 0)
        for (size_t k = 0; k < base->noffset_args && ret == 0; k++)
            if (!found[k])
                ret = cli_usage_error(cmd, "bad --offset '%s': it names none of the traces of BASE or NEW",
                                      base->offset_args[k]);
    free(found);
    return ret;
}

int cli_trace_operands_pair(const char *cmd, int argc, char **argv, int first, struct cli_input *base,
                            struct cli_input *run2)
{
    if (argc - first < 2)
        return cli_usage_error(cmd, "%s", "need [TRACE-EVENTS...] BASE NEW (two runs to compare)");
    /* The last two operands are the runs, whatever they hold (a missing file is said to be missing). */
    int i = cli_first_trace(argc - 1, argv, first);
    if (argc - i > 2)
        return cli_usage_error(cmd, "more than two runs given from '%s' on (BASE NEW: a run of several traces "
                                    "is a directory)", argv[i]);
    if (!strcmp(argv[i], "-") && !strcmp(argv[i + 1], "-"))
        return cli_usage_error(cmd, "%s", "BASE and NEW cannot both be standard input");
    if ((base->rd.flags & ST_READER_ROTATED) && base->rotated_off)
        return cli_usage_error(cmd, "%s", "--rotated and --no-rotated contradict each other");
    if ((base->rd.flags & ST_READER_ROTATED) && (!strcmp(argv[i], "-") || !strcmp(argv[i + 1], "-")))
        return cli_usage_error(cmd, "%s", "--rotated needs TRACE-FILE paths, not \"-\"");
    if (copy_options(base, run2) < 0) {
        fprintf(stderr, "simpletrace %s: out of memory\n", cmd);
        return 1;
    }
    struct cli_input *in[2] = {base, run2};
    int ret = 0;
    for (int k = 0; k < 2 && ret == 0; k++) {
        in[k]->events_files = (const char **)(argv + first);
        in[k]->nevents_files = (size_t)(i - first);
        ret = expand_traces(cmd, argv + i + k, 1, in[k]);
    }
    if (ret == 0)
        ret = resolve_pair_offsets(cmd, base, run2);
    if (ret) {
        cli_input_free(base);
        cli_input_free(run2);
        return ret;
    }
    base->trace = base->traces[0];
    run2->trace = run2->traces[0];
    return 0;
}

/* --- a trace in pieces -------------------------------------------------------------- */

/*
 * Whether pieces [first, first + count) of base were written one after the
 * other: each last modified no later than the next. A FILE.1 older than
 * FILE is a leftover of an earlier run (one that rotated, where this one
 * did not), not this trace's continuation.
 */
static bool pieces_in_order(const char *base, uint64_t first, uint64_t count)
{
    struct timespec prev = {0, 0};
    for (uint64_t k = first; k - first < count; k++) {
        char name[4096];
        struct stat st;
        if (st_rotated_piece_name(name, sizeof name, base, k) < 0 || stat(name, &st) != 0)
            return true; /* the reader reports it when it gets there */
        if (k > first && (st.st_mtim.tv_sec < prev.tv_sec ||
                          (st.st_mtim.tv_sec == prev.tv_sec && st.st_mtim.tv_nsec < prev.tv_nsec)))
            return false;
        prev = st.st_mtim;
    }
    return true;
}

/*
 * Reads a trace written with rotate= as one when its pieces are there, as
 * --rotated does: `print FILE` must not stop silently at the end of the
 * first piece, nor fail on a FILE that rotate-keep removed. Says so when
 * FILE itself is gone, and when pieces are there but are not its
 * continuation (with what to type).
 */
static void detect_pieces(const char *cmd, struct cli_input *in)
{
    uint64_t first, count;
    if (in->rotated_off || (in->rd.flags & ST_READER_ROTATED) || !strcmp(in->trace, "-") ||
        st_rotated_find(in->trace, &first, &count) < 0)
        return;
    if (first == 0 && count == 1) {
        /* One file so far: a follower goes on into TRACE.1 should the writer rotate. */
        if (in->rd.flags & ST_READER_FOLLOW)
            in->rd.flags |= ST_READER_ROTATED;
        return;
    }
    char last[4096], first_name[4096];
    st_rotated_piece_name(last, sizeof last, in->trace, first + count - 1);
    st_rotated_piece_name(first_name, sizeof first_name, in->trace, first);
    if (first == 0 && !pieces_in_order(in->trace, first, count)) {
        fprintf(stderr,
                "simpletrace %s: %s has pieces up to %s that are older than it (left by an earlier run): "
                "reading %s alone; --rotated reads them all\n",
                cmd, in->trace, last, in->trace);
        return;
    }
    in->rd.flags |= ST_READER_ROTATED;
    if (first > 0)
        fprintf(stderr,
                "simpletrace %s: %s is gone (rotate-keep removed it): reading its %" PRIu64
                " remaining piece%s %s to %s as one trace\n",
                cmd, in->trace, count, count == 1 ? "" : "s", first_name, last);
}

/* --- opening --------------------------------------------------------------------------- */

/* The trace-events files given (with none, the reader reads the trace's own declarations with its records). */
static int load_catalog(const char *cmd, struct cli_input *in, struct st_catalog **cat)
{
    char msg[2048];
    int ret;

    if (in->nevents_files == 0)
        return 0;
    ret = st_catalog_load(cat, in->events_files, in->nevents_files, msg, sizeof msg);
    if (ret == -EMEDIUMTYPE) /* a binary file where the trace-events belong: the operands swapped? */
        fprintf(stderr, "simpletrace %s: %s: the trace-events files come first (simpletrace %s " OPERANDS ")\n",
                cmd, msg, cmd);
    else if (ret < 0)
        fprintf(stderr, "simpletrace %s: %s\n", cmd, msg);
    else
        cli_catalog_warn(*cat); /* events read though their formats do not fit, as QEMU's reader reads them */
    return ret;
}

/* The reader's conflict callback: one line on stderr per event (the reader says each once). */
static void print_conflict(const char *message, void *opaque)
{
    const struct cli_trace *t = opaque;
    fprintf(stderr, "simpletrace %s: %s: %s\n", t->cmd, t->trace, message);
}

/*
 * Several traces: one reader over all (st_reader_open_many()), each read
 * with its pieces unless --no-rotated; without trace-events files the
 * reader decodes with the union of their declarations.
 */
static int open_many(const char *cmd, struct cli_input *in, struct cli_trace *t)
{
    struct st_reader_error err = {.struct_size = sizeof err};
    if (load_catalog(cmd, in, &t->cat) < 0)
        return 1;
    if (!in->rotated_off)
        in->rd.flags |= ST_READER_ROTATED;
    if (in->nevents_files) {
        in->rd.conflict = print_conflict;
        in->rd.conflict_opaque = t;
    }
    int ret = st_reader_open_many(&t->r, (const char *const *)in->traces, in->ntraces, t->cat, &in->rd, &err);
    if (ret < 0) {
        fprintf(stderr, "simpletrace %s: %s\n", cmd, err.message);
        return ret == -EINVAL ? 2 : 1;
    }
    return 0;
}

/* Without trace-events files: the catalog is the reader's, growing with the trace's declarations. */
static void borrow_catalog(struct cli_trace *t)
{
    if (t->embedded)
        t->cat = (struct st_catalog *)st_reader_catalog(t->r);
}

int cli_trace_open(const char *cmd, struct cli_input *in, struct cli_trace *t)
{
    struct st_reader_error err = {.struct_size = sizeof err};
    memset(t, 0, sizeof *t);
    t->cmd = cmd;
    t->trace = in->trace;
    t->embedded = in->nevents_files == 0;
    if (t->embedded && in->undeclared_ok) /* a trace without declarations is read anyway, undecoded */
        in->rd.flags |= ST_READER_UNDECLARED;
    if (in->ntraces > 1) {
        int ret = open_many(cmd, in, t);
        if (ret == 0)
            borrow_catalog(t);
        return ret;
    }
    detect_pieces(cmd, in);
    if (load_catalog(cmd, in, &t->cat) < 0)
        return 1;
    if (in->nevents_files) { /* the trace's own declarations cannot conflict with themselves */
        in->rd.conflict = print_conflict;
        in->rd.conflict_opaque = t;
    }
    int ret = st_reader_open(&t->r, in->trace, t->cat, &in->rd, &err);
    if (ret == 0) {
        borrow_catalog(t);
        return 0;
    }
    if (ret == -EINVAL) /* bad options, not a bad file */
        fprintf(stderr, "simpletrace %s: %s\n", cmd, err.message);
    else
        fprintf(stderr, "simpletrace %s: %s: %s\n", cmd, in->trace, err.message);
    return ret == -EINVAL ? 2 : 1;
}

size_t cli_trace_processes(const struct cli_trace *t)
{
    size_t n = 0;
    for (size_t i = 0; i < st_reader_input_count(t->r); i++)
        n += st_reader_input_process(t->r, i) == i;
    return n;
}

void cli_trace_process_name(const struct cli_trace *t, size_t i, char *buf, size_t len)
{
    struct st_trace_description d = {.struct_size = sizeof d};
    if (st_reader_description(st_reader_input(t->r, i), &d) == 0)
        snprintf(buf, len, "%s[%lu]", d.program, (unsigned long)d.pid);
    else
        snprintf(buf, len, "input#%zu", i);
}

void cli_trace_close(struct cli_trace *t)
{
    st_reader_close(t->r);
    if (!t->embedded)
        st_catalog_free(t->cat);
    memset(t, 0, sizeof *t);
}

/* A rotated trace's pieces, named as the reader finds them (out_file.h is handed the rule: common cannot know it). */
static const struct st__out_pieces reader_pieces = {st_rotated_piece_name, st_rotated_piece_number};

int cli_check_output(const char *cmd, const struct cli_input *in, const char *out, bool dir, const char *extra)
{
    size_t n = 0;
    struct st__out_input *v = calloc(in->nevents_files + in->ntraces + 1, sizeof *v);
    char msg[8400];
    bool clash;

    if (!v) {
        fprintf(stderr, "simpletrace %s: out of memory\n", cmd);
        return 1;
    }
    for (size_t i = 0; i < in->nevents_files; i++)
        v[n++].path = in->events_files[i];
    for (size_t i = 0; i < in->ntraces; i++)
        v[n++] = (struct st__out_input){in->traces[i], in->rotated_off ? NULL : &reader_pieces};
    if (extra)
        v[n++].path = extra;
    clash = st__out_is_input(out, dir, v, n, msg, sizeof msg);
    free(v);
    return clash ? cli_usage_error(cmd, "%s", msg) : -1;
}

/* --- filters that selected nothing ------------------------------------------------------ */

/* Whether glob[0..len) matches an event of cat (Dropped_Event included); else its nearest names into near. */
static bool glob_matches(const struct st_catalog *cat, const char *glob, size_t len, char *near, size_t nearlen)
{
    char word[256];
    struct st__nearest s;
    snprintf(word, sizeof word, "%.*s", (int)(len < 255 ? len : 255), glob);
    st__nearest_init(&s, word);
    for (size_t i = 0; i <= st_catalog_count(cat); i++) {
        const struct st_event_info *ev = st_catalog_event(cat, i);
        if (st__glob_match_n(glob, len, ev->name))
            return true;
        st__nearest_offer(&s, ev->name);
    }
    st__nearest_list(&s, near, nearlen);
    return false;
}

/* --events: each glob that selects (not a "-glob") and matches no event of the trace. */
static void report_events(const struct cli_trace *t, const char *spec)
{
    for (const char *p = spec; p && *p;) {
        size_t len = strcspn(p, ",");
        char near[256];
        if (*p != '-' && len && !glob_matches(t->cat, p, len, near, sizeof near))
            fprintf(stderr, "simpletrace %s: --events: '%.*s' matches no event of the trace%s%s%s\n", t->cmd,
                    (int)len, p, *near ? " (did you mean " : "", near, *near ? "?)" : "");
        p += len + (p[len] == ',');
    }
}

/* --tid: the thread ids the skipped records had (or, when it is among them, that the other filters took the rest). */
static void report_tid(const struct cli_trace *t, const struct cli_input *in, const struct st_reader_seen *seen)
{
    char list[512] = "";
    size_t n = 0;
    for (size_t i = 0; i < seen->ntids; i++)
        if (seen->tids[i] == in->rd.tid) {
            fprintf(stderr, "simpletrace %s: --tid=%lu: thread %lu has records, but none the other filters "
                    "select\n", t->cmd, (unsigned long)in->rd.tid, (unsigned long)in->rd.tid);
            return;
        }
    for (size_t i = 0; i < seen->ntids && n + 16 < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%lu", i ? ", " : "", (unsigned long)seen->tids[i]);
    fprintf(stderr, "simpletrace %s: --tid=%lu: no record has thread id %lu%s%s%s%s\n", t->cmd,
            (unsigned long)in->rd.tid, (unsigned long)in->rd.tid, n ? " (the trace's: " : " (no record has one)",
            list, seen->ntids == ST_READER_SEEN_TIDS ? ", ..." : "", n ? ")" : "");
}

/* --pid: the processes the traces describe. */
static void report_pid(const struct cli_trace *t, const struct cli_input *in)
{
    char list[512] = "";
    size_t n = 0;
    for (size_t i = 0; i < st_reader_input_count(t->r) && n + 16 < sizeof list; i++) {
        struct st_trace_description d = {.struct_size = sizeof d};
        if (st_reader_input_process(t->r, i) == i && st_reader_description(st_reader_input(t->r, i), &d) == 0)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s[%lu]", n ? ", " : "", d.program,
                                  (unsigned long)d.pid);
    }
    fprintf(stderr, "simpletrace %s: --pid=%lu: no record of process %lu%s%s%s\n", t->cmd, (unsigned long)in->rd.pid,
            (unsigned long)in->rd.pid, n ? " (the traces': " : "", list, n ? ")" : "");
}

void cli_trace_report_filters(const struct cli_trace *t, const struct cli_input *in)
{
    struct st_reader_counters c = {.struct_size = sizeof c};
    struct st_reader_seen seen = {.struct_size = sizeof seen};
    uint64_t origin;
    char a[64], b[64];

    report_events(t, in->rd.events);
    st_reader_get_counters(t->r, &c);
    st_reader_get_seen(t->r, &seen);
    if (c.events + c.dropped_records > c.filtered || !c.filtered)
        return; /* something came out, or nothing was there to select */
    if (in->rd.filter_tid)
        report_tid(t, in, &seen);
    if (in->rd.filter_pid)
        report_pid(t, in);
    if (in->rd.filter_from && seen.have_last && st_reader_origin(t->r, &origin) == 0 &&
        (int64_t)(seen.last_ns - origin) < in->rd.from_ns)
        fprintf(stderr, "simpletrace %s: --from=%s is after the last record (at %s from the first)\n", t->cmd,
                st__duration_text(a, sizeof a, in->rd.from_ns), st__duration_text(b, sizeof b, (int64_t)(seen.last_ns - origin)));
}

/* Whether the trace operand parses as trace-events: the operands given the wrong way round. */

void cli_reader_error(const char *cmd, const struct cli_trace *t, const struct cli_input *in, char *buf, size_t len)
{
    const struct st_reader_error *e = st_reader_error(t->r);
    size_t n = st_reader_format_error(t->r, buf, len);
    if (n + 1 >= len)
        return;
    if (e->code == -ENODATA && (in->rd.flags & ST_READER_ALIGN_REALTIME) && strstr(e->message, "clock anchors"))
        snprintf(buf + n, len - n, "; without --align=realtime, --offset=TRACE=TIME places traces by hand");
    else if (e->code == -EOPNOTSUPP && in->rd.filter_pid)
        snprintf(buf + n, len - n, "; --tid=%lu selects the records whose pid field is %lu",
                 (unsigned long)in->rd.pid, (unsigned long)in->rd.pid);
    else if (e->code == -EBADMSG && e->record == 0 && cli_is_events_file(in->trace))
        snprintf(buf + n, len - n, ": the trace file comes last (simpletrace %s " OPERANDS ")", cmd);
}

bool cli_not_damage(const struct st_reader *r, void *opaque)
{
    const struct cli_trace *t = opaque;
    const struct st_reader_error *e = st_reader_error(r);
    return !t->embedded && e->code == -EBADMSG && strstr(e->message, "do not match the trace") != NULL;
}
