/*
 * simpletrace info [OPTIONS] [TRACE-EVENTS...] TRACE|DIR...
 *
 * What each trace file holds, like `uftrace info`: its format, who wrote it
 * (the description simpletrace embeds, meta_format.h), its clock, its first
 * and last timestamps as trace time and wall-clock time, its counters, its
 * pieces, the processes it holds records of (several in a merged file),
 * and every declared event with its count; then, for several traces, the
 * totals and one line per process. A trace without declarations (QEMU's)
 * and without trace-events files is still counted: its records are read
 * undecoded (ST_READER_UNDECLARED) and its events named by their mapping
 * records, or by ID. A compressed trace whose seek tables hold a summary
 * (compress=zstd's) is answered from them (ST_READER_SUMMARY): only the
 * frames holding its mappings and its first and last records are
 * decompressed, the counts come from the summaries, and the answers are a
 * full read's; when they cannot be (several processes in one file), the
 * trace is read again whole. Uses only the public reader API.
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
#include "trace_format.h"
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

/* A process a trace holds records of (a merged file holds several; pieces of one are one). */
struct proc_facts {
    struct who who;          /* its description (who.recorded false: none) */
    uint64_t records;        /* event and dropped records */
    bool any;
    struct moment first, last;
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
    uint64_t write_lost;     /* events counted by dropped records of pid ST_PID_WRITE_LOST: a failed write's */
    uint64_t *counts;        /* per catalog index (Dropped_Event never counted here) */
    size_t ncounts;          /* entries of counts: a growing catalog adds events as they come */
    struct undeclared *undecl;
    size_t nundecl, capundecl;
    char **pieces;
    size_t npieces;
    const char *piece;       /* the piece, ... */
    const char *program;     /* ... the description's program pointer and ... */
    uint32_t pid;            /* ... pid of the records being read, whose process and anchor are below */
    bool has_anchor;
    uint64_t anchor_mono, anchor_real;
    struct proc_facts *procs;
    size_t nprocs, cur;
    char error[2048];        /* the reader's error, "" if none */
    struct st_reader_compression z; /* compressed pieces */
};

struct info_opts {
    struct cli_input in; /* the options and trace-events files; trace set per TRACE */
    bool json;
};

/* --- collecting -------------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

/* A copy of description d (NULL: none). */
static struct who who_of(const struct st_trace_description *d)
{
    if (!d)
        return (struct who){0};
    return (struct who){true,           dup_or_null(d->version), dup_or_null(d->program), dup_or_null(d->exe),
                        dup_or_null(d->cmdline), dup_or_null(d->host), dup_or_null(d->clock), d->pid, d->tsc_hz};
}

