/*
 * Reader benchmark: how fast `simpletrace print` turns a trace into text
 * (or JSON lines).
 *
 *   bench_reader --simpletrace EXE --events TRACE-EVENTS [--shared DIR]
 *                [--records N] [--dir DIR] [--runs R] [--format text|json]
 *                [--compare EXE2] [--sql | --parquet] [--window-records N] [--keep]
 *                [--trace FILE]
 *
 * 1. Writes a trace of N records (default 10 million) with the simpletrace
 *    runtime (this program is traced with bench/reader/trace-events), into
 *    DIR (default $TMPDIR or /tmp), flushing often enough that nothing is
 *    dropped.
 * 2. Times `simpletrace print --format=F TRACE-EVENTS FILE > /dev/null` and
 *    `simpletrace stats` R times (best run reported) on it, and print on
 *    DIR/fixtures/qemu/bench_small_drops.bin: records/s, MB/s of input, max
 *    RSS of the child.
 * 3. With --compare, times a second `simpletrace` (another build, e.g. the
 *    tree before a change) the same way, its runs alternating with the
 *    first's so that both see the same machine load, and prints the ratio.
 * 4. With SIMPLETRACE_PY set to QEMU's scripts/simpletrace.py, runs it on the
 *    same files and prints the speed ratio (text only).
 * 5. Writes the same N records with compress=zstd (default level), prints the
 *    bytes per record of both files, and times print and stats on both, the
 *    compressed one with the reader's decompress-ahead thread (default) and
 *    without it (SIMPLETRACE_DECOMPRESS_AHEAD=0: the reading thread alone),
 *    with the ratios to the plain file's speed (issue 25's target: half).
 * 5b. --from/--to for a window of 1% of the trace's duration, in its
 *    middle, against a full read (print of every record) of a compressed
 *    trace of --window-records records (default N; 16 million make a
 *    trace of 1 GB before compression): both times and their ratio (issue
 *    25's target: under 5%); and info on it (answered from the seek tables).
 * 6. With --sql (bench/sql/run.sh), instead of 2-5: `simpletrace stats`,
 *    then `simpletrace sql` full scans, a count per event (SELECT name,
 *    count(*) FROM records GROUP BY name) and a per-event table with a
 *    filter, each timed the same way: records/s of the whole trace, max
 *    RSS, and the speed relative to stats (issue 24's target: a third);
 *    and a ts range of a tenth of the trace's time, on the plain trace and
 *    on the same records compressed (compress=zstd: frames jumped over),
 *    against the same query SQLite filters alone.
 * 7. With --parquet (bench/parquet/run.sh), instead of 2-5: `simpletrace
 *    export` to Perfetto's protobuf and to Parquet, runs alternating: each
 *    one's records/s (wall and CPU), bytes per record, max RSS, and Parquet
 *    against Perfetto (issue 24's target: smaller, and 10 M records/s);
 *    with --compare, the other simpletrace's Parquet export too.
 * --keep leaves the traces written in DIR; --trace FILE uses FILE as the
 * plain trace: written first when missing, always kept (to time several
 * builds on one trace, or to profile one command on it). Prints figures;
 * never fails on speed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <simpletrace/simpletrace.h>

#include "bench-reader-trace.h"
#include "bench_run.h"


struct opts {
    const char *exe, *events, *shared, *dir;
    const char *format;  /* print --format: text or json */
    const char *compare; /* a second simpletrace to time side by side, or NULL */
    bool sql;            /* time stats and sql full scans instead of print */
    bool parquet;        /* time export to Perfetto and to Parquet instead of print */
    const char *trace;   /* the trace to use (kept), or NULL: a temporary one */
    uint64_t records;
    uint64_t window_records; /* records of the compressed trace the --from/--to window is timed on (0: records) */
    bool keep;               /* the traces written are left in dir */
    int runs;
};

