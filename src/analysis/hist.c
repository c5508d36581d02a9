/* Log-linear duration histograms (hist.h). */
#include "hist.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

unsigned st__hist_bucket(uint64_t v)
{
    if (v < ST__HIST_EXACT)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* 8 .. 63 */
    return ST__HIST_EXACT + (e - 8u) * ST__HIST_SUB + (unsigned)((v >> (e - 7u)) & (ST__HIST_SUB - 1u));
}

uint64_t st__hist_lo(unsigned b)
{
    if (b < ST__HIST_EXACT)
        return b;
    unsigned e = (b - ST__HIST_EXACT) / ST__HIST_SUB + 8u, sub = (b - ST__HIST_EXACT) % ST__HIST_SUB;
    return (uint64_t)(ST__HIST_SUB + sub) << (e - 7u);
}

uint64_t st__hist_hi(unsigned b)
{
    return b + 1u == ST__HIST_BUCKETS ? UINT64_MAX : st__hist_lo(b + 1u) - 1u;
}

static int add_n(struct st__hist *h, unsigned b, uint64_t n)
{
    uint64_t **c = &h->chunk[b / ST__HIST_SUB];
    if (!*c && !(*c = calloc(ST__HIST_SUB, sizeof **c)))
        return -ENOMEM;
    (*c)[b % ST__HIST_SUB] += n;
    return 0;
}

int st__hist_add(struct st__hist *h, uint64_t v)
{
    int ret = add_n(h, st__hist_bucket(v), 1);
    if (ret < 0)
        return ret;
    if (h->count == 0 || v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
    h->count++;
    h->total += v;
    return 0;
}

int st__hist_merge(struct st__hist *dst, const struct st__hist *src)
{
    for (unsigned k = 0; k < ST__HIST_CHUNKS; k++)
        for (unsigned i = 0; src->chunk[k] && i < ST__HIST_SUB; i++) {
            int ret = src->chunk[k][i] ? add_n(dst, k * ST__HIST_SUB + i, src->chunk[k][i]) : 0;
            if (ret < 0)
                return ret;
        }
    if (src->count && (dst->count == 0 || src->min < dst->min))
        dst->min = src->min;
    if (src->count && src->max > dst->max)
        dst->max = src->max;
    dst->count += src->count;
    dst->total += src->total;
    return 0;
}

uint64_t st__hist_quantile(const struct st__hist *h, double q)
{
    if (h->count == 0)
        return 0;
    double r = ceil(q * (double)h->count);
    uint64_t rank = r < 1 ? 1 : r > (double)h->count ? h->count : (uint64_t)r;
    if (rank == 1)
        return h->min;
    if (rank == h->count)
        return h->max;
    uint64_t seen = 0;
    for (unsigned b = 0; b < ST__HIST_BUCKETS; b++) {
        if (!h->chunk[b / ST__HIST_SUB]) {
            b += ST__HIST_SUB - 1u;
            continue;
        }
        seen += st__hist_at(h, b);
        if (seen >= rank) {
            uint64_t lo = st__hist_lo(b), hi = st__hist_hi(b), mid = lo + (hi - lo) / 2;
            return mid < h->min ? h->min : mid > h->max ? h->max : mid;
        }
    }
    return h->max;
}

size_t st__hist_bands(const struct st__hist *h, struct st__hist_band *out)
{
    if (h->count == 0)
        return 0;
    unsigned first = h->min ? 64u - (unsigned)__builtin_clzll(h->min) : 0; /* band k: [2^(k-1), 2^k), band 0: {0} */
    unsigned last = h->max ? 64u - (unsigned)__builtin_clzll(h->max) : 0;
    for (unsigned k = first; k <= last; k++)
        out[k - first] = (struct st__hist_band){.lo = k ? UINT64_C(1) << (k - 1) : 0,
                                                .hi = k == 64 ? UINT64_MAX : UINT64_C(1) << k};
    for (unsigned b = 0; b < ST__HIST_BUCKETS; b++) {
        if (!h->chunk[b / ST__HIST_SUB]) {
            b += ST__HIST_SUB - 1u;
            continue;
        }
        uint64_t n = st__hist_at(h, b), lo = st__hist_lo(b);
        if (n)
            out[(lo ? 64u - (unsigned)__builtin_clzll(lo) : 0) - first].count += n; /* buckets never straddle a power of two */
    }
    return last - first + 1;
}

void st__hist_free(struct st__hist *h)
{
    for (unsigned k = 0; k < ST__HIST_CHUNKS; k++)
        free(h->chunk[k]);
    memset(h, 0, sizeof *h);
}
