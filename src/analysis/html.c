/*
 * Latency and compare reports as one self-contained HTML page (analysis.h):
 * the figures in tables and each span's histogram as inline SVG, the
 * power-of-two bands of the text and JSON reports, one bar per band (for
 * compare, the base's and the new run's bars side by side in each band).
 *
 * Nothing is fetched: the style and the one small script are inline, and a
 * Content-Security-Policy forbids every other source, so the page opens
 * the same from a mail attachment, an air-gapped host or a CI artifact.
 * Each bar carries its band and count (data-lo-ns, data-hi-ns, data-count,
 * and a <title> a browser shows on hover). The script counts the bars the
 * browser parsed as SVG and writes that into the page's foot (and into
 * body's data-rendered, which the tests read back from a headless browser).
 */
#include "analysis.h"
#include "duration.h"

#include <inttypes.h>
#include <string.h>

#define BAR_W 18     /* one bar's width (px) */
#define PLOT_H 140   /* the tallest bar */
#define TOP 20       /* room above the bars */
#define BOTTOM 48    /* room below for the band labels */
#define LEFT 8

static const char *run_name[2] = {"base", "new"};

/* Text (or an attribute value) with the characters HTML gives a meaning escaped. */
static void html_puts(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

static const char *dur(char *buf, size_t len, uint64_t ns)
{
    return st__duration_text(buf, len, (int64_t)ns);
}

static void head(FILE *f, const char *what, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
          "script-src 'unsafe-inline'\">\n<title>",
          f);
    fprintf(f, "simpletrace %s: ", what);
    html_puts(f, title);
    fputs("</title>\n<style>\n"
          "body{font-family:sans-serif;margin:1.5em;color:#222}\n"
          "table{border-collapse:collapse;margin:1em 0}\n"
          "th,td{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right;font-variant-numeric:tabular-nums;"
          "white-space:nowrap}\n"
          "th:first-child,td:first-child,td.name{text-align:left}\n"
          "td.sig{color:#b00;font-weight:bold}\n"
          "section.span{display:inline-block;vertical-align:top;margin:0 2em 1.5em 0}\n"
          "h2{font-size:1em;margin:.5em 0}\n"
          "svg.hist{font-size:10px}\n"
          "rect.bar{fill:#4a7bd0}\nrect.bar.new{fill:#e0803a}\n"
          "rect.key{fill:#4a7bd0}\nrect.key.new{fill:#e0803a}\n"
          "</style></head><body>\n<h1>simpletrace ",
          f);
    fprintf(f, "%s: ", what);
    html_puts(f, title);
    fputs("</h1>\n", f);
}

/* The script: counts the bars parsed as SVG per histogram and says so in the page's foot. */
static void foot(FILE *f)
{
    fputs("<p id=\"rendered\"></p>\n<script>\n"
          "(function () {\n"
          "  var out = [], bars = 0;\n"
          "  document.querySelectorAll('svg.hist').forEach(function (svg) {\n"
          "    var h = {span: svg.getAttribute('data-span'), group: svg.getAttribute('data-group'), bars: []};\n"
          "    svg.querySelectorAll('rect.bar').forEach(function (r) {\n"
          "      if (!(r instanceof SVGRectElement)) throw new Error('a bar is not an SVG rect');\n"
          "      h.bars.push({run: r.getAttribute('data-run'), lo_ns: Number(r.getAttribute('data-lo-ns')),\n"
          "                   count: Number(r.getAttribute('data-count')), height: r.getBBox().height});\n"
          "      bars++;\n"
          "    });\n"
          "    out.push(h);\n"
          "  });\n"
          "  document.body.setAttribute('data-rendered', JSON.stringify(out));\n"
          "  document.getElementById('rendered').textContent = out.length + ' histograms, ' + bars + ' bars';\n"
          "})();\n</script>\n</body></html>\n",
          f);
}

/* --- histograms ----------------------------------------------------------------------------------- */

/* The band of a power-of-two lower bound: 0 for {0}, k for [2^(k-1), 2^k). */
static unsigned band_index(uint64_t lo)
{
    return lo ? 64u - (unsigned)__builtin_clzll(lo) : 0;
}

