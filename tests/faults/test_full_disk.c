/*
 * A full disk. As root (mount works): a 512 KiB tmpfs mounted on a private
 * directory, a filler file taking most of it, and a trace file that outgrows
 * the rest: write() comes short, then fails with ENOSPC. Freeing the filler
 * then makes room for every record still buffered (without the writeout
 * thread, writer=auto or inline, the records traced after the failed write
 * are still in the buffer, not lost in it). Without mount
 * (not root, or no tmpfs): RLIMIT_FSIZE (EFBIG) on an ordinary file, then
 * /dev/full (ENOSPC). The test says which ran.
 *
 * Each time: the failure is returned by flush and kept in the status, the
 * file is cut back to its last whole record and decodes, the program goes
 * on tracing (records wait in the buffer, then drop and are counted), and
 * once there is room again re-enabling the same file appends to it (tmpfs),
 * or switching to another file recovers. Everything adds up exactly. What
 * the failed writes lost is counted apart from full buffers, in the
 * runtime's st_stats.write_lost and in the files themselves (a dropped
 * record with pid 0xfffffffe), which `simpletrace stats` and `info` show.
 * ST_FAULTS_NO_MOUNT=1 forces the fallback (meson runs both).
 */
#include <sys/mount.h>
#include <sys/resource.h>

#include "fault_test.h"

static uint64_t produced, seq;
static const char *cli; /* the simpletrace command (argv[1]) */

static void trace_n(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        ft_trace(0, seq++, &produced);
}

