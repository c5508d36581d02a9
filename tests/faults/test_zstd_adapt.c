/*
 * compress=zstd adapts its level to the writer's backlog (zwrite.h,
 * st__zw_adapt_level): behind a slow level (zstd:19, a few MB/s) the
 * writer compresses at faster ones while its buffers fill, so compressing
 * is not what drops records; zstd:19:fixed never does.
 *
 *   burst: one thread traces 300000 events flat out into a 16 MiB buffer
 *          (they fit: nothing can drop), far faster than level 19 goes.
 *          Adaptive: frames at faster levels (stats.zstd_fast_frames > 0),
 *          and zstd -d gives, record for record, the events of the same
 *          run without compression (thread, sequence; timestamps aside).
 *          Fixed (fewer events: level 19 is slow): none at a faster level.
 *   starve: one thread traces flat out for a second into a 256 KiB
 *          buffer. Fixed drops most records; adaptive drops fewer, and
 *          both count every drop exactly (file and stats).
 *
 * Each run is a child process (re-executed), so each configures its own
 * file from the start and ends with the real exit pass.
 */
#include <pthread.h>
#include <time.h>

#include "fault_test.h"

static uint64_t produced;

/* What the child tells: its counters after the final flush. */
struct child_result {
    uint64_t produced, written, dropped, frames, fast_frames;
};

/* The child: traces into path as cfg says (events > 0: that many; else ms of flat out), then reports. */
static int child(const char *cfg_tail, const char *path, const char *count_path, long events, long ms)
{
    struct st_stats st = {.struct_size = sizeof st};
    char cfg[1400], text[200];
    uint64_t seq = 0;

    snprintf(cfg, sizeof cfg, "ft_*,writer=thread,%s,file=%s", cfg_tail, path);
    if (st_configure(cfg, NULL, 0) != 0)
        return 2;
    if (events > 0) {
        for (long i = 0; i < events; i++)
            ft_trace(0, seq++, &produced);
    } else {
        uint64_t end = ft_now_ms() + (uint64_t)ms;
        while (ft_now_ms() < end)
            for (int i = 0; i < 1000; i++)
                ft_trace(0, seq++, &produced);
    }
    st_trace_file_flush();
    st_stats_get(&st);
    snprintf(text, sizeof text, "%llu %llu %llu %llu %llu\n", (unsigned long long)produced,
             (unsigned long long)st.written, (unsigned long long)st.dropped, (unsigned long long)st.zstd_frames,
             (unsigned long long)st.zstd_fast_frames);
    test_write_file(count_path, text);
    return 0;
}

/* One child run: its trace (decompressed into a plain v4 file when compressed) summed into *s. */
static void run(const char *self, const char *name, const char *cfg_tail, long events, long ms, bool z,
                struct child_result *res, struct ft_sum *s)
{
    char file[64], n1[32], n2[32];
    const char *path, *dec, *count_path, *errpath;

    snprintf(file, sizeof file, "%s.trace", name);
    path = test_path(file);
    snprintf(file, sizeof file, "%s.dec", name);
    dec = test_path(file);
    count_path = test_path("counts.txt");
    errpath = test_path("child-stderr.txt");
    snprintf(n1, sizeof n1, "%ld", events);
    snprintf(n2, sizeof n2, "%ld", ms);
    char *cargv[] = {(char *)self, "child", (char *)cfg_tail, (char *)path, (char *)count_path, n1, n2, NULL};
    const char *env[] = {"SIMPLETRACE=", NULL};

    memset(res, 0, sizeof *res);
    ft_sum_init(s);
    is_int(test_run_self(cargv, env, errpath, NULL), 0, "%s: child traced with %s", name, cfg_tail);
    char *text = tu_slurp(count_path, NULL);
    unsigned long long v[5] = {0};
    ok(text && sscanf(text, "%llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4]) == 5,
       "%s: child reported its counters", name);
    free(text);
    *res = (struct child_result){v[0], v[1], v[2], v[3], v[4]};
    if (z) {
        is_int(tu_unzstd(path, dec), 0, "%s: zstd -d reads the file", name);
        path = dec;
    }
    ft_sum_file(s, path, 0);
    ok(s->decoded && s->order, "%s: the strict decoder reads it whole, per-thread sequences increase", name);
    if (!ok(res->produced == s->events + s->drops && res->written == s->events && res->dropped == s->drops,
            "%s: produced = event records in the file + dropped counts, stats agree", name))
        diag("%s: produced %llu written %llu dropped %llu; file: events %llu dropped counts %llu", name, v[0], v[1],
             v[2], (unsigned long long)s->events, (unsigned long long)s->drops);
    diag("%s: produced %llu, dropped %llu, frames %llu (%llu at a faster level)", name, v[0], v[2], v[3], v[4]);
}

int main(int argc, char **argv)
{
    struct child_result plain, adapt, fixed;
    struct ft_sum sp, sa, sf;

    if (argc > 6 && !strcmp(argv[1], "child"))
        return child(argv[2], argv[3], argv[4], atol(argv[5]), atol(argv[6]));
    test_tmpdir();

    /* burst: everything fits the buffer. */
    run(argv[0], "burst-plain", "bufsize=16M", 300000, 0, false, &plain, &sp);
    run(argv[0], "burst-adapt", "bufsize=16M,compress=zstd:19", 300000, 0, true, &adapt, &sa);
    is_u64(plain.dropped, 0, "burst: the plain run dropped nothing (the buffer holds it all)");
    is_u64(adapt.dropped, 0, "burst: the adaptive run dropped nothing");
    ok(adapt.fast_frames > 0 && adapt.fast_frames <= adapt.frames,
       "burst: the writer fell behind level 19 and compressed frames faster (%llu of %llu)",
       (unsigned long long)adapt.fast_frames, (unsigned long long)adapt.frames);
    ok(sa.events == 300000 && sp.events == 300000 && sa.per_thread[0] == sp.per_thread[0] &&
           sa.last_seq[0] == sp.last_seq[0] && sa.last_seq[0] == 300000,
       "burst: zstd -d gives the plain run's events, every sequence number in order");
    run(argv[0], "burst-fixed", "bufsize=16M,compress=zstd:19:fixed", 20000, 0, true, &fixed, &sf);
    ok(fixed.frames > 0 && fixed.fast_frames == 0, "burst: zstd:19:fixed compresses every frame at 19 (%llu frames)",
       (unsigned long long)fixed.frames);

    /* starve: a small buffer, flat out. */
    run(argv[0], "starve-fixed", "bufsize=256K,compress=zstd:19:fixed", 0, 1000, true, &fixed, &sf);
    run(argv[0], "starve-adapt", "bufsize=256K,compress=zstd:19", 0, 1000, true, &adapt, &sa);
    ok(fixed.dropped > 0, "starve: level 19 fixed cannot keep up: records dropped");
    double fl = fixed.produced ? (double)fixed.dropped / (double)fixed.produced : 0;
    double al = adapt.produced ? (double)adapt.dropped / (double)adapt.produced : 1;
    ok(al < fl, "starve: adapting drops a smaller share (%.1f%%) than fixed (%.1f%%)", 100 * al, 100 * fl);
    ok(adapt.fast_frames > 0, "starve: the adaptive writer compressed frames faster (%llu of %llu)",
       (unsigned long long)adapt.fast_frames, (unsigned long long)adapt.frames);
    return done_testing();
}
