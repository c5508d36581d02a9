/*
 * src/analysis/compare.c against computations of this test's own:
 *   - the Mann-Whitney U of two histograms: U equal to a count over every
 *     pair of values (a pair in one bucket counting 1/2); for small samples
 *     with ties, the standardised statistic equal to (|U - mean| - 1/2) over
 *     the standard deviation of U over every split of the pooled values
 *     (the permutation distribution, enumerated: what the tie correction
 *     must give), and the p-value near the exact permutation p-value; for
 *     large samples over many magnitudes, z and p from the tie groups this
 *     test finds by sorting; empty, all-tied and separated samples;
 *   - --fail-if's grammar: what parses and, for each malformed form, the
 *     message and the character it points at;
 *   - two results matched by span and event name, and conditions met
 *     exactly where the figures say (a span or event in one run only, a
 *     change not significant).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "tap.h"

static uint64_t rng = 0xc0ffee;

static uint64_t next(void) /* splitmix64 */
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill(struct st__hist *h, const uint64_t *v, size_t n)
{
    memset(h, 0, sizeof *h);
    for (size_t i = 0; i < n; i++)
        st__hist_add(h, v[i]);
}

/* U of b against a by pairs: b's value in a higher bucket 1, in the same bucket 1/2. */
static double pair_u(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
    double u = 0;
    for (size_t j = 0; j < nb; j++)
        for (size_t i = 0; i < na; i++) {
            unsigned x = st__hist_bucket(a[i]), y = st__hist_bucket(b[j]);
            u += y > x ? 1 : y == x ? 0.5 : 0;
        }
    return u;
}

static int cmp_unsigned(const void *x, const void *y)
{
    unsigned a = *(const unsigned *)x, b = *(const unsigned *)y;
    return a < b ? -1 : a > b;
}

/* The sum of t^3 - t over the groups of equal buckets in the pooled values. */
static double tie_sum(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
    unsigned *k = malloc((na + nb) * sizeof *k);
    for (size_t i = 0; i < na; i++)
        k[i] = st__hist_bucket(a[i]);
    for (size_t j = 0; j < nb; j++)
        k[na + j] = st__hist_bucket(b[j]);
    qsort(k, na + nb, sizeof *k, cmp_unsigned);
    double s = 0;
    for (size_t i = 0; i < na + nb;) {
        size_t e = i;
        while (e < na + nb && k[e] == k[i])
            e++;
        double t = (double)(e - i);
        s += t * t * t - t;
        i = e;
    }
    free(k);
    return s;
}

static bool near(double got, double want, double rel)
{
    return fabs(got - want) <= rel * fabs(want) + 1e-300;
}

/* --- small samples: the permutation distribution ---------------------------------------------- */

#define SMALL_N 15

/* Every split of pooled[0..n) into n1 values (a) and the rest (b): mean and variance of U, and the exact two-sided p. */
static void permutations(const uint64_t *pooled, unsigned n, unsigned n1, double u_obs, double *mean, double *var,
                         double *p_exact)
{
    double sum = 0, sum2 = 0, count = 0, extreme = 0, centre = (double)n1 * (n - n1) / 2;
    double *us = malloc(sizeof *us << n);
    size_t m = 0;
    for (uint32_t mask = 0; mask < (1u << n); mask++) {
        if ((unsigned)__builtin_popcount(mask) != n1)
            continue;
        uint64_t a[SMALL_N], b[SMALL_N];
        size_t na = 0, nb = 0;
        for (unsigned i = 0; i < n; i++) {
            if (mask >> i & 1)
                a[na++] = pooled[i];
            else
                b[nb++] = pooled[i];
        }
        double u = pair_u(a, na, b, nb);
        us[m++] = u;
        sum += u;
        sum2 += u * u;
        count++;
    }
    *mean = sum / count;
    *var = sum2 / count - *mean * *mean;
    for (size_t i = 0; i < m; i++)
        extreme += fabs(us[i] - centre) >= fabs(u_obs - centre) - 1e-9;
    *p_exact = extreme / count;
    free(us);
}

