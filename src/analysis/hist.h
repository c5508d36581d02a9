/*
 * Durations in a log-linear histogram: exact below 256 ns, then 128
 * buckets per power of two, so a bucket is at most 1/128 of its lower
 * bound wide and its midpoint is within 0.4% of every value in it. That
 * bounds what a percentile read from it may be off by (the man page says
 * so), and memory: at most 7424 counters per histogram, allocated 128 at a
 * time as values reach them, never more with the number of values.
 */
#ifndef ST_ANALYSIS_HIST_H
#define ST_ANALYSIS_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ST__HIST_EXACT 256u                         /* values below are buckets of their own */
#define ST__HIST_SUB 128u                           /* buckets per power of two above */
#define ST__HIST_CHUNKS (ST__HIST_EXACT / ST__HIST_SUB + 56u) /* 2 exact chunks, then 2^8 .. 2^63 */
#define ST__HIST_BUCKETS (ST__HIST_CHUNKS * ST__HIST_SUB)

struct st__hist {
    uint64_t *chunk[ST__HIST_CHUNKS]; /* ST__HIST_SUB counters each, NULL until used */
    uint64_t count, total, min, max;  /* exact */
};

/* Adds value v. 0 or -ENOMEM (v not added). */
int st__hist_add(struct st__hist *h, uint64_t v);

/* Adds every value of src to dst. 0 or -ENOMEM. */
int st__hist_merge(struct st__hist *dst, const struct st__hist *src);

/* The bucket of v, and a bucket's lowest and highest value. */
unsigned st__hist_bucket(uint64_t v);
uint64_t st__hist_lo(unsigned b);
uint64_t st__hist_hi(unsigned b);

/* How many values bucket b holds. */
static inline uint64_t st__hist_at(const struct st__hist *h, unsigned b)
{
    const uint64_t *c = h->chunk[b / ST__HIST_SUB];
    return c ? c[b % ST__HIST_SUB] : 0;
}

/*
 * The q-quantile (0 < q <= 1) by nearest rank: the value of rank
 * ceil(q * count) in ascending order, as its bucket's midpoint clamped to
 * [min, max] (exact below 256 ns and for the minimum and maximum). 0 when
 * empty.
 */
uint64_t st__hist_quantile(const struct st__hist *h, double q);

/* One band of the histogram as shown: values in [lo, hi). */
struct st__hist_band {
    uint64_t lo, hi, count;
};

/*
 * The histogram in power-of-two bands ([1,2), [2,4) ... ns; 0 in the
 * first) from the minimum's band to the maximum's, into out (room for 65):
 * returns how many.
 */
size_t st__hist_bands(const struct st__hist *h, struct st__hist_band *out);

/* Frees the counters (h is empty again). */
void st__hist_free(struct st__hist *h);

#endif /* ST_ANALYSIS_HIST_H */
