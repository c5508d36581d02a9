/*
 * Pairing rules -> a role per catalog event (export.h, "Pairing").
 *
 * Resolved against the catalog when the run starts and again for the
 * events it gains during the run (a catalog read from the trace grows),
 * so the per-record cost is one table load. Rules are tried in order and
 * an event takes the first rule that pairs it with a declared, still
 * unpaired partner; the partner is claimed at the same time, so roles are
 * always consistent (every END has exactly one BEGIN event, with the same
 * function). A role, once given, never changes: what was written stays
 * right. Two events present at an earlier pass that did not pair then
 * cannot pair later (each pass tried them and nothing is ever unclaimed),
 * so a later pass only looks at pairs with at least one new event.
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

struct st__ex_rule {
    struct side begin, end;
    const char *name; /* NAME of "=NAME", or NULL */
    size_t name_len;
    const char *key;  /* ARG of "@ARG" (a keyed rule), or NULL */
    size_t key_len;
    const char *text; /* the rule as given (the caller's string, or a built-in one) */
    uint64_t made;    /* pairs it made so far */
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

/* True when text[0..len) is a C identifier (an argument's name). */
static bool is_ident(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        bool letter = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!letter && !(i > 0 && c >= '0' && c <= '9'))
            return false;
    }
    return len > 0;
}