static void test_small(void)
{
    double worst_z = 0, worst_p = 0;
    bool means_ok = true;
    for (int trial = 0; trial < 12; trial++) {
        uint64_t pooled[SMALL_N], a[SMALL_N], b[SMALL_N];
        unsigned n1 = 7, n = SMALL_N, range = 6 + (unsigned)trial % 6; /* few values: many ties */
        for (unsigned i = 0; i < n; i++)
            pooled[i] = i < n1 ? next() % range : next() % range + (unsigned)trial / 4; /* b shifted up in some */
        memcpy(a, pooled, n1 * sizeof *a);
        memcpy(b, pooled + n1, (n - n1) * sizeof *b);
        struct st__hist ha, hb;
        fill(&ha, a, n1);
        fill(&hb, b, n - n1);
        struct st__an_mwu t;
        st__an_mwu(&ha, &hb, &t);
        double mean, var, p_exact, u = pair_u(a, n1, b, n - n1);
        permutations(pooled, n, n1, u, &mean, &var, &p_exact);
        means_ok = means_ok && t.u == u && fabs(mean - n1 * (n - n1) / 2.0) < 1e-9;
        double d = fabs(u - mean) - 0.5, z = var > 0 ? (d < 0 ? 0 : d) / sqrt(var) * (u >= mean ? 1 : -1) : 0;
        worst_z = fmax(worst_z, fabs(t.z - z));
        worst_p = fmax(worst_p, fabs(t.p - p_exact));
        if (fabs(t.p - p_exact) > 0.03)
            diag("trial %d: p %.4f, exact %.4f (u %.1f, z %.4f)", trial, t.p, p_exact, u, t.z);
        st__hist_free(&ha);
        st__hist_free(&hb);
    }
    ok(means_ok, "small samples with ties: U equals the count over pairs, E[U] over all splits = n1*n2/2");
    ok(worst_z < 1e-9, "z = (|U - mean| - 1/2) / sd of U over every split (tie correction exact): off by %.3g",
       worst_z);
    ok(worst_p < 0.03, "p within 0.03 of the exact permutation p-value (normal approximation, n = 7 + 8): off by %.3f",
       worst_p);
}

/* --- large samples over many magnitudes --------------------------------------------------------- */

static uint64_t draw(double scale)
{
    /* about 1 us to 65 us, log-uniform, then scaled: ties only where two values share a bucket */
    double e = 10 + (double)(next() % 6000) / 1000.0;
    return (uint64_t)(exp2(e) * scale);
}

static void test_large(void)
{
    static const double shifts[] = {1.0, 1.02, 1.3, 0.7};
    for (size_t s = 0; s < sizeof shifts / sizeof shifts[0]; s++) {
        size_t na = 1500, nb = 1700;
        uint64_t *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
        for (size_t i = 0; i < na; i++)
            a[i] = draw(1.0);
        for (size_t j = 0; j < nb; j++)
            b[j] = next() % 10 == 0 ? a[next() % na] : draw(shifts[s]); /* some exact ties too */
        struct st__hist ha, hb;
        fill(&ha, a, na);
        fill(&hb, b, nb);
        struct st__an_mwu t;
        st__an_mwu(&ha, &hb, &t);
        double u = pair_u(a, na, b, nb), n = (double)(na + nb), n1 = (double)na, n2 = (double)nb;
        double var = n1 * n2 / 12 * ((n + 1) - tie_sum(a, na, b, nb) / (n * (n - 1)));
        double d = fabs(u - n1 * n2 / 2) - 0.5, z = (d < 0 ? 0 : d) / sqrt(var) * (u >= n1 * n2 / 2 ? 1 : -1);
        double p = erfc(fabs(z) / sqrt(2.0));
        ok(t.u == u, "shift x%.2f: U = %.1f, the count over %zu pairs (%.1f)", shifts[s], t.u, na * nb, u);
        ok(near(t.z, z, 1e-9) && near(t.p, p, 1e-6), "shift x%.2f: z %.6f (want %.6f), p %.6g (want %.6g)",
           shifts[s], t.z, z, t.p, p);
        ok(near(t.effect, u / (n1 * n2), 1e-12), "shift x%.2f: effect = U / (n1 n2) = %.4f", shifts[s], t.effect);
        if (shifts[s] == 1.3)
            ok(t.p < 1e-3 && t.z > 0, "30%% longer: significant, z > 0 (new longer)");
        if (shifts[s] == 0.7)
            ok(t.p < 1e-3 && t.z < 0, "30%% shorter: significant, z < 0");
        st__hist_free(&ha);
        st__hist_free(&hb);
        free(a);
        free(b);
    }
}

