/*
 * simpletrace info [OPTIONS] [TRACE-EVENTS...] TRACE...
 *
 * What each trace file holds, like `uftrace info`: its format, who wrote it
 * (the description simpletrace embeds, meta_format.h), its clock, its first
 * and last timestamps as trace time and wall-clock time, its counters, its
 * pieces, and every declared event with its count. A trace without
 * declarations (QEMU's) and without trace-events files is still counted:
 * its records are read undecoded (ST_READER_UNDECLARED) and its events
 * named by their mapping records, or by ID. Uses only the public reader API.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simpletrace/reader.h>

#include "commands.h"
#include "help_texts.h"
#include "json_escape.h"
#include "reader_opts.h"
#include "wall_time.h"

#define PROG "simpletrace info"

/* --help: doc/simpletrace-info.1.txt, also the man page. */

/* An event the catalog does not declare, counted by its mapped name, or by ID without one. */
struct undeclared {
    char *name; /* owned; NULL: known by ID only */
    uint64_t id;
    uint64_t count;
};

/* One moment of the trace: a timestamp and, with the anchor of its piece, its wall time. */
struct moment {
    uint64_t ts;
    bool has_wall;
    int64_t wall_ns;
};

/* The description's strings, copied: the reader's are valid only while it reads their piece. */
struct who {
    bool recorded;
    char *version, *program, *exe, *cmdline, *host, *clock;
    uint32_t pid;
    uint64_t tsc_hz;
};

/* Everything info says about one trace. */
struct facts {
    const char *trace;
    int version;             /* format version of the first piece, -1 unknown */
    bool swapped;
    bool embedded, undeclared;
    const struct st_catalog *cat;
    struct who who;
    bool any;                /* a record was read: first and last are set */
    struct moment first, last;
    struct st_reader_counters c;
    uint64_t *counts;        /* per catalog index (Dropped_Event excluded) */
    struct undeclared *undecl;
    size_t nundecl, capundecl;
    char **pieces;
    size_t npieces;
    const char *piece;       /* the reader's name of the piece whose anchor is below */
    bool has_anchor;
    uint64_t anchor_mono, anchor_real;
    char error[2048];        /* the reader's error, "" if none */
};

struct info_opts {
    struct cli_input in; /* the options and trace-events files; trace set per TRACE */
    bool json;
    char **traces;
    size_t ntraces;
};

/* --- collecting -------------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

/* Copies the description of the piece being read, the first time there is one. */
static void take_who(struct facts *f, struct st_reader *r)
{
    struct st_trace_description d = {.struct_size = sizeof d};
    if (f->who.recorded || st_reader_description(r, &d) != 0)
        return;
    f->who = (struct who){true,           dup_or_null(d.version), dup_or_null(d.program), dup_or_null(d.exe),
                          dup_or_null(d.cmdline), dup_or_null(d.host), dup_or_null(d.clock), d.pid, d.tsc_hz};
}

/* When the reader moved to another piece: that piece's clock anchor (each piece has its own). */
static void follow_piece(struct facts *f, struct st_reader *r)
{
    struct st_trace_description d = {.struct_size = sizeof d};
    const char *piece = st_reader_name(r);
    if (piece == f->piece)
        return;
    f->piece = piece;
    take_who(f, r);
    f->has_anchor = st_reader_description(r, &d) == 0 && (d.anchor_mono_ns || d.anchor_real_ns);
    f->anchor_mono = d.anchor_mono_ns;
    f->anchor_real = d.anchor_real_ns;
}

static struct moment moment_at(const struct facts *f, uint64_t ts)
{
    struct moment m = {ts, f->has_anchor, 0};
    if (m.has_wall)
        m.wall_ns = st__wall_ns(f->anchor_mono, f->anchor_real, ts);
    return m;
}

