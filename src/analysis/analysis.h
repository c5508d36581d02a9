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

/* Checks the syntax of one rule of pairs (export's grammar) before a run. 0, or -EINVAL with what is wrong in err. */
int st__an_check_pair(const char *rule, char *err, size_t errlen);

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

/* The percentiles every report shows, in this order, with their JSON names. */
#define ST__AN_NQ 4
extern const double st__an_q[ST__AN_NQ];      /* 0.50 0.90 0.99 0.999 */
extern const char *const st__an_qname[ST__AN_NQ]; /* "p50" "p90" "p99" "p999" */

#endif /* ST_ANALYSIS_H */
