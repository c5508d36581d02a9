/*
 * The writeout thread starved by compression: compress=zstd:19:fixed (zstd's
 * slowest level but for --ultra, never eased when the writer falls behind:
 * test_zstd_adapt.c tests that) behind the smallest buffers (bufsize=4K:
 * few records reach the file) and behind 64K ones (many frames, drops
 * between them), while more threads than CPUs trace flat out. The compressor cannot keep
 * up, so most records are dropped; what matters is that every drop is
 * counted exactly once, in the file and in the exit report:
 *
 *   produced (counted by the child itself)
 *     == event records in the file + the counts of its dropped records
 *   the exit report's "D of P events were dropped": P == produced and
 *     D == the counts of the file's dropped records
 *
 * The workload runs in a child process (re-executed), so its exit report
 * (stderr) and its last pass at exit are the real ones. The file is read
 * by zstd -d and the strict v4 decoder (the real consumer of the format),
 * per-thread sequences checked; the reader library's counters, and the
 * seek table's time index and summary (what info answers from), must
 * agree with it.
 */
#include <pthread.h>
#include <time.h>

#include <simpletrace/reader.h>

#include "fault_test.h"

static uint64_t produced;
static int stop;

static void *spin(void *arg)
{
    uint64_t th = (uint64_t)(uintptr_t)arg, seq = 0;

    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
        ft_trace(th, seq++, &produced);
    return NULL;
}

