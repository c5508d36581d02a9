/*
 * st_catalog_load_trace(): the declarations a trace carries, as a catalog
 * of their own. It sits above the reader and uses it as any caller does;
 * readers themselves need none of it (opened without a catalog, they read
 * the declarations with the records, in one pass).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "reader_internal.h"

ST_API int st_catalog_load_trace(struct st_catalog **out, const char *path, const struct st_reader_options *opts,
                                 char *errbuf, size_t errlen)
{
    struct st_reader_error err = {.struct_size = sizeof err};
    struct st_reader_options o = {.struct_size = sizeof o};
    const struct st_record *rec;
    struct st_reader *r;
    int ret;

    *out = NULL;
    if (opts)
        st__struct_in(&o, sizeof o, opts, st__struct_size(opts));
    o.events = NULL; /* no record is delivered: nothing to filter, align or follow */
    o.conflict = NULL;
    o.filter_tid = o.filter_pid = o.filter_from = o.filter_to = false;
    o.flags &= ~(unsigned)(ST_READER_FOLLOW | ST_READER_ALIGN_REALTIME);
    o.offsets_ns = NULL;
    o.noffsets = 0;
    if ((ret = st_reader_open(&r, path, NULL, &o, &err)) < 0) {
        if (errbuf)
            snprintf(errbuf, errlen, "%s: %s", path, err.message);
        return ret;
    }
    st__trace_scan_only(st__trace_of(r));
    while ((ret = st_reader_next(r, &rec)) > 0)
        ;
    struct st_catalog *cat = st__trace_take_catalog(st__trace_of(r));
    if (cat->count) { /* damage after them leaves the declarations before it: each precedes its records */
        *out = cat;
        ret = 0;
    } else if (ret < 0) {
        if (errbuf)
            st_reader_format_error(r, errbuf, errlen);
        st_catalog_free(cat);
    } else {
        ret = -ENODATA;
        if (errbuf)
            snprintf(errbuf, errlen,
                     "%s carries no event declarations (written by QEMU, or by simpletrace before 0.2): "
                     "give its trace-events files",
                     path);
        st_catalog_free(cat);
    }
    st_reader_close(r);
    return ret;
}
