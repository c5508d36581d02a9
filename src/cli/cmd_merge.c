/*
 * simpletrace merge -o OUT [OPTIONS] [TRACE-EVENTS...] TRACE|DIR...
 *
 * Writes the traces, read as print reads several (merged by timestamp,
 * ties in operand order), into one v4 file for tools that take one,
 * QEMU's simpletrace.py first:
 *   - the header, then a process record (meta_format.h) per input with
 *     its description; before each run of records of one process, an
 *     empty process record for it; a process met later (another piece of
 *     a rotated trace, a process of a merged file given as input) gets its
 *     description where it is met. Process numbers are per process: a new
 *     piece of a process described before keeps its number;
 *   - one event ID per event of the catalog the records were decoded with
 *     (the union of the inputs' declarations, or the trace-events files):
 *     the same ID meaning two events in two inputs becomes two IDs, one
 *     event in several inputs one. Each is mapped, then declared, right
 *     before its first record, as the runtime writes them;
 *   - the records in merged order, timestamps and pid fields as read
 *     (moved only by --align and --offset), dropped records included.
 * The file appears at OUT only once complete (out_file.h); any error
 * leaves OUT as it was. With --compress=zstd (or an OUT named *.zst) the
 * same bytes go out as zstd frames with a time index and seek table
 * (out_compress.h), so `zstd -d` gives exactly the plain file. Uses only
 * the public reader API, the format headers and zseek's writer.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simpletrace/reader.h>

#include "commands.h"
#include "growbuf.h"
#include "help_texts.h"
#include "meta_format.h"
#include "out_compress.h"
#include "out_file.h"
#include "reader_opts.h"
#include "trace_format.h"

#define PROG "simpletrace merge"
#define FLUSH_AT (1u << 20) /* bytes gathered before a write() */

/* --help: doc/simpletrace-merge.1.txt, also the man page. */

/* A process of the output: what tells its records apart from the others' as they are read. */
struct proc {
    size_t input;        /* the input its records come from */
    const char *piece;   /* the input's piece being read (st_reader_name(): one pointer per piece) */
    const char *program; /* its description's program (a pointer per description), NULL: none or "" */
    uint32_t pid;        /* its description's pid, 0: none */
    char *host;          /* its description's host (owned), for a later piece of the same process */
    uint32_t number;     /* its process number in the output */
};

struct merge {
    const struct cli_trace *t;
    bool aligned;             /* --align=realtime: the timestamps are wall-clock time */
    struct st__out_file out;
    const char *out_name;
    const char *compress;     /* --compress's value, or NULL */
    struct cli_sink sink;     /* out's descriptor, plain or compressed */
    struct st__growbuf buf;   /* bytes not yet written */
    uint8_t *mapped;          /* per catalog index: its mapping and declaration are written */
    size_t nmapped;           /* entries of mapped: the catalog grows with the traces' declarations */
    bool partial;             /* the input is damaged: what came before is written, and the run fails */
    struct proc *procs;
    size_t nprocs, capprocs;
    uint32_t next_number;     /* the next process number to give */
    size_t cur;               /* procs[cur]: the process of the last record written (SIZE_MAX: none yet) */
    int error;                /* a write error (-errno), after which nothing more is written */
};

/* --- output ------------------------------------------------------------------------- */

/* Writes out what is gathered. 0 or -errno. */
static int flush(struct merge *m)
{
    if (m->buf.failed && !m->error)
        m->error = -ENOMEM;
    if (!m->error && m->buf.len)
        m->error = cli_sink_write(&m->sink, m->buf.data, m->buf.len);
    m->buf.len = 0;
    return m->error;
}

/* Appends a mapping record for id named text[0..len). */
static void put_mapping(struct merge *m, uint64_t id, const char *text, size_t len)
{
    uint8_t *p = st__growbuf_room(&m->buf, st__fmt_mapping_size(len));
    if (p)
        st__growbuf_commit(&m->buf, st__fmt_put_mapping(p, id, text, (uint32_t)len));
}

