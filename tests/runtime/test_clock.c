/*
 * Timestamps in the file are CLOCK_MONOTONIC ns: each record's falls
 * between clock_gettime() readings taken around the trace call (exactly
 * with clock=monotonic, within 50 us with the TSC, whose conversion is
 * linear between anchors), across several writer passes, and never
 * decreases within the thread. Runs once per clock mode (re-executing
 * itself with SIMPLETRACE=clock=monotonic).
 */
#include <time.h>

#include "rt_test.h"

#define N 2000

TEST_EVENT(ev_clk, "clk_ev", "int seq", "seq %d", "i", 1, 0);
TEST_GROUP(grp_clk, "clk", &ev_clk)

static struct st_group *const groups[] = {&grp_clk, NULL};
static uint64_t before[N], after[N];

static uint64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Traces, checks; returns the number of failed checks (child mode). */
static int run(const char *mode, uint64_t tol)
{
    struct test_trace t;
    uint64_t last = 0, worst = 0;
    size_t k = 0;
    int fails = 0, in_range = 1;

    for (int i = 0; i < N; i++) {
        before[i] = mono();
        test_trace_i(&ev_clk, (uint64_t)i);
        after[i] = mono();
        if (i % 200 == 199) {
            st_trace_file_flush();
            usleep(3000); /* new anchors in between */
        }
    }
    st_trace_file_flush();
    if (!ok(test_collect(test_path(mode), groups, &t) == 0, "%s: file decodes", mode))
        return 1;
    for (size_t i = 0; i < t.n; i++) {
        const struct test_rec *r = &t.r[i];
        uint64_t lo, hi;
        if (r->mapping)
            continue;
        k = (size_t)r->u[0];
        lo = before[k] - tol;
        hi = after[k] + tol;
        if (r->ts < before[k] || r->ts > after[k]) {
            uint64_t off = r->ts < before[k] ? before[k] - r->ts : r->ts - after[k];
            if (off > worst)
                worst = off;
        }
        if (r->ts < lo || r->ts > hi)
            in_range = 0;
        if (r->ts < last)
            fails++;
        last = r->ts;
    }
    fails += !ok(t.sum.events == N, "%s: %d records", mode, N);
    fails += !ok(in_range, "%s: every timestamp within its clock_gettime bracket +-%llu ns (worst outside: %llu ns)", mode,
                 (unsigned long long)tol, (unsigned long long)worst);
    fails += !ok(last != 0, "%s: timestamps never decrease", mode);
    test_trace_free(&t);
    return fails;
}

int main(int argc, char **argv)
{
    char cfg[1200];
    int status;

    if (argc > 2 && !strcmp(argv[1], "child")) {
        /* Re-executed with SIMPLETRACE=clock=monotonic: our TAP lines go to
         * stderr, which the parent shows as diagnostics. */
        dup2(2, 1);
        snprintf(test_dir, sizeof test_dir, "%s", argv[2]);
        snprintf(cfg, sizeof cfg, "clk_ev,file=%s", test_path("monotonic"));
        st_configure(cfg, NULL, 0);
        return run("monotonic", 0) ? 1 : 0;
    }
    test_tmpdir();
    snprintf(cfg, sizeof cfg, "clk_ev,file=%s", test_path("default"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure");
    run("default", 50000);
    st_trace_file_set_enabled(false);
    {
        char *args[] = {argv[0], "child", test_dir, NULL};
        const char *env[] = {"SIMPLETRACE=clock=monotonic", NULL};
        char *text, *line, *save = NULL;
        fflush(stdout);
        status = test_run_self(args, env, test_path("child.txt"), NULL);
        text = tu_slurp(test_path("child.txt"), NULL);
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            diag("child: %s", line);
        free(text);
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "clock=monotonic run passed");
    }
    return done_testing();
}
