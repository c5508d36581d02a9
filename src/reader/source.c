/*
 * The public functions every reader has (reader.h), for both kinds of
 * reader (reader_internal.h, "what a reader is"): one trace, or several
 * merged. Each hands the work to the reader's kind, or asks it for the
 * trace the accessors describe.
 */
#include <stdio.h>

#include "reader_internal.h"

ST_API int st_reader_next(struct st_reader *r, const struct st_record **rec)
{
    return r->ops->next(r, rec);
}

ST_API void st_reader_close(struct st_reader *r)
{
    if (r)
        r->ops->close(r);
}

ST_API const struct st_reader_error *st_reader_error(const struct st_reader *r)
{
    return r->ops->error(r);
}

ST_API size_t st_reader_input_count(const struct st_reader *r)
{
    return r->ops->input_count(r);
}

ST_API const struct st_reader *st_reader_input(const struct st_reader *r, size_t i)
{
    return r->ops->input(r, i);
}

ST_API size_t st_reader_input_process(const struct st_reader *r, size_t i)
{
    struct st_trace_description a = {.struct_size = sizeof a}, b = {.struct_size = sizeof b};
    if (st_reader_description(st_reader_input(r, i), &a) < 0 || a.pid == 0)
        return i;
    for (size_t j = 0; j < i; j++)
        if (st_reader_description(st_reader_input(r, j), &b) == 0 && b.pid == a.pid && !strcmp(a.host, b.host))
            return j;
    return i;
}

ST_API int st_reader_description(const struct st_reader *r, struct st_trace_description *d)
{
    if (!r || !d)
        return -EINVAL;
    return st__trace_description(r->ops->current(r), d);
}

ST_API size_t st_reader_process_count(const struct st_reader *r)
{
    return r->ops->process_count(r);
}

ST_API size_t st_reader_format_error(const struct st_reader *r, char *buf, size_t len)
{
    const struct st_reader_error *e = r->ops->error(r);
    const char *name = st__trace_name(r->ops->current(r));
    int n;
    if (e->code == 0)
        n = snprintf(buf, len, "%s: no error", name);
    else
        n = snprintf(buf, len, "%s: byte offset %llu, record %llu: %s", name, (unsigned long long)e->offset,
                     (unsigned long long)e->record, e->message);
    if (n < 0)
        return 0;
    return len && (size_t)n >= len ? len - 1 : (size_t)n;
}

ST_API int st_reader_version(const struct st_reader *r)
{
    return st__trace_version(r->ops->current(r));
}

ST_API bool st_reader_byte_swapped(const struct st_reader *r)
{
    return st__trace_swapped(r->ops->current(r));
}

ST_API int st_reader_origin(const struct st_reader *r, uint64_t *ts)
{
    return r->ops->origin(r, ts);
}

ST_API int st_reader_get_counters(const struct st_reader *r, struct st_reader_counters *c)
{
    struct st_reader_counters now;
    r->ops->counters(r, &now);
    now.struct_size = sizeof now;
    return st__struct_out(c, &now, sizeof now, ST__READER_COUNTERS_V1);
}

ST_API int st_reader_get_seen(const struct st_reader *r, struct st_reader_seen *s)
{
    struct st_reader_seen now;
    r->ops->seen(r, &now);
    now.struct_size = sizeof now;
    return st__struct_out(s, &now, sizeof now, ST__READER_SEEN_V1);
}

ST_API const struct st_catalog *st_reader_catalog(const struct st_reader *r)
{
    return r->ops->catalog(r);
}

ST_API const char *st_reader_name(const struct st_reader *r)
{
    return st__trace_name(r->ops->current(r));
}