static int parse_rule(const char *text, struct st__ex_rule *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    const char *at = strchr(text, '@');
    size_t text_len = at ? (size_t)(at - text) : strlen(text); /* the rule without its "@ARG" */
    const char *colon = memchr(text, ':', text_len);
    const char *end = colon ? colon + 1 : NULL;
    const char *eq = end ? memchr(end, '=', text_len - (size_t)(end - text)) : NULL;
    size_t end_len = end ? (size_t)((eq ? eq : text + text_len) - end) : 0;
    const char *why = NULL;
    if (at) {
        r->key = at + 1;
        r->key_len = strlen(r->key);
    }
    if (!colon)
        why = "want BEGIN:END[=NAME][@ARG]";
    else if (memchr(end, ':', text_len - (size_t)(end - text)))
        why = "more than one ':'";
    else if (parse_side(text, (size_t)(colon - text), &r->begin) != 0 || parse_side(end, end_len, &r->end) != 0)
        why = "BEGIN and END must be non-empty, with at most one '*' each";
    else if (r->begin.star != r->end.star)
        why = "either both BEGIN and END have a '*' or neither has";
    else if (has_space(text, strlen(text)))
        why = "no spaces or control characters";
    else if (at && !is_ident(r->key, r->key_len))
        why = "ARG of @ARG must be an argument's name";
    if (!why && eq) {
        r->name = eq + 1;
        r->name_len = text_len - (size_t)(r->name - text);
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
    r->text = text;
    return 0;
}

int st__export_check_pair(const char *rule, char *err, size_t errlen)
{
    struct st__ex_rule r;
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
static void func_name(const struct st__ex_rule *r, const char *begin, const char *end, const char *cap, size_t cap_len,
                      char *buf, size_t size)
{
    if (r->name) {
        const char *star = memchr(r->name, '*', r->name_len);
        if (star)
            snprintf(buf, size, "%.*s%.*s%.*s", (int)(star - r->name), r->name, (int)cap_len, cap,
                     (int)(r->name + r->name_len - star - 1), star + 1);
        else
            snprintf(buf, size, "%.*s", (int)r->name_len, r->name);
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

/* The index of ev's argument named key[0..len), or -1. */
static int arg_index(const struct st_event_info *ev, const char *key, size_t len)
{
    for (unsigned i = 0; i < ev->nargs; i++)
        if (strlen(ev->args[i].name) == len && memcmp(ev->args[i].name, key, len) == 0)
            return (int)i;
    return -1;
}

/* Can r pair begin with end? A keyed rule needs its ARG declared by both. */
static bool keys_fit(const struct st__ex_rule *r, const struct st_event_info *begin, const struct st_event_info *end)
{
    return !r->key || (arg_index(begin, r->key, r->key_len) >= 0 && arg_index(end, r->key, r->key_len) >= 0);
}

/* Gives begin and end the function fname (and, for a keyed rule, their key's argument). 0 or -ENOMEM. */
static int pair(struct st__ex_pairs *p, struct st__ex_rule *r, const struct st_event_info *begin,
                const struct st_event_info *end, const char *fname)
{
    long id = intern(p, fname);
    if (id < 0)
        return (int)id;
    p->role[begin->index] = r->key ? ST__EX_KEYED_BEGIN : ST__EX_BEGIN;
    p->role[end->index] = r->key ? ST__EX_KEYED_END : ST__EX_END;
    p->func[begin->index] = p->func[end->index] = (uint32_t)id;
    if (r->key) {
        p->key_arg[begin->index] = (uint8_t)arg_index(begin, r->key, r->key_len);
        p->key_arg[end->index] = (uint8_t)arg_index(end, r->key, r->key_len);
    }
    r->made++;
    return 0;
}

/* The unpaired event named name (not Dropped_Event, not index self), or NULL. */
static const struct st_event_info *partner_of(const struct st__ex_pairs *p, const struct st_catalog *cat,
                                              const char *name, size_t self)
{
    const struct st_event_info *ev = st_catalog_find(cat, name);
    if (!ev || ev == st_catalog_dropped(cat) || ev->index == self || ev->index >= p->n ||
        p->role[ev->index] != ST__EX_INSTANT)
        return NULL;
    return ev;
}

/*
 * Applies rule r to the unpaired events from index first on: each as a
 * BEGIN (its END anywhere), then each as the END of an older BEGIN. 0 or
 * -ENOMEM.
 */
static int apply(struct st__ex_pairs *p, const struct st_catalog *cat, struct st__ex_rule *r, size_t first)
{
    size_t dropped = st_catalog_dropped(cat)->index;
    char other[NAME_MAX_LEN + 1], fname[2 * NAME_MAX_LEN + 1];
    for (size_t i = first; i < p->n; i++) {
        const struct st_event_info *ev = st_catalog_event(cat, i), *end;
        const char *cap;
        size_t cap_len;
        if (i == dropped || p->role[i] != ST__EX_INSTANT || !match(&r->begin, ev->name, ev->name_len, &cap, &cap_len) ||
            !expand(&r->end, cap, cap_len, other, sizeof other) || !(end = partner_of(p, cat, other, i)) ||
            !keys_fit(r, ev, end))
            continue;
        func_name(r, ev->name, end->name, cap, cap_len, fname, sizeof fname);
        int ret = pair(p, r, ev, end, fname);
        if (ret < 0)
            return ret;
    }
    for (size_t i = first; first && i < p->n; i++) {
        const struct st_event_info *ev = st_catalog_event(cat, i), *begin;
        const char *cap, *bcap;
        size_t cap_len, bcap_len;
        if (i == dropped || p->role[i] != ST__EX_INSTANT || !match(&r->end, ev->name, ev->name_len, &cap, &cap_len) ||
            !expand(&r->begin, cap, cap_len, other, sizeof other) || !(begin = partner_of(p, cat, other, i)) ||
            begin->index >= first || !keys_fit(r, begin, ev))
            continue; /* a new BEGIN had its turn above */
        match(&r->begin, begin->name, begin->name_len, &bcap, &bcap_len); /* the capture the BEGIN side gives */
        func_name(r, begin->name, ev->name, bcap, bcap_len, fname, sizeof fname);
        int ret = pair(p, r, begin, ev, fname);
        if (ret < 0)
            return ret;
    }
    return 0;
}

int st__ex_pairs_grow(struct st__ex_pairs *p, const struct st_catalog *cat)
{
    size_t n = st_catalog_count(cat) + 1, first = p->n; /* + Dropped_Event, always an instant */
    if (n <= first)
        return 0;
    if (n > p->cap) {
        size_t cap = p->cap ? p->cap : 64;
        while (cap < n)
            cap *= 2;
        uint8_t *role = realloc(p->role, cap * sizeof *role);
        if (role)
            p->role = role;
        uint32_t *func = realloc(p->func, cap * sizeof *func);
        if (func)
            p->func = func;
        uint8_t *key_arg = realloc(p->key_arg, cap * sizeof *key_arg);
        if (key_arg)
            p->key_arg = key_arg;
        if (!role || !func || !key_arg)
            return -ENOMEM;
        p->cap = cap;
    }
    memset(p->role + first, ST__EX_INSTANT, n - first);
    memset(p->func + first, 0, (n - first) * sizeof *p->func);
    memset(p->key_arg + first, 0, n - first);
    p->n = n;
    for (size_t k = 0; k < p->nrules; k++) {
        int ret = apply(p, cat, &p->rules[k], first);
        if (ret < 0)
            return ret;
    }
    return 0;
}

int st__ex_pairs_build(struct st__ex_pairs *p, const struct st_catalog *cat, const char *const *rules, size_t nrules,
                       bool no_defaults, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    size_t nb = no_defaults ? 0 : sizeof builtin_rules / sizeof *builtin_rules;
    if (!(p->rules = calloc(nrules + nb + 1, sizeof *p->rules)))
        return -ENOMEM;
    for (size_t k = 0; k < nrules + nb; k++) {
        int ret = parse_rule(k < nrules ? rules[k] : builtin_rules[k - nrules], &p->rules[k], err, errlen);
        if (ret < 0)
            return ret;
    }
    p->nrules = nrules + nb;
    p->ncaller = nrules;
    return st__ex_pairs_grow(p, cat);
}

const char *st__ex_pairs_unused(const struct st__ex_pairs *p)
{
    for (size_t k = 0; k < p->ncaller; k++)
        if (p->rules[k].made == 0)
            return p->rules[k].text;
    return NULL;
}

uint64_t st__ex_pairs_unused_mask(const struct st__ex_pairs *p)
{
    uint64_t mask = 0;
    for (size_t k = 0; k < p->ncaller && k < 64; k++)
        if (p->rules[k].made == 0)
            mask |= UINT64_C(1) << k;
    return mask;
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
    free(p->key_arg);
    free(p->rules);
    memset(p, 0, sizeof *p);
}
