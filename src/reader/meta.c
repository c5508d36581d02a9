/*
 * The description and declarations a trace carries (meta_format.h), kept
 * as the reader meets them: a later record for the same ID replaces the
 * earlier, as mapping records do.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "meta_format.h"
#include "reader_internal.h"

/* Event IDs a declaration may have: the registry counts from 0; beyond this is garbage. */
#define MAX_DECL_IDS (1u << 20)
/* Process numbers a file of several processes may use: simpletrace merge counts from 0. */
#define MAX_PROCS (1u << 16)

/* Sets the field key names in d to value (strings) or its number; unknown keys are skipped. */
static void set_field(struct st_trace_description *d, const char *key, size_t klen, const char *value)
{
    static const struct {
        const char *key;
        size_t off;
    } strings[] = {
        {"version", offsetof(struct st_trace_description, version)},
        {"program", offsetof(struct st_trace_description, program)},
        {"exe", offsetof(struct st_trace_description, exe)},
        {"cmdline", offsetof(struct st_trace_description, cmdline)},
        {"host", offsetof(struct st_trace_description, host)},
        {"clock", offsetof(struct st_trace_description, clock)},
    };
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        if (strlen(strings[i].key) == klen && !memcmp(key, strings[i].key, klen)) {
            memcpy((char *)d + strings[i].off, &value, sizeof value);
            return;
        }
    uint64_t v = strtoull(value, NULL, 10);
    if (klen == 3 && !memcmp(key, "pid", 3))
        d->pid = (uint32_t)v;
    else if (klen == 6 && !memcmp(key, "tsc_hz", 6))
        d->tsc_hz = v;
    else if (klen == 14 && !memcmp(key, "anchor_mono_ns", 14))
        d->anchor_mono_ns = v;
    else if (klen == 14 && !memcmp(key, "anchor_real_ns", 14))
        d->anchor_real_ns = v;
}

/* Parses d->info's KEY=VALUE lines into d->desc, the values unescaped into d->values. 0, -ENOMEM, -EBADMSG. */
static int parse_info(struct st__desc *dd)
{
    struct st_trace_description *d = &dd->desc;
    char *out;
    const char *p = dd->info, *end = dd->info + dd->info_len;

    free(dd->values);
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    d->version = d->program = d->exe = d->cmdline = d->host = d->clock = "";
    if (!(dd->values = out = malloc(dd->info_len + 1)))
        return -ENOMEM;
    if (dd->info_len < strlen(ST_META_FIRST_LINE) || memcmp(p, ST_META_FIRST_LINE, strlen(ST_META_FIRST_LINE)))
        return -EBADMSG;
    for (p += strlen(ST_META_FIRST_LINE); p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *eq;
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        long n;
        if (!(eq = memchr(p, '=', len)) || (n = st__meta_unescape(out, eq + 1, len - (size_t)(eq + 1 - p))) < 0)
            return -EBADMSG;
        out[n] = '\0';
        set_field(d, p, (size_t)(eq - p), out);
        out += n + 1;
        p += len + 1;
    }
    return 0;
}

/* Replaces d's text with a copy of [text, text + len) and parses it. */
static int set_desc(struct st__desc *d, const char *text, size_t len)
{
    char *c = strndup(text, len);

    if (!c)
        return -ENOMEM;
    free(d->info);
    d->info = c;
    d->info_len = strlen(c); /* a NUL inside (a damaged file) ends the text */
    return parse_info(d);
}

static void desc_free(struct st__desc *d)
{
    free(d->info);
    free(d->values);
    memset(d, 0, sizeof *d);
}

int st__meta_set_info(struct st__meta *m, const char *text, size_t len)
{
    m->cur = &m->main;
    return set_desc(&m->main, text, len);
}

int st__meta_set_proc(struct st__meta *m, uint32_t k, const char *text, size_t len)
{
    if (k >= MAX_PROCS)
        return -E2BIG;
    if (k >= m->nprocs) {
        uint32_t n = m->nprocs ? m->nprocs : 8;
        while (n <= k)
            n *= 2;
        struct st__desc *p = realloc(m->procs, n * sizeof *p);
        if (!p)
            return -ENOMEM;
        memset(p + m->nprocs, 0, (n - m->nprocs) * sizeof *p);
        m->procs = p;
        m->nprocs = n;
    }
    struct st__desc *d = &m->procs[k];
    m->nmet += !d->met;
    d->met = true;
    int ret = len ? set_desc(d, text, len) : 0;
    m->cur = d->info ? d : NULL;
    return ret;
}

void st__meta_new_piece(struct st__meta *m)
{
    desc_free(&m->main);
    for (uint32_t k = 0; k < m->nprocs; k++)
        desc_free(&m->procs[k]);
    m->nmet = 0;
    m->cur = NULL;
}

int st__meta_set_decl(struct st__meta *m, uint32_t id, const char *text, size_t len)
{
    char *c;

    if (id >= MAX_DECL_IDS)
        return -E2BIG;
    if (id >= m->ndecls) {
        uint32_t n = m->ndecls ? m->ndecls : 64;
        while (n <= id)
            n *= 2;
        char **d = realloc(m->decls, n * sizeof *d);
        if (!d)
            return -ENOMEM;
        memset(d + m->ndecls, 0, (n - m->ndecls) * sizeof *d);
        m->decls = d;
        m->ndecls = n;
    }
    if (m->decls[id] && strlen(m->decls[id]) == len && !memcmp(m->decls[id], text, len))
        return 1;
    if (!(c = strndup(text, len)))
        return -ENOMEM;
    free(m->decls[id]);
    m->decls[id] = c;
    return 0;
}

void st__meta_free(struct st__meta *m)
{
    for (uint32_t i = 0; i < m->ndecls; i++)
        free(m->decls[i]);
    free(m->decls);
    st__meta_new_piece(m);
    free(m->procs);
    memset(m, 0, sizeof *m);
}