/* Emits n records of the event mix; flushes every 256 Ki records so the buffer never overflows. */
static void emit(uint64_t n)
{
    static const char *const files[] = {"../util/qemu-thread-posix.c", "../block/io.c", "../util/async.c",
                                        "/usr/src/project/include/qemu/lockable.h"};
    static const char *const names[] = {"size", "cluster_size", "", "backing_file"};
    for (uint64_t i = 0; i < n; i++) {
        switch (i & 7) {
        case 0: case 1: case 2: case 3:
            trace_bench_rd_lock((void *)(uintptr_t)(0x55ca12ce9720u + (i & 0x30)), files[(i >> 3) & 3],
                                (int)(40 + (i & 15)));
            break;
        case 4: case 5:
            trace_bench_rd_io(i * 4096, 65536, (int)(i & 3));
            break;
        case 6:
            trace_bench_rd_tick();
            break;
        default:
            trace_bench_rd_name(names[(i >> 3) & 3], -(int64_t)i);
            break;
        }
        if ((i & 0x3ffff) == 0x3ffff)
            st_trace_file_flush();
    }
}

/* Writes the trace; returns 0 or -1 with a message. */
static int generate(const char *path, uint64_t n, bool compress)
{
    char cfg[4300], err[256] = "";
    snprintf(cfg, sizeof cfg, "enable=bench_rd_*,bufsize=64M,file=%s%s", path, compress ? ",compress=zstd" : "");
    if (st_configure(cfg, err, sizeof err) != 0) {
        fprintf(stderr, "bench_reader: st_configure: %s\n", err);
        return -1;
    }
    uint64_t t0 = now_ns();
    emit(n);
    st_trace_file_flush();
    st_trace_file_set_enabled(false);
    struct st_stats s = {.struct_size = sizeof s};
    st_stats_get(&s);
    printf("generated %s: %" PRIu64 " records written, %" PRIu64 " dropped, %.1f MB, %.2f s (runtime writer)\n",
           path, s.written, s.dropped, (double)s.bytes_written / 1e6, (double)(now_ns() - t0) / 1e9);
    return 0;
}

/* Records in a trace, counted by `simpletrace stats --format=json` (events + dropped records). */
static uint64_t count_records(const char *exe, const char *events, const char *file)
{
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "'%s' stats --format=json '%s' '%s'", exe, events, file);
    FILE *p = popen(cmd, "r");
    char buf[512] = "";
    size_t n = p ? fread(buf, 1, sizeof buf - 1, p) : 0;
    buf[n] = 0;
    if (p)
        pclose(p);
    const char *e = strstr(buf, "\"events\":"), *d = strstr(buf, "\"dropped_records\":");
    return (e ? strtoull(e + 9, NULL, 10) : 0) + (d ? strtoull(d + 18, NULL, 10) : 0);
}

/* One reader being timed: its command and the best of its runs so far. */
struct contender {
    const char *label;
    char *const *argv;
    bool one_thread;       /* SIMPLETRACE_DECOMPRESS_AHEAD=0: decompressed on the reading thread alone */
    double best, best_cpu; /* seconds; 0 before the first run */
    long rss;              /* KiB, the largest seen */
    bool failed;
};

/* One run of c, kept if it is its best. */
static void run_once(struct contender *c)
{
    double s, cpu;
    long kb;
    if (c->one_thread)
        setenv("SIMPLETRACE_DECOMPRESS_AHEAD", "0", 1);
    int status = timed_run(c->argv, &s, &cpu, &kb);
    unsetenv("SIMPLETRACE_DECOMPRESS_AHEAD");
    if (status != 0) {
        printf("  %-16s failed (exit status %d)\n", c->label, status);
        c->failed = true;
        return;
    }
    if (c->best == 0 || s < c->best)
        c->best = s;
    if (c->best_cpu == 0 || cpu < c->best_cpu)
        c->best_cpu = cpu;
    if (kb > c->rss)
        c->rss = kb;
}

/*
 * Times n readers on one file, runs rounds of one run each (in turn, so a
 * change in the machine's load touches all alike), and prints each one's
 * best. Fills rates[i] with records/s (0 on failure).
 */
