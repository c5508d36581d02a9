/*
 * Keyed spans still open (export.h, "Pairing"): a begin of a rule with
 * @ARG waits here for the end of the same function whose ARG has the same
 * value, in the same process, on any of its threads.
 *
 * An open-addressing table with linear probing and backward-shift
 * deletion, so it holds exactly the spans open now: memory follows the
 * open spans, never the length of the trace.
 */
#include "export_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

/* Fibonacci hashing's constant spreads consecutive keys (request ids, addresses) over the table. */
static uint64_t mix(uint64_t h)
{
    h ^= h >> 31;
    h *= UINT64_C(0x9e3779b97f4a7c15);
    return h ^ (h >> 29);
}

static uint64_t hash_of(const struct st__ex_process *proc, uint32_t func, const struct st_value *v)
{
    uint64_t h = mix(((uint64_t)proc->index << 32 | func) + 1);
    if (v->kind != ST_VALUE_STRING)
        return mix(h ^ v->u64) | 1; /* 0 marks an empty slot */
    for (uint32_t i = 0; i < v->len; i++)
        h = (h ^ (unsigned char)v->str[i]) * UINT64_C(0x100000001b3);
    return mix(h ^ v->len) | 1;
}

static bool same(const struct st__ex_open *o, uint64_t hash, const struct st__ex_process *proc, uint32_t func,
                 const struct st_value *v)
{
    if (o->hash != hash || o->proc != proc || o->func != func || o->is_str != (v->kind == ST_VALUE_STRING))
        return false;
    if (!o->is_str)
        return o->value == v->u64;
    return o->value == v->len && memcmp(o->str, v->str, v->len) == 0;
}

/* The slot of the key, or the empty slot where it would go. */
static struct st__ex_open *probe(const struct st__ex_keyed *k, uint64_t hash, const struct st__ex_process *proc,
                                 uint32_t func, const struct st_value *v)
{
    size_t mask = k->cap - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask)
        if (k->slots[i].hash == 0 || same(&k->slots[i], hash, proc, func, v))
            return &k->slots[i];
}

/*
 * A table of many open spans is probed at random, each probe a TLB miss
 * on small pages (a third of the time of a million keys): huge pages for
 * a table of several. Advice only (Linux, where THP is "madvise"); a
 * large calloc() block comes fresh from mmap, so no page exists yet.
 */
static void advise_huge(void *p, size_t len)
{
#ifdef MADV_HUGEPAGE
    uintptr_t from = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    uintptr_t to = ((uintptr_t)p + len) & ~(uintptr_t)(HUGE_PAGE - 1);
    if (len >= 4 * HUGE_PAGE && to > from)
        madvise((void *)from, to - from, MADV_HUGEPAGE);
#else
    (void)p, (void)len;
#endif
}

/* Doubles the table (a power of two, kept at most half full). 0 or -ENOMEM. */
static int grow(struct st__ex_keyed *k)
{
    size_t cap = k->cap ? k->cap * 2 : 64;
    struct st__ex_open *old = k->slots, *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -ENOMEM;
    advise_huge(slots, cap * sizeof *slots);
    size_t old_cap = k->cap;
    k->slots = slots;
    k->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].hash == 0)
            continue;
        size_t j = old[i].hash & (cap - 1);
        while (slots[j].hash)
            j = (j + 1) & (cap - 1);
        slots[j] = old[i];
    }
    free(old);
    return 0;
}

struct st__ex_open *st__ex_keyed_find(const struct st__ex_keyed *k, const struct st__ex_process *proc, uint32_t func,
                                      const struct st_value *v)
{
    if (k->n == 0)
        return NULL;
    struct st__ex_open *o = probe(k, hash_of(proc, func, v), proc, func, v);
    return o->hash ? o : NULL;
}

int st__ex_keyed_get(struct st__ex_keyed *k, struct st__ex_process *proc, uint32_t func, const struct st_value *v,
                     const struct st_arg_info *arg, struct st__ex_open **out)
{
    if ((k->n + 1) * 2 > k->cap) {
        int ret = grow(k);
        if (ret < 0)
            return ret;
    }
    uint64_t hash = hash_of(proc, func, v);
    struct st__ex_open *o = probe(k, hash, proc, func, v);
    if (o->hash) {
        *out = o;
        return 1;
    }
    bool is_str = v->kind == ST_VALUE_STRING;
    char *str = NULL;
    if (is_str && !(str = malloc(v->len + 1u)))
        return -ENOMEM;
    if (is_str) {
        memcpy(str, v->str, v->len);
        str[v->len] = '\0';
    }
    *o = (struct st__ex_open){.hash = hash, .proc = proc, .func = func, .is_str = is_str,
                              .value = is_str ? v->len : v->u64, .str = str, .arg = arg};
    k->n++;
    *out = o;
    return 0;
}

void st__ex_keyed_remove(struct st__ex_keyed *k, struct st__ex_open *o)
{
    size_t mask = k->cap - 1, hole = (size_t)(o - k->slots);
    free(o->str);
    /* Backward shift: later entries of the run move into the hole unless they already sit at or after
     * their home slot (counted cyclically from the hole). */
    for (size_t i = (hole + 1) & mask; k->slots[i].hash; i = (i + 1) & mask) {
        size_t home = k->slots[i].hash & mask;
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            k->slots[hole] = k->slots[i];
            hole = i;
        }
    }
    memset(&k->slots[hole], 0, sizeof k->slots[hole]);
    k->n--;
}

void st__ex_keyed_free(struct st__ex_keyed *k)
{
    for (size_t i = 0; i < k->cap; i++)
        free(k->slots[i].str);
    free(k->slots);
    memset(k, 0, sizeof *k);
}
