/*
 * Export benchmark: how fast `simpletrace export` converts a trace.
 *
 *   bench_export --simpletrace EXE --events TRACE-EVENTS [--records N]
 *                [--threads T] [--runs R] [--dir DIR]
 *
 * 1. Writes a trace of N records (default 6 million) with the simpletrace
 *    runtime from T threads (default 4), into DIR (default $TMPDIR or
 *    /tmp): each request is 10 records, 4 begin/end pairs and 2 instant
 *    events, so the exporter's pairing, stacks and both kinds of output
 *    are all exercised.
 * 2. Times R runs (best reported) of
 *      simpletrace export --format=uftrace -o DIR/x.data
 *      simpletrace export --format=chrome  -o DIR/x.json
 *      simpletrace export --format=perfetto -o DIR/x.pftrace
 *      simpletrace export --format=ctf     -o DIR/x.ctf
 *      simpletrace export --format=folded  -o DIR/x.folded
 *      simpletrace export --format=parquet -o DIR/x.parquet
 *      simpletrace print > /dev/null             (the reader alone, for reference)
 *    and prints records/s, MB/s of input, MB written, bytes per record and
 *    the child's max RSS, then each output's size against Chrome JSON's.
 * Prints figures; never fails on speed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <simpletrace/simpletrace.h>

#include "bench-export-trace.h"
#include "bench_run.h"


struct opts {
    const char *exe, *events, *dir;
    uint64_t records;
    int threads, runs;
};

/* One thread's share: requests of 10 records; flushes so that nothing is dropped. */
static void *emit(void *arg)
{
    uint64_t n = *(uint64_t *)arg;
    static const char *const what[] = {"cache", "queue", "latency", "retries"};
    for (uint64_t i = 0, since_flush = 0; i < n; i += 10, since_flush += 10) {
        trace_bench_ex_op_enter(i);
        trace_bench_ex_step_begin(0);
        trace_bench_ex_io(i * 4096, 65536, (int)(i & 3));
        trace_bench_ex_step_end(0);
        trace_bench_ex_step_begin(1);
        trace_bench_ex_note(what[(i / 10) & 3], -(int64_t)i);
        trace_bench_ex_step_end(1);
        trace_bench_ex_step_begin(2);
        trace_bench_ex_step_end(2);
        trace_bench_ex_op_exit(i, 0);
        if (since_flush >= 200000) {
            st_trace_file_flush();
            since_flush = 0;
        }
    }
    return NULL;
}

/* Writes the trace (in a child process, see main); returns 0 or -1. */
static int generate(const struct opts *o, const char *path)
{
    char cfg[4300], err[256] = "";
    snprintf(cfg, sizeof cfg, "enable=bench_ex_*,bufsize=64M,file=%s", path);
    if (st_configure(cfg, err, sizeof err) != 0) {
        fprintf(stderr, "bench_export: st_configure: %s\n", err);
        return -1;
    }
    uint64_t t0 = now_ns(), share = (o->records / (uint64_t)o->threads + 9) / 10 * 10;
    pthread_t th[64];
    for (int i = 0; i < o->threads; i++)
        pthread_create(&th[i], NULL, emit, &share);
    for (int i = 0; i < o->threads; i++)
        pthread_join(th[i], NULL);
    st_trace_file_flush();
    st_trace_file_set_enabled(false);
    struct st_stats s = {.struct_size = sizeof s};
    st_stats_get(&s);
    printf("generated %s: %" PRIu64 " records written, %" PRIu64 " dropped, %.1f MB, %d threads, %.2f s\n", path,
           s.written, s.dropped, (double)s.bytes_written / 1e6, o->threads, (double)(now_ns() - t0) / 1e9);
    return 0;
}

static double last_best; /* seconds of the last measure()'s best run */