/* Appends "key=VALUE\n", the value escaped (meta_format.h); spaces kept as they separate cmdline's arguments. */
static void put_value(struct st__growbuf *b, const char *key, const char *value, bool keep_spaces)
{
    st__growbuf_printf(b, "%s=", key);
    for (const char *s = value; *s;) {
        size_t len = keep_spaces ? strcspn(s, " ") : strlen(s), need = st__meta_escape(NULL, 0, s, len);
        uint8_t *p = st__growbuf_room(b, need + 1);
        if (p) {
            st__meta_escape((char *)p, need + 1, s, len);
            st__growbuf_commit(b, need);
        }
        s += len;
        if (*s == ' ')
            st__growbuf_puts(b, " "), s++;
    }
    st__growbuf_puts(b, "\n");
}

/*
 * Input i's description as the text of a process record (meta_format.h's
 * keys, as st_reader_description() gives them, and source=, the trace it
 * was read from). With --align the anchors are equal and the clock is
 * realtime: the timestamps written are wall-clock time.
 */
static void describe(struct st__growbuf *b, const struct st_trace_description *d, const char *source, bool aligned)
{
    st__growbuf_puts(b, ST_META_FIRST_LINE);
    if (*d->version)
        put_value(b, "version", d->version, false);
    if (d->pid)
        st__growbuf_printf(b, "pid=%" PRIu32 "\n", d->pid);
    if (*d->program)
        put_value(b, "program", d->program, false);
    if (*d->exe)
        put_value(b, "exe", d->exe, false);
    if (*d->cmdline)
        put_value(b, "cmdline", d->cmdline, true);
    if (*d->host)
        put_value(b, "host", d->host, false);
    if (aligned || *d->clock)
        put_value(b, "clock", aligned ? "realtime" : d->clock, false);
    if (!aligned && d->tsc_hz)
        st__growbuf_printf(b, "tsc_hz=%" PRIu64 "\n", d->tsc_hz);
    if (d->anchor_mono_ns || d->anchor_real_ns)
        st__growbuf_printf(b, "anchor_mono_ns=%" PRIu64 "\nanchor_real_ns=%" PRIu64 "\n", d->anchor_mono_ns,
                           d->anchor_real_ns);
    put_value(b, "source", source, false);
}

/* Appends the process record of p: its description when it has one and described, else empty. */
static void put_process(struct merge *m, const struct proc *p, bool described)
{
    const struct st_reader *in = st_reader_input(m->t->r, p->input);
    struct st_trace_description d = {.struct_size = sizeof d};
    struct st__growbuf text = {0};

    if (described && st_reader_description(in, &d) == 0)
        describe(&text, &d, st_reader_name(in), m->aligned);
    if (text.failed || text.len > ST_META_MAX_LEN)
        m->buf.failed = true;
    else
        put_mapping(m, ST_META_PROC_ID(p->number), text.data ? (const char *)text.data : "", text.len);
    st__growbuf_free(&text);
}

/* ev's trace-events line (meta_format.h's declaration): bytes outside printable ASCII as \ooo. */
static void declaration(struct st__growbuf *b, const struct st_event_info *ev)
{
    st__growbuf_printf(b, "%s%s(", ev->disabled ? "disable " : "", ev->name);
    for (unsigned i = 0; i < ev->nargs; i++) {
        const char *type = ev->args[i].type;
        st__growbuf_printf(b, "%s%s%s%s", i ? ", " : "", type, type[strlen(type) - 1] == '*' ? "" : " ",
                           ev->args[i].name);
    }
    st__growbuf_puts(b, ev->nargs ? ")" : "void)");
    if (ev->format)
        st__growbuf_puts(b, " ");
    for (const unsigned char *s = (const unsigned char *)ev->format; s && *s; s++)
        if (*s < 0x20 || *s >= 0x7f)
            st__growbuf_printf(b, "\\%03o", *s);
        else
            st__growbuf_put(b, s, 1);
}

/*
 * The output ID of ev: its position among the declared events, from 0
 * (a catalog read from the traces holds Dropped_Event first, at index 0),
 * so that a trace's events keep the IDs their writer gave them in order.
 */
static uint64_t out_id(const struct merge *m, const struct st_event_info *ev)
{
    return ev->index - (st_catalog_dropped(m->t->cat)->index == 0);
}

