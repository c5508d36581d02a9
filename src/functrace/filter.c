/*
 * SIMPLETRACE_FUNC_FILTER: function names (globs) resolved once, at
 * start-up, to the runtime addresses the hooks receive, so the hot path
 * only searches a sorted array of addresses.
 *
 * Resolved in every object loaded at start-up that holds instrumented code:
 * the executable, and shared objects with an undefined reference to
 * __cyg_profile_func_enter. Address = load bias (dlpi_addr) + st_value.
 * Objects loaded later with dlopen() are not searched (README).
 */
#include "diag.h"
#include "elfsym.h"
#include "ft.h"
#include "glob_match.h"

#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ST__NI bool st__ft_glob_match(const char *pattern, const char *name)
{
    return st__glob_match_n(pattern, strlen(pattern), name);
}

/* A loaded object, as dl_iterate_phdr reports it. */
struct object {
    char path[4096];
    uint64_t bias;
    bool is_exe;
};

struct objects {
    struct object *v;
    size_t n, cap;
};

ST__NI static int collect_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct objects *objs = arg;
    if (objs->n == objs->cap) {
        size_t cap = objs->cap ? objs->cap * 2 : 16;
        struct object *v = realloc(objs->v, cap * sizeof *v);
        if (!v)
            return 1;
        objs->v = v;
        objs->cap = cap;
    }
    struct object *o = &objs->v[objs->n];
    o->bias = info->dlpi_addr;
    o->is_exe = objs->n == 0; /* the executable always comes first */
    if (o->is_exe || !info->dlpi_name || !info->dlpi_name[0]) {
        ssize_t len = readlink("/proc/self/exe", o->path, sizeof o->path - 1);
        if (len < 0)
            return 0;
        o->path[len] = '\0';
        o->is_exe = true;
    } else {
        snprintf(o->path, sizeof o->path, "%s", info->dlpi_name);
    }
    objs->n++;
    return 0;
}

/* Splits "a,b,c" into a NULL-terminated array of owned strings. */
ST__NI static char **split_patterns(const char *patterns, size_t *count)
{
    size_t n = 1;
    for (const char *p = patterns; *p; p++)
        n += *p == ',';
    char **v = calloc(n + 1, sizeof *v);
    char *copy = strdup(patterns);
    if (!v || !copy) {
        free(v);
        free(copy);
        return NULL;
    }
    size_t k = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (*tok)
            v[k++] = strdup(tok);
    free(copy);
    *count = k;
    return v;
}

ST__NI static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Adds the matching functions of one object to *addrs. */
ST__NI static int match_object(const struct object *o, char **pats, size_t npats, bool *used,
                               uint64_t **addrs, size_t *n, size_t *cap)
{
    struct st__elf_syms syms;
    int err = st__elf_read(o->path, &syms);
    if (err || (!o->is_exe && !syms.calls_hooks)) {
        st__elf_free(&syms);
        return 0; /* unreadable or uninstrumented: nothing to filter there */
    }
    for (size_t i = 0; i < syms.nfuncs && !err; i++) {
        const char *name = st__elf_name(&syms, &syms.funcs[i]);
        for (size_t p = 0; p < npats; p++) {
            if (!st__ft_glob_match(pats[p], name))
                continue;
            used[p] = true;
            if (*n == *cap) {
                size_t ncap = *cap ? *cap * 2 : 64;
                uint64_t *v = realloc(*addrs, ncap * sizeof *v);
                if (!v) {
                    err = -ENOMEM;
                    break;
                }
                *addrs = v;
                *cap = ncap;
            }
            (*addrs)[(*n)++] = o->bias + syms.funcs[i].addr;
            break;
        }
    }
    st__elf_free(&syms);
    return err;
}

/*
 * Resolves comma-separated globs to a sorted, unique array of runtime
 * addresses (*addrs, owned by the caller, may be NULL when none match).
 * Patterns that match nothing are named on stderr (start-up configuration).
 * Returns 0 or -ENOMEM.
 */
ST__NI int st__ft_filter_build(const char *patterns, uint64_t **addrs, size_t *count)
{
    *addrs = NULL;
    *count = 0;
    size_t npats = 0, cap = 0;
    char **pats = split_patterns(patterns, &npats);
    struct objects objs = {0};
    bool *used = calloc(npats + 1, sizeof *used);
    int err = 0;
    if (!pats || !used) {
        err = -ENOMEM;
        goto out;
    }
    dl_iterate_phdr(collect_object, &objs);
    for (size_t i = 0; i < objs.n && !err; i++)
        err = match_object(&objs.v[i], pats, npats, used, addrs, count, &cap);
    if (!err && *count) {
        qsort(*addrs, *count, sizeof **addrs, cmp_u64);
        size_t k = 1;
        for (size_t i = 1; i < *count; i++)
            if ((*addrs)[i] != (*addrs)[k - 1])
                (*addrs)[k++] = (*addrs)[i];
        *count = k;
    }
    for (size_t p = 0; p < npats && !err; p++)
        if (!used[p])
            st__diag(ST__FT_DIAG, "SIMPLETRACE_FUNC_FILTER: no function matches '%s'", pats[p]);
out:
    for (size_t p = 0; pats && pats[p]; p++)
        free(pats[p]);
    free(pats);
    free(used);
    free(objs.v);
    return err;
}
