/*
 * Shared by the fault tests: one event shape (thread index, per-thread
 * sequence number), a checker that decodes trace files with the runtime
 * tests' strict v4 decoder and sums what they hold, and the accounting
 * check every fault test ends with.
 *
 * The invariant checked (after a flush with every producer quiet):
 *
 *   produced (what the test traced, counted by the test itself)
 *     == event records in the files + counts of the dropped records in them
 *        + drops no file counts (stats: dropped - dropped_reported; a failed
 *          write's are counted in a dropped record of pid 0xfffffffe when
 *          the file, or the next one, takes it)
 *
 * and the runtime's own counters agree with the files: written == event
 * records, dropped_reported == sum of dropped counts, produced == written +
 * dropped. Per thread the sequence numbers in the files strictly increase
 * (nothing duplicated, nothing reordered, gaps only where drops are).
 */
#ifndef ST_TEST_FAULT_TEST_H
#define ST_TEST_FAULT_TEST_H

#include <time.h>

#include "rt_test.h"

#define FT_MAX_THREADS 64

/* The event every fault test traces: who (thread index) and a sequence number. */
TEST_EVENT(ft_ev, "ft_ev", "int thread, int seq", "thread %d seq %d", "ii", 2, 0);
/* An event traced from signal handlers. */
TEST_EVENT(ft_sig, "ft_sig", "int n", "n %d", "i", 1, 0);
TEST_GROUP(ft_grp, "ft", &ft_ev, &ft_sig)

static struct st_group *const ft_groups[] = {&ft_grp, NULL};

/* What a set of files holds. */
struct ft_sum {
    uint64_t events, drops, sig_events, drop_records;
    uint64_t lost_drops;               /* in dropped records of no thread (pid 0xffffffff, ring.h) */
    uint64_t last_seq[FT_MAX_THREADS]; /* last seq + 1 seen per thread index */
    uint64_t per_thread[FT_MAX_THREADS]; /* ft_ev records per thread index */
    int order;                         /* 1 while every thread's seqs increase */
    int decoded;                       /* 1 while every file decoded */
};

/* CLOCK_MONOTONIC in ms: the storms run until a deadline. */
static inline uint64_t ft_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline void ft_sum_init(struct ft_sum *s)
{
    memset(s, 0, sizeof *s);
    s->order = s->decoded = 1;
}

struct ft__visit {
    struct ft_sum *s;
    const char *path;
};

/* Streams records into the sum (files here can hold millions of records). */
static inline int ft__visit(const struct v4_record *r, void *opaque)
{
    struct ft__visit *v = opaque;
    struct ft_sum *s = v->s;

    if (r->mapping)
        return 0;
    if (r->dropped) {
        s->drops += r->drop_count;
        s->drop_records++;
        if (r->pid == 0xffffffffu)
            s->lost_drops += r->drop_count;
    } else if (!strcmp(r->name, "ft_ev")) {
        uint64_t th = r->args[0].u, seq = r->args[1].u;
        s->events++;
        if (th >= FT_MAX_THREADS || seq + 1 <= s->last_seq[th]) {
            if (s->order)
                diag("%s: record %llu: thread %llu seq %llu after %llu", v->path, (unsigned long long)r->index,
                     (unsigned long long)th, (unsigned long long)seq,
                     (unsigned long long)(th < FT_MAX_THREADS ? s->last_seq[th] : 0));
            s->order = 0;
        } else {
            s->last_seq[th] = seq + 1;
            s->per_thread[th]++;
        }
    } else {
        s->events++;
        s->sig_events++;
    }
    return 0;
}

/* Adds path (decoded strictly) to s; a missing or empty file adds nothing when may_be_empty. */
static inline int ft_sum_file(struct ft_sum *s, const char *path, int may_be_empty)
{
    struct ft__visit v = {s, path};
    struct v4_decoder d;
    int r;

    if (may_be_empty && test_file_size(path) <= 0)
        return 0;
    memset(&d, 0, sizeof d);
    d.kinds = test_kinds;
    d.kinds_opaque = (void *)ft_groups;
    d.visit = ft__visit;
    d.visit_opaque = &v;
    r = v4_decode_file(&d, path);
    if (r) {
        diag("decoding %s: %s", path, d.err);
        s->decoded = 0;
    }
    v4_decoder_free(&d);
    return r ? -1 : 0;
}

/*
 * Like ft_sum_file, for a file a killed program left: decodes it up to its
 * last whole record (a write cut by the death may leave part of one).
 */