/* Maps and declares ev before its first record. 0 or -ENOMEM. */
static int map_event(struct merge *m, const struct st_event_info *ev)
{
    struct st__growbuf decl = {0};

    if (ev->index >= m->nmapped) { /* declared since the last */
        size_t n = st_catalog_count(m->t->cat) + 1;
        uint8_t *more = realloc(m->mapped, n);
        if (!more)
            return -ENOMEM;
        memset(more + m->nmapped, 0, n - m->nmapped);
        m->mapped = more;
        m->nmapped = n;
    }
    declaration(&decl, ev);
    put_mapping(m, out_id(m, ev), ev->name, ev->name_len);
    if (decl.failed || decl.len > ST_META_MAX_LEN)
        m->buf.failed = true;
    else
        put_mapping(m, ST_META_DECL_ID(out_id(m, ev)), (const char *)decl.data, decl.len);
    st__growbuf_free(&decl);
    m->mapped[ev->index] = 1;
    return 0;
}

/* Appends rec as a v4 event (or dropped) record under its output ID. 0, or -EINVAL for a v0 string. */
static int put_record(struct merge *m, const struct st_record *rec)
{
    const struct st_event_info *ev = rec->event;
    size_t plen = 0;

    for (unsigned i = 0; i < rec->nargs; i++) {
        if ((rec->args[i].kind == ST_VALUE_STRING) != (ev->args[i].kind == ST_VALUE_STRING))
            return -EINVAL; /* a v0 record holds a string argument's address, not its bytes */
        plen += rec->args[i].kind == ST_VALUE_STRING ? 4 + rec->args[i].len : 8;
    }
    uint8_t *p = st__growbuf_room(&m->buf, ST_EVENT_FIXED_SIZE + plen);
    if (!p)
        return 0; /* m->buf.failed: flush() says so */
    st__fmt_put_event_header(p, rec->dropped ? ST_DROPPED_EVENT_ID : out_id(m, ev), rec->timestamp_ns, (uint32_t)plen,
                            rec->has_pid ? rec->pid : 0);
    uint8_t *a = p + ST_EV_OFF_PAYLOAD;
    for (unsigned i = 0; i < rec->nargs; i++) {
        const struct st_value *v = &rec->args[i];
        if (v->kind == ST_VALUE_STRING) {
            st__fmt_put_u32(a, v->len);
            memcpy(a + 4, v->str, v->len);
            a += 4 + v->len;
        } else {
            st__fmt_put_u64(a, v->u64);
            a += 8;
        }
    }
    st__growbuf_commit(&m->buf, ST_EVENT_FIXED_SIZE + plen);
    return 0;
}

/* --- processes ---------------------------------------------------------------------- */

/* The identity of the process whose records input i is reading now (number unset). */
static struct proc identity(const struct merge *m, size_t i, const char *program, uint32_t pid)
{
    return (struct proc){i, st_reader_name(st_reader_input(m->t->r, i)), program && *program ? program : NULL, pid,
                         NULL, 0};
}

static bool same_proc(const struct proc *a, const struct proc *b)
{
    return a->input == b->input && a->piece == b->piece && a->program == b->program && a->pid == b->pid;
}

/*
 * The output process of id (its input's current description), as an index
 * of procs: one met before, or a new one, written out with its
 * description. A process described anew (the next piece of a rotated
 * trace: the same input, pid and host) keeps its number. -ENOMEM.
 */
static long process_of(struct merge *m, struct proc id)
{
    struct st_trace_description d = {.struct_size = sizeof d};
    const struct proc *same = NULL;

    for (size_t k = 0; k < m->nprocs; k++)
        if (same_proc(&m->procs[k], &id))
            return (long)k;
    if (m->nprocs == m->capprocs) {
        size_t cap = m->capprocs ? 2 * m->capprocs : 16;
        struct proc *more = realloc(m->procs, cap * sizeof *more);
        if (!more)
            return -ENOMEM;
        m->procs = more;
        m->capprocs = cap;
    }
    bool described = st_reader_description(st_reader_input(m->t->r, id.input), &d) == 0;
    if (!(id.host = strdup(described ? d.host : "")))
        return -ENOMEM;
    for (size_t k = 0; k < m->nprocs && described && id.pid; k++)
        if (m->procs[k].input == id.input && m->procs[k].pid == id.pid && !strcmp(m->procs[k].host, id.host))
            same = &m->procs[k];
    id.number = same ? same->number : m->next_number++;
    m->procs[m->nprocs] = id;
    put_process(m, &m->procs[m->nprocs], true);
    return (long)m->nprocs++;
}

