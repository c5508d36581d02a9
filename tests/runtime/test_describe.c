/*
 * Every file the runtime writes describes itself (src/format/meta_format.h,
 * issue "Self-describing traces"): one description right after the header
 * (version, pid, program, host, clock, anchors), and each event's
 * declaration right after its mapping, in the trace file and in every
 * rotated piece. Checked with the tests' own strict decoder (v4_decode.h),
 * which also checks that these records are ASCII mappings QEMU's reader
 * stores and never uses.
 */
#include <time.h>

#include <simpletrace/reader.h>

#include "rt_test.h"

/* The CPU counter the runtime reads on this architecture, as the README names it; NULL for none. */
#if defined(__x86_64__)
#define COUNTER "tsc"
#elif defined(__aarch64__)
#define COUNTER "cntvct"
#else
#define COUNTER NULL
#endif

TEST_EVENT(ev_num, "desc_num", "uint64_t y", "y 0x%lx", "i", 1, 0);
TEST_EVENT(ev_str, "desc_str", "const char *s", "s \\\"%s\\\" tab\\t", "s", 1, 0);
TEST_EVENT(ev_off, "desc_off", "void", "", "", 0, ST_EVENT_COMPILED_OUT);
TEST_GROUP(grp_desc, "describe", &ev_num, &ev_str, &ev_off)

static struct st_group *const groups[] = {&grp_desc, NULL};

/* The value of key in a description's text (a copy in buf), or NULL. */
static const char *value_of(const char *info, const char *key, char *buf, size_t len)
{
    size_t klen = strlen(key);

    for (const char *p = info; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, key, klen) && p[klen] == '=') {
            size_t n = strcspn(p + klen + 1, "\n");
            snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), p + klen + 1);
            return buf;
        }
    return NULL;
}

static int keep_decl(const struct v4_record *rec, void *opaque)
{
    (void)rec, (void)opaque;
    return 0;
}

/* Decodes path; the last description in info. 0 or -1. */
static int decode(const char *path, struct v4_decoder *d, char *info, size_t len)
{
    int r;

    memset(d, 0, sizeof *d);
    d->kinds = test_kinds;
    d->kinds_opaque = (void *)groups;
    d->visit = keep_decl;
    r = v4_decode_file(d, path);
    if (r)
        diag("decoding %s: %s", path, d->err);
    snprintf(info, len, "%s", d->info);
    return r;
}

static void test_trace_file(void)
{
    char path[1024], info[4096], v[1200], host[256], want[64];
    struct v4_decoder d;
    long long real;

    snprintf(path, sizeof path, "%s", test_path("d.trace"));
    snprintf(v, sizeof v, "desc_*,file=%s", path);
    is_int(st_configure(v, NULL, 0), 0, "configure desc_* and a file");
    test_trace_i(&ev_num, 1);
    st_trace_file_set_enabled(false);
    if (!ok(decode(path, &d, info, sizeof info) == 0, "the file decodes strictly"))
        return;
    is_u64(d.sum.descriptions, 1, "one description");
    is_u64(d.sum.declarations, d.sum.mappings, "a declaration for every mapping (%llu)",
           (unsigned long long)d.sum.mappings);
    snprintf(want, sizeof want, "%ld", (long)getpid());
    is_str(value_of(info, "pid", v, sizeof v), want, "pid= this process");
    is_str(value_of(info, "program", v, sizeof v), "test_rt_describe", "program= its name");
    is_str(value_of(info, "version", v, sizeof v), st_version_string(), "version= the library's");
    gethostname(host, sizeof host);
    is_str(value_of(info, "host", v, sizeof v), host, "host= this host");
    /* The CPU's counter where the runtime reads one (x86-64's TSC, aarch64's CNTVCT_EL0), else clock_gettime. */
    ok(value_of(info, "clock", v, sizeof v) && (!strcmp(v, "monotonic") || (COUNTER && !strcmp(v, COUNTER))), "clock= %s",
       v);
    if (!strcmp(v, "tsc")) {
        long long hz = value_of(info, "tsc_hz", v, sizeof v) ? atoll(v) : 0;
        ok(hz > 100000000LL && hz < 100000000000LL, "clock=tsc comes with tsc_hz= (%lld)", hz);
    } else if (!strcmp(v, "cntvct")) { /* the generic timer: 1 MHz to 1 GHz in practice (ARMv8.6+: 1 GHz) */
        long long hz = value_of(info, "tsc_hz", v, sizeof v) ? atoll(v) : 0;
        ok(hz >= 1000000LL && hz <= 10000000000LL, "clock=cntvct comes with tsc_hz= (%lld)", hz);
    } else {
        ok(!value_of(info, "tsc_hz", v, sizeof v), "clock=monotonic: no tsc_hz=");
    }
    ok(value_of(info, "cmdline", v, sizeof v) && strstr(v, "test_rt_describe"), "cmdline= names the program");
    real = value_of(info, "anchor_real_ns", v, sizeof v) ? atoll(v) : 0;
    ok(llabs(real / 1000000000 - (long long)time(NULL)) < 60, "anchor_real_ns= now (%lld)", real);
    ok(value_of(info, "anchor_mono_ns", v, sizeof v) && atoll(v) > 0, "anchor_mono_ns= set");
    v4_decoder_free(&d);
}

