/*
 * The trace file, seen from the program's threads: opening, switching,
 * flushing and status, and a fork child's own file. The drain's passes do
 * all the writing (writer.c); here a caller opens the file itself (so an
 * unwritable path is an error returned to it) and hands it over as an
 * "op":
 *
 *   caller:  file_lock -> open -> wr_lock: post op, ++req_seq, kick -> wait done_seq
 *   writer:  pass_lock -> wr_lock: take op and req_seq -> I/O -> wr_lock: done_seq
 *
 * where the writer is the writeout thread or, without it (writer=auto
 * while one thread traces, writer=inline), the caller itself, which runs
 * that step in st__writer_request() before it returns.
 *
 * Never through a symbolic link: one found at the name (the file, the
 * piece reopened, dir='s file, the fallback name) is refused, saying so,
 * as an unopenable file is (O_NOFOLLOW: someone may have planted it to
 * have the program truncate the link's target).
 *
 * A file is opened without O_TRUNC and truncated only when committed, so a
 * configuration that fails elsewhere leaves it untouched. Reopening the
 * file this process closed last (same device, inode and size) appends to
 * it instead of truncating, so `off` then `on` keeps what was written; QEMU
 * truncates and loses it. Records traced while the file is off stay in the
 * rings (and drop when full), as in QEMU.
 *
 * Names: the configured name is a template (name_template.h: %p, %e, %h,
 * %t, %%), expanded when the file is opened; the expansion is the name
 * from then on (off and on again reopen it), and what status reports.
 *
 * One writer per name: two unrelated processes given the same file= would
 * interleave their records. So the name being written (FILE itself, also
 * while rotate= writes FILE.N: the pieces belong to FILE's holder) carries
 * an advisory flock(LOCK_EX|LOCK_NB), taken before anything is truncated,
 * on a descriptor of its own ("held"), kept until the file is turned off,
 * switched (the writer closes the old lock after the old file) or the
 * process ends. A process that finds the name locked leaves that file
 * alone and writes FILE-<pid> (locked too), saying so in one line on
 * stderr. Only regular files are locked (/dev/null is shared on purpose).
 * With rotate-keep, once FILE itself is removed its lock protects nothing.
 *
 * The file deleted, renamed or replaced while open: the writer keeps
 * writing to the file it opened, under whatever name it has now. Nothing
 * checks the name on each pass, on purpose: a rename by log rotation must
 * not lose records. Off and on again, or `trace-file set PATH`, opens the
 * path anew; a different file found there (not the one closed last) is
 * truncated and starts with a header and every mapping.
 *
 * fork(): the child writes its own file: the template re-expanded when it
 * holds %p, else the parent's template with -%p appended (trace-<childpid>,
 * or F-<childpid> for an explicit name F; not F.<childpid>: that could be
 * a piece of F), also when the parent's file was off (so the child can
 * never truncate the parent's), opened only when the child traces its
 * first event, so fork+exec leaves no empty file behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <simpletrace/api.h>

#include "diag.h"
#include "dir_ready.h"
#include "drain.h"
#include "drain_internal.h"
#include "fd_ident.h"
#include "name_template.h"
#include "no_follow.h"
#include "piece_format.h"
#include "ring.h"
#include "ring_consumer.h"
#include "who.h"

/* The name used when none was set. */
#define DEFAULT_TMPL "trace-%p"

static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;

/* The lock on the name being written (file_lock held): its descriptor and file (fd_ident.h: the program may close it). */
static struct {
    int fd;
    struct st__fd_ident id;
} held = {.fd = -1};

void st__file_lock(void)
{
    pthread_mutex_lock(&file_lock);
}

void st__file_unlock(void)
{
    pthread_mutex_unlock(&file_lock);
}

int st__file_expand(const char *tmpl, char *buf, size_t len, char *err, size_t errlen)
{
    struct st__name_vars v;

    st__name_vars_get(&v, st__ws.start);
    return st__name_expand(*tmpl ? tmpl : DEFAULT_TMPL, &v, buf, len, err, errlen);
}

/*
 * A trace file's template anchored in the current directory ("" is the
 * default, trace-%p): file names are absolute from when they are
 * configured, so that a chdir() later (a daemon's, to "/"), its fork
 * children and its rotation pieces all keep to the directory they were
 * configured in, as dir= does. 0, or -errno with a message.
 */
