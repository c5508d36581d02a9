/*
 * The event registry: groups, event IDs and states, enable rules.
 *
 * Groups register from generated constructors in an order nobody controls
 * (and later from dlopen'ed modules); the public entry points (control/)
 * initialise the runtime before they come here.
 *
 * IDs: one slot per event ever registered, in registration order; the slot
 * index is the event's ID. IDs are never reused: a group unregistered at
 * dlclose keeps its slots (name kept, event pointer cleared), and the same
 * group registered again gets new IDs. Names are copied at registration and
 * never freed, so the writeout thread can write mappings for records of a
 * module that is already gone, and st_event_foreach() can call its visitor
 * without holding the lock.
 *
 *   slots:  [0 grpA.ev0][1 grpA.ev1][2 grpB.ev0 (unloaded)][3 grpB.ev0]...
 *           nslots is published with a release store (reg_count) before any
 *           of the new events can be enabled, so a record of an event
 *           always finds its mapping (the drain reads heads, then the count).
 *
 * Enable rules: the ordered list of (pattern, on/off) applied so far; a new
 * rule replaces an earlier identical pattern (which it would override anyway,
 * so the list stays as short as the set of distinct patterns). A newly
 * registered group replays the list, so configuration given at start-up
 * applies to groups registered later. A configuration adds its rules in
 * two steps (st__reg_rules_reserve, then st__reg_rules_add, which cannot
 * fail), so that it can fail elsewhere and change nothing.
 *
 * st_event.enabled is written with release stores under reg_lock and read
 * with relaxed loads on the hot path (acquire in st__simple_begin, which
 * reads the ID). Events flagged ST_EVENT_COMPILED_OUT are never enabled.
 * reg_lock guards everything here and is never taken on the hot path.
 */
#include "registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "glob_match.h"
#include "growbuf.h"
#include "nearest.h"
#include "trace_format.h"

struct slot {
    char *name;                /* copy of the event's name, never freed */
    const char *group;         /* copy of the group's name, never freed */
    struct st_event *ev;       /* NULL once the group unregistered */
    const struct st_group *grp;
};

struct rule {
    char *pattern; /* without the leading '-' */
    bool enable;
    bool configured; /* from a configuration (SIMPLETRACE, st_configure), not st_event_set_enabled */
    bool matched;    /* some event registered so far matched it */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot *slots;
static uint32_t nslots, cap_slots;
static uint32_t reg_count; /* nslots, published with release */
static struct rule *rules;
static size_t nrules, cap_rules;

static size_t reserved; /* rules room promised to st__reg_rules_reserve() callers */

/* --- patterns -------------------------------------------------------- */

/* Whole-name glob match. */
static bool glob(const char *pattern, const char *name)
{
    return st__glob_match_n(pattern, strlen(pattern), name);
}

bool st__pattern_valid(const char *p)
{
    if (!p || !*p || strlen(p) > ST_MAX_NAME)
        return false;
    for (; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '*' || c == '?'))
            return false;
    }
    return true;
}

static bool has_wildcard(const char *p)
{
    return strpbrk(p, "*?") != NULL;
}

static enum st_event_state slot_state(const struct slot *s)
{
    if (s->ev->flags & ST_EVENT_COMPILED_OUT)
        return ST_EVENT_UNAVAILABLE;
    return __atomic_load_n(&s->ev->enabled, __ATOMIC_RELAXED) ? ST_EVENT_ENABLED : ST_EVENT_DISABLED;
}

static void set_event(struct st_event *ev, bool enable)
{
    if (!(ev->flags & ST_EVENT_COMPILED_OUT))
        __atomic_store_n(&ev->enabled, enable ? 1u : 0u, __ATOMIC_RELEASE);
}

/* --- rules ----------------------------------------------------------- */

static int reserve_rules(size_t extra)
{
    struct rule *r;
    size_t cap;

    extra += reserved;
    if (nrules + extra <= cap_rules)
        return 0;
    cap = cap_rules ? cap_rules : 16;
    while (cap < nrules + extra)
        cap *= 2;
    r = realloc(rules, cap * sizeof *r);
    if (!r)
        return -ENOMEM;
    rules = r;
    cap_rules = cap;
    return 0;
}

