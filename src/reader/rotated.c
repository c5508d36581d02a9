/*
 * Finding the pieces of a trace written with rotate=SIZE: FILE, FILE.1,
 * FILE.2, ... as the runtime names them (src/runtime/drain/writer.c). With
 * rotate-keep=N the oldest are removed, FILE itself first, so the lowest
 * piece present is found by listing the directory.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reader_internal.h"

char *st__piece_name(const char *base, uint64_t k)
{
    size_t len = strlen(base) + 22; /* '.', 20 digits, NUL */
    char *s = malloc(len);
    if (s && k)
        snprintf(s, len, "%s.%llu", base, (unsigned long long)k);
    else if (s)
        snprintf(s, len, "%s", base);
    return s;
}

bool st__piece_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 || (errno != ENOENT && errno != ENOTDIR);
}

/* N when entry is "base.N" (N >= 1, decimal without leading zeros, fits 64 bits), else 0. */
static uint64_t piece_number(const char *entry, const char *base, size_t blen)
{
    if (strncmp(entry, base, blen) != 0 || entry[blen] != '.')
        return 0;
    const char *d = entry + blen + 1;
    if (*d < '1' || *d > '9')
        return 0;
    uint64_t n = 0;
    for (; *d; d++) {
        if (*d < '0' || *d > '9' || n > (UINT64_MAX - 9) / 10)
            return 0;
        n = n * 10 + (uint64_t)(*d - '0');
    }
    return n;
}

/* The smallest N of a file path.N, from path's directory: 0 with *first set, -ENOENT or -errno. */
static int lowest_piece(const char *path, uint64_t *first)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return -ENOMEM;
    DIR *d = opendir(dir);
    int saved = errno;
    free(dir);
    if (!d)
        return -saved;
    size_t blen = strlen(base);
    uint64_t best = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        uint64_t n = piece_number(de->d_name, base, blen);
        if (n && (!best || n < best))
            best = n;
    }
    closedir(d);
    if (!best)
        return -ENOENT;
    *first = best;
    return 0;
}

ST_API int st_rotated_find(const char *path, uint64_t *first, uint64_t *count)
{
    if (!strcmp(path, "-"))
        return -EINVAL;
    uint64_t k = 0, n = 1;
    if (!st__piece_exists(path)) {
        int ret = lowest_piece(path, &k);
        if (ret < 0)
            return ret;
    }
    /* Up to the first missing number: rotation never skips one. */
    for (;; n++) {
        char *name = st__piece_name(path, k + n);
        if (!name)
            return -ENOMEM;
        bool there = st__piece_exists(name);
        free(name);
        if (!there)
            break;
    }
    *first = k;
    *count = n;
    return 0;
}
