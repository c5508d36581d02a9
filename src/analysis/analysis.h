/*
 * Answers from a trace: the spans its paired events make (the pairing and
 * nesting of src/export/export.h, keyed rules "@ARG" included), measured
 * per span name and group: count, exact min/max/mean/total, percentiles
 * from a log-linear histogram (hist.h), the slowest spans; and two runs
 * compared. `simpletrace latency` and `compare` and the Python module are
 * its front ends.
 *
 * The spans come from the export engine run with a writer of our own
 * (latency.c), so a span here is exactly a call in an export: same rules,
 * same threads, same function trace merged with --functions. Memory
 * follows the open spans, the groups and the histograms' buckets, never
 * the length of the trace.
 */
#ifndef ST_ANALYSIS_H
#define ST_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <simpletrace/reader.h>

#include "export.h"
#include "hist.h"

/* How figures are split (--by). */
enum st__an_by {
    ST__AN_BY_NONE,
    ST__AN_BY_THREAD,  /* the thread of the span's begin */
    ST__AN_BY_PROCESS, /* its process */
    ST__AN_BY_ARG,     /* the value of argument by_arg of its begin record (its end's for an end without begin) */
};

struct st__an_options {
    const char *const *pairs; /* as st__export_options: "BEGIN:END[=NAME][@ARG]", before the built-in ones */
    size_t npairs;
    bool no_default_pairs;
    const char *functions;    /* a function trace (uftrace.data) of the same run: its calls are spans too */
    enum st__an_by by;
    const char *by_arg;       /* ST__AN_BY_ARG: the argument's name */
    unsigned slowest;         /* spans kept per span name and group, slowest first */
    const char *trace_name;   /* for messages */
    /* As st__export_options.not_damage: a reader error that is not damage (nothing is reported). */
    bool (*not_damage)(const struct st_reader *r, void *opaque);
    void *not_damage_opaque;
};

/* One of the slowest spans. */
struct st__an_slow {
    uint64_t begin_ns, duration_ns; /* on the trace's clock */
    uint32_t pid, tid;              /* the process shown by the exports, the thread of the begin */
    uint32_t end_tid;               /* the thread of the end (another one for a keyed span) */
    bool has_key, key_is_number;    /* a keyed span's key: a number (decimal text) or a string */
    char key[96];                   /* as print shows the value (cut to fit) */
};

/* The figures of one span name in one group. */
struct st__an_span {
    const char *name;   /* the function (the pairing's name); owned by the result */
    const char *group;  /* NULL without --by; owned by the result */
    uint32_t func, gid;   /* the function's and group's ids during the run */
    struct st__hist hist; /* durations of the spans that ended: count, min, max, total exact */
    uint64_t self_total;  /* their total minus the time in spans nested inside them */
    uint64_t unfinished;    /* begins never ended, or closed by an outer span's end */
    uint64_t unmatched_end; /* ends without an open begin */
    uint64_t key_reused;    /* keyed begins ended by the same key beginning again */
    struct st__an_slow *slow; /* the slowest, up to the option's count, slowest first once finished */
    unsigned nslow;
};

/* Records of one event (compare's rates). */
struct st__an_event {
    const char *name;
    uint64_t count;
};

struct st__an_result {
    struct st__an_span **spans; /* sorted by name, then group */
    size_t nspans;
    struct st__an_event *events; /* declared events, in catalog order, with their record counts */
    size_t nevents;
    uint64_t records;        /* records analysed (after the reader's filters) */
    uint64_t first_ns, last_ns; /* first and last timestamp analysed */
    uint64_t origin_ns;      /* the reader's origin: what print's --from/--to count from */
    bool have_origin;
    struct st__export_summary sum; /* what the engine saw (unmatched ends, never ended, clamped ...) */
    const char *unused_rule;       /* a --pair that paired nothing, or NULL */
    void *priv;                    /* latency.c's */
};

/*
 * Reads every remaining record of r and measures its spans into a new
 * result *out (free with st__an_result_free()). Returns 0; the reader's
 * error code when the trace is bad (st_reader_error() says where): *out
 * then holds the records before the damage when there were any
 * (sum.partial), else it is NULL; or another negative errno with err
 * saying what (a bad rule, memory).
 */
int st__an_latency(struct st_reader *r, const struct st__an_options *o, struct st__an_result **out, char *err,
                   size_t errlen);

void st__an_result_free(struct st__an_result *res);

/* --- reports (report.c) ------------------------------------------------------------------ */

struct st__an_report {
    const char *print_prefix; /* "simpletrace print ARGS" shown for each slowest span (--from/--to appended) */
    const char *title;        /* what was analysed, for text and HTML headings */
    const char *run_title[2]; /* compare's: the base's and the new run's operand */
    bool color;               /* unused for now: text is plain */
};

/* The result as text for a terminal: a table, then each span's histogram and slowest spans. */
int st__an_write_text(FILE *f, const struct st__an_result *res, const struct st__an_report *rep);

/* The result as one JSON object (simpletrace-latency(1) names the fields). */
int st__an_write_json(FILE *f, const struct st__an_result *res, const struct st__an_report *rep);

/* One span's latency fields as JSON members (no braces), for compare's "base" and "new". */
void st__an_span_json(FILE *f, const struct st__an_span *s, const struct st__an_report *rep);

/* The result as one self-contained HTML page: a table, each span's histogram as SVG. */
int st__an_write_html(FILE *f, const struct st__an_result *res, const struct st__an_report *rep);

/* --- two runs compared (compare.c) --------------------------------------------------------- */

