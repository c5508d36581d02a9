/*
 * Shared by the tests of what servers do (issue 27: daemonizing, workers,
 * retitling, dropping privileges, umask 0, closing every descriptor,
 * signals): the test program runs itself again as the "server", which
 * does the thing the way servers do it, and talks to it through files (a
 * pid file, a stop file) and `simpletrace ctl` (mon_util.h, whose
 * XDG_RUNTIME_DIR of its own keeps the test's sockets apart).
 */
#ifndef ST_TEST_SRV_UTIL_H
#define ST_TEST_SRV_UTIL_H

#include <sys/prctl.h>
#include <time.h>

#include "mon_util.h"

/* Makes this process the reaper of its orphans: a daemon's grandchild comes back to us, to be waited for. */
static inline void srv_subreaper(void)
{
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
        diag("PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
}

/*
 * Starts this test binary again with argv (argv[0] included) and the
 * environment changes env ("NAME=value" sets, "NAME" unsets), stderr to
 * errpath (appended), in directory cwd; returns its pid without waiting.
 */
static inline pid_t srv_start(char *const argv[], const char *const env[], const char *errpath, const char *cwd)
{
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid != 0)
        return pid;
    for (; env && *env; env++) {
        const char *eq = strchr(*env, '=');
        if (eq) {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(eq - *env), *env);
            setenv(name, eq + 1, 1);
        } else {
            unsetenv(*env);
        }
    }
    if (errpath) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0)
            dup2(fd, 2);
    }
    if (cwd && chdir(cwd) != 0)
        _exit(126);
    execv("/proc/self/exe", argv);
    _exit(127);
}

/* Waits up to ms for pid (a child, or an orphan handed to us); its wait status, or -1 (then it is killed). */
static inline int srv_wait(pid_t pid, long ms)
{
    int status;

    for (long waited = 0;; waited += 10) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        if (r < 0 || waited >= ms)
            break;
        mon_sleep_ms(10);
    }
    diag("process %ld did not end within %ld ms: killed", (long)pid, ms);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* Writes "N\n" to path whole (a file renamed into place), so a reader never sees half of it. */
static inline int srv_write_pid(const char *path, long pid)
{
    char tmp[1100];
    FILE *f;

    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (!(f = fopen(tmp, "w")) || fprintf(f, "%ld\n", pid) < 0 || fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}

/* The number in path once it is there (up to ms); 0 when it never came. */
static inline long srv_read_pid(const char *path, long ms)
{
    long pid = 0;
    char *text;

    if (!mon_wait_path(path, 1, ms) || !(text = tu_slurp(path, NULL)))
        return 0;
    pid = strtol(text, NULL, 10);
    free(text);
    return pid;
}

/*
 * What the processes wrote to the stderr file at path, without the lines
 * LeakSanitizer writes in fork children of threaded processes ("==PID==
 * Running thread N was not suspended. False leaks are possible.": their
 * parent's threads are still in its list): malloc'ed, NULL when unreadable.
 */
static inline char *srv_stderr(const char *path)
{
    char *text = tu_slurp(path, NULL), *out = text;

    for (const char *l = text; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) + 1 : strlen(l);
        if (!(l[0] == '=' && l[1] == '=' && memmem(l, len, "was not suspended", 17))) {
            memmove(out, l, len);
            out += len;
        }
        l += len;
    }
    if (out)
        *out = '\0';
    return text;
}

/* Creates path, empty: the word a server child waits for. */
static inline void srv_touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    if (fd >= 0)
        close(fd);
}

/* Number of lines of text that start with prefix. */
static inline int srv_count_lines(const char *text, const char *prefix)
{
    int n = 0;

    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        n += strncmp(l, prefix, strlen(prefix)) == 0;
    return n;
}

/* `simpletrace ctl list` until it shows pid alive (up to ms; a socket being made again is retried). */
static inline int srv_listed_alive(long pid, long ms)
{
    char want[64];

    snprintf(want, sizeof want, "%-8ld", pid);
    for (long waited = 0;; waited += 100) {
        struct tu_run r = MON_CTL("ctl", "list");
        int found = 0;
        for (const char *l = r.out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
            if (!strncmp(l, want, strlen(want)) && strstr(l, " alive ") && strchr(l, '\n') &&
                strstr(l, " alive ") < strchr(l, '\n'))
                found = 1;
        if (!found && waited >= ms)
            diag("ctl list: %s%s", r.out, r.err);
        tu_run_free(&r);
        if (found)
            return 1;
        if (waited >= ms)
            return 0;
        mon_sleep_ms(100);
    }
}

/* Counts files in dir whose names start with prefix (and end with suffix, when given). */
static inline int srv_count_files(const char *dir, const char *prefix, const char *suffix)
{
    char cmd[1400], *out;
    struct tu_run r;
    int n = 0;

    snprintf(cmd, sizeof cmd, "ls -A '%s'", dir);
    char *argv[] = {"sh", "-c", cmd, NULL};
    tu_run(argv, NULL, NULL, false, &r);
    out = r.out;
    for (char *l = out; l && *l;) {
        char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        size_t sl = suffix ? strlen(suffix) : 0;
        if (!strncmp(l, prefix, strlen(prefix)) && len >= sl && (!suffix || !strncmp(l + len - sl, suffix, sl)))
            n++;
        l = nl ? nl + 1 : NULL;
    }
    tu_run_free(&r);
    return n;
}

#endif /* ST_TEST_SRV_UTIL_H */
