/*
 * compress=zstd in the runtime: the file is zstd frames whose `zstd -d`
 * output the strict decoder (v4_decode.h) reads, holding exactly the
 * records of the same run written plain (names, argument values, order);
 * many passes make many frames, which `zstd -l` counts with the three
 * skippable frames (summary, time index, seek table); stats count every record
 * once; rotate= gives pieces that are each a complete compressed file
 * (its own time index and seek table, read alone and seekable);
 * off/on appends frames to the same file, still one trace, whose last
 * summary counts both runs' records; a fork child
 * writes its own compressed file; a process killed with SIGKILL leaves
 * frames the reader reads up to the last one written, with no error; a
 * write that fails (EFBIG) leaves a write-lost dropped record, which the
 * summary of the file, appended to and closed afterwards, counts;
 * bad values of compress= are refused.
 */
#include <sys/resource.h>

#include <simpletrace/reader.h>

#include "rt_test.h"

TEST_EVENT(ev_a, "z_a", "int seq", "seq %d", "i", 1, 0);
TEST_EVENT(ev_s, "z_s", "int a, int seq, const char *s", "a %d seq %d s %s", "iis", 3, 0);
TEST_GROUP(grp_z, "zcompress", &ev_a, &ev_s)

static struct st_group *const groups[] = {&grp_z, NULL};

