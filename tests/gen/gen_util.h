/*
 * Helpers for the generator tests: run a command in a directory with its
 * output captured, read and write files, make and remove scratch
 * directories. Header-only: each test is one program.
 */
#ifndef ST_TEST_GEN_UTIL_H
#define ST_TEST_GEN_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Reads a whole file into a NUL-terminated malloc'ed buffer; NULL on error. */
static inline char *gu_read_file(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len + 1 >= cap) {
            char *p = realloc(buf, cap * 2);
            if (!p) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = p;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    if (len_out)
        *len_out = len;
    return buf;
}

/* Writes len bytes to path; 0 or -1. */
static inline int gu_write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int rc = fwrite(text, 1, len, f) == len ? 0 : -1;
    return fclose(f) == 0 ? rc : -1;
}

static inline int gu_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Number of entries (besides . and ..) in dir, or -1. */
static inline int gu_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    return n;
}

static inline int gu_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes a directory tree. */
static inline void gu_rm_rf(const char *dir)
{
    nftw(dir, gu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Makes a scratch directory; returns its malloc'ed path or NULL. */
static inline char *gu_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/st-gen-test-XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(tmpl) ? strdup(tmpl) : NULL;
}

/* What a command did. */
struct gu_result {
    int status; /* exit status; -1 if it did not exit normally */
    char *out;  /* its stdout */
    char *err;  /* its stderr */
};

static inline void gu_result_free(struct gu_result *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/* Runs argv (NULL-terminated) in directory cwd (NULL: here); captures stdout and stderr. */
static inline int gu_run(char *const *argv, const char *cwd, struct gu_result *r)
{
    memset(r, 0, sizeof *r);
    r->status = -1;
    char out_path[] = "/tmp/st-gen-out-XXXXXX", err_path[] = "/tmp/st-gen-err-XXXXXX";
    int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
    if (out_fd < 0 || err_fd < 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if ((cwd && chdir(cwd) != 0) || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
            _exit(127);
        execv(argv[0], argv);
        execvp(argv[0], argv);
        _exit(127);
    }
    int wst = 0;
    if (pid > 0)
        while (waitpid(pid, &wst, 0) < 0 && errno == EINTR) {
        }
    close(out_fd);
    close(err_fd);
    r->out = gu_read_file(out_path, NULL);
    r->err = gu_read_file(err_path, NULL);
    unlink(out_path);
    unlink(err_path);
    if (pid > 0 && WIFEXITED(wst))
        r->status = WEXITSTATUS(wst);
    return pid > 0 ? 0 : -1;
}

/* Absolute form of path (relative to the current directory); malloc'ed. */
static inline char *gu_abspath(const char *path)
{
    char *abs = realpath(path, NULL);
    return abs ? abs : strdup(path);
}

#endif
