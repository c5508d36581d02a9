/*
 * The writer: the passes that do all the trace file's I/O, and who runs
 * them (writer=, st__ws.threaded).
 *
 * The writeout thread (started with every signal blocked, and marked so it
 * never traces) wakes on a kick (a producer crossed an eighth of its ring,
 * a thread exited, a control request) or every 100 ms, and runs a pass. It
 * asks the scheduler for a short time slice (writer_sched_setup), so that
 * on a busy machine a kick gets it running before the rings fill up.
 *
 * A process with a second thread leaves glibc's single-thread fast paths
 * (cancellation points around system calls, atomics in malloc and stdio),
 * which costs a single-threaded server more than its events do. So by
 * default (writer=auto) no thread is started while the records all come
 * from one thread: the same passes run on that thread itself, at its
 * drain points, one at a time under pass_lock, so the file still has one
 * writer and records stay in order:
 *
 *   kick     its ring crossed a multiple of INLINE_WAKE (64 KiB; the rings
 *            wake their consumer that often while no thread runs), or it
 *            exited: a pass of at most KICK_BUDGET bytes (kick_pass), which
 *            never waits for a lock (a signal handler's record may have
 *            interrupted this thread inside one: the rest waits for the
 *            next drain point); for every record that does not cross a
 *            threshold the hot path is the same;
 *   request  flush, a file change, exit: st__writer_request() runs the
 *            step (the op, a whole pass) on the calling thread;
 *   fork     the prepare handler runs a pass, so the parent's records are
 *            in its file before the child runs.
 *
 * The first record of a second thread (the rings' first-event hook)
 * starts the thread, which drains from then on, as with writer=thread,
 * where it starts with the file. So does a process that has left those
 * fast paths already (fast_paths_gone: a thread of its own, as Redis's
 * background threads, or our monitor's): writing inline would save it
 * nothing and would only put the passes into the traced thread's work. writer=inline never starts it: each
 * tracing thread drains at its own drain points (a kick that finds a pass
 * running leaves the draining to it). Without the thread nothing drains a
 * quiet process between drain points: its records reach the file at the
 * next one, at flush or at exit (crash=DIR keeps them in ring files that
 * `simpletrace recover` reads after a kill -9).
 *
 * A pass:
 *
 *   1. take the list of rings (st__ring_cons_snapshot, ring_consumer.h):
 *      each ring's `exited`, then `head` (acquire): everything before head
 *      is whole, committed records;
 *   2. read the registry's ID count, and stage a mapping record for each
 *      ID this file has not seen: a record of a group that registered late
 *      is always preceded by its mapping, because the event could only be
 *      enabled after its ID was published (registry.c);
 *   3. merge the rings by time into a 1 MiB staging buffer (merge.h), a
 *      run of records at a time, timestamps converted to CLOCK_MONOTONIC
 *      ns and clamped per thread; each run is given back to its ring
 *      (st__ring_cons_consume: tail advances, release);
 *   4. for exited threads, and in passes someone asked for (flush, file
 *      switch, exit), take each pending drop count (st__ring_cons_take_drops)
 *      and stage it as a dropped record, so every drop is reported exactly
 *      once;
 *   5. write() the staging buffer; free drained rings of exited threads
 *      (st__ring_cons_reap).
 *
 * The rings are held as opaque handles: what touches a ring is in core's
 * ring_consumer.c. crash=DIR: for a file-backed ring (crash_format.h) step
 * 3 does not publish the tail; it is published after the write() that put
 * the records in the file returned (st__ring_cons_write_end), and while
 * that write() runs the ring file's header notes what it covers, so
 * `simpletrace recover` knows, after any death, which records the file
 * lacks. Each pass also stores a fresh clock anchor in every ring file and
 * appends new IDs to the names file (st__ring_cons_crash_notes).
 *
 * Accounting invariant (tested): records produced = records written +
 * drops + records still in rings; after a flush with every producer quiet,
 * the file's event records plus the counts in its dropped records equal
 * the events traced.
 *
 * Write errors (ENOSPC, EFBIG, EIO, a short write that cannot finish): one
 * line on stderr, st_trace_file_status().error, the file cut back to its
 * last whole record, ended by a dropped record of pid ST_PID_WRITE_LOST
 * counting what the write lost (write_failed), and closed, staged records
 * counted as dropped; the program goes on and the rings fill and drop,
 * those drops counted as the error's (stop_writing, resume_writing), so
 * the exit report never blames the buffers' size for them. Turning the file on again
 * (the same file, unchanged since: appended to, its mappings written again
 * mid-stream) or switching to another one recovers (tests/faults/).
 *
 * rotate=SIZE: the file is written in pieces FILE, FILE.1, ... (named as
 * piece_format.h says, the rule the reader parses them by); a piece ends
 * before the record that would overflow it, and the next starts with
 * a header and every mapping, so each piece reads on its own. A piece's
 * name holding a symbolic link is never opened through it (O_NOFOLLOW):
 * like a piece that cannot be created, it stops the file, with a message.
 *
 * compress=zstd (zwrite.h, zstd_seek_format.h): each stage flushed is one
 * zstd frame of whole records; wt.off stays the offset in the v4 stream
 * (what rotate= counts and crash=DIR's notes name, so recover finds the
 * records in the decompressed trace) and wt.zoff is the file's size. A
 * failed write cuts the file back to its last whole frame, and the
 * ST_PID_WRITE_LOST record goes in a frame of its own. Closing the file
 * writes the summary, the time index and the seek table; reopening the
 * same file appends frames after them (they stay, as frames of their own)
 * and new ones end it. The setting applies to files opened after it: a file
 * appended to keeps the way it was written.
 *
 * Exit: control's atexit handler (registered at start-up, normally before
 * main, so it runs after the handlers the program registers) calls
 * st__drain_exit (drain.c), which asks for a final pass (the thread's,
 * then joined, or its own).
 *
 * Locks: pass_lock (a pass, whoever runs it; wt is its data), then wr_lock
 * (st__ws), then the core's. A pass on a tracing thread only tries them,
 * and where it may be a signal handler's (maybe_in_handler) it allocates
 * nothing (kick_pass says what waits for the next drain point).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define ST__HAVE_SINGLE_THREADED 1
#endif
#endif

#include <simpletrace/api.h>

#include "describe.h"
#include "diag.h"
#include "dir_ready.h"
#include "drain.h"
#include "drain_internal.h"
#include "fd_ident.h"
#include "merge.h"
#include "name_template.h"
#include "no_follow.h"
#include "piece_format.h"
#include "registry.h"
#include "ring.h"
#include "ring_consumer.h"
#include "thread_start.h"
#include "timestamp.h"
#include "who.h"
#include "write_all.h"
#include "trace_format.h"
#include "zwrite.h"

#define STAGE_SIZE ((size_t)1 << 20)
#define WAKE_NS 100000000L

/*
 * Without the thread, a tracing thread runs a pass each time its ring
 * crosses a multiple of INLINE_WAKE bytes (or an eighth of a smaller
 * ring), and that pass takes at most KICK_BUDGET bytes of records, so it
 * stays a few tens of microseconds (bench/server measures it) however far
 * behind the rings are; the rest waits for the next drain point.
 */
#define INLINE_WAKE ((size_t)64 << 10)
#define KICK_BUDGET ((uint64_t)128 << 10)

