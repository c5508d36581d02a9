/*
 * st_configure() is all or nothing also when a step fails late: the
 * writeout, monitor or flight thread cannot start (the thread limit), or
 * the monitor's wake-up pipe cannot be made (the descriptor limit), after
 * the items before them were checked. Then enable rules, the ring size,
 * the crash directory, the trace file and the monitor socket are all as
 * before the call.
 *
 * crash=DIR with DIR missing is made (0700) as file= makes its file, and
 * removed again when a later item fails.
 *
 * Each case runs in a child of its own (a fresh runtime, limits that end
 * with it). The thread limit (RLIMIT_NPROC) does not bind root, so a root
 * child first becomes nobody. The child records its checks in shared
 * memory; the parent reports them.
 */
#include <dirent.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "rt_test.h"

TEST_EVENT(ev_a, "cfg_a", "int x", "x %d", "i", 1, 0);
TEST_GROUP(grp_atomic, "atomic", &ev_a)

/* What a child found, for the parent to report. */
#define MAX_CHECKS 16
struct results {
    int n;
    bool ok[MAX_CHECKS];
    char what[MAX_CHECKS][160];
};
static struct results *res;

static void check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool cond, const char *fmt, ...)
{
    va_list ap;

    if (res->n == MAX_CHECKS)
        return;
    res->ok[res->n] = cond;
    va_start(ap, fmt);
    vsnprintf(res->what[res->n], sizeof res->what[0], fmt, ap);
    va_end(ap);
    res->n++;
}

/* The lowest descriptor open() would return now. */
static int lowest_free_fd(void)
{
    int fd = dup(0), low = fd;

    if (fd >= 0)
        close(fd);
    return low;
}

/*
 * After the failed configuration: nothing it asked for took effect. The
 * event was not enabled; enabled now, the calling thread's first record
 * gets a ring of the default size (not bufsize=64K) in anonymous memory
 * (no ring file in the crash directory); the trace file is the one before
 * (on_before: NULL for none), the new one was not left behind, no socket.
 */
static void nothing_changed(const char *on_before, const char *file, const char *sock)
{
    struct st_stats st = {.struct_size = sizeof st};
    struct st_file_status fs = {.struct_size = sizeof fs};

    check(st_event_get_state("cfg_a") == ST_EVENT_DISABLED, "the enable rule was not applied");
    st_trace_file_status(&fs);
    if (on_before)
        check(fs.enabled && !strcmp(fs.path, on_before), "the trace file is still %s (got %s)", on_before, fs.path);
    else
        check(!fs.enabled, "the trace file is not on");
    check(!file || !test_exists(file), "the trace file was not left behind");
    check(!sock || !test_exists(sock), "the monitor socket was not left behind");
    st_event_set_enabled("cfg_a", true);
    test_trace_i(&ev_a, 1);
    st_stats_get(&st);
    check(st.buffer_bytes == ((uint64_t)4 << 20), "bufsize= was not applied (ring of %llu bytes)",
          (unsigned long long)st.buffer_bytes);
    check(tu_dir_count(test_path("crash"), "", NULL) == 0, "crash= was not applied (no ring file)");
}

/* The thread limit, for a child (soft limit only: it can put it back). */
static void limit_threads(struct rlimit *old)
{
    struct rlimit lim;

    if (geteuid() == 0) {
        /* RLIMIT_NPROC does not bind root: become nobody, who owns no other task here. */
        struct passwd *pw = getpwnam("nobody");
        uid_t uid = pw ? pw->pw_uid : 65534;
        gid_t gid = pw ? pw->pw_gid : 65534;
        if (setgid(gid) != 0 || setuid(uid) != 0) {
            check(false, "become nobody to limit threads: %s", strerror(errno));
            _exit(0);
        }
    }
    getrlimit(RLIMIT_NPROC, old);
    lim = *old;
    lim.rlim_cur = 1; /* this process: no new thread */
    setrlimit(RLIMIT_NPROC, &lim);
}

static void configure(const char *config, int want, const char *msg_part)
{
    char err[1024] = "";
    int r = st_configure(config, err, sizeof err);

    check(r == want, "'%s' fails with %d (got %d: %s)", config, want, r, err);
    check(strstr(err, msg_part) != NULL, "... saying \"%s\" (got \"%s\")", msg_part, err);
}

/* The monitor's wake-up pipe cannot be made: the file and the socket were opened first. */
static void case_monitor_pipe(void)
{
    char config[1200];
    struct rlimit old, lim;
    int low = lowest_free_fd();

    snprintf(config, sizeof config, "cfg_a,bufsize=64K,crash=%s,file=%s,monitor=%s", test_path("crash"),
             test_path("t.trace"), test_path("m.sock"));
    getrlimit(RLIMIT_NOFILE, &old);
    lim = old;
    lim.rlim_cur = (rlim_t)low + 3; /* the trace file, its name's lock and the socket fit, the pipe does not */
    setrlimit(RLIMIT_NOFILE, &lim);
    configure(config, -EMFILE, "pipe");
    setrlimit(RLIMIT_NOFILE, &old);
    nothing_changed(NULL, test_path("t.trace"), test_path("m.sock"));
}