static void who_free(struct who *w)
{
    free(w->version), free(w->program), free(w->exe), free(w->cmdline), free(w->host), free(w->clock);
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* Whether w names the process described by d (NULL: the trace's records without a description). */
static bool same_who(const struct who *w, const struct st_trace_description *d)
{
    if (!d)
        return !w->recorded;
    return w->recorded && w->pid == d->pid && same_str(w->host, *d->host ? d->host : NULL) &&
           same_str(w->program, *d->program ? d->program : NULL);
}

/* The process of description d (NULL: none) in f->procs, added when new. Its index, or -ENOMEM. */
static long proc_of(struct facts *f, const struct st_trace_description *d)
{
    for (size_t k = 0; k < f->nprocs; k++)
        if (same_who(&f->procs[k].who, d))
            return (long)k;
    struct proc_facts *more = realloc(f->procs, (f->nprocs + 1) * sizeof *more);
    if (!more)
        return -ENOMEM;
    f->procs = more;
    f->procs[f->nprocs] = (struct proc_facts){.who = who_of(d)};
    return (long)f->nprocs++;
}

/*
 * When the description in force changed (another piece, or another process
 * of a merged file): its clock anchor and its process; the trace's own
 * description is the first one met. 0 or -ENOMEM.
 */
static int follow(struct facts *f, struct st_reader *r, const char *program, uint32_t pid)
{
    struct st_trace_description d = {.struct_size = sizeof d};
    const char *piece = st_reader_name(r);
    if (piece == f->piece && program == f->program && pid == f->pid && f->nprocs)
        return 0;
    f->piece = piece;
    f->program = program;
    f->pid = pid;
    bool described = st_reader_description(r, &d) == 0;
    if (described && !f->who.recorded)
        f->who = who_of(&d);
    f->has_anchor = described && (d.anchor_mono_ns || d.anchor_real_ns);
    f->anchor_mono = d.anchor_mono_ns;
    f->anchor_real = d.anchor_real_ns;
    long k = proc_of(f, described ? &d : NULL);
    if (k < 0)
        return -ENOMEM;
    f->cur = (size_t)k;
    return 0;
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
    struct proc_facts *p = &f->procs[f->cur];
    struct moment m = moment_at(f, rec->timestamp_ns);
    if (!f->any || m.ts < f->first.ts)
        f->first = m;
    if (!f->any || m.ts > f->last.ts)
        f->last = m;
    if (!p->any || m.ts < p->first.ts)
        p->first = m;
    if (!p->any || m.ts > p->last.ts)
        p->last = m;
    f->any = p->any = true;
    p->records++;
    if (rec->dropped && rec->has_pid && rec->pid == ST_PID_WRITE_LOST)
        f->write_lost += rec->dropped_count;
    if (rec->dropped)
        return 0;
    if (!rec->event)
        return count_undeclared(f, rec);
    size_t i = rec->event->index;
    if (i >= f->ncounts) { /* an event the trace declared since */
        size_t n = st_catalog_count(f->cat) + 1;
        uint64_t *more = realloc(f->counts, n * sizeof *more);
        if (!more)
            return -ENOMEM;
        memset(more + f->ncounts, 0, (n - f->ncounts) * sizeof *more);
        f->counts = more;
        f->ncounts = n;
    }
    f->counts[i]++;
    return 0;
}

/* Adds count records of an event the summary names (as count_record() would have counted them one by one). */
static void count_summary(void *opaque, const struct st_event_info *ev, const char *name, uint64_t id, uint64_t count)
{
    struct facts *f = opaque;
    if (ev) {
        if (ev->index >= f->ncounts) {
            size_t n = (size_t)ev->index + 1;
            uint64_t *more = realloc(f->counts, n * sizeof *more);
            if (!more) {
                snprintf(f->error, sizeof f->error, "%s: out of memory", f->trace);
                return;
            }
            memset(more + f->ncounts, 0, (n - f->ncounts) * sizeof *more);
            f->counts = more;
            f->ncounts = n;
        }
        f->counts[ev->index] += count;
        return;
    }
    struct st_record rec = {.name = name, .id = id};
    for (size_t i = 0; i < f->nundecl; i++) {
        struct undeclared *u = &f->undecl[i];
        if (name ? u->name && !strcmp(u->name, name) : !u->name && u->id == id) {
            u->count += count;
            return;
        }
    }
    if (count_undeclared(f, &rec) < 0) {
        snprintf(f->error, sizeof f->error, "%s: out of memory", f->trace);
        return;
    }
    f->undecl[f->nundecl - 1].count = count;
}

/*
 * The counts of a trace read with frames skipped (ST_READER_SUMMARY), from
 * its summaries: every event's, and the process's records (one process:
 * its first and last records were read). 0, or 1 after an error in f->error.
 */
static int from_summary(struct facts *f, const struct cli_trace *t)
{
    memset(f->counts, 0, f->ncounts * sizeof *f->counts);
    for (size_t i = 0; i < f->nundecl; i++)
        f->undecl[i].count = 0;
    if (st_reader_summary_counts(t->r, count_summary, f) < 0 && !*f->error)
        snprintf(f->error, sizeof f->error, "%s: out of memory", f->trace);
    if (*f->error)
        return 1;
    size_t keep = 0; /* undeclared events met in the frames read are in the summary too, or were none */
    for (size_t i = 0; i < f->nundecl; i++) {
        if (f->undecl[i].count)
            f->undecl[keep++] = f->undecl[i];
        else
            free(f->undecl[i].name);
    }
    f->nundecl = keep;
    f->write_lost = f->z.write_lost_events;
    if (f->nprocs == 1)
        f->procs[0].records = f->c.events + f->c.dropped_records;
    return 0;
}

/* Records of event index i counted. */
static uint64_t count_of(const struct facts *f, size_t i)
{
    return i < f->ncounts ? f->counts[i] : 0;
}

/* Reads every record of t into f. 0, or 1 after keeping the reader's error in f->error. */
static int collect(struct facts *f, const struct cli_trace *t, const struct cli_input *in)
{
    const struct st_record *rec;
    int ret;

    while ((ret = st_reader_next(t->r, &rec)) == 1) {
        if (follow(f, t->r, rec->process_program, rec->process_pid) < 0 || count_record(f, rec) < 0) {
            snprintf(f->error, sizeof f->error, "%s: out of memory", f->trace);
            return 1;
        }
    }
    if (!f->nprocs && follow(f, t->r, NULL, 0) < 0) { /* a trace without records still has its description */
        snprintf(f->error, sizeof f->error, "%s: out of memory", f->trace);
        return 1;
    }
    f->version = st_reader_version(t->r);
    f->swapped = st_reader_byte_swapped(t->r);
    st_reader_get_counters(t->r, &f->c); /* our own sizeof: cannot fail */
    f->z.struct_size = sizeof f->z;
    st_reader_get_compression(t->r, &f->z);
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
        st_rotated_piece_name(name, sizeof name, in->trace, k); /* listed only: a name cut short still says which */
        if (!(f->pieces[f->npieces++] = strdup(name)))
            return -ENOMEM;
    }
    return 0;
}

/* Forgets what reading collected (not the trace's name and pieces): f is as before its first read. */
static void facts_clear(struct facts *f)
{
    who_free(&f->who);
    for (size_t k = 0; k < f->nprocs; k++)
        who_free(&f->procs[k].who);
    free(f->procs);
    for (size_t i = 0; i < f->nundecl; i++)
        free(f->undecl[i].name);
    free(f->undecl);
    free(f->counts);
    *f = (struct facts){.trace = f->trace, .pieces = f->pieces, .npieces = f->npieces};
}

static void facts_free(struct facts *f)
{
    facts_clear(f);
    for (size_t i = 0; i < f->npieces; i++)
        free(f->pieces[i]);
    free(f->pieces);
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
        return "not embedded (a QEMU trace, or simpletrace before 0.2): events named by their mapping "
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

static void print_counters_of(const struct st_reader_counters *c, uint64_t write_lost)
{
    printf("%-18s%" PRIu64 " (%" PRIu64 " mappings)\n", "records:", c->records, c->mappings);
    printf("%-18s%" PRIu64 "\n", "events:", c->events);
    printf("%-18s%" PRIu64 "\n", "dropped records:", c->dropped_records);
    printf("%-18s%" PRIu64 "\n", "dropped events:", c->dropped_events);
    /* Only when there were: a full disk is not a full buffer, and bufsize= would not have helped. */
    if (write_lost)
        printf("%-18s%" PRIu64 " (of the dropped events: writing the trace failed, e.g. a full disk)\n",
               "write-lost events:", write_lost);
}

static void print_counters(const struct facts *f)
{
    print_counters_of(&f->c, f->write_lost);
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
    for (size_t i = 0; i <= n; i++) {
        const struct st_event_info *ev = st_catalog_event(f->cat, i);
        if (ev != st_catalog_dropped(f->cat))
            printf("%14" PRIu64 "  %s%s\n", count_of(f, i), ev->name, ev->disabled ? " (disabled)" : "");
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

/* compressed: zstd, its frames, sizes and ratio, and whether it can be sought in. */
static void print_compression(const struct facts *f)
{
    const struct st_reader_compression *z = &f->z;
    if (!z->compressed)
        return;
    double ratio = z->compressed_bytes ? (double)z->decompressed_bytes / (double)z->compressed_bytes : 0;
    printf("%-18szstd, %" PRIu64 " frame%s, %" PRIu64 " bytes for %" PRIu64 " (ratio %.2f), %s\n", "compressed:",
           z->frames, z->frames == 1 ? "" : "s", z->compressed_bytes, z->decompressed_bytes, ratio,
           z->seekable ? "seekable (seek table and time index)" : "no seek table: read from the start");
    if (z->index_problem[0])
        printf("%-18s%s\n", "seek table:", z->index_problem);
    if (z->frames_skipped) /* answered from the seek tables: a damaged frame among the others is not seen */
        printf("%-18s%" PRIu64 " of %" PRIu64 " frames decompressed, for the mappings and the first and last "
               "records; the counts are the summary's (stats reads every frame)\n", "compressed read:",
               z->frames - z->frames_skipped, z->frames);
}

/* "PROGRAM[PID]", or what stands for a process without a description. */
static const char *proc_name(const struct proc_facts *p, const char *trace, char *buf, size_t len)
{
    if (p->who.recorded)
        snprintf(buf, len, "%s[%" PRIu32 "]", p->who.program ? p->who.program : "?", p->who.pid);
    else
        snprintf(buf, len, "(no description: %s)", trace);
    return buf;
}

/* A process's first record (wall time when its anchor says it, else as recorded) and its span. */
static void proc_times(const struct proc_facts *p, char *first, size_t flen, char *span, size_t slen)
{
    uint64_t d = p->any ? p->last.ts - p->first.ts : 0;
    if (!p->any)
        snprintf(first, flen, "-");
    else if (p->first.has_wall)
        *st__put_utc_ns(first, p->first.wall_ns) = '\0';
    else
        snprintf(first, flen, "%" PRIu64 " ns", p->first.ts);
    snprintf(span, slen, "%" PRIu64 ".%09" PRIu64 " s", d / 1000000000, d % 1000000000);
}

/* One line per process: records, who, host, clock, first record, duration. */
static void print_proc_table(const struct proc_facts *const *procs, const char *const *traces, size_t n)
{
    printf("%14s  %-24s %-16s %-10s %-31s %s\n", "RECORDS", "PROCESS", "HOST", "CLOCK", "FIRST RECORD",
           "DURATION");
    for (size_t k = 0; k < n; k++) {
        const struct proc_facts *p = procs[k];
        char name[256], first[ST__UTC_ROOM + 32], span[64];
        proc_times(p, first, sizeof first, span, sizeof span);
        printf("%14" PRIu64 "  %-24s %-16s %-10s %-31s %s\n", p->records, proc_name(p, traces[k], name, sizeof name),
               p->who.host ? p->who.host : "-", p->who.clock ? p->who.clock : "-", first, span);
    }
}

/* The processes of a trace that holds several (a merged file). */
static void print_trace_procs(const struct facts *f)
{
    const struct proc_facts *ps[f->nprocs ? f->nprocs : 1];
    const char *names[f->nprocs ? f->nprocs : 1];
    if (f->nprocs < 2)
        return;
    printf("%-18s%zu\n", "processes:", f->nprocs);
    for (size_t k = 0; k < f->nprocs; k++)
        ps[k] = &f->procs[k], names[k] = f->trace;
    print_proc_table(ps, names, f->nprocs);
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
    print_compression(f);
    print_trace_procs(f);
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

static void json_moment(const char *key, const char *wall_key, bool any, const struct moment *m)
{
    char wall[ST__UTC_ROOM + 1];
    json_u64(key, any, m->ts);
    if (any && m->has_wall)
        *st__put_utc_ns(wall, m->wall_ns) = '\0';
    json_str(wall_key, any && m->has_wall ? wall : NULL);
}

/* "processes":[{pid, program, host, clock, records, first_ns, first_wall, last_ns, last_wall}, ...] */
static void json_procs(const struct proc_facts *const *procs, size_t n)
{
    json_key("processes");
    putchar('[');
    for (size_t k = 0; k < n; k++) {
        const struct proc_facts *p = procs[k];
        printf("%s{\"records\":%" PRIu64, k ? "," : "", p->records);
        json_u64("pid", p->who.recorded, p->who.pid);
        json_str("program", p->who.program);
        json_str("host", p->who.host);
        json_str("clock", p->who.clock);
        json_moment("first_ns", "first_wall", p->any, &p->first);
        json_moment("last_ns", "last_wall", p->any, &p->last);
        putchar('}');
    }
    putchar(']');
}

static void json_events(const struct facts *f)
{
    size_t n = st_catalog_count(f->cat);
    json_key("declared_events");
    putchar('[');
    for (size_t i = 0, k = 0; i <= n; i++) {
        const struct st_event_info *ev = st_catalog_event(f->cat, i);
        if (ev != st_catalog_dropped(f->cat))
            printf("%s{\"name\":\"%s\",\"count\":%" PRIu64 ",\"disabled\":%s}", k++ ? "," : "", ev->name,
                   count_of(f, i), ev->disabled ? "true" : "false"); /* names are C identifiers */
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
    json_moment("first_ns", "first_wall", f->any, &f->first);
    json_moment("last_ns", "last_wall", f->any, &f->last);
    json_u64("duration_ns", f->any, f->last.ts - f->first.ts);
    json_u64("records", true, f->c.records);
    json_u64("mappings", true, f->c.mappings);
    json_u64("events", true, f->c.events);
    json_u64("dropped_records", true, f->c.dropped_records);
    json_u64("dropped_events", true, f->c.dropped_events);
    json_u64("write_lost_events", true, f->write_lost);
    json_key("compressed");
    fputs(f->z.compressed ? "true" : "false", stdout);
    if (f->z.compressed) {
        json_u64("frames", true, f->z.frames);
        json_u64("compressed_bytes", true, f->z.compressed_bytes);
        json_u64("decompressed_bytes", true, f->z.decompressed_bytes);
        json_u64("frames_decompressed", true, f->z.frames - f->z.frames_skipped);
        json_key("seekable");
        fputs(f->z.seekable ? "true" : "false", stdout);
    }
    json_key("pieces");
    putchar('[');
    for (size_t i = 0; i < f->npieces; i++) {
        if (i)
            putchar(',');
        st__json_fputs(stdout, f->pieces[i]);
    }
    putchar(']');
    {
        const struct proc_facts *ps[f->nprocs ? f->nprocs : 1];
        for (size_t k = 0; k < f->nprocs; k++)
            ps[k] = &f->procs[k];
        json_procs(ps, f->nprocs);
    }
    json_events(f);
    if (*f->error)
        json_str("error", f->error);
    fputs("}\n", stdout);
}

/* --- one trace ---------------------------------------------------------------------- */

/* Opens the trace in *t for f (its catalog, counts). The exit status: 0, or 1 after a message. */
static int info_open(struct cli_input *in, struct cli_trace *t, struct facts *f)
{
    int status;
    f->version = -1;
    if ((status = cli_trace_open("info", in, t)) != 0)
        return status;
    f->cat = t->cat;
    f->embedded = t->embedded;
    f->c.struct_size = sizeof f->c;
    f->ncounts = st_catalog_count(t->cat) + 1;
    if (!(f->counts = calloc(f->ncounts, sizeof *f->counts))) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    return 0;
}

/* Reads and describes one TRACE into *f (kept for the totals). Returns the exit status for it. */
static int info_one(const struct info_opts *o, const char *trace, struct facts *f)
{
    struct cli_input in = o->in;
    struct cli_trace t;
    int status;

    f->trace = trace;
    in.trace = trace;
    in.ntraces = 1;
    in.undeclared_ok = true;
    in.rd.flags |= ST_READER_SUMMARY; /* a compressed trace with summaries: answered from its seek tables */
    if ((status = info_open(&in, &t, f)) != 0)
        goto out;
    if (list_pieces(f, &in) < 0) {
        fprintf(stderr, PROG ": out of memory\n");
        status = 1;
        goto out;
    }
    status = collect(f, &t, &in);
    if (status == 0 && f->z.frames_skipped && !(f->z.summarized && f->nprocs == 1 && from_summary(f, &t) == 0)) {
        /* Frames were skipped that the summaries cannot answer for: everything is read. */
        cli_trace_close(&t);
        facts_clear(f);
        in.rd.flags &= ~(unsigned)ST_READER_SUMMARY;
        if ((status = info_open(&in, &t, f)) != 0)
            goto out;
        status = collect(f, &t, &in);
    }
    f->undeclared = f->embedded && st_catalog_count(t.cat) == 0; /* the trace declared nothing it was read for */
    if (status && f->version < 0)
        ; /* not even its header could be read: the error says it all */
    else if (o->json)
        print_json(f);
    else
        print_text(f);
    fflush(stdout);
    if (status)
        fprintf(stderr, PROG ": %s\n", f->error);
out:
    f->cat = NULL; /* the catalog goes with the trace; the totals need none */
    cli_trace_close(&t);
    return status;
}

/* --- several traces: the totals ------------------------------------------------------------ */

/* The processes of all traces, one entry per process (pieces and copies of one joined); n in *n. */
static struct proc_facts *all_procs(const struct facts *fs, size_t nf, const char ***traces, size_t *n)
{
    size_t cap = 0;
    for (size_t i = 0; i < nf; i++)
        cap += fs[i].nprocs;
    struct proc_facts *all = calloc(cap ? cap : 1, sizeof *all);
    *traces = calloc(cap ? cap : 1, sizeof **traces);
    *n = 0;
    if (!all || !*traces)
        return NULL;
    for (size_t i = 0; i < nf; i++)
        for (size_t k = 0; k < fs[i].nprocs; k++) {
            const struct proc_facts *p = &fs[i].procs[k];
            size_t j = 0;
            while (j < *n && !(p->who.recorded && all[j].who.recorded && p->who.pid == all[j].who.pid &&
                               same_str(p->who.host, all[j].who.host) && same_str(p->who.program, all[j].who.program)))
                j++;
            if (j == *n) {
                all[(*n)++] = (struct proc_facts){p->who, 0, false, {0}, {0}}; /* strings borrowed */
                (*traces)[j] = fs[i].trace;
            }
            all[j].records += p->records;
            if (p->any && (!all[j].any || p->first.ts < all[j].first.ts))
                all[j].first = p->first;
            if (p->any && (!all[j].any || p->last.ts > all[j].last.ts))
                all[j].last = p->last;
            all[j].any |= p->any;
        }
    return all;
}

/* The distinct hosts the processes name ("" for processes without a description, counted once). */
static size_t count_hosts(const struct proc_facts *all, size_t n, bool *unknown)
{
    size_t hosts = 0;
    *unknown = false;
    for (size_t j = 0; j < n; j++) {
        if (!all[j].who.host) {
            *unknown = true;
            continue;
        }
        size_t k = 0;
        while (k < j && !same_str(all[k].who.host, all[j].who.host))
            k++;
        hosts += k == j;
    }
    return hosts;
}

/*
 * The first and last records of all traces: wall-clock times when every
 * process with records has an anchor; timestamps as recorded when all
 * come from one host (or none says); else not comparable (false).
 */
static bool span_of(const struct proc_facts *all, size_t n, size_t hosts, bool unknown, struct moment *first,
                    struct moment *last, bool *any)
{
    bool walls = true;
    *any = false;
    for (size_t j = 0; j < n; j++)
        walls &= !all[j].any || (all[j].first.has_wall && all[j].last.has_wall);
    if (!walls && hosts + unknown > 1)
        return false;
    for (size_t j = 0; j < n; j++) {
        const struct proc_facts *p = &all[j];
        if (!p->any)
            continue;
        if (!*any || (walls ? p->first.wall_ns < first->wall_ns : p->first.ts < first->ts))
            *first = p->first;
        if (!*any || (walls ? p->last.wall_ns > last->wall_ns : p->last.ts > last->ts))
            *last = p->last;
        *any = true;
    }
    if (!walls)
        first->has_wall = last->has_wall = false;
    return true;
}

/* What every trace holds together, and one line (JSON: object) per process. 0 or -ENOMEM. */
static int print_totals(const struct facts *fs, size_t nf, bool json)
{
    const char **traces;
    size_t n;
    struct proc_facts *all = all_procs(fs, nf, &traces, &n);
    struct st_reader_counters c = {0};
    uint64_t write_lost = 0;
    struct moment first = {0}, last = {0};
    bool unknown, any, comparable;
    if (!all) {
        free(traces);
        return -ENOMEM;
    }
    for (size_t i = 0; i < nf; i++) {
        c.records += fs[i].c.records, c.mappings += fs[i].c.mappings, c.events += fs[i].c.events;
        c.dropped_records += fs[i].c.dropped_records, c.dropped_events += fs[i].c.dropped_events;
        write_lost += fs[i].write_lost;
    }
    size_t hosts = count_hosts(all, n, &unknown);
    comparable = span_of(all, n, hosts, unknown, &first, &last, &any);
    int64_t span = !any ? 0 : first.has_wall ? last.wall_ns - first.wall_ns : (int64_t)(last.ts - first.ts);
    const struct proc_facts *ps[n ? n : 1];
    for (size_t j = 0; j < n; j++)
        ps[j] = &all[j];
    if (json) {
        printf("{\"total\":{\"traces\":%zu", nf);
        json_u64("hosts", true, hosts);
        json_u64("records", true, c.records);
        json_u64("events", true, c.events);
        json_u64("dropped_records", true, c.dropped_records);
        json_u64("dropped_events", true, c.dropped_events);
        json_u64("write_lost_events", true, write_lost);
        bool mono = comparable && any && !first.has_wall, wall = comparable && any && first.has_wall;
        char w1[ST__UTC_ROOM + 1], w2[ST__UTC_ROOM + 1];
        *st__put_utc_ns(w1, first.wall_ns) = '\0';
        *st__put_utc_ns(w2, last.wall_ns) = '\0';
        json_u64("first_ns", mono, first.ts); /* one host's clock: as recorded; several: wall time only */
        json_str("first_wall", wall ? w1 : NULL);
        json_u64("last_ns", mono, last.ts);
        json_str("last_wall", wall ? w2 : NULL);
        json_u64("duration_ns", comparable && any, (uint64_t)span);
        json_procs(ps, n);
        fputs("}}\n", stdout);
    } else {
        char buf[128], wall[ST__UTC_ROOM + 1];
        printf("\n%-18s%zu traces\n", "total:", nf);
        printf("%-18s%zu\n%-18s%zu%s\n", "processes:", n, "hosts:", hosts, unknown ? " (and traces that do not say)" : "");
        print_counters_of(&c, write_lost);
        for (int end = 0; end < 2; end++) {
            const struct moment *m = end ? &last : &first;
            if (!comparable)
                snprintf(buf, sizeof buf, "not comparable (hosts' clocks differ, and some traces have no clock anchor)");
            else if (!any)
                snprintf(buf, sizeof buf, "none (no records)");
            else if (m->has_wall)
                *st__put_utc_ns(wall, m->wall_ns) = '\0', snprintf(buf, sizeof buf, "%s", wall);
            else
                snprintf(buf, sizeof buf, "%" PRIu64 " ns", m->ts);
            line(end ? "last record:" : "first record:", buf);
        }
        snprintf(buf, sizeof buf, "%" PRId64 ".%09" PRId64 " s", span / 1000000000, span % 1000000000);
        line("duration:", comparable && any ? buf : "-");
        print_proc_table(ps, traces, n);
    }
    free(all);
    free(traces);
    return 0;
}

/* --- options ------------------------------------------------------------------------ */

static int usage_error(const char *fmt, const char *arg)
{
    return cli_usage_error("info", fmt, arg);
}

enum { OPT_JSON = CLI_OPT_OWN, OPT_FORMAT, OPT_HELP };

/* [TRACE-EVENTS...] TRACE|DIR..., told apart and expanded as print does. 0, or the status after a message. */
static int split_operands(int argc, char **argv, int first, struct info_opts *o)
{
    if (argc == first)
        return usage_error("%s", "need [TRACE-EVENTS...] TRACE...");
    if (cli_is_events_file(argv[argc - 1]))
        return usage_error("need a TRACE after the trace-events files (%s is one)", argv[argc - 1]);
    return cli_trace_operands("info", argc, argv, first, &o->in);
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
    int ret = split_operands(argc, argv, optind, o);
    return ret ? ret : -1;
}

int st__cmd_info(int argc, char **argv)
{
    struct info_opts o;
    memset(&o, 0, sizeof o);
    cli_input_init(&o.in);
    int status = parse_args(argc, argv, &o);
    if (status >= 0)
        return status;
    size_t n = o.in.ntraces;
    struct facts *fs = calloc(n, sizeof *fs);
    status = fs ? 0 : 1;
    for (size_t i = 0; fs && i < n; i++) {
        if (i && !o.json)
            putchar('\n');
        if (info_one(&o, o.in.traces[i], &fs[i]))
            status = 1;
    }
    if (fs && n > 1 && print_totals(fs, n, o.json) < 0)
        status = 1;
    if (status && !fs)
        fprintf(stderr, PROG ": out of memory\n");
    for (size_t i = 0; fs && i < n; i++)
        facts_free(&fs[i]);
    free(fs);
    cli_input_free(&o.in);
    return status;
}
