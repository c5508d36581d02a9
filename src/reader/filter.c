/*
 * Record selection helpers: event-name globs and durations.
 *
 * An event filter is a comma-separated list of globs (* and ?, whole
 * name, case-sensitive, as QEMU's -trace enable=); a leading '-' makes a
 * glob exclude. Globs apply left to right and the last one matching a
 * name decides; names no glob matches are selected only when the first
 * glob excludes (so "-qemu_mutex_*" means "everything but ..."). The
 * filter is compiled once into one byte per event, so the reader tests a
 * record with a single load.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reader_internal.h"

/*
 * Applies spec to entries [from, cat->count] of sel: each glob left to
 * right, the last one matching a name decides. -EINVAL for an empty glob.
 */
static int apply_spec(const struct st_catalog *cat, const char *spec, uint8_t *sel, size_t from)
{
    bool first = true;
    for (const char *s = spec;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        bool exclude = len > 0 && s[0] == '-';
        const char *glob = s + exclude;
        size_t glen = len - exclude;
        if (glen == 0)
            return -EINVAL;
        if (first) /* nothing matched yet: selected only if the list starts by excluding */
            memset(sel + from, exclude, cat->count + 1 - from);
        first = false;
        for (size_t i = from; i <= cat->count; i++)
            if (st__glob_match_n(glob, glen, cat->at[i]->name))
                sel[i] = (uint8_t)!exclude;
        if (!comma)
            return 0;
        s = comma + 1;
    }
}

int st__filter_compile(const struct st_catalog *cat, const char *spec, uint8_t **out)
{
    *out = NULL;
    if (!spec)
        return 0;
    uint8_t *sel = malloc(cat->count + 1);
    if (!sel)
        return -ENOMEM;
    if (apply_spec(cat, spec, sel, 0) < 0) {
        free(sel);
        return -EINVAL;
    }
    *out = sel;
    return 0;
}

int st__filter_extend(const struct st_catalog *cat, const char *spec, uint8_t **sel, size_t *n)
{
    if (*n >= cat->count + 1)
        return 0;
    uint8_t *more = realloc(*sel, cat->count + 1);
    if (!more)
        return -ENOMEM;
    apply_spec(cat, spec, more, *n); /* it compiled: no empty glob */
    *sel = more;
    *n = cat->count + 1;
    return 0;
}

/* Nanoseconds per unit for a duration suffix, 0 if unknown. */
static int64_t unit_ns(const char *u)
{
    if (!*u || !strcmp(u, "ns"))
        return 1;
    if (!strcmp(u, "us"))
        return 1000;
    if (!strcmp(u, "ms"))
        return 1000000;
    if (!strcmp(u, "s"))
        return 1000000000;
    return 0;
}

ST_API int st_parse_duration_ns(const char *text, int64_t *ns)
{
    const char *p = text;
    bool neg = *p == '-';
    p += neg || *p == '+';
    if (*p < '0' || *p > '9')
        return -EINVAL;
    uint64_t whole = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (whole > (UINT64_C(1) << 62) / 10)
            return -EINVAL;
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    /* Keep up to 9 fraction digits as an exact numerator over 1e9. */
    uint64_t frac = 0, scale = 1000000000;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (scale > 1) {
                scale /= 10;
                frac += (uint64_t)(*p - '0') * scale;
            }
    }
    int64_t unit = unit_ns(p);
    if (!unit || whole > (uint64_t)(INT64_MAX / unit))
        return -EINVAL;
    int64_t v = (int64_t)whole * unit + (int64_t)(frac * (uint64_t)unit / 1000000000);
    *ns = neg ? -v : v;
    return 0;
}
