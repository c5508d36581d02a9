/*
 * Analyzer runs, in the manner of simpletrace.py's Analyzer2: a callback
 * per event name, a catch-all for the rest, begin and end around the run.
 * Names are resolved once into a table indexed by event index, so
 * dispatching a record is one load.
 */
#include <errno.h>
#include <stdlib.h>

#include "reader_internal.h"

/* The callback of each event index; it grows with a growing catalog. */
struct table {
    st_record_fn *fn;
    size_t n;
};

/*
 * Fills the table for every event the catalog has now from the handlers,
 * stepping through them by the first one's struct_size; later handlers
 * for a name win. 0 or -ENOMEM.
 */
static int resolve(const struct st_analyzer *a, size_t stride, const struct st_catalog *cat, struct table *t)
{
    size_t n = st_catalog_count(cat) + 1;
    st_record_fn *fn = calloc(n, sizeof *fn);
    if (!fn)
        return -ENOMEM;
    free(t->fn);
    t->fn = fn;
    t->n = n;
    for (size_t i = 0; i < a->nhandlers; i++) {
        struct st_analyzer_handler h;
        st__struct_in(&h, sizeof h, (const char *)a->handlers + i * stride, stride);
        const struct st_event_info *ev = h.event ? st_catalog_find(cat, h.event) : NULL;
        if (ev)
            fn[ev->index] = h.fn;
    }
    return 0;
}

/* Feeds every record to its callback; the run's status. */
static int dispatch(const struct st_analyzer *a, size_t stride, struct st_reader *r, struct table *t)
{
    const struct st_record *rec;
    int ret;
    while ((ret = st_reader_next(r, &rec)) == 1) {
        const struct st_event_info *ev = rec->event;
        if (ev && ev->index >= t->n && (ret = resolve(a, stride, st_reader_catalog(r), t)) < 0)
            return ret;
        st_record_fn fn = ev ? t->fn[ev->index] : NULL;
        if (!fn)
            fn = a->catchall;
        if (fn && (ret = fn(rec, a->opaque)) != 0)
            return ret;
    }
    return ret;
}

ST_API int st_analyzer_run(const struct st_analyzer *caller, struct st_reader *r)
{
    struct st_analyzer a;
    struct table t = {0};
    size_t stride = 0;
    if (st__struct_size(caller) < ST__ANALYZER_V1)
        return -EINVAL;
    st__struct_in(&a, sizeof a, caller, st__struct_size(caller));
    if (a.nhandlers && (stride = st__struct_size(a.handlers)) < ST__ANALYZER_HANDLER_V1)
        return -EINVAL;
    if (resolve(&a, stride, st_reader_catalog(r), &t) < 0)
        return -ENOMEM;
    int status = a.begin ? a.begin(a.opaque) : 0;
    if (status == 0)
        status = dispatch(&a, stride, r, &t);
    if (a.end)
        a.end(status, a.opaque);
    free(t.fn);
    return status;
}