/* Counts a record of an undeclared event by its name (or ID). 0 or -ENOMEM. */
static int count_undeclared(struct facts *f, const struct st_record *rec)
{
    for (size_t i = 0; i < f->nundecl; i++) {
        struct undeclared *u = &f->undecl[i];
        if (rec->name ? u->name && !strcmp(u->name, rec->name) : !u->name && u->id == rec->id) {
            u->count++;
            return 0;
        }
    }
    if (f->nundecl == f->capundecl) {
        size_t cap = f->capundecl ? 2 * f->capundecl : 32;
        struct undeclared *u = realloc(f->undecl, cap * sizeof *u);
        if (!u)
            return -ENOMEM;
        f->undecl = u;
        f->capundecl = cap;
    }
    char *name = rec->name ? strdup(rec->name) : NULL;
    if (rec->name && !name)
        return -ENOMEM;
    f->undecl[f->nundecl++] = (struct undeclared){name, rec->id, 1};
    return 0;
}

static int count_record(struct facts *f, const struct st_record *rec)
{
    if (!f->any || rec->timestamp_ns < f->first.ts)
        f->first = moment_at(f, rec->timestamp_ns);
    if (!f->any || rec->timestamp_ns > f->last.ts)
        f->last = moment_at(f, rec->timestamp_ns);
    f->any = true;
    if (rec->dropped)
        return 0;
    if (!rec->event)
        return count_undeclared(f, rec);
    if (rec->event->index < st_catalog_count(f->cat))
        f->counts[rec->event->index]++;
    return 0;
}

/* Reads every record of t into f. 0, or 1 after keeping the reader's error in f->error. */
static int collect(struct facts *f, const struct cli_trace *t, const struct cli_input *in)
{
    const struct st_record *rec;
    int ret;

    while ((ret = st_reader_next(t->r, &rec)) == 1) {
        follow_piece(f, t->r);
        if (count_record(f, rec) < 0) {
            snprintf(f->error, sizeof f->error, "%s: out of memory", f->trace);
            return 1;
        }
    }
    follow_piece(f, t->r); /* a trace without records still has its description */
    f->version = st_reader_version(t->r);
    f->swapped = st_reader_byte_swapped(t->r);
    st_reader_get_counters(t->r, &f->c); /* our own sizeof: cannot fail */
    if (ret == 0)
        return 0;
    cli_reader_error("info", t, in, f->error, sizeof f->error);
    return 1;
}

/* The files read: the pieces of a rotated trace (as the reader finds them), else the trace itself. */
static int list_pieces(struct facts *f, const struct cli_input *in)
{
    uint64_t first = 0, count = 1;
    if ((in->rd.flags & ST_READER_ROTATED) && st_rotated_find(in->trace, &first, &count) < 0)
        first = 0, count = 1;
    if (!(f->pieces = calloc(count, sizeof *f->pieces)))
        return -ENOMEM;
    for (uint64_t k = first; k - first < count; k++) {
        char name[4096];
        if (k)
            snprintf(name, sizeof name, "%s.%" PRIu64, in->trace, k);
        else
            snprintf(name, sizeof name, "%s", in->trace);
        if (!(f->pieces[f->npieces++] = strdup(name)))
            return -ENOMEM;
    }
    return 0;
}

static void facts_free(struct facts *f)
{
    struct who *w = &f->who;
    free(w->version), free(w->program), free(w->exe), free(w->cmdline), free(w->host), free(w->clock);
    for (size_t i = 0; i < f->nundecl; i++)
        free(f->undecl[i].name);
    free(f->undecl);
    for (size_t i = 0; i < f->npieces; i++)
        free(f->pieces[i]);
    free(f->pieces);
    free(f->counts);
}

/* --- text ------------------------------------------------------------------------ */

#define NOT_RECORDED "not recorded"