/* Makes rec's process the current one, with a process record when it changes. 0 or -ENOMEM. */
static int switch_process(struct merge *m, const struct st_record *rec)
{
    struct proc id = identity(m, rec->input, rec->process_program, rec->process_pid);
    if (m->cur != SIZE_MAX && same_proc(&m->procs[m->cur], &id))
        return 0;
    size_t before = m->nprocs;
    long k = process_of(m, id);
    if (k < 0)
        return (int)k;
    if (m->nprocs == before)
        put_process(m, &m->procs[k], false); /* met before: an empty record says it is this one again */
    m->cur = (size_t)k;
    return 0;
}

/* The process record of every input, as it stands at its first record, right after the header. */
static int name_inputs(struct merge *m)
{
    for (size_t i = 0; i < st_reader_input_count(m->t->r); i++) {
        struct st_trace_description d = {.struct_size = sizeof d};
        bool described = st_reader_description(st_reader_input(m->t->r, i), &d) == 0;
        if (process_of(m, identity(m, i, described ? d.program : NULL, described ? d.pid : 0)) < 0)
            return -ENOMEM;
    }
    return 0; /* m->cur stays none: the first record says whose it is */
}

/* --- the run ------------------------------------------------------------------------ */

/* Reports the reader's error (file, byte offset, record). Returns 1. */
static int reader_failed(const struct merge *m, const struct cli_input *in)
{
    char msg[2048];
    cli_reader_error("merge", m->t, in, msg, sizeof msg);
    fprintf(stderr, PROG ": %s\n", msg);
    return 1;
}

/* Writes one record (its process and first mapping before it). 0 or the exit status after a message. */
static int take(struct merge *m, const struct st_record *rec)
{
    if (switch_process(m, rec) < 0) {
        m->error = -ENOMEM;
        return 0;
    }
    if (!rec->dropped && (rec->event->index >= m->nmapped || !m->mapped[rec->event->index]) &&
        map_event(m, rec->event) < 0) {
        m->error = -ENOMEM;
        return 0;
    }
    if (put_record(m, rec) < 0) {
        fprintf(stderr,
                PROG ": %s: byte offset %" PRIu64 ", record %" PRIu64 ": event %s: a format version 0 record "
                     "holds the address of its string argument, not the string: a v4 file cannot carry it\n",
                st_reader_name(st_reader_input(m->t->r, rec->input)), rec->offset, rec->number, rec->name);
        return 1;
    }
    if (m->buf.len >= FLUSH_AT)
        flush(m); /* an error stops the run (m->error) */
    return 0;
}

/*
 * Without trace-events files: maps and declares at the head of the output
 * every event the inputs declared before their first records (their whole
 * catalog, as simpletrace's writer declares it), so that a reader of the
 * output knows them all from the start, as it did reading the inputs (an
 * exporter pairs a begin with an end declared later only so). Events an
 * input declares later are declared before their first record. 0 or -ENOMEM.
 */
