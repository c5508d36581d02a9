/*
 * `simpletrace stats` as a user runs it, on the QEMU fixtures: every
 * number of --format=json (events, dropped records and the events they
 * lost, inversions, threads, duration, each event's count) computed here
 * independently from simpletrace.py's text of the same trace; the table;
 * and memory that does not grow with the trace.
 *
 * usage: test_cli_stats SIMPLETRACE_EXE SHARED_DIR
 */
#include "rd_util.h"
#include "tap.h"

static const char *exe, *shared;

/* Runs simpletrace with the arguments up to a NULL, stdin from /dev/null. */
#define run(res, ...) rd_cli(res, exe, NULL, __VA_ARGS__)
#define path(dir, name, suffix) rd_fixture(shared, dir, name, suffix)

/* Runs first (RD_RSS_* in rd_util.h): stats' memory does not grow with the trace. */
static void test_rss(void)
{
    char tmp[256];
    rd_big_trace(path("qemu", "bench_small_drops", ".bin"), tmp, sizeof tmp);
    struct tu_run small, big;
    run(&small, "stats", path("qemu", "trace-events-all", ""), path("qemu", "bench_small_drops", ".bin"), NULL);
    run(&big, "stats", path("qemu", "trace-events-all", ""), tmp, NULL);
    ok(big.status == 0 && big.out && strstr(big.out, "48 records, 518448 events lost"),
       "16 copies of the records: 48 drops, 518448 events lost");
    ok(big.maxrss_kb - small.maxrss_kb < RD_RSS_SLACK_KB && big.maxrss_kb < RD_RSS_MAX_KB,
       "stats max RSS %ld KiB on 2.4 MB, %ld KiB on 37 MB: constant", small.maxrss_kb, big.maxrss_kb);
    tu_run_free(&small);
    tu_run_free(&big);
    unlink(tmp);
}

/* --- stats ---------------------------------------------------------------------- */

/* Integer value of "key": in a JSON text (first occurrence after from). */
static long long json_int(const char *text, const char *from, const char *key)
{
    char k[128];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(from ? from : text, k);
    return p ? strtoll(p + strlen(k), NULL, 10) : -1;
}

static void test_stats(const char *name)
{
    struct rd_lines ls;
    rd_load_lines(path("qemu", name, ".expected.txt"), &ls);
    long long dropped = 0, lost = 0, inversions = 0, events = 0;
    int64_t tmin = 0, tmax = 0;
    long pids[16];
    int npids = 0;
    for (size_t i = 0; i < ls.n; i++) {
        uint64_t v;
        if (!strcmp(ls.l[i].name, "Dropped_Event") && rd_field_u64(&ls.l[i], "num_events_dropped", &v)) {
            dropped++;
            lost += (long long)v;
        } else {
            events++;
        }
        inversions += ls.l[i].delta_ns < 0;
        tmin = ls.t[i] < tmin ? ls.t[i] : tmin;
        tmax = ls.t[i] > tmax ? ls.t[i] : tmax;
        int k;
        for (k = 0; k < npids && pids[k] != ls.l[i].pid; k++)
            ;
        if (k == npids && npids < 16)
            pids[npids++] = ls.l[i].pid;
    }
    struct tu_run r;
    run(&r, "stats", "--format=json", path("qemu", "trace-events-all", ""), path("qemu", name, ".bin"), NULL,
        NULL);
    const char *j = r.out ? r.out : "";
    ok(r.status == 0 && json_int(j, NULL, "events") == events && json_int(j, NULL, "dropped_records") == dropped &&
           json_int(j, NULL, "dropped_events") == lost && json_int(j, NULL, "non_monotonic") == inversions &&
           json_int(j, NULL, "threads") == (ls.n ? npids : 0) &&
           json_int(j, NULL, "duration_ns") == (long long)(tmax - tmin),
       "stats %s: %lld events, %lld dropped records losing %lld, %lld inversions, %d threads, %lld ns", name, events,
       dropped, lost, inversions, npids, (long long)(tmax - tmin));
    /* per-event counts: distinct names with their number of lines */
    const char *names[256];
    long long counts[256];
    size_t nnames = 0;
    for (size_t i = 0; i < ls.n; i++) {
        if (!strcmp(ls.l[i].name, "Dropped_Event"))
            continue;
        size_t k;
        for (k = 0; k < nnames && strcmp(names[k], ls.l[i].name); k++)
            ;
        if (k == nnames && nnames < 256) {
            names[nnames] = ls.l[i].name;
            counts[nnames++] = 0;
        }
        if (k < 256)
            counts[k]++;
    }
    bool counts_ok = true;
    for (size_t k = 0; k < nnames && counts_ok; k++) {
        char key[200];
        snprintf(key, sizeof key, "{\"name\":\"%s\",", names[k]);
        const char *at = strstr(j, key);
        counts_ok = at && json_int(j, at, "count") == counts[k];
        if (!counts_ok)
            diag("%s: count %lld", names[k], counts[k]);
    }
    ok(counts_ok, "stats %s: per-event counts equal the lines per name", name);
    tu_run_free(&r);
    rd_free_lines(&ls);
}

static void test_stats_text(void)
{
    struct tu_run r;
    run(&r, "stats", path("qemu", "trace-events-all", ""), path("qemu", "bench_small_drops", ".bin"), NULL, NULL,
        NULL);
    ok(r.status == 0 && r.out && strstr(r.out, "EVENT") && strstr(r.out, "qemu_mutex_locked") &&
           strstr(r.out, "3 records, 32403 events lost") && strstr(r.out, "non-monotonic   1"),
       "stats table: header, rows, totals (3 drops losing 32403 events, 1 inversion)");
    tu_run_free(&r);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s SIMPLETRACE_EXE SHARED_DIR\n", argv[0]);
        return 2;
    }
    exe = argv[1];
    shared = argv[2];
    test_rss();
    static const char *const names[] = {"bench_small_drops", "create_qcow2", "convert_raw_to_qcow2",
                                        "no_events_info", "info_qcow2_simple_log"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        test_stats(names[i]);
    test_stats_text();
    return done_testing();
}
