/*
 * Shared by the runtime tests: events and groups written by hand the way
 * `simpletrace gen` output declares them, inline trace functions shaped like
 * the generated ones, and small process/file helpers.
 */
#ifndef ST_TEST_RT_TEST_H
#define ST_TEST_RT_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simpletrace/simpletrace.h>

#include "tap.h"
#include "test_util.h"
#include "v4_decode.h"

/* In a re-executed child (test_run_self_pid): a failed check is one stderr line and exit status 1. */
#define CHECK(cond)                                                                                         \
    do {                                                                                                    \
        if (!(cond)) {                                                                                      \
            fprintf(stderr, "child check failed: %s (line %d)\n", #cond, __LINE__);                         \
            return 1;                                                                                       \
        }                                                                                                   \
    } while (0)

/* An event as generated code defines it. */
#define TEST_EVENT(var, name, args, fmt, kinds, nargs, flags)                                               \
    static struct st_event var = {sizeof(struct st_event), 0, 0, name, args, fmt, kinds, nargs, flags}

/* A group of events registered by a constructor, as generated code does. */
#define TEST_GROUP(var, gname, ...)                                                                         \
    static struct st_event *const var##_events[] = {__VA_ARGS__};                                           \
    static struct st_group var = {sizeof(struct st_group), gname, var##_events,                             \
                                  (uint32_t)(sizeof(var##_events) / sizeof(var##_events[0])), 0};           \
    __attribute__((constructor)) static void var##_register(void)                                           \
    {                                                                                                       \
        st_group_register(&var);                                                                            \
    }

/* Trace functions shaped like the generated simple-backend ones. */
static inline void test_trace_void(struct st_event *ev)
{
    if (st_event_enabled(ev)) {
        struct st__record rec;
        if (st__simple_begin(&rec, ev, 0) == 0)
            st__simple_commit(&rec);
    }
}

static inline void test_trace_i(struct st_event *ev, uint64_t a)
{
    if (st_event_enabled(ev)) {
        struct st__record rec;
        if (st__simple_begin(&rec, ev, 8) == 0) {
            st__put_u64(&rec, a);
            st__simple_commit(&rec);
        }
    }
}

static inline void test_trace_ii(struct st_event *ev, uint64_t a, uint64_t b)
{
    if (st_event_enabled(ev)) {
        struct st__record rec;
        if (st__simple_begin(&rec, ev, 16) == 0) {
            st__put_u64(&rec, a);
            st__put_u64(&rec, b);
            st__simple_commit(&rec);
        }
    }
}

static inline void test_trace_iis(struct st_event *ev, uint64_t a, uint64_t b, const char *s)
{
    if (st_event_enabled(ev)) {
        struct st__record rec;
        uint32_t sl = st__strlen(s);
        if (st__simple_begin(&rec, ev, 8 + 8 + 4 + (size_t)sl) == 0) {
            st__put_u64(&rec, a);
            st__put_u64(&rec, b);
            st__put_str(&rec, s, sl);
            st__simple_commit(&rec);
        }
    }
}

/* Argument kinds by event name, from a NULL-terminated list of groups. */
static inline const char *test_kinds(const char *name, void *opaque)
{
    struct st_group *const *groups = opaque;

    if (!strcmp(name, "dropped"))
        return "i";
    for (; *groups; groups++)
        for (uint32_t i = 0; i < (*groups)->count; i++)
            if (!strcmp((*groups)->events[i]->name, name))
                return (*groups)->events[i]->kinds;
    return NULL;
}

/* --- decoded traces, kept in memory for small tests -------------------- */

struct test_rec {
    int mapping, dropped;
    uint64_t id, ts, drop_count;
    uint32_t pid, nargs;
    char name[128];
    uint64_t u[V4_MAX_ARGS];
    char s[V4_MAX_STRLEN + 1]; /* the first string argument */
};

struct test_trace {
    struct test_rec *r;
    size_t n, cap;
    struct v4_summary sum;
};

static inline int test__collect_one(const struct v4_record *rec, void *opaque)
{
    struct test_trace *t = opaque;
    struct test_rec *x;
    int have_s = 0;

    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 256;
        t->r = realloc(t->r, t->cap * sizeof *t->r);
    }
    x = &t->r[t->n++];
    memset(x, 0, sizeof *x);
    x->mapping = rec->mapping;
    x->dropped = rec->dropped;
    x->id = rec->id;
    x->ts = rec->ts;
    x->drop_count = rec->drop_count;
    x->pid = rec->pid;
    x->nargs = rec->nargs;
    snprintf(x->name, sizeof x->name, "%s", rec->name ? rec->name : "");
    for (uint32_t i = 0; i < rec->nargs; i++) {
        x->u[i] = rec->args[i].u;
        if (rec->args[i].s && !have_s) {
            memcpy(x->s, rec->args[i].s, rec->args[i].slen);
            x->s[rec->args[i].slen] = '\0';
            have_s = 1;
        }
    }
    return 0;
}

/* Decodes path into t (groups: NULL-terminated). 0, or -1 with a diag line. */
static inline int test_collect(const char *path, struct st_group *const *groups, struct test_trace *t)
{
    struct v4_decoder d;
    int r;

    memset(t, 0, sizeof *t);
    memset(&d, 0, sizeof d);
    d.kinds = test_kinds;
    d.kinds_opaque = (void *)groups;
    d.visit = test__collect_one;
    d.visit_opaque = t;
    r = v4_decode_file(&d, path);
    t->sum = d.sum;
    if (r)
        diag("decoding %s: %s", path, d.err);
    v4_decoder_free(&d);
    return r;
}

static inline void test_trace_free(struct test_trace *t)
{
    free(t->r);
    memset(t, 0, sizeof *t);
}

/* Number of event records called name. */
static inline size_t test_count(const struct test_trace *t, const char *name)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += !t->r[i].mapping && !t->r[i].dropped && !strcmp(t->r[i].name, name);
    return n;
}

/* --- files and processes ------------------------------------------------ */

static char test_dir[512];
static pid_t test_dir_owner;

static inline int test__rm(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static inline void test_rmdir(void)
{
    /* Forked children inherit the atexit handler: only the creator removes. */
    if (test_dir[0] && getpid() == test_dir_owner)
        nftw(test_dir, test__rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* Creates a private temporary directory, removed at exit. */
static inline const char *test_tmpdir(void)
{
    const char *base = getenv("TMPDIR");

    snprintf(test_dir, sizeof test_dir, "%s/st-rt-XXXXXX", base && *base ? base : "/tmp");
    test_dir_owner = getpid();
    if (!mkdtemp(test_dir)) {
        perror("mkdtemp");
        exit(2);
    }
    if (!getenv("ST_TEST_KEEP"))
        atexit(test_rmdir);
    return test_dir;
}

/* test_dir/name, in one of a few rotating static buffers. */
static inline const char *test_path(const char *name)
{
    static char bufs[8][700];
    static int i;
    char *b = bufs[i++ & 7];
    snprintf(b, sizeof bufs[0], "%s/%s", test_dir, name);
    return b;
}

static inline int test_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static inline long long test_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static inline void test_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

/*
 * Runs this test binary again with argv (argv[0] included) and the
 * environment changes env ("NAME=value" sets, "NAME" unsets), stderr to
 * stderr_path when given, in directory cwd when given. Returns the wait
 * status, or -1.
 */
static inline int test_run_self_pid(char *const argv[], const char *const env[], const char *stderr_path,
                                    const char *cwd, pid_t *child)
{
    int status;
    pid_t pid = fork();

    if (pid < 0)
        return -1;
    if (child)
        *child = pid;
    if (pid == 0) {
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
        if (stderr_path) {
            int fd = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0)
                dup2(fd, 2);
        }
        if (cwd && chdir(cwd) != 0)
            _exit(126);
        execv("/proc/self/exe", argv);
        _exit(127);
    }
    if (waitpid(pid, &status, 0) < 0)
        return -1;
    return status;
}

static inline int test_run_self(char *const argv[], const char *const env[], const char *stderr_path,
                                const char *cwd)
{
    return test_run_self_pid(argv, env, stderr_path, cwd, NULL);
}

/* Events per thread for the heavy tests: smaller under sanitizers. */
#if defined(__SANITIZE_THREAD__)
#define TEST_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_UNDER_TSAN 1
#endif
#endif
#ifndef TEST_UNDER_TSAN
#define TEST_UNDER_TSAN 0
#endif

static inline unsigned long test_scale(unsigned long normal, unsigned long tsan)
{
    const char *e = getenv("ST_TEST_EVENTS");
    if (e && *e)
        return strtoul(e, NULL, 0);
    return TEST_UNDER_TSAN ? tsan : normal;
}

#endif /* ST_TEST_RT_TEST_H */