static int declare_known(struct merge *m)
{
    const struct st_catalog *cat = m->t->cat;
    if (!m->t->embedded)
        return 0; /* trace-events files: only the events used, not every one they declare */
    for (size_t i = 0; i <= st_catalog_count(cat); i++) {
        const struct st_event_info *ev = st_catalog_event(cat, i);
        if (ev != st_catalog_dropped(cat) && map_event(m, ev) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Reads every record into the open output. 0, or the exit status after a message. */
static int merge_all(struct merge *m, const struct cli_input *in)
{
    const struct st_record *rec;
    uint8_t header[ST_HEADER_SIZE];
    int ret = st_reader_next(m->t->r, &rec), status = 0;

    if (ret < 0)
        return reader_failed(m, in);
    size_t hlen = st__fmt_put_header(header);
    st__growbuf_put(&m->buf, header, hlen);
    if (name_inputs(m) < 0 || declare_known(m) < 0)
        m->error = -ENOMEM;
    while (ret == 1 && !m->error && !(status = take(m, rec)))
        ret = st_reader_next(m->t->r, &rec);
    if (status)
        return status;
    if (ret < 0) /* damage after records: they are written, up to it (the message says where) */
        m->partial = true;
    else
        cli_trace_report_filters(m->t, in);
    if (flush(m) < 0 || (m->error = cli_sink_finish(&m->sink)) < 0) {
        fprintf(stderr, PROG ": cannot write %s: %s\n", m->out_name, strerror(-m->error));
        return 1;
    }
    return m->partial ? reader_failed(m, in) : 0;
}

/* --- options ------------------------------------------------------------------------ */

enum { OPT_OUTPUT = CLI_OPT_OWN, OPT_COMPRESS, OPT_HELP };


/* Parses argv. Returns -1 to go on, or the exit status (0 for --help). */
static int parse_args(int argc, char **argv, struct cli_input *in, const char **out, const char **compress)
{
    static const struct option longopts[] = {
        CLI_READER_LONGOPTS,
        {"output", required_argument, NULL, OPT_OUTPUT},
        {"compress", required_argument, NULL, OPT_COMPRESS},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    int c, ret = 0;
    opterr = 0;
    optind = 1;
    while (ret == 0 && (c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
        case OPT_OUTPUT: *out = optarg; break;
        case OPT_COMPRESS: *compress = optarg; break;
        case 'h':
        case OPT_HELP: fputs(st__help_merge, stdout); return 0;
        case ':': return cli_usage_error("merge", "option '%s' needs a value", argv[optind - 1]);
        default:
            if ((ret = cli_reader_option("merge", c, optarg, in)) < 0)
                return cli_usage_error("merge", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (ret)
        return ret;
    if (!*out)
        return cli_usage_error("merge", "%s", "need -o OUT, the file to write");
    int level;
    if (cli_compress_level(*compress, *out, &level) < 0)
        return cli_usage_error("merge", "invalid --compress '%s': " CLI_COMPRESS_WANT, *compress);
    return (ret = cli_trace_operands("merge", argc, argv, optind, in)) ? ret : cli_check_output("merge", in, *out, false, NULL);
}

int st__cmd_merge(int argc, char **argv)
{
    struct cli_input in;
    struct cli_trace t = {0};
    struct merge m = {.t = &t, .out = {.fd = -1}, .cur = SIZE_MAX};
    int status, ret, level;

    cli_input_init(&in);
    if ((status = parse_args(argc, argv, &in, &m.out_name, &m.compress)) >= 0)
        goto out;
    if ((status = cli_trace_open("merge", &in, &t)) != 0)
        goto out;
    m.aligned = (in.rd.flags & ST_READER_ALIGN_REALTIME) != 0;
    if ((ret = st__out_file_open(&m.out, m.out_name)) < 0) {
        fprintf(stderr, PROG ": cannot create %s: %s\n", m.out_name, strerror(-ret));
        status = 1;
        goto out;
    }
    cli_compress_level(m.compress, m.out_name, &level); /* checked when parsing */
    cli_sink_init(&m.sink, m.out.fd, level);
    status = merge_all(&m, &in);
    if ((status == 0 || m.partial) && (ret = st__out_file_commit(&m.out)) < 0) {
        fprintf(stderr, PROG ": cannot write %s: %s\n", m.out_name, strerror(-ret));
        status = 1;
    } else if (m.partial) {
        fprintf(stderr, PROG ": %s holds the records before that point\n", m.out_name);
    }
out:
    if (m.out.path) /* open, not committed (a device has no temporary name) */
        st__out_file_discard(&m.out);
    for (size_t k = 0; k < m.nprocs; k++)
        free(m.procs[k].host);
    free(m.procs);
    free(m.mapped);
    cli_sink_free(&m.sink);
    st__growbuf_free(&m.buf);
    cli_trace_close(&t);
    cli_input_free(&in);
    return status;
}
