/*
 * The names of a trace's pieces (rotate=SIZE): one definition for the
 * runtime that writes them (src/runtime/drain/) and the reader that finds
 * them (src/reader/rotated.c); the command reaches it through the reader's
 * st_rotated_piece_name() and st_rotated_piece_number().
 *
 * A trace FILE written in pieces is FILE, FILE.1, FILE.2, ...: piece 0 is
 * FILE itself, piece k >= 1 is FILE "." k, k in decimal without leading
 * zeros (printf's %llu). Rotation goes from k to k + 1 and never skips a
 * number; rotate-keep=N removes the oldest, FILE first, so the pieces
 * present are FILE.first, FILE.first+1, ... up to the first missing number.
 *
 * Parsing is the exact inverse of naming, one rule for every reader: a name
 * is piece k of BASE when it is BASE "." k with k as the writer writes it.
 * So FILE.0 (piece 0 is FILE itself), FILE.007, FILE.+7, FILE. and numbers
 * beyond 2^64 - 1 are no pieces: the writer never makes them. The base ends
 * at the last '.' (FILE.3.1 is piece 1 of FILE.3) and is never empty.
 */
#ifndef ST_FORMAT_PIECE_FORMAT_H
#define ST_FORMAT_PIECE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The most a piece's name adds to its base's: '.' and 20 digits. */
#define ST_PIECE_SUFFIX_MAX 21

/*
 * Writes the name of piece k of base (its first base_len bytes) into buf
 * (len bytes): the base for 0, else base.k; returns what snprintf returns
 * (>= len: it did not fit).
 */
static inline int st__piece_format(char *buf, size_t len, const char *base, size_t base_len, uint64_t k)
{
    if (k)
        return snprintf(buf, len, "%.*s.%llu", (int)base_len, base, (unsigned long long)k);
    return snprintf(buf, len, "%.*s", (int)base_len, base);
}

/* k >= 1 when name is piece k of some base (its length into *base_len, if not NULL), else 0. */
static inline uint64_t st__piece_parse(const char *name, size_t *base_len)
{
    const char *dot = strrchr(name, '.');
    uint64_t k = 0;

    /* Leading zeros (FILE.0 among them) are never written: no piece. */
    if (!dot || dot == name || dot[1] < '1' || dot[1] > '9')
        return 0;
    for (const char *d = dot + 1; *d; d++) {
        if (*d < '0' || *d > '9' || k > (UINT64_MAX - (uint64_t)(*d - '0')) / 10)
            return 0;
        k = k * 10 + (uint64_t)(*d - '0');
    }
    if (base_len)
        *base_len = (size_t)(dot - name);
    return k;
}

#endif /* ST_FORMAT_PIECE_FORMAT_H */