/* The declarations, in ID order, as a trace-events file has them. */
static void test_declarations(void)
{
    struct st_catalog *cat = NULL;
    char err[512] = "";
    const char *path = test_path("d.trace");
    int r = st_catalog_load_trace(&cat, path, NULL, err, sizeof err);

    if (!ok(r == 0, "st_catalog_load_trace reads the file's declarations: %s", err))
        return;
    is_int(st_catalog_count(cat), 3, "three events declared");
    {
        const struct st_event_info *e = st_catalog_find(cat, "desc_num");
        ok(e && e->nargs == 1 && !strcmp(e->args[0].name, "y") && !strcmp(e->args[0].type, "uint64_t"),
           "desc_num(uint64_t y)");
        e = st_catalog_find(cat, "desc_str");
        ok(e && e->nargs == 1 && e->args[0].kind == ST_VALUE_STRING, "desc_str(const char *s)");
        e = st_catalog_find(cat, "desc_off");
        ok(e && e->disabled && e->nargs == 0, "desc_off: disable, no argument");
    }
    st_catalog_free(cat);
}

static char program[256], hostname[256]; /* the description's, copied before the reader closes */

/* Records read with --pid (filter_pid): n of them, or the error. */
static int count_with_pid(struct st_catalog *cat, uint32_t pid, struct st_trace_description *d)
{
    struct st_reader_options o = {.struct_size = sizeof o, .filter_pid = true, .pid = pid};
    struct st_reader *r;
    const struct st_record *rec;
    int n = 0, ret;

    if (st_reader_open(&r, test_path("d.trace"), cat, &o, NULL) < 0)
        return -1000;
    while ((ret = st_reader_next(r, &rec)) > 0)
        n++;
    if (d && st_reader_description(r, d) == 0) {
        snprintf(program, sizeof program, "%s", d->program);
        snprintf(hostname, sizeof hostname, "%s", d->host);
    }
    st_reader_close(r);
    return ret < 0 ? ret : n;
}

/* The reader's view of the description, and --pid meaning the process that wrote the file. */
static void test_reader_view(void)
{
    struct st_trace_description d = {.struct_size = sizeof d};
    struct st_catalog *cat = NULL;
    char host[256];

    if (!ok(st_catalog_load_trace(&cat, test_path("d.trace"), NULL, NULL, 0) == 0, "catalog from the trace"))
        return;
    is_int(count_with_pid(cat, (uint32_t)getpid(), &d), 1, "--pid of the writer: its record");
    is_int(d.pid, getpid(), "st_reader_description: pid");
    is_str(program, "test_rt_describe", "... program");
    gethostname(host, sizeof host);
    is_str(hostname, host, "... host");
    ok(d.anchor_real_ns > 0 && d.anchor_mono_ns > 0, "... clock anchors");
    is_int(count_with_pid(cat, (uint32_t)getpid() + 1, NULL), 0, "--pid of another process: no record, no error");
    st_catalog_free(cat);
}

/* A fork child's own file describes the child and reads without trace-events. */
static void test_fork_child(void)
{
    char cfg[1024], child_file[1100], info[4096], v[64], want[32];
    struct st_catalog *cat = NULL;
    struct v4_decoder d;
    int status = -1;
    pid_t pid;

    snprintf(cfg, sizeof cfg, "desc_*,file=%s", test_path("fk.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure a file, then fork");
    test_trace_i(&ev_num, 1);
    pid = fork();
    if (pid == 0) {
        test_trace_i(&ev_num, 2);
        exit(0);
    }
    waitpid(pid, &status, 0);
    st_trace_file_set_enabled(false);
    snprintf(child_file, sizeof child_file, "%s-%ld", test_path("fk.trace"), (long)pid);
    if (!ok(WIFEXITED(status) && decode(child_file, &d, info, sizeof info) == 0, "the child's file %s decodes",
            child_file))
        return;
    snprintf(want, sizeof want, "%ld", (long)pid);
    is_str(value_of(info, "pid", v, sizeof v), want, "its description names the child");
    is_u64(d.sum.declarations, d.sum.mappings, "a declaration for every mapping");
    v4_decoder_free(&d);
    ok(st_catalog_load_trace(&cat, child_file, NULL, NULL, 0) == 0 && st_catalog_count(cat) == 3,
       "its declarations make the catalog");
    st_catalog_free(cat);
}

/* Every rotated piece reads on its own: description and declarations too. */
static void test_pieces(void)
{
    char cfg[1024], piece[1100], info[4096];
    struct v4_decoder d;
    int pieces = 0, good = 0;

    snprintf(cfg, sizeof cfg, "desc_*,file=%s,rotate=64K", test_path("r.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure rotate=64K");
    for (int i = 0; i < 20000; i++)
        test_trace_i(&ev_num, (uint64_t)i);
    st_trace_file_set_enabled(false);
    for (int k = 0; k < 64; k++) {
        if (k)
            snprintf(piece, sizeof piece, "%s.%d", test_path("r.trace"), k);
        else
            snprintf(piece, sizeof piece, "%s", test_path("r.trace"));
        if (!test_exists(piece))
            break;
        pieces++;
        good += decode(piece, &d, info, sizeof info) == 0 && d.sum.descriptions == 1 &&
                d.sum.declarations == d.sum.mappings && d.sum.mappings == 3 && strstr(info, "pid=");
        v4_decoder_free(&d);
    }
    ok(pieces > 2, "the trace was cut in %d pieces", pieces);
    is_int(good, pieces, "every piece has its description and the 3 declarations");
}

int main(void)
{
    test_tmpdir();
    test_trace_file();
    test_declarations();
    test_reader_view();
    test_fork_child();
    test_pieces();
    return done_testing();
}
