/*
 * The event registry (registry.c): groups, event IDs and states, enable
 * rules. reg_lock guards it and is never taken on the tracing path.
 */
#ifndef ST_RUNTIME_CORE_REGISTRY_H
#define ST_RUNTIME_CORE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <simpletrace/simpletrace.h>

#include "growbuf.h"

/* Registers a group: assigns IDs, applies the enable rules. 0, -EINVAL, -EEXIST, -ENOSPC or -ENOMEM. */
int st__reg_register(struct st_group *group);

/* Forgets a group (its IDs are not reused). */
void st__reg_unregister(struct st_group *group);

/* True when p (without a leading '-') is a usable event pattern. */
bool st__pattern_valid(const char *p);

/* st_event_set_enabled() (simpletrace.h). */
int st__reg_set_enabled(const char *pattern, bool enable);

/* st_event_get_state() (simpletrace.h). */
int st__reg_get_state(const char *name);

/* Finds the next registered event at or after ID *i matching pattern (NULL: any); fills info. */
bool st__reg_next(uint32_t *i, const char *pattern, struct st_registered_event *info);

/*
 * Rules as a configuration adds them: st__reg_rules_reserve(n) makes room
 * for n rules (0 or -ENOMEM; nothing changes), then either
 * st__reg_rules_add() appends them in order and applies them to the
 * registered events (it cannot fail; it takes the patterns, which must be
 * malloc'd, without '-', and sets the array's entries to NULL) or
 * st__reg_rules_release(n) gives the room back. Unlike
 * st__reg_set_enabled(), names that match no event are not an error: the
 * rule waits for groups registered later.
 */
int st__reg_rules_reserve(size_t n);
void st__reg_rules_add(char **patterns, const bool *enable, size_t n);
void st__reg_rules_release(size_t n);

/*
 * Calls fn for each rule a configuration added that no registered event has
 * matched so far (pattern without '-', enable false for a '-' rule), with
 * the nearest event names as "'a', 'b'" ("" when none is near), under the
 * registry's lock: fn must not call back into the registry.
 */
void st__reg_unmatched(void (*fn)(const char *pattern, bool enable, const char *nearest, void *ctx), void *ctx);

/* Events enabled now. */
uint32_t st__reg_enabled_count(void);

/* True when events are registered and none can write a record: all log/syslog/... only (ST_EVENT_UNRECORDED) or compiled out, one at least unrecorded. */
bool st__reg_none_recorded(void);

/* Number of event IDs assigned so far (acquire: mappings are readable). */
uint32_t st__reg_count(void);

/*
 * Copies the names of IDs [first, first + max) that exist into names[]
 * (NUL-terminated, never freed while the process lives); returns how many.
 */
uint32_t st__reg_names(uint32_t first, const char **names, uint32_t max);

/*
 * Appends every registered event as a trace-events line (`[disable]
 * name(args) "fmt"`), in ID order, so a reader can decode records without
 * the program's files. 0, or -ENOMEM (out->failed).
 */
int st__reg_decls(struct st__growbuf *out);

/* Appends event ID id's trace-events line (no newline) to out. 0, -ENOENT or -ENOMEM. */
int st__reg_decl(uint32_t id, struct st__growbuf *out);

/* True when reg_lock is free right now (a pass on a tracing thread asks, as st__ring_cons_locks_free). */
bool st__reg_lock_free(void);

/* Fork hooks: the registry's lock. */
void st__reg_lock(void);
void st__reg_unlock(void);
void st__reg_fork_child(void);

#endif /* ST_RUNTIME_CORE_REGISTRY_H */
