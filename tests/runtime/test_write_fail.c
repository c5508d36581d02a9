/*
 * Write failures: a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored: write()
 * fails with EFBIG) and /dev/full (ENOSPC). Each is reported once on stderr
 * and in st_trace_file_status().error; the file is cut back to its last
 * whole record and stays decodable, and ends in a dropped record with pid
 * 0xfffffffe counting what the write lost (told apart from full buffers);
 * the program goes on; counts add up (st_stats.write_lost: the write's
 * losses). At exit (a child process), the report names the file and the
 * error instead of blaming the buffers and suggesting bufsize=.
 */
#include <sys/resource.h>

#include "rt_test.h"
#include "trace_format.h"

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

/*
 * The child: EFBIG on its trace file, then more events than its buffer
 * holds while the file is stopped, then exit. Everything it lost is the
 * write error's.
 */
static int child_efbig(const char *path)
{
    struct rlimit rl = {LIMIT, LIMIT};
    char cfg[1200];

    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &rl);
    snprintf(cfg, sizeof cfg, "wf_ev,bufsize=512K,file=%s", path); /* holds the first 5000 (340 KB) */
    if (st_configure(cfg, NULL, 0) < 0)
        return 2;
    for (uint64_t i = 0; i < 5000; i++)
        test_trace_iis(&ev_wf, i, 1, "0123456789abcdef");
    if (st_trace_file_flush() != -EFBIG)
        return 3;
    for (uint64_t i = 5000; i < 15000; i++) /* 680 KB: the buffer keeps some, drops the rest */
        test_trace_iis(&ev_wf, i, 1, "0123456789abcdef");
    return 0;
}

/* The exit report of a program whose trace file hit a write error. */
static void exit_report_names_the_error(void)
{
    char *argv[] = {"test_rt_write_fail", "child-efbig", (char *)test_path("child.trace"), NULL};
    const char *errpath = test_path("child-stderr.txt");
    char want[1400], *text;
    unsigned long long lost = 0, failed = 0, dropped = 0, left = 0;
    const char *p;
    int status = test_run_self(argv, NULL, errpath, NULL);

    is_int(status, 0, "child: EFBIG, then more events than its buffer holds, exit");
    text = tu_slurp(errpath, NULL);
    if (!text)
        text = strdup("");
    snprintf(want, sizeof want, " records lost: writing '%s' failed: File too large (", test_path("child.trace"));
    p = strstr(text, want);
    ok(p != NULL, "exit report: records lost, the file and the error");
    if (p) {
        while (p > text && p[-1] != '\n')
            p--;
        ok(sscanf(p, "simpletrace: %llu records lost: writing '%*[^']' failed: File too large (%llu in the failed "
                     "writes, %llu dropped and %llu left in thread buffers while the file was stopped)",
                  &lost, &failed, &dropped, &left) == 4,
           "exit report: how many in the failed writes, dropped while stopped, left in buffers");
        ok(failed > 0 && dropped > 0 && left > 0 && lost == failed + dropped + left,
           "exit report: %llu = %llu + %llu + %llu, each part there", lost, failed, dropped, left);
    }
    ok(!strstr(text, "bufsize=") && !strstr(text, "thread buffers full"),
       "exit report: the buffers are not blamed, no bufsize= advice");
    if (!ok(count_lines(text, "\n") == 2, "exit report: the write error's line, the loss line, nothing else"))
        diag("stderr: %s", text);
    free(text);
}

int main(int argc, char **argv)
{
    struct st_file_status fs = {.struct_size = sizeof fs};
    struct test_trace t;
    struct st_stats st = {.struct_size = sizeof st};
    struct rlimit rl, old;
    char cfg[1200], line[1400], *text;
    const char *errpath;
    uint64_t next = 0;
    int saved_err, fd, order = 1;

    if (argc > 2 && !strcmp(argv[1], "child-efbig"))
        return child_efbig(argv[2]);
    test_tmpdir();
    exit_report_names_the_error();
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
        const struct test_rec *last = t.n ? &t.r[t.n - 1] : NULL;
        for (size_t i = 0; i < t.n; i++)
            if (!t.r[i].mapping && !t.r[i].dropped)
                order &= t.r[i].u[0] == next++;
        ok(order && next > 0, "records 0..%llu in order, none missing", (unsigned long long)next - 1);
        ok(last && last->dropped && last->pid == ST_PID_WRITE_LOST,
           "the file ends in a dropped record with pid 0xfffffffe (lost to the write error)");
        /* Without the writeout thread (writer=auto, inline) the write that failed ran while the loop traced: what
         * the loop traced after it is still in the buffer, not lost. */
        st_stats_get(&st);
        is_u64(last && last->dropped ? last->drop_count : 0, 5000 - next - st.pending,
               "its count: every record traced after the last one in the file and not still in the buffer");
        is_u64(st.written, t.sum.events, "stats: written = records in the file");
        is_u64(st.bytes_written, (uint64_t)test_file_size(test_path("fsize.trace")), "stats: bytes = file size");
        is_u64(st.write_lost, 5000 - next - st.pending, "stats: write_lost = the records the failed write lost");
        is_u64(st.dropped_reported, 5000 - next - st.pending,
               "stats: dropped_reported counts the file's write-lost record");
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
    is_u64(st.write_lost, st.dropped, "stats: every drop so far is the write errors' (no buffer overflowed)");

    fflush(stderr);
    dup2(saved_err, 2);
    text = tu_slurp(errpath, NULL);
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