static int anchored(const char *tmpl, char *buf, size_t len, char *err, size_t errlen)
{
    int r = st__name_absolute(*tmpl ? tmpl : DEFAULT_TMPL, buf, len);

    if (r < 0)
        st__errmsg(err, errlen, "trace file '%.200s' relative to the current directory: %s", *tmpl ? tmpl : DEFAULT_TMPL,
                   st_strerror(r));
    return r;
}

/* The current name without its piece: the expansion made at open, else the template's now; wr_lock held. */
static int current_base(char *buf, size_t len, char *err, size_t errlen)
{
    char tmpl[sizeof st__ws.tmpl];
    int r;

    if (st__ws.name[0]) {
        snprintf(buf, len, "%s", st__ws.name);
        return 0;
    }
    if ((r = anchored(st__ws.tmpl, tmpl, sizeof tmpl, err, errlen)) < 0)
        return r;
    return st__file_expand(tmpl, buf, len, err, errlen);
}

size_t st__current_name(char *buf, size_t len)
{
    char base[sizeof st__ws.name];
    size_t n;

    if (current_base(base, sizeof base, NULL, 0) < 0)
        snprintf(base, sizeof base, "%s", st__ws.tmpl); /* too long expanded: opening it says so */
    n = strlen(base);
    st__piece_format(buf, len, base, n, st__ws.piece);
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

void st__file_remove_unwritten(void)
{
    struct st__drain_counters dc;
    char path[sizeof st__ws.name];

    st__drain_counters(&dc);
    if (dc.written || dc.dropped_reported)
        return;
    pthread_mutex_lock(&st__wr_lock);
    /* Only once the writer has ended: nothing can write the file any more. */
    bool remove = st__ws.exited && st__ws.name[0] && st__ws.piece == 0;
    if (remove)
        st__current_name(path, sizeof path);
    pthread_mutex_unlock(&st__wr_lock);
    if (remove)
        unlink(path);
}

/* --- the lock on the name ------------------------------------------------------ */

/* The process holding a flock() on st's file, from /proc/locks; 0 when unknown (it may miss a lock just taken). */
static long lock_holder(const struct stat *st)
{
    FILE *f = fopen("/proc/locks", "re");
    char line[256], kind[16], mode[16];
    unsigned maj, min;
    unsigned long ino;
    long pid, found = 0;

    if (!f)
        return 0;
    /* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters' lines have "->" where FLOCK is. */
    while (!found && fgets(line, sizeof line, f))
        if (sscanf(line, "%*d: %15s %*s %15s %ld %x:%x:%lu", kind, mode, &pid, &maj, &min, &ino) == 6 &&
            !strcmp(kind, "FLOCK") && !strcmp(mode, "WRITE") && maj == major(st->st_dev) &&
            min == minor(st->st_dev) && ino == (unsigned long)st->st_ino && pid > 0)
            found = pid;
    fclose(f);
    return found;
}

/* True when path is the file whose lock this process holds. */
static bool held_is(const char *path)
{
    struct stat st;

    return held.fd >= 0 && stat(path, &st) == 0 && (uint64_t)st.st_dev == held.id.dev &&
           (uint64_t)st.st_ino == held.id.ino;
}

/* The message for a trace file (or piece) that could not be opened: a symbolic link says so. */
static void say_cannot_open(const char *path, int e, char *err, size_t errlen)
{
    if (st__link_refused(path, e))
        st__errmsg(err, errlen, "trace file '%s' " ST__NO_FOLLOW_WHY, path);
    else
        st__errmsg(err, errlen, "cannot open trace file '%s': %s", path, st_strerror(e));
}

/*
 * Opens path (creating it with create) without truncating it and takes its
 * lock into p->lock_fd: 0 (also for a file that is not a regular one, not
 * locked), -EWOULDBLOCK when another process holds it (*st then says which
 * file), or -errno of open().
 */
static int try_lock(const char *path, bool create, struct st__file_prep *p, struct stat *st)
{
    /* st__fd_keep: never 0, 1 or 2, which a program that closed them reopens as its own (fd_ident.h). */
    int fd = create ? st__fd_keep(open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, ST__OWNER_FILE_MODE))
                    : -1;
    bool created = fd >= 0;

    /* Never through a symbolic link: it would truncate its target (no_follow.h). */
    if (fd < 0 && (!create || errno == EEXIST))
        fd = st__fd_keep(open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
    if (fd < 0)
        return -errno;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        return 0;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
        close(fd);
        return e;
    }
    p->lock_fd = fd;
    p->lock_created = created;
    return 0;
}