/* Appends a rule (room reserved, pattern owned), dropping an identical one. */
static void push_rule(char *pattern, bool enable, bool configured, bool matched)
{
    for (size_t i = 0; i < nrules; i++) {
        if (strcmp(rules[i].pattern, pattern) == 0) {
            free(rules[i].pattern);
            memmove(&rules[i], &rules[i + 1], (nrules - i - 1) * sizeof *rules);
            nrules--;
            break;
        }
    }
    rules[nrules] = (struct rule){pattern, enable, configured, matched};
    nrules++;
}

/* Sets every registered event matching pattern; counts found/available. */
static int apply_pattern(const char *pattern, bool enable, int *found)
{
    bool wild = has_wildcard(pattern);
    int avail = 0;

    *found = 0;
    for (uint32_t i = 0; i < nslots; i++) {
        struct slot *s = &slots[i];
        if (!s->ev || !(wild ? glob(pattern, s->name) : strcmp(pattern, s->name) == 0))
            continue;
        ++*found;
        if (s->ev->flags & ST_EVENT_COMPILED_OUT)
            continue;
        set_event(s->ev, enable);
        avail++;
    }
    return avail;
}

int st__reg_rules_reserve(size_t n)
{
    int ret;

    pthread_mutex_lock(&reg_lock);
    ret = reserve_rules(n);
    if (ret == 0)
        reserved += n;
    pthread_mutex_unlock(&reg_lock);
    return ret;
}

void st__reg_rules_release(size_t n)
{
    pthread_mutex_lock(&reg_lock);
    reserved -= n;
    pthread_mutex_unlock(&reg_lock);
}

void st__reg_rules_add(char **patterns, const bool *enable, size_t n)
{
    int found;

    pthread_mutex_lock(&reg_lock);
    reserved -= n;
    for (size_t i = 0; i < n; i++) {
        apply_pattern(patterns[i], enable[i], &found);
        push_rule(patterns[i], enable[i], true, found > 0);
        patterns[i] = NULL;
    }
    pthread_mutex_unlock(&reg_lock);
}

int st__reg_set_enabled(const char *pattern, bool enable)
{
    char *copy;
    int found, avail;

    if (!pattern)
        return -EINVAL;
    if (*pattern == '-') {
        pattern++;
        enable = !enable;
    }
    if (!st__pattern_valid(pattern))
        return -EINVAL;
    copy = strdup(pattern);
    if (!copy)
        return -ENOMEM;
    pthread_mutex_lock(&reg_lock);
    if (reserve_rules(1) < 0) {
        avail = -ENOMEM;
        goto fail;
    }
    if (!has_wildcard(pattern)) {
        /* Check first: an error must change nothing. */
        found = 0;
        avail = 0;
        for (uint32_t i = 0; i < nslots; i++) {
            if (slots[i].ev && strcmp(slots[i].name, pattern) == 0) {
                found++;
                avail += !(slots[i].ev->flags & ST_EVENT_COMPILED_OUT);
            }
        }
        if (!found || !avail) {
            avail = found ? -EPERM : -ENOENT;
            goto fail;
        }
    }
    avail = apply_pattern(pattern, enable, &found);
    push_rule(copy, enable, false, found > 0);
    pthread_mutex_unlock(&reg_lock);
    return avail;
fail:
    pthread_mutex_unlock(&reg_lock);
    free(copy);
    return avail;
}

int st__reg_get_state(const char *name)
{
    int state = -ENOENT;

    if (!name)
        return -EINVAL;
    pthread_mutex_lock(&reg_lock);
    for (uint32_t i = 0; i < nslots; i++) {
        if (slots[i].ev && strcmp(slots[i].name, name) == 0) {
            state = (int)slot_state(&slots[i]);
            break;
        }
    }
    pthread_mutex_unlock(&reg_lock);
    return state;
}

