/*
 * crash=DIR: file-backed thread rings and the names file (layout and
 * invariants in crash_format.h). Nothing here runs on the tracing fast path: a
 * ring file is created on a thread's first event (a slow path that already
 * allocates), names are appended there and by the writer, and the writer
 * alone touches the anchors and the in-flight notes. The names file holds
 * what recover needs to make its trace self-describing too: the process's
 * description first, then each ID's mapping and declaration (describe.h).
 *
 * Lock order: crash_lock is a leaf: nothing else is taken while it is
 * held (the records are made from the registry before it is taken).
 *
 * Neither kind of file is opened through a symbolic link (O_NOFOLLOW): one
 * planted at the name would have its target truncated and overwritten. A
 * ring file refused so leaves the thread an ordinary ring (its records go
 * to the trace file as usual, but recover cannot see them); a names file
 * refused so is not written (recover names the events st_unknown_ID). Each
 * is said once, naming the link.
 */
#include "ring_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace_format.h"
#include "ring_internal.h"
#include "timestamp.h"
#include "describe.h"
#include "diag.h"
#include "fd_ident.h"
#include "dir_ready.h"
#include "no_follow.h"
#include "registry.h"
#include "who.h"

#include <simpletrace/api.h>

static pthread_mutex_t crash_lock = PTHREAD_MUTEX_INITIALIZER;
static char crash_dir[PATH_MAX]; /* "" = off; under crash_lock */
static int crash_flag;           /* atomic mirror: crash_dir is set */
static int names_fd = -1;        /* st-<pid>.names, opened on first use ... */
static struct st__fd_ident names_id; /* ... and its file (fd_ident.h: the program may close the descriptor) */
static uint32_t names_done;      /* IDs [0, names_done) are in it */
static bool names_refused;       /* the names file's name is a symbolic link: not written, said once */
static uint32_t unprotected;     /* threads whose ring DIR could not hold (atomic) */
static int first_error;          /* the -errno of the first such ring, or of the probe (atomic) */
static int said;                 /* the fallback was reported on stderr (atomic): once per process tree */
static uint64_t trace_dev, trace_ino; /* the trace file's identity, for new ring headers (atomics) */

/*
 * A ring DIR could not hold goes to anonymous memory: the thread traces on,
 * but recover will find nothing of it. That must not be silent (issue 21):
 * one line, the first time, naming DIR and the error; the exit report and
 * st_stats count the threads.
 */