/* Locks the fallback name, wanted-<pid>, and makes it p's file. 0, or -errno with a message. */
static int lock_fallback(struct st__file_prep *p, const struct stat *taken, char *err, size_t errlen)
{
    struct stat st;
    int n, r;

    snprintf(p->wanted, sizeof p->wanted, "%.*s", (int)p->base_len, p->path);
    n = snprintf(p->path, sizeof p->path, "%s-%ld", p->wanted, (long)getpid());
    if (n >= (int)sizeof p->path) {
        st__errmsg(err, errlen, "trace file '%s' is locked by another process, and '%s-%ld' is too long",
                   p->wanted, p->wanted, (long)getpid());
        return -ENAMETOOLONG;
    }
    p->holder = lock_holder(taken);
    p->base_len = (size_t)n;
    p->piece = 0;
    p->fell_back = true;
    if ((p->lock_kept = held_is(p->path)))
        return 0;
    if ((r = try_lock(p->path, true, p, &st)) < 0)
        st__errmsg(err, errlen, "trace file '%s' is locked by another process, and '%s': %s", p->wanted, p->path,
                   r == -EWOULDBLOCK              ? "locked too"
                   : st__link_refused(p->path, r) ? ST__NO_FOLLOW_WHY
                                                  : st_strerror(r));
    return r == -EWOULDBLOCK ? -EBUSY : r;
}

/*
 * Takes the lock on p's name (the base, also when p->path is a later
 * piece) unless this process holds it; when another process does, p
 * becomes the fallback. 0, or -errno with a message.
 */
static int lock_name(struct st__file_prep *p, char *err, size_t errlen)
{
    char base[sizeof p->path];
    struct stat st;
    int r;

    snprintf(base, sizeof base, "%.*s", (int)p->base_len, p->path);
    if ((p->lock_kept = held_is(base)))
        return 0;
    /* A later piece's FILE is not created: rotate-keep may have removed it. */
    r = try_lock(base, p->piece == 0, p, &st);
    if (r == -ENOENT && p->piece)
        return 0;
    if (r == -EWOULDBLOCK)
        return lock_fallback(p, &st, err, errlen);
    if (r < 0)
        say_cannot_open(base, r, err, errlen);
    return r;
}

/* --- prepare / commit / abort ------------------------------------------------- */