static void trace_range(uint64_t from, uint64_t to)
{
    static const char text[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (uint64_t seq = from; seq < to; seq++) {
        if (seq % 2)
            test_trace_iis(&ev_s, seq * 3, seq, text + seq % (sizeof text - 1));
        else
            test_trace_i(&ev_a, seq);
    }
}

/* Runs argv (zstd), output discarded; its exit status, stderr in *err (freed by the caller) when asked. */
static int run_tool(char *const argv[], char **out)
{
    struct tu_run r;
    int st;

    if (tu_run(argv, NULL, NULL, out == NULL, &r) < 0)
        return -1;
    st = r.status;
    if (out) {
        *out = r.out;
        r.out = NULL;
    }
    tu_run_free(&r);
    return st;
}

/* Whether the two decoded traces hold the same event records (names, args, order), mappings aside. */
static bool same_events(const struct test_trace *a, const struct test_trace *b, size_t *n)
{
    size_t i = 0, j = 0;

    *n = 0;
    for (;;) {
        while (i < a->n && a->r[i].mapping)
            i++;
        while (j < b->n && b->r[j].mapping)
            j++;
        if (i == a->n || j == b->n)
            return i == a->n && j == b->n;
        const struct test_rec *x = &a->r[i++], *y = &b->r[j++];
        if (strcmp(x->name, y->name) || x->nargs != y->nargs || memcmp(x->u, y->u, sizeof x->u) ||
            strcmp(x->s, y->s) || x->dropped != y->dropped || x->drop_count != y->drop_count)
            return false;
        (*n)++;
    }
}

/* Events seq-ordered from..to-1 (z_a, z_s alternating), as trace_range() made them. */
static bool in_order(const struct test_trace *t, uint64_t from, uint64_t to)
{
    uint64_t next = from;
    for (size_t i = 0; i < t->n; i++) {
        const struct test_rec *r = &t->r[i];
        if (r->mapping || r->dropped)
            continue;
        uint64_t seq = r->nargs == 1 ? r->u[0] : r->u[1];
        if (seq != next++)
            return false;
    }
    return next == to;
}

static void config_errors(void)
{
    char err[256];

    is_int(st_configure("compress=gzip", err, sizeof err), -EINVAL, "compress=gzip refused");
    ok(strstr(err, "compress 'gzip'") && strstr(err, "zstd"), "the message names the value and what is wanted");
    is_int(st_configure("compress=zstd:99", err, sizeof err), -EINVAL, "compress=zstd:99 refused");
    is_int(st_configure("compress=zstd:", err, sizeof err), -EINVAL, "compress=zstd: refused");
    is_int(st_configure("compress=zstd:x", err, sizeof err), -EINVAL, "compress=zstd:x refused");
    is_int(st_configure("compress=zstd:3:fix", err, sizeof err), -EINVAL, "compress=zstd:3:fix refused");
    is_int(st_configure("compress=zstd:fixed:3", err, sizeof err), -EINVAL, "compress=zstd:fixed:3 refused");
    is_int(st_configure("compress=zstd:3:fixed:", err, sizeof err), -EINVAL, "compress=zstd:3:fixed: refused");
    is_int(st_configure("compress=zstd:-5:fixed", err, sizeof err), 0, "compress=zstd:-5:fixed taken");
    is_int(st_configure("compress=zstd:fixed", err, sizeof err), 0, "compress=zstd:fixed taken (the default level)");
    is_int(st_configure("compress=off", err, sizeof err), 0, "compress=off taken");
}

/* The same records plain and compressed; frames, stats, zstd -l. */
static void same_as_plain(void)
{
    struct test_trace p, z;
    struct st_stats st0 = {.struct_size = sizeof st0}, st1 = {.struct_size = sizeof st1};
    char *out = NULL;
    size_t n = 0;

    is_int(st_configure("file=plain.trace,compress=off,z_a,z_s", NULL, 0), 0, "plain file");
    trace_range(0, 20000);
    is_int(st_trace_file_set_enabled(false), 0, "plain file closed");
    st_stats_get(&st0);
    is_int(st_configure("file=z.trace.zst,compress=zstd", NULL, 0), 0, "compress=zstd file");
    for (uint64_t k = 0; k < 20; k++) { /* a flush per 1000 records: 20 frames at least */
        trace_range(k * 1000, (k + 1) * 1000);
        st_trace_file_flush();
    }
    is_int(st_trace_file_set_enabled(false), 0, "compressed file closed (seek table written)");
    st_stats_get(&st1);
    ok(st1.written - st0.written == 20000 && st1.dropped == st0.dropped, "stats: the 20000 records written, none dropped");
    is_int(tu_unzstd(test_path("z.trace.zst"), test_path("z.dec")), 0, "zstd -d reads the compressed file");
    ok(test_collect(test_path("plain.trace"), groups, &p) == 0 && test_collect(test_path("z.dec"), groups, &z) == 0,
       "the strict decoder reads both");
    ok(same_events(&p, &z, &n) && n == 20000, "the same 20000 records, names, values and order (%zu)", n);
    ok(in_order(&z, 0, 20000), "in the order traced");
    ok(z.sum.declarations == p.sum.declarations && z.sum.descriptions == 1, "declarations and description kept");
    long long zs = test_file_size(test_path("z.trace.zst")), ps = test_file_size(test_path("plain.trace"));
    ok(zs > 0 && zs * 3 < ps, "smaller than a third of the plain file (%lld of %lld bytes)", zs, ps);
    char *argv[] = {"zstd", "-l", "-v", (char *)test_path("z.trace.zst"), NULL};
    is_int(run_tool(argv, &out), 0, "zstd -l reads it");
    const char *f = out ? strstr(out, "Zstandard Frames: ") : NULL, *s = out ? strstr(out, "Skippable Frames: ") : NULL;
    ok(f && atoi(f + 18) >= 20 && s && atoi(s + 18) == 3,
       "zstd -l: >= 20 data frames and the 3 skippable ones (summary, time index, seek table)");
    free(out);
    test_trace_free(&p);
    test_trace_free(&z);
}

/* Adds a summary's count to the event's slot: [0] z_a, [1] z_s, [2] anything else. */
static void count_event(void *opaque, const struct st_event_info *ev, const char *name, uint64_t id, uint64_t count)
{
    uint64_t *n = opaque;
    (void)id;
    n[!ev || !name ? 2 : !strcmp(name, "z_a") ? 0 : !strcmp(name, "z_s") ? 1 : 2] += count;
}

/* off/on: the same file goes on (frames appended after the old seek table), one trace. */
static void append(void)
{
    struct test_trace z;
    struct st_reader *r;
    struct st_reader_compression c = {.struct_size = sizeof c};
    const struct st_record *rec;
    size_t n = 0;

    is_int(st_configure("file=a.trace.zst,compress=zstd", NULL, 0), 0, "compress=zstd file a");
    trace_range(0, 3000);
    is_int(st_trace_file_set_enabled(false), 0, "off");
    is_int(st_trace_file_set_enabled(true), 0, "on again: appends");
    trace_range(3000, 6000);
    is_int(st_trace_file_set_enabled(false), 0, "off");
    is_int(tu_unzstd(test_path("a.trace.zst"), test_path("a.dec")), 0, "zstd -d reads the appended file");
    ok(test_collect(test_path("a.dec"), groups, &z) == 0 && in_order(&z, 0, 6000), "0..5999 once, in order");
    test_trace_free(&z);
    ok(st_reader_open(&r, test_path("a.trace.zst"), NULL, NULL, NULL) == 0, "the reader opens it");
    while (st_reader_next(r, &rec) == 1)
        n++;
    st_reader_get_compression(r, &c);
    ok(n == 6000 && st_reader_error(r)->code == 0, "the reader reads 6000 records, no error (%zu)", n);
    ok(c.compressed && c.seekable, "its last seek table covers the whole file (the old one a frame of it)");
    st_reader_close(r);
    /* The last summary counts the whole file: 3000 of each event (trace_range() alternates them). */
    struct st_reader_options o = {.struct_size = sizeof o, .flags = ST_READER_SUMMARY};
    uint64_t counts[3] = {0, 0, 0};
    ok(st_reader_open(&r, test_path("a.trace.zst"), NULL, &o, NULL) == 0, "opened for its summary");
    while (st_reader_next(r, &rec) == 1)
        ;
    st_reader_get_compression(r, &c);
    ok(c.summarized && st_reader_summary_counts(r, count_event, counts) == 0, "the appended file has a summary");
    ok(counts[0] == 3000 && counts[1] == 3000 && counts[2] == 0,
       "it counts the records of both runs: z_a %llu, z_s %llu (3000 each)", (unsigned long long)counts[0],
       (unsigned long long)counts[1]);
    st_reader_close(r);
}

/* rotate=: each piece a complete compressed file, records in order across them. */
static void rotation(void)
{
    char path[400], dec[420];
    uint64_t next = 0;
    unsigned k;
    bool ok_all = true, tables = true;

    is_int(st_configure("file=r.trace,compress=zstd,rotate=64K", NULL, 0), 0, "compress=zstd,rotate=64K");
    trace_range(0, 20000);
    is_int(st_trace_file_set_enabled(false), 0, "off");
    for (k = 0;; k++) {
        struct test_trace t;
        snprintf(path, sizeof path, k ? "%s.%u" : "%s", test_path("r.trace"), k);
        if (!test_exists(path))
            break;
        snprintf(dec, sizeof dec, "%s.dec", path);
        if (tu_unzstd(path, dec) != 0 || test_collect(dec, groups, &t) != 0 || t.n < 2 || !t.r[0].mapping) {
            ok_all = false;
            break;
        }
        /* Ended as a whole file is: its time index and seek table (zstd -l), so the reader seeks in it alone. */
        char *argv[] = {"zstd", "-l", "-v", path, NULL}, *out = NULL;
        const char *sk = run_tool(argv, &out) == 0 && out ? strstr(out, "Skippable Frames: ") : NULL;
        struct st_reader *r = NULL;
        struct st_reader_compression c = {.struct_size = sizeof c};
        const struct st_record *rec;
        tables &= sk && atoi(sk + 18) == 3;
        free(out);
        if (st_reader_open(&r, path, NULL, NULL, NULL) == 0) { /* this piece alone */
            while (st_reader_next(r, &rec) == 1)
                ;
            st_reader_get_compression(r, &c);
            tables &= c.compressed && c.seekable && st_reader_error(r)->code == 0;
            st_reader_close(r);
        } else {
            tables = false;
        }
        for (size_t i = 0; i < t.n; i++)
            if (!t.r[i].mapping && !t.r[i].dropped)
                ok_all &= (t.r[i].nargs == 1 ? t.r[i].u[0] : t.r[i].u[1]) == next++;
        test_trace_free(&t);
    }
    ok(k >= 5, "about 1 MB of records in 64K pieces (%u pieces)", k);
    ok(ok_all && next == 20000, "each piece decompresses alone and starts with its mappings; 0..19999 in order");
    ok(tables, "each piece ends in its own time index and seek table, and reads alone, seekable");
    is_int(st_configure("rotate=off", NULL, 0), 0, "rotate=off");
}

/* A child killed with SIGKILL: the frames it wrote read, the cut said nothing of (every frame whole). */
static int killed_child(void)
{
    if (st_configure("file=k.trace.zst,compress=zstd,z_a,z_s", NULL, 0) != 0)
        return 1;
    for (uint64_t k = 0; k < 10; k++) {
        trace_range(k * 500, (k + 1) * 500);
        st_trace_file_flush();
    }
    raise(SIGKILL);
    return 1;
}

static void killed(char *self)
{
    char *argv[] = {self, "killed", NULL};
    const char *env[] = {"SIMPLETRACE=", NULL};
    struct st_reader *r;
    struct st_reader_compression c = {.struct_size = sizeof c};
    const struct st_record *rec;
    size_t n = 0;
    int st = test_run_self(argv, env, NULL, test_dir);

    ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the child was killed");
    ok(st_reader_open(&r, test_path("k.trace.zst"), NULL, NULL, NULL) == 0, "the reader opens what it left");
    while (st_reader_next(r, &rec) == 1)
        n++;
    st_reader_get_compression(r, &c);
    ok(n == 5000 && st_reader_error(r)->code == 0, "every flushed record read (%zu of 5000), no error", n);
    ok(c.compressed && !c.seekable && c.frames >= 10, "no seek table (%llu frames read from the start)",
       (unsigned long long)c.frames);
    st_reader_close(r);
}

/*
 * A child whose frames stop fitting (RLIMIT_FSIZE): the write fails, the
 * file ends in a frame holding a ST_PID_WRITE_LOST dropped record; with the
 * limit lifted it goes on (appended) and closes with a trailer.
 */
static int efbig_child(void)
{
    struct rlimit rl = {24 * 1024, RLIM_INFINITY};

    signal(SIGXFSZ, SIG_IGN);
    if (st_configure("file=w.trace.zst,compress=zstd,z_a,z_s,bufsize=4M", NULL, 0) != 0 || setrlimit(RLIMIT_FSIZE, &rl))
        return 1;
    for (uint64_t k = 0; k < 40 && st_trace_file_flush() != -EFBIG; k++) /* a frame of 2000 records per flush */
        trace_range(k * 2000, (k + 1) * 2000);
    rl.rlim_cur = RLIM_INFINITY;
    if (setrlimit(RLIMIT_FSIZE, &rl) || st_trace_file_set_enabled(true) != 0)
        return 2;
    trace_range(100000, 102000);
    return st_trace_file_set_enabled(false) == 0 ? 0 : 3;
}

/* What efbig_child() left: the summary's write-lost count is the file's, its counts a full read's. */
static void write_lost(char *self)
{
    char *argv[] = {self, "efbig", NULL};
    const char *env[] = {"SIMPLETRACE=", NULL};
    struct st_reader *r;
    struct st_reader_compression c = {.struct_size = sizeof c};
    struct st_reader_counters rc = {.struct_size = sizeof rc};
    struct st_reader_options o = {.struct_size = sizeof o, .flags = ST_READER_SUMMARY};
    const struct st_record *rec;
    uint64_t lost = 0, counts[3] = {0, 0, 0}, a = 0, sv = 0;
    int st = test_run_self(argv, env, test_path("efbig-stderr.txt"), test_dir);

    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a child's frames stop fitting (EFBIG), then it goes on (status %#x)",
       st);
    ok(st_reader_open(&r, test_path("w.trace.zst"), NULL, NULL, NULL) == 0, "the reader opens what it left");
    while (st_reader_next(r, &rec) == 1) {
        if (rec->dropped && rec->has_pid && rec->pid == 0xfffffffeu)
            lost += rec->dropped_count;
        else if (!rec->dropped && rec->name)
            *(!strcmp(rec->name, "z_a") ? &a : &sv) += 1;
    }
    ok(st_reader_error(r)->code == 0 && lost > 0, "read whole: %llu events in write-lost dropped records",
       (unsigned long long)lost);
    st_reader_close(r);
    ok(st_reader_open(&r, test_path("w.trace.zst"), NULL, &o, NULL) == 0, "opened for its summary");
    while (st_reader_next(r, &rec) == 1)
        ;
    st_reader_get_compression(r, &c);
    st_reader_get_counters(r, &rc);
    ok(c.summarized && c.frames_skipped > 0 && st_reader_summary_counts(r, count_event, counts) == 0,
       "it ends in a summary (%llu of %llu frames skipped)", (unsigned long long)c.frames_skipped,
       (unsigned long long)c.frames);
    is_u64(c.write_lost_events, lost, "the summary's write-lost events are the file's");
    ok(counts[0] == a && counts[1] == sv && counts[2] == 0, "its counts are a full read's (z_a %llu, z_s %llu)",
       (unsigned long long)a, (unsigned long long)sv);
    st_reader_close(r);
}

