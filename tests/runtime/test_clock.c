/*
 * Timestamps in the file are CLOCK_MONOTONIC ns: each record's falls
 * between clock_gettime() readings taken around the trace call (exactly
 * with clock=monotonic, within 50 us with the CPU's counter, TSC or
 * CNTVCT_EL0, whose conversion is linear between anchors), across several
 * writer passes, and never decreases within the thread. Runs in the
 * default mode, then re-executes itself with SIMPLETRACE=clock=monotonic
 * and clock=counter (the counter forced where clock.h allows it: on
 * aarch64 under qemu-user too, whose host kernel's clocksource is not the
 * generic timer).
 */
#include <errno.h>
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

/* The child of one mode: our TAP lines go to stderr, which the parent shows as diagnostics. */
static int child(const char *dir, const char *mode)
{
    char cfg[1200], err[256] = "";
    int ret;

    dup2(2, 1);
    snprintf(test_dir, sizeof test_dir, "%s", dir);
    snprintf(cfg, sizeof cfg, "clock=%s", mode);
    ret = st_configure(cfg, err, sizeof err); /* what SIMPLETRACE said already; an error tells why not */
    if (ret == -ENOTSUP) {
        printf("ok 1 # SKIP %s\n", err);
        return 0;
    }
    snprintf(cfg, sizeof cfg, "clk_ev,file=%s", test_path(mode));
    st_configure(cfg, NULL, 0);
    return run(mode, strcmp(mode, "monotonic") ? 50000 : 0) || ret ? 1 : 0;
}

int main(int argc, char **argv)
{
    static const char *const modes[] = {"monotonic", "counter"};
    char cfg[1200];
    int status;

    if (argc > 3 && !strcmp(argv[1], "child"))
        return child(argv[2], argv[3]);
    test_tmpdir();
    snprintf(cfg, sizeof cfg, "clk_ev,file=%s", test_path("default"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure");
    run("default", 50000);
    st_trace_file_set_enabled(false);
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        char *args[] = {argv[0], "child", test_dir, (char *)modes[m], NULL};
        char env_clock[64];
        const char *env[] = {env_clock, NULL};
        char *text, *line, *save = NULL, out[64];
        snprintf(env_clock, sizeof env_clock, "SIMPLETRACE=clock=%s", modes[m]);
        snprintf(out, sizeof out, "child-%s.txt", modes[m]);
        fflush(stdout);
        status = test_run_self(args, env, test_path(out), NULL);
        text = tu_slurp(test_path(out), NULL);
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            diag("child: %s", line);
        free(text);
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "clock=%s run passed", modes[m]);
    }
    return done_testing();
}