struct st__wshared st__ws;
pthread_mutex_t st__wr_lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * Held by the writer thread for a whole pass, and by fork() (prepare to
 * parent/child): no child is made while the writer is inside a pass, so
 * none inherits a lock an allocator took for it (sanitizers' allocators
 * are not fork-safe: the child's own writer would wait on it forever) or
 * a pass's buffers that nothing in the child owns.
 */
static pthread_mutex_t pass_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t st__wr_cond = PTHREAD_COND_INITIALIZER;
int st__lazy_flag;
static sem_t kick;

/* What a kick does (drain_up, relaxed atomic; changed under wr_lock). */
enum { UP_OFF = 0, UP_INLINE = 1, UP_THREAD = 2 };
static int drain_up;     /* nothing (no file yet, or after exit), a pass on the kicking thread, or wake the thread */
static int writer_mode;  /* writer=, enum st__writer_mode; written under wr_lock, read relaxed */
static int first_tid;    /* the first thread that traced (atomic; 0: none yet) */
static int multi;        /* a second thread traced (atomic) */
static int no_thread;    /* writer=auto: the thread could not start, the threads drain their own rings (atomic) */

/* Owned by the writer thread. */
static struct {
    int fd;
    char path[4096];
    size_t base_len;      /* path without its ".piece" suffix */
    uint64_t piece, name_gen;
    uint64_t rotate;      /* piece size limit (st__ws.rotate as of this pass), or 0 */
    unsigned keep;
    bool piece_records;   /* the piece holds (or has staged) a record: it may end */
    uint64_t off;         /* bytes of the v4 stream (the file size unless compressed): the end of a whole record */
    bool z;               /* this file is compressed (compress=zstd when it was opened) */
    bool want_z;          /* compress= as of this pass: the next file opened is compressed ... */
    int want_level;       /* ... at this level ... */
    bool want_fixed;      /* ... always (compress=zstd:LEVEL:fixed) */
    bool zfixed;          /* z: this file's frames never go faster than its level */
    uint64_t zoff;        /* z: the file's size, the end of a whole frame */
    struct st__zw zw;     /* z: the compressor and the index of the frames written */
    struct st__growbuf trailer; /* z: the summary, time index and seek table, built at close */
    struct {              /* the file closed last, if compressed, for appending to it */
        bool z;
        uint64_t off, zoff;
        struct st__zw_trailer_sizes trailer; /* its trailer's frames (total 0: none written) */
        struct st__zw zw;
    } zlast;
    uint32_t mapped;      /* IDs [0, mapped) have mappings in this file */
    uint8_t *stage;
    size_t len;           /* bytes staged */
    size_t hdr;           /* bytes of file header at the start of stage */
    uint64_t stage_events, stage_drops;
    uint64_t unmarked;    /* records failed writes lost that no ST_PID_WRITE_LOST record counts yet */
    struct st__clock_conv conv;
    uint64_t dev, ino;    /* the file's identity, for crash=DIR in-flight notes */
    struct st__ring_cons_set rings; /* the rings of this pass ... */
    struct st__merge_src *src; /* ... as merge sources (rings.n of them; owner: the ring's entry) */
    uint64_t *framed;     /* per source: its position when the last frame was made (compress=zstd's backlog) */
    size_t cap_src;
    struct st__merge merge;
    bool restricted;      /* a kick's pass that may run in a signal handler: it allocates nothing (maybe_in_handler) */
    uint64_t budget;      /* a kick's pass: bytes of records it may take (0: no bound) ... */
    uint64_t taken;       /* ... taken so far */
    bool budget_hit;      /* ... all of them: the merge stopped there, the rest waits */
} wt = {.fd = -1};

/* Writer counters (relaxed atomics: st_stats_get reads them). */
static uint64_t c_written, c_dropped_reported, c_bytes_written, c_write_dropped;
static uint64_t c_zframes, c_zframes_fast; /* compress=zstd: frames written, and those at a faster level (backlog) */
static uint64_t c_stopped_dropped; /* buffer drops while a write error had stopped the file (periods ended) */
static uint64_t stop_base;         /* the buffers' drop total when the current stop began ... */
static int stopped;                /* ... while one lasts: a write error stopped the file and none was opened since */

static void counter_add(uint64_t *c, uint64_t v)
{
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

void st__drain_counters(struct st__drain_counters *c)
{
    c->written = __atomic_load_n(&c_written, __ATOMIC_RELAXED);
    c->dropped_reported = __atomic_load_n(&c_dropped_reported, __ATOMIC_RELAXED);
    c->bytes_written = __atomic_load_n(&c_bytes_written, __ATOMIC_RELAXED);
    c->write_dropped = __atomic_load_n(&c_write_dropped, __ATOMIC_RELAXED);
    c->stopped_dropped = __atomic_load_n(&c_stopped_dropped, __ATOMIC_RELAXED);
    c->zframes = __atomic_load_n(&c_zframes, __ATOMIC_RELAXED);
    c->zframes_fast = __atomic_load_n(&c_zframes_fast, __ATOMIC_RELAXED);
    if (__atomic_load_n(&stopped, __ATOMIC_ACQUIRE)) {
        struct st__ring_counters rc;
        uint64_t base = __atomic_load_n(&stop_base, __ATOMIC_RELAXED);
        st__ring_counters(&rc);
        c->stopped_dropped += rc.dropped > base ? rc.dropped - base : 0;
    }
    c->stopped = __atomic_load_n(&stopped, __ATOMIC_RELAXED) != 0;
}

void st__drain_write_failure(char *path, size_t len, int *error)
{
    pthread_mutex_lock(&st__wr_lock);
    snprintf(path, len, "%s", st__ws.fail_path);
    *error = st__ws.fail_error;
    pthread_mutex_unlock(&st__wr_lock);
}

#include "pass_stages.h"

static void kick_pass(void);

void st__writer_kick(void)
{
    int saved = errno;
    int up = __atomic_load_n(&drain_up, __ATOMIC_RELAXED);

    if (up == UP_THREAD)
        sem_post(&kick);
    else if (up == UP_INLINE)
        kick_pass();
    errno = saved;
}

/* Size of the whole record at p (len bytes available), or 0 if cut. */
static size_t staged_record_size(const uint8_t *p, size_t len)
{
    size_t n = st__fmt_record_claim(p, len);

    return n <= len ? n : 0;
}

/*
 * compress=zstd: ends the file with its summary, time index and seek table (cut
 * back off when they cannot be written whole: the frames still read), and
 * keeps its index, so that reopening the file appends to it.
 */
static void zclose(void)
{
    struct st__zw_trailer_sizes sizes;

    wt.zlast.z = wt.z;
    if (!wt.z)
        return;
    wt.zlast.trailer.total = 0;
    if (wt.zw.n && st__zw_trailer(&wt.zw, &wt.trailer, &sizes) == 0) {
        if (st__write_all(wt.fd, wt.trailer.data, wt.trailer.len) == 0) {
            wt.zoff += wt.trailer.len;
            wt.zlast.trailer = sizes;
            counter_add(&c_bytes_written, wt.trailer.len);
        } else if (ftruncate(wt.fd, (off_t)wt.zoff) < 0) {
            /* not a regular file: nothing to cut */
        }
    }
    struct st__zw keep = wt.zlast.zw; /* the index moves to zlast; zlast's buffers are reused */
    wt.zlast.zw = wt.zw;
    wt.zw = keep;
    wt.zlast.off = wt.off;
    wt.zlast.zoff = wt.zoff;
}

/* path opened again for writing at offset at, if it is still the file id: the descriptor, or -1. */
static int fd_reopen(const char *path, const struct st__fd_ident *id, off_t at)
{
    int fd = st__fd_keep(open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC));

    if (fd >= 0 && st__fd_is(fd, id) && lseek(fd, at, SEEK_SET) == at)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* The one line saying the program took descriptor fd, path's, and the file cannot be had again. */
static void say_fd_lost(int fd, const char *path)
{
    char who[320];
    bool there = access(path, F_OK) == 0;
    int e = errno;

    st__who(who, sizeof who, false);
    st__diag("simpletrace", "%s closed descriptor %d, its trace file '%s', which cannot be opened again (%s); "
             "tracing to it stopped", who, fd, path, there ? "another file has its name now" : st_strerror(-e));
}

/*
 * True when wt.fd is still the file being written, opened again by its
 * name if need be. A program may close our descriptor (a daemon closing
 * every descriptor at start-up, after our constructor opened the file)
 * and its next open() reuse the number: a number that names another file
 * now is never written to or closed (fd_ident.h), and the old number is
 * left to the program. False when the file cannot be had again (its name
 * is gone or is another file now): wt.fd is then not ours.
 */
static bool fd_ours(void)
{
    struct st__fd_ident id = {wt.dev, wt.ino};
    int fd;

    if (st__fd_is(wt.fd, &id))
        return true;
    if ((fd = fd_reopen(wt.path, &id, (off_t)(wt.z ? wt.zoff : wt.off))) < 0)
        return false;
    wt.fd = fd;
    return true;
}

/* Closes the current file, remembering it so that reopening appends. */
static void close_file(bool mappings_known)
{
    struct stat st;
    struct st__closed_file last = {.valid = false};

    if (wt.fd < 0)
        return;
    if (!fd_ours()) {
        wt.fd = -1; /* the program closed it and the file is gone: its number is not ours to close */
        return;
    }
    zclose();
    if (fstat(wt.fd, &st) == 0 && S_ISREG(st.st_mode)) {
        last.valid = true;
        last.dev = st.st_dev;
        last.ino = st.st_ino;
        last.size = wt.z ? wt.zoff : wt.off;
        last.mapped = mappings_known ? wt.mapped : 0;
        snprintf(last.path, sizeof last.path, "%s", wt.path);
    }
    close(wt.fd);
    wt.fd = -1;
    pthread_mutex_lock(&st__wr_lock);
    st__ws.last = last;
    pthread_mutex_unlock(&st__wr_lock);
}

/*
 * Writing stopped on error err: the file is closed and off until turned on
 * again. Its path and the error are kept for the exit report, and the
 * buffers' drop total is noted: what they drop from now on, with nothing
 * draining them, is lost to the error, not to a buffer too small.
 */
static void stop_writing(int err, const char *path)
{
    struct st__ring_counters rc;

    close_file(false);
    if (!__atomic_load_n(&stopped, __ATOMIC_RELAXED)) {
        st__ring_counters(&rc);
        __atomic_store_n(&stop_base, rc.dropped, __ATOMIC_RELAXED);
        __atomic_store_n(&stopped, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_lock(&st__wr_lock);
    st__ws.enabled = false;
    st__ws.error = err;
    st__ws.fail_error = err;
    snprintf(st__ws.fail_path, sizeof st__ws.fail_path, "%s", path);
    pthread_mutex_unlock(&st__wr_lock);
}

/* A file is being written again: the drops since stop_writing() were the error's. */
static void resume_writing(void)
{
    struct st__ring_counters rc;

    if (!__atomic_load_n(&stopped, __ATOMIC_ACQUIRE))
        return;
    st__ring_counters(&rc);
    counter_add(&c_stopped_dropped, rc.dropped - __atomic_load_n(&stop_base, __ATOMIC_RELAXED));
    __atomic_store_n(&stopped, 0, __ATOMIC_RELEASE);
}

/* What the first `upto` bytes of the stage hold in whole records. */
struct staged_prefix {
    size_t len;          /* bytes: the header, then whole records */
    uint64_t events;     /* event records among them */
    uint64_t drops;      /* the counts of the dropped records among them */
};

static struct staged_prefix staged_upto(size_t upto)
{
    struct staged_prefix k = {0};
    size_t at = wt.hdr, n;

    if (upto < wt.hdr)
        return k;
    k.len = wt.hdr;
    while (at < wt.len && (n = staged_record_size(wt.stage + at, wt.len - at)) && at + n <= upto) {
        const uint8_t *p = wt.stage + at;
        if (st__fmt_get_u64(p) != ST_RECORD_TYPE_MAPPING) {
            if (st__fmt_get_u64(p + ST_EV_OFF_ID) == ST_DROPPED_EVENT_ID)
                k.drops += st__fmt_get_u64(p + ST_EV_OFF_PAYLOAD);
            else
                k.events++;
        }
        at += n;
        k.len = at;
    }
    return k;
}

/*
 * write() failed after `done` bytes of the stage: keep whole records, say
 * so, stop. So that the file itself tells that records are missing (not
 * only the program's stderr), it ends in a dropped record with pid
 * ST_PID_WRITE_LOST counting all the failed write lost: it is cut back to
 * the last record that leaves room for those 40 bytes within what the file
 * system already accepted, and the records cut are counted in it too.
 * When even that fails (/dev/full, a write that stopped inside the
 * header), the count waits for the next file opened (wt.unmarked).
 */
static void write_failed(int err, size_t done)
{
    struct staged_prefix k;
    uint8_t mark[ST_DROPPED_RECORD_SIZE];
    uint64_t lost;
    bool marked = false;

    if (done >= wt.hdr + sizeof mark) {
        k = staged_upto(done - sizeof mark);
        lost = wt.unmarked + (wt.stage_events - k.events) + (wt.stage_drops - k.drops);
        st__fmt_put_dropped(mark, st__clock_mono_ns(), ST_PID_WRITE_LOST, lost);
        marked = ftruncate(wt.fd, (off_t)(wt.off + k.len)) == 0 &&
                 pwrite(wt.fd, mark, sizeof mark, (off_t)(wt.off + k.len)) == (ssize_t)sizeof mark;
    } else {
        k = staged_upto(done);
        lost = wt.unmarked + (wt.stage_events - k.events) + (wt.stage_drops - k.drops);
    }
    if (!marked && ftruncate(wt.fd, (off_t)(wt.off + k.len)) < 0) {
        /* not a regular file (/dev/full): nothing to cut */
    }
    counter_add(&c_written, k.events);
    counter_add(&c_write_dropped, wt.stage_events - k.events);
    if (marked) {
        k.len += sizeof mark;
        k.drops += lost;
        lost = 0;
    }
    wt.unmarked = lost;
    wt.off += k.len;
    counter_add(&c_dropped_reported, k.drops);
    counter_add(&c_bytes_written, k.len);
    wt.len = wt.hdr = 0;
    wt.stage_events = wt.stage_drops = 0;
    st__diag("simpletrace", "writing trace file '%s': %s; tracing to it stopped", wt.path, st_strerror(err));
    stop_writing(err, wt.path);
}

static int zstage_flush(void);

/*
 * The program took the file's descriptor and the file cannot be opened
 * again (fd_ours): the staged records are lost, said once, naming the
 * process and the file, and writing stops as after a write error (the
 * next file opened starts with a record counting them). -EIO.
 */
static int fd_lost(void)
{
    int fd = wt.fd;

    wt.fd = -1; /* the number is the program's now */
    counter_add(&c_write_dropped, wt.stage_events);
    wt.unmarked += wt.stage_events + wt.stage_drops;
    wt.len = wt.hdr = 0;
    wt.stage_events = wt.stage_drops = 0;
    say_fd_lost(fd, wt.path);
    stop_writing(-EBADF, wt.path);
    return -EIO;
}

/* Writes the stage out. 0, or -errno after the file was stopped. */
static int stage_flush(void)
{
    size_t done = 0;
    bool crash;

    if (wt.fd < 0)
        return -EBADF;
    if (!fd_ours())
        return fd_lost();
    if (wt.z)
        return zstage_flush();
    PASS_STAGE(PS_CHECK);
    PASS_BYTES(wt.len);
    /* crash=DIR: the ring files note what this write carries; their tails wait for it. */
    crash = st__ring_cons_write_begin(&wt.rings, wt.off, wt.len, wt.dev, wt.ino);
    while (done < wt.len) {
        ssize_t n = write(wt.fd, wt.stage + done, wt.len - done);
        if (n > 0) {
            done += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            write_failed(n < 0 ? -errno : -ENOSPC, done);
            if (crash)
                st__ring_cons_write_end(&wt.rings);
            return -EIO;
        }
    }
    if (crash)
        st__ring_cons_write_end(&wt.rings);
    PASS_STAGE(PS_WRITE);
    wt.off += wt.len;
    counter_add(&c_written, wt.stage_events);
    counter_add(&c_dropped_reported, wt.stage_drops);
    counter_add(&c_bytes_written, wt.len);
    wt.len = wt.hdr = 0;
    wt.stage_events = wt.stage_drops = 0;
    return 0;
}

/* --- compress=zstd ------------------------------------------------------------ */

/*
 * The writer's backlog as a frame is made, in 256ths of a ring: of the
 * fullest ring, the records this pass found there that no frame holds yet
 * (this frame's share, and what is still to be merged). Producers go on
 * adding behind them, so it is a floor.
 */
static unsigned backlog_fill(void)
{
    unsigned fill = 0;

    for (size_t i = 0; i < wt.rings.n; i++) {
        const struct st__merge_src *s = &wt.src[i];
        if (!s->size || s->size == UINT64_MAX || s->end <= wt.framed[i])
            continue;
        uint64_t f = (s->end - wt.framed[i]) * 256 / s->size;
        if (f > fill)
            fill = f > 256 ? 256 : (unsigned)f;
    }
    return fill;
}

/* Compresses the stage into one frame and writes it; the frame joins the index. 0 or -errno. */
static int zframe_write(const uint8_t *data, size_t len, int with_header, size_t *csize)
{
    ssize_t n;
    int r;

    if (st__zw_full(&wt.zw))
        return -EFBIG; /* a seek table holds no more: the file must end (rotate=) */
    /* Behind: a faster level, so that compressing never is what fills the rings. */
    wt.zw.frame_level = wt.zfixed ? 0 : st__zw_adapt_level(wt.zw.level, backlog_fill());
    n = st__zw_compress(&wt.zw, data, len, with_header);
    for (size_t i = 0; i < wt.rings.n; i++)
        wt.framed[i] = wt.src[i].pos;
    if (n >= 0) {
        counter_add(&c_zframes, 1);
        if (wt.zw.frame_level && wt.zw.frame_level != wt.zw.level)
            counter_add(&c_zframes_fast, 1);
    }
    wt.zw.frame_level = 0;
    if (n < 0)
        return (int)n;
    if ((r = st__write_all(wt.fd, wt.zw.out, (size_t)n)) < 0)
        return r;
    st__zw_note(&wt.zw, (size_t)n);
    wt.zoff += (uint64_t)n;
    *csize = (size_t)n;
    return 0;
}

/*
 * A frame could not be written: the file is cut back to its last whole
 * frame and, when the header is in it, ends in a frame holding one dropped
 * record of pid ST_PID_WRITE_LOST counting every record lost; then stops.
 */
static void zwrite_failed(int err)
{
    uint8_t mark[ST_DROPPED_RECORD_SIZE];
    uint64_t lost = wt.unmarked + wt.stage_events + wt.stage_drops;
    size_t csize;

    if (ftruncate(wt.fd, (off_t)wt.zoff) < 0) {
        /* not a regular file (/dev/full): nothing to cut */
    }
    counter_add(&c_write_dropped, wt.stage_events);
    if (wt.zoff > 0) {
        st__fmt_put_dropped(mark, st__clock_mono_ns(), ST_PID_WRITE_LOST, lost);
        if (zframe_write(mark, sizeof mark, 0, &csize) == 0) {
            wt.off += sizeof mark;
            counter_add(&c_dropped_reported, lost);
            counter_add(&c_bytes_written, csize);
            lost = 0;
        } else if (ftruncate(wt.fd, (off_t)wt.zoff) < 0) {
            /* as above */
        }
    }
    wt.unmarked = lost;
    wt.len = wt.hdr = 0;
    wt.stage_events = wt.stage_drops = 0;
    st__diag("simpletrace", "writing trace file '%s': %s; tracing to it stopped", wt.path, st_strerror(err));
    stop_writing(err, wt.path);
}

/* stage_flush() of a compressed file: the stage becomes one frame. 0, or -EIO after the file was stopped. */
static int zstage_flush(void)
{
    bool crash = st__ring_cons_write_begin(&wt.rings, wt.off, wt.len, wt.dev, wt.ino);
    size_t csize;
    int r = zframe_write(wt.stage, wt.len, wt.hdr > 0, &csize);

    if (r < 0) {
        zwrite_failed(r);
        if (crash)
            st__ring_cons_write_end(&wt.rings);
        return -EIO;
    }
    if (crash)
        st__ring_cons_write_end(&wt.rings);
    wt.off += wt.len;
    counter_add(&c_written, wt.stage_events);
    counter_add(&c_dropped_reported, wt.stage_drops);
    counter_add(&c_bytes_written, csize);
    wt.len = wt.hdr = 0;
    wt.stage_events = wt.stage_drops = 0;
    return 0;
}

/* --- rotate=SIZE: the file in pieces ------------------------------------- */

/* Bytes the current piece can still take (staged bytes count as taken). */
static uint64_t piece_room(void)
{
    uint64_t used = wt.off + wt.len;

    if (!wt.rotate)
        return UINT64_MAX;
    return used < wt.rotate ? wt.rotate - used : 0;
}

/* True when n more bytes would overflow a piece that may end now. */
static bool piece_full(uint64_t n)
{
    return wt.piece_records && n > piece_room();
}

/*
 * The piece after the current one must not exist: left over from an
 * earlier, longer run it would read as this trace's continuation (readers
 * take FILE, FILE.1, ... up to the first missing number). A symbolic link
 * there is no piece of ours: it stays, and opening the piece refuses it.
 */
static void remove_stale_next(void)
{
    char next[sizeof wt.path + ST_PIECE_SUFFIX_MAX];
    struct stat st;

    if (!wt.rotate)
        return;
    st__piece_format(next, sizeof next, wt.path, wt.base_len, wt.piece + 1);
    if (lstat(next, &st) == 0 && !S_ISLNK(st.st_mode))
        unlink(next);
}

static void adopt_file(int fd, const char *path, size_t base_len);
static int stage_mappings(uint32_t count);

/*
 * Ends the current piece at its last whole record and goes on in the next
 * one (base.N+1, truncated), which starts with a header and every mapping
 * so it reads on its own; with rotate-keep=K the piece K back is removed.
 * The control side learns the new name (so off/on appends to it) unless it
 * renamed the file meanwhile. 0, or -EIO after writing stopped.
 */
static int rotate(void)
{
    /* next holds any piece's whole name, for the messages; one longer than wt.path is refused. */
    char next[sizeof wt.path + ST_PIECE_SUFFIX_MAX], old[sizeof wt.path + ST_PIECE_SUFFIX_MAX];
    uint32_t mapped = wt.mapped;
    size_t base_len = wt.base_len;
    struct stat st;
    mode_t mode;
    int fd, n;

    if (stage_flush() < 0)
        return -EIO;
    n = st__piece_format(next, sizeof next, wt.path, base_len, wt.piece + 1);
    /* The piece's mode is the file's: owner only as made (dir_ready.h), or what its owner gave it. */
    mode = fstat(wt.fd, &st) == 0 ? st.st_mode & 0666 : ST__OWNER_FILE_MODE;
    /* O_NOFOLLOW: a link planted at the piece's name would have its target truncated. */
    fd = n < (int)sizeof wt.path ? st__fd_keep(open(next, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode))
                                 : -1;
    if (fd < 0) {
        int err = n < (int)sizeof wt.path ? -errno : -ENAMETOOLONG;
        if (st__link_refused(next, err))
            st__diag("simpletrace", "trace file piece '%s' " ST__NO_FOLLOW_WHY "; tracing to the file stopped", next);
        else
            st__diag("simpletrace", "opening trace file '%s': %s; tracing to the file stopped", next,
                     st_strerror(err));
        stop_writing(err, next);
        return -EIO;
    }
    close_file(true);
    /* Made before the old piece's trailer was written: now it is the newer one, as readers expect of pieces in order. */
    futimens(fd, NULL);
    adopt_file(fd, next, base_len);
    wt.piece++;
    remove_stale_next();
    pthread_mutex_lock(&st__wr_lock);
    if (st__ws.name_gen == wt.name_gen)
        st__ws.piece = wt.piece;
    pthread_mutex_unlock(&st__wr_lock);
    if (wt.keep && wt.piece >= wt.keep) {
        st__piece_format(old, sizeof old, wt.path, base_len, wt.piece - wt.keep);
        unlink(old);
    }
    return stage_mappings(mapped);
}

/* Room for n more bytes in the stage (and the piece); flushes, or rotates, if needed. */
static uint8_t *stage_room(size_t n)
{
    if (piece_full(n) && rotate() < 0)
        return NULL;
    if (wt.len + n > STAGE_SIZE && stage_flush() < 0)
        return NULL;
    return wt.fd < 0 ? NULL : wt.stage + wt.len;
}

/*
 * Stages the mapping record of ID id and its declaration, together, so a
 * piece never has one without the other; out of memory for the
 * declaration, the mapping goes alone. 0 or -EIO.
 */
static int stage_mapping(uint32_t id, const char *name)
{
    struct st__growbuf rec = {0}; /* its own: stage_room() may rotate, which stages mappings again */
    size_t len = strlen(name);
    uint8_t *p;
    int ret = 0;

    st__describe_event(&rec, id, name);
    if (rec.failed) {
        if ((p = stage_room(st__fmt_mapping_size(len))))
            wt.len += st__fmt_put_mapping(p, id, name, (uint32_t)len);
    } else if ((p = stage_room(rec.len))) {
        memcpy(p, rec.data, rec.len);
        wt.len += rec.len;
    }
    if (!p)
        ret = -EIO;
    st__growbuf_free(&rec);
    return ret;
}

/*
 * Stages mapping records for IDs [wt.mapped, count). One at a time: if
 * stage_room() starts a new piece, that piece gets the mappings staged so
 * far again and wt.mapped is unchanged, so the loop simply goes on.
 */
static int stage_mappings(uint32_t count)
{
    const char *names[64];

    while (wt.mapped < count) {
        uint32_t want = count - wt.mapped, n;
        n = st__reg_names(wt.mapped, names, want < 64 ? want : 64);
        if (n == 0)
            break;
        for (uint32_t i = 0; i < n; i++) {
            if (stage_mapping(wt.mapped, names[i]) < 0)
                return -EIO;
            wt.mapped++;
        }
    }
    return 0;
}

/* Stages a dropped record counting `count` of c's drops, never older than its last record written. 0 or -EIO. */
static int stage_dropped(struct st__ring_cons *c, uint64_t count)
{
    uint8_t *p = stage_room(ST_EVENT_FIXED_SIZE + 8);
    uint64_t ns = st__clock_mono_ns();

    if (!p)
        return -EIO;
    if (ns < c->last_ns)
        ns = c->last_ns;
    c->last_ns = ns;
    wt.len += st__fmt_put_dropped(p, ns, c->tid, count);
    wt.stage_drops += count;
    wt.piece_records = true;
    st__ring_cons_drop_staged(c, count);
    return 0;
}

/* Stages the ST_PID_WRITE_LOST record a failed write could not put in its own file. */
static void stage_write_lost(void)
{
    uint8_t *p = stage_room(ST_DROPPED_RECORD_SIZE);

    if (!p)
        return;
    wt.len += st__fmt_put_dropped(p, st__clock_mono_ns(), ST_PID_WRITE_LOST, wt.unmarked);
    wt.stage_drops += wt.unmarked;
    wt.piece_records = true;
    wt.unmarked = 0;
}

/* --- the merge: the rings as merge sources, the stage as its sink ----------- */

/* Room for a run (merge.h): flushes, or starts the next piece, when needed. */
static uint8_t *stage_reserve(void *ctx, uint64_t need, uint64_t want, uint64_t *room)
{
    (void)ctx;
    /* A kick's pass took its share, or would start a piece (which allocates) where it must not: stop here. */
    if ((wt.budget && wt.taken >= wt.budget) || (wt.restricted && piece_full(need))) {
        wt.budget_hit = true;
        return NULL;
    }
    /* rotate=: a piece ends before the record that would overflow it. */
    if (piece_full(need) && rotate() < 0)
        return NULL;
    /* Room for at least the largest record, or for all of a lone ring. */
    *room = STAGE_SIZE - wt.len;
    if (*room < ST__RING_RECORD_MAX || (want > *room && wt.len > 0)) {
        if (stage_flush() < 0)
            return NULL;
        *room = STAGE_SIZE - wt.len;
    }
    if (wt.budget) {
        uint64_t left = wt.budget - wt.taken;
        if (*room > left)
            *room = left > need ? left : need;
    }
    if (wt.rotate) {
        /* A piece's first record goes in whatever its size: every piece makes progress. */
        uint64_t limit = piece_room() > need || wt.piece_records ? piece_room() : need;
        if (*room > limit)
            *room = limit;
    }
    return wt.fd < 0 ? NULL : wt.stage + wt.len;
}

/* A run was staged: count it and give the ring back its room. */
static void stage_commit(void *ctx, struct st__merge_src *s, size_t n, uint64_t events, uint64_t drops)
{
    struct st__ring_cons *c = s->owner;

    (void)ctx;
    wt.len += n;
    wt.taken += n;
    wt.piece_records |= n != 0;
    wt.stage_events += events;
    wt.stage_drops += drops;
    c->last_ns = s->last_ns;
    st__ring_cons_consume(c, s->pos, events);
}

/* A ring holds bytes that are not records we wrote (memory corrupted): skip them. */
static void stage_bad(void *ctx, struct st__merge_src *s)
{
    (void)ctx;
    st__ring_cons_skip(s->owner, s->pos);
}

static const struct st__merge_sink stage_sink = {stage_reserve, stage_commit, stage_bad, NULL};

/*
 * Takes the ring list for a pass, and the rings as merge sources. 0,
 * -ENOMEM, or -EAGAIN in a restricted pass that would need more room
 * (try again next pass).
 */
static int snapshot(void)
{
    wt.rings.no_grow = wt.restricted;
    if (st__ring_cons_snapshot(&wt.rings) < 0)
        return -ENOMEM;
    if (wt.rings.n > wt.cap_src || (wt.restricted && wt.merge.cap < wt.rings.n)) {
        struct st__merge_src *s = wt.restricted ? NULL : realloc(wt.src, wt.rings.cap * sizeof *s);
        uint64_t *f = s ? realloc(wt.framed, wt.rings.cap * sizeof *f) : NULL;
        if (s)
            wt.src = s;
        if (!f) {
            wt.rings.n = 0;
            return -ENOMEM;
        }
        wt.framed = f;
        wt.cap_src = wt.rings.cap;
    }
    for (size_t i = 0; i < wt.rings.n; i++) {
        struct st__ring_cons *c = &wt.rings.v[i];
        wt.src[i] = (struct st__merge_src){.ring = c->bytes, .mask = c->mask, .size = c->size, .pos = c->pos,
                                           .end = c->end, .last_ns = c->last_ns, .owner = c};
        wt.framed[i] = c->pos;
    }
    return 0;
}

/*
 * One pass; all_drops reports every thread's pending drops (flush, exit);
 * budget bounds the bytes of records it takes (0: none). When the budget
 * stops it, what it took is written and the rest, drops of exited threads
 * included (they come after their records), waits for the next pass.
 */
static void pass(bool all_drops, uint64_t budget)
{
    if (snapshot() < 0)
        return;
    /* crash=DIR: fresh anchors, new IDs (for recover), and the file named before any write reaches it. */
    st__ring_cons_crash_notes(&wt.rings, wt.fd >= 0, wt.dev, wt.ino);
    PASS_STAGE(PS_RINGS);
    if (wt.fd >= 0) {
        uint32_t ids = st__reg_count(); /* after the heads: every record taken has its ID below it */
        int r;
        if (wt.restricted && ids > wt.mapped)
            goto out; /* describing new events allocates: the next drain point does it */
        st__ts_conv_update(&wt.conv);
        if (stage_mappings(ids) < 0)
            goto out;
        PASS_STAGE(PS_CONV);
        wt.budget = budget;
        wt.taken = 0;
        wt.budget_hit = false;
        r = st__merge_run(&wt.merge, wt.src, wt.rings.n, &wt.conv, &stage_sink);
        wt.budget = 0;
        PASS_STAGE(PS_MERGE);
        if (r == -EIO && !wt.budget_hit)
            goto out;
        /* Drops come after their thread's records; a restricted pass leaves them (a new piece may be needed). */
        for (size_t i = 0; i < wt.rings.n && !wt.budget_hit && !wt.restricted; i++) {
            struct st__ring_cons *c = &wt.rings.v[i];
            uint64_t n;
            /* The lost ring: drops of threads that ended or had no ring (ring_consumer.h), reported like theirs */
            if (!(all_drops || c->exited || c->lost) || !(n = st__ring_cons_take_drops(c)))
                continue;
            if (stage_dropped(c, n) < 0) {
                /* The count was taken: it stays in the thread's dropped total. */
                goto out;
            }
        }
        PASS_STAGE(PS_DROPS);
        if (wt.len)
            stage_flush();
    }
out:
    /* Frees rings of exited threads that have nothing left to write. */
    st__ring_cons_reap(&wt.rings);
    PASS_STAGE(PS_END);
}
/*
 * Appending to the file closed last: it goes on the way it was written.
 * Compressed, its index comes back, its trailer becoming three frames of it.
 */
static void zappend(uint64_t end)
{
    wt.z = wt.zlast.z && wt.zlast.zoff == end;
    if (!wt.z)
        return;
    int level = wt.zw.level;
    struct st__zw keep = wt.zw;
    wt.zw = wt.zlast.zw;
    wt.zlast.zw = keep;
    wt.zw.level = level;
    if (wt.zlast.trailer.total)
        st__zw_keep_trailer(&wt.zw, &wt.zlast.trailer);
    wt.off = wt.zlast.off;
    wt.zoff = end;
    wt.zlast.z = false;
}

/* Applies a control op: drain and close the old file, adopt the new one. */
static void apply_op(const struct st__op *op)
{
    int fd;

    if (op->close && wt.fd >= 0) {
        pass(true, 0);
        close_file(true);
    }
    if (op->unlock_fd >= 0) /* the old name's lock, now that its file is complete (unless the program took it) */
        st__fd_close_if(op->unlock_fd, &op->unlock_id);
    if (op->fd < 0)
        return;
    fd = op->fd;
    /* Posted at start-up, it may reach us after main closed every descriptor (fd_ours). */
    if (!st__fd_is(fd, &op->id) && (fd = fd_reopen(op->path, &op->id, 0)) < 0) {
        say_fd_lost(op->fd, op->path);
        stop_writing(-EBADF, op->path);
        return;
    }
    adopt_file(fd, op->path, op->base_len);
    wt.piece = op->piece;
    wt.name_gen = op->name_gen;
    if (!op->append)
        remove_stale_next();
    if (op->append) {
        off_t end = lseek(wt.fd, 0, SEEK_END);
        if (end > 0) {
            wt.off = (uint64_t)end;
            wt.mapped = op->mapped;
            wt.len = wt.hdr = 0;
            wt.piece_records = true;
            zappend((uint64_t)end);
        }
    }
    resume_writing();
    if (wt.unmarked)
        stage_write_lost();
}

/* Makes fd (empty, or appended to by the caller) the file being written, its header staged. */
static void adopt_file(int fd, const char *path, size_t base_len)
{
    struct st__growbuf desc = {0};
    struct stat st;

    wt.fd = fd;
    wt.dev = wt.ino = 0;
    if (fstat(fd, &st) == 0) {
        wt.dev = (uint64_t)st.st_dev;
        wt.ino = (uint64_t)st.st_ino;
    }
    st__ring_cons_trace_file(wt.dev, wt.ino); /* a new piece (rotate=): rings made from now on name it */
    snprintf(wt.path, sizeof wt.path, "%s", path);
    wt.base_len = base_len;
    wt.off = 0;
    wt.zoff = 0;
    wt.z = wt.want_z;
    wt.zfixed = wt.want_fixed;
    st__zw_reset(&wt.zw, wt.want_level);
    wt.mapped = 0;
    wt.piece_records = false;
    wt.len = wt.hdr = st__fmt_put_header(wt.stage);
    st__describe_process(&desc, true);
    if (!desc.failed && desc.len <= STAGE_SIZE - wt.len) {
        memcpy(wt.stage + wt.len, desc.data, desc.len);
        wt.len = wt.hdr += desc.len;
    }
    st__growbuf_free(&desc);
    wt.stage_events = wt.stage_drops = 0;
}

/* The kernel's struct sched_attr (sched_setattr(2); glibc wraps it only from 2.41). */
struct writer_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
};

/* Slice the writer asks for: short, so a wake-up preempts a busy thread soon. */
#define WRITER_SLICE_NS 100000u

/*
 * Asks the scheduler for a short time slice (Linux 6.12+ EEVDF: a fair
 * task's sched_runtime is its slice request; a shorter slice means an
 * earlier deadline, so a woken writer preempts a CPU-bound thread instead
 * of waiting for its slice to end). The writer runs briefly after each
 * wake-up, so it loses nothing by it; the traced threads keep their
 * priority and slices. No privilege is needed and nothing else changes;
 * older kernels ignore the request or refuse it, and then nothing happens.
 */
static void writer_sched_setup(void)
{
#if defined(SYS_sched_setattr) && defined(SYS_sched_getattr)
    struct writer_sched_attr a;

    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0u) != 0)
        return;
    if (a.sched_policy != SCHED_OTHER && a.sched_policy != SCHED_BATCH)
        return; /* real-time or idle writer: the program chose, leave it */
    a.size = sizeof a;
    a.sched_flags &= 0x01; /* SCHED_FLAG_RESET_ON_FORK: keep it; nothing else applies */
    a.sched_runtime = WRITER_SLICE_NS;
    if (syscall(SYS_sched_setattr, 0, &a, 0u) != 0) {
        /* not supported: the default slice */
    }
#endif
}

/* The settings a pass writes with, as control last set them; wr_lock held. */
static void take_settings(void)
{
    wt.rotate = st__ws.rotate;
    wt.keep = st__ws.keep;
    wt.want_z = st__ws.compress;
    wt.want_level = st__ws.compress_level;
    wt.want_fixed = st__ws.compress_fixed;
}

/* True while the writeout thread runs; wr_lock held. */
static bool thread_alive(void)
{
    return st__ws.threaded && !st__ws.exited;
}

/*
 * Whether the C library has left its single-thread fast paths: the process
 * runs, or ran, a second thread (glibc's __libc_single_threaded never turns
 * back, not even in a fork child). writer=auto then takes the thread: the
 * fast paths it keeps by writing inline are gone anyway, and the passes
 * would only land in the traced thread's work (Redis, whose background
 * threads are older than its first event: a GET's span at p99.9 was 23 us
 * with a pass in it, 0.5 us with the thread writing). False where the C
 * library does not say.
 */
static bool fast_paths_gone(void)
{
#ifdef ST__HAVE_SINGLE_THREADED
    return !__libc_single_threaded;
#else
    return false;
#endif
}

/* True when writer= wants the thread now: thread, or auto once a second thread traced or the process has threads. */
static bool want_thread(void)
{
    int mode = __atomic_load_n(&writer_mode, __ATOMIC_RELAXED);

    return mode == ST_WRITER_THREAD ||
           (mode == ST_WRITER_AUTO && (__atomic_load_n(&multi, __ATOMIC_RELAXED) || fast_paths_gone()) &&
            !__atomic_load_n(&no_thread, __ATOMIC_RELAXED));
}

/* writer=auto wants the thread and it could not start: stay inline (nothing is lost) and stop trying. */
static void auto_no_thread(void)
{
    __atomic_store_n(&no_thread, 1, __ATOMIC_RELAXED);
}

static int start_thread(void);
static bool auto_start(void);

/*
 * One step of the drain, pass_lock held, by the writeout thread or, without
 * it, by the thread that asked (st__writer_request): the op and the
 * requests posted so far taken, the settings, then a pass. True once the
 * final one ran (or had run).
 */
static bool writer_step(void)
{
    struct st__op op;
    bool have, asked, final;
    uint64_t seq;

    pthread_mutex_lock(&st__wr_lock);
    if (st__ws.exited) {
        pthread_mutex_unlock(&st__wr_lock);
        return true;
    }
    /* writer=auto: a second thread traced while the first-event hook could not start the thread. */
    auto_start();
    seq = st__ws.req_seq;
    asked = seq > st__ws.done_seq;
    have = st__ws.have_op;
    if (have)
        op = st__ws.op;
    st__ws.have_op = false;
    final = st__ws.final;
    take_settings();
    pthread_mutex_unlock(&st__wr_lock);

    if (have)
        apply_op(&op);
    pass(asked || final, 0);
    if (final)
        close_file(true);

    pthread_mutex_lock(&st__wr_lock);
    if (seq > st__ws.done_seq)
        st__ws.done_seq = seq;
    if (final) {
        st__ws.exited = true;
        __atomic_store_n(&drain_up, UP_OFF, __ATOMIC_RELAXED);
    }
    pthread_cond_broadcast(&st__wr_cond);
    pthread_mutex_unlock(&st__wr_lock);
    return final;
}

/*
 * True when this thread may be running a signal handler: a signal it
 * blocks has a handler installed (the kernel blocks the signal being
 * handled; ThreadSanitizer blocks them all while it runs a deferred one).
 * A thread that keeps signals blocked for sigwait() or a signalfd, with
 * no handler, is not taken for one; a handler installed with SA_NODEFER
 * is not seen (the locks are still only tried). A system call, and one
 * more per blocked signal: for the rare drain points that would allocate.
 */
static bool maybe_in_handler(void)
{
    sigset_t cur;

    if (pthread_sigmask(SIG_BLOCK, NULL, &cur) != 0)
        return true;
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction sa;
        if (sigismember(&cur, sig) != 1 || sigaction(sig, NULL, &sa) != 0)
            continue;
        if ((sa.sa_flags & SA_SIGINFO) ? sa.sa_sigaction != NULL
                                       : sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN)
            return true;
    }
    return false;
}

