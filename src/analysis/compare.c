/*
 * Two runs compared (analysis.h): events and spans matched by name (and
 * group), the Mann-Whitney U test of their durations, and --fail-if's
 * conditions. Nothing here reads a trace: the inputs are two results of
 * st__an_latency().
 *
 * Why Mann-Whitney U: it compares ranks, so it assumes no distribution
 * (latencies are skewed and multi-modal, never normal), a few huge
 * outliers weigh no more than any other value above the rest, and it
 * needs nothing but the order of the values, which the histograms keep:
 * the values of one bucket (within 0.4% of each other) are ties, ranked
 * together, and the variance is corrected for them. With the counts per
 * bucket, U costs one pass over the buckets, whatever the number of spans.
 */
#include "analysis.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --- the test -------------------------------------------------------------------------------- */

void st__an_mwu(const struct st__hist *a, const struct st__hist *b, struct st__an_mwu *out)
{
    double n1 = (double)a->count, n2 = (double)b->count, n = n1 + n2;
    *out = (struct st__an_mwu){.effect = 0.5, .p = 1};
    if (a->count == 0 || b->count == 0)
        return;
    /* U of b: for each bucket, its b values exceed every a value below and tie with the a values in it. */
    double below_a = 0, u = 0, ties = 0;
    for (unsigned k = 0; k < ST__HIST_CHUNKS; k++) {
        if (!a->chunk[k] && !b->chunk[k])
            continue;
        for (unsigned i = 0; i < ST__HIST_SUB; i++) {
            double na = a->chunk[k] ? (double)a->chunk[k][i] : 0, nb = b->chunk[k] ? (double)b->chunk[k][i] : 0;
            double t = na + nb;
            u += nb * (below_a + na / 2);
            ties += t * t * t - t;
            below_a += na;
        }
    }
    out->u = u;
    out->effect = u / (n1 * n2);
    double mean = n1 * n2 / 2;
    double var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)));
    if (!(var > 0))
        return; /* every value ties: nothing tells the samples apart */
    double d = fabs(u - mean) - 0.5; /* the continuity correction: U moves in steps of 1/2 */
    if (d < 0)
        d = 0;
    out->z = (u >= mean ? d : -d) / sqrt(var);
    out->p = erfc(fabs(out->z) / sqrt(2.0));
    if (out->p > 1)
        out->p = 1;
}

bool st__an_change_pct(double base, double new_value, double *pct)
{
    if (base == 0)
        return false;
    *pct = (new_value - base) / base * 100.0;
    return true;
}

/* --- matching the runs -------------------------------------------------------------------------- */

static const struct st__an_span empty_span;

/* Name, then group (no group first): the order of both results' spans. */
static int span_order(const char *name_a, const char *group_a, const char *name_b, const char *group_b)
{
    int c = strcmp(name_a, name_b);
    if (c || group_a == group_b)
        return c;
    if (!group_a || !group_b)
        return group_a ? 1 : -1;
    return strcmp(group_a, group_b);
}

static int span_ptr_order(const void *x, const void *y)
{
    const struct st__an_span *a = *(struct st__an_span *const *)x, *b = *(struct st__an_span *const *)y;
    return span_order(a->name, a->group, b->name, b->group);
}

