/*
 * A umask of 0 (servers set it, and some before they configure tracing):
 * every file the runtime creates is owner-only, 0600, and every directory
 * 0700: the trace file, its rotation pieces, dir='s directory and files, a
 * fork child's own file (opened at its first event, after the umask),
 * crash=DIR's rings and names file, a flight snapshot, the monitor's
 * socket. Before the fix trace files were 0666, writable by anyone. A file
 * that exists already keeps its mode (that is how to ask for another),
 * and its rotation pieces take it.
 */
#include "srv_util.h"

TEST_EVENT(ev_u, "um_work", "int n, int m, const char *s", "n %d", "iis", 3, 0);
TEST_GROUP(grp_um, "um", &ev_u)

/* Mode bits of path, or -1. */
static int mode_of(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

static void is_mode(const char *path, int want, const char *what)
{
    int got = mode_of(path);

    if (!ok(got == want, "%s: mode %04o", what, (unsigned)want))
        diag("%s: got %04o", path, (unsigned)got);
}

/* Enough records to start a new piece of rotate=64K. */
static void fill(int pieces)
{
    for (int i = 0; i < pieces * 1500; i++)
        test_trace_iis(&ev_u, (uint64_t)i, 0, "forty bytes of text, to fill a piece");
    st_trace_file_flush();
}

/* Child: flight mode with umask 0, one snapshot. */
static int flight_child(const char *path)
{
    umask(0);
    CHECK(st_configure("flight=64K,um_*", NULL, 0) == 0);
    test_trace_iis(&ev_u, 1, 2, "x");
    CHECK(st_trace_snapshot(path) == 0);
    return 0;
}

int main(int argc, char **argv)
{
    char cfg[2000], path[480], dir[400], crash[400], name[100], sock[480];
    char *args[] = {"test_rt_umask", "flight", path, NULL};
    int status, fd;
    pid_t pid;

    if (argc > 2 && !strcmp(argv[1], "flight"))
        return flight_child(argv[2]);
    mon_cli = argc > 1 ? argv[1] : "simpletrace";
    mon_setup();
    umask(0);

    /* The trace file, its pieces, crash=DIR, the monitor. */
    snprintf(path, sizeof path, "%s", test_path("u.trace"));
    snprintf(crash, sizeof crash, "%s", test_path("crash"));
    snprintf(cfg, sizeof cfg, "um_*,file=%s,rotate=64K,crash=%s,monitor=on", path, crash);
    is_int(st_configure(cfg, NULL, 0), 0, "configured with umask 0");
    fill(2);
    is_mode(path, 0600, "the trace file");
    snprintf(cfg, sizeof cfg, "%s.1", path);
    is_mode(cfg, 0600, "its next piece");
    is_mode(crash, 0700, "crash=DIR");
    snprintf(name, sizeof name, "st-%ld-%ld.ring", (long)getpid(), (long)getpid());
    snprintf(cfg, sizeof cfg, "%s/%s", crash, name);
    is_mode(cfg, 0600, "a crash ring file");
    snprintf(cfg, sizeof cfg, "%s/st-%ld.names", crash, (long)getpid());
    is_mode(cfg, 0600, "the crash names file");
    snprintf(sock, sizeof sock, "%s", mon_sock(getpid()));
    is_mode(sock, 0600, "the monitor's socket");
    is_mode(mon_sockdir, 0700, "... and its directory");

    /* A fork child's own file, opened at its first event. */
    fflush(stdout);
    if ((pid = fork()) == 0) {
        test_trace_iis(&ev_u, 1, 2, "child");
        exit(0);
    }
    waitpid(pid, &status, 0);
    snprintf(cfg, sizeof cfg, "%s-%ld", path, (long)pid);
    is_mode(cfg, 0600, "a fork child's own file");

    /* dir=: the directory and the file in it. */
    snprintf(dir, sizeof dir, "%s", test_path("d"));
    snprintf(cfg, sizeof cfg, "dir=%s,rotate=off", dir);
    is_int(st_configure(cfg, NULL, 0), 0, "dir= with umask 0");
    test_trace_iis(&ev_u, 1, 2, "dir");
    st_trace_file_flush();
    is_mode(dir, 0700, "dir='s directory");
    snprintf(cfg, sizeof cfg, "%s/test_rt_umask-%ld.trace", dir, (long)getpid());
    is_mode(cfg, 0600, "dir='s file");

    /* Asked otherwise: a file made beforehand keeps its mode, and its pieces take it. */
    snprintf(path, sizeof path, "%s", test_path("shared.trace"));
    fd = open(path, O_WRONLY | O_CREAT, 0644);
    close(fd);
    snprintf(cfg, sizeof cfg, "file=%s,rotate=64K", path);
    is_int(st_configure(cfg, NULL, 0), 0, "a file made beforehand, 0644");
    fill(2);
    is_mode(path, 0644, "it keeps its mode");
    snprintf(cfg, sizeof cfg, "%s.1", path);
    is_mode(cfg, 0644, "its pieces take it");
    st_trace_file_set_enabled(false);

    /* A flight snapshot (flight mode wants a process of its own). */
    snprintf(path, sizeof path, "%s", test_path("snap.trace"));
    status = test_run_self(args, NULL, NULL, NULL);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "flight child ran");
    is_mode(path, 0600, "a flight snapshot");
    return done_testing();
}