/* writer=auto, a second thread traced: starts the thread unless it runs; wr_lock held. True when it runs now. */
static bool auto_start(void)
{
    if (!st__writer_alive() || st__ws.threaded || st__ws.final || !want_thread())
        return st__ws.threaded && !st__ws.exited;
    if (start_thread() == 0)
        return true;
    auto_no_thread();
    return false;
}

/*
 * A drain point on a tracing thread, without the writeout thread: its ring
 * crossed the wake threshold, or it exited (the rings' wake hook). A pass
 * of at most KICK_BUDGET bytes; requests and ops are left to their
 * callers. It never waits: when another pass runs (that one drains) or a
 * lock the pass takes is held, perhaps by the code a signal handler
 * tracing here interrupted, it does nothing and the next drain point
 * drains. Where it may be a signal handler's (maybe_in_handler), it
 * allocates nothing, so it starts no thread and leaves what would
 * allocate (a new event's mapping, a new piece, a longer ring list,
 * compress=zstd, crash=DIR's names) to the next drain point.
 */
static void kick_pass(void)
{
    bool run, handler;

    pass_stages_begin();
    if (pthread_mutex_trylock(&pass_lock) != 0)
        return;
    if (pthread_mutex_trylock(&st__wr_lock) != 0) {
        pthread_mutex_unlock(&pass_lock);
        return;
    }
    run = st__writer_alive() && !st__ws.threaded;
    if (run)
        take_settings();
    pthread_mutex_unlock(&st__wr_lock);
    /* Free now, and this thread is here: the code it interrupted (if any) holds none of them. */
    if (!run || !st__ring_cons_locks_free() || !st__reg_lock_free())
        goto out;
    pass_stages_on();
    PASS_STAGE(PS_LOCKS);
    handler = maybe_in_handler();
    if (!handler && want_thread()) {
        pthread_mutex_lock(&st__wr_lock);
        run = !auto_start();
        pthread_mutex_unlock(&st__wr_lock);
        if (!run)
            goto out; /* the thread drains from now on */
    }
    if (handler && (wt.z || st__ring_cons_crash_on()))
        goto out;
    wt.restricted = handler;
    PASS_STAGE(PS_HANDLER);
    pass(false, KICK_BUDGET);
    wt.restricted = false;
    pass_stages_end();
out:
    pthread_mutex_unlock(&pass_lock);
}

