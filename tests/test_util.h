/*
 * What every test folder needs beside tap.h, once: a whole file read into
 * memory, and a program run with its output captured (each test in its
 * own process, as libuv's runner starts them). Header-only, libc only.
 */
#ifndef ST_TEST_UTIL_H
#define ST_TEST_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The file at path, whole, in a malloc'ed buffer with a NUL after it (the
 * file may hold NULs: *len, when not NULL, says how many bytes); NULL when
 * it cannot be read.
 */
static inline char *tu_slurp(const char *path, size_t *len)
{
    if (len)
        *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *more = realloc(buf, 2 * cap + 1);
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = 0;
    if (len)
        *len = buf ? n : 0;
    return buf;
}

/* What a program run did. */
struct tu_run {
    int status;            /* exit status, 128 + signal when killed, -1 when it could not start */
    char *out, *err;       /* stdout and stderr, malloc'ed and NUL-terminated ("" when none) */
    size_t out_len, err_len;
    long maxrss_kb;        /* the child's peak resident size */
};

static inline void tu_run_free(struct tu_run *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/*
 * The entries of dir whose name starts with prefix ("" for any), those
 * starting with '.' and the one named skip (NULL: none) left out; -1 when
 * dir cannot be read.
 */
static inline int tu_dir_count(const char *dir, const char *prefix, const char *skip)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.' && !strncmp(e->d_name, prefix, strlen(prefix)) &&
             !(skip && !strcmp(e->d_name, skip));
    closedir(d);
    return n;
}

/* A temporary file for a run's output, made empty in $TMPDIR (or /tmp); its name into buf. */
static inline int tu_tmpfile(char *buf, size_t len, const char *tag)
{
    const char *dir = getenv("TMPDIR");
    snprintf(buf, len, "%s/st-test-%s-XXXXXX", dir && *dir ? dir : "/tmp", tag);
    return mkstemp(buf);
}

/*
 * Runs argv (NULL-terminated; argv[0] a path, else looked up in PATH) in
 * directory cwd (NULL: here), stdin from in (NULL: /dev/null), stdout
 * captured (or discarded, to keep this process small), stderr captured,
 * into *r. 0, or -1 when the output could not be captured (r->status -1).
 */
static inline int tu_run(char *const argv[], const char *cwd, const char *in, bool discard_out, struct tu_run *r)
{
    char out_path[512], err_path[512];
    memset(r, 0, sizeof *r);
    r->status = -1;
    int out_fd = tu_tmpfile(out_path, sizeof out_path, "out"), err_fd = tu_tmpfile(err_path, sizeof err_path, "err");
    if (out_fd < 0 || err_fd < 0) {
        if (out_fd >= 0)
            close(out_fd), unlink(out_path);
        if (err_fd >= 0)
            close(err_fd), unlink(err_path);
        return -1;
    }
    fflush(stdout); /* a child must not write the TAP lines buffered so far again */
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int in_fd = open(in ? in : "/dev/null", O_RDONLY);
        int null_fd = discard_out ? open("/dev/null", O_WRONLY) : out_fd;
        if (in_fd < 0 || null_fd < 0 || dup2(in_fd, 0) < 0 || dup2(null_fd, 1) < 0 || dup2(err_fd, 2) < 0 ||
            (cwd && chdir(cwd) != 0))
            _exit(126);
        if (strchr(argv[0], '/'))
            execv(argv[0], argv);
        else
            execvp(argv[0], argv);
        _exit(127);
    }
    if (pid > 0) {
        int st = 0;
        struct rusage ru;
        memset(&ru, 0, sizeof ru);
        while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
            ;
        r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        r->maxrss_kb = ru.ru_maxrss;
    }
    close(out_fd);
    close(err_fd);
    r->out = discard_out ? NULL : tu_slurp(out_path, &r->out_len);
    r->err = tu_slurp(err_path, &r->err_len);
    if (!discard_out && !r->out)
        r->out = strdup("");
    if (!r->err)
        r->err = strdup("");
    unlink(out_path);
    unlink(err_path);
    return pid > 0 ? 0 : -1;
}

/* zstd -d src -o dst (the real zstd command): its exit status, -1 when it could not run. */
static inline int tu_unzstd(const char *src, const char *dst)
{
    char *argv[] = {"zstd", "-q", "-d", "-f", (char *)src, "-o", (char *)dst, NULL};
    struct tu_run r;
    int st;

    if (tu_run(argv, NULL, NULL, true, &r) < 0)
        return -1;
    st = r.status;
    tu_run_free(&r);
    return st;
}

#endif /* ST_TEST_UTIL_H */