/* h's band counts by band index into cnt (65 zeroed), widening [*first, *last]. */
static void band_counts(const struct st__hist *h, uint64_t *cnt, unsigned *first, unsigned *last)
{
    struct st__hist_band band[65];
    size_t n = st__hist_bands(h, band);
    for (size_t i = 0; i < n; i++) {
        unsigned k = band_index(band[i].lo);
        cnt[k] = band[i].count;
        *first = k < *first ? k : *first;
        *last = k > *last ? k : *last;
    }
}

static uint64_t band_lo(unsigned k)
{
    return k ? UINT64_C(1) << (k - 1) : 0;
}

static uint64_t band_hi(unsigned k)
{
    return k == 64 ? UINT64_MAX : UINT64_C(1) << k;
}

/*
 * The histogram of one span as an SVG: nruns histograms (1 for latency, 2
 * for compare) over the bands either has, side by side in each band.
 */
static void svg_histogram(FILE *f, const char *name, const char *group, const struct st__hist *const *h, int nruns)
{
    uint64_t cnt[2][65] = {{0}}, most = 0;
    unsigned first = 64, last = 0;
    for (int k = 0; k < nruns; k++)
        band_counts(h[k], cnt[k], &first, &last);
    unsigned nb = first <= last ? last - first + 1 : 0;
    for (unsigned b = first; b <= last && nb; b++)
        for (int k = 0; k < nruns; k++)
            most = cnt[k][b] > most ? cnt[k][b] : most;
    unsigned slot = (unsigned)nruns * BAR_W + 6, width = LEFT * 2 + (nb ? nb : 4) * slot;
    width = width < 200 ? 200 : width;
    fprintf(f, "<svg class=\"hist\" role=\"img\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" data-span=\"", width,
            TOP + PLOT_H + BOTTOM, width, TOP + PLOT_H + BOTTOM);
    html_puts(f, name);
    fputs("\" data-group=\"", f);
    html_puts(f, group ? group : "");
    fputs("\">\n", f);
    if (nb == 0) {
        fprintf(f, "<text x=\"%u\" y=\"%u\">no span ended</text>\n</svg>\n", LEFT, TOP + PLOT_H / 2);
        return;
    }
    fprintf(f, "<text x=\"%u\" y=\"12\">%" PRIu64 " at most per band</text>\n", LEFT, most);
    fprintf(f, "<line x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\" stroke=\"#888\"/>\n", LEFT, TOP + PLOT_H,
            width - LEFT, TOP + PLOT_H);
    unsigned label_every = (nb + 11) / 12;
    for (unsigned b = first; b <= last; b++) {
        unsigned x0 = LEFT + (b - first) * slot + 3;
        char lo[32], hi[32];
        dur(lo, sizeof lo, band_lo(b));
        dur(hi, sizeof hi, band_hi(b));
        for (int k = 0; k < nruns; k++) {
            uint64_t n = cnt[k][b];
            /* At least a pixel for a band that has values: a lone outlier stays visible. */
            unsigned bar = most ? (unsigned)((n * PLOT_H + most - 1) / most) : 0;
            fprintf(f, "<rect class=\"bar%s\" data-run=\"%s\" data-lo-ns=\"%" PRIu64 "\" data-hi-ns=\"%" PRIu64
                       "\" data-count=\"%" PRIu64 "\" x=\"%u\" y=\"%u\" width=\"%u\" height=\"%u\"><title>%s%s[%s, %s): %" PRIu64
                       "</title></rect>\n",
                    nruns == 2 && k == 1 ? " new" : "", nruns == 2 ? run_name[k] : "run", band_lo(b), band_hi(b), n,
                    x0 + (unsigned)k * BAR_W, TOP + PLOT_H - bar, BAR_W, bar, nruns == 2 ? run_name[k] : "",
                    nruns == 2 ? " " : "", lo, hi, n);
        }
        if ((b - first) % label_every == 0)
            fprintf(f, "<text x=\"%u\" y=\"%u\" transform=\"rotate(40 %u %u)\">%s</text>\n", x0, TOP + PLOT_H + 12, x0,
                    TOP + PLOT_H + 12, lo);
    }
    fputs("</svg>\n", f);
}