static void test_edges(void)
{
    struct st__hist e = {0}, one, same, lo, hi;
    uint64_t v1[] = {5000}, v5[] = {7, 7, 7, 7, 7}, vlo[10], vhi[10];
    for (int i = 0; i < 10; i++)
        vlo[i] = 1000 + (uint64_t)i * 100, vhi[i] = 100000 + (uint64_t)i * 1000;
    fill(&one, v1, 1);
    fill(&same, v5, 5);
    fill(&lo, vlo, 10);
    fill(&hi, vhi, 10);
    struct st__an_mwu t;
    st__an_mwu(&e, &one, &t);
    ok(t.p == 1 && t.u == 0 && t.z == 0, "an empty sample: p 1");
    st__an_mwu(&same, &same, &t);
    ok(t.p == 1 && t.z == 0 && t.u == 12.5, "every value tied: p 1, U = n1 n2 / 2");
    st__an_mwu(&lo, &hi, &t);
    ok(t.u == 100 && t.effect == 1 && t.p < 0.001 && t.z > 0, "separated, new above: U = n1 n2, p %.3g", t.p);
    st__an_mwu(&hi, &lo, &t);
    ok(t.u == 0 && t.effect == 0 && t.p < 0.001 && t.z < 0, "separated, new below: U = 0");
    double pct = 0;
    ok(st__an_change_pct(200, 300, &pct) && pct == 50 && st__an_change_pct(200, 100, &pct) && pct == -50 &&
           !st__an_change_pct(0, 5, &pct),
       "change in percent; none from 0");
    st__hist_free(&one);
    st__hist_free(&same);
    st__hist_free(&lo);
    st__hist_free(&hi);
}

/* --- --fail-if's grammar -------------------------------------------------------------------------- */

static void test_parse(void)
{
    static const struct {
        const char *text, *name;
        enum st__an_field field;
        char op;
        double pct;
    } good[] = {
        {"p99>+10%", NULL, ST__AN_F_P99, '>', 10},
        {"count<-5%", NULL, ST__AN_F_COUNT, '<', -5},
        {"io:p50>+20%", "io", ST__AN_F_P50, '>', 20},
        {" mean > +2.5% ", NULL, ST__AN_F_MEAN, '>', 2.5},
        {"ns::f<int>:p999<-1%", "ns::f<int>", ST__AN_F_P999, '<', -1},
        {"x:p99.9>+0%", "x", ST__AN_F_P999, '>', 0},
        {"rate<-30%", NULL, ST__AN_F_RATE, '<', -30},
        {"a:total>+100%", "a", ST__AN_F_TOTAL, '>', 100},
        {"min>-1%", NULL, ST__AN_F_MIN, '>', -1},
        {"max<+1%", NULL, ST__AN_F_MAX, '<', 1},
        {"p90>+1e1%", NULL, ST__AN_F_P90, '>', 10},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct st__an_cond c;
        char err[512] = "";
        int ret = st__an_cond_parse(good[i].text, &c, err, sizeof err);
        ok(ret == 0 && c.field == good[i].field && c.op == good[i].op && c.pct == good[i].pct &&
               (good[i].name ? c.name && !strcmp(c.name, good[i].name) : !c.name),
           "parses '%s'%s%s", good[i].text, ret ? ": " : "", err);
        st__an_cond_free(&c);
    }
    /* Each malformed form: what the message says and the character it names (from 1). */
    static const struct {
        const char *text, *says;
        int at;
    } bad[] = {
        {"p99=+10%", "no operator", 9},
        {"p99>10%", "needs its sign", 5},
        {"p99>+10", "must end with '%'", 7},
        {"p99>", "no percentage", 5},
        {"p99>+x%", "not a number", 6},
        {"p99>++1%", "not a number", 6},
        {"p99>+inf%", "not a number", 6},
        {">+5%", "no FIELD", 1},
        {"io: >+5%", "no FIELD", 4},
        {"p98>+10%", "unknown FIELD 'p98'", 1},
        {"io:latency>+10%", "unknown FIELD 'latency'", 4},
        {":p99>+10%", "empty NAME", 1},
        {"p99>+1%%", "not a number", 6},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct st__an_cond c;
        char err[512] = "", at[48];
        int ret = st__an_cond_parse(bad[i].text, &c, err, sizeof err);
        snprintf(at, sizeof at, "at character %d ", bad[i].at);
        if (!ok(ret == -EINVAL && strstr(err, bad[i].says) && strstr(err, at) && strstr(err, bad[i].text),
                "refuses '%s': %s", bad[i].text, err))
            diag("want '%s' %s", bad[i].says, at);
        st__an_cond_free(&c);
    }
}