/*
 * The writeout thread cannot start: the file was opened, the rules and
 * settings checked. writer=thread asks for the thread from the start (by
 * default a program that traces on one thread runs none).
 */
static void case_writer_thread(void)
{
    char config[1200];
    struct rlimit old;

    snprintf(config, sizeof config, "cfg_a,bufsize=64K,crash=%s,writer=thread,file=%s", test_path("crash"),
             test_path("t.trace"));
    limit_threads(&old);
    configure(config, -EAGAIN, "writeout thread");
    setrlimit(RLIMIT_NPROC, &old);
    nothing_changed(NULL, test_path("t.trace"), NULL);
}

/*
 * The monitor thread cannot start: its socket was bound, the rules checked
 * (the trace file, already open with its thread running, needs nothing new).
 */
static void case_monitor_thread(void)
{
    char config[1200], first[700];
    struct rlimit old;

    snprintf(first, sizeof first, "file=%s", test_path("before.trace"));
    check(st_configure(first, NULL, 0) == 0 && st_event_set_enabled("cfg_a", false) >= 0, "a trace file is on");
    snprintf(config, sizeof config, "cfg_a,bufsize=64K,crash=%s,monitor=%s", test_path("crash"), test_path("m.sock"));
    limit_threads(&old);
    configure(config, -EAGAIN, "monitor thread");
    setrlimit(RLIMIT_NPROC, &old);
    nothing_changed(test_path("before.trace"), NULL, test_path("m.sock"));
}

/* The flight thread cannot start: flight mode and the signal's handler stay as they were. */
static void case_flight_thread(void)
{
    struct sigaction sa;
    struct rlimit old;

    limit_threads(&old);
    configure("cfg_a,flight=64K,flight-signal=USR2", -EAGAIN, "flight thread");
    setrlimit(RLIMIT_NPROC, &old);
    check(st_trace_snapshot(test_path("snap")) == -EINVAL, "not in flight mode");
    check(sigaction(SIGUSR2, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL, "no handler for the signal");
    check(st_event_get_state("cfg_a") == ST_EVENT_DISABLED, "the enable rule was not applied");
}

static void run(const char *name, void (*fn)(void))
{
    pid_t pid;
    int status;

    memset(res, 0, sizeof *res);
    pid = fork();
    if (pid == 0) {
        fn();
        _exit(0);
    }
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child ran to its end", name);
    ok(res->n > 0, "%s: the child checked something", name);
    for (int i = 0; i < res->n; i++)
        ok(res->ok[i], "%s: %s", name, res->what[i]);
}

/* crash=DIR that does not exist yet: made 0700, the rest applied with it. */
static void case_crash_dir_made(void)
{
    const char *dir = test_path("crash-new"), *file = test_path("crash-new.trace");
    char config[1200], err[512] = "";
    struct stat st = {0};
    int r, s;

    snprintf(config, sizeof config, "cfg_a,crash=%s,file=%s", dir, file);
    r = st_configure(config, err, sizeof err);
    check(r == 0, "'%s' applies (got %d: %s)", config, r, err);
    s = stat(dir, &st);
    check(s == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700,
          "the directory was made, mode 0700 (got %o)", (unsigned)st.st_mode & 0777);
    check(st_event_get_state("cfg_a") == ST_EVENT_ENABLED && test_exists(file), "the event and file= applied too");
    test_trace_i(&ev_a, 1);
    check(tu_dir_count(dir, "", NULL) >= 1, "the thread's ring file is in it (%d files)", tu_dir_count(dir, "", NULL));
    st_trace_file_set_enabled(false);
}

/* A later item fails: the directory made for crash= goes again; a missing parent is said. */
static void case_crash_dir_undone(void)
{
    char config[1200];

    snprintf(config, sizeof config, "cfg_a,crash=%s,file=/nonexistent-st-dir/x", test_path("crash-undone"));
    configure(config, -ENOENT, "/nonexistent-st-dir/x");
    check(!test_exists(test_path("crash-undone")), "the directory crash= made was removed");
    snprintf(config, sizeof config, "cfg_a,crash=%s/a/b", test_path("crash-missing"));
    configure(config, -ENOENT, "crash=");
    check(!test_exists(test_path("crash-missing")), "no parent directory made");
    snprintf(config, sizeof config, "cfg_a,crash=%s", test_path("crash-file"));
    test_write_file(test_path("crash-file"), "x");
    configure(config, -ENOTDIR, "Not a directory");
    nothing_changed(NULL, NULL, NULL);
}

int main(void)
{
    test_tmpdir();
    /* Children that became nobody create files here. */
    chmod(test_dir, 0777);
    mkdir(test_path("crash"), 0777);
    chmod(test_path("crash"), 0777);
    res = mmap(NULL, sizeof *res, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (res == MAP_FAILED)
        return 2;
    run("monitor pipe", case_monitor_pipe);
    run("writeout thread", case_writer_thread);
    run("monitor thread", case_monitor_thread);
    run("flight thread", case_flight_thread);
    run("crash dir made", case_crash_dir_made);
    run("crash dir undone", case_crash_dir_undone);
    return done_testing();
}
