/*
 * Catalog warnings on stderr (catalog_warn.h).
 *
 * Why a memory of what was printed: the catalog is loaded in one place
 * (reader_opts.c) and used in others (print's follow loop, where a
 * trace's declarations may add events as they arrive); each may call this,
 * and a user must see each warning once. A command reads one catalog at a
 * time, so remembering the last one and how many of its warnings went out
 * is enough.
 */
#include "catalog_warn.h"

#include <stdio.h>

static const struct st_catalog *last_cat; /* the catalog whose warnings were printed last */
static size_t last_printed;               /* how many of them */

size_t cli_catalog_warn(const struct st_catalog *cat)
{
    if (!cat)
        return 0;
    if (cat != last_cat) {
        last_cat = cat;
        last_printed = 0;
    }
    size_t n = st_catalog_warning_count(cat), printed = 0;
    for (; last_printed < n; last_printed++, printed++)
        fprintf(stderr, "%s\n", st_catalog_warning(cat, last_printed));
    return printed;
}
