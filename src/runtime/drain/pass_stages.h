/*
 * Private to writer.c: a bench build's timing of each inline pass's stages
 * (meson -Dpass_stages=true defines ST__PASS_STAGES); without it every
 * macro here is empty and nothing is compiled in.
 */
#ifndef ST_DRAIN_PASS_STAGES_H
#define ST_DRAIN_PASS_STAGES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * A bench build's instrument (meson -Dpass_stages=true): each inline
 * pass's stages timed with clock_gettime, and at exit one stderr line of
 * their medians and means over the passes (bench/server/run.sh says how
 * to use it).
 * Compiled out otherwise.
 */
enum { PS_LOCKS, PS_HANDLER, PS_RINGS, PS_CONV, PS_MERGE, PS_DROPS, PS_CHECK, PS_WRITE, PS_END, PS_TOTAL, PS_N };
#ifdef ST__PASS_STAGES
#define PS_MAX 8192
static const char *const ps_name[PS_N] = {"locks", "handler-check", "rings", "clock+mappings", "merge", "drops",
                                          "fd-check", "write", "reap", "total"};
static uint64_t ps_at, ps_cur[PS_N], ps_sum[PS_N], ps_bytes;
static uint32_t ps_v[PS_N][PS_MAX];
static size_t ps_n;
static bool ps_on;

static uint64_t ps_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The time since the last mark goes to stage st. */
static void pass_stage(int st)
{
    uint64_t now;

    if (!ps_on)
        return;
    now = ps_now();
    ps_cur[st] += now - ps_at;
    ps_cur[PS_TOTAL] += now - ps_at;
    ps_at = now;
}

static void pass_stages_begin(void)
{
    ps_at = ps_now();
}

static void pass_stages_on(void)
{
    ps_on = true;
}

static void pass_stages_end(void)
{
    if (!ps_on)
        return;
    ps_on = false;
    for (int i = 0; i < PS_N; i++) {
        ps_sum[i] += ps_cur[i];
        if (ps_n < PS_MAX)
            ps_v[i][ps_n] = ps_cur[i] > UINT32_MAX ? UINT32_MAX : (uint32_t)ps_cur[i];
    }
    ps_n++;
    memset(ps_cur, 0, sizeof ps_cur);
}

static int ps_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

__attribute__((destructor)) static void pass_stages_report(void)
{
    size_t n = ps_n < PS_MAX ? ps_n : PS_MAX;

    if (!n)
        return;
    fprintf(stderr, "simpletrace pass stages: %zu inline passes, %.0f bytes written each; us, median/mean:", ps_n,
            (double)ps_bytes / (double)ps_n);
    for (int i = 0; i < PS_N; i++) {
        qsort(ps_v[i], n, sizeof ps_v[i][0], ps_cmp);
        fprintf(stderr, " %s %.2f/%.2f", ps_name[i], ps_v[i][n / 2] / 1e3, (double)ps_sum[i] / 1e3 / (double)ps_n);
    }
    fputc('\n', stderr);
}
#define PASS_STAGE(st) pass_stage(st)
#define PASS_BYTES(n) (ps_bytes += ps_on ? (n) : 0)
#else
#define PASS_STAGE(st) ((void)0)
#define PASS_BYTES(n) ((void)0)
#define pass_stages_begin() ((void)0)
#define pass_stages_on() ((void)0)
#define pass_stages_end() ((void)0)
#endif

#endif