static void say_fallback(const char *dir, int err, size_t ring_size)
{
    char who[320] = "";
    int expected = 0;

    if (!__atomic_compare_exchange_n(&first_error, &expected, err, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        err = expected;
    if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        return;
    /* Permissions: a worker that dropped its privileges; say which process and user could not. */
    if (err == -EACCES || err == -EPERM)
        st__who(who, sizeof who, true);
    st__diag("simpletrace", "crash=%s: cannot keep a thread buffer of %zu bytes there (%s%s%s): threads trace to "
             "memory instead, and simpletrace recover cannot rebuild their records after a crash", dir, ring_size,
             st_strerror(err), who[0] ? " for " : "", who);
}

void st__ring_file_set_trace_id(uint64_t dev, uint64_t ino)
{
    __atomic_store_n(&trace_dev, dev, __ATOMIC_RELAXED);
    __atomic_store_n(&trace_ino, ino, __ATOMIC_RELAXED);
}

void st__ring_file_note_trace(struct st__ring *b, uint64_t dev, uint64_t ino)
{
    struct st__crash_hdr *h = b->file_hdr;

    if (h->file_dev == dev && h->file_ino == ino)
        return;
    h->file_dev = dev;
    h->file_ino = ino;
}

uint32_t st__ring_file_unprotected(int *error)
{
    if (error)
        *error = __atomic_load_n(&first_error, __ATOMIC_RELAXED);
    return __atomic_load_n(&unprotected, __ATOMIC_RELAXED);
}

void st__ring_file_probe(size_t ring_size)
{
    char dir[PATH_MAX], path[PATH_MAX + 64];
    size_t buf_bytes = (sizeof(struct st__ring) + 4095) & ~(size_t)4095;
    int fd, err = 0;

    pthread_mutex_lock(&crash_lock);
    snprintf(dir, sizeof dir, "%s", crash_dir);
    pthread_mutex_unlock(&crash_lock);
    if (!dir[0])
        return;
    /* Not st-*.ring: recover must never take the probe for a ring. */
    snprintf(path, sizeof path, "%s/.st-%ld.probe", dir, (long)getpid());
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, ST__OWNER_FILE_MODE);
    if (fd < 0)
        err = -errno;
    else {
        err = -posix_fallocate(fd, 0, (off_t)(ST_CRASH_HDR_SIZE + buf_bytes + ring_size));
        close(fd);
        unlink(path);
    }
    if (err)
        say_fallback(dir, err, ring_size);
}

bool st__ring_file_lock_free(void)
{
    if (pthread_mutex_trylock(&crash_lock) != 0)
        return false;
    pthread_mutex_unlock(&crash_lock);
    return true;
}

bool st__ring_file_on(void)
{
    return __atomic_load_n(&crash_flag, __ATOMIC_RELAXED) != 0;
}

void st__ring_file_set_dir(const char *dir)
{
    pthread_mutex_lock(&crash_lock);
    snprintf(crash_dir, sizeof crash_dir, "%s", dir);
    __atomic_store_n(&crash_flag, crash_dir[0] != '\0', __ATOMIC_RELAXED);
    names_refused = false;
    pthread_mutex_unlock(&crash_lock);
}

/*
 * Opens the names file (crash_lock held) and writes desc, the process's
 * description, first: recover copies it into the trace it rebuilds. A
 * failed write leaves the file without one (recover then says only the pid).
 */
static void names_open(const struct st__growbuf *desc)
{
    char path[PATH_MAX + 64];

    if (names_refused)
        return;
    snprintf(path, sizeof path, ST_CRASH_NAMES_FMT, crash_dir, (long)getpid());
    names_fd = st__fd_keep(open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
                                ST__OWNER_FILE_MODE)); /* never 0, 1 or 2 (fd_ident.h) */
    if (names_fd < 0 && st__link_refused(path, -errno)) {
        names_refused = true; /* every writer pass would try again: once is enough */
        st__diag("simpletrace", "crash names file '%s' " ST__NO_FOLLOW_WHY "; recover will name the events "
                 "st_unknown_ID", path);
        return;
    }
    st__fd_ident_get(names_fd, &names_id);
    if (names_fd >= 0 && desc->len && write(names_fd, desc->data, desc->len) != (ssize_t)desc->len)
        if (ftruncate(names_fd, 0) != 0) { /* a cut description would hide every name after it */
            close(names_fd);
            names_fd = -1;
        }
}

/*
 * Writes the records of IDs [first, first + n) in batch (ends[i]: where ID
 * i's end) with one write(); returns how many IDs it holds whole. Disk
 * full: recover names what it lacks "st_unknown_ID".
 */
/*
 * True when names_fd is still the names file (crash_lock held), opened
 * again by its name if the program closed the descriptor (a daemon
 * closing every descriptor at start-up); else the file is given up, said
 * once, and its number left to the program.
 */
static bool names_fd_ours(void)
{
    char path[PATH_MAX + 64], who[320];
    int fd, e;

    if (st__fd_is(names_fd, &names_id))
        return true;
    snprintf(path, sizeof path, ST_CRASH_NAMES_FMT, crash_dir, (long)getpid());
    fd = st__fd_keep(open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC));
    e = fd < 0 ? -errno : -ESTALE;
    if (fd >= 0 && st__fd_is(fd, &names_id)) {
        names_fd = fd;
        return true;
    }
    if (fd >= 0)
        close(fd);
    st__who(who, sizeof who, false);
    st__diag("simpletrace", "%s closed descriptor %d, its crash names file '%s', which cannot be opened again (%s); "
             "recover will name the events registered from now on st_unknown_ID", who, names_fd, path,
             e == -ESTALE ? "another file has its name now" : st_strerror(e));
    names_fd = -1;
    names_refused = true; /* said once: not tried again */
    return false;
}

static uint32_t names_put(const struct st__growbuf *batch, const size_t *ends, uint32_t n)
{
    ssize_t w = names_fd_ours() ? write(names_fd, batch->data, batch->len) : -1;
    uint32_t whole = 0;

    while (w > 0 && whole < n && ends[whole] <= (size_t)w)
        whole++;
    return whole;
}

