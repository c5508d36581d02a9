/*
 * Traces taken from the rings without consuming them: flight snapshots
 * (a file, flight mode) and the monitor's view of what is still in memory
 * (`info trace`). Both copy the rings (st__ring_peek, which validates its
 * copy against tail read again afterwards, so a producer overwriting
 * meanwhile only shortens what is kept, never tears a record), then write
 * what the writer would have written: a header, every mapping, the
 * records of all threads merged by time (merge.h), timestamps converted to
 * CLOCK_MONOTONIC ns and kept non-decreasing per thread. With
 * compress=zstd a snapshot file is compressed as a trace file is (zwrite.h:
 * frames of whole records, time index, seek table), under the same name.
 *
 * One conversion state serves every snapshot and view, and each takes a
 * clock knot after its newest record (st__ts_conv_update_past): a record
 * converts to the same ns in every snapshot and view that holds it while
 * its segment is kept (clock.h), so two views of the same records print
 * the same text. They may differ from the trace file, which the writer
 * converts with its own knots, by the clock's error over a segment (tens
 * of ns). Snapshots and views are serialised by snap_lock.
 *
 * Flight snapshots' dropped counts, exact. Number a thread's events 0, 1,
 * 2, ... in the order they enter its ring, a dropped record standing for
 * as many as it counts (nested and oversized drops). ow_evicted is the
 * number of events evicted so far, which under the overwrite policy
 * (nothing else consumes) is the index of the record at tail; the producer
 * changes both inside a seqlock, so the copy's validating tail comes with
 * the index of the first record kept. ow_next is the first event that no
 * snapshot held or counted. The dropped count of snapshot k for a thread
 * is then exactly the events in [ow_next, first held) (none when the copy
 * overlaps the previous one: records held twice are simply present twice;
 * when nothing of the ring survived the copy, the events below its tail),
 * and ow_next moves past what k holds once it is written (a failed
 * snapshot moves nothing). Read in order, a thread's snapshots and their
 * counts hold or count each of its events exactly once. Drops not yet
 * written into the ring (reported before the thread's next record) count
 * in a later snapshot. Lost drops (no ring, after the exit hook) are
 * counted on the lost ring, with pid ST_LOST_TID, and so are the events of
 * exited rings freed before a snapshot held them (the thread is gone and
 * its id may be reused). While a snapshot is between its copy and that
 * commit it holds off such freeing (st__ring_exited_hold), which would
 * count what it holds again. A snapshot's dropped records come first,
 * stamped with the time of its oldest record. ow_evicted and ow_next are
 * the ring's (core/ring_overwrite.c); this file asks for the counts
 * (st__ring_ow_unseen) and commits them (st__ring_ow_seen).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simpletrace/api.h>

#include "describe.h"
#include "diag.h"
#include "dir_ready.h"
#include "drain.h"
#include "drain_internal.h"
#include "merge.h"
#include "no_follow.h"
#include "registry.h"
#include "ring.h"
#include "ring_consumer.h"
#include "timestamp.h"
#include "trace_format.h"
#include "write_all.h"
#include "zwrite.h"

/* Largest view of what is in memory; older records beyond it are left out. */
#define VIEW_MAX ((size_t)64 << 20)

static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static struct st__clock_conv conv; /* snap_lock */
static struct st__merge merge;    /* snap_lock */
static unsigned snap_seq;         /* default snapshot names; snap_lock */

void st__snapshot_lock(void)
{
    pthread_mutex_lock(&snap_lock);
}

void st__snapshot_unlock(void)
{
    pthread_mutex_unlock(&snap_lock);
}

void st__snapshot_fork_child(void)
{
    pthread_mutex_init(&snap_lock, NULL);
}

/* --- a copy of the rings, merged --------------------------------------------- */

/* A copy of the rings (st__ring_peek) and where each ring's records are in it. */
struct copy {
    uint8_t *bytes;
    size_t len;
    struct st__ring_peeked *pi; /* npi entries */
    size_t npi;
};

static void copy_free(struct copy *c)
{
    free(c->bytes);
    free(c->pi);
}

/* Sink of the merge: a growable buffer. */
static uint8_t *buf_reserve(void *ctx, uint64_t need, uint64_t want, uint64_t *room)
{
    struct st__growbuf *b = ctx;
    uint8_t *at = st__growbuf_room(b, (size_t)want);

    *room = want;
    (void)need;
    return at;
}

static void buf_commit(void *ctx, struct st__merge_src *s, size_t n, uint64_t events, uint64_t drops)
{
    (void)s, (void)events, (void)drops;
    st__growbuf_commit(ctx, n);
}

/* Header, description, and a mapping and declaration for every registered ID: the start of every trace we write. */
static void put_head(struct st__growbuf *out)
{
    uint32_t count = st__reg_count(), id = 0;
    const char *names[64];
    uint8_t *p = st__growbuf_room(out, ST_HEADER_SIZE);

    if (p)
        st__growbuf_commit(out, st__fmt_put_header(p));
    st__describe_process(out, true);
    while (id < count) {
        uint32_t n = st__reg_names(id, names, count - id < 64 ? count - id : 64);
        if (n == 0)
            break;
        for (uint32_t k = 0; k < n; k++)
            st__describe_event(out, id + k, names[k]);
        id += n;
    }
}

