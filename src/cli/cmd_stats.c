/*
 * simpletrace stats [OPTIONS] TRACE-EVENTS... TRACE-FILE
 *
 * Per-event counts, first/last times and rates, plus totals (records,
 * drops, timestamp inversions, threads), as an aligned table or JSON.
 * Times are relative to the first record of the file. AVG/s is the
 * event's count over the whole trace's duration (first to last timestamp),
 * not over its own first to last record, so the figures of different events
 * add up and compare; the header says "AVG" so it does not pass for a peak
 * or current rate. The records total is split into parts that add up to it:
 * what the counters tell apart (events, dropped records, event mappings)
 * and the rest, the self-description records (the description, each
 * event's declaration, the process records of a merged file), which only
 * the reader tells apart. Uses only the public reader API.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simpletrace/reader.h>

#include "commands.h"
#include "help_texts.h"
#include "json_escape.h"
#include "reader_opts.h"
#include "duration.h"
#include "trace_format.h"

#define PROG "simpletrace stats"
#define MAX_PIDS 65536 /* distinct pids counted exactly; more is reported as "at least" */

/* --help: doc/simpletrace-stats.1.txt, also the man page. */

struct event_stats {
    const struct st_event_info *ev;
    uint64_t count;
    uint64_t min_ts, max_ts;
};

struct totals {
    struct st_reader_compression z; /* compressed inputs: frames read and skipped */
    uint64_t delivered;       /* event + dropped records that passed the filter */
    uint64_t events, dropped_records, dropped_events;
    uint64_t write_lost;      /* of dropped_events: those of dropped records with pid ST_PID_WRITE_LOST */
    uint64_t non_monotonic;
    uint64_t min_ts, max_ts, prev_ts;
    uint64_t origin;
    bool any;
    uint32_t *pids;           /* open-addressing set, 0 = empty slot (pid 0 kept aside) */
    size_t npids;
    bool pid0, pids_capped;
    struct proc_count *procs; /* the processes records came from, in the order met */
    size_t nprocs;
    struct proc_seen *seen;   /* per input: the process and thread of its last record */
    size_t nseen;
};

/*
 * What an input's last record came from, so that its next record, almost
 * always of the same process and thread, costs no search: the process's pid
 * and program pointer (NULL before its first record), that process, the
 * records counted for it since (added to it when the process changes and
 * at the end), and the record's pid field, in the set of pids already.
 */
struct proc_seen {
    const char *program;
    uint32_t pid;
    size_t proc;
    uint64_t records;
    uint32_t tid;
    bool have_tid;
};

/* Records of one process: the inputs of one (st_reader_input_process()), each of a merged file's. */
struct proc_count {
    size_t group;     /* the process's first input */
    size_t met;       /* the order it was met in */
    uint32_t pid;     /* as the records say (0: not recorded) */
    char *program;    /* owned; "" when not recorded */
    uint64_t records;
};

/* --- collecting ------------------------------------------------------------ */

static void add_pid(struct totals *t, uint32_t pid)
{
    if (pid == 0) {
        t->pid0 = true;
        return;
    }
    if (!t->pids)
        return;
    size_t mask = 2 * MAX_PIDS - 1, i = (pid * 2654435761u) & mask;
    while (t->pids[i] && t->pids[i] != pid)
        i = (i + 1) & mask;
    if (t->pids[i])
        return;
    if (t->npids >= MAX_PIDS) {
        t->pids_capped = true;
        return;
    }
    t->pids[i] = pid;
    t->npids++;
}

static void add_record(struct event_stats *es, struct totals *t, const struct st_record *rec)
{
    uint64_t ts = rec->timestamp_ns;
    if (!t->any) {
        t->min_ts = t->max_ts = t->prev_ts = ts;
        t->any = true;
    }
    if (ts < t->prev_ts)
        t->non_monotonic++;
    t->prev_ts = ts;
    if (ts < t->min_ts)
        t->min_ts = ts;
    if (ts > t->max_ts)
        t->max_ts = ts;
    t->delivered++;
    if (rec->dropped) {
        t->dropped_records++;
        t->dropped_events += rec->dropped_count;
        if (rec->has_pid && rec->pid == ST_PID_WRITE_LOST)
            t->write_lost += rec->dropped_count;
        return;
    }
    t->events++;
    struct event_stats *e = &es[rec->event->index];
    if (e->count == 0 || ts < e->min_ts)
        e->min_ts = ts;
    if (e->count == 0 || ts > e->max_ts)
        e->max_ts = ts;
    e->count++;
}

