/*
 * What every file the runtime writes says about itself (meta_format.h):
 * the description (process, host, clock, version) after the header, and
 * each event's declaration after its mapping record, so that a trace can
 * be read without the program's trace-events files. Used by the drain
 * (trace file, pieces, snapshots, the monitor's view) and by the crash
 * names file (ring_file.c), which recover copies from.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <simpletrace/api.h>

#include "describe.h"
#include "meta_format.h"
#include "name_template.h"
#include "registry.h"
#include "timestamp.h"
#include "trace_format.h"

/* Longest command line kept: a description stays small beside the records. */
#define CMDLINE_MAX 4096

/* Appends len bytes of s escaped as a VALUE (meta_format.h). */
static void put_escaped(struct st__growbuf *out, const char *s, size_t len)
{
    size_t need = st__meta_escape(NULL, 0, s, len);
    uint8_t *p = st__growbuf_room(out, need + 1);

    if (p) {
        st__meta_escape((char *)p, need + 1, s, len);
        st__growbuf_commit(out, need);
    }
}

/* Appends "key=VALUE\n" with len bytes of value. */
static void put_value(struct st__growbuf *out, const char *key, const char *value, size_t len)
{
    st__growbuf_printf(out, "%s=", key);
    put_escaped(out, value, len);
    st__growbuf_puts(out, "\n");
}

/* The command line, arguments escaped (spaces in them too) and joined by spaces. */
static void put_cmdline(struct st__growbuf *out)
{
    char args[CMDLINE_MAX];
    FILE *f = fopen("/proc/self/cmdline", "re");
    size_t n = f ? fread(args, 1, sizeof args, f) : 0;

    if (f)
        fclose(f);
    if (n == 0)
        return;
    st__growbuf_puts(out, "cmdline=");
    for (size_t at = 0; at < n;) {
        size_t len = strnlen(args + at, n - at);
        if (at)
            st__growbuf_puts(out, " ");
        put_escaped(out, args + at, len);
        at += len + 1;
    }
    st__growbuf_puts(out, "\n");
}

/* Shortest span the TSC rate is measured over: anchors are good to tens of ns, so about 10 ppm. */
#define TSC_SPAN_NS 2000000u

/*
 * Counter ticks per second: the frequency the hardware states (aarch64's
 * CNTFRQ_EL0), else the TSC's measured from the start-up anchor to now. A
 * file opened right at start-up waits out the rest of the span once when
 * it may (the writer thread, the configuring call); a traced thread (the
 * crash names file) never waits: 0 then, as when implausible.
 */
static uint64_t tsc_hz(bool may_wait)
{
    struct st__clock_anchor a = st__ts_start(), b = st__ts_sample();

    if (st__ts_counter_hz())
        return st__ts_counter_hz();

    if (b.ns < a.ns + TSC_SPAN_NS) {
        if (!may_wait)
            return 0;
        uint64_t left = a.ns + TSC_SPAN_NS - b.ns;
        struct timespec ts = {0, (long)left};
        nanosleep(&ts, NULL);
        b = st__ts_sample();
    }
    if (b.ns <= a.ns || b.raw <= a.raw)
        return 0;
    return (uint64_t)((double)(b.raw - a.raw) * 1e9 / (double)(b.ns - a.ns) + 0.5);
}

/* CLOCK_MONOTONIC and CLOCK_REALTIME at one instant (the realtime read between two monotonic ones). */
static void wall_anchor(uint64_t *mono, uint64_t *real)
{
    struct timespec m0, r, m1;

    clock_gettime(CLOCK_MONOTONIC, &m0);
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &m1);
    *mono = ((uint64_t)m0.tv_sec * 1000000000u + (uint64_t)m0.tv_nsec +
             (uint64_t)m1.tv_sec * 1000000000u + (uint64_t)m1.tv_nsec) / 2;
    *real = (uint64_t)r.tv_sec * 1000000000u + (uint64_t)r.tv_nsec;
}

/* The description's text. */
static void description_text(struct st__growbuf *out, bool may_wait)
{
    struct st__name_vars v;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe);
    uint64_t mono, real, hz;
    const char *version = st_version_string();

    st__name_vars_get(&v, 0);
    st__growbuf_puts(out, ST_META_FIRST_LINE);
    put_value(out, "version", version, strlen(version));
    st__growbuf_printf(out, "pid=%ld\n", v.pid);
    put_value(out, "program", v.prog, strlen(v.prog));
    if (n > 0)
        put_value(out, "exe", exe, (size_t)n);
    put_cmdline(out);
    put_value(out, "host", v.host, strlen(v.host));
    st__growbuf_printf(out, "clock=%s\n", st__ts_is_tsc() ? ST_CLOCK_COUNTER : "monotonic");
    if (st__ts_is_tsc() && (hz = tsc_hz(may_wait)))
        st__growbuf_printf(out, "tsc_hz=%llu\n", (unsigned long long)hz);
    wall_anchor(&mono, &real);
    st__growbuf_printf(out, "anchor_mono_ns=%llu\nanchor_real_ns=%llu\n", (unsigned long long)mono,
                       (unsigned long long)real);
}

/* Appends a mapping record for id whose name is text[0..len). */
static void put_meta_record(struct st__growbuf *out, uint64_t id, const uint8_t *text, size_t len)
{
    uint8_t *p = st__growbuf_room(out, st__fmt_mapping_size(len));

    if (p)
        st__growbuf_commit(out, st__fmt_put_mapping(p, id, (const char *)text, (uint32_t)len));
}

void st__describe_process(struct st__growbuf *out, bool may_wait)
{
    struct st__growbuf text = {0};

    description_text(&text, may_wait);
    if (!text.failed && text.len <= ST_META_MAX_LEN)
        put_meta_record(out, ST_META_INFO_ID, text.data, text.len);
    st__growbuf_free(&text);
}

void st__describe_event(struct st__growbuf *out, uint32_t id, const char *name)
{
    struct st__growbuf decl = {0};
    size_t len = strlen(name);
    uint8_t *p = st__growbuf_room(out, st__fmt_mapping_size(len));

    if (p)
        st__growbuf_commit(out, st__fmt_put_mapping(p, id, name, (uint32_t)len));
    if (st__reg_decl(id, &decl) == 0 && decl.len <= ST_META_MAX_LEN)
        put_meta_record(out, ST_META_DECL_ID(id), decl.data, decl.len);
    st__growbuf_free(&decl);
}