/* Fills path with n bytes; 0 or -1. */
static int fill(const char *path, size_t n)
{
    char buf[4096];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    size_t done = 0;

    if (fd < 0)
        return -1;
    memset(buf, 'x', sizeof buf);
    while (done < n) {
        ssize_t w = write(fd, buf, n - done < sizeof buf ? n - done : sizeof buf);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    close(fd);
    return done == n ? 0 : -1;
}

/* `CLI ARGS...` (at most 4) with stdout into out (len bytes, NUL-terminated); the exit status. */
static int run_cli(char *out, size_t len, const char *a1, const char *a2, const char *a3, const char *a4)
{
    int fds[2], status = -1;
    size_t got = 0;
    ssize_t n;
    pid_t pid;

    out[0] = '\0';
    if (pipe(fds) != 0)
        return -1;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl(cli, cli, a1, a2, a3, a4, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    while (got + 1 < len && (n = read(fds[0], out + got, len - 1 - got)) > 0)
        got += (size_t)n;
    out[got] = '\0';
    close(fds[0]);
    waitpid(pid, &status, 0);
    return status;
}

/* The events `simpletrace stats --json` counts as lost to failed writes in path, or -1. */
static long long cli_write_lost(const char *path)
{
    static char out[65536];
    const char *p;

    test_write_file(test_path("ft.trace-events"), FT_EVENTS_TEXT);
    if (run_cli(out, sizeof out, "stats", "--format=json", test_path("ft.trace-events"), path) != 0)
        return -1;
    p = strstr(out, "\"write_lost_events\":");
    return p ? atoll(p + 20) : -1;
}

/* `simpletrace stats` and `info` on the files say what st_stats.write_lost says: the same count. */
static void write_lost_check(const char *what, const char *const *paths, uint64_t in_files_too)
{
    struct st_stats st = {.struct_size = sizeof st};
    static char out[65536];
    char want[128];
    long long sum = 0;

    if (!cli || !*cli) {
        printf("ok %d # SKIP %s: simpletrace stats (no command path given)\n", ++tap__count, what);
        return;
    }
    st_stats_get(&st);
    ok(st.write_lost > 0 && st.write_lost <= st.dropped, "%s: stats.write_lost %llu, within dropped %llu", what,
       (unsigned long long)st.write_lost, (unsigned long long)st.dropped);
    for (; *paths; paths++) {
        long long n = cli_write_lost(*paths);
        sum = n < 0 || sum < 0 ? -1 : sum + n;
    }
    is_u64((uint64_t)sum, in_files_too ? in_files_too : st.write_lost,
           "%s: simpletrace stats --format=json: write_lost_events in the files = what the failed writes lost", what);
    run_cli(out, sizeof out, "info", paths[-1], NULL, NULL);
    snprintf(want, sizeof want, "write-lost events:");
    ok(strstr(out, want) != NULL, "%s: simpletrace info shows the write-lost events", what);
}

static void run_tmpfs(const char *mnt)
{
    struct st_file_status fs = {.struct_size = sizeof fs};
    struct ft_sum s;
    char cfg[1400], trace[1200], filler[1200];
    long long size_at_fail;

    diag("method: tmpfs of 512 KiB mounted at %s (ENOSPC from a real file system)", mnt);
    snprintf(trace, sizeof trace, "%s/full.trace", mnt);
    snprintf(filler, sizeof filler, "%s/filler", mnt);
    ok(fill(filler, 384 << 10) == 0, "filler takes 384 KiB of the 512 KiB");
    snprintf(cfg, sizeof cfg, "ft_*,file=%s", trace);
    is_int(st_configure(cfg, NULL, 0), 0, "configure on the small tmpfs");
    trace_n(8000); /* 48-byte records: 384 KB, more than is left */
    is_int(st_trace_file_flush(), -ENOSPC, "flush reports -ENOSPC");
    st_trace_file_status(&fs);
    ok(!fs.enabled && fs.error == -ENOSPC, "status: off, error -ENOSPC");
    size_at_fail = test_file_size(trace);
    ok(size_at_fail > 24 && size_at_fail < (128 << 10), "file kept its whole records (%lld bytes)", size_at_fail);

    trace_n(1000); /* the program goes on: buffered while the file is off (48 KB) */
    is_int(st_trace_file_flush(), -ENOSPC, "flush keeps reporting the error while off");
    ok(unlink(filler) == 0, "space freed");
    is_int(st_trace_file_set_enabled(true), 0, "re-enable the same file");
    ok(test_file_size(trace) >= size_at_fail, "the file was appended to, not truncated");
    trace_n(1000);
    is_int(st_trace_file_flush(), 0, "flush succeeds again");
    is_int(st_trace_file_set_enabled(false), 0, "close");
    ft_sum_init(&s);
    ft_sum_file(&s, trace, 0);
    ft_check("tmpfs", &s, produced);
    ft_print_check(cli, trace, &s, "tmpfs");
    ok(s.events > 0 && s.last_seq[0] == seq, "the last record traced is in the file");
    {
        const char *paths[] = {trace, NULL};
        write_lost_check("tmpfs", paths, 0);
    }
}

static void run_fallback(void)
{
    struct st_file_status fs = {.struct_size = sizeof fs};
    struct rlimit rl, old;
    struct ft_sum s;
    char cfg[1400];

    diag("method: mount not available here (not root?): RLIMIT_FSIZE (EFBIG) and /dev/full (ENOSPC)");
    signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old);
    rl = old;
    rl.rlim_cur = 64 << 10;
    setrlimit(RLIMIT_FSIZE, &rl);
    snprintf(cfg, sizeof cfg, "ft_*,file=%s", test_path("fsize.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure");
    trace_n(5000);
    is_int(st_trace_file_flush(), -EFBIG, "flush reports -EFBIG");
    setrlimit(RLIMIT_FSIZE, &old);
    trace_n(500);
    is_int(st_trace_file_set_name("/dev/full"), 0, "switch to /dev/full");
    is_int(st_trace_file_set_enabled(true), 0, "enable /dev/full");
    is_int(st_trace_file_flush(), -ENOSPC, "flush reports -ENOSPC");
    st_trace_file_status(&fs);
    ok(!fs.enabled && fs.error == -ENOSPC, "status: off, error -ENOSPC");
    trace_n(500);
    is_int(st_trace_file_set_name(test_path("after.trace")), 0, "trace-file set to a writable file (stopped: names it)");
    is_int(st_trace_file_set_enabled(true), 0, "trace-file on: writing resumes there");
    trace_n(100);
    is_int(st_trace_file_flush(), 0, "flush succeeds again");
    st_trace_file_set_enabled(false);
    ft_sum_init(&s);
    ft_sum_file(&s, test_path("fsize.trace"), 0);
    ft_print_check(cli, test_path("fsize.trace"), &s, "file cut at EFBIG");
    ft_sum_file(&s, test_path("after.trace"), 0);
    ft_check("fallback", &s, produced);
    {
        /* /dev/full keeps nothing: its loss is counted at the start of after.trace. */
        const char *paths[] = {test_path("fsize.trace"), test_path("after.trace"), NULL};
        char fsize[1200], after[1200];
        snprintf(fsize, sizeof fsize, "%s", paths[0]);
        snprintf(after, sizeof after, "%s", paths[1]);
        paths[0] = fsize;
        paths[1] = after;
        write_lost_check("fallback", paths, 0);
    }
}

int main(int argc, char **argv)
{
    char mnt[700];
    int saved_err = dup(2), fd;

    cli = argc > 1 ? argv[1] : NULL;
    test_tmpdir();
    /* The runtime reports each failure on stderr: keep the TAP output readable. */
    fd = open(test_path("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
    snprintf(mnt, sizeof mnt, "%s", test_path("mnt"));
    mkdir(mnt, 0755);
    /* ST_FAULTS_NO_MOUNT=1 runs the fallback even as root, so both paths are tested. */
    if (getenv("ST_FAULTS_NO_MOUNT")) {
        diag("ST_FAULTS_NO_MOUNT set: not mounting");
        run_fallback();
    } else if (mount("tmpfs", mnt, "tmpfs", 0, "size=512k") == 0) {
        run_tmpfs(mnt);
        if (umount2(mnt, MNT_DETACH) != 0)
            diag("umount %s: %s", mnt, strerror(errno));
    } else {
        diag("mount -t tmpfs: %s", strerror(errno));
        run_fallback();
    }
    fflush(stderr);
    dup2(saved_err, 2);
    return done_testing();
}
