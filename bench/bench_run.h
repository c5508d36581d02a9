/*
 * What the benchmarks that time the command share: the monotonic clock in
 * ns, and one run of a child with its wall and CPU time and peak memory
 * (bench/export, bench/reader).
 */
#ifndef ST_BENCH_RUN_H
#define ST_BENCH_RUN_H

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One child run, stdout to /dev/null: wall and CPU seconds, max RSS in KiB. Returns the exit status (-1: none). */
static inline int timed_run(char *const argv[], double *secs, double *cpu, long *rss_kb)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    uint64_t t0 = now_ns();
    int ret = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (ret != 0)
        return -1;
    int st;
    struct rusage ru;
    while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
        ;
    *secs = (double)(now_ns() - t0) / 1e9;
    *cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
    *rss_kb = ru.ru_maxrss;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif /* ST_BENCH_RUN_H */
