/*
 * crash=DIR without room for the thread buffers: the runtime falls back to
 * memory (the program traces on) and must say so, once, naming DIR and the
 * error; st_stats, the monitor's `info stats` (through `simpletrace ctl`)
 * and the exit report count the threads left without crash protection.
 *
 * Always run, unprivileged: RLIMIT_FSIZE below a ring file's size makes
 * posix_fallocate fail with EFBIG (SIGXFSZ ignored), so no ring fits in
 * DIR. As root, also on a real full file system: a 64 KiB tmpfs that holds
 * no 4M ring (ENOSPC, said at configuration), then one that holds the first
 * 16K ring but not the next ones (said once, at the first that fails). A
 * test that cannot mount says SKIP and why.
 *
 * Each case runs in a child process (its stderr, rlimit and exit report
 * are its own); the child reports what it saw in a small results file.
 *
 * argv: SIMPLETRACE-CLI
 */
#include <dirent.h>
#include <pthread.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include "fault_test.h"

static const char *cli;
static pthread_barrier_t all_traced; /* main and both threads: every ring exists at once */

static void *tracer(void *arg)
{
    uint64_t dummy = 0;

    for (uint64_t seq = 0; seq < 20; seq++)
        ft_trace((uint64_t)(uintptr_t)arg, seq, &dummy);
    pthread_barrier_wait(&all_traced);
    return NULL;
}

/* Runs `CLI ctl PID info stats` (json: with --json) into path; the exit status. */
static int ctl_stats(const char *path, bool json)
{
    char pid[32];
    int status = -1;
    pid_t p;

    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    fflush(stdout);
    p = fork();
    if (p == 0) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            _exit(126);
        dup2(fd, 1);
        if (json)
            execl(cli, cli, "ctl", "--json", pid, "info", "stats", (char *)NULL);
        else
            execl(cli, cli, "ctl", pid, "info", "stats", (char *)NULL);
        _exit(127);
    }
    waitpid(p, &status, 0);
    return status;
}

/*
 * The child: limits file sizes when asked, configures crash=DIR (and a
 * trace file outside it, and the monitor), traces from main and two
 * threads, asks the monitor for its stats, and writes st_stats's count to
 * OUT/unprotected.
 */
static int child(const char *dir, const char *out, long fsize, const char *bufsize)
{
    char cfg[2400], path[1200];
    pthread_t th[2];
    struct st_stats st = {.struct_size = sizeof st};
    uint64_t dummy = 0;
    FILE *f;

    if (fsize > 0) {
        struct rlimit rl = {(rlim_t)fsize, (rlim_t)fsize};
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &rl);
    }
    snprintf(cfg, sizeof cfg, "ft_*,crash=%s,file=%s/t.trace,monitor=on%s%s", dir, out, *bufsize ? ",bufsize=" : "",
             bufsize);
    if (st_configure(cfg, NULL, 0) < 0)
        return 2;
    ft_trace(0, 0, &dummy);
    pthread_barrier_init(&all_traced, NULL, 3);
    for (uintptr_t i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, tracer, (void *)(i + 1));
    pthread_barrier_wait(&all_traced);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    st_trace_file_flush();
    snprintf(path, sizeof path, "%s/ctl.txt", out);
    if (ctl_stats(path, false) != 0)
        return 3;
    snprintf(path, sizeof path, "%s/ctl.json", out);
    if (ctl_stats(path, true) != 0)
        return 4;
    st_stats_get(&st);
    snprintf(path, sizeof path, "%s/unprotected", out);
    if (!(f = fopen(path, "w")))
        return 5;
    fprintf(f, "%u\n", (unsigned)st.crash_unprotected);
    fclose(f);
    return 0;
}

static size_t count(const char *text, const char *needle)
{
    size_t n = 0;

    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Ring files left in dir. */
static unsigned rings_in(const char *dir)
{
    unsigned n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;

    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".ring") != NULL;
    if (d)
        closedir(d);
    return n;
}

/*
 * One case: the child under (fsize, bufsize) with crash=dir; want threads
 * without protection (-1: some but not all three), and the error's text.
 */