/* The process of rec in t->procs, added when new: its index, or -ENOMEM. */
static long find_process(struct totals *t, const struct st_reader *r, const struct st_record *rec)
{
    size_t group = st_reader_input_process(r, rec->input);
    for (size_t k = 0; k < t->nprocs; k++)
        if (t->procs[k].group == group && t->procs[k].pid == rec->process_pid &&
            !strcmp(t->procs[k].program, rec->process_program))
            return (long)k;
    struct proc_count *more = realloc(t->procs, (t->nprocs + 1) * sizeof *more);
    if (!more)
        return -ENOMEM;
    t->procs = more;
    if (!(more[t->nprocs].program = strdup(rec->process_program)))
        return -ENOMEM;
    more[t->nprocs].group = group;
    more[t->nprocs].met = t->nprocs;
    more[t->nprocs].pid = rec->process_pid;
    more[t->nprocs].records = 0;
    return (long)t->nprocs++;
}

/* Adds the records an input counted to its process. */
static void flush_seen(struct totals *t, struct proc_seen *s)
{
    if (s->program)
        t->procs[s->proc].records += s->records;
    s->records = 0;
}

/*
 * Counts rec for its process and its pid field for the threads; one of the
 * same process (pid and program pointer) and pid as its input's last needs
 * no search. 0 or -ENOMEM.
 */
static int count_process(struct totals *t, const struct st_reader *r, const struct st_record *rec)
{
    struct proc_seen *s = &t->seen[rec->input];
    if (rec->has_pid && (!s->have_tid || s->tid != rec->pid)) {
        add_pid(t, rec->pid);
        s->tid = rec->pid;
        s->have_tid = true;
    }
    if (s->program != rec->process_program || s->pid != rec->process_pid) {
        long k = find_process(t, r, rec);
        if (k < 0)
            return (int)k;
        flush_seen(t, s);
        s->program = rec->process_program;
        s->pid = rec->process_pid;
        s->proc = (size_t)k;
    }
    s->records++;
    return 0;
}

/* Entries for every event the catalog has now (*n of them so far): it grows with the trace's declarations. */
static int grow_events(const struct st_catalog *cat, struct event_stats **es, size_t *n)
{
    size_t want = st_catalog_count(cat) + 1;
    struct event_stats *more = realloc(*es, want * sizeof *more);
    if (!more)
        return -ENOMEM;
    memset(more + *n, 0, (want - *n) * sizeof *more);
    for (size_t i = *n; i < want; i++)
        more[i].ev = st_catalog_event(cat, i);
    *es = more;
    *n = want;
    return 0;
}

/* Reads every record into *es (*nev entries); 0 at the end or the reader's error code. */
static int collect(struct st_reader *r, struct event_stats **es, size_t *nev, struct totals *t)
{
    const struct st_record *rec;
    int ret;
    while ((ret = st_reader_next(r, &rec)) == 1) {
        if ((rec->event->index >= *nev && grow_events(st_reader_catalog(r), es, nev) < 0) ||
            count_process(t, r, rec) < 0) {
            ret = -ENOMEM;
            break;
        }
        add_record(*es, t, rec);
    }
    for (size_t i = 0; i < t->nseen; i++)
        flush_seen(t, &t->seen[i]);
    st_reader_origin(r, &t->origin);
    return ret;
}

/* --- showing ---------------------------------------------------------------- */


static int by_count(const void *a, const void *b)
{
    const struct event_stats *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return strcmp(x->ev->name, y->ev->name);
}

/* Moves the events seen to the front, sorted; returns how many. */
static size_t sort_events(struct event_stats *es, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (es[i].count)
            es[k++] = es[i];
    qsort(es, k, sizeof *es, by_count);
    return k;
}

static uint64_t duration(const struct totals *t)
{
    return t->any ? t->max_ts - t->min_ts : 0;
}

static double rate(uint64_t count, const struct totals *t)
{
    uint64_t d = duration(t);
    return d ? (double)count * 1e9 / (double)d : 0.0;
}

/* Records that are none of the counted kinds: description, declaration and process records. */
static uint64_t self_description(const struct st_reader_counters *c)
{
    uint64_t parts = c->events + c->dropped_records + c->mappings;
    return c->records > parts ? c->records - parts : 0;
}

static int64_t rel(const struct totals *t, uint64_t ts)
{
    return (int64_t)(ts - t->origin);
}

static void print_threads(const struct totals *t)
{
    size_t n = t->npids + t->pid0;
    printf("%-15s %s%zu%s\n", "threads", t->pids_capped ? "at least " : "", n, n ? " (distinct pids)" : "");
}

