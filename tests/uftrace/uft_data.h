/*
 * What the tests of src/uftrace share: a scratch directory, and a
 * uftrace.data directory made with the writers (uftrace_write.h) whose
 * every call is known: one process, /x/app (pid 4001, one thread), whose
 * main calls work twice, 1 us each, main 5 us in all.
 */
#ifndef ST_TEST_UFT_DATA_H
#define ST_TEST_UFT_DATA_H

#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uftrace_write.h"

#define UFT_PID 4001
#define UFT_SID "0123456789abcdef"
#define UFT_T0 UINT64_C(1000000000) /* ns */

/* A new empty directory under $TMPDIR (or /tmp), malloc'ed; NULL on failure. */
static inline char *uft_mkdtemp(void)
{
    const char *tmp = getenv("TMPDIR");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s/st-uftrace-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(buf) ? strdup(buf) : NULL;
}

static int uft_rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

/* Removes dir and everything in it. */
static inline void uft_rm_rf(const char *dir)
{
    nftw(dir, uft_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A memory stream the writers write into, then put into a file of the data directory. */
struct uft_mem {
    char *buf;
    size_t len;
    FILE *out;
};

static inline FILE *uft_open(struct uft_mem *m)
{
    m->buf = NULL;
    m->len = 0;
    return m->out = open_memstream(&m->buf, &m->len);
}

/* Closes m's stream and puts what it holds into file name of the directory open at dfd. 0 or -1. */
static inline int uft_put(int dfd, const char *name, struct uft_mem *m)
{
    int ret = -1;
    if (m->out && fclose(m->out) == 0 && m->buf && st__uft_put_file(dfd, name, m->buf, m->len) == 0)
        ret = 0;
    free(m->buf);
    return ret;
}

/* The records of thread 4001: main at 0x401000 calls work at 0x401040 twice. */
static inline void uft_records(uint64_t rec[6][2])
{
    static const struct {
        unsigned type, depth;
        uint64_t addr, us;
    } calls[6] = {{ST_UFT_REC_ENTRY, 0, 0x401000, 1}, {ST_UFT_REC_ENTRY, 1, 0x401040, 2},
                  {ST_UFT_REC_EXIT, 1, 0x401040, 3},  {ST_UFT_REC_ENTRY, 1, 0x401040, 4},
                  {ST_UFT_REC_EXIT, 1, 0x401040, 5},  {ST_UFT_REC_EXIT, 0, 0x401000, 6}};
    for (int i = 0; i < 6; i++) {
        rec[i][0] = UFT_T0 + 1000 * calls[i].us;
        rec[i][1] = st__uft_rec_data(calls[i].type, calls[i].depth, calls[i].addr);
    }
}

/* Makes the directory dir (new) with info, task.txt, the map, app.sym and 4001.dat. 0 or -1. */
static inline int uft_make_dir(const char *dir)
{
    int tids[] = {UFT_PID};
    struct st__uft_info info = {.exename = "/x/app", .cmdline = "app --run", .tids = tids, .ntids = 1,
                                .version = "uftrace-test"};
    uint64_t rec[6][2];
    int ret = -1, dfd;
    if (mkdir(dir, 0755) != 0 || (dfd = open(dir, O_RDONLY | O_DIRECTORY)) < 0)
        return -1;
    uft_records(rec);
    struct uft_mem m;
    FILE *out = uft_open(&m);
    if (!out || st__uft_info_write(out, &info) != 0 || uft_put(dfd, "info", &m) != 0)
        goto done;
    if (!(out = uft_open(&m)))
        goto done;
    st__uft_task_sess(out, UFT_T0, UFT_PID, UFT_SID, "/x/app");
    st__uft_task_task(out, UFT_T0, UFT_PID, UFT_PID);
    if (uft_put(dfd, "task.txt", &m) != 0 || !(out = uft_open(&m)))
        goto done;
    st__uft_map_line(out, 0x400000, 0x402000, "r-xp", "/x/app");
    st__uft_map_stack(out);
    if (uft_put(dfd, "sid-" UFT_SID ".map", &m) != 0 || !(out = uft_open(&m)))
        goto done;
    struct st__uft_symw w = {0};
    st__uft_sym_add(&w, out, 0x1000, 0x40, "main");
    st__uft_sym_add(&w, out, 0x1040, 0x20, "work");
    st__uft_sym_finish(&w, out);
    if (uft_put(dfd, "app.sym", &m) == 0 && st__uft_put_file(dfd, "4001.dat", rec, sizeof rec) == 0)
        ret = 0;
done:
    close(dfd);
    return ret;
}

#endif /* ST_TEST_UFT_DATA_H */
