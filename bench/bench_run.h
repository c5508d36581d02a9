/*
 * What the benchmarks that time the command share: the monotonic clock in
 * ns, one run of a child with its wall and CPU time and peak memory, and
 * the size and removal of an output that may be a directory (bench/export,
 * bench/reader).
 */
#ifndef ST_BENCH_RUN_H
#define ST_BENCH_RUN_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* Bytes under path (a file, or a directory of files, walked). */
static inline uint64_t size_of(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return (uint64_t)st.st_size;
    uint64_t total = 0;
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char sub[4400];
        if (e->d_name[0] != '.' && snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < (int)sizeof sub)
            total += size_of(sub);
    }
    if (d)
        closedir(d);
    return total;
}

/* Removes path: a file, or a directory with what it holds. */
static inline void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char sub[4400];
        if (e->d_name[0] != '.' && snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < (int)sizeof sub)
            remove_tree(sub);
    }
    if (d) {
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

#endif /* ST_BENCH_RUN_H */
