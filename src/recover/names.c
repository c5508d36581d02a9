/*
 * The names file, st-<pid>.names: v4 mapping records appended as IDs
 * became known, with the description and declarations (meta_format.h)
 * riding in mapping records of their reserved IDs (crash_format.h). It is read up to the first bytes that are
 * not a whole mapping (the death may cut the last one); the table is kept
 * by ID, pointing into the image, so an ID's lookup is a binary search and
 * nothing is allocated per ID beyond the table.
 */
#include <errno.h>
#include <stdlib.h>

#include "meta_format.h"
#include "recover_internal.h"
#include "trace_format.h"

static int by_id_then_seq(const void *x, const void *y)
{
    const struct st__rv_name *a = x, *b = y;

    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Appends one mapping to the table; 0 or -ENOMEM. */
static int names_push(struct st__rv_names *nm, size_t *cap, struct st__rv_name e)
{
    if (nm->n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        struct st__rv_name *v = realloc(nm->v, c * sizeof *v);
        if (!v)
            return -ENOMEM;
        nm->v = v;
        *cap = c;
    }
    nm->v[nm->n++] = e;
    return 0;
}

/* Sorts by ID and keeps the last mapping of each (a later mapping replaces an earlier one). */
static void names_settle(struct st__rv_names *nm)
{
    size_t kept = 0;

    if (nm->n)
        qsort(nm->v, nm->n, sizeof *nm->v, by_id_then_seq);
    for (size_t i = 0; i < nm->n; i++) {
        if (kept && nm->v[kept - 1].id == nm->v[i].id)
            kept--;
        nm->v[kept++] = nm->v[i];
    }
    nm->n = kept;
}

/* Longest name a mapping of id may have: an event's name, or a description or declaration. */
static uint32_t max_len(uint64_t id)
{
    return st__meta_is_info(id) || st__meta_is_decl(id) ? ST_META_MAX_LEN : ST_MAX_NAME;
}

int st__rv_names_load(struct st__rv_names *nm, const struct st__recover_image *img, const struct st__recover_hooks *hk)
{
    size_t at = 0, cap = 0;

    *nm = (struct st__rv_names){0};
    if (!img)
        return 0;
    nm->data = img->data;
    while (img->len - at >= ST_MAPPING_FIXED_SIZE && st__fmt_get_u64(img->data + at) == ST_RECORD_TYPE_MAPPING) {
        uint64_t id = st__fmt_get_u64(img->data + at + 8);
        uint32_t len = st__fmt_get_u32(img->data + at + 16);
        if (len == 0 || len > max_len(id) || len > img->len - at - ST_MAPPING_FIXED_SIZE)
            break;
        if (names_push(nm, &cap, (struct st__rv_name){id,
                                                      at + ST_MAPPING_FIXED_SIZE, len, nm->n}) < 0) {
            st__rv_names_free(nm);
            return -ENOMEM;
        }
        at += ST_MAPPING_FIXED_SIZE + len;
    }
    if (at != img->len)
        st__rv_say(hk, ST_RECOVER_NAMES_TORN, img->name, NULL, at, 0,
                   "byte %zu does not hold a mapping record; %zu bytes left out (the events they name will be "
                   "named st_unknown_ID)", at, img->len - at);
    names_settle(nm);
    return 0;
}

const struct st__rv_name *st__rv_names_find(const struct st__rv_names *nm, uint64_t id)
{
    size_t lo = 0, hi = nm->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (nm->v[mid].id == id)
            return &nm->v[mid];
        if (nm->v[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void st__rv_names_free(struct st__rv_names *nm)
{
    free(nm->v);
    *nm = (struct st__rv_names){0};
}
