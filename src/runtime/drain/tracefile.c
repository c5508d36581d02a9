/*
 * The trace file, seen from the program's threads: opening, switching,
 * flushing and status, and a fork child's own file. The writeout thread
 * does all the writing (writer.c); here a caller opens the file itself (so
 * an unwritable path is an error returned to it) and hands it over as an
 * "op":
 *
 *   caller:  file_lock -> open -> wr_lock: post op, ++req_seq, kick -> wait done_seq
 *   writer:  wr_lock: take op and req_seq -> I/O without locks -> wr_lock: done_seq
 *
 * A file is opened without O_TRUNC and truncated only when committed, so a
 * configuration that fails elsewhere leaves it untouched. Reopening the
 * file this process closed last (same device, inode and size) appends to
 * it instead of truncating, so `off` then `on` keeps what was written; QEMU
 * truncates and loses it. Records traced while the file is off stay in the
 * rings (and drop when full), as in QEMU.
 *
 * The file deleted, renamed or replaced while open: the writer keeps
 * writing to the file it opened, under whatever name it has now. Nothing
 * checks the name on each pass, on purpose: a rename by log rotation must
 * not lose records. Off and on again, or `trace-file set PATH`, opens the
 * path anew; a different file found there (not the one closed last) is
 * truncated and starts with a header and every mapping.
 *
 * fork(): the child writes its own file, trace-<childpid>, or F-<childpid>
 * for an explicit name F (not F.<childpid>: that could be a piece of F),
 * also when the parent's file was off (so the child can never truncate
 * the parent's), opened only when the child traces its first event, so
 * fork+exec leaves no empty file behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simpletrace/api.h>

#include "diag.h"
#include "drain.h"
#include "drain_internal.h"
#include "ring.h"

static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;

void st__file_lock(void)
{
    pthread_mutex_lock(&file_lock);
}

void st__file_unlock(void)
{
    pthread_mutex_unlock(&file_lock);
}

void st__default_name(char *buf, size_t len)
{
    snprintf(buf, len, "trace-%ld", (long)getpid());
}

void st__piece_name(char *buf, size_t len, const char *base, size_t base_len, uint64_t k)
{
    if (k)
        snprintf(buf, len, "%.*s.%llu", (int)base_len, base, (unsigned long long)k);
    else
        snprintf(buf, len, "%.*s", (int)base_len, base);
}

size_t st__current_name(char *buf, size_t len)
{
    char base[sizeof st__ws.name];
    size_t n;

    if (st__ws.name[0])
        snprintf(base, sizeof base, "%s", st__ws.name);
    else
        st__default_name(base, sizeof base);
    n = strlen(base);
    st__piece_name(buf, len, base, n, st__ws.piece);
    return n;
}

bool st__file_in_use(void)
{
    bool on;

    pthread_mutex_lock(&st__wr_lock);
    on = st__ws.enabled || st__ws.running;
    pthread_mutex_unlock(&st__wr_lock);
    return on;
}

/* --- prepare / commit / abort ------------------------------------------------- */