/* Times one command R times; prints the best run (in last_best too). Returns the bytes it wrote (0 if it failed). */
static uint64_t measure(const struct opts *o, const char *label, char *const argv[], const char *out, uint64_t records,
                    uint64_t bytes)
{
    double best = 0, best_cpu = 0;
    long rss = 0;
    uint64_t written = 0;
    for (int i = 0; i < o->runs; i++) {
        if (out)
            remove_tree(out);
        double s, cpu;
        long kb;
        int status = timed_run(argv, &s, &cpu, &kb);
        if (status != 0) {
            printf("  %-18s failed (exit status %d)\n", label, status);
            return 0;
        }
        if (best == 0 || s < best)
            best = s;
        if (best_cpu == 0 || cpu < best_cpu)
            best_cpu = cpu;
        if (kb > rss)
            rss = kb;
        written = out ? size_of(out) : 0;
    }
    printf("  %-18s %7.3f s  %6.2f M records/s  %7.1f MB/s in  %7.1f MB out  %6.1f B/record  max RSS %5.1f MB"
           "  (CPU %.3f s: %.2f M records/s)\n",
           label, best, (double)records / best / 1e6, (double)bytes / best / 1e6, (double)written / 1e6,
           (double)written / (double)records, (double)rss / 1024.0, best_cpu,
           best_cpu > 0 ? (double)records / best_cpu / 1e6 : 0.0);
    if (out)
        remove_tree(out);
    last_best = best;
    return written;
}

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        {"simpletrace", required_argument, NULL, 'x'}, {"events", required_argument, NULL, 'e'},
        {"records", required_argument, NULL, 'n'},     {"threads", required_argument, NULL, 't'},
        {"dir", required_argument, NULL, 'd'},         {"runs", required_argument, NULL, 'r'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'x': o->exe = optarg; break;
        case 'e': o->events = optarg; break;
        case 'n': o->records = strtoull(optarg, NULL, 10); break;
        case 't': o->threads = atoi(optarg); break;
        case 'd': o->dir = optarg; break;
        case 'r': o->runs = atoi(optarg); break;
        default: return -1;
        }
    }
    return o->exe && o->events && o->records && o->runs > 0 && o->threads > 0 && o->threads <= 64 ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    struct opts o = {.records = 6000000, .threads = 4, .runs = 3, .dir = tmp && *tmp ? tmp : "/tmp"};
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: bench_export --simpletrace EXE --events TRACE-EVENTS [--records N] [--threads T] "
                        "[--runs R] [--dir DIR]\n");
        return 2;
    }
    char trace[4200], data[4200], json[4200], pftrace[4200], ctf[4200], folded[4200], pq[4200];
    long pid = (long)getpid();
    snprintf(trace, sizeof trace, "%s/simpletrace-bench-export-%ld.trace", o.dir, pid);
    snprintf(data, sizeof data, "%s/simpletrace-bench-export-%ld.data", o.dir, pid);
    snprintf(json, sizeof json, "%s/simpletrace-bench-export-%ld.json", o.dir, pid);
    snprintf(pftrace, sizeof pftrace, "%s/simpletrace-bench-export-%ld.pftrace", o.dir, pid);
    snprintf(ctf, sizeof ctf, "%s/simpletrace-bench-export-%ld.ctf", o.dir, pid);
    snprintf(folded, sizeof folded, "%s/simpletrace-bench-export-%ld.folded", o.dir, pid);
    snprintf(pq, sizeof pq, "%s/simpletrace-bench-export-%ld.parquet", o.dir, pid);
    /* Trace in a child: a spawned converter's max RSS would otherwise include
     * the runtime's buffers (the high-water mark survives exec). */
    fflush(stdout);
    pid_t child = fork();
    if (child == 0)
        exit(generate(&o, trace) == 0 ? 0 : 1);
    int st;
    if (child < 0 || waitpid(child, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 1;
    struct stat tst;
    uint64_t bytes = stat(trace, &tst) == 0 ? (uint64_t)tst.st_size : 0;
    uint64_t records = (o.records / (uint64_t)o.threads + 9) / 10 * 10 * (uint64_t)o.threads;
    printf("%s: %" PRIu64 " records, %.1f MB (best of %d runs)\n", trace, records, (double)bytes / 1e6, o.runs);
    char *uft[] = {(char *)o.exe, "export", "-q", "--format=uftrace", "-o", data, (char *)o.events, trace, NULL};
    char *chr[] = {(char *)o.exe, "export", "-q", "--format=chrome", "-o", json, (char *)o.events, trace, NULL};
    char *prt[] = {(char *)o.exe, "print", (char *)o.events, trace, NULL};
    char *pft[] = {(char *)o.exe, "export", "-q", "--format=perfetto", "-o", pftrace, (char *)o.events, trace, NULL};
    char *ctfa[] = {(char *)o.exe, "export", "-q", "--format=ctf", "-o", ctf, (char *)o.events, trace, NULL};
    char *pqa[] = {(char *)o.exe, "export", "-q", "--format=parquet", "-o", pq, (char *)o.events, trace, NULL};
    uint64_t size_uft = measure(&o, "export uftrace", uft, data, records, bytes);
    uint64_t size_chrome = measure(&o, "export chrome", chr, json, records, bytes);
    uint64_t size_pf = measure(&o, "export perfetto", pft, pftrace, records, bytes);
    char *fld[] = {(char *)o.exe, "export", "-q", "--format=folded", "-o", folded, (char *)o.events, trace, NULL};
    double pf_best = last_best;
    uint64_t size_ctf = measure(&o, "export ctf", ctfa, ctf, records, bytes);
    measure(&o, "export folded", fld, folded, records, bytes);
    double pq_secs;
    uint64_t size_pq = measure(&o, "export parquet", pqa, pq, records, bytes);
    pq_secs = last_best;
    measure(&o, "print (reference)", prt, NULL, records, bytes);
    if (size_chrome && size_uft && size_pf && size_ctf)
        printf("size against chrome JSON: uftrace %.1fx, perfetto %.1fx, ctf %.1fx smaller\n",
               (double)size_chrome / (double)size_uft, (double)size_chrome / (double)size_pf,
               (double)size_chrome / (double)size_ctf);
    if (size_pf && size_pq)
        printf("parquet against perfetto: %.2fx the records/s (%.2f M vs %.2f M), %.1f vs %.1f bytes/record "
               "(%.2fx smaller; parquet holds every record twice: records.parquet and its event's typed file, "
               "plus spans.parquet)\n",
               pf_best / pq_secs, (double)records / pq_secs / 1e6, (double)records / pf_best / 1e6,
               (double)size_pq / (double)records, (double)size_pf / (double)records,
               (double)size_pf / (double)size_pq);
    unlink(trace);
    return 0;
}