static void measure(struct contender *c, size_t n, uint64_t records, off_t bytes, int runs, double *rates)
{
    for (int r = 0; r < runs; r++)
        for (size_t i = 0; i < n; i++)
            if (!c[i].failed)
                run_once(&c[i]);
    for (size_t i = 0; i < n; i++) {
        rates[i] = 0;
        if (c[i].failed)
            continue;
        rates[i] = (double)records / c[i].best;
        /* CPU time too: on a shared machine the wall clock also counts waiting for a core. */
        printf("  %-16s %8.3f s  %7.2f M records/s  %8.1f MB/s  max RSS %6.1f MB  (CPU %.3f s: %.2f M records/s)\n",
               c[i].label, c[i].best, rates[i] / 1e6, (double)bytes / c[i].best / 1e6, (double)c[i].rss / 1024.0,
               c[i].best_cpu, c[i].best_cpu > 0 ? (double)records / c[i].best_cpu / 1e6 : 0.0);
    }
}

/*
 * stats, and sql's full scans of the whole trace; event_query (NULL: none)
 * is a per-event table's query for this file's events.
 */
static void bench_sql(const struct opts *o, const char *events, const char *file, uint64_t records, off_t bytes,
                      const char *event_query)
{
    char *stats[] = {(char *)o->exe, "stats", (char *)events, (char *)file, NULL};
    char *group[] = {(char *)o->exe, "sql", (char *)events, (char *)file, "-e",
                     "SELECT name, count(*) FROM records GROUP BY name", NULL};
    char *sorted[] = {(char *)o->exe, "sql", (char *)events, (char *)file, "-e",
                      "SELECT name, count(*), max(ts) FROM records GROUP BY name", NULL};
    char *event[] = {(char *)o->exe, "sql", (char *)events, (char *)file, "-e", (char *)event_query, NULL};
    struct contender c[4] = {{.label = "stats", .argv = stats},
                             {.label = "sql count/name", .argv = group},
                             {.label = "sql event+WHERE", .argv = event},
                             {.label = "sql + max(ts)", .argv = sorted}};
    double rates[4];
    printf("  sql: '%s'; '%s'; '%s' (SQLite sorts)\n", group[5], event_query ? event_query : "-", sorted[5]);
    if (!event_query) { /* no event table to ask */
        c[2] = c[3];
        measure(c, 3, records, bytes, o->runs, rates);
    } else {
        measure(c, 4, records, bytes, o->runs, rates);
    }
    for (size_t i = 1; i < (event_query ? 4u : 3u); i++)
        if (rates[0] > 0 && rates[i] > 0)
            printf("  ratio: %s runs at %.2fx the speed of stats (wall), %.2fx (CPU)\n", c[i].label,
                   rates[i] / rates[0], c[0].best_cpu / c[i].best_cpu);
}

/* The first and last timestamps of file (a full scan by sql): 0, or -1. */
static int ts_span(const struct opts *o, const char *events, const char *file, int64_t *lo, int64_t *hi)
{
    char cmd[9000], buf[256] = "";
    snprintf(cmd, sizeof cmd, "'%s' sql --format=csv '%s' '%s' -e 'SELECT min(ts), max(ts) FROM records'", o->exe,
             events, file);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(buf, 1, sizeof buf - 1, p) : 0;
    buf[n] = 0;
    if (p)
        pclose(p);
    const char *line = strchr(buf, '\n'); /* after the header */
    return line && sscanf(line + 1, "%" SCNd64 ",%" SCNd64, lo, hi) == 2 ? 0 : -1;
}

/*
 * A ts range of a tenth of file's time (its middle) on an event's table,
 * read through the reader's --from/--to (records outside skipped undecoded,
 * frames of a compressed trace jumped over), and the same query whose bound
 * SQLite keeps to itself (+ts: a full scan): records/s of the whole trace.
 */
