/*
 * Analyzer runs, in the manner of simpletrace.py's Analyzer2: a callback
 * per event name, a catch-all for the rest, begin and end around the run.
 * Names are resolved once into a table indexed by event index, so
 * dispatching a record is one load.
 */
#include <errno.h>
#include <stdlib.h>

#include "reader_internal.h"

/*
 * Fills table (count + 1 entries) from the handlers, stepping through them
 * by the first one's struct_size; later handlers for a name win.
 */
static void resolve(const struct st_analyzer *a, size_t stride, const struct st_catalog *cat, st_record_fn *table)
{
    for (size_t i = 0; i < a->nhandlers; i++) {
        struct st_analyzer_handler h;
        st__struct_in(&h, sizeof h, (const char *)a->handlers + i * stride, stride);
        const struct st_event_info *ev = h.event ? st_catalog_find(cat, h.event) : NULL;
        if (ev)
            table[ev->index] = h.fn;
    }
}

/* Feeds every record to its callback; the run's status. */
static int dispatch(const struct st_analyzer *a, struct st_reader *r, st_record_fn *table)
{
    const struct st_record *rec;
    int ret;
    while ((ret = st_reader_next(r, &rec)) == 1) {
        st_record_fn fn = table[rec->event->index];
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
    size_t stride = 0;
    if (st__struct_size(caller) < ST__ANALYZER_V1)
        return -EINVAL;
    st__struct_in(&a, sizeof a, caller, st__struct_size(caller));
    if (a.nhandlers && (stride = st__struct_size(a.handlers)) < ST__ANALYZER_HANDLER_V1)
        return -EINVAL;
    const struct st_catalog *cat = st_reader_catalog(r);
    st_record_fn *table = calloc(cat->count + 1, sizeof *table);
    if (!table)
        return -ENOMEM;
    resolve(&a, stride, cat, table);
    int status = a.begin ? a.begin(a.opaque) : 0;
    if (status == 0)
        status = dispatch(&a, r, table);
    if (a.end)
        a.end(status, a.opaque);
    free(table);
    return status;
}
