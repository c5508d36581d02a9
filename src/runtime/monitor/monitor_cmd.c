/*
 * The monitor's commands (QEMU's HMP names), run on the monitor thread with
 * the public control API only, so a command can never do what a program
 * calling st_ functions could not. The grammar and the answers are
 * described at the top of monitor.c; the differences from QEMU in README
 * ("Steering a running program").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "flight.h"
#include "rt_internal.h"
#include "monitor.h"

/* --- answer buffer -------------------------------------------------------- */

void st__mon_put(struct st_mon_buf *b, const void *p, size_t n)
{
    if (b->failed || n == 0)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *d;
        while (cap < b->len + n)
            cap *= 2;
        d = realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void st__mon_printf(struct st_mon_buf *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        st__mon_put(b, small, (size_t)n);
        return;
    }
    {
        char *big = malloc((size_t)n + 1);
        if (!big) {
            b->failed = true;
            return;
        }
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        st__mon_put(b, big, (size_t)n);
        free(big);
    }
}

void st__mon_json_str(struct st_mon_buf *b, const char *s)
{
    st__mon_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            st__mon_printf(b, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            st__mon_printf(b, "\\u%04x", c);
        else
            st__mon_put(b, s, 1);
    }
    st__mon_put(b, "\"", 1);
}

void st__mon_buf_free(struct st_mon_buf *b)
{
    free(b->data);
    *b = (struct st_mon_buf){0};
}

/* --- helpers ------------------------------------------------------------------ */

/* One command being run: its words and where the answer goes. */
struct cmd {
    char *argv[4];          /* words; the last one of trace-file set is the rest of the line */
    int argc;
    bool json;              /* answer body as one JSON line */
    struct st_mon_buf *out;
};

/* The final line of a successful answer. */
static void answer_ok(struct cmd *c)
{
    st__mon_put(c->out, "ok\n", 3);
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
    st__mon_printf(c->out, "error: %s\n", msg);
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

/* A pattern the monitor accepts: a name glob (no leading '-': use `off`). */
static bool check_pattern(struct cmd *c, const char *p)
{
    if (*p == '-' || !st__pattern_valid(p)) {
        answer_error(c, "invalid event pattern \"%.200s\": want a name with * and ? wildcards", p);
        return false;
    }
    return true;
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
        st__mon_put(c->out, "{\"commands\":[", 13);
        for (size_t i = 0; i < n; i++) {
            st__mon_put(c->out, i ? ",{\"usage\":" : "{\"usage\":", i ? 10 : 9);
            st__mon_json_str(c->out, help_lines[i].usage);
            st__mon_put(c->out, ",\"help\":", 8);
            st__mon_json_str(c->out, help_lines[i].what);
            st__mon_put(c->out, "}", 1);
        }
        st__mon_put(c->out, "]}\n", 3);
    } else {
        for (size_t i = 0; i < n; i++)
            st__mon_printf(c->out, "%-28s %s\n", help_lines[i].usage, help_lines[i].what);
    }
    answer_ok(c);
}

/* --- info trace-events ------------------------------------------------------------ */

struct list_ctx {
    struct cmd *c;
    int n;
};