static void bench_sql_range(const struct opts *o, const char *events, const char *file, uint64_t records,
                            off_t bytes)
{
    int64_t lo, hi;
    if (ts_span(o, events, file, &lo, &hi) < 0) {
        printf("  sql ts range: no timestamps, skipped\n");
        return;
    }
    int64_t from = lo + (hi - lo) / 20 * 9, to = lo + (hi - lo) / 20 * 11;
    char pushed[256], kept[256];
    snprintf(pushed, sizeof pushed, "SELECT count(*), sum(bytes) FROM bench_rd_io WHERE ts BETWEEN %" PRId64
             " AND %" PRId64, from, to);
    snprintf(kept, sizeof kept, "SELECT count(*), sum(bytes) FROM bench_rd_io WHERE +ts BETWEEN %" PRId64
             " AND %" PRId64, from, to);
    char *a[] = {(char *)o->exe, "sql", (char *)events, (char *)file, "-e", pushed, NULL};
    char *b[] = {(char *)o->exe, "sql", (char *)events, (char *)file, "-e", kept, NULL};
    struct contender c[2] = {{.label = "sql ts 10%", .argv = a}, {.label = "sql +ts 10%", .argv = b}};
    double rates[2];
    printf("  sql: '%s' (the middle tenth of the trace's time), and with +ts (SQLite filters alone)\n", pushed);
    measure(c, 2, records, bytes, o->runs, rates);
    if (rates[0] > 0 && rates[1] > 0)
        printf("  ratio: the range read through --from/--to runs at %.2fx the full scan's speed (wall), %.2fx (CPU)\n",
               rates[0] / rates[1], c[1].best_cpu / c[0].best_cpu);
}

/*
 * export --format=perfetto and --format=parquet of file, runs alternating
 * (one machine load for both), then Parquet against Perfetto: the speed
 * (wall and CPU) and the bytes per record.
 */
static void bench_parquet(const struct opts *o, const char *events, const char *file, uint64_t records,
                          off_t bytes)
{
    char pf[4300], pq[4300], pq2[4300];
    snprintf(pf, sizeof pf, "%s.pftrace", file);
    snprintf(pq, sizeof pq, "%s.parquet", file);
    snprintf(pq2, sizeof pq2, "%s.compared.parquet", file);
    char *pfa[] = {(char *)o->exe, "export", "-q", "--format=perfetto", "-o", pf, (char *)events, (char *)file, NULL};
    char *pqa[] = {(char *)o->exe, "export", "-q", "--format=parquet", "-o", pq, (char *)events, (char *)file, NULL};
    char *pqc[] = {(char *)o->compare, "export", "-q", "--format=parquet", "-o", pq2, (char *)events, (char *)file,
                   NULL};
    struct contender c[3] = {{.label = "export perfetto", .argv = pfa},
                             {.label = "export parquet", .argv = pqa},
                             {.label = "parquet compared", .argv = pqc}};
    double rates[3];
    const char *outs[] = {pf, pq, pq2};
    size_t n = o->compare ? 3 : 2;
    for (size_t i = 0; i < n; i++)
        remove_tree(outs[i]);
    /* each run replaces the output of the one before (an export replaces its own kind's) */
    measure(c, n, records, bytes, o->runs, rates);
    uint64_t size[3] = {0};
    for (size_t i = 0; i < n; i++) {
        size[i] = size_of(outs[i]);
        remove_tree(outs[i]);
    }
    printf("  bytes/record: perfetto %.2f, parquet %.2f (records.parquet, events/, spans.parquet)", (double)size[0] /
           (double)records, (double)size[1] / (double)records);
    if (o->compare)
        printf(", compared parquet %.2f", (double)size[2] / (double)records);
    printf("\n");
    if (rates[0] > 0 && rates[1] > 0 && size[1] > 0)
        printf("  ratio: parquet runs at %.2fx perfetto's speed (wall), %.2fx (CPU: %.2f M records/s vs %.2f M), "
               "and is %.2fx smaller\n",
               rates[1] / rates[0], c[0].best_cpu / c[1].best_cpu, (double)records / c[1].best_cpu / 1e6,
               (double)records / c[0].best_cpu / 1e6, (double)size[0] / (double)size[1]);
    if (o->compare && rates[1] > 0 && rates[2] > 0)
        printf("  ratio: parquet runs at %.2fx the compared one's speed (wall), %.2fx (CPU)\n", rates[1] / rates[2],
               c[2].best_cpu / c[1].best_cpu);
}