bool st__reg_next(uint32_t *i, const char *pattern, struct st_registered_event *info)
{
    bool ok = false;

    pthread_mutex_lock(&reg_lock);
    for (; *i < nslots; ++*i) {
        struct slot *s = &slots[*i];
        if (!s->ev || (pattern && !glob(pattern, s->name)))
            continue;
        info->name = s->name;
        info->group = s->group;
        info->id = *i;
        info->state = slot_state(s);
        ok = true;
        break;
    }
    pthread_mutex_unlock(&reg_lock);
    return ok;
}

/* --- groups ------------------------------------------------------------ */

static int group_valid(const struct st_group *g)
{
    if (!g || !g->name || (!g->events && g->count))
        return -EINVAL;
    for (uint32_t i = 0; i < g->count; i++) {
        const struct st_event *ev = g->events[i];
        if (!ev || !ev->name || !*ev->name || strlen(ev->name) > ST_MAX_NAME)
            return -EINVAL;
    }
    return 0;
}

static int reserve_slots(uint32_t extra)
{
    struct slot *s;
    uint32_t cap;

    if (extra > UINT32_MAX - 2 - nslots) /* IDs must stay below the special ones */
        return -ENOSPC;
    if (nslots + extra <= cap_slots)
        return 0;
    cap = cap_slots ? cap_slots : 64;
    while (cap < nslots + extra)
        cap = cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
    s = realloc(slots, (size_t)cap * sizeof *s);
    if (!s)
        return -ENOMEM;
    slots = s;
    cap_slots = cap;
    return 0;
}

/* Replays the rule list on one newly registered event. */
static void apply_rules_to(struct st_event *ev)
{
    bool on = false;

    for (size_t i = 0; i < nrules; i++)
        if (glob(rules[i].pattern, ev->name)) {
            on = rules[i].enable;
            rules[i].matched = true;
        }
    set_event(ev, on);
}

int st__reg_register(struct st_group *group)
{
    char *gname = NULL;
    uint32_t i, base;
    int ret;

    ret = group_valid(group);
    if (ret < 0)
        return ret;
    pthread_mutex_lock(&reg_lock);
    if (group->registered) {
        ret = -EEXIST;
        goto out;
    }
    ret = reserve_slots(group->count);
    if (ret < 0)
        goto out;
    ret = -ENOMEM;
    if (!(gname = strdup(group->name)))
        goto out;
    base = nslots;
    for (i = 0; i < group->count; i++) {
        slots[base + i].name = strdup(group->events[i]->name);
        if (!slots[base + i].name) {
            while (i--)
                free(slots[base + i].name);
            free(gname);
            goto out;
        }
        slots[base + i].group = gname;
        slots[base + i].ev = group->events[i];
        slots[base + i].grp = group;
        group->events[i]->id = base + i;
    }
    nslots += group->count;
    /* Publish the mappings before any of these events can be enabled. */
    __atomic_store_n(&reg_count, nslots, __ATOMIC_RELEASE);
    for (i = 0; i < group->count; i++)
        apply_rules_to(group->events[i]);
    group->registered = 1;
    ret = 0;
out:
    pthread_mutex_unlock(&reg_lock);
    return ret;
}

void st__reg_unregister(struct st_group *group)
{
    if (!group)
        return;
    pthread_mutex_lock(&reg_lock);
    for (uint32_t i = 0; i < nslots; i++) {
        if (slots[i].grp == group && slots[i].ev) {
            __atomic_store_n(&slots[i].ev->enabled, 0u, __ATOMIC_RELEASE);
            slots[i].ev = NULL;
            slots[i].grp = NULL;
        }
    }
    group->registered = 0;
    pthread_mutex_unlock(&reg_lock);
}

uint32_t st__reg_count(void)
{
    return __atomic_load_n(&reg_count, __ATOMIC_ACQUIRE);
}

