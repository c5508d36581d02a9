/*
 * src/analysis/hist.c against sorted arrays: for random values over many
 * magnitudes (exact below 256 ns, 1 ns to about 2^62 ns, ties, 0 and
 * values near 2^64), every quantile by nearest rank (rank ceil(q * n))
 * within 0.4% of the exact value (what simpletrace-latency(1) promises),
 * exact below 256 ns and at ranks 1 and n; count, min, max and total
 * exact; each bucket's bounds consecutive, holding what maps to it, and
 * at most 1/128 of its lower bound wide; a merge equal to adding both
 * sets; the power-of-two bands holding exactly the values in them.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>

#include "hist.h"
#include "tap.h"

static uint64_t rng = 0x5eed;

static uint64_t next(void) /* splitmix64 */
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A value of about 2^e for a uniform e in [0, max_e]: every magnitude equally often. */
static uint64_t log_uniform(unsigned max_e)
{
    unsigned e = (unsigned)(next() % (max_e + 1));
    uint64_t v = (UINT64_C(1) << e) | (next() & ((UINT64_C(1) << e) - 1));
    return v;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The value of rank ceil(k / 1000 * n), in integers. */
static uint64_t nearest_rank(const uint64_t *sorted, size_t n, unsigned k)
{
    uint64_t rank = ((uint64_t)k * n + 999) / 1000;
    return sorted[(rank ? rank : 1) - 1];
}

/* |got - want| <= 0.4% of want (exact below 256). */
static int close_enough(uint64_t got, uint64_t want)
{
    if (want < ST__HIST_EXACT)
        return got == want;
    uint64_t diff = got > want ? got - want : want - got;
    return (long double)diff <= 0.004L * (long double)want;
}

/* Every quantile k/1000 (k = 1..1000) and the reported ones, against the sorted values. */
static void check_quantiles(const char *what, const struct st__hist *h, uint64_t *v, size_t n)
{
    static const unsigned reported[] = {500, 900, 990, 999};
    unsigned bad = 0;
    uint64_t worst_got = 0, worst_want = 0;
    for (unsigned k = 1; k <= 1000; k++) {
        uint64_t want = nearest_rank(v, n, k), got = st__hist_quantile(h, k / 1000.0);
        if (!close_enough(got, want) && bad++ == 0) {
            worst_got = got;
            worst_want = want;
        }
    }
    if (!ok(bad == 0, "%s: every quantile k/1000 within 0.4%% of the nearest-rank value", what))
        printf("#   %u wrong, first: got %" PRIu64 ", want %" PRIu64 "\n", bad, worst_got, worst_want);
    for (unsigned i = 0; i < 4; i++) {
        uint64_t want = nearest_rank(v, n, reported[i]), got = st__hist_quantile(h, reported[i] / 1000.0);
        if (!ok(close_enough(got, want), "%s: q=0.%03u", what, reported[i]))
            printf("#   got %" PRIu64 ", want %" PRIu64 "\n", got, want);
    }
    is_u64(st__hist_quantile(h, 1e-12), v[0], "%s: the lowest rank is the minimum, exactly", what);
    is_u64(st__hist_quantile(h, 1.0), v[n - 1], "%s: rank n is the maximum, exactly", what);
}

static void check_exact(const char *what, const struct st__hist *h, const uint64_t *v, size_t n, int total_fits)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += v[i];
    is_u64(h->count, n, "%s: count", what);
    is_u64(h->min, v[0], "%s: min exact", what);
    is_u64(h->max, v[n - 1], "%s: max exact", what);
    if (total_fits)
        is_u64(h->total, total, "%s: total exact", what);
}

/* The bands: consecutive powers of two from the minimum's to the maximum's, each holding its values. */
static void check_bands(const char *what, const struct st__hist *h, const uint64_t *v, size_t n)
{
    struct st__hist_band band[65];
    size_t nb = st__hist_bands(h, band);
    uint64_t sum = 0;
    int shape = nb > 0, counts = 1;
    size_t j = 0;
    for (size_t i = 0; i < nb; i++) {
        uint64_t want_hi = band[i].lo == 0 ? 1 : band[i].lo == UINT64_C(1) << 63 ? UINT64_MAX : band[i].lo * 2;
        if (band[i].hi != want_hi || (i && band[i].lo != band[i - 1].hi) || (band[i].lo & (band[i].lo - 1)))
            shape = 0;
        uint64_t inside = 0;
        /* v is sorted: the values of band i follow those of band i-1. The last band also holds 2^64-1. */
        while (j < n && (v[j] < band[i].hi || (band[i].hi == UINT64_MAX)) && v[j] >= band[i].lo) {
            inside++;
            j++;
        }
        if (inside != band[i].count)
            counts = 0;
        sum += band[i].count;
    }
    ok(shape, "%s: %zu bands of consecutive powers of two", what, nb);
    ok(nb && band[0].lo <= v[0] && (v[0] < band[0].hi || band[0].hi == UINT64_MAX) && band[nb - 1].lo <= v[n - 1],
       "%s: from the minimum's band to the maximum's", what);
    ok(counts && j == n, "%s: each band holds exactly the values in it", what);
    is_u64(sum, n, "%s: the bands sum to the count", what);
}

