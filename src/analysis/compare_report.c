/* Two runs compared, as text and JSON (analysis.h; the fields in simpletrace-compare(1)). */
#include "analysis.h"
#include "duration.h"
#include "json_escape.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static const char *run_name[2] = {"base", "new"};

static const char *title_of(const struct st__an_report *rep, int k)
{
    return rep->run_title[k] ? rep->run_title[k] : run_name[k];
}

/* "+12.3%", "-4.0%", "new" (from 0), or "" (both 0) into buf. */
static const char *pct_text(char *buf, size_t len, double base, double v)
{
    double pct;
    if (!st__an_change_pct(base, v, &pct))
        snprintf(buf, len, "%s", v > 0 ? "new" : "");
    else
        snprintf(buf, len, "%+.1f%%", pct);
    return buf;
}

static const char *dur(char *buf, size_t len, uint64_t ns)
{
    return st__duration_text(buf, len, (int64_t)ns);
}

static const char *rate_text(char *buf, size_t len, uint64_t count, double seconds)
{
    if (seconds > 0)
        snprintf(buf, len, "%.4g", (double)count / seconds);
    else
        snprintf(buf, len, "-");
    return buf;
}

/* --- text ------------------------------------------------------------------------------------------ */

static void text_events(FILE *f, const struct st__an_comparison *c)
{
    int w = 5;
    size_t silent = 0;
    for (size_t i = 0; i < c->nevents; i++)
        if (c->events[i].count[0] || c->events[i].count[1])
            w = (int)strlen(c->events[i].name) > w ? (int)strlen(c->events[i].name) : w;
    fprintf(f, "%-*s %12s %12s %8s %12s %12s %8s\n", w, "event", "base", "new", "change", "base/s", "new/s", "change");
    for (size_t i = 0; i < c->nevents; i++) {
        const struct st__an_cmp_event *e = &c->events[i];
        if (!e->count[0] && !e->count[1]) {
            silent++;
            continue;
        }
        char p1[32], p2[32], r0[32], r1[32];
        double rate[2];
        for (int k = 0; k < 2; k++)
            rate[k] = c->seconds[k] > 0 ? (double)e->count[k] / c->seconds[k] : 0;
        fprintf(f, "%-*s %12" PRIu64 " %12" PRIu64 " %8s %12s %12s %8s\n", w, e->name, e->count[0], e->count[1],
                pct_text(p1, sizeof p1, (double)e->count[0], (double)e->count[1]),
                rate_text(r0, sizeof r0, e->count[0], c->seconds[0]), rate_text(r1, sizeof r1, e->count[1], c->seconds[1]),
                c->seconds[0] > 0 && c->seconds[1] > 0 ? pct_text(p2, sizeof p2, rate[0], rate[1]) : "");
    }
    if (silent)
        fprintf(f, "(%zu declared event%s without records in either run not shown)\n", silent, silent == 1 ? "" : "s");
}

/* One figure of a span in both runs and its change. */
static void text_figure(FILE *f, const char *label, bool have0, uint64_t v0, bool have1, uint64_t v1)
{
    char a[32], b[32], p[32];
    fprintf(f, "  %-7s %11s %11s", label, have0 ? dur(a, sizeof a, v0) : "-", have1 ? dur(b, sizeof b, v1) : "-");
    if (have0 && have1 && *pct_text(p, sizeof p, (double)v0, (double)v1))
        fprintf(f, " %8s", p);
    fputc('\n', f);
}

static void text_span(FILE *f, const struct st__an_comparison *c, const struct st__an_cmp_span *s)
{
    const struct st__hist *h[2] = {&s->run[0]->hist, &s->run[1]->hist};
    bool have[2] = {h[0]->count > 0, h[1]->count > 0};
    char p[32];
    fprintf(f, "\n%s%s%s: %" PRIu64 " -> %" PRIu64 " spans %s", s->name, s->group ? " in group " : "",
            s->group ? s->group : "", h[0]->count, h[1]->count, pct_text(p, sizeof p, (double)h[0]->count, (double)h[1]->count));
    if (s->tested)
        fprintf(f, "; p = %.3g: %s (new longer in %.0f%% of pairs)\n", s->test.p,
                s->significant ? "SIGNIFICANT" : "not significant", s->test.effect * 100);
    else
        fprintf(f, "; not tested: %s has none\n", have[0] ? "new" : "base");
    fprintf(f, "  %-7s %11s %11s %8s\n", "", "base", "new", "change");
    text_figure(f, "min", have[0], h[0]->min, have[1], h[1]->min);
    text_figure(f, "mean", have[0], have[0] ? h[0]->total / h[0]->count : 0, have[1], have[1] ? h[1]->total / h[1]->count : 0);
    for (unsigned q = 0; q < ST__AN_NQ; q++)
        text_figure(f, q == 3 ? "p99.9" : st__an_qname[q], have[0], st__hist_quantile(h[0], st__an_q[q]), have[1],
                    st__hist_quantile(h[1], st__an_q[q]));
    text_figure(f, "max", have[0], h[0]->max, have[1], h[1]->max);
    text_figure(f, "total", true, h[0]->total, true, h[1]->total);
    (void)c;
}