/*
 * Appends the mapping and declaration of the IDs not yet in the names file,
 * 64 IDs at a time: the records are made from the registry (reg_lock) with
 * crash_lock not held, then written under it if nobody wrote those IDs
 * meanwhile. The file starts with the description, made the same way.
 */
void st__ring_file_sync_names(void)
{
    struct st__growbuf desc = {0}, batch = {0};
    bool have_desc = false;
    int saved = errno;

    if (!st__ring_file_on())
        return;
    for (;;) {
        const char *names[64];
        size_t ends[64];
        uint32_t count = st__reg_count(), first, n;
        bool opened, refused;

        pthread_mutex_lock(&crash_lock);
        first = names_done;
        opened = names_fd >= 0;
        refused = names_refused;
        pthread_mutex_unlock(&crash_lock);
        if (first >= count || refused)
            break;
        n = st__reg_names(first, names, count - first < 64 ? count - first : 64);
        if (n == 0)
            break;
        if (!opened && !have_desc) {
            st__describe_process(&desc, false);
            have_desc = true;
        }
        batch.len = 0;
        for (uint32_t i = 0; i < n; i++) {
            st__describe_event(&batch, first + i, names[i]);
            ends[i] = batch.len;
        }
        if (batch.failed)
            break;
        pthread_mutex_lock(&crash_lock);
        if (names_fd < 0 && crash_dir[0] && have_desc)
            names_open(&desc);
        if (names_fd < 0 || names_done != first) {
            bool stop = names_fd < 0 && (have_desc || !crash_dir[0]);
            pthread_mutex_unlock(&crash_lock);
            if (stop)
                break;
            continue; /* another thread wrote them (or the file is to open): look again */
        }
        n = names_put(&batch, ends, n);
        names_done = first + n;
        pthread_mutex_unlock(&crash_lock);
        if (n < 64 && first + n < count)
            break;
    }
    st__growbuf_free(&desc);
    st__growbuf_free(&batch);
    errno = saved;
}

struct st__ring *st__ring_file_create(size_t ring_size, uint32_t tid)
{
    char path[PATH_MAX + 64];
    size_t buf_bytes, len;
    struct st__crash_hdr *h;
    struct st__clock_anchor start, now;
    struct st__ring *b;
    uint8_t *base;
    int fd;

    char dir[PATH_MAX];
    int err;

    pthread_mutex_lock(&crash_lock);
    if (!crash_dir[0]) {
        pthread_mutex_unlock(&crash_lock);
        return NULL;
    }
    snprintf(dir, sizeof dir, "%s", crash_dir);
    pthread_mutex_unlock(&crash_lock);
    snprintf(path, sizeof path, ST_CRASH_RING_FMT, dir, (long)getpid(), (unsigned long)tid);
    /*
     * The file's name lives in the mapping, after the struct, not on the
     * heap: a ring a thread makes after the exit handler went over them
     * keeps its file (its records are for recover), and would leak it.
     */
    buf_bytes = (sizeof(struct st__ring) + strlen(path) + 1 + 4095) & ~(size_t)4095;
    len = ST_CRASH_HDR_SIZE + buf_bytes + ring_size;
    st__ring_file_sync_names();
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, ST__OWNER_FILE_MODE);
    if (fd < 0) {
        err = -errno;
        if (!st__link_refused(path, err))
            goto fail;
        st__diag("simpletrace", "crash ring file '%s' " ST__NO_FOLLOW_WHY "; this thread's records are not "
                 "kept for recover", path);
        __atomic_fetch_add(&unprotected, 1, __ATOMIC_RELAXED); /* said: not the fallback's message too */
        __atomic_compare_exchange_n(&first_error, &(int){0}, err, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        errno = -err;
        return NULL;
    }
    /* posix_fallocate, not ftruncate: a full disk must fail now, not as SIGBUS in the hot path. */
    if ((err = -posix_fallocate(fd, 0, (off_t)len)) != 0) {
        close(fd);
        goto fail_unlink;
    }
    base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    err = -errno;
    close(fd);
    if (base == MAP_FAILED)
        goto fail_unlink;
    b = (struct st__ring *)(base + ST_CRASH_HDR_SIZE);
    b->file_path = (char *)(b + 1);
    memcpy(b->file_path, path, strlen(path) + 1);
    h = (struct st__crash_hdr *)base;
    b->file_hdr = h;
    b->file_len = len;
    b->ring = base + ST_CRASH_HDR_SIZE + buf_bytes;
    h->version = ST_CRASH_VERSION;
    h->hdr_size = ST_CRASH_HDR_SIZE;
    h->pid = (uint32_t)getpid();
    h->tid = tid;
    h->ring_off = ST_CRASH_HDR_SIZE + buf_bytes;
    h->ring_size = ring_size;
    h->head_off = ST_CRASH_HDR_SIZE + offsetof(struct st__ring, head);
    h->tail_off = ST_CRASH_HDR_SIZE + offsetof(struct st__ring, tail);
    h->pending_off = ST_CRASH_HDR_SIZE + offsetof(struct st__ring, pending_drop);
    h->clock_tsc = st__ts_is_tsc();
    h->file_dev = __atomic_load_n(&trace_dev, __ATOMIC_RELAXED);
    h->file_ino = __atomic_load_n(&trace_ino, __ATOMIC_RELAXED);
    start = st__ts_start();
    now = st__ts_sample();
    h->a_raw = start.raw;
    h->a_ns = start.ns;
    h->b_raw = now.raw;
    h->b_ns = now.ns;
    /* The magic last: a file without it is one we died creating. */
    __atomic_store_n(&h->magic, ST_CRASH_MAGIC, __ATOMIC_RELEASE);
    return b;

fail_unlink:
    unlink(path);
fail:
    __atomic_fetch_add(&unprotected, 1, __ATOMIC_RELAXED);
    say_fallback(dir, err, ring_size);
    errno = -err;
    return NULL;
}