static bool host_is_little(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static const char *byte_order(const struct facts *f)
{
    return host_is_little() != f->swapped ? "little-endian" : "big-endian";
}

static void line(const char *key, const char *value)
{
    printf("%-18s%s\n", key, value ? value : NOT_RECORDED);
}

static const char *declarations_text(const struct facts *f, char *buf, size_t len)
{
    size_t n = st_catalog_count(f->cat);
    if (f->undeclared)
        return "not embedded (a QEMU trace, or simpletrace before 0.3): events named by their mapping "
               "records or IDs; give the trace-events files for their declarations";
    snprintf(buf, len, "%s (%zu events)", f->embedded ? "embedded" : "from the trace-events files", n);
    return buf;
}

/* "N ns, WALL" for a timestamp, the wall part when the piece has an anchor. */
static const char *moment_text(const struct facts *f, const struct moment *m, char *buf, size_t len)
{
    char wall[ST__UTC_ROOM + 1];
    if (!f->any)
        return "none (no records)";
    if (m->has_wall)
        *st__put_utc_ns(wall, m->wall_ns) = '\0';
    snprintf(buf, len, "%" PRIu64 " ns%s%s", m->ts, m->has_wall ? ", " : " (no clock anchor: wall time ",
             m->has_wall ? wall : NOT_RECORDED ")");
    return buf;
}

static void print_process(const struct who *w)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%" PRIu32, w->pid);
    line("pid:", w->recorded ? buf : NULL);
    line("program:", w->program);
    line("exe:", w->exe);
    line("cmdline:", w->cmdline);
    line("host:", w->host);
    line("simpletrace:", w->version);
    if (w->clock && w->tsc_hz)
        snprintf(buf, sizeof buf, "%s (%" PRIu64 " Hz)", w->clock, w->tsc_hz);
    line("clock:", w->clock && w->tsc_hz ? buf : w->clock);
}

static void print_times(const struct facts *f)
{
    char buf[128];
    line("first record:", moment_text(f, &f->first, buf, sizeof buf));
    line("last record:", moment_text(f, &f->last, buf, sizeof buf));
    uint64_t d = f->any ? f->last.ts - f->first.ts : 0;
    snprintf(buf, sizeof buf, "%" PRIu64 ".%09" PRIu64 " s", d / 1000000000, d % 1000000000);
    line("duration:", buf);
}

static void print_counters(const struct facts *f)
{
    printf("%-18s%" PRIu64 " (%" PRIu64 " mappings)\n", "records:", f->c.records, f->c.mappings);
    printf("%-18s%" PRIu64 "\n", "events:", f->c.events);
    printf("%-18s%" PRIu64 "\n", "dropped records:", f->c.dropped_records);
    printf("%-18s%" PRIu64 "\n", "dropped events:", f->c.dropped_events);
    printf("%-18s%zu:", "pieces:", f->npieces);
    for (size_t i = 0; i < f->npieces; i++)
        printf(" %s", f->pieces[i]);
    printf("\n");
}

static void print_events_text(const struct facts *f)
{
    size_t n = st_catalog_count(f->cat);
    if (n || !f->nundecl)
        printf("%s\n%14s  %s\n", "declared events:", "COUNT", "EVENT");
    for (size_t i = 0; i < n; i++) {
        const struct st_event_info *ev = st_catalog_event(f->cat, i);
        printf("%14" PRIu64 "  %s%s\n", f->counts[i], ev->name, ev->disabled ? " (disabled)" : "");
    }
    if (f->nundecl)
        printf("%s\n%14s  %s\n", "undeclared events:", "COUNT", "EVENT");
    for (size_t i = 0; i < f->nundecl; i++) {
        const struct undeclared *u = &f->undecl[i];
        if (u->name)
            printf("%14" PRIu64 "  %s\n", u->count, u->name);
        else
            printf("%14" PRIu64 "  ID %" PRIu64 "\n", u->count, u->id);
    }
}

static void print_text(const struct facts *f)
{
    char buf[512];
    line("trace:", f->trace);
    if (f->version >= 0)
        snprintf(buf, sizeof buf, "simpletrace v%d, %s", f->version, byte_order(f));
    line("format:", f->version >= 0 ? buf : "unknown (the header could not be read)");
    line("declarations:", declarations_text(f, buf, sizeof buf));
    print_process(&f->who);
    print_times(f);
    print_counters(f);
    print_events_text(f);
}

