/*
 * What a file the runtime writes says about itself (describe.c; layout in
 * meta_format.h): the process's description and each event's mapping with
 * its declaration. In core, not in the drain, because both the drain's
 * files and the crash names file (ring_file.c) carry them.
 */
#ifndef ST_RUNTIME_CORE_DESCRIBE_H
#define ST_RUNTIME_CORE_DESCRIBE_H

#include <stdbool.h>
#include <stdint.h>

#include "growbuf.h"

/*
 * Appends this process's description record to out, its clock anchors
 * taken now. Reads /proc/self and the clocks: never on the tracing fast
 * path. may_wait: it may sleep up to 2 ms right after start-up to measure
 * the TSC rate (false in a traced thread: tsc_hz is then left out). Out of
 * memory: out->failed, or nothing appended.
 */
void st__describe_process(struct st__growbuf *out, bool may_wait);

/* Appends the mapping record of event ID id (called name) and its declaration record to out (takes reg_lock). */
void st__describe_event(struct st__growbuf *out, uint32_t id, const char *name);

#endif /* ST_RUNTIME_CORE_DESCRIBE_H */