void st__ring_file_release(struct st__ring *b, bool remove)
{
    if (remove && b->file_path)
        unlink(b->file_path);
    munmap(b->file_hdr, b->file_len); /* the name with it */
}

void st__ring_file_note_anchor(struct st__ring *b, uint64_t raw, uint64_t ns)
{
    struct st__crash_hdr *h = b->file_hdr;
    uint64_t seq = h->anchor_seq;

    __atomic_store_n(&h->anchor_seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    h->b_raw = raw;
    h->b_ns = ns;
    __atomic_store_n(&h->anchor_seq, seq + 2, __ATOMIC_RELEASE);
}

void st__ring_file_inflight_begin(struct st__ring *b, uint64_t end, uint64_t drop, uint64_t off, uint64_t len,
                              uint64_t dev, uint64_t ino)
{
    struct st__crash_hdr *h = b->file_hdr;
    uint64_t seq = h->inflight_seq;

    h->inflight_end = end;
    h->inflight_drop = drop;
    h->inflight_off = off;
    h->inflight_len = len;
    h->file_dev = dev;
    h->file_ino = ino;
    __atomic_store_n(&h->inflight_seq, seq | 1, __ATOMIC_RELEASE);
}

void st__ring_file_inflight_end(struct st__ring *b)
{
    struct st__crash_hdr *h = b->file_hdr;

    __atomic_store_n(&h->inflight_seq, (h->inflight_seq | 1) + 1, __ATOMIC_RELEASE);
}

void st__ring_file_fork_child(void)
{
    st__fd_close_if(names_fd, &names_id); /* not a number the program has taken since */
    names_fd = -1;
    names_done = 0;
    names_refused = false; /* the child's names file has a name of its own */
    unprotected = 0; /* the child counts its own threads; the parent already said why */
    pthread_mutex_init(&crash_lock, NULL);
}

void st__ring_file_exit(void)
{
    char path[PATH_MAX + 64];
    unsigned kept = 0;

    if (!st__ring_file_on())
        return;
    st__ring_lock();
    for (struct st__ring *r = st__rings; r; r = r->next) {
        if (!r->file_hdr)
            continue;
        if (__atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) == __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) &&
            !__atomic_load_n(&r->pending_drop, __ATOMIC_RELAXED) && r->file_path)
            unlink(r->file_path);
        else
            kept++;
        r->file_path = NULL; /* the writer is gone: nothing removes it again */
    }
    st__ring_unlock();
    if (kept)
        return;
    pthread_mutex_lock(&crash_lock);
    if (names_fd >= 0) {
        snprintf(path, sizeof path, ST_CRASH_NAMES_FMT, crash_dir, (long)getpid());
        unlink(path);
    }
    pthread_mutex_unlock(&crash_lock);
}