/* --- JSON ------------------------------------------------------------------------- */

static void json_key(const char *key)
{
    printf(",\"%s\":", key);
}

static void json_str(const char *key, const char *value)
{
    json_key(key);
    if (value)
        st__json_fputs(stdout, value);
    else
        fputs("null", stdout);
}

static void json_u64(const char *key, bool known, uint64_t v)
{
    json_key(key);
    if (known)
        printf("%" PRIu64, v);
    else
        fputs("null", stdout);
}

static void json_moment(const char *key, const char *wall_key, const struct facts *f, const struct moment *m)
{
    char wall[ST__UTC_ROOM + 1];
    json_u64(key, f->any, m->ts);
    if (f->any && m->has_wall)
        *st__put_utc_ns(wall, m->wall_ns) = '\0';
    json_str(wall_key, f->any && m->has_wall ? wall : NULL);
}

static void json_events(const struct facts *f)
{
    size_t n = st_catalog_count(f->cat);
    json_key("declared_events");
    putchar('[');
    for (size_t i = 0; i < n; i++) {
        const struct st_event_info *ev = st_catalog_event(f->cat, i);
        printf("%s{\"name\":\"%s\",\"count\":%" PRIu64 ",\"disabled\":%s}", i ? "," : "", ev->name, f->counts[i],
               ev->disabled ? "true" : "false"); /* names are C identifiers */
    }
    putchar(']');
    json_key("undeclared_events");
    putchar('[');
    for (size_t i = 0; i < f->nundecl; i++) {
        printf("%s{\"id\":%" PRIu64, i ? "," : "", f->undecl[i].id);
        json_str("name", f->undecl[i].name);
        printf(",\"count\":%" PRIu64 "}", f->undecl[i].count);
    }
    putchar(']');
}

static void print_json(const struct facts *f)
{
    const struct who *w = &f->who;
    fputs("{\"trace\":", stdout);
    st__json_fputs(stdout, f->trace);
    json_u64("format_version", f->version >= 0, (uint64_t)f->version);
    json_str("byte_order", f->version >= 0 ? byte_order(f) : NULL);
    json_str("declarations", f->undeclared ? "none" : f->embedded ? "embedded" : "trace-events");
    json_u64("pid", w->recorded, w->pid);
    json_str("program", w->program);
    json_str("exe", w->exe);
    json_str("cmdline", w->cmdline);
    json_str("host", w->host);
    json_str("simpletrace_version", w->version);
    json_str("clock", w->clock);
    json_u64("tsc_hz", w->tsc_hz != 0, w->tsc_hz);
    json_moment("first_ns", "first_wall", f, &f->first);
    json_moment("last_ns", "last_wall", f, &f->last);
    json_u64("duration_ns", f->any, f->last.ts - f->first.ts);
    json_u64("records", true, f->c.records);
    json_u64("mappings", true, f->c.mappings);
    json_u64("events", true, f->c.events);
    json_u64("dropped_records", true, f->c.dropped_records);
    json_u64("dropped_events", true, f->c.dropped_events);
    json_key("pieces");
    putchar('[');
    for (size_t i = 0; i < f->npieces; i++) {
        if (i)
            putchar(',');
        st__json_fputs(stdout, f->pieces[i]);
    }
    putchar(']');
    json_events(f);
    if (*f->error)
        json_str("error", f->error);
    fputs("}\n", stdout);
}

/* --- one trace ---------------------------------------------------------------------- */