/*
 * Merges the copy's records into out, after converting with a knot past
 * the newest; *first_ns gets the time of the oldest record (now when none).
 * With floor_first, every thread's times start there. 0 or -ENOMEM.
 */
static int merge_copy(struct copy *c, struct st__growbuf *out, bool floor_first, uint64_t *first_ns)
{
    struct st__merge_sink sink = {buf_reserve, buf_commit, NULL, out};
    struct st__merge_src *src = calloc(c->npi ? c->npi : 1, sizeof *src);
    uint64_t oldest = UINT64_MAX, newest = 0;
    int ret;

    if (!src)
        return -ENOMEM;
    for (size_t i = 0; i < c->npi; i++) {
        const uint8_t *p = c->bytes + c->pi[i].off;
        src[i] = (struct st__merge_src){.ring = p, .mask = UINT64_MAX, .size = UINT64_MAX, .pos = 0,
                                        .end = c->pi[i].len, .owner = &c->pi[i]};
        for (size_t off = 0; off + ST_EVENT_FIXED_SIZE <= c->pi[i].len;
             off += 8 + st__fmt_get_u32(p + off + ST_EV_OFF_LENGTH)) {
            uint64_t key = st__fmt_get_u64(p + off + ST_EV_OFF_TIMESTAMP);
            oldest = key < oldest ? key : oldest;
            newest = key > newest ? key : newest;
        }
    }
    st__ts_conv_update_past(&conv, newest);
    *first_ns = oldest != UINT64_MAX ? st__clock_conv(&conv, oldest) : st__clock_mono_ns();
    if (floor_first)
        for (size_t i = 0; i < c->npi; i++)
            src[i].last_ns = *first_ns;
    ret = st__merge_run(&merge, src, c->npi, &conv, &sink);
    free(src);
    return ret < 0 || out->failed ? -ENOMEM : 0;
}

/* --- the monitor's view ------------------------------------------------------ */

/* Copies the rings: what is buffered now, with slack for what arrives while we copy. */
static int view_copy(struct copy *c, uint64_t *left)
{
    struct st__ring_counters rc;
    size_t cap;

    st__ring_counters(&rc);
    cap = rc.buffered + ((size_t)256 << 10);
    for (int attempt = 0;; attempt++) {
        if (cap > VIEW_MAX)
            cap = VIEW_MAX;
        if (!(c->bytes = malloc(cap)))
            return -ENOMEM;
        c->len = st__ring_peek(c->bytes, cap, left, &c->pi, &c->npi);
        if (!c->pi) {
            free(c->bytes);
            return -ENOMEM;
        }
        if (*left == 0 || cap == VIEW_MAX || attempt == 2)
            return 0;
        copy_free(c);
        cap = cap * 2 + (size_t)*left;
    }
}

int st__view_take(struct st__growbuf *decls, struct st__growbuf *data, uint64_t *truncated)
{
    struct copy c = {0};
    uint64_t first_ns;
    int ret;

    if (st__reg_decls(decls) < 0)
        return -ENOMEM;
    st__snapshot_lock();
    ret = view_copy(&c, truncated);
    if (ret == 0) {
        put_head(data);
        ret = merge_copy(&c, data, false, &first_ns);
    }
    st__snapshot_unlock();
    copy_free(&c);
    return ret;
}

/* --- flight snapshots ------------------------------------------------------------ */

/* A thread of the snapshot and its dropped count. */
struct thr {
    uint32_t tid;
    uint64_t lost;
};

/* Adds to tid's dropped count (two rings share a tid when an exited thread's id was reused). */
static void thr_add(struct thr *t, size_t *n, uint32_t tid, uint64_t lost)
{
    size_t i = 0;

    while (i < *n && t[i].tid != tid)
        i++;
    if (i == *n)
        t[(*n)++] = (struct thr){.tid = tid};
    t[i].lost += lost;
}

/*
 * The dropped counts of this snapshot (see the top): per ring, the events
 * before the first one it holds (before its tail when it holds none) that
 * no earlier snapshot held or counted; then the lost drops, and freed
 * rings' events, since the previous snapshot (*lost_ev: the mark to
 * remember). Rings are not freed meanwhile (st__ring_exited_hold), so every
 * ring of the copy is alive. thr has room for npi + 1 entries.
 */
static size_t account(struct copy *c, struct thr *thr, uint64_t *lost_ev)
{
    uint64_t lost = st__ring_ow_unseen(c->pi, c->npi, lost_ev);
    size_t nthr = 0;

    for (size_t i = 0; i < c->npi; i++)
        if (c->pi[i].known && c->pi[i].tid != ST_LOST_TID) /* not copied (no room, empty): nothing known */
            thr_add(thr, &nthr, c->pi[i].tid, c->pi[i].unseen);
    thr_add(thr, &nthr, ST_LOST_TID, lost);
    return nthr;
}

