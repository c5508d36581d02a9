/*
 * Pairing rules -> a role per catalog event (export.h, "Pairing").
 *
 * Resolved once per run against the catalog, so the per-record cost is
 * one table load. Rules are tried in order and an event takes the first
 * rule that pairs it with a declared, still unpaired partner; the partner
 * is claimed at the same time, so roles are always consistent (every END
 * has exactly one BEGIN event, with the same function).
 */
#include "export_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest name the tools accept (src/format/trace_format.h, ST_MAX_NAME). */
#define NAME_MAX_LEN 1024

/* One side of a rule: PRE*SUF, or an exact name (no star: PRE is all of it). */
struct side {
    const char *pre, *suf;
    size_t pre_len, suf_len;
    bool star;
};

struct rule {
    struct side begin, end;
    const char *name; /* NAME of "=NAME", or NULL */
    size_t name_len;
};

static const char *const builtin_rules[] = {"*_enter:*_exit", "*_begin:*_end", "*_start:*_done"};

/* Splits text[0..len) into a side; -EINVAL when it has more than one star or is empty. */
static int parse_side(const char *text, size_t len, struct side *s)
{
    const char *star = memchr(text, '*', len);
    if (len == 0 || (star && memchr(star + 1, '*', len - (size_t)(star - text) - 1)))
        return -EINVAL;
    s->star = star != NULL;
    s->pre = text;
    s->pre_len = star ? (size_t)(star - text) : len;
    s->suf = star ? star + 1 : text + len;
    s->suf_len = star ? len - s->pre_len - 1 : 0;
    return 0;
}

/* True when text[0..len) has whitespace or control characters. */
static bool has_space(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)text[i] <= ' ' || text[i] == 0x7f)
            return true;
    return false;
}

static int parse_rule(const char *text, struct rule *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    const char *colon = strchr(text, ':');
    const char *end = colon ? colon + 1 : NULL;
    const char *eq = end ? strchr(end, '=') : NULL;
    size_t end_len = end ? (eq ? (size_t)(eq - end) : strlen(end)) : 0;
    const char *why = NULL;
    if (!colon)
        why = "want BEGIN:END[=NAME]";
    else if (strchr(end, ':'))
        why = "more than one ':'";
    else if (parse_side(text, (size_t)(colon - text), &r->begin) != 0 || parse_side(end, end_len, &r->end) != 0)
        why = "BEGIN and END must be non-empty, with at most one '*' each";
    else if (r->begin.star != r->end.star)
        why = "either both BEGIN and END have a '*' or neither has";
    else if (has_space(text, strlen(text)))
        why = "no spaces or control characters";
    if (!why && eq) {
        r->name = eq + 1;
        r->name_len = strlen(r->name);
        const char *star = memchr(r->name, '*', r->name_len);
        if (r->name_len == 0 || r->name_len >= NAME_MAX_LEN)
            why = "NAME must be non-empty";
        else if (star && (!r->begin.star || strchr(star + 1, '*')))
            why = "a '*' in NAME needs one in BEGIN, and only one";
    }
    if (why) {
        snprintf(err, errlen, "bad pairing rule '%s': %s", text, why);
        return -EINVAL;
    }
    return 0;
}

int st_export_check_pair(const char *rule, char *err, size_t errlen)
{
    struct rule r;
    return parse_rule(rule, &r, err, errlen);
}

/* Does name match side s? The star's part goes to cap, cap_len. */
static bool match(const struct side *s, const char *name, size_t len, const char **cap, size_t *cap_len)
{
    if (!s->star) {
        *cap = name;
        *cap_len = 0;
        return len == s->pre_len && memcmp(name, s->pre, len) == 0;
    }
    if (len < s->pre_len + s->suf_len || memcmp(name, s->pre, s->pre_len) != 0 ||
        memcmp(name + len - s->suf_len, s->suf, s->suf_len) != 0)
        return false;
    *cap = name + s->pre_len;
    *cap_len = len - s->pre_len - s->suf_len;
    return true;
}

/* Writes side s with the star replaced by cap into buf; false if it does not fit. */
static bool expand(const struct side *s, const char *cap, size_t cap_len, char *buf, size_t size)
{
    int n = s->star ? snprintf(buf, size, "%.*s%.*s%.*s", (int)s->pre_len, s->pre, (int)cap_len, cap,
                               (int)s->suf_len, s->suf)
                    : snprintf(buf, size, "%.*s", (int)s->pre_len, s->pre);
    return n >= 0 && (size_t)n < size;
}