static void one_case(const char *what, const char *dir, long fsize, const char *bufsize, int want, const char *error)
{
    char out[1200], fs[32], errpath[1300], path[1300], want_line[1600];
    char *argv[] = {"test_crash_room", "child", (char *)dir, out, fs, (char *)bufsize, (char *)cli, NULL};
    char *text, *ctl, *json, *num;
    unsigned n = 0;
    int status;

    snprintf(out, sizeof out, "%s", test_path(what));
    mkdir(out, 0755);
    snprintf(fs, sizeof fs, "%ld", fsize);
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", out);
    status = test_run_self(argv, NULL, errpath, NULL);
    is_int(status, 0, "%s: the program traces on, without crash protection", what);
    text = tu_slurp(errpath, NULL);
    snprintf(path, sizeof path, "%s/ctl.txt", out);
    ctl = tu_slurp(path, NULL);
    snprintf(path, sizeof path, "%s/ctl.json", out);
    json = tu_slurp(path, NULL);
    snprintf(path, sizeof path, "%s/unprotected", out);
    num = tu_slurp(path, NULL);
    if (!text || !ctl || !json || !num) {
        ok(0, "%s: the child left its stderr, ctl answers and stats", what);
        goto out;
    }
    n = (unsigned)strtoul(num, NULL, 10);
    if (want >= 0)
        is_int((int)n, want, "%s: st_stats.crash_unprotected counts the threads", what);
    else
        ok(n >= 1 && n < 3, "%s: st_stats.crash_unprotected %u: the first ring fit, later ones did not", what, n);
    snprintf(want_line, sizeof want_line, "simpletrace: crash=%s: cannot keep a thread buffer of ", dir);
    is_int((int)count(text, want_line), 1, "%s: said once, naming DIR", what);
    snprintf(want_line, sizeof want_line, "(%s): threads trace to memory instead", error);
    is_int((int)count(text, want_line), 1, "%s: ... and the error (%s)", what, error);
    snprintf(want_line, sizeof want_line, "simpletrace: %u thread%s traced without crash protection: crash=DIR could "
             "not hold their buffers (%s)", n, n == 1 ? "" : "s", error);
    is_int((int)count(text, want_line), 1, "%s: the exit report counts them", what);
    snprintf(want_line, sizeof want_line, "threads without crash protection: %u (", n);
    ok(strstr(ctl, want_line) != NULL, "%s: ctl info stats shows them", what);
    snprintf(want_line, sizeof want_line, "\"crash_unprotected\":%u,", n);
    ok(strstr(json, want_line) != NULL, "%s: ctl --json info stats too", what);
    is_int((int)rings_in(dir), 0, "%s: no ring file left after a clean exit", what);
    if (!ok(count(text, "\n") == 2, "%s: nothing else on stderr", what))
        diag("stderr: %s", text);
out:
    free(text);
    free(ctl);
    free(json);
    free(num);
}

int main(int argc, char **argv)
{
    char dir[900], xdg[900];
    int r;

    if (argc > 6 && !strcmp(argv[1], "child")) {
        cli = argv[6];
        return child(argv[2], argv[3], strtol(argv[4], NULL, 10), argv[5]);
    }
    cli = argc > 1 ? argv[1] : NULL;
    if (!cli) {
        printf("1..0 # SKIP needs the simpletrace command as argument\n");
        return 0;
    }
    cli = realpath(cli, NULL);
    test_tmpdir();
    snprintf(xdg, sizeof xdg, "%s", test_path("xdg"));
    mkdir(xdg, 0700);
    setenv("XDG_RUNTIME_DIR", xdg, 1);

    /* Unprivileged: a ring file (4M) over the file-size limit (64K). */
    snprintf(dir, sizeof dir, "%s", test_path("crash-fsize"));
    mkdir(dir, 0700);
    one_case("fsize", dir, 64 << 10, "", 3, "File too large");

    /* Root: a real file system without room. */
    snprintf(dir, sizeof dir, "%s", test_path("crash-tmpfs"));
    mkdir(dir, 0700);
    if ((r = mount("tmpfs", dir, "tmpfs", 0, "size=64k")) != 0) {
        printf("ok %d # SKIP tmpfs cases: mount -t tmpfs not permitted here (%s)\n", ++tap__count, strerror(errno));
    } else {
        one_case("tmpfs-none", dir, 0, "", 3, "No space left on device");
        umount2(dir, MNT_DETACH);
        mount("tmpfs", dir, "tmpfs", 0, "size=64k");
        one_case("tmpfs-first", dir, 0, "16K", -1, "No space left on device");
        umount2(dir, MNT_DETACH);
    }
    free((void *)cli);
    return done_testing();
}