int st__an_write_compare_text(FILE *f, const struct st__an_comparison *c, const struct st__an_report *rep)
{
    for (int k = 0; k < 2; k++) {
        char d[32];
        fprintf(f, "%-4s %s: %" PRIu64 " records in %s%s\n", run_name[k], title_of(rep, k), c->run[k]->records,
                dur(d, sizeof d, (uint64_t)(c->seconds[k] * 1e9 + 0.5)), c->run[k]->sum.partial ? " (damaged: the records before)" : "");
    }
    fputc('\n', f);
    text_events(f, c);
    if (c->nspans == 0) {
        fprintf(f, "\nno spans in either run: no begin and end events were paired (see --pair)\n");
        return ferror(f) ? -1 : 0;
    }
    size_t sig = 0;
    for (size_t i = 0; i < c->nspans; i++) {
        text_span(f, c, &c->spans[i]);
        sig += c->spans[i].significant;
    }
    fprintf(f, "\n%zu of %zu span%s changed significantly (Mann-Whitney U, p < %g)\n", sig, c->nspans,
            c->nspans == 1 ? "" : "s", c->alpha);
    return ferror(f) ? -1 : 0;
}

/* --- JSON ------------------------------------------------------------------------------------------ */

/* A number, or null when it is none (no percentage, no rate). */
static void json_double(FILE *f, const char *key, bool have, double v)
{
    if (have && isfinite(v))
        fprintf(f, "\"%s\":%.6g", key, v);
    else
        fprintf(f, "\"%s\":null", key);
}

static void json_change(FILE *f, const char *key, double base, double v)
{
    double pct = 0;
    bool have = st__an_change_pct(base, v, &pct);
    json_double(f, key, have, pct);
}

static void json_run(FILE *f, const struct st__an_comparison *c, const struct st__an_report *rep, int k)
{
    const struct st__an_result *r = c->run[k];
    fprintf(f, "\"%s\":{\"trace\":", run_name[k]);
    st__json_fputs(f, title_of(rep, k));
    fprintf(f, ",\"records\":%" PRIu64 ",\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64
               ",\"partial\":%s}",
            r->records, r->first_ns, r->last_ns, r->last_ns > r->first_ns ? r->last_ns - r->first_ns : 0,
            r->sum.partial ? "true" : "false");
}

static void json_events(FILE *f, const struct st__an_comparison *c)
{
    fputs("\"events\":[", f);
    for (size_t i = 0; i < c->nevents; i++) {
        const struct st__an_cmp_event *e = &c->events[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        st__json_fputs(f, e->name);
        fprintf(f, ",\"base_count\":%" PRIu64 ",\"new_count\":%" PRIu64 ",", e->count[0], e->count[1]);
        json_change(f, "change_pct", (double)e->count[0], (double)e->count[1]);
        double rate[2];
        for (int k = 0; k < 2; k++) {
            rate[k] = c->seconds[k] > 0 ? (double)e->count[k] / c->seconds[k] : NAN;
            fputc(',', f);
            json_double(f, k ? "new_rate" : "base_rate", c->seconds[k] > 0, rate[k]);
        }
        fputc(',', f);
        if (c->seconds[0] > 0 && c->seconds[1] > 0)
            json_change(f, "rate_change_pct", rate[0], rate[1]);
        else
            json_double(f, "rate_change_pct", false, 0);
        fprintf(f, ",\"in_base\":%s,\"in_new\":%s}", e->declared[0] ? "true" : "false", e->declared[1] ? "true" : "false");
    }
    fputc(']', f);
}

static void json_span(FILE *f, const struct st__an_comparison *c, const struct st__an_cmp_span *s,
                      const struct st__an_report *rep)
{
    const struct st__hist *h[2] = {&s->run[0]->hist, &s->run[1]->hist};
    fputs("{\"name\":", f);
    st__json_fputs(f, s->name);
    fputs(",\"group\":", f);
    if (s->group)
        st__json_fputs(f, s->group);
    else
        fputs("null", f);
    for (int k = 0; k < 2; k++) {
        fprintf(f, ",\"%s\":{", run_name[k]);
        st__an_span_json(f, s->run[k], rep);
        fputc('}', f);
    }
    fputs(",\"change_pct\":{", f);
    json_change(f, "count", (double)h[0]->count, (double)h[1]->count);
    fputc(',', f);
    bool both = s->tested;
    json_change(f, "min", both ? (double)h[0]->min : 0, (double)h[1]->min);
    fputc(',', f);
    json_change(f, "mean", both ? (double)h[0]->total / (double)h[0]->count : 0,
                both ? (double)h[1]->total / (double)h[1]->count : 0);
    for (unsigned q = 0; q < ST__AN_NQ; q++) {
        fputc(',', f);
        json_change(f, st__an_qname[q], both ? (double)st__hist_quantile(h[0], st__an_q[q]) : 0,
                    (double)st__hist_quantile(h[1], st__an_q[q]));
    }
    fputc(',', f);
    json_change(f, "max", both ? (double)h[0]->max : 0, (double)h[1]->max);
    fputc(',', f);
    json_change(f, "total", (double)h[0]->total, (double)h[1]->total);
    fputs("},\"test\":\"mann-whitney-u\",", f);
    json_double(f, "p_value", s->tested, s->test.p);
    fputc(',', f);
    json_double(f, "u", s->tested, s->test.u);
    fputc(',', f);
    json_double(f, "z", s->tested, s->test.z);
    fputc(',', f);
    json_double(f, "effect", s->tested, s->test.effect);
    fprintf(f, ",\"significant\":%s}", s->significant ? "true" : "false");
    (void)c;
}

int st__an_write_compare_json(FILE *f, const struct st__an_comparison *c, const struct st__an_report *rep)
{
    fprintf(f, "{\"test\":\"mann-whitney-u\",\"alpha\":%g,", c->alpha);
    json_run(f, c, rep, 0);
    fputc(',', f);
    json_run(f, c, rep, 1);
    fputc(',', f);
    json_events(f, c);
    fputs(",\"spans\":[", f);
    for (size_t i = 0; i < c->nspans; i++) {
        if (i)
            fputc(',', f);
        json_span(f, c, &c->spans[i], rep);
    }
    fputs("]}\n", f);
    return ferror(f) ? -1 : 0;
}