/* --- two results compared ------------------------------------------------------------------------ */

static struct st__an_span *span(const char *name, uint64_t base_ns, size_t n, double scale)
{
    struct st__an_span *s = calloc(1, sizeof *s);
    s->name = name;
    for (size_t i = 0; i < n; i++)
        st__hist_add(&s->hist, (uint64_t)((double)(base_ns + (next() % (base_ns / 2))) * scale));
    return s;
}

static void free_result(struct st__an_result *r)
{
    for (size_t i = 0; i < r->nspans; i++) {
        st__hist_free(&r->spans[i]->hist);
        free(r->spans[i]);
    }
}

struct hits {
    char names[16][64];
    size_t n;
};

static void on_hit(const struct st__an_hit *h, void *opaque)
{
    struct hits *hs = opaque;
    if (hs->n < 16)
        snprintf(hs->names[hs->n++], sizeof hs->names[0], "%s%s%s", h->is_event ? "event " : "", h->name,
                 h->infinite ? " (inf)" : "");
}

/* Evaluates text on cmp: the hits as "a,b,c" in order. */
static size_t eval(const struct st__an_comparison *cmp, const char *text, char *list, size_t len, bool *seen)
{
    struct st__an_cond c;
    char err[256];
    struct hits hs = {.n = 0};
    list[0] = '\0';
    if (st__an_cond_parse(text, &c, err, sizeof err) < 0)
        return (size_t)-1;
    size_t n = st__an_cond_eval(cmp, &c, seen, on_hit, &hs);
    for (size_t i = 0; i < hs.n; i++)
        snprintf(list + strlen(list), len - strlen(list), "%s%s", i ? "," : "", hs.names[i]);
    st__an_cond_free(&c);
    return n;
}