/* Times the readers on file; event_query: the sql query of a per-event table for its events (NULL: none). */
static void bench_file(const struct opts *o, const char *events, const char *file, const char *event_query)
{
    struct stat st;
    if (stat(file, &st) != 0) {
        printf("%s: missing, skipped\n", file);
        return;
    }
    uint64_t records = count_records(o->exe, events, file);
    if (o->sql) {
        printf("%s: %" PRIu64 " records, %.1f MB\n", file, records, (double)st.st_size / 1e6);
        if (event_query) /* the benchmark's own trace (bench_rd_io) */
            bench_sql_range(o, events, file, records, st.st_size);
        bench_sql(o, events, file, records, st.st_size, event_query);
        return;
    }
    if (o->parquet) {
        printf("%s: %" PRIu64 " records, %.1f MB\n", file, records, (double)st.st_size / 1e6);
        bench_parquet(o, events, file, records, st.st_size);
        return;
    }
    printf("%s: %" PRIu64 " records, %.1f MB, print --format=%s\n", file, records, (double)st.st_size / 1e6,
           o->format);
    char format[32];
    snprintf(format, sizeof format, "--format=%s", o->format);
    char *argv[] = {(char *)o->exe, "print", format, (char *)events, (char *)file, NULL};
    char *cargv[] = {(char *)o->compare, "print", format, (char *)events, (char *)file, NULL};
    struct contender c[2] = {{.label = "simpletrace", .argv = argv}, {.label = "compared", .argv = cargv}};
    double rates[2];
    measure(c, o->compare ? 2 : 1, records, st.st_size, o->runs, rates);
    if (o->compare && rates[0] > 0 && rates[1] > 0)
        printf("  ratio: simpletrace runs at %.3fx the compared one's speed (wall), %.3fx (CPU)\n", rates[0] / rates[1],
               c[1].best_cpu / c[0].best_cpu);
    const char *py = getenv("SIMPLETRACE_PY");
    if (!py || !*py || strcmp(o->format, "text") != 0)
        return;
    char *pargv[] = {"/usr/bin/env", "python3", (char *)py, (char *)events, (char *)file, NULL};
    struct contender p = {.label = "simpletrace.py", .argv = pargv};
    double theirs;
    measure(&p, 1, records, st.st_size, 1, &theirs);
    if (rates[0] > 0 && theirs > 0)
        printf("  ratio: simpletrace print is %.0fx simpletrace.py\n", rates[0] / theirs);
}

/* print and stats on file, the compressed ones also with the reading thread alone; rates[] as labelled. */
static void bench_pair(const struct opts *o, const char *file, bool compressed, double rates[4])
{
    struct stat st;
    char format[32];
    if (stat(file, &st) != 0)
        return;
    uint64_t records = count_records(o->exe, o->events, file);
    snprintf(format, sizeof format, "--format=%s", o->format);
    char *print[] = {(char *)o->exe, "print", format, (char *)o->events, (char *)file, NULL};
    char *stats[] = {(char *)o->exe, "stats", (char *)o->events, (char *)file, NULL};
    struct contender c[4] = {{.label = "print", .argv = print}, {.label = "stats", .argv = stats},
                             {.label = "print, 1 thread", .argv = print, .one_thread = true},
                             {.label = "stats, 1 thread", .argv = stats, .one_thread = true}};
    printf("%s: %" PRIu64 " records, %.1f MB%s\n", file, records, (double)st.st_size / 1e6,
           compressed ? " (1 thread: SIMPLETRACE_DECOMPRESS_AHEAD=0)" : "");
    measure(c, compressed ? 4 : 2, records, st.st_size, o->runs, rates);
}

/* Removes a trace written, unless --keep. */
static void drop(const struct opts *o, const char *path)
{
    if (o->keep)
        printf("kept %s\n", path);
    else
        unlink(path);
}

/* The trace's duration in ns, as info --format=json says it (0: unknown). */
static uint64_t duration_ns(const char *exe, const char *file)
{
    char cmd[9000], buf[8192] = "";
    snprintf(cmd, sizeof cmd, "'%s' info --format=json '%s'", exe, file);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(buf, 1, sizeof buf - 1, p) : 0;
    buf[n] = 0;
    if (p)
        pclose(p);
    const char *d = strstr(buf, "\"duration_ns\":");
    return d ? strtoull(d + 14, NULL, 10) : 0;
}