/*
 * The Mann-Whitney U test of two samples given as histograms: the values
 * of one bucket are taken as ties (a bucket is 0.4% wide), the normal
 * approximation with the tie correction of the variance and a continuity
 * correction of 0.5, two-sided.
 */
struct st__an_mwu {
    double u;      /* U of the second sample: pairs (x of the first, y of the second) with y > x, ties half */
    double effect; /* u / (n1 * n2): how likely a value of the second exceeds one of the first (0.5: alike) */
    double z;      /* the standardised statistic; 0 when the variance is 0 */
    double p;      /* two-sided p-value; 1 when either sample is empty or every value ties */
};

/* Tests a against b into *out. */
void st__an_mwu(const struct st__hist *a, const struct st__hist *b, struct st__an_mwu *out);

/*
 * The change from base to new in percent into *pct; false when base is 0
 * (no percentage: compare's JSON writes null).
 */
bool st__an_change_pct(double base, double new_value, double *pct);

#define ST__AN_BASE 0
#define ST__AN_NEW 1

/* One event's records in both runs. */
struct st__an_cmp_event {
    const char *name;     /* owned by the base or the new result */
    uint64_t count[2];    /* base, new (0 when the run does not declare it) */
    bool declared[2];
};

/* One span name and group in both runs. */
struct st__an_cmp_span {
    const char *name, *group;         /* owned by the results */
    const struct st__an_span *run[2]; /* base, new: an empty span (count 0) when a run has none */
    struct st__an_mwu test;           /* of the durations: new against base */
    bool tested;                      /* both runs have spans of it */
    bool significant;                 /* tested and test.p < alpha */
};

/* Two runs compared: base, then new. */
struct st__an_comparison {
    const struct st__an_result *run[2]; /* not owned */
    double seconds[2];                  /* each run's duration (last_ns - first_ns), for the rates */
    double alpha;                       /* significance level */
    struct st__an_cmp_event *events;    /* sorted by name */
    size_t nevents;
    struct st__an_cmp_span *spans;      /* sorted by name, then group */
    size_t nspans;
};

/*
 * Compares runs base and new (results of st__an_latency(), which must
 * outlive *out) at significance level alpha (0 < alpha < 1) into *out
 * (free with st__an_comparison_free()). 0 or -ENOMEM.
 */
int st__an_compare(const struct st__an_result *base, const struct st__an_result *new_run, double alpha,
                   struct st__an_comparison *out);

void st__an_comparison_free(struct st__an_comparison *c);

/* A figure of a span (or of an event: count and rate) that --fail-if watches. */
enum st__an_field {
    ST__AN_F_COUNT,
    ST__AN_F_RATE,
    ST__AN_F_MEAN,
    ST__AN_F_MIN,
    ST__AN_F_P50,
    ST__AN_F_P90,
    ST__AN_F_P99,
    ST__AN_F_P999,
    ST__AN_F_MAX,
    ST__AN_F_TOTAL,
};

/* Whether a field's change must also be significant (the durations' test) to count. */
bool st__an_field_tested(enum st__an_field f);

/* The field's name as --fail-if and JSON write it ("count", "p99" ...). */
const char *st__an_field_name(enum st__an_field f);

/* A --fail-if condition: [NAME:]FIELD OP SIGNED_PERCENT. */
struct st__an_cond {
    const char *text;   /* as given (not owned) */
    char *name;         /* the span's or event's name, NULL for every one (owned) */
    enum st__an_field field;
    char op;            /* '>' or '<' */
    double pct;         /* the threshold, signed */
};

/*
 * Parses text into *c (free with st__an_cond_free()). 0, or -EINVAL with
 * err saying what is wrong and at which character; -ENOMEM.
 */
int st__an_cond_parse(const char *text, struct st__an_cond *c, char *err, size_t errlen);

void st__an_cond_free(struct st__an_cond *c);

/* A condition met: by which span (group) or event, and by how much. */
struct st__an_hit {
    const struct st__an_cond *cond;
    const char *name, *group;   /* the span's or event's (group NULL for an event or without --by) */
    bool is_event;
    double base, new_value;     /* the field in both runs */
    bool infinite;              /* base was 0 and new is not: an increase without a percentage */
    double pct;                 /* the change, when not infinite */
    double p;                   /* the test's p-value (tested fields), else 1 */
};

/*
 * Calls hit(h, opaque) for each span and event where condition c is met
 * (a named one only for that name; events for count and rate only).
 * Returns how many met it; *named_seen tells whether c's name (if any) is
 * one it applies to in either run (false: a misspelt name, say so).
 */
size_t st__an_cond_eval(const struct st__an_comparison *cmp, const struct st__an_cond *c, bool *named_seen,
                        void (*hit)(const struct st__an_hit *h, void *opaque), void *opaque);

/* The comparison as text: events side by side, then each span's figures, change and test. */
int st__an_write_compare_text(FILE *f, const struct st__an_comparison *c, const struct st__an_report *rep);

/* The comparison as one JSON object (simpletrace-compare(1) names the fields). */
int st__an_write_compare_json(FILE *f, const struct st__an_comparison *c, const struct st__an_report *rep);

/* The comparison as one self-contained HTML page: tables, both runs' histograms per span as SVG. */
int st__an_write_compare_html(FILE *f, const struct st__an_comparison *c, const struct st__an_report *rep);

/* The percentiles every report shows, in this order, with their JSON names. */
#define ST__AN_NQ 4
extern const double st__an_q[ST__AN_NQ];      /* 0.50 0.90 0.99 0.999 */
extern const char *const st__an_qname[ST__AN_NQ]; /* "p50" "p90" "p99" "p999" */

#endif /* ST_ANALYSIS_H */