/* The child: n threads trace into path for ms milliseconds, then it exits (the exit pass and report run). */
static int child(const char *path, const char *count_path, const char *bufsize, unsigned n, long ms)
{
    pthread_t th[16];
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    char cfg[1400], text[64];

    snprintf(cfg, sizeof cfg, "ft_*,bufsize=%s,compress=zstd:19:fixed,file=%s", bufsize, path);
    if (st_configure(cfg, NULL, 0) != 0)
        return 2;
    for (unsigned i = 0; i < n; i++)
        pthread_create(&th[i], NULL, spin, (void *)(uintptr_t)i);
    nanosleep(&ts, NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    snprintf(text, sizeof text, "%llu\n", (unsigned long long)produced);
    test_write_file(count_path, text);
    return 0; /* exit: the writer's last pass takes every pending drop, then the report */
}

static void add_count(void *opaque, const struct st_event_info *ev, const char *name, uint64_t id, uint64_t count)
{
    (void)ev, (void)name, (void)id;
    *(uint64_t *)opaque += count;
}

/* One starved run with bufsize=bufsize, checked. */
static void starve(const char *self, const char *bufsize, unsigned n)
{
    char name[64], nbuf[16], what[80];
    const char *path, *dec, *errpath, *count_path;
    unsigned long long dropped = 0, reported_produced = 0;
    struct ft_sum s;
    char *text, *count_text;
    uint64_t child_produced;

    snprintf(what, sizeof what, "bufsize=%s", bufsize);
    snprintf(name, sizeof name, "starve-%s.trace.zst", bufsize);
    path = test_path(name);
    snprintf(name, sizeof name, "starve-%s.dec", bufsize);
    dec = test_path(name);
    errpath = test_path("child-stderr.txt");
    count_path = test_path("produced.txt");
    snprintf(nbuf, sizeof nbuf, "%u", n);
    char *cargv[] = {(char *)self, "child", (char *)path, (char *)count_path, (char *)bufsize, nbuf, NULL};
    const char *env[] = {"SIMPLETRACE=", NULL};
    int status = test_run_self(cargv, env, errpath, NULL);

    is_int(status, 0, "%s: child: %u threads traced flat out into compress=zstd:19, then exited", what, n);
    count_text = tu_slurp(count_path, NULL);
    child_produced = count_text ? strtoull(count_text, NULL, 10) : 0;
    free(count_text);
    ok(child_produced > 0, "%s: the child traced %llu events", what, (unsigned long long)child_produced);

    /* The exit report: "simpletrace: D of P events were dropped (thread buffers full); ..." */
    text = tu_slurp(errpath, NULL);
    const char *line = text ? strstr(text, "simpletrace: ") : NULL;
    while (line && !strstr(line, " events were dropped (thread buffers full)"))
        line = strstr(line + 1, "simpletrace: ");
    ok(line && sscanf(line, "simpletrace: %llu of %llu events were dropped", &dropped, &reported_produced) == 2,
       "%s: the exit report says how many events were dropped, of how many", what);
    if (text && *text)
        diag("%s: child stderr: %s", what, text);
    free(text);

    is_int(tu_unzstd(path, dec), 0, "%s: zstd -d reads the file the starved writer left (frames, seek table)", what);
    ft_sum_init(&s);
    ft_sum_file(&s, dec, 0);
    ok(s.decoded, "%s: the strict decoder reads zstd -d's output whole", what);
    ok(s.order, "%s: per-thread sequences strictly increase (gaps only where drops are)", what);
    ok(dropped > 0 && s.drops > 0, "%s: the compressor could not keep up: events were dropped (%llu)", what, dropped);
    is_u64(reported_produced, child_produced, "%s: exit report: P = the events the child traced", what);
    is_u64(dropped, s.drops, "%s: exit report: D = the counts of the file's dropped records", what);
    if (!ok(child_produced == s.events + s.drops, "%s: produced = event records in the file + dropped counts, exactly",
            what))
        diag("produced %llu, events %llu, dropped counts %llu (%llu dropped records)",
             (unsigned long long)child_produced, (unsigned long long)s.events, (unsigned long long)s.drops,
             (unsigned long long)s.drop_records);
    diag("%s: produced %llu = %llu written + %llu dropped in %llu dropped records", what,
         (unsigned long long)child_produced, (unsigned long long)s.events, (unsigned long long)s.drops,
         (unsigned long long)s.drop_records);
    is_u64(s.lost_drops, 0, "%s: no drop counted outside a thread (pid 0xffffffff)", what);

    /* The reader on the compressed file itself: its counters, and the seek table's totals, agree. */
    struct st_reader *r;
    struct st_reader_counters c = {.struct_size = sizeof c};
    struct st_reader_compression z = {.struct_size = sizeof z};
    const struct st_record *rec;
    uint64_t seen = 0;
    if (ok(st_reader_open(&r, path, NULL, NULL, NULL) == 0, "%s: the reader opens the compressed file", what)) {
        while (st_reader_next(r, &rec) == 1)
            seen++;
        is_int(st_reader_error(r)->code, 0, "%s: the reader reads it to its end without an error", what);
        st_reader_get_counters(r, &c);
        st_reader_get_compression(r, &z);
        ok(z.compressed && z.seekable && z.frames > 1, "%s: it ends in a seek table (%llu frames)", what,
           (unsigned long long)z.frames);
        is_u64(c.events, s.events, "%s: reader: the decoder's event records", what);
        is_u64(c.dropped_events, s.drops, "%s: reader: the decoder's dropped counts", what);
        is_u64(c.dropped_records, s.drop_records, "%s: reader: the decoder's dropped records", what);
        is_u64(seen, s.events + s.drop_records, "%s: reader: every event and dropped record delivered", what);
        st_reader_close(r);
    }
    /* Answered from the seek table (what info does): the same counts, its summary's event count the file's. */
    struct st_reader_options o = {.struct_size = sizeof o, .flags = ST_READER_SUMMARY};
    uint64_t summed = 0;
    if (ok(st_reader_open(&r, path, NULL, &o, NULL) == 0, "%s: opened again, answered from the seek table", what)) {
        while (st_reader_next(r, &rec) == 1)
            ;
        st_reader_get_counters(r, &c);
        st_reader_get_compression(r, &z);
        st_reader_summary_counts(r, add_count, &summed);
        ok(z.summarized && c.events == s.events && c.dropped_events == s.drops && c.dropped_records == s.drop_records,
           "%s: seek table: the decoder's events, drops and dropped records (%llu of %llu frames skipped)", what,
           (unsigned long long)z.frames_skipped, (unsigned long long)z.frames);
        is_u64(summed, s.events, "%s: summary: the decoder's event records", what);
        st_reader_close(r);
    }
}

int main(int argc, char **argv)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = (unsigned)(ncpu > 0 ? 2 * ncpu + 2 : 4);

    if (n > 16)
        n = 16;
    if (argc > 5 && !strcmp(argv[1], "child"))
        return child(argv[2], argv[3], argv[4], (unsigned)atoi(argv[5]), 1500);
    test_tmpdir();
    starve(argv[0], "4K", n);
    starve(argv[0], "64K", n);
    return done_testing();
}