static int list_one(const struct st_event_info *info, void *opaque)
{
    struct list_ctx *lc = opaque;
    struct st_mon_buf *out = lc->c->out;

    if (lc->c->json) {
        st__mon_put(out, lc->n ? ",{\"name\":" : "{\"name\":", lc->n ? 9 : 8);
        st__mon_json_str(out, info->name);
        st__mon_put(out, ",\"group\":", 9);
        st__mon_json_str(out, info->group);
        st__mon_printf(out, ",\"id\":%" PRIu32 ",\"state\":\"%s\"}", info->id, state_word(info->state));
    } else {
        /* QEMU's "NAME : state 0|1", and why a 0 can never become 1. */
        st__mon_printf(out, "%s : state %d%s\n", info->name, info->state == ST_EVENT_ENABLED,
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
    if (!check_pattern(c, pattern))
        return;
    if (c->json)
        st__mon_put(c->out, "{\"events\":[", 11);
    st_event_foreach(pattern, list_one, &lc);
    if (lc.n == 0 && !has_wildcard(pattern)) {
        c->out->len = mark; /* drop the partial JSON */
        answer_error(c, "unknown event \"%s\"", pattern);
        return;
    }
    if (c->json)
        st__mon_put(c->out, "]}\n", 3);
    answer_ok(c);
}

/* --- trace-event PATTERN on|off ----------------------------------------------------- */

/* Collects the matching events that are compiled out. */
struct match_ctx {
    struct cmd *c;
    int matched, unavailable;
    struct st_mon_buf names; /* JSON array items or text lines */
};

static int match_one(const struct st_event_info *info, void *opaque)
{
    struct match_ctx *m = opaque;

    m->matched++;
    if (info->state != ST_EVENT_UNAVAILABLE)
        return 0;
    if (m->c->json) {
        if (m->unavailable)
            st__mon_put(&m->names, ",", 1);
        st__mon_json_str(&m->names, info->name);
    } else {
        st__mon_printf(&m->names, "event \"%s\" is unavailable (compiled out)\n", info->name);
    }
    m->unavailable++;
    return 0;
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
    if (!check_pattern(c, pattern))
        return;
    if (strcmp(onoff, "on") == 0)
        on = true;
    else if (strcmp(onoff, "off") == 0)
        on = false;
    else {
        answer_error(c, "unexpected argument \"%.200s\": want on or off", onoff);
        return;
    }
    st_event_foreach(pattern, match_one, &m);
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
        if (c->json) {
            st__mon_put(c->out, "{\"pattern\":", 11);
            st__mon_json_str(c->out, pattern);
            st__mon_printf(c->out, ",\"enable\":%s,\"matched\":%d,\"unavailable\":[", on ? "true" : "false",
                           m.matched);
            if (m.names.len)
                st__mon_put(c->out, m.names.data, m.names.len);
            st__mon_put(c->out, "]}\n", 3);
        } else {
            if (m.names.len)
                st__mon_put(c->out, m.names.data, m.names.len);
            if (m.matched == 0)
                st__mon_printf(c->out, "no event matches \"%s\"\n", pattern);
        }
        answer_ok(c);
    }
    st__mon_buf_free(&m.names);
}

/* --- trace-file ------------------------------------------------------------------------ */

static void put_file_status(struct cmd *c)
{
    struct st_file_status fs;

    st_trace_file_status(&fs);
    if (c->json) {
        st__mon_put(c->out, "{\"path\":", 8);
        st__mon_json_str(c->out, fs.path);
        st__mon_printf(c->out, ",\"enabled\":%s,\"error\":", fs.enabled ? "true" : "false");
        if (fs.error)
            st__mon_json_str(c->out, st_strerror(fs.error));
        else
            st__mon_put(c->out, "null", 4);
        st__mon_put(c->out, "}\n", 2);
    } else {
        st__mon_printf(c->out, "Trace file \"%s\" %s.\n", fs.path, fs.enabled ? "on" : "off");
        if (fs.error)
            st__mon_printf(c->out, "Writing stopped after an error: %s.\n", st_strerror(fs.error));
    }
}

static void file_error(struct cmd *c, const char *what, int r)
{
    struct st_file_status fs;

    st_trace_file_status(&fs);
    answer_error(c, "%s trace file \"%s\": %s", what, fs.path, st_strerror(r));
}

static void cmd_trace_file(struct cmd *c)
{
    const char *arg = c->argc > 1 ? c->argv[1] : NULL;
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
        if (r < 0) {
            answer_error(c, "cannot open trace file \"%s\": %s", c->argv[2], st_strerror(r));
            return;
        }
        put_file_status(c);
        answer_ok(c);
        return;
    }
    if (strcmp(arg, "snapshot") == 0) {
        char err[512];
        r = st__flight_snapshot(c->argc > 2 ? c->argv[2] : NULL, err, sizeof err);
        if (r < 0) {
            answer_error(c, "snapshot: %s", err[0] ? err : st_strerror(r));
            return;
        }
        if (c->json)
            st__mon_put(c->out, "{}\n", 3);
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
        if (c->json)
            st__mon_put(c->out, "{}\n", 3);
    } else {
        answer_error(c, "unexpected argument \"%.200s\" (usage: trace-file [on|off|flush|set PATH])", arg);
        return;
    }
    answer_ok(c);
}

/* --- info stats ----------------------------------------------------------------------------- */

