/*
 * st_configure() and SIMPLETRACE: QEMU's -trace syntax, applied as one
 * transaction over the parts that own the keys (config_part.h).
 *
 *   config := option (';' option)*          each option as one -trace argument
 *   option := item (',' item)*              ",," inside an item is a literal ','
 *   item   := [enable=]PATTERN | KEY=VALUE   empty items are ignored
 *
 * The keys and what they do are in each part's table: core/config_core.c
 * (patterns, events=, bufsize=, clock=, crash=, flight=), backends/log.c
 * (log-prefix=), drain/config_drain.c (file=, dir=, rotate=, rotate-keep=,
 * compress=, writer=, flight-signal=, flight-trigger=), monitor/monitor.c (monitor=,
 * monitor-timeout=). A configuration of only simpletrace's own keys does
 * not turn the trace file on; any QEMU item (a pattern, events=, file=)
 * or dir= does.
 *
 * All or nothing: the whole string (and every events file) is parsed and
 * checked, then every part prepares (does all that can fail), then every
 * part commits (cannot fail); when a prepare fails, the parts that
 * prepared, the failing one included, abort. So a configuration that
 * fails anywhere changes nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <simpletrace/api.h>

#include "backends.h"
#include "config_core.h"
#include "control.h"
#include "diag.h"
#include "drain.h"
#include "nearest.h"
#include "trim.h"

/* Every part: the lower layers' fixed, those above registered; in layer order. */
#define MAX_PARTS 8
static const struct st__cfg_part *parts[MAX_PARTS] = {
    &st__events_cfg_part, &st__ring_cfg_part, &st__backends_cfg_part, &st__drain_cfg_part, &st__control_cfg_part,
};
static size_t nparts = 5;
static pthread_mutex_t parts_lock = PTHREAD_MUTEX_INITIALIZER;

int st__cfg_register(const struct st__cfg_part *part)
{
    size_t at;

    pthread_mutex_lock(&parts_lock);
    if (nparts == MAX_PARTS) {
        pthread_mutex_unlock(&parts_lock);
        return -ENOSPC;
    }
    for (at = nparts; at > 0 && parts[at - 1]->layer > part->layer; at--)
        parts[at] = parts[at - 1];
    parts[at] = part;
    nparts++;
    pthread_mutex_unlock(&parts_lock);
    return 0;
}

/* One transaction: the parts as they are now, their pending states, the items' text. */
struct txn {
    const struct st__cfg_part *parts[MAX_PARTS];
    void *states[MAX_PARTS];
    size_t nparts;
    char *items;      /* the configuration, split in place into items */
    bool opens_file;  /* a QEMU item was given */
};

static int txn_init(struct txn *t, const char *config)
{
    pthread_mutex_lock(&parts_lock);
    t->nparts = nparts;
    memcpy(t->parts, parts, nparts * sizeof parts[0]);
    pthread_mutex_unlock(&parts_lock);
    for (size_t i = 0; i < t->nparts; i++) {
        if (!(t->states[i] = calloc(1, t->parts[i]->state_size ? t->parts[i]->state_size : 1)))
            return -ENOMEM;
        if (t->parts[i]->init)
            t->parts[i]->init(t->states[i]);
    }
    return (t->items = strdup(config)) ? 0 : -ENOMEM;
}

static void txn_free(struct txn *t)
{
    for (size_t i = 0; i < t->nparts; i++) {
        if (t->states[i] && t->parts[i]->done)
            t->parts[i]->done(t->states[i]);
        free(t->states[i]);
    }
    free(t->items);
}

/* The part and key that take items named key (NULL: a bare pattern). */
static const struct st__cfg_key *find_key(const struct txn *t, const char *key, size_t *part)
{
    for (size_t i = 0; i < t->nparts; i++)
        for (size_t k = 0; k < t->parts[i]->nkeys; k++) {
            const char *name = t->parts[i]->keys[k].name;
            if (key ? name && strcmp(name, key) == 0 : !name) {
                *part = i;
                return &t->parts[i]->keys[k];
            }
        }
    return NULL;
}