static void *writer_main(void *arg)
{
    (void)arg;
    st__ring_thread_notrace();
    writer_sched_setup();
    for (;;) {
        struct timespec until;
        bool asked, stop, final;

        pthread_mutex_lock(&st__wr_lock);
        asked = st__ws.req_seq > st__ws.done_seq || st__ws.stop;
        pthread_mutex_unlock(&st__wr_lock);
        if (!asked) {
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_nsec += WAKE_NS;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            sem_clockwait(&kick, CLOCK_MONOTONIC, &until);
        }
        while (sem_trywait(&kick) == 0)
            ;

        pthread_mutex_lock(&st__wr_lock);
        stop = st__ws.stop;
        pthread_mutex_unlock(&st__wr_lock);
        if (stop)
            return NULL; /* st__writer_stop() joins us */
        pthread_mutex_lock(&pass_lock);
        final = writer_step();
        pthread_mutex_unlock(&pass_lock);
        if (final)
            return NULL;
    }
}

/* --- the drain's life (program threads, wr_lock held) ------------------------ */

/* Starts the writeout thread; from now on kicks wake it. 0 or -errno. */
static int start_thread(void)
{
    int r;

    /* Signals are the program's business: the thread takes none (st__thread_start blocks them). */
    r = st__thread_start(&st__ws.thread, NULL, writer_main, NULL, "st-writer");
    if (r)
        return r;
    st__ws.threaded = true;
    st__ring_set_wake_every(0); /* the thread's own pace: an eighth of each ring */
    __atomic_store_n(&drain_up, UP_THREAD, __ATOMIC_RELAXED);
    return 0;
}