static void cmd_info_stats(struct cmd *c)
{
    struct st_stats s;
    struct st_file_status fs;
    uint64_t capacity = 0;

    if (c->argc > 2) {
        answer_error(c, "unexpected argument \"%.200s\"", c->argv[2]);
        return;
    }
    st_stats_get(&s);
    st_trace_file_status(&fs);
    /* Ring sizes: fixed per buffer, read under the list lock only. */
    st__ring_lock();
    for (struct st_ring *b = st__rings; b; b = b->next)
        capacity += b->size;
    st__ring_unlock();
    if (c->json) {
        st__mon_printf(c->out,
                       "{\"produced\":%" PRIu64 ",\"written\":%" PRIu64 ",\"dropped\":%" PRIu64
                       ",\"dropped_reported\":%" PRIu64 ",\"pending\":%" PRIu64 ",\"buffered_bytes\":%" PRIu64
                       ",\"buffer_bytes\":%" PRIu64 ",\"bytes_written\":%" PRIu64 ",\"threads\":%" PRIu32
                       ",\"file\":",
                       s.produced, s.written, s.dropped, s.dropped_reported, s.pending, s.buffered, capacity,
                       s.bytes_written, s.threads);
        st__mon_json_str(c->out, fs.path);
        st__mon_printf(c->out, ",\"file_enabled\":%s}\n", fs.enabled ? "true" : "false");
    } else {
        st__mon_printf(c->out, "records produced: %" PRIu64 "\n", s.produced);
        st__mon_printf(c->out, "records written: %" PRIu64 "\n", s.written);
        st__mon_printf(c->out, "records dropped: %" PRIu64 " (%" PRIu64 " reported in the trace file)\n",
                       s.dropped, s.dropped_reported);
        st__mon_printf(c->out, "records in buffers: %" PRIu64 "\n", s.pending);
        st__mon_printf(c->out, "buffer use: %" PRIu64 " of %" PRIu64 " bytes\n", s.buffered, capacity);
        st__mon_printf(c->out, "threads tracing: %" PRIu32 "\n", s.threads);
        st__mon_printf(c->out, "bytes written: %" PRIu64 "\n", s.bytes_written);
        st__mon_printf(c->out, "trace file: \"%s\" %s\n", fs.path, fs.enabled ? "on" : "off");
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
    struct st_mon_snapshot snap;

    if (c->argc > 2) {
        answer_error(c, "unexpected argument \"%.200s\"", c->argv[2]);
        return;
    }
    if (st__mon_trace_snapshot(c->out, &snap) < 0) {
        st__mon_buf_free(c->out);
        answer_error(c, "info trace: %s", st_strerror(-ENOMEM));
        return;
    }
    answer_ok(c);
}

/* --- dispatch ---------------------------------------------------------------------------------- */

/* Splits line into at most 3 words plus, for `trace-file set`, the rest as PATH. */
static int split(char *line, char **argv)
{
    int argc = 0;
    char *p = line;

    while (argc < 4) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        if (argc == 2 && strcmp(argv[0], "trace-file") == 0 && strcmp(argv[1], "set") == 0) {
            /* PATH may hold blanks: take the rest, trailing blanks cut. */
            char *e = p + strlen(p);
            while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
                *--e = '\0';
            argv[argc++] = p;
            break;
        }
        argv[argc++] = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        if (*p)
            *p++ = '\0';
    }
    /* A fifth word: report the fourth as unexpected (argc 4 is never valid). */
    return argc;
}

void st__mon_execute(const char *line, struct st_mon_buf *out)
{
    struct cmd c = {.out = out};
    char *copy = strdup(line), *p;
    size_t n;

    if (!copy) {
        st__mon_printf(out, "error: %s\n", st_strerror(-ENOMEM));
        return;
    }
    n = strlen(copy);
    if (n && copy[n - 1] == '\r') /* telnet and friends */
        copy[--n] = '\0';
    p = copy;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "json", 4) == 0 && (p[4] == ' ' || p[4] == '\t' || p[4] == '\0')) {
        c.json = true;
        p += 4;
    }
    c.argc = split(p, c.argv);
    if (c.argc == 0) {
        /* An empty line is a no-op: a way to check the connection. */
        if (c.json)
            st__mon_put(out, "{}\n", 3);
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
        st__mon_buf_free(out);
        st__mon_printf(out, "error: %s\n", st_strerror(-ENOMEM));
    }
    free(copy);
}
