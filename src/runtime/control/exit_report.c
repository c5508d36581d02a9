/*
 * What a run lost or never did, said once at exit on stderr (nothing is
 * lost without a word):
 *
 *   - a configured pattern that matched no event, with the nearest names;
 *   - a trace file that holds no events because none was enabled;
 *   - records traced while no trace file was ever on (monitor=on alone);
 *   - records lost because writing the trace file failed (full disk):
 *     how many, which file and the error, never taken for full buffers;
 *   - events dropped because the thread buffers were full, how many of
 *     how many, and what keeps them (drop-report=off silences this one);
 *   - crash=DIR: threads whose buffers DIR could not hold (recover cannot
 *     rebuild their records).
 *
 * Only the process that applied the configuration reports the patterns (a
 * fork child inherits them); every process reports its own file and drops.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <simpletrace/api.h>

#include "control.h"
#include "diag.h"
#include "drain.h"
#include "registry.h"
#include "ring.h"
#include "ring_file.h"

static int drop_report = 1;   /* drop-report=on|off (atomic) */
static pid_t configured_by;   /* the process that applied a configuration (atomic) */

static void say_unmatched(const char *pattern, bool enable, const char *nearest, void *ctx)
{
    (void)ctx;
    if (*nearest)
        st__diag("simpletrace", "pattern '%s%s' matched no event (did you mean %s?)", enable ? "" : "-", pattern,
                 nearest);
    else
        st__diag("simpletrace", "pattern '%s%s' matched no event", enable ? "" : "-", pattern);
}

/* "4M" for a power of two of KiB or MiB, else bytes. */
static void size_text(size_t n, char *buf, size_t len)
{
    if (n >= ((size_t)1 << 20) && !(n & (((size_t)1 << 20) - 1)))
        snprintf(buf, len, "%zuM", n >> 20);
    else if (n >= 1024 && !(n & 1023))
        snprintf(buf, len, "%zuK", n >> 10);
    else
        snprintf(buf, len, "%zu", n);
}

/*
 * Records a write error lost: those of the failed writes, the buffers' drops
 * while it kept the file stopped, and (still stopped now) what the buffers
 * hold at exit, which no file will ever get.
 */
static void say_write_lost(const struct st__ring_counters *rc, const struct st__drain_counters *dc)
{
    uint64_t left = dc->stopped && rc->committed > rc->consumed ? rc->committed - rc->consumed : 0;
    uint64_t lost = dc->write_dropped + dc->stopped_dropped + left;
    char path[4096];
    int error;

    if (!lost)
        return;
    st__drain_write_failure(path, sizeof path, &error);
    st__diag("simpletrace", "%" PRIu64 " records lost: writing '%s' failed: %s (%" PRIu64 " in the failed writes, %"
             PRIu64 " dropped and %" PRIu64 " left in thread buffers while the file was stopped)", lost, path,
             error ? st_strerror(error) : "unknown error", dc->write_dropped, dc->stopped_dropped, left);
}

void st__exit_report(void)
{
    struct st__ring_counters rc;
    struct st__drain_counters dc;
    char path[4096], size[32];
    uint64_t produced, dropped;
    uint32_t unprotected;
    bool file_on;
    int error;

    if (__atomic_load_n(&configured_by, __ATOMIC_RELAXED) == getpid())
        st__reg_unmatched(say_unmatched, NULL);
    if ((unprotected = st__ring_file_unprotected(&error)))
        st__diag("simpletrace", "%" PRIu32 " thread%s traced without crash protection: crash=DIR could not hold "
                 "their buffers (%s); simpletrace recover cannot rebuild what they had not written", unprotected,
                 unprotected == 1 ? "" : "s", st_strerror(error));
    st__ring_counters(&rc);
    produced = rc.committed + rc.dropped;
    if (!st__file_in_use()) {
        /*
         * Flight mode keeps records for snapshots; the log backends write
         * none to the rings; a fork child whose file could not be opened
         * said so when it tried (the file was on, not "never on").
         */
        if (rc.committed && !st__flight_mode() && !st__file_open_failed())
            st__diag("simpletrace", "%" PRIu64 " records were traced and written nowhere: the trace file was never "
                     "on (file=PATH, or trace-file on through the monitor)", rc.committed);
        return;
    }
    st__file_status(path, sizeof path, &file_on, &error);
    st__drain_counters(&dc);
    if (produced == 0 && st__reg_enabled_count() == 0 && !st__reg_none_recorded())
        st__diag("simpletrace", "trace file '%s' holds no events: none was enabled (SIMPLETRACE='enable=PATTERN,...' "
                 "or st_configure())", path);
    say_write_lost(&rc, &dc);
    /* Only what full buffers dropped: a larger bufsize= keeps those, not the write error's. */
    dropped = rc.dropped > dc.stopped_dropped ? rc.dropped - dc.stopped_dropped : 0;
    if (dropped && __atomic_load_n(&drop_report, __ATOMIC_RELAXED)) {
        size_text(st__ring_size(), size, sizeof size);
        st__diag("simpletrace", "%" PRIu64 " of %" PRIu64 " events were dropped (thread buffers full); a larger "
                 "bufsize= (now %s) or fewer enabled events keeps them; drop-report=off silences this",
                 dropped, produced, size);
    }
}

/* --- configuration: drop-report=on|off ----------------------------------------------- */

static int parse_drop_report(void *state, const char *v, char *err, size_t errlen)
{
    return st__cfg_on_off("drop-report", v, state, err, errlen);
}

static void report_init(void *state)
{
    *(int *)state = -1;
}

static void report_commit(void *state, const struct st__cfg_view *view)
{
    int on = *(int *)state;

    (void)view;
    __atomic_store_n(&configured_by, getpid(), __ATOMIC_RELAXED);
    if (on >= 0)
        __atomic_store_n(&drop_report, on, __ATOMIC_RELAXED);
}

static const struct st__cfg_key keys[] = {{"drop-report", false, parse_drop_report}};

const struct st__cfg_part st__control_cfg_part = {
    .name = "exit report",
    .layer = ST_CFG_CONTROL,
    .keys = keys,
    .nkeys = 1,
    .state_size = sizeof(int),
    .init = report_init,
    .commit = report_commit,
};