static void check_set(const char *what, uint64_t *v, size_t n, int total_fits)
{
    struct st__hist h = {0}, a = {0}, b = {0};
    int added = 1;
    for (size_t i = 0; i < n; i++)
        added &= st__hist_add(&h, v[i]) == 0 && st__hist_add(i % 3 ? &a : &b, v[i]) == 0;
    ok(added, "%s: %zu values added", what, n);
    qsort(v, n, sizeof *v, cmp_u64);
    check_exact(what, &h, v, n, total_fits);
    check_quantiles(what, &h, v, n);
    check_bands(what, &h, v, n);

    /* A merge of two parts is the histogram of all of them. */
    ok(st__hist_merge(&a, &b) == 0, "%s: merge", what);
    int same = 1;
    for (unsigned k = 0; k < ST__HIST_BUCKETS; k++)
        same &= st__hist_at(&a, k) == st__hist_at(&h, k);
    ok(same && a.count == h.count && a.min == h.min && a.max == h.max && a.total == h.total,
       "%s: merging two parts equals adding both (every bucket, count, min, max, total)", what);
    int qsame = 1;
    for (unsigned k = 1; k <= 1000; k++)
        qsame &= st__hist_quantile(&a, k / 1000.0) == st__hist_quantile(&h, k / 1000.0);
    ok(qsame, "%s: the merged histogram's quantiles are the whole's", what);
    struct st__hist e = {0};
    ok(st__hist_merge(&e, &h) == 0 && e.count == h.count && e.min == h.min && e.max == h.max && e.total == h.total &&
           st__hist_quantile(&e, 0.5) == st__hist_quantile(&h, 0.5),
       "%s: merged into an empty histogram", what);
    st__hist_free(&e);
    ok(st__hist_merge(&a, &e) == 0 && a.count == h.count && a.min == h.min && a.max == h.max,
       "%s: an empty histogram merged changes nothing", what);
    st__hist_free(&h);
    st__hist_free(&a);
    st__hist_free(&b);
    ok(h.count == 0 && h.chunk[0] == NULL, "%s: freed histograms are empty", what);
}

/* Every bucket: bounds consecutive, values map back to it, width at most 1/128 of its lower bound. */
static void check_buckets(void)
{
    int consecutive = 1, maps = 1, narrow = 1;
    for (unsigned b = 0; b < ST__HIST_BUCKETS; b++) {
        uint64_t lo = st__hist_lo(b), hi = st__hist_hi(b);
        if (lo > hi || (b + 1 < ST__HIST_BUCKETS && st__hist_lo(b + 1) != hi + 1))
            consecutive = 0;
        if (st__hist_bucket(lo) != b || st__hist_bucket(hi) != b || st__hist_bucket(lo + (hi - lo) / 2) != b)
            maps = 0;
        if (b < ST__HIST_EXACT ? hi != lo : (hi - lo + 1) > lo / ST__HIST_SUB)
            narrow = 0;
    }
    is_u64(st__hist_lo(0), 0, "bucket 0 starts at 0");
    is_u64(st__hist_hi(ST__HIST_BUCKETS - 1), UINT64_MAX, "the last bucket ends at 2^64-1");
    ok(consecutive, "each bucket starts where the one before ended");
    ok(maps, "each bucket's lowest, middle and highest values map to it");
    ok(narrow, "buckets exact below 256, then at most 1/128 of their lower bound wide");
    int in = 1, mid = 1;
    for (unsigned i = 0; i < 1000000; i++) {
        uint64_t v = i % 2 ? log_uniform(63) : next();
        unsigned b = st__hist_bucket(v);
        uint64_t lo = st__hist_lo(b), hi = st__hist_hi(b), m = lo + (hi - lo) / 2;
        in &= lo <= v && v <= hi;
        mid &= (long double)(m > v ? m - v : v - m) <= (long double)v / 256.0L;
    }
    ok(in, "random values lie in their bucket");
    ok(mid, "a bucket's middle is within 1/256 (0.4%%) of each of its values");
}

int main(void)
{
    enum { N = 200000 };
    uint64_t *v = malloc(N * sizeof *v);
    if (!v)
        return 1;
    check_buckets();

    struct st__hist h = {0};
    is_u64(st__hist_quantile(&h, 0.5), 0, "an empty histogram's quantile is 0");
    struct st__hist_band band[65];
    is_u64(st__hist_bands(&h, band), 0, "an empty histogram has no bands");

    for (size_t i = 0; i < N; i++)
        v[i] = next() % 300; /* mostly exact buckets */
    check_set("small values (0..299 ns)", v, N, 1);
    for (size_t i = 0; i < N; i++)
        v[i] = log_uniform(40); /* 1 ns .. about 18 minutes */
    check_set("1 ns .. 2^41 ns, every magnitude", v, N, 1);
    for (size_t i = 0; i < N; i++)
        v[i] = 250000 + next() % 100000; /* one narrow cluster: many ties per bucket */
    check_set("250 us .. 350 us", v, N, 1);
    for (size_t i = 0; i < N; i++)
        v[i] = i % 100 == 0 ? log_uniform(62) : 1000 + next() % 64; /* a tail of outliers */
    check_set("1 us with outliers to 2^63 ns", v, N, 0);
    for (size_t i = 0; i < 1000; i++)
        v[i] = i % 3 == 0 ? 0 : i % 3 == 1 ? UINT64_MAX - next() % 1000 : (UINT64_C(1) << 63) + next() % 1000;
    check_set("0 and values near 2^63 and 2^64", v, 1000, 0);
    v[0] = 12345678;
    check_set("one value", v, 1, 1);
    for (size_t i = 0; i < 7; i++)
        v[i] = 1000000 + i * 100000;
    check_set("seven values", v, 7, 1);
    free(v);
    return done_testing();
}
