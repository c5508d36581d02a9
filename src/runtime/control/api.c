/*
 * The public entry points of libsimpletrace (simpletrace.h, trace.h): each
 * initialises the runtime, checks its arguments and hands over to the
 * layer that does the work. api.h's functions are in src/common.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <simpletrace/simpletrace.h>

#include "control.h"
#include "drain.h"
#include "glob_match.h"
#include "registry.h"
#include "ring.h"
#include "ring_file.h"

/* The first release's sizes of the structures callers allocate (api.h): smaller ones are refused. */
#define STATS_SIZE_V0 (offsetof(struct st_stats, buffer_bytes) + sizeof(uint64_t))
#define FILE_STATUS_SIZE_V0 (offsetof(struct st_file_status, error) + sizeof(int))
#define GROUP_SIZE_V0 (offsetof(struct st_group, registered) + sizeof(uint32_t))
#define EVENT_SIZE_V0 (offsetof(struct st_event, flags) + sizeof(uint32_t))

int st_configure(const char *config, char *errbuf, size_t errlen)
{
    st__init();
    return st__cfg_apply(config, false, errbuf, errlen);
}

/* --- events --------------------------------------------------------------------- */

int st_group_register(struct st_group *group)
{
    st__init();
    if (!group || group->struct_size < GROUP_SIZE_V0)
        return -EINVAL;
    for (uint32_t i = 0; i < group->count; i++)
        if (group->events && group->events[i] && group->events[i]->struct_size < EVENT_SIZE_V0)
            return -EINVAL;
    return st__reg_register(group);
}

void st_group_unregister(struct st_group *group)
{
    st__init();
    st__reg_unregister(group);
}

int st_event_set_enabled(const char *pattern, bool enable)
{
    st__init();
    return st__reg_set_enabled(pattern, enable);
}

int st_event_get_state(const char *name)
{
    st__init();
    return st__reg_get_state(name);
}

int st_event_foreach(const char *pattern, st_event_visit_fn visit, void *opaque)
{
    struct st_registered_event info;
    uint32_t i = 0;
    int n = 0, r;

    st__init();
    if (!visit || (pattern && !st__pattern_valid(pattern)))
        return -EINVAL;
    /* The lock is not held during visit: it may call any st_ function. */
    while (st__reg_next(&i, pattern, &info)) {
        i++;
        n++;
        if ((r = visit(&info, opaque)) != 0)
            return r;
    }
    return n;
}

bool st_glob_match(const char *pattern, const char *name)
{
    return pattern && name && st__glob_match_n(pattern, strlen(pattern), name);
}

/* --- the trace file ------------------------------------------------------------------- */

int st_trace_file_set_enabled(bool enabled)
{
    st__init();
    return st__file_set_enabled(enabled);
}

int st_trace_file_set_name(const char *path)
{
    st__init();
    return st__file_set_name(path);
}

int st_trace_file_flush(void)
{
    st__init();
    return st__file_flush();
}

int st_trace_finish(void)
{
    char path[4096];
    bool enabled;
    int error = 0;

    st__init();
    st__finish();
    st__file_status(path, sizeof path, &enabled, &error);
    return error;
}

int st_trace_file_status(struct st_file_status *status)
{
    struct st_file_status s;

    st__init();
    if (!status || status->struct_size < FILE_STATUS_SIZE_V0)
        return -EINVAL;
    memset(&s, 0, sizeof s);
    s.struct_size = status->struct_size;
    st__file_status(s.path, sizeof s.path, &s.enabled, &s.error);
    memcpy(status, &s, status->struct_size < sizeof s ? status->struct_size : sizeof s);
    return 0;
}

int st_trace_snapshot(const char *path)
{
    st__init();
    return st__snapshot_write(path, NULL, 0);
}

/* --- statistics ------------------------------------------------------------------------ */

/*
 *   produced = committed + dropped
 *   dropped  = per-thread drops (buffer full, nested, oversized)
 *            + lost drops (no buffer, or after the thread's exit hook)
 *            + records lost to a write error
 *   produced = written + dropped + pending        once producers are quiet
 */
int st_stats_get(struct st_stats *stats)
{
    struct st__ring_counters rc;
    struct st__drain_counters dc;
    struct st_stats s;

    st__init();
    if (!stats || stats->struct_size < STATS_SIZE_V0)
        return -EINVAL;
    st__ring_counters(&rc);
    st__drain_counters(&dc);
    memset(&s, 0, sizeof s);
    s.struct_size = stats->struct_size;
    s.produced = rc.committed + rc.dropped;
    s.written = dc.written;
    s.dropped = rc.dropped + dc.write_dropped;
    s.dropped_reported = dc.dropped_reported;
    s.bytes_written = dc.bytes_written;
    s.buffered = rc.buffered;
    s.threads = rc.threads;
    s.pending = rc.committed >= rc.consumed ? rc.committed - rc.consumed : 0;
    s.buffer_bytes = rc.capacity;
    s.write_lost = dc.write_dropped + dc.stopped_dropped;
    s.crash_unprotected = st__ring_file_unprotected(NULL);
    s.zstd_frames = dc.zframes;
    s.zstd_fast_frames = dc.zframes_fast;
    memcpy(stats, &s, stats->struct_size < sizeof s ? stats->struct_size : sizeof s);
    return 0;
}
