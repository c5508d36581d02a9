/*
 * The description and declarations a trace carries (meta_format.h), kept
 * as the reader meets them: a later record for the same ID replaces the
 * earlier, as mapping records do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reader_internal.h"

/* Event IDs a declaration may have: the registry counts from 0; beyond this is garbage. */
#define MAX_DECL_IDS (1u << 20)

static char *copy_text(const char *text, size_t len)
{
    char *c = malloc(len + 1);

    if (c) {
        memcpy(c, text, len);
        c[len] = '\0';
    }
    return c;
}

int st__meta_set_info(struct st__meta *m, const char *text, size_t len)
{
    char *c = copy_text(text, len);

    if (!c)
        return -ENOMEM;
    free(m->info);
    m->info = c;
    m->info_len = len;
    return 0;
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
    if (!(c = copy_text(text, len)))
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
    free(m->info);
    memset(m, 0, sizeof *m);
}
