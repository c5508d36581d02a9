/*
 * The trace file: default name, enable/disable, append on reopening the
 * file closed last, switching names, errors leave the old file in place,
 * flush, records traced while off, stats.
 */
#include "rt_test.h"

TEST_EVENT(ev_a, "f_a", "int seq", "seq %d", "i", 1, 0);
TEST_EVENT(ev_b, "f_b", "int a, int b, const char *s", "a %d b %d s %s", "iis", 3, 0);
TEST_GROUP(grp_file, "file", &ev_a, &ev_b)

static struct st_group *const groups[] = {&grp_file, NULL};

/* f_a sequence numbers found in path, in file order. */
static size_t seqs(const char *path, uint64_t *out, size_t max, struct test_trace *t)
{
    size_t n = 0;

    if (test_collect(path, groups, t) != 0)
        return (size_t)-1;
    for (size_t i = 0; i < t->n; i++)
        if (!t->r[i].mapping && !strcmp(t->r[i].name, "f_a") && n < max)
            out[n++] = t->r[i].u[0];
    return n;
}

static int is_range(const uint64_t *v, size_t n, uint64_t from)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] != from + i)
            return 0;
    return 1;
}

int main(void)
{
    struct st_file_status fs = {.struct_size = sizeof fs};
    struct test_trace t;
    struct st_stats st = {.struct_size = sizeof st};
    uint64_t v[64];
    char def[700], cwd[600], name[700];
    size_t n;

    /* Names are absolute from when they are configured (a chdir() later changes nothing). */
    if (!getcwd(cwd, sizeof cwd))
        return 2;
    snprintf(def, sizeof def, "%s/trace-%ld", cwd, (long)getpid());
    st_trace_file_status(&fs);
    is_str(fs.path, def, "default name trace-<pid>, in the current directory");
    ok(!fs.enabled && fs.error == 0, "off at start");
    is_int(st_trace_file_flush(), -EBADF, "flush with no file -> -EBADF");

    test_tmpdir();
    if (chdir(test_dir) != 0)
        return 2;
    is_int(st_trace_file_set_name("a.trace"), 0, "set_name while off");
    st_trace_file_status(&fs);
    snprintf(name, sizeof name, "%s/a.trace", test_dir);
    ok(!strcmp(fs.path, name) && !fs.enabled, "name set, still off (made absolute)");
    ok(!test_exists("a.trace"), "set_name alone creates no file");
    is_int(st_trace_file_set_name(""), -EINVAL, "empty name -> -EINVAL");

    is_int(st_event_set_enabled("f_*", true), 2, "enable f_*");
    is_int(st_trace_file_set_enabled(true), 0, "enable the file");
    ok(test_collect("a.trace", groups, &t) == 0 && t.sum.mappings == 2 && t.sum.events == 0,
       "new file: header and a mapping per registered event");
    ok(t.n == 2 && t.r[0].id == 0 && !strcmp(t.r[0].name, "f_a") && t.r[1].id == 1, "mappings in ID order");
    test_trace_free(&t);

    for (int i = 0; i < 10; i++)
        test_trace_i(&ev_a, (uint64_t)i);
    test_trace_iis(&ev_b, (uint64_t)-5, 7, "hello");
    is_int(st_trace_file_flush(), 0, "flush");
    n = seqs("a.trace", v, 64, &t);
    ok(n == 10 && is_range(v, n, 0), "10 f_a records in order");
    ok(test_count(&t, "f_b") == 1, "one f_b record");
    for (size_t i = 0; i < t.n; i++)
        if (!t.r[i].mapping && !strcmp(t.r[i].name, "f_b")) {
            ok(t.r[i].u[0] == (uint64_t)-5 && t.r[i].u[1] == 7 && !strcmp(t.r[i].s, "hello"),
               "f_b arguments: sign-extended int, int, string");
            is_int(t.r[i].pid, gettid(), "pid field holds the thread id");
        }
    test_trace_free(&t);

    is_int(st_trace_file_set_enabled(false), 0, "disable the file");
    st_trace_file_status(&fs);
    ok(!fs.enabled, "status: off");
    for (int i = 10; i < 15; i++)
        test_trace_i(&ev_a, (uint64_t)i);
    is_int(st_trace_file_set_enabled(true), 0, "enable again");
    is_int(st_trace_file_flush(), 0, "flush");
    n = seqs("a.trace", v, 64, &t);
    ok(n == 15 && is_range(v, n, 0), "reopening the file closed last appends; records traced while off kept");
    is_u64(t.sum.mappings, 2, "no mapping repeated on append");
    test_trace_free(&t);

    is_int(st_trace_file_set_name("b.trace"), 0, "switch to b.trace");
    for (int i = 15; i < 20; i++)
        test_trace_i(&ev_a, (uint64_t)i);
    st_trace_file_flush();
    n = seqs("b.trace", v, 64, &t);
    ok(n == 5 && is_range(v, n, 15) && t.sum.mappings == 2, "b.trace: header, mappings, the new records");
    test_trace_free(&t);
    n = seqs("a.trace", v, 64, &t);
    ok(n == 15, "a.trace unchanged");
    test_trace_free(&t);

    is_int(st_trace_file_set_name("/nonexistent-st-dir/x"), -ENOENT, "unopenable name -> -ENOENT");
    is_int(st_trace_file_set_name(test_dir), -EISDIR, "directory -> -EISDIR");
    st_trace_file_status(&fs);
    snprintf(name, sizeof name, "%s/b.trace", test_dir);
    ok(!strcmp(fs.path, name) && fs.enabled, "failed switch keeps the old file");
    test_trace_i(&ev_a, 20);
    st_trace_file_flush();
    n = seqs("b.trace", v, 64, &t);
    ok(n == 6 && v[5] == 20, "still writing b.trace");
    test_trace_free(&t);

    is_int(st_trace_file_set_name("a.trace"), 0, "back to a.trace (closed last)");
    test_trace_i(&ev_a, 21);
    st_trace_file_flush();
    n = seqs("a.trace", v, 64, &t);
    ok(n == 16 && v[15] == 21 && t.sum.mappings == 2, "a.trace appended to");
    test_trace_free(&t);

    /* A file changed behind our back is not appended to. */
    st_trace_file_set_enabled(false);
    test_write_file("a.trace", "junk");
    is_int(st_trace_file_set_enabled(true), 0, "reopen a changed file");
    test_trace_i(&ev_a, 22);
    st_trace_file_flush();
    n = seqs("a.trace", v, 64, &t);
    ok(n == 1 && v[0] == 22 && t.sum.mappings == 2, "changed file truncated and rewritten");
    test_trace_free(&t);

    is_int(st_trace_file_set_name(NULL), 0, "back to the default name");
    st_trace_file_status(&fs);
    snprintf(def, sizeof def, "%s/trace-%ld", test_dir, (long)getpid());
    is_str(fs.path, def, "default name again, in the directory it is set in");
    test_trace_i(&ev_a, 23);
    st_trace_file_flush();
    n = seqs(def, v, 64, &t);
    ok(n == 1 && v[0] == 23, "default file written in the cwd");
    test_trace_free(&t);

    st_stats_get(&st);
    is_u64(st.produced, 25, "stats: produced (24 f_a, 1 f_b)");
    is_u64(st.written, 25, "stats: written (a.trace's first records too)");
    ok(st.dropped == 0 && st.pending == 0 && st.threads == 1, "stats: no drops, nothing pending, 1 buffer");
    ok(st.produced == st.written + st.dropped + st.pending, "stats: produced = written + dropped + pending");
    ok(st.bytes_written >= (uint64_t)(test_file_size("b.trace") + test_file_size(def)), "stats: bytes written");

    is_int(st_trace_file_set_enabled(false), 0, "disable at the end");
    is_int(st_trace_file_set_enabled(false), 0, "disable twice is fine");
    if (chdir(cwd) != 0)
        return 2;
    return done_testing();
}