/* A copy of res's span list in span_order (latency.c orders them the same; this does not rely on it). */
static const struct st__an_span **sorted_spans(const struct st__an_result *res)
{
    const struct st__an_span **v = malloc((res->nspans + 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < res->nspans; i++)
        v[i] = res->spans[i];
    qsort(v, res->nspans, sizeof *v, span_ptr_order);
    return v;
}

static int compare_spans(struct st__an_comparison *c)
{
    const struct st__an_span **v[2] = {sorted_spans(c->run[0]), sorted_spans(c->run[1])};
    size_t n[2] = {c->run[0]->nspans, c->run[1]->nspans}, i = 0, j = 0;
    c->spans = calloc(n[0] + n[1] + 1, sizeof *c->spans);
    if (!v[0] || !v[1] || !c->spans) {
        free(v[0]);
        free(v[1]);
        return -ENOMEM;
    }
    while (i < n[0] || j < n[1]) {
        int o = i == n[0] ? 1 : j == n[1] ? -1 : span_order(v[0][i]->name, v[0][i]->group, v[1][j]->name, v[1][j]->group);
        struct st__an_cmp_span *s = &c->spans[c->nspans++];
        s->run[0] = o <= 0 ? v[0][i++] : &empty_span;
        s->run[1] = o >= 0 ? v[1][j++] : &empty_span;
        const struct st__an_span *named = o <= 0 ? s->run[0] : s->run[1];
        s->name = named->name;
        s->group = named->group;
        s->tested = s->run[0]->hist.count && s->run[1]->hist.count;
        st__an_mwu(&s->run[0]->hist, &s->run[1]->hist, &s->test);
        s->significant = s->tested && s->test.p < c->alpha;
    }
    free(v[0]);
    free(v[1]);
    return 0;
}

static int event_order(const void *x, const void *y)
{
    return strcmp(((const struct st__an_event *)*(void *const *)x)->name,
                  ((const struct st__an_event *)*(void *const *)y)->name);
}

static const struct st__an_event **sorted_events(const struct st__an_result *res)
{
    const struct st__an_event **v = malloc((res->nevents + 1) * sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < res->nevents; i++)
        v[i] = &res->events[i];
    qsort(v, res->nevents, sizeof *v, event_order);
    return v;
}

static int compare_events(struct st__an_comparison *c)
{
    const struct st__an_event **v[2] = {sorted_events(c->run[0]), sorted_events(c->run[1])};
    size_t n[2] = {c->run[0]->nevents, c->run[1]->nevents}, i = 0, j = 0;
    c->events = calloc(n[0] + n[1] + 1, sizeof *c->events);
    if (!v[0] || !v[1] || !c->events) {
        free(v[0]);
        free(v[1]);
        return -ENOMEM;
    }
    while (i < n[0] || j < n[1]) {
        int o = i == n[0] ? 1 : j == n[1] ? -1 : strcmp(v[0][i]->name, v[1][j]->name);
        struct st__an_cmp_event *e = &c->events[c->nevents++];
        if (o <= 0) {
            e->name = v[0][i]->name;
            e->count[0] = v[0][i++]->count;
            e->declared[0] = true;
        }
        if (o >= 0) {
            e->name = v[1][j]->name;
            e->count[1] = v[1][j++]->count;
            e->declared[1] = true;
        }
    }
    free(v[0]);
    free(v[1]);
    return 0;
}

int st__an_compare(const struct st__an_result *base, const struct st__an_result *new_run, double alpha,
                   struct st__an_comparison *out)
{
    memset(out, 0, sizeof *out);
    out->run[0] = base;
    out->run[1] = new_run;
    out->alpha = alpha;
    for (int k = 0; k < 2; k++)
        out->seconds[k] = out->run[k]->last_ns > out->run[k]->first_ns
                              ? (double)(out->run[k]->last_ns - out->run[k]->first_ns) / 1e9
                              : 0;
    int ret = compare_spans(out);
    if (ret == 0)
        ret = compare_events(out);
    if (ret < 0)
        st__an_comparison_free(out);
    return ret;
}

void st__an_comparison_free(struct st__an_comparison *c)
{
    free(c->spans);
    free(c->events);
    memset(c, 0, sizeof *c);
}

/* --- --fail-if ----------------------------------------------------------------------------------- */

static const char *const field_names[] = {
    [ST__AN_F_COUNT] = "count", [ST__AN_F_RATE] = "rate", [ST__AN_F_MEAN] = "mean", [ST__AN_F_MIN] = "min",
    [ST__AN_F_P50] = "p50",     [ST__AN_F_P90] = "p90",   [ST__AN_F_P99] = "p99",   [ST__AN_F_P999] = "p999",
    [ST__AN_F_MAX] = "max",     [ST__AN_F_TOTAL] = "total",
};
#define NFIELDS (sizeof field_names / sizeof field_names[0])

const char *st__an_field_name(enum st__an_field f)
{
    return (size_t)f < NFIELDS ? field_names[f] : "?";
}

/* Counts and their sums are facts of the runs, not samples of a distribution: no test. */
bool st__an_field_tested(enum st__an_field f)
{
    return f != ST__AN_F_COUNT && f != ST__AN_F_RATE && f != ST__AN_F_TOTAL;
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* Formats "--fail-if=TEXT: WHAT at character N" (N counts from 1) into err; -EINVAL. */
static int cond_error(char *err, size_t errlen, const char *text, size_t at, const char *what)
{
    snprintf(err, errlen, "bad --fail-if '%s': %s at character %zu (want [NAME:]FIELD>+N%% or [NAME:]FIELD<-N%%)",
             text, what, at + 1);
    return -EINVAL;
}

/* The threshold s[0..len) at offset off of text: a sign, a number, '%'. */
static int parse_threshold(const char *text, size_t off, size_t len, double *pct, char *err, size_t errlen)
{
    const char *s = text + off;
    while (len && is_space(*s))
        s++, off++, len--;
    while (len && is_space(s[len - 1]))
        len--;
    if (len == 0)
        return cond_error(err, errlen, text, off, "no percentage after the operator");
    if (*s != '+' && *s != '-')
        return cond_error(err, errlen, text, off, "the percentage needs its sign (+ for a rise, - for a fall)");
    if (s[len - 1] != '%')
        return cond_error(err, errlen, text, off + len - 1, "the percentage must end with '%'");
    char num[64];
    if (len - 1 >= sizeof num)
        return cond_error(err, errlen, text, off, "percentage too long");
    memcpy(num, s, len - 1);
    num[len - 1] = '\0';
    char *end;
    *pct = strtod(num, &end);
    if (end == num + 1 || *end || !isfinite(*pct) || num[1] == '+' || num[1] == '-' || is_space(num[1]))
        return cond_error(err, errlen, text, off + 1, "not a number");
    return 0;
}

int st__an_cond_parse(const char *text, struct st__an_cond *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->text = text;
    /* The operator is the last '<' or '>': the threshold has none, a C++ name may. */
    const char *gt = strrchr(text, '>'), *lt = strrchr(text, '<');
    const char *op = gt > lt ? gt : lt;
    if (!op)
        return cond_error(err, errlen, text, strlen(text), "no operator '>' or '<'");
    c->op = *op;
    size_t op_at = (size_t)(op - text);
    int ret = parse_threshold(text, op_at + 1, strlen(op + 1), &c->pct, err, errlen);
    if (ret < 0)
        return ret;
    /* FIELD: after the last ':' before the operator; NAME before it. */
    size_t field_at = op_at;
    while (field_at && text[field_at - 1] != ':')
        field_at--;
    size_t fa = field_at, fe = op_at;
    while (fa < fe && is_space(text[fa]))
        fa++;
    while (fe > fa && is_space(text[fe - 1]))
        fe--;
    if (fa == fe)
        return cond_error(err, errlen, text, field_at, "no FIELD before the operator");
    size_t f = 0;
    while (f < NFIELDS && !(strlen(field_names[f]) == fe - fa && !strncmp(field_names[f], text + fa, fe - fa)))
        f++;
    if (f == NFIELDS && fe - fa == 5 && !strncmp(text + fa, "p99.9", 5))
        f = ST__AN_F_P999;
    if (f == NFIELDS) {
        char what[160];
        snprintf(what, sizeof what,
                 "unknown FIELD '%.*s' (count, rate, mean, min, p50, p90, p99, p999, max, total)", (int)(fe - fa > 40 ? 40 : fe - fa),
                 text + fa);
        return cond_error(err, errlen, text, fa, what);
    }
    c->field = (enum st__an_field)f;
    if (field_at > 0) {
        size_t ne = field_at - 1;
        if (ne == 0)
            return cond_error(err, errlen, text, 0, "empty NAME before ':'");
        if (!(c->name = strndup(text, ne)))
            return -ENOMEM;
    }
    return 0;
}

void st__an_cond_free(struct st__an_cond *c)
{
    free(c->name);
    c->name = NULL;
}

/* A span's figure in one run (rate: per second of that run, NAN when the run lasted no time). */
static double span_value(const struct st__an_span *s, enum st__an_field f, double seconds)
{
    const struct st__hist *h = &s->hist;
    switch (f) {
    case ST__AN_F_COUNT: return (double)h->count;
    case ST__AN_F_RATE: return seconds > 0 ? (double)h->count / seconds : NAN;
    case ST__AN_F_TOTAL: return (double)h->total;
    case ST__AN_F_MEAN: return h->count ? (double)h->total / (double)h->count : 0;
    case ST__AN_F_MIN: return (double)h->min;
    case ST__AN_F_MAX: return (double)h->max;
    case ST__AN_F_P50: return (double)st__hist_quantile(h, 0.50);
    case ST__AN_F_P90: return (double)st__hist_quantile(h, 0.90);
    case ST__AN_F_P99: return (double)st__hist_quantile(h, 0.99);
    case ST__AN_F_P999: return (double)st__hist_quantile(h, 0.999);
    }
    return NAN;
}

/* Whether the change base -> v meets c; fills the hit's figures. */
static bool change_meets(const struct st__an_cond *c, double base, double v, struct st__an_hit *h)
{
    h->base = base;
    h->new_value = v;
    h->infinite = false;
    if (isnan(base) || isnan(v))
        return false;
    if (base == 0) {
        h->infinite = v > 0; /* from nothing: above any threshold, below none */
        h->pct = 0;
        return h->infinite ? c->op == '>' : c->op == '>' ? 0 > c->pct : 0 < c->pct;
    }
    st__an_change_pct(base, v, &h->pct);
    return c->op == '>' ? h->pct > c->pct : h->pct < c->pct;
}

size_t st__an_cond_eval(const struct st__an_comparison *cmp, const struct st__an_cond *c, bool *named_seen,
                        void (*hit)(const struct st__an_hit *h, void *opaque), void *opaque)
{
    size_t met = 0;
    bool events = !st__an_field_tested(c->field) && c->field != ST__AN_F_TOTAL; /* count and rate */
    *named_seen = c->name == NULL;
    for (size_t i = 0; !*named_seen && i < cmp->nspans; i++)
        *named_seen = !strcmp(c->name, cmp->spans[i].name);
    for (size_t i = 0; !*named_seen && events && i < cmp->nevents; i++)
        *named_seen = !strcmp(c->name, cmp->events[i].name);
    for (size_t i = 0; i < cmp->nspans; i++) {
        const struct st__an_cmp_span *s = &cmp->spans[i];
        if (c->name && strcmp(c->name, s->name))
            continue;
        struct st__an_hit h = {.cond = c, .name = s->name, .group = s->group, .p = 1};
        bool tested = st__an_field_tested(c->field);
        /* A duration's change counts only where the test tells the runs apart: not noise. */
        if (tested && !s->significant)
            continue;
        if (tested)
            h.p = s->test.p;
        if (change_meets(c, span_value(s->run[0], c->field, cmp->seconds[0]),
                         span_value(s->run[1], c->field, cmp->seconds[1]), &h)) {
            met++;
            hit(&h, opaque);
        }
    }
    for (size_t i = 0; events && i < cmp->nevents; i++) {
        const struct st__an_cmp_event *e = &cmp->events[i];
        if (c->name && strcmp(c->name, e->name))
            continue;
        struct st__an_hit h = {.cond = c, .name = e->name, .is_event = true, .p = 1};
        double v[2];
        for (int k = 0; k < 2; k++)
            v[k] = c->field == ST__AN_F_RATE ? (cmp->seconds[k] > 0 ? (double)e->count[k] / cmp->seconds[k] : NAN)
                                             : (double)e->count[k];
        if (change_meets(c, v[0], v[1], &h)) {
            met++;
            hit(&h, opaque);
        }
    }
    return met;
}