/* fork: the child writes its own compressed file. */
static void forked(void)
{
    char path[400];
    struct test_trace t;
    pid_t pid;
    int st;

    is_int(st_configure("file=f.trace,compress=zstd", NULL, 0), 0, "compress=zstd file f");
    trace_range(0, 100);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        trace_range(100, 300);
        exit(0);
    }
    waitpid(pid, &st, 0);
    snprintf(path, sizeof path, "%s-%ld", test_path("f.trace"), (long)pid);
    char dec[420];
    snprintf(dec, sizeof dec, "%s.dec", path);
    is_int(tu_unzstd(path, dec), 0, "the child's own file is compressed (%s)", path);
    ok(test_collect(dec, groups, &t) == 0 && in_order(&t, 100, 300), "the child's records 100..299");
    test_trace_free(&t);
    is_int(st_trace_file_set_enabled(false), 0, "off");
    snprintf(dec, sizeof dec, "%s.dec", test_path("f.trace"));
    ok(tu_unzstd(test_path("f.trace"), dec) == 0 && test_collect(dec, groups, &t) == 0 && in_order(&t, 0, 100),
       "the parent's records 0..99 in its own");
    test_trace_free(&t);
}

int main(int argc, char **argv)
{
    char cwd[600];

    if (argc > 1 && !strcmp(argv[1], "killed"))
        return killed_child();
    if (argc > 1 && !strcmp(argv[1], "efbig"))
        return efbig_child();
    test_tmpdir();
    if (!getcwd(cwd, sizeof cwd) || chdir(test_dir) != 0)
        return 2;
    config_errors();
    same_as_plain();
    append();
    rotation();
    killed(argv[0]);
    write_lost(argv[0]);
    if (!TEST_UNDER_TSAN) /* a fork child of a threaded process: beyond what TSan follows (as runtime-fork) */
        forked();
    if (chdir(cwd) != 0)
        return 2;
    return done_testing();
}
