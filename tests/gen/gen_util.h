/*
 * Helpers for the generator tests: run a command in a directory with its
 * output captured, read and write files, make and remove scratch
 * directories. Header-only: each test is one program.
 */
#ifndef ST_TEST_GEN_UTIL_H
#define ST_TEST_GEN_UTIL_H

#include "test_util.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>


/* Writes len bytes to path; 0 or -1. */
static inline int gu_write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int rc = fwrite(text, 1, len, f) == len ? 0 : -1;
    return fclose(f) == 0 ? rc : -1;
}

static inline int gu_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Number of entries (besides . and ..) in dir, or -1. */
static inline int gu_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    return n;
}

static inline int gu_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes a directory tree. */
static inline void gu_rm_rf(const char *dir)
{
    nftw(dir, gu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Makes a scratch directory; returns its malloc'ed path or NULL. */
static inline char *gu_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/st-gen-test-XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(tmpl) ? strdup(tmpl) : NULL;
}

/* Runs argv (NULL-terminated) in directory cwd (NULL: here); captures stdout and stderr. 0 or -1. */
static inline int gu_run(char *const *argv, const char *cwd, struct tu_run *r)
{
    return tu_run(argv, cwd, NULL, false, r);
}

/* Absolute form of path (relative to the current directory); malloc'ed. */
static inline char *gu_abspath(const char *path)
{
    char *abs = realpath(path, NULL);
    return abs ? abs : strdup(path);
}

#endif
