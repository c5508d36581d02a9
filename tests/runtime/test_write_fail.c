/*
 * Write failures: a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored: write()
 * fails with EFBIG) and /dev/full (ENOSPC). Each is reported once on stderr
 * and in st_trace_file_status().error; the file is cut back to its last
 * whole record and stays decodable; the program goes on; counts add up.
 */
#include <sys/resource.h>

#include "rt_test.h"

TEST_EVENT(ev_wf, "wf_ev", "int seq, int x, const char *s", "", "iis", 3, 0);
TEST_GROUP(grp_wf, "wf", &ev_wf)

static struct st_group *const groups[] = {&grp_wf, NULL};

#define LIMIT (64 * 1024)

static size_t count_lines(const char *text, const char *line)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, line)); p += strlen(line))
        n++;
    return n;
}

static void stats_add_up(const char *what)
{
    struct st_stats st = {.struct_size = sizeof st};
    st_stats_get(&st);
    if (!ok(st.produced == st.written + st.dropped + st.pending, "%s: produced = written + dropped + pending", what))
        diag("produced %llu written %llu dropped %llu pending %llu", (unsigned long long)st.produced,
             (unsigned long long)st.written, (unsigned long long)st.dropped, (unsigned long long)st.pending);
}

int main(void)
{
    struct st_file_status fs = {.struct_size = sizeof fs};
    struct test_trace t;
    struct st_stats st = {.struct_size = sizeof st};
    struct rlimit rl, old;
    char cfg[1200], line[1400], *text;
    const char *errpath;
    uint64_t next = 0;
    int saved_err, fd, order = 1;

    test_tmpdir();
    errpath = test_path("stderr.txt");
    saved_err = dup(2);
    fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
    signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old);
    rl = old;
    rl.rlim_cur = LIMIT;
    setrlimit(RLIMIT_FSIZE, &rl);

    snprintf(cfg, sizeof cfg, "wf_ev,file=%s", test_path("fsize.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure");
    for (uint64_t i = 0; i < 5000; i++) /* 68-byte records: 340 KB, over the limit */
        test_trace_iis(&ev_wf, i, 1, "0123456789abcdef");
    is_int(st_trace_file_flush(), -EFBIG, "flush reports -EFBIG");
    st_trace_file_status(&fs);
    ok(!fs.enabled && fs.error == -EFBIG, "status: off, error -EFBIG");
    ok(test_file_size(test_path("fsize.trace")) <= LIMIT, "file within the limit");
    if (ok(test_collect(test_path("fsize.trace"), groups, &t) == 0, "file decodes to its last whole record")) {
        for (size_t i = 0; i < t.n; i++)
            if (!t.r[i].mapping)
                order &= t.r[i].u[0] == next++;
        ok(order && next > 0, "records 0..%llu in order, none missing", (unsigned long long)next - 1);
        st_stats_get(&st);
        is_u64(st.written, t.sum.events, "stats: written = records in the file");
        is_u64(st.bytes_written, (uint64_t)test_file_size(test_path("fsize.trace")), "stats: bytes = file size");
    }
    test_trace_free(&t);
    stats_add_up("after EFBIG");
    for (uint64_t i = 5000; i < 5100; i++)
        test_trace_iis(&ev_wf, i, 1, "0123456789abcdef");
    is_int(st_trace_file_flush(), -EFBIG, "program goes on; flush still reports the error");
    stats_add_up("after more events");
    setrlimit(RLIMIT_FSIZE, &old);

    is_int(st_trace_file_set_name("/dev/full"), 0, "switch to /dev/full (file is off)");
    is_int(st_trace_file_set_enabled(true), 0, "enable /dev/full");
    is_int(st_trace_file_flush(), -ENOSPC, "flush reports -ENOSPC");
    st_trace_file_status(&fs);
    ok(!fs.enabled && fs.error == -ENOSPC, "status: off, error -ENOSPC");
    stats_add_up("after ENOSPC");
    st_stats_get(&st);
    is_u64(st.pending, 0, "records in the buffer were taken out and counted as dropped");

    fflush(stderr);
    dup2(saved_err, 2);
    text = test_slurp(errpath, NULL);
    snprintf(line, sizeof line, "simpletrace: writing trace file '%s': File too large; tracing to it stopped\n",
             test_path("fsize.trace"));
    is_int(count_lines(text, line), 1, "EFBIG reported once on stderr");
    is_int(count_lines(text, "simpletrace: writing trace file '/dev/full': No space left on device; tracing to it "
                             "stopped\n"),
           1, "ENOSPC reported once on stderr");
    is_int(count_lines(text, "\n"), 2, "nothing else on stderr");
    free(text);
    return done_testing();
}