/* No thread: the tracing threads drain at their drain points. */
static void go_inline(void)
{
    st__ring_set_wake_every(INLINE_WAKE);
    __atomic_store_n(&drain_up, UP_INLINE, __ATOMIC_RELAXED);
}

int st__writer_start(void)
{
    int r;

    if (st__ws.running)
        return st__ws.exited ? -ECANCELED : 0;
    if (!wt.stage && !(wt.stage = malloc(STAGE_SIZE)))
        return -ENOMEM;
    if (!want_thread()) {
        go_inline();
    } else if ((r = start_thread()) < 0) {
        if (__atomic_load_n(&writer_mode, __ATOMIC_RELAXED) == ST_WRITER_THREAD)
            return r;
        auto_no_thread();
        go_inline();
    }
    st__ws.running = true;
    return 1;
}

/* Ends the writeout thread (it writes nothing more); wr_lock held, released while joining. */
static void end_thread(void)
{
    pthread_t t = st__ws.thread;

    st__ws.stop = true;
    sem_post(&kick);
    pthread_mutex_unlock(&st__wr_lock);
    pthread_join(t, NULL);
    pthread_mutex_lock(&st__wr_lock);
    st__ws.stop = st__ws.threaded = false;
}

void st__writer_stop(void)
{
    if (!st__writer_alive())
        return;
    if (st__ws.threaded)
        end_thread();
    __atomic_store_n(&drain_up, UP_OFF, __ATOMIC_RELAXED);
    st__ring_set_wake_every(0);
    st__ws.running = false;
}