static void section_start(FILE *f, const char *name, const char *group)
{
    fputs("<section class=\"span\"><h2>", f);
    html_puts(f, name);
    if (group) { /* "": spans whose begin lacks --by's argument */
        fputs(" <small>in group ", f);
        html_puts(f, *group ? group : "\"\"");
        fputs("</small>", f);
    }
    fputs("</h2>\n", f);
}

/* A table cell holding a duration, or "-" when there is none. */
static void td_dur(FILE *f, bool have, uint64_t ns)
{
    char b[32];
    fprintf(f, "<td>%s</td>", have ? dur(b, sizeof b, ns) : "-");
}

static void td_name(FILE *f, const char *name, const char *group)
{
    fputs("<td class=\"name\">", f);
    html_puts(f, name);
    fputs("</td><td class=\"name\">", f);
    html_puts(f, group ? group : "");
    fputs("</td>", f);
}

/* --- latency ------------------------------------------------------------------------------------ */

int st__an_write_html(FILE *f, const struct st__an_result *res, const struct st__an_report *rep)
{
    head(f, "latency", rep->title ? rep->title : "");
    fprintf(f, "<p>%" PRIu64 " records, %zu span name%s%s.</p>\n", res->records, res->nspans, res->nspans == 1 ? "" : "s",
            res->sum.partial ? "; the trace is damaged: these are the records before the damage" : "");
    fputs("<table class=\"figures\"><thead><tr><th>span</th><th>group</th><th>count</th><th>min</th><th>mean</th>"
          "<th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>total</th><th>self</th>"
          "<th>unfinished</th><th>end without begin</th><th>key reused</th></tr></thead><tbody>\n",
          f);
    for (size_t i = 0; i < res->nspans; i++) {
        const struct st__an_span *s = res->spans[i];
        const struct st__hist *h = &s->hist;
        bool any = h->count > 0;
        fputs("<tr>", f);
        td_name(f, s->name, s->group);
        fprintf(f, "<td>%" PRIu64 "</td>", h->count);
        td_dur(f, any, h->min);
        td_dur(f, any, any ? h->total / h->count : 0);
        for (unsigned q = 0; q < ST__AN_NQ; q++)
            td_dur(f, any, st__hist_quantile(h, st__an_q[q]));
        td_dur(f, any, h->max);
        td_dur(f, true, h->total);
        td_dur(f, true, s->self_total);
        fprintf(f, "<td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td></tr>\n", s->unfinished,
                s->unmatched_end, s->key_reused);
    }
    fputs("</tbody></table>\n", f);
    for (size_t i = 0; i < res->nspans; i++) {
        const struct st__an_span *s = res->spans[i];
        const struct st__hist *h[1] = {&s->hist};
        section_start(f, s->name, s->group);
        svg_histogram(f, s->name, s->group, h, 1);
        fputs("</section>\n", f);
    }
    foot(f);
    return ferror(f) ? -1 : 0;
}

/* --- compare ------------------------------------------------------------------------------------- */

/* A change in percent as a cell ("" when there is none). */
static void td_change(FILE *f, bool have, double base, double v)
{
    double pct;
    if (have && st__an_change_pct(base, v, &pct))
        fprintf(f, "<td>%+.1f%%</td>", pct);
    else
        fputs("<td></td>", f);
}

