/*
 * Finding the pieces of a trace written with rotate=SIZE: FILE, FILE.1,
 * FILE.2, ..., named and parsed as piece_format.h says (the runtime writes
 * them by the same rule). With rotate-keep=N the oldest are removed, FILE
 * itself first, so the lowest piece present is found by listing the
 * directory.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "piece_format.h"
#include "reader_internal.h"

char *st__piece_name(const char *base, uint64_t k)
{
    size_t blen = strlen(base), len = blen + ST_PIECE_SUFFIX_MAX + 1;
    char *s = malloc(len);
    if (s)
        st__piece_format(s, len, base, blen, k);
    return s;
}

ST_API int st_rotated_piece_name(char *buf, size_t len, const char *path, uint64_t k)
{
    if (!path || (!buf && len))
        return -EINVAL;
    size_t blen = strlen(path);
    /* %.*s takes an int: a longer path names nothing that open() takes either. */
    if (blen > INT_MAX - ST_PIECE_SUFFIX_MAX)
        return -ENAMETOOLONG;
    int n = st__piece_format(buf, len, path, blen, k);
    return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

ST_API uint64_t st_rotated_piece_number(const char *name, size_t *base_len)
{
    return name ? st__piece_parse(name, base_len) : 0;
}

bool st__piece_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 || (errno != ENOENT && errno != ENOTDIR);
}

/* N when entry is piece N >= 1 of base (blen bytes), else 0. */
static uint64_t piece_number(const char *entry, const char *base, size_t blen)
{
    size_t elen;
    uint64_t n = st__piece_parse(entry, &elen);
    return n && elen == blen && !memcmp(entry, base, blen) ? n : 0;
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
