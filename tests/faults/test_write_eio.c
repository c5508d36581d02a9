/*
 * A write that fails like a dying disk (EIO), after a short write. This
 * program defines write() itself, so the runtime (linked statically) calls
 * this one: it passes everything through with the raw system call, except
 * that, while armed, writes to a file whose name contains "eio." first come
 * short (half the bytes really written) and then fail with EIO. Output of
 * stdio does not go through write() and is unaffected.
 *
 * Checked: flush returns -EIO and the status keeps it; the file is cut back
 * to its last whole record (the short write's partial record is removed)
 * and decodes; the program goes on; re-enabling the same file appends to it
 * (its mappings are written again, mid-stream, which readers accept); an
 * immediate EIO on a switch to another file is reported the same way; the
 * accounting adds up exactly.
 */
#include <sys/syscall.h>

#include "fault_test.h"

static int armed;      /* 1: short write then EIO; 2: EIO at once */
static int short_done; /* the short write happened */
static unsigned failures;

static int is_victim(int fd)
{
    char link[64], target[1024];
    ssize_t n;

    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return 0;
    target[n] = '\0';
    return strstr(target, "eio.") != NULL;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    int mode = __atomic_load_n(&armed, __ATOMIC_ACQUIRE);

    if (mode && fd > 2 && is_victim(fd)) {
        if (mode == 1 && !short_done && n > 100) {
            short_done = 1;
            return (ssize_t)syscall(SYS_write, fd, buf, n / 2 + 3); /* cuts a record */
        }
        failures++;
        errno = EIO;
        return -1;
    }
    return (ssize_t)syscall(SYS_write, fd, buf, n);
}

static uint64_t produced, seq;

static void trace_n(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        ft_trace(0, seq++, &produced);
}

int main(int argc, char **argv)
{
    struct st_file_status fs = {.struct_size = sizeof fs};
    struct ft_sum s;
    char cfg[1400];
    long long size;
    int saved_err = dup(2), fd;

    test_tmpdir();
    fd = open(test_path("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);

    snprintf(cfg, sizeof cfg, "ft_*,file=%s", test_path("eio.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure");
    trace_n(2000);
    is_int(st_trace_file_flush(), 0, "flush before the fault");

    __atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
    trace_n(2000);
    is_int(st_trace_file_flush(), -EIO, "flush reports -EIO");
    ok(short_done && failures == 1, "a short write, then one EIO (the writer stopped at once)");
    st_trace_file_status(&fs);
    ok(!fs.enabled && fs.error == -EIO, "status: off, error -EIO");
    size = test_file_size(test_path("eio.trace"));
    ft_sum_init(&s);
    ft_sum_file(&s, test_path("eio.trace"), 0);
    ok(s.decoded && s.order, "after the fault the file decodes (%lld bytes, %llu records)", size,
       (unsigned long long)s.events);
    ft_print_check(argc > 1 ? argv[1] : NULL, test_path("eio.trace"), &s, "cut after EIO");

    trace_n(500); /* goes on; waits in the buffer */
    __atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
    is_int(st_trace_file_set_enabled(true), 0, "re-enable the same file once the disk is back");
    trace_n(500);
    is_int(st_trace_file_flush(), 0, "flush succeeds");
    ok(test_file_size(test_path("eio.trace")) > size, "appended to the same file");

    /* An immediate EIO on a file switched to. */
    __atomic_store_n(&armed, 2, __ATOMIC_RELEASE);
    is_int(st_trace_file_set_name(test_path("eio.second")), 0, "switch to a second file");
    trace_n(300);
    is_int(st_trace_file_flush(), -EIO, "its first write fails: -EIO");
    __atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
    trace_n(200);
    is_int(st_trace_file_set_name(test_path("good.trace")), 0, "trace-file set to a good file (stopped: names it)");
    is_int(st_trace_file_set_enabled(true), 0, "trace-file on: writing resumes there");
    trace_n(100);
    is_int(st_trace_file_flush(), 0, "flush succeeds");
    st_trace_file_set_enabled(false);

    ft_sum_init(&s);
    ft_sum_file(&s, test_path("eio.trace"), 0);
    ft_sum_file(&s, test_path("eio.second"), 1); /* nothing whole reached it */
    ft_sum_file(&s, test_path("good.trace"), 0);
    ft_check("EIO", &s, produced);
    ok(s.last_seq[0] == seq, "the last record traced is in the last file");
    fflush(stderr);
    dup2(saved_err, 2);
    return done_testing();
}
