/*
 * The configuration contract: how a part of the runtime takes its keys of
 * st_configure() / SIMPLETRACE (QEMU's -trace syntax). Types only: the
 * parser and the transaction live in control/config.c, each part defines
 * its own table (core: config_core.c; backends: log.c; drain:
 * config_drain.c; the monitor registers its own).
 *
 * One st_configure() call is one transaction:
 *
 *   parse      every item goes to the part that owns its key, which checks
 *              it and records it in its pending state (nothing applied);
 *   prepare    each part, lowest layer first, does everything that can
 *              fail (opens files, binds sockets, starts threads, reserves
 *              memory) without changing what the program sees;
 *   commit     each part applies its state, lowest first; a commit cannot fail;
 *   abort      when a prepare failed, the parts already prepared undo it,
 *              in reverse order.
 *
 * So a configuration that fails anywhere changes nothing.
 */
#ifndef ST_RUNTIME_CORE_CONFIG_PART_H
#define ST_RUNTIME_CORE_CONFIG_PART_H

#include <stdbool.h>
#include <stddef.h>

struct st__cfg_view;

/* One key: `name=value` items with this name (NULL: a bare pattern item). */
struct st__cfg_key {
    const char *name;
    /* A QEMU key (a pattern, events=, file=): the trace file is turned on by it. */
    bool opens_file;
    /* Checks value and records it in the part's pending state; 0 or -errno with a message. */
    int (*parse)(void *state, const char *value, char *err, size_t errlen);
};

/* Where a part sits: prepared and committed in this order, aborted in reverse. */
enum st__cfg_layer {
    ST_CFG_CORE = 0,
    ST_CFG_BACKENDS = 1,
    ST_CFG_DRAIN = 2,
    ST_CFG_CONTROL = 3,
    ST_CFG_MONITOR = 4,
};

/* A part's keys and phases. Every member but keys may be NULL. */
struct st__cfg_part {
    const char *name;
    enum st__cfg_layer layer;
    const struct st__cfg_key *keys;
    size_t nkeys;
    size_t state_size;                /* bytes of pending state, zeroed, then init */
    void (*init)(void *state);        /* the pending state of "nothing asked" */
    int (*prepare)(void *state, const struct st__cfg_view *view, char *err, size_t errlen);
    void (*commit)(void *state, const struct st__cfg_view *view);
    void (*abort)(void *state);       /* also frees what parse kept, when the transaction fails */
    void (*done)(void *state);        /* frees what parse kept, after commit or abort */
};

/* What a phase sees of the whole transaction. */
struct st__cfg_view {
    const struct st__cfg_part *const *parts; /* every part, in layer order */
    void *const *states;                     /* their pending states */
    size_t nparts;
    bool opens_file;                         /* an item that turns the trace file on was given */
    bool in_init;                            /* applying SIMPLETRACE at start-up: nothing may wait for a thread */
};

/* The pending state of part in this transaction (a lower layer's: parts read only downward). */
static inline void *st__cfg_state(const struct st__cfg_view *v, const struct st__cfg_part *part)
{
    for (size_t i = 0; i < v->nparts; i++)
        if (v->parts[i] == part)
            return v->states[i];
    return NULL;
}

/* Reads key's on|off value v into *on (1 or 0). 0, or -EINVAL with "invalid KEY 'V': want on or off" in err. */
int st__cfg_on_off(const char *key, const char *v, int *on, char *err, size_t errlen);

#endif /* ST_RUNTIME_CORE_CONFIG_PART_H */