static void print_text(const struct event_stats *es, size_t n, const struct totals *t,
                       const struct st_reader_counters *c)
{
    int w = 5;
    for (size_t i = 0; i < n; i++)
        if ((int)es[i].ev->name_len > w)
            w = (int)es[i].ev->name_len;
    char a[40], b[40], d[40];
    if (n) {
        printf("%-*s %12s %14s %14s %14s\n", w, "EVENT", "COUNT", "FIRST", "LAST", "AVG/s");
        for (size_t i = 0; i < n; i++) {
            const struct event_stats *e = &es[i];
            if (duration(t))
                snprintf(d, sizeof d, "%.1f", rate(e->count, t));
            else
                snprintf(d, sizeof d, "-");
            printf("%-*s %12llu %14s %14s %14s\n", w, e->ev->name, (unsigned long long)e->count,
                   st__duration_text(a, sizeof a, rel(t, e->min_ts)), st__duration_text(b, sizeof b, rel(t, e->max_ts)), d);
        }
        printf("%.*s\n", w + 4 * 15 + 13, "------------------------------------------------------------"
                                        "------------------------------------------------------------"
                                        "------------------------------------------------------------");
    }
    printf("%-15s %llu = %llu events + %llu dropped-event records + %llu event mappings + %llu self-description "
           "records\n", "records", (unsigned long long)c->records, (unsigned long long)c->events,
           (unsigned long long)c->dropped_records, (unsigned long long)c->mappings,
           (unsigned long long)self_description(c));
    if (c->filtered)
        printf("%-15s %llu records shown, %llu filtered out\n", "filter", (unsigned long long)t->delivered,
               (unsigned long long)c->filtered);
    printf("%-15s %llu events in %zu event types\n", "events", (unsigned long long)t->events, n);
    printf("%-15s %llu records, %llu events lost\n", "dropped", (unsigned long long)t->dropped_records,
           (unsigned long long)t->dropped_events);
    /* Only when there were: these are not full buffers, and a larger bufsize= would not have kept them. */
    if (t->write_lost)
        printf("%-15s %llu of the events lost: writing the trace failed (e.g. a full disk)\n", "write-lost",
               (unsigned long long)t->write_lost);
    printf("%-15s %s%s\n", "duration", st__duration_text(a, sizeof a, (int64_t)duration(t)),
           n && duration(t) ? " (first to last record; AVG/s = COUNT / duration)" : "");
    printf("%-15s %llu\n", "non-monotonic", (unsigned long long)t->non_monotonic);
    if (t->z.compressed) /* what the seek table saved: frames the filters let the reader jump over */
        printf("%-15s zstd, %llu frames: %llu decompressed, %llu skipped\n", "compressed",
               (unsigned long long)t->z.frames, (unsigned long long)t->z.frames_read,
               (unsigned long long)t->z.frames_skipped);
    print_threads(t);
}

static void print_processes(const struct totals *t, bool json);

/* The JSON object; with several processes, "processes" before "per_event". */
static void print_json(const char *trace, const struct event_stats *es, size_t n, const struct totals *t,
                       const struct st_reader_counters *c, bool several)
{
    printf("{\"trace\":");
    st__json_fputs(stdout, trace); /* a path: any bytes */
    printf(",\"records\":%llu,\"self_description_records\":%llu,\"mappings\":%llu,\"events\":%llu,"
           "\"dropped_records\":%llu,\"dropped_events\":%llu,\"write_lost_events\":%llu,\"filtered\":%llu,"
           "\"non_monotonic\":%llu,\"threads\":%zu,\"first_timestamp_ns\":%llu,\"duration_ns\":%llu",
           (unsigned long long)c->records, (unsigned long long)self_description(c), (unsigned long long)c->mappings,
           (unsigned long long)t->events,
           (unsigned long long)t->dropped_records, (unsigned long long)t->dropped_events,
           (unsigned long long)t->write_lost,
           (unsigned long long)c->filtered, (unsigned long long)t->non_monotonic, t->npids + t->pid0,
           (unsigned long long)t->origin, (unsigned long long)duration(t));
    if (several)
        print_processes(t, true);
    printf(",\"per_event\":[");
    for (size_t i = 0; i < n; i++)
        printf("%s{\"name\":\"%s\",\"count\":%llu,\"first_ns\":%lld,\"last_ns\":%lld,\"avg_per_s\":%.3f}",
               i ? "," : "", es[i].ev->name, (unsigned long long)es[i].count, (long long)rel(t, es[i].min_ts),
               (long long)rel(t, es[i].max_ts), rate(es[i].count, t));
    printf("]}\n");
}

static int by_group(const void *a, const void *b)
{
    const struct proc_count *x = a, *y = b;
    return x->group != y->group ? (x->group < y->group ? -1 : 1) : (x->met < y->met ? -1 : x->met > y->met);
}

