/*
 * Helpers for the tests of traces in pieces (rotate=): v4 pieces built
 * byte by byte, written as FILE, FILE.1, ..., and the one-file equivalent
 * (the first piece, then every later piece without its header: mapping
 * records may come anywhere in a v4 file, so that file holds the same
 * records with the same IDs in effect).
 *
 * The pieces: each maps its own IDs (odd pieces swap ev_a and ev_s, so a
 * reader keeping the IDs of the piece before would misname records), ten
 * records of pids 100/101 each, a dropped record in piece 2, a timestamp
 * going back in piece 1 and ev_late (mapped from piece 1 on) once in each
 * later piece.
 */
#ifndef ST_TEST_ROT_UTIL_H
#define ST_TEST_ROT_UTIL_H

#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROT_N 4           /* pieces built */
#define ROT_RECS 10       /* event or dropped records per piece */
#define ROT_TS0 1000000u  /* timestamp of the first record */

static const char rot_events_text[] =
    "ev_a(int seq) \"seq %d\"\n"
    "ev_s(int seq, const char *s) \"seq %d s %s\"\n"
    "ev_late(uint64_t x) \"x %\" PRIu64\n";

/* A trace being built; swap: in the other byte order. */
struct tbuf {
    uint8_t *d;
    size_t n, cap;
    bool swap;
    size_t rec_off[ROT_RECS]; /* offsets of the event/dropped records, in order */
    size_t nrecs;
};

static inline void tb_put(struct tbuf *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 256;
        b->d = realloc(b->d, b->cap);
        if (!b->d)
            abort();
    }
    memcpy(b->d + b->n, p, n);
    b->n += n;
}

static inline void tb_u64(struct tbuf *b, uint64_t v)
{
    if (b->swap)
        v = __builtin_bswap64(v);
    tb_put(b, &v, 8);
}

static inline void tb_u32(struct tbuf *b, uint32_t v)
{
    if (b->swap)
        v = __builtin_bswap32(v);
    tb_put(b, &v, 4);
}

static inline void tb_header(struct tbuf *b)
{
    tb_u64(b, UINT64_C(0xffffffffffffffff));
    tb_u64(b, UINT64_C(0xf2b177cb0aa429b4));
    tb_u64(b, 4);
}

static inline void tb_mapping(struct tbuf *b, uint64_t id, const char *name)
{
    tb_u64(b, 0);
    tb_u64(b, id);
    tb_u32(b, (uint32_t)strlen(name));
    tb_put(b, name, strlen(name));
}

/* An event record with one integer argument and, if s, a string after it. */
static inline void tb_event(struct tbuf *b, uint64_t id, uint64_t ts, uint32_t pid, uint64_t v, const char *s)
{
    uint32_t plen = 8 + (s ? 4 + (uint32_t)strlen(s) : 0);
    if (b->nrecs < ROT_RECS)
        b->rec_off[b->nrecs++] = b->n;
    tb_u64(b, 1);
    tb_u64(b, id);
    tb_u64(b, ts);
    tb_u32(b, 24 + plen);
    tb_u32(b, pid);
    tb_u64(b, v);
    if (s) {
        tb_u32(b, (uint32_t)strlen(s));
        tb_put(b, s, strlen(s));
    }
}

/* IDs of piece k: odd pieces swap ev_a and ev_s. */
static inline uint64_t rot_id_a(unsigned k) { return k % 2 ? 1 : 0; }
static inline uint64_t rot_id_s(unsigned k) { return k % 2 ? 0 : 1; }

/* Builds piece k (swap: in the other byte order) into *b. */
static inline void rot_build_piece(struct tbuf *b, unsigned k, bool swap)
{
    memset(b, 0, sizeof *b);
    b->swap = swap;
    tb_header(b);
    if (k % 2) {
        tb_mapping(b, 0, "ev_s");
        tb_mapping(b, 1, "ev_a");
    } else {
        tb_mapping(b, 0, "ev_a");
        tb_mapping(b, 1, "ev_s");
    }
    if (k >= 1)
        tb_mapping(b, 2, "ev_late");
    for (unsigned i = 0; i < ROT_RECS; i++) {
        uint64_t seq = 10 * k + i;
        uint64_t ts = ROT_TS0 + seq * 1500 - (k == 1 && i == 5 ? 3000 : 0);
        uint32_t pid = 100 + (uint32_t)(seq % 2);
        char s[32];
        snprintf(s, sizeof s, "s%llu", (unsigned long long)seq);
        if (k == 2 && i == 4) {
            b->rec_off[b->nrecs++] = b->n;
            tb_u64(b, 1);
            tb_u64(b, UINT64_C(0xfffffffffffffffe));
            tb_u64(b, ts);
            tb_u32(b, 32);
            tb_u32(b, pid);
            tb_u64(b, 7);
        } else if (k >= 1 && i == 7) {
            tb_event(b, 2, ts, pid, seq * 1000, NULL);
        } else if (seq % 3 == 0) {
            tb_event(b, rot_id_s(k), ts, pid, seq, s);
        } else {
            tb_event(b, rot_id_a(k), ts, pid, seq, NULL);
        }
    }
}

static inline void rot_build(struct tbuf p[ROT_N])
{
    for (unsigned k = 0; k < ROT_N; k++)
        rot_build_piece(&p[k], k, false);
}

static inline void rot_free(struct tbuf p[ROT_N])
{
    for (unsigned k = 0; k < ROT_N; k++)
        free(p[k].d);
}

/* Path of piece k of base: base itself for 0, else base.k. */
static inline void rot_piece_path(char *buf, size_t len, const char *base, unsigned k)
{
    int n = k ? snprintf(buf, len, "%s.%u", base, k) : snprintf(buf, len, "%s", base);
    if (n < 0 || (size_t)n >= len)
        abort(); /* a test setup problem */
}

static inline bool rot_write_file(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    bool good = f && fwrite(d, 1, n, f) == n;
    return f && !fclose(f) && good;
}

/* Writes pieces [from, to) as base's pieces with their own numbers. */
static inline bool rot_write(const char *base, const struct tbuf *p, unsigned from, unsigned to)
{
    bool good = true;
    for (unsigned k = from; k < to; k++) {
        char path[4096];
        rot_piece_path(path, sizeof path, base, k);
        good &= rot_write_file(path, p[k].d, p[k].n);
    }
    return good;
}

/* Writes the one-file equivalent of pieces [from, to) at path. */
static inline bool rot_write_concat(const char *path, const struct tbuf *p, unsigned from, unsigned to)
{
    FILE *f = fopen(path, "wb");
    bool good = f != NULL;
    for (unsigned k = from; k < to && f; k++)
        good &= fwrite(p[k].d + (k == from ? 0 : 24), 1, p[k].n - (k == from ? 0 : 24), f) ==
                p[k].n - (k == from ? 0 : 24);
    return f && !fclose(f) && good;
}

/* A new empty directory under TMPDIR into buf. */
static inline bool rot_tmpdir(char *buf, size_t len, const char *tag)
{
    const char *dir = getenv("TMPDIR");
    snprintf(buf, len, "%s/st-rot-%s-XXXXXX", dir && *dir ? dir : "/tmp", tag);
    return mkdtemp(buf) != NULL;
}

static inline int rot__rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* Removes a directory tree. */
static inline void rot_rmtree(const char *dir)
{
    nftw(dir, rot__rm, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