static void test_compare(void)
{
    /* Spans sorted by name as latency.c leaves them; the runs last 2 s and 4 s. */
    struct st__an_span *sa[] = {span("io", 1000000, 300, 1.0), span("only_base", 5000, 10, 1.0),
                                span("small", 1000000, 3, 1.0)};
    struct st__an_span *sb[] = {span("io", 1000000, 300, 1.5), span("only_new", 5000, 10, 1.0),
                                span("small", 1000000, 3, 1.5)};
    struct st__an_event ea[] = {{"ev_a", 10}, {"ev_b", 0}, {"gone", 5}}, eb[] = {{"new_ev", 1}, {"ev_b", 3}, {"ev_a", 40}};
    struct st__an_result ra = {.spans = sa, .nspans = 3, .events = ea, .nevents = 3, .first_ns = 1000, .last_ns = 2000001000};
    struct st__an_result rb = {.spans = sb, .nspans = 3, .events = eb, .nevents = 3, .first_ns = 5, .last_ns = 4000000005};
    struct st__an_comparison cmp;
    ok(st__an_compare(&ra, &rb, 0.01, &cmp) == 0 && cmp.nspans == 4 && cmp.nevents == 4, "compared: 4 spans, 4 events");
    ok(!strcmp(cmp.spans[0].name, "io") && !strcmp(cmp.spans[1].name, "only_base") &&
           !strcmp(cmp.spans[2].name, "only_new") && !strcmp(cmp.spans[3].name, "small"),
       "spans of either run, by name");
    ok(cmp.spans[1].run[1]->hist.count == 0 && !cmp.spans[1].tested && cmp.spans[2].run[0]->hist.count == 0 &&
           !cmp.spans[2].tested,
       "a span of one run: the other's side empty, not tested");
    ok(cmp.spans[0].tested && cmp.spans[0].significant && cmp.spans[0].test.z > 0, "io, 50%% longer in 300: significant");
    ok(cmp.spans[3].tested && !cmp.spans[3].significant, "small, 50%% longer in 3: not significant (p %.3g)",
       cmp.spans[3].test.p);
    ok(!strcmp(cmp.events[0].name, "ev_a") && cmp.events[0].count[0] == 10 && cmp.events[0].count[1] == 40 &&
           !strcmp(cmp.events[2].name, "gone") && cmp.events[2].count[1] == 0 && !cmp.events[2].declared[1] &&
           !strcmp(cmp.events[3].name, "new_ev") && !cmp.events[3].declared[0],
       "events of either run, by name, counts side by side");
    ok(cmp.seconds[0] == 2 && cmp.seconds[1] == 4, "the runs' durations for the rates");

    char list[1024];
    bool seen;
    size_t n = eval(&cmp, "count>+10%", list, sizeof list, &seen);
    ok(n == 4 && !strcmp(list, "only_new (inf),event ev_a,event ev_b (inf),event new_ev (inf)"),
       "count>+10%%: spans and events that grew or appeared: %s", list);
    n = eval(&cmp, "count<-50%", list, sizeof list, &seen);
    ok(n == 2 && !strcmp(list, "only_base,event gone"), "count<-50%%: what shrank or vanished: %s", list);
    n = eval(&cmp, "rate<-40%", list, sizeof list, &seen);
    ok(n == 4 && !strcmp(list, "io,only_base,small,event gone"), "rate<-40%%: per second of each run: %s", list);
    n = eval(&cmp, "rate>+40%", list, sizeof list, &seen);
    ok(n == 4 && !strcmp(list, "only_new (inf),event ev_a,event ev_b (inf),event new_ev (inf)"),
       "rate>+40%%: ev_a 5/s -> 10/s: %s", list);
    n = eval(&cmp, "p50>+20%", list, sizeof list, &seen);
    ok(n == 1 && !strcmp(list, "io"), "p50>+20%%: io only (small is not significant): %s", list);
    n = eval(&cmp, "p50<+20%", list, sizeof list, &seen);
    ok(n == 0, "p50<+20%%: io's +50%% is not below: %s", list);
    n = eval(&cmp, "io:mean>+60%", list, sizeof list, &seen);
    ok(n == 0 && seen, "io:mean>+60%%: not met, the name seen");
    n = eval(&cmp, "io:count>+0%", list, sizeof list, &seen);
    ok(n == 0 && seen, "io:count>+0%%: unchanged count is no rise");
    n = eval(&cmp, "io:count>-1%", list, sizeof list, &seen);
    ok(n == 1, "io:count>-1%%: unchanged count is above -1%%");
    n = eval(&cmp, "nosuch:count>+1%", list, sizeof list, &seen);
    ok(n == 0 && !seen, "a name in neither run: not seen");
    n = eval(&cmp, "ev_a:p99>+1%", list, sizeof list, &seen);
    ok(n == 0 && !seen, "an event's name with a duration field: not seen (events have counts only)");
    n = eval(&cmp, "ev_a:count>+200%", list, sizeof list, &seen);
    ok(n == 1 && seen && !strcmp(list, "event ev_a"), "ev_a:count>+200%%: 10 -> 40 is +300%%");
    st__an_comparison_free(&cmp);
    free_result(&ra);
    free_result(&rb);
}

int main(void)
{
    test_small();
    test_large();
    test_edges();
    test_parse();
    test_compare();
    return done_testing();
}
