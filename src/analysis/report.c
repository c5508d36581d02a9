/* Latency reports: text for a terminal and JSON (analysis.h; the fields in simpletrace-latency(1)). */
#include "analysis.h"
#include "duration.h"
#include "json_escape.h"

#include <inttypes.h>
#include <string.h>

const double st__an_q[ST__AN_NQ] = {0.50, 0.90, 0.99, 0.999};
const char *const st__an_qname[ST__AN_NQ] = {"p50", "p90", "p99", "p999"};

#define BAR_WIDTH 40

/* "--from=X --to=Y" around a span, counted from the reader's origin as print counts them. */
static void window(const struct st__an_result *res, const struct st__an_slow *w, char *buf, size_t len)
{
    uint64_t o = res->have_origin ? res->origin_ns : res->first_ns;
    uint64_t from = w->begin_ns > o ? w->begin_ns - o : 0, to = w->begin_ns + w->duration_ns - o;
    snprintf(buf, len, "--from=%" PRIu64 " --to=%" PRIu64, from, w->begin_ns + w->duration_ns > o ? to : 0);
}

/* --- text ------------------------------------------------------------------------------------------ */

static const char *dur(char *buf, size_t len, uint64_t ns)
{
    return st__duration_text(buf, len, (int64_t)ns);
}

/* The mean as both formats show it: the total over the count, rounded to the nearest ns. */
static uint64_t mean_ns(const struct st__hist *h)
{
    return h->count ? (h->total + h->count / 2) / h->count : 0;
}

static void text_row(FILE *f, const struct st__an_span *s, int name_w, int group_w)
{
    char b[ST__AN_NQ + 4][32];
    const struct st__hist *h = &s->hist;
    fprintf(f, "%-*s %-*s %9" PRIu64 " %11s %11s", name_w, s->name, group_w, s->group ? s->group : "", h->count,
            h->count ? dur(b[0], sizeof b[0], h->min) : "-",
            h->count ? dur(b[1], sizeof b[1], mean_ns(h)) : "-");
    for (unsigned q = 0; q < ST__AN_NQ; q++)
        fprintf(f, " %11s", h->count ? dur(b[2 + q], sizeof b[2 + q], st__hist_quantile(h, st__an_q[q])) : "-");
    fprintf(f, " %11s %11s\n", h->count ? dur(b[2 + ST__AN_NQ], sizeof b[0], h->max) : "-",
            dur(b[3 + ST__AN_NQ], sizeof b[0], h->total));
}

static void text_histogram(FILE *f, const struct st__hist *h)
{
    struct st__hist_band band[65];
    size_t n = st__hist_bands(h, band);
    uint64_t most = 0;
    for (size_t i = 0; i < n; i++)
        most = band[i].count > most ? band[i].count : most;
    for (size_t i = 0; i < n; i++) {
        char lo[32], hi[32];
        int bar = most ? (int)((band[i].count * BAR_WIDTH + most - 1) / most) : 0;
        fprintf(f, "    [%11s, %11s) %9" PRIu64 " |%.*s\n", dur(lo, sizeof lo, band[i].lo), dur(hi, sizeof hi, band[i].hi),
                band[i].count, bar, "########################################");
    }
}

static void text_slowest(FILE *f, const struct st__an_result *res, const struct st__an_span *s,
                         const struct st__an_report *rep)
{
    for (unsigned i = 0; i < s->nslow; i++) {
        const struct st__an_slow *w = &s->slow[i];
        char d[32], at[32], win[96];
        uint64_t o = res->have_origin ? res->origin_ns : res->first_ns;
        window(res, w, win, sizeof win);
        fprintf(f, "    %11s  at +%s  pid %" PRIu32 " tid %" PRIu32, dur(d, sizeof d, w->duration_ns),
                dur(at, sizeof at, w->begin_ns > o ? w->begin_ns - o : 0), w->pid, w->tid);
        if (w->end_tid != w->tid)
            fprintf(f, " (ended on tid %" PRIu32 ")", w->end_tid);
        if (w->has_key)
            fprintf(f, " key %s", w->key);
        fprintf(f, "\n      %s %s\n", rep->print_prefix ? rep->print_prefix : "simpletrace print", win);
    }
}