bool st__writer_alive(void)
{
    return st__ws.running && !st__ws.exited;
}

void st__writer_request(bool wait)
{
    uint64_t seq = ++st__ws.req_seq;
    bool posted = false;

    while (st__writer_alive() && st__ws.done_seq < seq) {
        if (thread_alive()) {
            if (!posted)
                sem_post(&kick);
            posted = true;
            if (!wait)
                return;
            pthread_cond_wait(&st__wr_cond, &st__wr_lock);
            continue;
        }
        /* No thread: the caller runs the step itself (pass_lock comes before wr_lock). */
        pthread_mutex_unlock(&st__wr_lock);
        pthread_mutex_lock(&pass_lock);
        writer_step();
        pthread_mutex_unlock(&pass_lock);
        pthread_mutex_lock(&st__wr_lock);
    }
}

/* --- writer= (config_drain.c) ----------------------------------------------- */

int st__writer_parse_mode(const char *v, int *mode)
{
    static const char *const names[] = {[ST_WRITER_AUTO] = "auto", [ST_WRITER_THREAD] = "thread",
                                        [ST_WRITER_INLINE] = "inline"};

    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(v, names[i]) == 0) {
            *mode = i;
            return 0;
        }
    return -EINVAL;
}

int st__writer_mode_prepare(int mode, struct st__writer_prep *p, char *err, size_t errlen)
{
    int r = 0;

    pthread_mutex_lock(&st__wr_lock);
    p->old_mode = __atomic_load_n(&writer_mode, __ATOMIC_RELAXED);
    p->started = false;
    if (mode == ST_WRITER_INLINE && thread_alive()) {
        st__errmsg(err, errlen, "writer=inline: the writeout thread runs already (%s); it runs until exit",
                   p->old_mode == ST_WRITER_THREAD ? "writer=thread" : "a second thread traced");
        r = -EBUSY;
        goto out;
    }
    __atomic_store_n(&writer_mode, mode, __ATOMIC_RELAXED);
    if (st__writer_alive() && !st__ws.threaded && want_thread()) {
        /* The file is on, written inline: the thread takes over now. */
        r = start_thread();
        p->started = r == 0;
        if (r < 0 && mode == ST_WRITER_THREAD) {
            st__errmsg(err, errlen, "cannot start the writeout thread: %s", st_strerror(r));
            __atomic_store_n(&writer_mode, p->old_mode, __ATOMIC_RELAXED);
            goto out;
        }
        if (r < 0)
            auto_no_thread();
        r = 0;
    }
out:
    pthread_mutex_unlock(&st__wr_lock);
    return r;
}