uint32_t st__reg_names(uint32_t first, const char **names, uint32_t max)
{
    uint32_t n = 0;

    pthread_mutex_lock(&reg_lock);
    for (; n < max && first + n < nslots; n++)
        names[n] = slots[first + n].name;
    pthread_mutex_unlock(&reg_lock);
    return n;
}

/*
 * Appends s to out as the body of a C string literal, in ASCII: a byte
 * outside printable ASCII as an octal escape, which (unlike \x) never
 * swallows the characters after it; trace files carry these lines
 * (meta_format.h), where only ASCII is safe for every reader.
 */
static void quote_into(struct st__growbuf *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            st__growbuf_printf(out, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            st__growbuf_printf(out, "\\%03o", c);
        else
            st__growbuf_put(out, s, 1);
    }
}

/* Appends slot i's trace-events line, without newline (reg_lock held). */
static void decl_line(uint32_t i, struct st__growbuf *out)
{
    const struct st_event *ev = slots[i].ev;

    if (!ev) { /* unloaded group: the name is all that is left */
        st__growbuf_printf(out, "%s(void) \"\"", slots[i].name);
        return;
    }
    st__growbuf_printf(out, "%s%s(%s) \"", ev->flags & ST_EVENT_COMPILED_OUT ? "disable " : "", ev->name,
                       ev->args && *ev->args ? ev->args : "void");
    quote_into(out, ev->fmt ? ev->fmt : "");
    st__growbuf_puts(out, "\"");
}

int st__reg_decls(struct st__growbuf *out)
{
    pthread_mutex_lock(&reg_lock);
    for (uint32_t i = 0; i < nslots; i++) {
        decl_line(i, out);
        st__growbuf_puts(out, "\n");
    }
    pthread_mutex_unlock(&reg_lock);
    return out->failed ? -ENOMEM : 0;
}

int st__reg_decl(uint32_t id, struct st__growbuf *out)
{
    int ret = -ENOENT;

    pthread_mutex_lock(&reg_lock);
    if (id < nslots) {
        decl_line(id, out);
        ret = out->failed ? -ENOMEM : 0;
    }
    pthread_mutex_unlock(&reg_lock);
    return ret;
}

void st__reg_unmatched(void (*fn)(const char *pattern, bool enable, const char *nearest, void *ctx), void *ctx)
{
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < nrules; i++) {
        struct st__nearest near;
        char list[256];
        if (!rules[i].configured || rules[i].matched)
            continue;
        st__nearest_init(&near, rules[i].pattern);
        for (uint32_t k = 0; k < nslots; k++)
            st__nearest_offer(&near, slots[k].name);
        st__nearest_list(&near, list, sizeof list);
        fn(rules[i].pattern, rules[i].enable, list, ctx);
    }
    pthread_mutex_unlock(&reg_lock);
}

uint32_t st__reg_enabled_count(void)
{
    uint32_t n = 0;

    pthread_mutex_lock(&reg_lock);
    for (uint32_t i = 0; i < nslots; i++)
        n += slots[i].ev && __atomic_load_n(&slots[i].ev->enabled, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&reg_lock);
    return n;
}

bool st__reg_none_recorded(void)
{
    bool unrecorded = false, recorded = false;

    pthread_mutex_lock(&reg_lock);
    for (uint32_t i = 0; i < nslots; i++) {
        if (!slots[i].ev)
            continue;
        if (slots[i].ev->flags & ST_EVENT_UNRECORDED)
            unrecorded = true;
        else if (!(slots[i].ev->flags & ST_EVENT_COMPILED_OUT))
            recorded = true;
    }
    pthread_mutex_unlock(&reg_lock);
    return unrecorded && !recorded;
}

bool st__reg_lock_free(void)
{
    if (pthread_mutex_trylock(&reg_lock) != 0)
        return false;
    pthread_mutex_unlock(&reg_lock);
    return true;
}

void st__reg_lock(void)
{
    pthread_mutex_lock(&reg_lock);
}

void st__reg_unlock(void)
{
    pthread_mutex_unlock(&reg_lock);
}

void st__reg_fork_child(void)
{
    pthread_mutex_init(&reg_lock, NULL);
}