/* Reads and describes one TRACE. Returns the exit status for it. */
static int info_one(const struct info_opts *o, const char *trace)
{
    struct cli_input in = o->in;
    struct cli_trace t;
    struct facts f;
    int status;

    memset(&f, 0, sizeof f);
    f.trace = trace;
    f.version = -1;
    in.trace = trace;
    in.undeclared_ok = true;
    if ((status = cli_trace_open("info", &in, &t)) != 0)
        goto out;
    f.cat = t.cat;
    f.embedded = t.embedded;
    f.undeclared = t.undeclared;
    f.c.struct_size = sizeof f.c;
    if (!(f.counts = calloc(st_catalog_count(t.cat) + 1, sizeof *f.counts)) || list_pieces(&f, &in) < 0) {
        fprintf(stderr, PROG ": out of memory\n");
        status = 1;
        goto out;
    }
    status = collect(&f, &t, &in);
    if (o->json)
        print_json(&f);
    else
        print_text(&f);
    fflush(stdout);
    if (status)
        fprintf(stderr, PROG ": %s\n", f.error);
out:
    facts_free(&f);
    cli_trace_close(&t);
    return status;
}

/* --- options ------------------------------------------------------------------------ */

static int usage_error(const char *fmt, const char *arg)
{
    return cli_usage_error("info", fmt, arg);
}

enum { OPT_JSON = CLI_OPT_OWN, OPT_FORMAT, OPT_HELP };

/* [TRACE-EVENTS...] TRACE..., told apart as print does (cli_first_trace). 0, or 2 after a usage error. */
static int split_operands(int argc, char **argv, int first, struct info_opts *o)
{
    if (argc == first)
        return usage_error("%s", "need [TRACE-EVENTS...] TRACE...");
    int i = cli_first_trace(argc, argv, first);
    if (cli_is_events_file(argv[argc - 1]))
        return usage_error("need a TRACE after the trace-events files (%s is one)", argv[argc - 1]);
    o->in.events_files = (const char **)(argv + first);
    o->in.nevents_files = (size_t)(i - first);
    o->traces = argv + i;
    o->ntraces = (size_t)(argc - i);
    return 0;
}

static int parse_one(int c, const char *arg, struct info_opts *o)
{
    switch (c) {
    case OPT_JSON: o->json = true; return 0;
    case OPT_FORMAT:
        if (strcmp(arg, "text") && strcmp(arg, "json"))
            return usage_error("unknown format '%s' (text or json)", arg);
        o->json = !strcmp(arg, "json");
        return 0;
    case CLI_OPT_NO_HEADER:
    case CLI_OPT_ROTATED:
    case CLI_OPT_NO_ROTATED: return cli_reader_option("info", c, arg, &o->in);
    default: return -1;
    }
}

/* Parses argv into *o. Returns -1 to go on, or the exit status (0 for --help). */
static int parse_args(int argc, char **argv, struct info_opts *o)
{
    static const struct option longopts[] = {
        {"no-header", no_argument, NULL, CLI_OPT_NO_HEADER}, {"rotated", no_argument, NULL, CLI_OPT_ROTATED},
        {"no-rotated", no_argument, NULL, CLI_OPT_NO_ROTATED}, {"json", no_argument, NULL, OPT_JSON},
        {"format", required_argument, NULL, OPT_FORMAT},     {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h' || c == OPT_HELP) {
            fputs(st__help_info, stdout);
            return 0;
        }
        if (c == ':')
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        int ret = parse_one(c, optarg, o);
        if (ret < 0)
            return usage_error("unknown option '%s'", argv[optind - 1]);
        if (ret)
            return ret;
    }
    if ((o->in.rd.flags & ST_READER_ROTATED) && o->in.rotated_off)
        return usage_error("%s", "--rotated and --no-rotated contradict each other");
    return split_operands(argc, argv, optind, o) ? 2 : -1;
}

int st_cmd_info(int argc, char **argv)
{
    struct info_opts o;
    memset(&o, 0, sizeof o);
    cli_input_init(&o.in);
    int status = parse_args(argc, argv, &o);
    if (status >= 0)
        return status;
    status = 0;
    for (size_t i = 0; i < o.ntraces; i++) {
        if (i && !o.json)
            putchar('\n');
        if (info_one(&o, o.traces[i]))
            status = 1;
    }
    return status;
}