void st__writer_mode_abort(const struct st__writer_prep *p)
{
    pthread_mutex_lock(&st__wr_lock);
    __atomic_store_n(&writer_mode, p->old_mode, __ATOMIC_RELAXED);
    if (p->started && thread_alive()) {
        end_thread();
        go_inline(); /* as before the configuration */
    }
    pthread_mutex_unlock(&st__wr_lock);
}

/* --- the rings' first events (drain.c's hook) -------------------------------- */

void st__writer_first_event(void)
{
    int tid = (int)gettid(), none = 0;

    if (__atomic_compare_exchange_n(&first_tid, &none, tid, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED) ||
        none == tid || __atomic_exchange_n(&multi, 1, __ATOMIC_RELAXED))
        return;
    /*
     * A second thread traces. writer=auto starts the thread now, unless
     * this first record may be a signal handler's (maybe_in_handler:
     * creating a thread allocates) or a lock is held, perhaps by the code
     * a handler interrupted: then the next drain point starts it. Until it
     * runs, each thread drains its own ring at its drain points, as with
     * writer=inline.
     */
    if (__atomic_load_n(&drain_up, __ATOMIC_RELAXED) != UP_INLINE || !want_thread() || maybe_in_handler() ||
        pthread_mutex_trylock(&st__wr_lock) != 0)
        return;
    auto_start();
    pthread_mutex_unlock(&st__wr_lock);
}