/* print --from/--to of 1% of the duration, in the middle, against print of everything; the ratio of their times. */
static void bench_window(const struct opts *o, const char *file)
{
    struct stat st;
    uint64_t dur = duration_ns(o->exe, file);
    if (stat(file, &st) != 0 || dur == 0) {
        printf("window: %s has no duration, skipped\n", file);
        return;
    }
    char from[64], to[64];
    snprintf(from, sizeof from, "--from=%" PRIu64 "ns", dur / 200 * 99);
    snprintf(to, sizeof to, "--to=%" PRIu64 "ns", dur / 200 * 101);
    char *full[] = {(char *)o->exe, "print", (char *)o->events, (char *)file, NULL};
    char *win[] = {(char *)o->exe, "print", from, to, (char *)o->events, (char *)file, NULL};
    char *info[] = {(char *)o->exe, "info", (char *)o->events, (char *)file, NULL};
    uint64_t records = count_records(o->exe, o->events, file);
    struct contender c[3] = {{.label = "print all", .argv = full}, {.label = "print 1% window", .argv = win},
                             {.label = "info", .argv = info}};
    double rates[3];
    printf("%s: %" PRIu64 " records, %.1f MB compressed, a window of 1%% of %.3f s (%s %s); info (the seek "
           "tables' answers)\n", file, records, (double)st.st_size / 1e6, (double)dur / 1e9, from, to);
    measure(c, 3, records, st.st_size, o->runs, rates);
    for (int i = 1; i < 3; i++)
        if (!c[0].failed && !c[i].failed && c[0].best > 0)
            printf("  ratio: %s takes %.2f%% of a full read's time (wall), %.2f%% (CPU)\n",
                   i == 1 ? "--from/--to of a 1% window" : "info", 100.0 * c[i].best / c[0].best,
                   c[0].best_cpu > 0 ? 100.0 * c[i].best_cpu / c[0].best_cpu : 0.0);
}

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        {"simpletrace", required_argument, NULL, 'x'}, {"events", required_argument, NULL, 'e'},
        {"shared", required_argument, NULL, 's'},      {"records", required_argument, NULL, 'n'},
        {"dir", required_argument, NULL, 'd'},         {"runs", required_argument, NULL, 'r'},
        {"format", required_argument, NULL, 'f'},      {"compare", required_argument, NULL, 'c'},
        {"sql", no_argument, NULL, 'q'},               {"parquet", no_argument, NULL, 'p'},
        {"trace", required_argument, NULL, 't'},       {"window-records", required_argument, NULL, 'w'},
        {"keep", no_argument, NULL, 'k'},              {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'x': o->exe = optarg; break;
        case 'e': o->events = optarg; break;
        case 's': o->shared = optarg; break;
        case 'n': o->records = strtoull(optarg, NULL, 10); break;
        case 'd': o->dir = optarg; break;
        case 'r': o->runs = atoi(optarg); break;
        case 'f': o->format = optarg; break;
        case 'c': o->compare = optarg; break;
        case 'q': o->sql = true; break;
        case 'p': o->parquet = true; break;
        case 't': o->trace = optarg; break;
        case 'w': o->window_records = strtoull(optarg, NULL, 10); break;
        case 'k': o->keep = true; break;
        default: return -1;
        }
    }
    bool format_ok = !strcmp(o->format, "text") || !strcmp(o->format, "json");
    return o->exe && o->events && o->records && o->runs > 0 && format_ok && !(o->sql && o->parquet) ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    struct opts o = {.records = 10000000, .runs = 3, .dir = tmp && *tmp ? tmp : "/tmp", .format = "text"};
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: bench_reader --simpletrace EXE --events TRACE-EVENTS [--shared DIR] "
                        "[--records N] [--dir DIR] [--runs R] [--format text|json] [--compare EXE2] [--sql | --parquet] "
                        "[--window-records N] [--keep] [--trace FILE]\n");
        return 2;
    }
    char trace[4200];
    snprintf(trace, sizeof trace, "%s/simpletrace-bench-reader-%ld.bin", o.dir, (long)getpid());
    if (o.trace)
        snprintf(trace, sizeof trace, "%s", o.trace);
    struct stat st0;
    bool generate_it = !o.trace || stat(trace, &st0) != 0;
    /*
     * Trace in a child: a spawned reader's max RSS counts its parent's pages
     * (vfork-style spawn keeps the high-water mark across exec), so this
     * process must never allocate the runtime's trace buffers.
     */
    fflush(stdout);
    pid_t pid = generate_it ? fork() : 1;
    if (pid == 0)
        exit(generate(trace, o.records, false) == 0 ? 0 : 1);
    int st;
    if (generate_it && (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0))
        return 1;
    /* --sql: an I/O record in four, flags 1 in half of them (emit()); else bench_pair() times print and stats */
    const char *py = getenv("SIMPLETRACE_PY");
    if (o.sql || o.parquet || o.compare || (py && *py))
        bench_file(&o, o.events, trace, "SELECT count(*), sum(bytes) FROM bench_rd_io WHERE flags = 1");
    struct stat plain_st, z_st;
    bool have_plain = stat(trace, &plain_st) == 0;
    double plain[4] = {0}, z[4] = {0};
    if (!o.sql && !o.parquet && have_plain)
        bench_pair(&o, trace, false, plain);
    if (!o.trace) /* --trace: the caller's, kept */
        drop(&o, trace);
    /* The same records compressed as they are written (compress=zstd, its default level): --sql times its ts
     * range; not with --parquet. */
    char ztrace[4300];
    snprintf(ztrace, sizeof ztrace, "%s.zst", trace);
    fflush(stdout);
    if (!o.parquet && (pid = fork()) == 0)
        exit(generate(ztrace, o.records, true) == 0 ? 0 : 1);
    if (!o.parquet && pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 &&
        stat(ztrace, &z_st) == 0) {
        uint64_t records = count_records(o.exe, o.events, ztrace);
        if (have_plain && records)
            printf("bytes per record on disk: plain v4 %.2f, compress=zstd %.2f (%.1fx smaller)\n",
                   (double)plain_st.st_size / (double)records, (double)z_st.st_size / (double)records,
                   (double)plain_st.st_size / (double)z_st.st_size);
        if (o.sql) { /* a time range, where frames can be jumped over */
            printf("%s: %" PRIu64 " records, %.1f MB (compress=zstd)\n", ztrace, records, (double)z_st.st_size / 1e6);
            bench_sql_range(&o, o.events, ztrace, records, z_st.st_size);
        } else {
            bench_pair(&o, ztrace, true, z);
            static const char *const what[4] = {"print", "stats", "print, reading thread alone",
                                                "stats, reading thread alone"};
            for (int i = 0; i < 4; i++)
                if (plain[i % 2] > 0 && z[i] > 0)
                    printf("%s on the compressed trace: %.2f of the plain trace's records/s\n", what[i],
                           z[i] / plain[i % 2]);
            if (!o.window_records || o.window_records == o.records)
                bench_window(&o, ztrace);
        }
    }
    if (!o.parquet)
        drop(&o, ztrace);
    if (!o.sql && !o.parquet && o.window_records && o.window_records != o.records) {
        char wtrace[4300];
        snprintf(wtrace, sizeof wtrace, "%s.window.zst", trace);
        fflush(stdout);
        if ((pid = fork()) == 0)
            exit(generate(wtrace, o.window_records, true) == 0 ? 0 : 1);
        if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            bench_window(&o, wtrace);
        drop(&o, wtrace);
    }
    if (o.shared && !o.parquet) {
        char events[4200], fixture[4200];
        snprintf(events, sizeof events, "%s/fixtures/qemu/trace-events-all", o.shared);
        snprintf(fixture, sizeof fixture, "%s/fixtures/qemu/bench_small_drops.bin", o.shared);
        bench_file(&o, events, fixture, NULL);
    }
    if (!getenv("SIMPLETRACE_PY") && !o.parquet)
        printf("(set SIMPLETRACE_PY=/path/to/qemu/scripts/simpletrace.py to compare with QEMU's reader)\n");
    return 0;
}