/* Opens p->path without truncating it; notes whether it is the file closed last. */
static int open_prepared(struct st__file_prep *p, const struct st__closed_file *last, char *err, size_t errlen)
{
    struct stat st;

    p->fd = st__fd_keep(open(p->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, ST__OWNER_FILE_MODE));
    if (p->fd >= 0)
        p->created = true;
    else if (errno == EEXIST)
        p->fd = st__fd_keep(open(p->path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
    if (p->fd < 0) {
        int e = -errno;
        say_cannot_open(p->path, e, err, errlen);
        return e;
    }
    if (last->valid && fstat(p->fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == last->dev &&
        st.st_ino == last->ino && (uint64_t)st.st_size == last->size) {
        p->append = true;
        p->mapped = last->mapped;
    }
    return 0;
}

/* p->path from path (a template, expanded now) or the current name. 0, or -errno with a message. */
static int prepared_name(const char *path, struct st__file_prep *p, char *err, size_t errlen)
{
    char why[160];
    int r;

    if (path || !st__ws.name[0]) {
        /* A name not opened yet: anchored now, and kept so (fork children expand it again). */
        if ((r = anchored(path ? path : st__ws.tmpl, p->tmpl, sizeof p->tmpl, err, errlen)) < 0)
            return r;
        if (!p->set_name)
            p->set_name = 1;
        r = st__file_expand(p->tmpl, p->path, sizeof p->path, why, sizeof why);
    } else {
        r = current_base(p->path, sizeof p->path, why, sizeof why);
    }
    if (r < 0) {
        st__errmsg(err, errlen, "invalid file '%.200s': %s", path ? path : st__ws.tmpl, why);
        return r;
    }
    p->base_len = strlen(p->path);
    if (!path && st__ws.piece) {
        char base[sizeof p->path];
        memcpy(base, p->path, p->base_len + 1);
        p->piece = st__ws.piece;
        st__piece_format(p->path, sizeof p->path, base, p->base_len, p->piece);
    }
    return 0;
}

/* True when p->path is the file being written; wr_lock held. */
static bool is_open_file(const struct st__file_prep *p)
{
    char cur[sizeof st__ws.name];

    if (!st__ws.enabled)
        return false;
    st__current_name(cur, sizeof cur);
    return strcmp(cur, p->path) == 0;
}

int st__file_prepare(const char *path, struct st__file_prep *p, char *err, size_t errlen)
{
    struct st__closed_file last = {.valid = false};
    bool same = false;
    int r;

    *p = (struct st__file_prep){.fd = -1, .lock_fd = -1, .set_name = path ? 1 : 0};
    if (st__ring_overwriting()) {
        /* The producers own their rings' tails in flight mode (ring.h). */
        st__errmsg(err, errlen, "no trace file in flight mode (flight=): use a snapshot");
        return -EINVAL;
    }
    pthread_mutex_lock(&st__wr_lock);
    r = prepared_name(path, p, err, errlen);
    if (r == 0) {
        same = is_open_file(p);
        last = st__ws.last;
        r = same ? 0 : st__writer_start();
        p->started = r == 1;
        if (r < 0)
            st__errmsg(err, errlen, "cannot start the writeout thread: %s", st_strerror(r));
    }
    pthread_mutex_unlock(&st__wr_lock);
    if (r < 0)
        return r;
    if (same)
        return 0;
    if ((r = lock_name(p, err, errlen)) == 0 && p->fell_back) {
        /* Falling back to the file already being written (file= given again): nothing to open. */
        pthread_mutex_lock(&st__wr_lock);
        same = is_open_file(p);
        pthread_mutex_unlock(&st__wr_lock);
        if (same) {
            p->fell_back = false;
            return 0;
        }
    }
    if (r < 0 || (r = open_prepared(p, &last, err, errlen)) < 0)
        st__file_abort(p);
    return r;
}

void st__file_abort(struct st__file_prep *p)
{
    if (p->fd >= 0) {
        close(p->fd);
        p->fd = -1;
    }
    if (p->created || p->lock_created)
        unlink(p->path);
    p->created = p->lock_created = false;
    if (p->lock_fd >= 0) {
        close(p->lock_fd);
        p->lock_fd = -1;
    }
    if (p->started) {
        pthread_mutex_lock(&st__wr_lock);
        st__writer_stop();
        pthread_mutex_unlock(&st__wr_lock);
        p->started = false;
    }
}

/* Sets the name template (path, or the default for NULL), expanded when opened, at its first piece; wr_lock held. */
static void set_name(const char *path)
{
    snprintf(st__ws.tmpl, sizeof st__ws.tmpl, "%s", path ? path : "");
    st__ws.name[0] = '\0';
    st__ws.piece = 0;
    st__ws.name_gen++;
}

/* Makes the prepared file's name (and template, when it sets one) the current ones; wr_lock held. */
static void apply_name(const struct st__file_prep *p)
{
    if (p->set_name)
        snprintf(st__ws.tmpl, sizeof st__ws.tmpl, "%s", p->tmpl);
    if (!p->set_name && !p->fell_back && st__ws.name[0])
        return; /* the current name, reopened */
    snprintf(st__ws.name, sizeof st__ws.name, "%.*s", (int)p->base_len, p->path);
    st__ws.piece = p->piece;
    st__ws.name_gen++;
}

/* Waits until the op slot is free (an op posted without waiting is taken by a pass); wr_lock held. */
static void wait_op_slot(void)
{
    while (st__ws.have_op && st__writer_alive())
        st__writer_request(true);
}

/* The prepared file's lock becomes the held one; the old lock's descriptor to close (or -1) into *old. */
static void take_lock(struct st__file_prep *p, int *old, struct st__fd_ident *old_id)
{
    *old = -1;
    if (p->lock_kept)
        return;
    *old = held.fd;
    *old_id = held.id;
    held.fd = p->lock_fd;
    st__fd_ident_get(held.fd, &held.id);
    p->lock_fd = -1;
}

/* The one line that says this process writes another name than it was given, and why. */
static void say_fell_back(const struct st__file_prep *p)
{
    if (p->holder)
        st__diag("simpletrace", "%s is being written by process %ld (locked); this process writes %s", p->wanted,
                 p->holder, p->path);
    else
        st__diag("simpletrace", "%s is being written by another process (locked); this process writes %s",
                 p->wanted, p->path);
}

void st__file_commit(struct st__file_prep *p, bool wait)
{
    struct st__fd_ident id;

    pthread_mutex_lock(&st__wr_lock);
    if (p->fd < 0) { /* already the open file */
        apply_name(p);
        pthread_mutex_unlock(&st__wr_lock);
        return;
    }
    if (!p->append && ftruncate(p->fd, 0) < 0) {
        /* a device such as /dev/full: nothing to truncate */
    }
    st__fd_ident_get(p->fd, &id);
    if (id.ino != UINT64_MAX) /* crash=DIR: rings made from now on name it, written to or not */
        st__ring_cons_trace_file(id.dev, id.ino);
    wait_op_slot();
    st__ws.op = (struct st__op){.close = true, .fd = p->fd, .id = id, .append = p->append, .mapped = p->mapped,
                                .base_len = p->base_len, .piece = p->piece};
    take_lock(p, &st__ws.op.unlock_fd, &st__ws.op.unlock_id);
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
    if (p->fell_back)
        say_fell_back(p);
}

void st__file_set_compress(bool on, int level, bool fixed)
{
    pthread_mutex_lock(&st__wr_lock);
    st__ws.compress = on;
    st__ws.compress_level = level;
    st__ws.compress_fixed = fixed;
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

/* Lets go of the lock on the name; file_lock held, the file closed. */
static void release_lock(void)
{
    st__fd_close_if(held.fd, &held.id); /* not when the program closed it and reused the number */
    held.fd = -1;
}

/* Drains and closes the file; file_lock held. */
static int file_disable(void)
{
    int r;

    pthread_mutex_lock(&st__wr_lock);
    st__ws.lazy_open = false;
    __atomic_store_n(&st__lazy_flag, 0, __ATOMIC_RELAXED);
    if (!st__ws.enabled) {
        pthread_mutex_unlock(&st__wr_lock);
        release_lock(); /* writing stopped after an error: the file is closed */
        return 0;
    }
    st__ws.enabled = false;
    if (st__writer_alive()) {
        wait_op_slot();
        st__ws.op = (struct st__op){.close = true, .fd = -1, .unlock_fd = -1};
        st__ws.have_op = true;
        st__writer_request(true);
    }
    release_lock(); /* after the writer closed the file (st__writer_request waited) */
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
    char name[sizeof st__ws.name], abs[sizeof st__ws.tmpl];
    bool on;
    int r = 0;

    if (path && !*path)
        return -EINVAL;
    if (path && strlen(path) >= sizeof st__ws.tmpl)
        return -ENAMETOOLONG;
    if (path && (r = st__file_expand(path, name, sizeof name, NULL, 0)) < 0)
        return r; /* a bad placeholder, or too long expanded: nothing changes */
    if (path && (r = st__name_absolute(path, abs, sizeof abs)) < 0)
        return r;
    st__file_lock();
    pthread_mutex_lock(&st__wr_lock);
    on = st__ws.enabled;
    if (!on)
        set_name(path ? abs : NULL);
    pthread_mutex_unlock(&st__wr_lock);
    if (on)
        r = file_open(path ? path : DEFAULT_TMPL, path ? 1 : 2, true, NULL, 0);
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

/*
 * A fork child could not open its own file: one line naming the process,
 * its user (workers drop privileges after the fork) and the file, with
 * the directory's owner and mode when permissions refused it, so that
 * nothing later (the exit report) has to say it again.
 */
static void say_child_cannot_open(const char *err, const char *path, int e)
{
    char who[320], dir[sizeof st__ws.name], owner[256], hint[600] = "";
    const char *slash = strrchr(path, '/');
    struct stat st;

    st__who(who, sizeof who, true);
    if ((e == -EACCES || e == -EPERM) && slash) {
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
        if (stat(dir, &st) == 0) {
            if (!st__user_name((long)st.st_uid, owner, sizeof owner))
                snprintf(owner, sizeof owner, "uid %ld", (long)st.st_uid);
            snprintf(hint, sizeof hint, " (its directory %.200s belongs to %s (uid %ld), mode %04o)", dir, owner,
                     (long)st.st_uid, (unsigned)(st.st_mode & 07777));
        }
    }
    st__diag("simpletrace", "%s: %s%s; this process's events are not written", who, err, hint);
}

void st__file_first_event(void)
{
    char err[4400], path[sizeof st__ws.name];
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
        st__ws.open_failed = true;
        st__current_name(path, sizeof path);
        pthread_mutex_unlock(&st__wr_lock);
        say_child_cannot_open(err, path, r);
    }
    st__file_unlock();
}

bool st__file_open_failed(void)
{
    bool failed;

    pthread_mutex_lock(&st__wr_lock);
    failed = st__ws.open_failed;
    pthread_mutex_unlock(&st__wr_lock);
    return failed;
}

void st__file_fork_child(void)
{
    st__fd_close_if(held.fd, &held.id); /* our copy: the parent's lock stays, on its open file description */
    held.fd = -1;
    pthread_mutex_init(&file_lock, NULL);
}
