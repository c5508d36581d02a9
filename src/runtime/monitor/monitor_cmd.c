/*
 * The monitor's commands (QEMU's HMP names), run on the monitor thread with
 * the public control API only (and the drain's view for `info trace`), so
 * a command can never do what a program calling st_ functions could not.
 * The grammar is in monitor_proto.h; the differences from QEMU in README
 * ("Steering a running program").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simpletrace/simpletrace.h>

#include "drain.h"
#include "json_escape.h"
#include "monitor.h"
#include "monitor_parse.h"
#include "name_template.h"

/* --- helpers ------------------------------------------------------------------ */

/* One command being run: its words and where the answer goes. */
struct cmd {
    char *const *argv;      /* words; the last one of trace-file set is the rest of the line */
    int argc;
    bool json;              /* answer body as one JSON line */
    struct st__growbuf *out;
};

/* The final line of a successful answer. */
static void answer_ok(struct cmd *c)
{
    st__growbuf_puts(c->out, ST_MON_OK "\n");
}

/* The final line of a failed answer; the message is one line. */
static void answer_error(struct cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void answer_error(struct cmd *c, const char *fmt, ...)
{
    char msg[ST_MON_LINE_MAX + 256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    st__growbuf_printf(c->out, ST_MON_ERROR "%s\n", msg);
}

static const char *state_word(enum st_event_state s)
{
    switch (s) {
    case ST_EVENT_ENABLED: return "enabled";
    case ST_EVENT_DISABLED: return "disabled";
    default: return "unavailable";
    }
}

static bool has_wildcard(const char *p)
{
    return strpbrk(p, "*?") != NULL;
}

/* The answer for a pattern the API refused (-EINVAL); a leading '-' is refused here: use `off`. */
static void bad_pattern(struct cmd *c, const char *p)
{
    answer_error(c, "invalid event pattern \"%.200s\": want a name with * and ? wildcards", p);
}

/* --- help ---------------------------------------------------------------------- */

static const struct {
    const char *usage, *what;
} help_lines[] = {
    {"help", "this list"},
    {"info trace-events [PATTERN]", "events matching PATTERN (default *) and their state"},
    {"info trace", "the records not yet written to the trace file (binary v4 data)"},
    {"info stats", "records produced, written, dropped; buffer use; threads"},
    {"trace-event PATTERN on|off", "enable or disable the events matching PATTERN"},
    {"trace-file", "the trace file's name and whether it is on"},
    {"trace-file on|off", "open (appending if it is the file closed last) or close the trace file"},
    {"trace-file flush", "wait until every record traced so far is in the file"},
    {"trace-file set PATH", "write to PATH from now on (relative to the program's directory)"},
    {"trace-file snapshot [PATH]", "flight mode: write the newest records to PATH (default snapshot-PID-N)"},
    {"json COMMAND", "the answer's body as one line of JSON"},
};

static void cmd_help(struct cmd *c)
{
    size_t n = sizeof help_lines / sizeof help_lines[0];

    if (c->argc > 1) {
        answer_error(c, "unexpected argument \"%.200s\"", c->argv[1]);
        return;
    }
    if (c->json) {
        st__growbuf_put(c->out, "{\"commands\":[", 13);
        for (size_t i = 0; i < n; i++) {
            st__growbuf_put(c->out, i ? ",{\"usage\":" : "{\"usage\":", i ? 10 : 9);
            st__growbuf_json(c->out, help_lines[i].usage);
            st__growbuf_put(c->out, ",\"help\":", 8);
            st__growbuf_json(c->out, help_lines[i].what);
            st__growbuf_put(c->out, "}", 1);
        }
        st__growbuf_put(c->out, "]}\n", 3);
    } else {
        for (size_t i = 0; i < n; i++)
            st__growbuf_printf(c->out, "%-28s %s\n", help_lines[i].usage, help_lines[i].what);
    }
    answer_ok(c);
}

/* --- info trace-events ------------------------------------------------------------ */

struct list_ctx {
    struct cmd *c;
    int n;
};

static int list_one(const struct st_registered_event *info, void *opaque)
{
    struct list_ctx *lc = opaque;
    struct st__growbuf *out = lc->c->out;

    if (lc->c->json) {
        st__growbuf_put(out, lc->n ? ",{\"name\":" : "{\"name\":", lc->n ? 9 : 8);
        st__growbuf_json(out, info->name);
        st__growbuf_put(out, ",\"group\":", 9);
        st__growbuf_json(out, info->group);
        st__growbuf_printf(out, ",\"id\":%" PRIu32 ",\"state\":\"%s\"}", info->id, state_word(info->state));
    } else {
        /* QEMU's "NAME : state 0|1", and why a 0 can never become 1. */
        st__growbuf_printf(out, "%s : state %d%s\n", info->name, info->state == ST_EVENT_ENABLED,
                       info->state == ST_EVENT_UNAVAILABLE ? " (unavailable)" : "");
    }
    lc->n++;
    return 0;
}

static void cmd_info_events(struct cmd *c)
{
    const char *pattern = c->argc > 2 ? c->argv[2] : "*";
    struct list_ctx lc = {c, 0};
    size_t mark = c->out->len;

    if (c->argc > 3) {
        answer_error(c, "unexpected argument \"%.200s\"", c->argv[3]);
        return;
    }
    if (*pattern == '-') {
        bad_pattern(c, pattern);
        return;
    }
    if (c->json)
        st__growbuf_put(c->out, "{\"events\":[", 11);
    if (st_event_foreach(pattern, list_one, &lc) == -EINVAL) {
        c->out->len = mark;
        bad_pattern(c, pattern);
        return;
    }
    if (lc.n == 0 && !has_wildcard(pattern)) {
        c->out->len = mark; /* drop the partial JSON */
        answer_error(c, "unknown event \"%s\"", pattern);
        return;
    }
    if (c->json)
        st__growbuf_put(c->out, "]}\n", 3);
    answer_ok(c);
}

/* --- trace-event PATTERN on|off ----------------------------------------------------- */

/* Collects the matching events that are compiled out. */
struct match_ctx {
    struct cmd *c;
    int matched, unavailable;
    struct st__growbuf names; /* JSON array items or text lines */
};

static int match_one(const struct st_registered_event *info, void *opaque)
{
    struct match_ctx *m = opaque;

    m->matched++;
    if (info->state != ST_EVENT_UNAVAILABLE)
        return 0;
    if (m->c->json) {
        if (m->unavailable)
            st__growbuf_put(&m->names, ",", 1);
        st__growbuf_json(&m->names, info->name);
    } else {
        st__growbuf_printf(&m->names, "event \"%s\" is unavailable (compiled out)\n", info->name);
    }
    m->unavailable++;
    return 0;
}

/*
 * Enabling through the monitor does not open the trace file (a monitor user
 * may want `info trace` only, or a file chosen later): the reply says where
 * the records go instead.
 */
#define UNWRITTEN_NOTE                                                                                          \
    "The trace file is off: these records stay in memory (info trace shows them) and are written nowhere "     \
    "until trace-file on."

/* True when records traced now reach no file: the trace file is off, and no flight snapshot takes them. */
static bool records_go_nowhere(void)
{
    struct st_file_status fs = {.struct_size = sizeof fs};

    st_trace_file_status(&fs);
    return !fs.enabled && !st__flight_mode();
}

static void cmd_trace_event(struct cmd *c)
{
    struct match_ctx m = {c, 0, 0, {0}};
    const char *pattern, *onoff;
    bool on;
    int r;

    if (c->argc < 3) {
        answer_error(c, "usage: trace-event PATTERN on|off");
        return;
    }
    if (c->argc > 3) {
        answer_error(c, "unexpected argument \"%.200s\"", c->argv[3]);
        return;
    }
    pattern = c->argv[1];
    onoff = c->argv[2];
    if (*pattern == '-' || st_event_foreach(pattern, match_one, &m) == -EINVAL) {
        bad_pattern(c, pattern);
        st__growbuf_free(&m.names);
        return;
    }
    if (strcmp(onoff, "on") == 0)
        on = true;
    else if (strcmp(onoff, "off") == 0)
        on = false;
    else {
        answer_error(c, "unexpected argument \"%.200s\": want on or off", onoff);
        return;
    }
    /*
     * Unlike QEMU's all-or-nothing set-state, a glob enables what it can:
     * a compiled-out event matching it changes nothing and is reported.
     */
    r = st_event_set_enabled(pattern, on);
    if (r == -ENOENT) {
        answer_error(c, "unknown event \"%s\"", pattern);
    } else if (r == -EPERM) {
        if (on) {
            answer_error(c, "event \"%s\" is unavailable (compiled out)", pattern);
        } else {
            /* Off is what it always is: say so, but it is not a failure. */
            r = 0;
        }
    } else if (r < 0) {
        answer_error(c, "trace-event %s: %s", pattern, st_strerror(r));
    }
    if (r >= 0) {
        bool unwritten = on && m.matched > m.unavailable && records_go_nowhere();
        if (c->json) {
            st__growbuf_put(c->out, "{\"pattern\":", 11);
            st__growbuf_json(c->out, pattern);
            st__growbuf_printf(c->out, ",\"enable\":%s,\"matched\":%d,\"unavailable\":[", on ? "true" : "false",
                           m.matched);
            if (m.names.len)
                st__growbuf_put(c->out, m.names.data, m.names.len);
            st__growbuf_printf(c->out, "],\"written\":%s}\n", unwritten ? "false" : "true");
        } else {
            if (m.names.len)
                st__growbuf_put(c->out, m.names.data, m.names.len);
            /* Unlike QEMU's silence, a success says what changed, so a typo'd glob that caught less shows. */
            int changed = on ? m.matched - m.unavailable : m.matched;
            if (m.matched == 0)
                st__growbuf_printf(c->out, "no event matches \"%s\"\n", pattern);
            else if (!has_wildcard(pattern))
                st__growbuf_printf(c->out, "%s event \"%s\"\n", on ? "enabled" : "disabled", pattern);
            else
                st__growbuf_printf(c->out, "%s %d event%s matching \"%s\"\n", on ? "enabled" : "disabled", changed,
                                   changed == 1 ? "" : "s", pattern);
            if (unwritten)
                st__growbuf_puts(c->out, UNWRITTEN_NOTE "\n");
        }
        answer_ok(c);
    }
    st__growbuf_free(&m.names);
}

/* --- trace-file ------------------------------------------------------------------------ */

static void put_file_status(struct cmd *c)
{
    struct st_file_status fs = {.struct_size = sizeof fs};

    st_trace_file_status(&fs);
    if (c->json) {
        st__growbuf_put(c->out, "{\"path\":", 8);
        st__growbuf_json(c->out, fs.path);
        st__growbuf_printf(c->out, ",\"enabled\":%s,\"error\":", fs.enabled ? "true" : "false");
        if (fs.error)
            st__growbuf_json(c->out, st_strerror(fs.error));
        else
            st__growbuf_put(c->out, "null", 4);
        st__growbuf_put(c->out, "}\n", 2);
    } else {
        st__growbuf_printf(c->out, "Trace file \"%s\" %s.\n", fs.path, fs.enabled ? "on" : "off");
        if (fs.error)
            st__growbuf_printf(c->out, "Writing stopped after an error: %s.\n", st_strerror(fs.error));
    }
}

static void file_error(struct cmd *c, const char *what, int r)
{
    struct st_file_status fs = {.struct_size = sizeof fs};

    st_trace_file_status(&fs);
    answer_error(c, "%s trace file \"%s\": %s", what, fs.path, st_strerror(r));
}

static void cmd_trace_file(struct cmd *c)
{
    const char *arg = c->argc > 1 ? c->argv[1] : NULL;
    char why[160];
    int r;

    if (!arg) {
        put_file_status(c);
        answer_ok(c);
        return;
    }
    if (strcmp(arg, "set") == 0) {
        if (c->argc < 3) {
            answer_error(c, "usage: trace-file set PATH");
            return;
        }
        r = st_trace_file_set_name(c->argv[2]);
        if (r == -EINVAL && st__name_check(c->argv[2], why, sizeof why) < 0) {
            answer_error(c, "invalid file \"%s\": %s", c->argv[2], why);
            return;
        }
        if (r < 0) {
            answer_error(c, "cannot open trace file \"%s\": %s", c->argv[2], st_strerror(r));
            return;
        }
        put_file_status(c);
        answer_ok(c);
        return;
    }
    if (strcmp(arg, "snapshot") == 0) {
        const char *path = c->argc > 2 ? c->argv[2] : NULL;
        r = st_trace_snapshot(path);
        if (r == -EINVAL) {
            answer_error(c, "snapshot: not in flight mode (flight=SIZE)");
            return;
        }
        if (r < 0) {
            answer_error(c, "snapshot: %s%s%s", path ? path : "", path ? ": " : "", st_strerror(r));
            return;
        }
        if (c->json)
            st__growbuf_put(c->out, "{}\n", 3);
        else if (path)
            st__growbuf_printf(c->out, "snapshot written to \"%s\"\n", path);
        else
            st__growbuf_printf(c->out, "snapshot written to snapshot-%ld-N in the program's directory\n",
                               (long)getpid());
        answer_ok(c);
        return;
    }
    if (c->argc > 2) {
        answer_error(c, "unexpected argument \"%.200s\"", c->argv[2]);
        return;
    }
    if (strcmp(arg, "on") == 0) {
        r = st_trace_file_set_enabled(true);
        if (r < 0) {
            file_error(c, "cannot open", r);
            return;
        }
        put_file_status(c);
    } else if (strcmp(arg, "off") == 0) {
        r = st_trace_file_set_enabled(false);
        if (r < 0) {
            file_error(c, "error writing", r);
            return;
        }
        put_file_status(c);
    } else if (strcmp(arg, "flush") == 0) {
        r = st_trace_file_flush();
        if (r == -EBADF) {
            answer_error(c, "the trace file is off");
            return;
        }
        if (r < 0) {
            file_error(c, "error writing", r);
            return;
        }
        if (c->json) {
            st__growbuf_put(c->out, "{}\n", 3);
        } else {
            struct st_file_status fs = {.struct_size = sizeof fs};
            st_trace_file_status(&fs);
            st__growbuf_printf(c->out, "flushed: every record traced so far is in \"%s\"\n", fs.path);
        }
    } else {
        answer_error(c, "unexpected argument \"%.200s\" (usage: trace-file [on|off|flush|set PATH])", arg);
        return;
    }
    answer_ok(c);
}

/* --- info stats ----------------------------------------------------------------------------- */

static void cmd_info_stats(struct cmd *c)
{
    struct st_stats s = {.struct_size = sizeof s};
    struct st_file_status fs = {.struct_size = sizeof fs};

    if (c->argc > 2) {
        answer_error(c, "unexpected argument \"%.200s\"", c->argv[2]);
        return;
    }
    st_stats_get(&s);
    st_trace_file_status(&fs);
    if (c->json) {
        st__growbuf_printf(c->out,
                       "{\"produced\":%" PRIu64 ",\"written\":%" PRIu64 ",\"dropped\":%" PRIu64
                       ",\"dropped_reported\":%" PRIu64 ",\"pending\":%" PRIu64 ",\"buffered_bytes\":%" PRIu64
                       ",\"buffer_bytes\":%" PRIu64 ",\"bytes_written\":%" PRIu64 ",\"threads\":%" PRIu32
                       ",\"write_lost\":%" PRIu64 ",\"crash_unprotected\":%" PRIu32 ",\"file_error\":",
                       s.produced, s.written, s.dropped, s.dropped_reported, s.pending, s.buffered, s.buffer_bytes,
                       s.bytes_written, s.threads, s.write_lost, s.crash_unprotected);
        if (fs.error)
            st__growbuf_json(c->out, st_strerror(fs.error));
        else
            st__growbuf_puts(c->out, "null");
        st__growbuf_puts(c->out, ",\"file\":");
        st__growbuf_json(c->out, fs.path);
        st__growbuf_printf(c->out, ",\"file_enabled\":%s}\n", fs.enabled ? "true" : "false");
    } else {
        st__growbuf_printf(c->out, "records produced: %" PRIu64 "\n", s.produced);
        st__growbuf_printf(c->out, "records written: %" PRIu64 "\n", s.written);
        st__growbuf_printf(c->out, "records dropped: %" PRIu64 " (%" PRIu64 " reported in the trace file)\n",
                       s.dropped, s.dropped_reported);
        /* Only when it happened: a write error or a crash=DIR without room is the exception. */
        if (s.write_lost)
            st__growbuf_printf(c->out, "records lost to write errors: %" PRIu64 " (of those dropped)\n", s.write_lost);
        st__growbuf_printf(c->out, "records in buffers: %" PRIu64 "\n", s.pending);
        st__growbuf_printf(c->out, "buffer use: %" PRIu64 " of %" PRIu64 " bytes\n", s.buffered, s.buffer_bytes);
        st__growbuf_printf(c->out, "threads tracing: %" PRIu32 "\n", s.threads);
        if (s.crash_unprotected)
            st__growbuf_printf(c->out, "threads without crash protection: %" PRIu32 " (crash=DIR had no room for "
                               "their buffers)\n", s.crash_unprotected);
        st__growbuf_printf(c->out, "bytes written: %" PRIu64 "\n", s.bytes_written);
        if (fs.error)
            st__growbuf_printf(c->out, "trace file: \"%s\" off (writing failed: %s)\n", fs.path,
                               st_strerror(fs.error));
        else
            st__growbuf_printf(c->out, "trace file: \"%s\" %s\n", fs.path, fs.enabled ? "on" : "off");
    }
    answer_ok(c);
}

/* --- info trace -------------------------------------------------------------------------------- */

/*
 * Answer: "events N" and the declarations of every event (trace-events
 * text), optionally "truncated N" (bytes of records left out), then
 * "data N", N bytes of v4 trace, and the terminator. The same in JSON mode:
 * the client formats the records.
 */
static void cmd_info_trace(struct cmd *c)
{
    struct st__growbuf decls = {0}, data = {0};
    uint64_t truncated = 0;

    if (c->argc > 2) {
        answer_error(c, "unexpected argument \"%.200s\"", c->argv[2]);
        return;
    }
    if (st__view_take(&decls, &data, &truncated) < 0) {
        answer_error(c, "info trace: %s", st_strerror(-ENOMEM));
    } else {
        st__growbuf_printf(c->out, ST_MON_EVENTS " %zu\n", decls.len);
        st__growbuf_put(c->out, decls.data, decls.len);
        if (truncated)
            st__growbuf_printf(c->out, ST_MON_TRUNCATED " %" PRIu64 "\n", truncated);
        st__growbuf_printf(c->out, ST_MON_DATA " %zu\n", data.len);
        st__growbuf_put(c->out, data.data, data.len);
        answer_ok(c);
    }
    st__growbuf_free(&decls);
    st__growbuf_free(&data);
}

/* --- dispatch ---------------------------------------------------------------------------------- */

void st__mon_execute(const char *line, struct st__growbuf *out)
{
    struct st__mon_request req;
    struct cmd c = {.out = out};
    char *copy = strdup(line);

    if (!copy) {
        st__growbuf_printf(out, "error: %s\n", st_strerror(-ENOMEM));
        return;
    }
    st__mon_parse_line(copy, &req);
    c.argv = req.argv;
    c.argc = req.argc;
    c.json = req.json;
    if (c.argc == 0) {
        /* An empty line is a no-op: a way to check the connection. */
        if (c.json)
            st__growbuf_put(out, "{}\n", 3);
        answer_ok(&c);
    } else if (strcmp(c.argv[0], "help") == 0) {
        cmd_help(&c);
    } else if (strcmp(c.argv[0], "info") == 0) {
        const char *what = c.argc > 1 ? c.argv[1] : "";
        if (strcmp(what, "trace-events") == 0)
            cmd_info_events(&c);
        else if (strcmp(what, "trace") == 0)
            cmd_info_trace(&c);
        else if (strcmp(what, "stats") == 0)
            cmd_info_stats(&c);
        else if (!*what)
            answer_error(&c, "usage: info trace-events [PATTERN] | info trace | info stats");
        else
            answer_error(&c, "unknown command \"info %.200s\" (try \"help\")", what);
    } else if (strcmp(c.argv[0], "trace-event") == 0) {
        cmd_trace_event(&c);
    } else if (strcmp(c.argv[0], "trace-file") == 0) {
        cmd_trace_file(&c);
    } else {
        answer_error(&c, "unknown command \"%.200s\" (try \"help\")", c.argv[0]);
    }
    if (out->failed) {
        /* Out of memory mid-answer: whatever was built is unusable. */
        st__growbuf_free(out);
        st__growbuf_printf(out, "error: %s\n", st_strerror(-ENOMEM));
    }
    free(copy);
}