/* Opens p->path without truncating it; notes whether it is the file closed last. */
static int open_prepared(struct st__file_prep *p, const struct st__closed_file *last, char *err, size_t errlen)
{
    struct stat st;

    p->fd = open(p->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (p->fd >= 0)
        p->created = true;
    else if (errno == EEXIST)
        p->fd = open(p->path, O_WRONLY | O_CLOEXEC);
    if (p->fd < 0) {
        int e = -errno;
        st__errmsg(err, errlen, "cannot open trace file '%s': %s", p->path, st_strerror(e));
        return e;
    }
    if (last->valid && fstat(p->fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == last->dev &&
        st.st_ino == last->ino && (uint64_t)st.st_size == last->size) {
        p->append = true;
        p->mapped = last->mapped;
    }
    return 0;
}

int st__file_prepare(const char *path, struct st__file_prep *p, char *err, size_t errlen)
{
    struct st__closed_file last;
    bool same;
    int r;

    *p = (struct st__file_prep){.fd = -1, .set_name = path ? 1 : 0};
    if (st__ring_overwriting()) {
        /* The producers own their rings' tails in flight mode (ring.h). */
        st__errmsg(err, errlen, "no trace file in flight mode (flight=): use a snapshot");
        return -EINVAL;
    }
    if (path && strlen(path) >= sizeof p->path) {
        st__errmsg(err, errlen, "file '%.64s...': %s", path, st_strerror(-ENAMETOOLONG));
        return -ENAMETOOLONG;
    }
    pthread_mutex_lock(&st__wr_lock);
    if (path) {
        snprintf(p->path, sizeof p->path, "%s", path);
        p->base_len = strlen(p->path);
    } else {
        p->base_len = st__current_name(p->path, sizeof p->path);
        p->piece = st__ws.piece;
    }
    same = false;
    if (st__ws.enabled) {
        char cur[sizeof st__ws.name];
        st__current_name(cur, sizeof cur);
        same = strcmp(cur, p->path) == 0;
    }
    last = st__ws.last;
    r = same ? 0 : st__writer_start();
    p->started = r == 1;
    pthread_mutex_unlock(&st__wr_lock);
    if (r < 0) {
        st__errmsg(err, errlen, "cannot start the writeout thread: %s", st_strerror(r));
        return r;
    }
    if (same)
        return 0;
    if ((r = open_prepared(p, &last, err, errlen)) < 0)
        st__file_abort(p);
    return r;
}

void st__file_abort(struct st__file_prep *p)
{
    if (p->fd >= 0) {
        close(p->fd);
        if (p->created)
            unlink(p->path);
        p->fd = -1;
    }
    if (p->started) {
        pthread_mutex_lock(&st__wr_lock);
        st__writer_stop();
        pthread_mutex_unlock(&st__wr_lock);
        p->started = false;
    }
}

/* Sets the file name (path, or the default for NULL) and starts at its first piece; wr_lock held. */
static void set_name(const char *path)
{
    snprintf(st__ws.name, sizeof st__ws.name, "%s", path ? path : "");
    st__ws.piece = 0;
    st__ws.name_gen++;
}

/* Sets the name as the prepared file asks; wr_lock held. */
static void apply_name(const struct st__file_prep *p)
{
    if (p->set_name)
        set_name(p->set_name == 1 ? p->path : NULL);
}

/* Waits until the op slot is free; wr_lock held. */
static void wait_op_slot(void)
{
    while (st__ws.have_op && st__writer_alive())
        pthread_cond_wait(&st__wr_cond, &st__wr_lock);
}

void st__file_commit(struct st__file_prep *p, bool wait)
{
    pthread_mutex_lock(&st__wr_lock);
    if (p->fd < 0) { /* already the open file */
        apply_name(p);
        pthread_mutex_unlock(&st__wr_lock);
        return;
    }
    if (!p->append && ftruncate(p->fd, 0) < 0) {
        /* a device such as /dev/full: nothing to truncate */
    }
    wait_op_slot();
    st__ws.op = (struct st__op){.close = true, .fd = p->fd, .append = p->append, .mapped = p->mapped,
                                .base_len = p->base_len, .piece = p->piece};
    snprintf(st__ws.op.path, sizeof st__ws.op.path, "%s", p->path);
    st__ws.have_op = true;
    p->fd = -1;
    apply_name(p);
    st__ws.op.name_gen = st__ws.name_gen;
    st__ws.enabled = true;
    st__ws.lazy_open = false;
    __atomic_store_n(&st__lazy_flag, 0, __ATOMIC_RELAXED);
    st__ws.error = 0;
    st__writer_request(wait);
    pthread_mutex_unlock(&st__wr_lock);
}

void st__file_set_rotation(int64_t size, long keep)
{
    pthread_mutex_lock(&st__wr_lock);
    if (size >= 0)
        st__ws.rotate = (uint64_t)size;
    if (keep >= 0)
        st__ws.keep = (unsigned)keep;
    pthread_mutex_unlock(&st__wr_lock);
}

/* --- the operations of the public API ----------------------------------------- */

/* Drains and closes the file; file_lock held. */
static int file_disable(void)
{
    int r;

    pthread_mutex_lock(&st__wr_lock);
    st__ws.lazy_open = false;
    __atomic_store_n(&st__lazy_flag, 0, __ATOMIC_RELAXED);
    if (!st__ws.enabled) {
        pthread_mutex_unlock(&st__wr_lock);
        return 0;
    }
    st__ws.enabled = false;
    if (st__writer_alive()) {
        wait_op_slot();
        st__ws.op = (struct st__op){.close = true, .fd = -1};
        st__ws.have_op = true;
        st__writer_request(true);
    }
    r = st__ws.error;
    pthread_mutex_unlock(&st__wr_lock);
    return r;
}

/* Opens path (NULL: the current name) and makes it the trace file; file_lock held. */
static int file_open(const char *path, int set_name_to, bool wait, char *err, size_t errlen)
{
    struct st__file_prep prep;
    int r = st__file_prepare(path, &prep, err, errlen);

    if (r < 0)
        return r;
    if (set_name_to)
        prep.set_name = set_name_to;
    st__file_commit(&prep, wait);
    return 0;
}

int st__file_set_enabled(bool enabled)
{
    int r;

    st__file_lock();
    r = enabled ? file_open(NULL, 0, true, NULL, 0) : file_disable();
    st__file_unlock();
    return r;
}

int st__file_set_name(const char *path)
{
    char def[64];
    bool on;
    int r = 0;

    if (path && !*path)
        return -EINVAL;
    if (path && strlen(path) >= sizeof st__ws.name)
        return -ENAMETOOLONG;
    st__file_lock();
    pthread_mutex_lock(&st__wr_lock);
    on = st__ws.enabled;
    if (!on)
        set_name(path);
    pthread_mutex_unlock(&st__wr_lock);
    if (on) {
        st__default_name(def, sizeof def);
        r = file_open(path ? path : def, path ? 1 : 2, true, NULL, 0);
    }
    st__file_unlock();
    return r;
}

int st__file_flush(void)
{
    int r;

    pthread_mutex_lock(&st__wr_lock);
    if (!st__ws.enabled) {
        r = st__ws.lazy_open ? 0 : st__ws.error ? st__ws.error : -EBADF;
    } else {
        if (st__writer_alive())
            st__writer_request(true);
        r = st__ws.enabled ? 0 : st__ws.error;
    }
    pthread_mutex_unlock(&st__wr_lock);
    return r;
}

void st__file_status(char *path, size_t len, bool *enabled, int *error)
{
    pthread_mutex_lock(&st__wr_lock);
    st__current_name(path, len);
    *enabled = st__ws.enabled || st__ws.lazy_open;
    *error = st__ws.error;
    pthread_mutex_unlock(&st__wr_lock);
}

/* --- a fork child's own file ------------------------------------------------- */

void st__file_first_event(void)
{
    char err[4400];
    bool lazy;
    int r;

    if (!__atomic_load_n(&st__lazy_flag, __ATOMIC_RELAXED))
        return;
    st__file_lock();
    pthread_mutex_lock(&st__wr_lock);
    lazy = st__ws.lazy_open;
    pthread_mutex_unlock(&st__wr_lock);
    if (lazy && (r = file_open(NULL, 0, false, err, sizeof err)) < 0) {
        pthread_mutex_lock(&st__wr_lock);
        st__ws.lazy_open = false;
        __atomic_store_n(&st__lazy_flag, 0, __ATOMIC_RELAXED);
        st__ws.error = r;
        pthread_mutex_unlock(&st__wr_lock);
        st__diag("simpletrace", "%s", err);
    }
    st__file_unlock();
}

void st__file_fork_child(void)
{
    pthread_mutex_init(&file_lock, NULL);
}