/* "unknown key 'X'", with the nearest keys there are. */
static int unknown_key(const struct txn *t, const char *key, char *err, size_t errlen)
{
    struct st__nearest near;
    char list[256];

    st__nearest_init(&near, key);
    for (size_t i = 0; i < t->nparts; i++)
        for (size_t k = 0; k < t->parts[i]->nkeys; k++)
            if (t->parts[i]->keys[k].name)
                st__nearest_offer(&near, t->parts[i]->keys[k].name);
    if (st__nearest_list(&near, list, sizeof list))
        st__errmsg(err, errlen, "unknown key '%s' (did you mean %s?)", key, list);
    else
        st__errmsg(err, errlen, "unknown key '%s'", key);
    return -EINVAL;
}

/*
 * One item, already unescaped (it stays valid until the transaction ends).
 * Blanks around the item, its key and its value are not part of them:
 * "enable=job_*, file=x" means what it says.
 */
static int parse_item(struct txn *t, char *item, char *err, size_t errlen)
{
    char *eq = strchr(item, '=');
    const char *value = eq ? st__trim(eq + 1) : item;
    const struct st__cfg_key *key;
    size_t part;

    if (eq) {
        *eq = '\0';
        item = st__trim(item);
    }
    key = find_key(t, eq ? item : NULL, &part);
    if (!key)
        return unknown_key(t, item, err, errlen);
    t->opens_file |= key->opens_file;
    return key->parse(t->states[part], value, err, errlen);
}

/* Splits t->items at ',' and ';' (",," stays a ','), parsing each item. */
static int parse_items(struct txn *t, char *err, size_t errlen)
{
    char *s = t->items;

    while (*s) {
        char *item = s, *o = s;
        int ret;
        for (; *s; s++) {
            if (*s == ',' && s[1] == ',')
                s++;
            else if (*s == ',' || *s == ';')
                break;
            *o++ = *s;
        }
        if (*s)
            s++;
        *o = '\0'; /* o <= s - 1 when a separator was taken: the next item is intact */
        item = st__trim(item);
        if (*item && (ret = parse_item(t, item, err, errlen)) < 0)
            return ret;
    }
    return 0;
}

/* Prepares every part, then commits them all, or aborts those prepared. */
static int txn_apply(struct txn *t, bool in_init, char *err, size_t errlen)
{
    struct st__cfg_view view = {t->parts, t->states, t->nparts, t->opens_file, in_init};
    size_t i;
    int ret = 0;

    for (i = 0; i < t->nparts; i++) {
        if (t->parts[i]->prepare && (ret = t->parts[i]->prepare(t->states[i], &view, err, errlen)) < 0)
            break;
    }
    if (ret < 0) {
        /* The failing part too: its prepare may have taken something before it failed. */
        for (size_t k = i + 1; k-- > 0;)
            if (t->parts[k]->abort)
                t->parts[k]->abort(t->states[k]);
        return ret;
    }
    for (i = 0; i < t->nparts; i++)
        if (t->parts[i]->commit)
            t->parts[i]->commit(t->states[i], &view);
    return 0;
}

int st__cfg_apply(const char *config, bool in_init, char *err, size_t errlen)
{
    struct txn t = {0};
    int ret;

    if (err && errlen)
        err[0] = '\0';
    if (!config) {
        st__errmsg(err, errlen, "no configuration");
        return -EINVAL;
    }
    ret = txn_init(&t, config);
    if (ret == 0)
        ret = parse_items(&t, err, errlen);
    if (ret == -ENOMEM && !(err && *err))
        st__errmsg(err, errlen, "%s", st_strerror(ret));
    if (ret == 0) {
        st__ctl_lock();
        ret = txn_apply(&t, in_init, err, errlen);
        st__ctl_unlock();
    }
    txn_free(&t);
    return ret;
}