/* --- start-up and fork: the writer's part (drain.c drives them) -------------- */

void st__writer_init(void)
{
    sem_init(&kick, 0, 0);
}

void st__writer_pass_lock(void)
{
    pthread_mutex_lock(&pass_lock);
}

void st__writer_pass_unlock(void)
{
    pthread_mutex_unlock(&pass_lock);
}

void st__writer_fork_pass(void)
{
    bool run;

    pthread_mutex_lock(&st__wr_lock);
    run = st__writer_alive() && !st__ws.threaded;
    if (run)
        take_settings();
    pthread_mutex_unlock(&st__wr_lock);
    if (run)
        pass(false, 0);
}

void st__writer_fork_child(void)
{
    st__fd_close_if(wt.fd, &(struct st__fd_ident){wt.dev, wt.ino}); /* our copy only: the parent keeps writing it */
    wt.fd = -1;
    wt.len = wt.hdr = 0;
    wt.stage_events = wt.stage_drops = 0;
    wt.rings.n = 0;
    wt.z = wt.zlast.z = false; /* the child's own file starts afresh */
    drain_up = UP_OFF;
    first_tid = multi = no_thread = 0; /* the child's one thread has not traced yet */
    st__ring_set_wake_every(0);
    c_written = c_dropped_reported = c_bytes_written = c_write_dropped = c_stopped_dropped = 0;
    c_zframes = c_zframes_fast = 0;
    stopped = 0;
    wt.unmarked = 0;
    sem_init(&kick, 0, 0);
    pthread_mutex_init(&pass_lock, NULL);
}