/* Builds the snapshot in out: header, mappings, dropped records, the merged records. */
static int snapshot_build(struct copy *c, struct st__growbuf *out, uint64_t *lost_ev)
{
    struct st__growbuf recs = {0};
    struct thr *thr = calloc(c->npi + 1, sizeof *thr);
    uint64_t first_ns;
    size_t nthr;
    int ret;

    if (!thr)
        return -ENOMEM;
    nthr = account(c, thr, lost_ev);
    ret = merge_copy(c, &recs, true, &first_ns);
    put_head(out);
    for (size_t i = 0; ret == 0 && i < nthr; i++) {
        uint8_t *p;
        if (!thr[i].lost)
            continue; /* v4 readers reject a count of 0: no record means none lost */
        if ((p = st__growbuf_room(out, ST_EVENT_FIXED_SIZE + 8)))
            st__growbuf_commit(out, st__fmt_put_dropped(p, first_ns, thr[i].tid, thr[i].lost));
    }
    if (ret == 0)
        st__growbuf_put(out, recs.data, recs.len);
    st__growbuf_free(&recs);
    free(thr);
    return ret == 0 && out->failed ? -ENOMEM : ret;
}

bool st__flight_mode(void)
{
    return st__ring_overwriting();
}

static int to_fd(void *ctx, const void *p, size_t n)
{
    return st__write_all(*(int *)ctx, p, n);
}

/*
 * Writes the snapshot's v4 bytes to fd: as they are, or, with compress=zstd
 * (as of now: the setting is for files opened from now on, and a snapshot
 * is one), as the zstd frames, time index and seek table a compressed
 * trace file has. 0 or -errno.
 */
static int snapshot_put(int fd, const struct st__growbuf *out)
{
    struct st__zout z;
    bool compress;
    int level, ret;

    pthread_mutex_lock(&st__wr_lock);
    compress = st__ws.compress;
    level = st__ws.compress_level;
    pthread_mutex_unlock(&st__wr_lock);
    if (!compress)
        return st__write_all(fd, out->data, out->len);
    st__zout_init(&z, level, to_fd, &fd);
    if ((ret = st__zout_put(&z, out->data, out->len)) == 0)
        ret = st__zout_finish(&z);
    st__zout_free(&z);
    return ret;
}

/* With snap_lock held: writes the snapshot file at path. */
static int snapshot_locked(const char *path, char *err, size_t errlen)
{
    struct copy c = {0};
    struct st__growbuf out = {0};
    struct st__ring_counters rc;
    size_t cap;
    uint64_t lost_ev = 0;
    int ret = -ENOMEM, fd;

    /* Room for every ring whole: then nothing is cut for lack of space. */
    st__ring_counters(&rc);
    cap = rc.capacity;
    if (!(c.bytes = malloc(cap ? cap : 1)))
        goto out;
    /* No exited ring is freed from the copy until its account is committed: it would count what we hold. */
    st__ring_exited_hold();
    c.len = st__ring_peek(c.bytes, cap, NULL, &c.pi, &c.npi);
    if (c.pi && (ret = snapshot_build(&c, &out, &lost_ev)) == 0) {
        /* O_NOFOLLOW: a link planted at the name would have its target overwritten. */
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, ST__OWNER_FILE_MODE);
        if (fd < 0) {
            ret = -errno;
        } else {
            ret = snapshot_put(fd, &out);
            if (close(fd) < 0 && ret == 0)
                ret = -errno;
            if (ret < 0)
                unlink(path); /* no half snapshot under that name */
        }
        if (ret < 0 && st__link_refused(path, ret))
            st__errmsg(err, errlen, "%s " ST__NO_FOLLOW_WHY, path);
        else if (ret < 0)
            st__errmsg(err, errlen, "%s: %s", path, st_strerror(ret));
    }
    if (ret == 0)
        st__ring_ow_seen(c.bytes, c.pi, c.npi, lost_ev); /* the next snapshot counts from here */
    /* Frees exited rings beyond the bound, counting what we did not hold. */
    st__ring_exited_release();
out:
    if (ret == -ENOMEM)
        st__errmsg(err, errlen, "%s", st_strerror(ret));
    st__growbuf_free(&out);
    copy_free(&c);
    return ret;
}

int st__snapshot_write(const char *path, char *err, size_t errlen)
{
    char def[64];
    int ret;

    if (err && errlen)
        err[0] = '\0';
    if (!st__ring_overwriting()) {
        st__errmsg(err, errlen, "not in flight mode (flight=SIZE)");
        return -EINVAL;
    }
    if (path && !*path) {
        st__errmsg(err, errlen, "empty snapshot path");
        return -EINVAL;
    }
    st__snapshot_lock();
    if (!path) {
        snprintf(def, sizeof def, "snapshot-%ld-%u", (long)getpid(), snap_seq++);
        path = def;
    }
    ret = snapshot_locked(path, err, errlen);
    st__snapshot_unlock();
    return ret;
}
