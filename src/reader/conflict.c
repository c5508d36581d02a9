/*
 * Conflicts between the catalog (given trace-events files) and the
 * declarations a trace carries (reader.h, "Conflicts"). The catalog wins;
 * this only tells the caller, once per event name, so that a renamed event
 * or a changed argument list is not a mystery when records fail to decode
 * or print under other names.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader_internal.h"

/* Writes "(type name, ...)" of the n arguments into buf; "(void)" for none. */
static void args_text(char *buf, size_t len, unsigned n, const char *const *types, const char *const *names)
{
    size_t used = (size_t)snprintf(buf, len, "(%s", n ? "" : "void");
    for (unsigned i = 0; i < n && used < len; i++) {
        const char *type = types[i];
        size_t tl = strlen(type);
        /* "const char *s", not "const char * s": the parser keeps the '*' in the type */
        used += (size_t)snprintf(buf + used, len - used, "%s%s%s%s", i ? ", " : "", type,
                                 tl && type[tl - 1] == '*' ? "" : " ", names[i]);
    }
    if (used < len)
        snprintf(buf + used, len - used, ")");
}

static void decl_args_text(char *buf, size_t len, const struct st__event_decl *d)
{
    const char *types[ST_READER_MAX_ARGS], *names[ST_READER_MAX_ARGS];
    for (unsigned i = 0; i < d->nargs; i++)
        types[i] = d->args[i].type, names[i] = d->args[i].name;
    args_text(buf, len, d->nargs, types, names);
}

static void event_args_text(char *buf, size_t len, const struct st_event_info *ev)
{
    const char *types[ST_READER_MAX_ARGS], *names[ST_READER_MAX_ARGS];
    for (unsigned i = 0; i < ev->nargs; i++)
        types[i] = ev->args[i].type, names[i] = ev->args[i].name;
    args_text(buf, len, ev->nargs, types, names);
}

/* Whether name was reported already; else remembers it (up to ST__MAX_CONFLICTS). */
static bool seen_before(struct st__conflicts *c, const char *name)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->names[i], name))
            return true;
    if (c->n >= ST__MAX_CONFLICTS)
        return true; /* the bound: stop reporting rather than grow without end */
    char *copy = strdup(name);
    if (!copy)
        return true; /* out of memory: a report is not worth failing the read */
    c->names[c->n++] = copy;
    return false;
}

/* Parses one declaration line into list (a one-line trace-events text). 0 or -errno. */
static int parse_line(struct st__event_list *list, const char *line, size_t len)
{
    struct st__events_error e;
    char *text = malloc(len + 1);
    int ret;

    if (!text)
        return -ENOMEM;
    memcpy(text, line, len);
    text[len] = '\n';
    memset(&e, 0, sizeof e);
    ret = st__events_parse_buffer_flags(list, "the trace", text, len + 1, ST_EVENTS_LENIENT, &e);
    free(text);
    return ret < 0 ? ret : list->count == 1 ? 0 : -EINVAL;
}

void st__conflict_check(struct st__conflicts *c, const struct st_catalog *cat, const char *line, size_t len)
{
    struct st__event_list list;
    char msg[2048], given[480], carried[480];

    if (!c->fn || cat->count == 0)
        return; /* no trace-events files given: the catalog is the trace's own */
    st__events_init(&list);
    if (parse_line(&list, line, len) < 0)
        goto out; /* not ours to judge: st_catalog_load_trace() reports what does not parse */
    const struct st__event_decl *d = &list.events[0];
    const struct st_event_info *ev = st_catalog_find(cat, d->name);
    if (ev && st__same_args(ev, d))
        goto out;
    if (seen_before(c, d->name))
        goto out;
    decl_args_text(carried, sizeof carried, d);
    if (!ev) {
        snprintf(msg, sizeof msg,
                 "event '%s': the trace declares %s%s, the trace-events files do not declare it (renamed or "
                 "removed?)",
                 d->name, d->name, carried);
    } else {
        event_args_text(given, sizeof given, ev);
        snprintf(msg, sizeof msg,
                 "event '%s': the trace-events files declare %s, the trace %s; using the trace-events files",
                 d->name, given, carried);
    }
    c->fn(msg, c->opaque);
out:
    st__events_free(&list);
}

void st__conflicts_free(struct st__conflicts *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->names[i]);
    c->n = 0;
}