int st__an_write_text(FILE *f, const struct st__an_result *res, const struct st__an_report *rep)
{
    int name_w = 4, group_w = 0;
    for (size_t i = 0; i < res->nspans; i++) {
        int n = (int)strlen(res->spans[i]->name), g = res->spans[i]->group ? (int)strlen(res->spans[i]->group) : 0;
        name_w = n > name_w ? n : name_w;
        group_w = g > group_w ? g : group_w;
    }
    if (res->nspans && res->spans[0]->group && group_w < 5)
        group_w = 5;
    if (res->nspans == 0) {
        fprintf(f, "no spans in %s: no begin and end events were paired (see --pair)\n", rep->title);
        return ferror(f) ? -1 : 0;
    }
    fprintf(f, "%-*s %-*s %9s %11s %11s %11s %11s %11s %11s %11s %11s\n", name_w, "span", group_w,
            res->spans[0]->group ? "group" : "", "count", "min", "mean", "p50", "p90", "p99", "p99.9", "max", "total");
    for (size_t i = 0; i < res->nspans; i++)
        text_row(f, res->spans[i], name_w, group_w);
    for (size_t i = 0; i < res->nspans; i++) {
        const struct st__an_span *s = res->spans[i];
        char self[32];
        fprintf(f, "\n%s%s%s: %" PRIu64 " span%s, self time %s", s->name, s->group ? " in group " : "",
                s->group ? s->group : "", s->hist.count, s->hist.count == 1 ? "" : "s",
                dur(self, sizeof self, s->self_total));
        if (s->unfinished || s->unmatched_end || s->key_reused)
            fprintf(f, "; not measured: %" PRIu64 " unfinished, %" PRIu64 " end%s without begin, %" PRIu64
                       " key%s reused", s->unfinished, s->unmatched_end, s->unmatched_end == 1 ? "" : "s",
                    s->key_reused, s->key_reused == 1 ? "" : "s");
        fputc('\n', f);
        text_histogram(f, &s->hist);
        if (s->nslow)
            fprintf(f, "  slowest:\n");
        text_slowest(f, res, s, rep);
    }
    return ferror(f) ? -1 : 0;
}

/* --- JSON ------------------------------------------------------------------------------------------ */

static void json_str(FILE *f, const char *s)
{
    st__json_fputs(f, s);
}

static void json_num_or_null(FILE *f, const char *key, bool have, uint64_t v)
{
    if (have)
        fprintf(f, ",\"%s\":%" PRIu64, key, v);
    else
        fprintf(f, ",\"%s\":null", key);
}

static void json_slowest(FILE *f, const struct st__an_result *res, const struct st__an_span *s,
                         const struct st__an_report *rep)
{
    fputs(",\"slowest\":[", f);
    for (unsigned i = 0; i < s->nslow; i++) {
        const struct st__an_slow *w = &s->slow[i];
        char win[96], cmd[4200];
        window(res, w, win, sizeof win);
        fprintf(f, "%s{\"begin_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64 ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
                   ",\"end_tid\":%" PRIu32 ",\"key\":",
                i ? "," : "", w->begin_ns, w->duration_ns, w->pid, w->tid, w->end_tid);
        if (!w->has_key)
            fputs("null", f);
        else if (w->key_is_number)
            fputs(w->key, f);
        else
            json_str(f, w->key);
        snprintf(cmd, sizeof cmd, "%s %s", rep->print_prefix ? rep->print_prefix : "simpletrace print", win);
        fputs(",\"print\":", f);
        json_str(f, cmd);
        fputc('}', f);
    }
    fputc(']', f);
}

void st__an_span_json(FILE *f, const struct st__an_span *s, const struct st__an_report *rep)
{
    (void)rep;
    const struct st__hist *h = &s->hist;
    bool any = h->count > 0;
    fprintf(f, "\"count\":%" PRIu64 ",\"unfinished\":%" PRIu64 ",\"unmatched_end\":%" PRIu64 ",\"key_reused\":%" PRIu64,
            h->count, s->unfinished, s->unmatched_end, s->key_reused);
    json_num_or_null(f, "min_ns", any, h->min);
    json_num_or_null(f, "mean_ns", any, mean_ns(h));
    for (unsigned q = 0; q < ST__AN_NQ; q++) {
        char key[16];
        snprintf(key, sizeof key, "%s_ns", st__an_qname[q]);
        json_num_or_null(f, key, any, st__hist_quantile(h, st__an_q[q]));
    }
    json_num_or_null(f, "max_ns", any, h->max);
    fprintf(f, ",\"total_ns\":%" PRIu64 ",\"self_ns\":%" PRIu64 ",\"histogram\":[", h->total, s->self_total);
    struct st__hist_band band[65];
    size_t n = st__hist_bands(h, band);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s{\"lo_ns\":%" PRIu64 ",\"hi_ns\":%" PRIu64 ",\"count\":%" PRIu64 "}", i ? "," : "", band[i].lo,
                band[i].hi, band[i].count);
    fputc(']', f);
}

int st__an_write_json(FILE *f, const struct st__an_result *res, const struct st__an_report *rep)
{
    fputs("{\"spans\":[", f);
    for (size_t i = 0; i < res->nspans; i++) {
        const struct st__an_span *s = res->spans[i];
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        json_str(f, s->name);
        fputs(",\"group\":", f);
        if (s->group)
            json_str(f, s->group);
        else
            fputs("null", f);
        fputc(',', f);
        st__an_span_json(f, s, rep);
        json_slowest(f, res, s, rep);
        fputc('}', f);
    }
    fputs("],\"events\":[", f);
    for (size_t i = 0; i < res->nevents; i++) {
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        json_str(f, res->events[i].name);
        fprintf(f, ",\"count\":%" PRIu64 "}", res->events[i].count);
    }
    fprintf(f, "],\"records\":%" PRIu64 ",\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 ",\"partial\":%s}\n",
            res->records, res->first_ns, res->last_ns, res->sum.partial ? "true" : "false");
    return ferror(f) ? -1 : 0;
}