static inline int ft_sum_prefix(struct ft_sum *s, const char *path)
{
    struct ft__visit v = {s, path};
    struct v4_decoder d;
    size_t len = 0, at = 24;
    uint8_t *p = (uint8_t *)tu_slurp(path, &len);
    int r;

    if (!p || len < 24) {
        free(p);
        s->decoded = 0;
        diag("%s: no header", path);
        return -1;
    }
    while (len - at >= 20) {
        uint64_t type = v4__u64(p + at), sz;
        if (type == 0)
            sz = 20 + (uint64_t)v4__u32(p + at + 16);
        else if (len - at >= 32)
            sz = 8 + (uint64_t)v4__u32(p + at + 24);
        else
            break;
        if (sz > len - at)
            break;
        at += sz;
    }
    memset(&d, 0, sizeof d);
    d.kinds = test_kinds;
    d.kinds_opaque = (void *)ft_groups;
    d.visit = ft__visit;
    d.visit_opaque = &v;
    r = v4_decode(&d, p, at);
    if (r) {
        diag("decoding %s: %s", path, d.err);
        s->decoded = 0;
    }
    v4_decoder_free(&d);
    free(p);
    return r ? -1 : 0;
}

/* The closing checks: files decode, sequences increase, and everything adds up. */
static inline void ft_check(const char *what, const struct ft_sum *s, uint64_t produced)
{
    struct st_stats st = {.struct_size = sizeof st};
    uint64_t write_lost; /* dropped, and in no dropped record of the files */

    st_stats_get(&st);
    write_lost = st.dropped - st.dropped_reported;
    ok(s->decoded, "%s: every file decodes to its last whole record", what);
    ok(s->order, "%s: per-thread sequences strictly increase", what);
    is_u64(st.pending, 0, "%s: nothing left in the buffers", what);
    is_u64(st.produced, produced, "%s: stats.produced = events the test traced", what);
    is_u64(st.written, s->events, "%s: stats.written = event records in the files", what);
    is_u64(st.dropped_reported, s->drops, "%s: stats.dropped_reported = sum of dropped records' counts", what);
    if (!ok(produced == s->events + s->drops + write_lost,
            "%s: produced = records in files + dropped counts + drops no file counts", what))
        diag("produced %llu, events %llu, dropped counts %llu, drops no file counts %llu", (unsigned long long)produced,
             (unsigned long long)s->events, (unsigned long long)s->drops, (unsigned long long)write_lost);
    diag("%s: produced %llu = %llu written + %llu in dropped records + %llu in none", what,
         (unsigned long long)produced, (unsigned long long)s->events, (unsigned long long)s->drops,
         (unsigned long long)write_lost);
}

/* Traces one ft_ev record; counts it in *produced (the test's own count). */
static inline void ft_trace(uint64_t thread, uint64_t seq, uint64_t *produced)
{
    test_trace_ii(&ft_ev, thread, seq);
    __atomic_fetch_add(produced, 1, __ATOMIC_RELAXED);
}

/* The trace-events text of ft_grp, for `simpletrace print`. */
#define FT_EVENTS_TEXT "ft_ev(int thread, int seq) \"thread %d seq %d\"\nft_sig(int n) \"n %d\"\n"

/*
 * Runs `CLI print EVENTS path` (CLI: the simpletrace command, given to the
 * test as argv[1] by meson) and checks that it exits 0 and prints exactly
 * one line per event and dropped record the decoder found in path. Skipped
 * (a TAP SKIP, never a silent pass) when no CLI path was given.
 */
static inline void ft_print_check(const char *cli, const char *path, const struct ft_sum *s, const char *what)
{
    const char *events = test_path("ft.trace-events");
    int fds[2], status = -1;
    uint64_t lines = 0;
    char buf[65536];
    ssize_t n;
    pid_t pid;

    if (!cli || !*cli) {
        printf("ok %d # SKIP %s: simpletrace print (no command path given)\n", ++tap__count, what);
        return;
    }
    test_write_file(events, FT_EVENTS_TEXT);
    if (pipe(fds) != 0)
        return;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(cli, cli, "print", events, path, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    while ((n = read(fds[0], buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++)
            lines += buf[i] == '\n';
    close(fds[0]);
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: simpletrace print reads the file (status %#x)", what, status);
    is_u64(lines, s->events + s->drop_records, "%s: simpletrace print prints every record", what);
}

#endif /* ST_TEST_FAULT_TEST_H */