static void compare_events(FILE *f, const struct st__an_comparison *c)
{
    fputs("<table class=\"events\"><thead><tr><th>event</th><th>base</th><th>new</th><th>change</th>"
          "<th>base/s</th><th>new/s</th><th>change</th></tr></thead><tbody>\n",
          f);
    for (size_t i = 0; i < c->nevents; i++) {
        const struct st__an_cmp_event *e = &c->events[i];
        if (!e->count[0] && !e->count[1])
            continue;
        double rate[2];
        bool rates = c->seconds[0] > 0 && c->seconds[1] > 0;
        fputs("<tr><td class=\"name\">", f);
        html_puts(f, e->name);
        fprintf(f, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td>", e->count[0], e->count[1]);
        td_change(f, true, (double)e->count[0], (double)e->count[1]);
        for (int k = 0; k < 2; k++) {
            rate[k] = c->seconds[k] > 0 ? (double)e->count[k] / c->seconds[k] : 0;
            if (c->seconds[k] > 0)
                fprintf(f, "<td>%.4g</td>", rate[k]);
            else
                fputs("<td>-</td>", f);
        }
        td_change(f, rates, rate[0], rate[1]);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

static void compare_spans(FILE *f, const struct st__an_comparison *c)
{
    fputs("<table class=\"spans\"><thead><tr><th>span</th><th>group</th><th>count base</th><th>count new</th>", f);
    for (unsigned q = 0; q < 3; q++)
        fprintf(f, "<th>%s base</th><th>%s new</th><th>change</th>", st__an_qname[q], st__an_qname[q]);
    fputs("<th>p-value</th><th>significant</th></tr></thead><tbody>\n", f);
    for (size_t i = 0; i < c->nspans; i++) {
        const struct st__an_cmp_span *s = &c->spans[i];
        const struct st__hist *h[2] = {&s->run[0]->hist, &s->run[1]->hist};
        fputs("<tr>", f);
        td_name(f, s->name, s->group);
        fprintf(f, "<td>%" PRIu64 "</td><td>%" PRIu64 "</td>", h[0]->count, h[1]->count);
        for (unsigned q = 0; q < 3; q++) {
            uint64_t v[2] = {st__hist_quantile(h[0], st__an_q[q]), st__hist_quantile(h[1], st__an_q[q])};
            td_dur(f, h[0]->count > 0, v[0]);
            td_dur(f, h[1]->count > 0, v[1]);
            td_change(f, s->tested, (double)v[0], (double)v[1]);
        }
        if (s->tested)
            fprintf(f, "<td>%.3g</td><td%s>%s</td></tr>\n", s->test.p, s->significant ? " class=\"sig\"" : "",
                    s->significant ? "yes" : "no");
        else
            fputs("<td>-</td><td>not tested</td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

int st__an_write_compare_html(FILE *f, const struct st__an_comparison *c, const struct st__an_report *rep)
{
    char title[1024];
    snprintf(title, sizeof title, "%s vs %s", rep->run_title[0] ? rep->run_title[0] : "base",
             rep->run_title[1] ? rep->run_title[1] : "new");
    head(f, "compare", title);
    for (int k = 0; k < 2; k++) {
        char d[32];
        fprintf(f, "<p>%s: ", run_name[k]);
        html_puts(f, rep->run_title[k] ? rep->run_title[k] : run_name[k]);
        fprintf(f, ", %" PRIu64 " records in %s%s</p>\n", c->run[k]->records,
                dur(d, sizeof d, (uint64_t)(c->seconds[k] * 1e9 + 0.5)),
                c->run[k]->sum.partial ? " (damaged: the records before the damage)" : "");
    }
    fprintf(f, "<p>Durations compared with the Mann-Whitney U test; significant when p &lt; %g.</p>\n", c->alpha);
    compare_events(f, c);
    compare_spans(f, c);
    fputs("<p class=\"legend\"><svg width=\"10\" height=\"10\"><rect class=\"key\" width=\"10\" height=\"10\"/></svg> "
          "base <svg width=\"10\" height=\"10\"><rect class=\"key new\" width=\"10\" height=\"10\"/></svg> new</p>\n",
          f);
    for (size_t i = 0; i < c->nspans; i++) {
        const struct st__an_cmp_span *s = &c->spans[i];
        const struct st__hist *h[2] = {&s->run[0]->hist, &s->run[1]->hist};
        section_start(f, s->name, s->group);
        svg_histogram(f, s->name, s->group, h, 2);
        fputs("</section>\n", f);
    }
    foot(f);
    return ferror(f) ? -1 : 0;
}