/* The function name of a pair (export.h, "Pairing") into buf. */
static void func_name(const struct rule *r, const char *begin, const char *end, const char *cap, size_t cap_len,
                      char *buf, size_t size)
{
    if (r->name) {
        const char *star = memchr(r->name, '*', r->name_len);
        if (star)
            snprintf(buf, size, "%.*s%.*s%s", (int)(star - r->name), r->name, (int)cap_len, cap, star + 1);
        else
            snprintf(buf, size, "%s", r->name);
        return;
    }
    if (r->begin.star) {
        snprintf(buf, size, "%.*s", (int)(cap_len ? cap_len : strlen(begin)), cap_len ? cap : begin);
        return;
    }
    /* Exact names: their common prefix without the separator it ends with. */
    size_t n = 0;
    while (begin[n] && begin[n] == end[n])
        n++;
    while (n && strchr("_-.:", begin[n - 1]))
        n--;
    snprintf(buf, size, "%.*s", (int)(n ? n : strlen(begin)), begin);
}

/* The id of function name, added if new; -ENOMEM. */
static long intern(struct st__ex_pairs *p, const char *name)
{
    for (size_t i = 0; i < p->nfuncs; i++)
        if (strcmp(p->names[i], name) == 0)
            return (long)i;
    char **v = realloc(p->names, (p->nfuncs + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    p->names = v;
    if ((v[p->nfuncs] = strdup(name)) == NULL)
        return -ENOMEM;
    return (long)p->nfuncs++;
}

/* Applies one rule to every unpaired event. Returns the pairs made, or -ENOMEM. */
static long apply(struct st__ex_pairs *p, const struct st_catalog *cat, const struct rule *r)
{
    size_t n = st_catalog_count(cat);
    long made = 0;
    char partner[NAME_MAX_LEN + 1], fname[2 * NAME_MAX_LEN + 1];
    for (size_t i = 0; i < n; i++) {
        const struct st_event_info *ev = st_catalog_event(cat, i);
        const char *cap;
        size_t cap_len;
        if (p->role[i] != ST__EX_INSTANT || !match(&r->begin, ev->name, ev->name_len, &cap, &cap_len) ||
            !expand(&r->end, cap, cap_len, partner, sizeof partner))
            continue;
        const struct st_event_info *pev = st_catalog_find(cat, partner);
        if (!pev || pev->index >= n || pev->index == i || p->role[pev->index] != ST__EX_INSTANT)
            continue;
        func_name(r, ev->name, pev->name, cap, cap_len, fname, sizeof fname);
        long id = intern(p, fname);
        if (id < 0)
            return id;
        p->role[i] = ST__EX_BEGIN;
        p->role[pev->index] = ST__EX_END;
        p->func[i] = p->func[pev->index] = (uint32_t)id;
        made++;
    }
    return made;
}

int st__ex_pairs_build(struct st__ex_pairs *p, const struct st_catalog *cat, const char *const *rules, size_t nrules,
                       bool no_defaults, char *unused, size_t unused_len, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    if (unused_len)
        unused[0] = '\0';
    size_t n = st_catalog_count(cat) + 1; /* + Dropped_Event, always an instant */
    p->role = calloc(n, sizeof *p->role);
    p->func = calloc(n, sizeof *p->func);
    if (!p->role || !p->func)
        return -ENOMEM;
    size_t nb = no_defaults ? 0 : sizeof builtin_rules / sizeof *builtin_rules;
    for (size_t k = 0; k < nrules + nb; k++) {
        const char *text = k < nrules ? rules[k] : builtin_rules[k - nrules];
        struct rule r;
        int ret = parse_rule(text, &r, err, errlen);
        if (ret < 0)
            return ret;
        long made = apply(p, cat, &r);
        if (made < 0)
            return (int)made;
        if (made == 0 && k < nrules && unused_len && !unused[0])
            snprintf(unused, unused_len, "%s", text);
    }
    return 0;
}

int st__ex_pairs_add(struct st__ex_pairs *p, size_t n, const char *(*name)(const void *arg, size_t i), const void *arg,
                     uint32_t *first)
{
    char **v = realloc(p->names, (p->nfuncs + n + 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    p->names = v;
    *first = (uint32_t)p->nfuncs;
    for (size_t i = 0; i < n; i++, p->nfuncs++)
        if (!(v[p->nfuncs] = strdup(name(arg, i))))
            return -ENOMEM;
    return 0;
}

void st__ex_pairs_free(struct st__ex_pairs *p)
{
    for (size_t i = 0; i < p->nfuncs; i++)
        free(p->names[i]);
    free(p->names);
    free(p->role);
    free(p->func);
    memset(p, 0, sizeof *p);
}