/* Per process, when the inputs hold several: records delivered, in input order of their first input. */
static void print_processes(const struct totals *t, bool json)
{
    printf(json ? ",\"processes\":[" : "%-15s %zu\n", "processes", t->nprocs);
    for (size_t k = 0; k < t->nprocs; k++) {
        const struct proc_count *p = &t->procs[k];
        if (!json) {
            char name[512];
            if (p->pid || *p->program)
                snprintf(name, sizeof name, "%s[%lu]", p->program, (unsigned long)p->pid);
            else
                snprintf(name, sizeof name, "input#%zu", p->group);
            printf("  %-30s %llu records\n", name, (unsigned long long)p->records);
            continue;
        }
        printf("%s{\"pid\":", k ? "," : "");
        printf(p->pid ? "%lu" : "null", (unsigned long)p->pid);
        printf(",\"program\":");
        if (*p->program)
            st__json_fputs(stdout, p->program);
        else
            printf("null");
        printf(",\"records\":%llu}", (unsigned long long)p->records);
    }
    if (json)
        printf("]");
}

/* --- options ----------------------------------------------------------------- */

struct stats_opts {
    struct cli_input in;
    bool json;
};

static int usage_error(const char *fmt, const char *arg)
{
    return cli_usage_error("stats", fmt, arg);
}

enum { OPT_FORMAT = CLI_OPT_OWN, OPT_HELP };

static int parse_one(int c, const char *arg, struct stats_opts *o)
{
    switch (c) {
    case OPT_FORMAT:
        if (strcmp(arg, "text") && strcmp(arg, "json"))
            return usage_error("unknown format '%s' (text or json)", arg);
        o->json = !strcmp(arg, "json");
        return 0;
    default: {
        int r = cli_reader_option("stats", c, arg, &o->in);
        return r < 0 ? 2 : r;
    }
    }
}

/* Parses argv into *o. Returns -1 to go on, or the exit status. */
static int parse_args(int argc, char **argv, struct stats_opts *o)
{
    static const struct option longopts[] = {
        CLI_READER_LONGOPTS,
        {"format", required_argument, NULL, OPT_FORMAT},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c == 'h' || c == OPT_HELP) {
            fputs(st__help_stats, stdout);
            return 0;
        }
        if (c == ':')
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        if (c == '?')
            return usage_error("unknown option '%s'", argv[optind - 1]);
        int ret = parse_one(c, optarg, o);
        if (ret)
            return ret;
    }
    return cli_trace_operands("stats", argc, argv, optind, &o->in) ? 2 : -1;
}

int st__cmd_stats(int argc, char **argv)
{
    struct stats_opts o;
    memset(&o, 0, sizeof o);
    cli_input_init(&o.in);
    int status = parse_args(argc, argv, &o);
    if (status >= 0) {
        cli_input_free(&o.in); /* the traces found before a later usage error */
        return status;
    }

    struct cli_trace tr;
    struct event_stats *es = NULL;
    struct totals t;
    memset(&t, 0, sizeof t);
    char msg[2048];
    if ((status = cli_trace_open("stats", &o.in, &tr)) != 0)
        goto out;
    status = 1;
    size_t nev = 0;
    t.pids = calloc(2 * MAX_PIDS, sizeof *t.pids);
    t.nseen = st_reader_input_count(tr.r);
    t.seen = calloc(t.nseen, sizeof *t.seen);
    if (grow_events(tr.cat, &es, &nev) < 0 || !t.pids || !t.seen) {
        fprintf(stderr, PROG ": out of memory\n");
        goto out;
    }
    int ret = collect(tr.r, &es, &nev, &t);
    if (ret == 0)
        cli_trace_report_filters(&tr, &o.in);
    struct st_reader_counters c = {.struct_size = sizeof c};
    st_reader_get_counters(tr.r, &c); /* our own sizeof: cannot fail */
    t.z.struct_size = sizeof t.z;
    st_reader_get_compression(tr.r, &t.z);
    size_t n = sort_events(es, nev);
    if (t.nprocs) /* by their first input, each input's in the order met */
        qsort(t.procs, t.nprocs, sizeof *t.procs, by_group);
    bool several = t.nprocs > 1;
    if (ret < 0 && st_reader_version(tr.r) < 0)
        ; /* not even its header could be read (an empty file): the error says it all */
    else if (o.json)
        print_json(o.in.trace, es, n, &t, &c, several);
    else
        print_text(es, n, &t, &c);
    if (several && !o.json)
        print_processes(&t, false);
    fflush(stdout);
    status = 0;
    if (ret < 0) {
        cli_reader_error("stats", &tr, &o.in, msg, sizeof msg);
        fprintf(stderr, PROG ": %s\n", msg);
        status = 1;
    }
out:
    free(t.pids);
    free(t.seen);
    for (size_t k = 0; k < t.nprocs; k++)
        free(t.procs[k].program);
    free(t.procs);
    free(es);
    cli_trace_close(&tr);
    cli_input_free(&o.in);
    return status;
}
