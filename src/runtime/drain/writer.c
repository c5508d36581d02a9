/*
 * The writeout thread and the trace file: control, flush, exit and fork.
 *
 * One thread (started when a trace file is first enabled, with every
 * signal blocked, and marked so it never traces) does all the file I/O. It
 * wakes on a kick (a producer crossed an eighth of its ring, a thread
 * exited, a control request) or every 100 ms, and runs a pass. It asks the
 * scheduler for a short time slice (writer_sched_setup), so that on a busy
 * machine a kick gets it running before the rings fill up. A pass:
 *
 *   1. take the list of buffers; for each read `exited`, then `head`
 *      (acquire): everything before head is whole, committed records;
 *   2. read the registry's ID count, and stage a mapping record for each
 *      ID this file has not seen: a record of a group that registered late
 *      is always preceded by its mapping, because the event could only be
 *      enabled after its ID was published (registry.c);
 *   3. k-way merge the buffers by raw timestamp into a 1 MiB staging buffer
 *      (so within a pass the file is in time order across threads), a run
 *      of records at a time: the records of one buffer older than every
 *      other buffer's next one are copied with one memcpy, then their
 *      timestamps converted to ns (clock.c) and clamped to be
 *      non-decreasing per thread in the staged copy; the buffer's tail
 *      advances (release) once per run. A lone buffer with records is one
 *      run, with no heap and no header read before the copy;
 *   4. for exited threads, and in passes someone asked for (flush, file
 *      switch, exit), exchange each pending drop count to 0 and stage it as
 *      a dropped record, so every drop is reported exactly once;
 *   5. write() the staging buffer; free drained buffers of exited threads.
 *
 * crash=DIR: for a file-backed ring (crash.h) step 3 does not publish the
 * tail; it is published after the write() that put the records in the
 * file returned (crash_publish), and while that write() runs the ring
 * file's header notes what it covers, so `simpletrace recover` knows,
 * after any death, which records the file lacks. Each pass also stores a
 * fresh clock anchor in every ring file and appends new IDs to the names
 * file; a clean exit removes the ring files that hold nothing unwritten.
 *
 * Accounting invariant (tested): records produced = records written +
 * drops + records still in buffers; after a flush with every producer
 * quiet, the file's event records plus the counts in its dropped records
 * equal the events traced.
 *
 * Control: st_trace_file_* and st_configure run in the caller's thread
 * under ctl_lock. They open the file themselves (so an unwritable path is
 * an error returned to the caller) and hand it to the writer as an "op";
 * the writer drains and closes the old file, adopts the new one (header and
 * every mapping when it starts empty) and reports completion through
 * done_seq and wr_cond. A file is opened without O_TRUNC and truncated
 * only when committed, so a failing st_configure leaves it untouched.
 *
 *   caller:  ctl_lock -> open -> wr_lock: post op, ++req_seq, kick -> wait done_seq
 *   writer:  wr_lock: take op and req_seq -> I/O without locks -> wr_lock: done_seq
 *
 * Reopening the file this process closed last (same device, inode and
 * size) appends to it instead of truncating, so `off` then `on` keeps what
 * was written; QEMU truncates and loses it. Records traced while the file
 * is off stay in the buffers (and drop when full), as in QEMU.
 *
 * Write errors (ENOSPC, EFBIG, EIO, a short write that cannot finish): one
 * line on stderr, st_trace_file_status().error, the file cut back to its
 * last whole record and closed, staged records counted as dropped; the
 * program goes on and the buffers fill and drop. Turning the file on again
 * (the same file, unchanged since: appended to, its mappings written again
 * mid-stream) or switching to another one recovers (tests/faults/).
 *
 * The trace file deleted, renamed or replaced while open: the writer keeps
 * writing to the file it opened, under whatever name it has now (deleted:
 * to the unlinked inode, which goes when it is closed; its records count
 * as written). Nothing checks the name on each pass, on purpose: a rename
 * by log rotation must not lose records. Off and on again, or `trace-file
 * set PATH`, opens the path anew; a different file found there (not the
 * one closed last) is truncated and starts with a header and every mapping.
 *
 * Exit: an atexit handler (registered at init, normally before main, so it
 * runs after the handlers the program registers) asks for a final pass and
 * joins the thread. Control functions, unlike tracing, are not
 * async-signal-safe.
 *
 * fork(): the prepare handler takes every runtime lock (ctl, reg, wr, buf),
 * so the child never inherits one mid-update. The child frees every buffer
 * (they hold the parent's records, which the parent writes), forgets the
 * writer thread and closes its copy of the parent's descriptor. If a file
 * was enabled, the child writes its own: trace-<childpid>, or F-<childpid>
 * for an explicit name F (not F.<childpid>: that could be a piece of F) (also when the file was off, so the child can
 * never truncate the parent's file), opened only when the child traces its
 * first event, so fork+exec leaves no empty file behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "trace_format.h"
#include "ring.h"
#include "timestamp.h"
#include "ring_file.h"
#include "rt_internal.h"

#define STAGE_SIZE ((size_t)1 << 20)
#define WAKE_NS 100000000L

/* A file change the writer applies in its next pass. */
struct op {
    bool close;         /* drain, then close the current file */
    int fd;             /* -1, or adopt this file */
    bool append;        /* fd continues the file closed last */
    uint32_t mapped;    /* when appending: mappings it already has */
    size_t base_len;    /* path is the first base_len bytes + ".piece" (rotate=) */
    uint64_t piece;
    uint64_t name_gen;  /* ws.name_gen when the op was posted */
    char path[4096];    /* fd's name, for messages */
};

/* The file this process closed last: reopening it appends. */
struct closed_file {
    bool valid;
    dev_t dev;
    ino_t ino;
    uint64_t size;
    uint32_t mapped;
    char path[4096];
};

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t wr_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wr_cond = PTHREAD_COND_INITIALIZER;
static sem_t kick;
static int writer_up; /* atomic: the thread runs, kicks are worth posting */
static int lazy_flag; /* atomic mirror of ws.lazy_open for the first-event check */

/* Shared with control functions; under wr_lock. */
static struct {
    char name[4096];   /* explicit name, "" for the default */
    uint64_t piece;    /* rotate=: the file is name.piece (name itself for 0) */
    uint64_t name_gen; /* bumped when control changes name or piece */
    uint64_t rotate;   /* rotate=SIZE, or 0 */
    unsigned keep;     /* rotate-keep=N, or 0 for all */
    bool enabled;      /* the file is on */
    bool lazy_open;    /* fork child: open its own file at its first event */
    int error;         /* what stopped writing, or 0 */
    uint64_t req_seq;  /* passes asked for */
    uint64_t done_seq; /* req_seq as of the last finished pass */
    bool have_op;
    struct op op;
    bool running, exited, final;
    pthread_t thread;
    struct closed_file last;
} ws;

/* A buffer being merged in a pass. */
struct cursor {
    struct st_ring *b;
    const uint8_t *ring; /* b's ring, mask and size, copied so that the merge */
    uint64_t mask, size; /* reads none of the producer's cache lines */
    uint64_t pos, end;   /* [pos, end): records left in this pass */
    uint64_t key;        /* raw timestamp of the record at pos */
    bool exited;         /* thread gone when the pass began */
};

/* Owned by the writer thread. */
static struct {
    int fd;
    char path[4096];
    size_t base_len;      /* path without its ".piece" suffix */
    uint64_t piece, name_gen;
    uint64_t rotate;      /* piece size limit (ws.rotate as of this pass), or 0 */
    unsigned keep;
    bool piece_records;   /* the piece holds (or has staged) a record: it may end */
    uint64_t off;         /* file size: always the end of a whole record */
    uint32_t mapped;      /* IDs [0, mapped) have mappings in this file */
    uint8_t *stage;
    size_t len;           /* bytes staged */
    size_t hdr;           /* bytes of file header at the start of stage */
    uint64_t stage_events, stage_drops;
    struct st_clock_conv conv;
    uint64_t dev, ino;    /* the file's identity, for crash=DIR in-flight notes */
    struct cursor *cur;
    size_t ncur, cap_cur;
    size_t *heap;
    size_t nheap;
} wt = {.fd = -1};

/* Writer counters (relaxed atomics: st_stats_get reads them). */
static uint64_t c_written, c_dropped_reported, c_bytes_written, c_write_dropped;

static void counter_add(uint64_t *c, uint64_t v)
{
    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

void st__writer_stats(struct st_writer_stats *s)
{
    s->written = __atomic_load_n(&c_written, __ATOMIC_RELAXED);
    s->dropped_reported = __atomic_load_n(&c_dropped_reported, __ATOMIC_RELAXED);
    s->bytes_written = __atomic_load_n(&c_bytes_written, __ATOMIC_RELAXED);
    s->write_dropped = __atomic_load_n(&c_write_dropped, __ATOMIC_RELAXED);
}

bool st__file_enabled(void)
{
    bool on;

    pthread_mutex_lock(&wr_lock);
    on = ws.enabled || ws.running;
    pthread_mutex_unlock(&wr_lock);
    return on;
}

void st__ctl_lock(void)
{
    pthread_mutex_lock(&ctl_lock);
}

void st__ctl_unlock(void)
{
    pthread_mutex_unlock(&ctl_lock);
}

void st__writer_kick(void)
{
    int saved = errno;

    if (__atomic_load_n(&writer_up, __ATOMIC_RELAXED))
        sem_post(&kick);
    errno = saved;
}

static void default_name(char *buf, size_t len)
{
    snprintf(buf, len, "trace-%ld", (long)getpid());
}

/* Piece k of a file: the file itself for 0, then base.1, base.2, ... (rotate=). */
static void piece_name(char *buf, size_t len, const char *base, size_t base_len, uint64_t k)
{
    if (k)
        snprintf(buf, len, "%.*s.%llu", (int)base_len, base, (unsigned long long)k);
    else
        snprintf(buf, len, "%.*s", (int)base_len, base);
}

/* The current file name (the current piece's); wr_lock held. Returns the base's length. */
static size_t current_name(char *buf, size_t len)
{
    char base[sizeof ws.name];
    size_t n;

    if (ws.name[0])
        snprintf(base, sizeof base, "%s", ws.name);
    else
        default_name(base, sizeof base);
    n = strlen(base);
    piece_name(buf, len, base, n, ws.piece);
    return n;
}

static void stderr_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void stderr_line(const char *fmt, ...)
{
    char line[4400];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 1)
        n = (int)sizeof line - 1;
    if (write(STDERR_FILENO, line, (size_t)n) < 0) {
        /* nowhere else to report it */
    }
}

/* --- staging and file output (writer thread) ----------------------------- */

/* Size of the whole record at p (len bytes available), or 0 if cut. */
static size_t staged_record_size(const uint8_t *p, size_t len)
{
    size_t n;

    if (len < ST_MAPPING_FIXED_SIZE)
        return 0;
    if (st_fmt_get_u64(p) == ST_RECORD_TYPE_MAPPING)
        n = st_fmt_mapping_size(st_fmt_get_u32(p + 16));
    else if (len >= ST_EVENT_FIXED_SIZE)
        n = 8 + (size_t)st_fmt_get_u32(p + ST_EV_OFF_LENGTH);
    else
        return 0;
    return n <= len ? n : 0;
}

/* Closes the current file, remembering it so that reopening appends. */
static void close_file(bool mappings_known)
{
    struct stat st;
    struct closed_file last = {.valid = false};

    if (wt.fd < 0)
        return;
    if (fstat(wt.fd, &st) == 0 && S_ISREG(st.st_mode)) {
        last.valid = true;
        last.dev = st.st_dev;
        last.ino = st.st_ino;
        last.size = wt.off;
        last.mapped = mappings_known ? wt.mapped : 0;
        snprintf(last.path, sizeof last.path, "%s", wt.path);
    }
    close(wt.fd);
    wt.fd = -1;
    pthread_mutex_lock(&wr_lock);
    ws.last = last;
    pthread_mutex_unlock(&wr_lock);
}

/* Writing stopped on error err: the file is closed and off until turned on again. */
static void stop_writing(int err)
{
    close_file(false);
    pthread_mutex_lock(&wr_lock);
    ws.enabled = false;
    ws.error = err;
    pthread_mutex_unlock(&wr_lock);
}

/* write() failed after `done` bytes of the stage: keep whole records, stop. */
static void write_failed(int err, size_t done)
{
    size_t at = wt.hdr, keep = 0, n;
    uint64_t events = 0, drops = 0;

    if (done >= wt.hdr)
        keep = wt.hdr;
    while (done >= wt.hdr && at < wt.len && (n = staged_record_size(wt.stage + at, wt.len - at)) &&
           at + n <= done) {
        const uint8_t *p = wt.stage + at;
        if (st_fmt_get_u64(p) != ST_RECORD_TYPE_MAPPING) {
            if (st_fmt_get_u64(p + ST_EV_OFF_ID) == ST_DROPPED_EVENT_ID)
                drops += st_fmt_get_u64(p + ST_EV_OFF_PAYLOAD);
            else
                events++;
        }
        at += n;
        keep = at;
    }
    if (ftruncate(wt.fd, (off_t)(wt.off + keep)) < 0) {
        /* not a regular file (/dev/full): nothing to cut */
    }
    wt.off += keep;
    counter_add(&c_written, events);
    counter_add(&c_dropped_reported, drops);
    counter_add(&c_bytes_written, keep);
    counter_add(&c_write_dropped, wt.stage_events - events);
    wt.len = wt.hdr = 0;
    wt.stage_events = wt.stage_drops = 0;
    stderr_line("simpletrace: writing trace file '%s': %s; tracing to it stopped\n", wt.path, st_strerror(err));
    stop_writing(err);
}

/*
 * crash=DIR: before the stage is written, note in each ring file whose
 * records it holds what the write covers (ring up to c->pos, file bytes
 * [off, off + len)); true when there was any. Their tails stay put until
 * crash_publish(), after write() returned, so a record is always either in
 * the file or in [tail, head) of its ring file (crash.h).
 */
static bool crash_begin(void)
{
    bool any = false;

    for (size_t i = 0; i < wt.ncur; i++) {
        struct cursor *c = &wt.cur[i];
        struct st_ring *b = c->b;
        if (!b->crash_hdr || (c->pos == b->tail && !b->staged_drop))
            continue;
        st__ring_file_inflight_begin(b, c->pos, b->staged_drop, wt.off, wt.len, wt.dev, wt.ino);
        any = true;
    }
    return any;
}

/* After the write (done or failed: then its records were counted as dropped): publish the tails. */
static void crash_publish(void)
{
    for (size_t i = 0; i < wt.ncur; i++) {
        struct cursor *c = &wt.cur[i];
        struct st_ring *b = c->b;
        if (!b->crash_hdr || (c->pos == b->tail && !b->staged_drop))
            continue;
        __atomic_store_n(&b->tail, c->pos, __ATOMIC_RELEASE);
        b->staged_drop = 0;
        st__ring_file_inflight_end(b);
    }
}

/* Writes the stage out. 0, or -errno after the file was stopped. */
static int stage_flush(void)
{
    size_t done = 0;
    bool crash;

    if (wt.fd < 0)
        return -EBADF;
    crash = crash_begin();
    while (done < wt.len) {
        ssize_t n = write(wt.fd, wt.stage + done, wt.len - done);
        if (n > 0) {
            done += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            write_failed(n < 0 ? -errno : -ENOSPC, done);
            if (crash)
                crash_publish();
            return -EIO;
        }
    }
    if (crash)
        crash_publish();
    wt.off += wt.len;
    counter_add(&c_written, wt.stage_events);
    counter_add(&c_dropped_reported, wt.stage_drops);
    counter_add(&c_bytes_written, wt.len);
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
 * take FILE, FILE.1, ... up to the first missing number).
 */
static void remove_stale_next(void)
{
    char next[sizeof wt.path + 24];

    if (!wt.rotate)
        return;
    piece_name(next, sizeof next, wt.path, wt.base_len, wt.piece + 1);
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
    char next[sizeof wt.path], old[sizeof wt.path];
    uint32_t mapped = wt.mapped;
    size_t base_len = wt.base_len;
    int fd, n;

    if (stage_flush() < 0)
        return -EIO;
    n = snprintf(next, sizeof next, "%.*s.%llu", (int)base_len, wt.path, (unsigned long long)wt.piece + 1);
    fd = n < (int)sizeof next ? open(next, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666) : -1;
    if (fd < 0) {
        int err = n < (int)sizeof next ? -errno : -ENAMETOOLONG;
        stderr_line("simpletrace: opening trace file '%.*s.%llu': %s; tracing to the file stopped\n", (int)base_len,
                    wt.path, (unsigned long long)wt.piece + 1, st_strerror(err));
        stop_writing(err);
        return -EIO;
    }
    close_file(true);
    adopt_file(fd, next, base_len);
    wt.piece++;
    remove_stale_next();
    pthread_mutex_lock(&wr_lock);
    if (ws.name_gen == wt.name_gen)
        ws.piece = wt.piece;
    pthread_mutex_unlock(&wr_lock);
    if (wt.keep && wt.piece >= wt.keep) {
        piece_name(old, sizeof old, wt.path, base_len, wt.piece - wt.keep);
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
            size_t len = strlen(names[i]);
            uint8_t *p = stage_room(st_fmt_mapping_size(len));
            if (!p)
                return -EIO;
            wt.len += st_fmt_put_mapping(p, wt.mapped, names[i], (uint32_t)len);
            wt.mapped++;
        }
    }
    return 0;
}

static int stage_dropped(struct st_ring *b, uint64_t count)
{
    uint8_t *p = stage_room(ST_EVENT_FIXED_SIZE + 8);
    uint64_t ns = st__clock_mono_ns();

    if (!p)
        return -EIO;
    if (ns < b->last_ns)
        ns = b->last_ns;
    b->last_ns = ns;
    wt.len += st_fmt_put_dropped(p, ns, b->tid, count);
    wt.stage_drops += count;
    wt.piece_records = true;
    if (b->crash_hdr)
        b->staged_drop += count; /* crash_begin notes it: lost with the write otherwise */
    return 0;
}

/* --- the merge ------------------------------------------------------------ */

/*
 * The merge works on runs: consecutive records of one buffer that are all
 * older than the next record of every other buffer. A run is found by
 * reading the record headers in place in the ring, staged with one copy,
 * then its timestamps are converted (and clamped) in the staged copy, and
 * the buffer's tail and consumed counter are published once per run. With
 * one buffer holding records, the whole of it is one run (bounded by the
 * stage's room) and no header is read before the copy.
 */

/* Copies ring bytes [pos, pos + n) of c to dst, wrapping at the ring's end. */
static inline void ring_peek(const struct cursor *c, uint64_t pos, uint8_t *dst, size_t n)
{
    uint64_t off = pos & c->mask, first = c->size - off;

    if (__builtin_expect(first >= n, 1)) {
        memcpy(dst, c->ring + off, n);
    } else {
        memcpy(dst, c->ring + off, first);
        memcpy(dst + first, c->ring, n - first);
    }
}

/* The header of the record at pos (pos + 32 <= end): in place, or copied to tmp across the ring's end. */
static inline const uint8_t *cursor_header(const struct cursor *c, uint64_t pos, uint8_t *tmp)
{
    uint64_t off = pos & c->mask;

    if (__builtin_expect(off + ST_EVENT_FIXED_SIZE <= c->size, 1))
        return c->ring + off;
    ring_peek(c, pos, tmp, ST_EVENT_FIXED_SIZE);
    return tmp;
}

/* Skips what is left of c: bytes that are not records we wrote (memory corrupted). */
static void cursor_skip(struct cursor *c)
{
    c->pos = c->end;
    __atomic_store_n(&c->b->tail, c->pos, __ATOMIC_RELEASE);
}

/* Loads the key of the record at c->pos; false when c has none left. */
static bool cursor_load(struct cursor *c)
{
    uint8_t tmp[ST_EVENT_FIXED_SIZE];

    if (c->pos == c->end)
        return false;
    if (c->end - c->pos < ST_EVENT_FIXED_SIZE) {
        /* Never happens with whole records. */
        cursor_skip(c);
        return false;
    }
    c->key = st_fmt_get_u64(cursor_header(c, c->pos, tmp) + ST_EV_OFF_TIMESTAMP);
    return true;
}

static bool heap_less(size_t a, size_t b)
{
    const struct cursor *x = &wt.cur[a], *y = &wt.cur[b];
    return x->key < y->key || (x->key == y->key && a < b);
}

static void heap_push(size_t i)
{
    size_t at = wt.nheap++;

    while (at > 0 && heap_less(i, wt.heap[(at - 1) / 2])) {
        wt.heap[at] = wt.heap[(at - 1) / 2];
        at = (at - 1) / 2;
    }
    wt.heap[at] = i;
}

static size_t heap_pop(void)
{
    size_t top = wt.heap[0], last = wt.heap[--wt.nheap], at = 0;

    for (;;) {
        size_t kid = 2 * at + 1;
        if (kid >= wt.nheap)
            break;
        if (kid + 1 < wt.nheap && heap_less(wt.heap[kid + 1], wt.heap[kid]))
            kid++;
        if (!heap_less(wt.heap[kid], last))
            break;
        wt.heap[at] = wt.heap[kid];
        at = kid;
    }
    if (wt.nheap)
        wt.heap[at] = last;
    return top;
}

/*
 * Stages the records of c from c->pos that lie whole in [c->pos, stop)
 * (stop - c->pos bytes of room are there; stop may cut a record, which is
 * then left for the next run), then publishes the tail. The run is copied
 * in chunks of STAGE_CHUNK bytes, and after each copy the records whose
 * headers it completed get their timestamp converted, clamped to the
 * thread's last one and stored into the staged copy, drops and events
 * summed. Headers are read from the ring, which the copy has just brought
 * into the L1 cache: not from the copy, since a load from bytes memcpy has
 * just written with wide vector stores cannot be forwarded from the store
 * buffer and stalls until they retire (a quarter of the merge's time when
 * threads interleave record by record); and chunks keep the walk, a chain
 * of dependent loads (each record's length gives the next's place), in L1
 * rather than L2. A record that is not one we wrote ends the run and skips
 * the rest of c.
 */
#define STAGE_CHUNK ((uint64_t)8 << 10)

static void stage_run(struct cursor *c, uint64_t stop)
{
    struct st_ring *b = c->b;
    const struct st_clock_conv cv = wt.conv; /* a local copy stays in registers */
    uint8_t *const start = wt.stage + wt.len, tmp[ST_EVENT_FIXED_SIZE];
    uint64_t pos = c->pos, copied = c->pos, last = b->last_ns, events = 0, drops = 0;
    bool bad = false;

    while (stop - pos >= ST_EVENT_FIXED_SIZE) {
        const uint8_t *h;
        uint8_t *p;
        uint64_t size, ns;
        if (copied < pos + ST_EVENT_FIXED_SIZE) {
            /* Copy on up to a chunk past this record's start (pos may be past copied). */
            uint64_t next = stop - pos > STAGE_CHUNK ? pos + STAGE_CHUNK : stop;
            ring_peek(c, copied, start + (copied - c->pos), (size_t)(next - copied));
            copied = next;
        }
        h = cursor_header(c, pos, tmp);
        p = start + (pos - c->pos);
        size = 8 + (uint64_t)st_fmt_get_u32(h + ST_EV_OFF_LENGTH);
        if (__builtin_expect(size < ST_EVENT_FIXED_SIZE || size > ST_SCRATCH_SIZE || size > c->end - pos, 0)) {
            bad = true;
            break;
        }
        if (__builtin_expect(size > stop - pos, 0))
            break; /* cut by stop: whole in the ring, staged next time */
        ns = st__clock_conv(&cv, st_fmt_get_u64(h + ST_EV_OFF_TIMESTAMP));
        if (ns < last)
            ns = last;
        last = ns;
        st_fmt_put_u64(p + ST_EV_OFF_TIMESTAMP, ns);
        if (__builtin_expect(st_fmt_get_u64(h + ST_EV_OFF_ID) != ST_DROPPED_EVENT_ID, 1)) {
            events++;
        } else if (size >= ST_EVENT_FIXED_SIZE + 8) {
            uint8_t cnt[8];
            ring_peek(c, pos + ST_EV_OFF_PAYLOAD, cnt, sizeof cnt);
            drops += st_fmt_get_u64(cnt);
        }
        pos += size;
    }
    if (copied < pos) /* the end of the last record */
        ring_peek(c, copied, start + (copied - c->pos), (size_t)(pos - copied));
    /* Fewer than 32 bytes left over at the end of c cannot be a record. */
    bad |= pos != stop && stop == c->end && stop - pos < ST_EVENT_FIXED_SIZE;
    b->last_ns = last;
    wt.len += (size_t)(pos - c->pos);
    wt.piece_records |= pos != c->pos;
    wt.stage_events += events;
    wt.stage_drops += drops;
    __atomic_store_n(&b->consumed, b->consumed + events, __ATOMIC_RELAXED);
    if (__builtin_expect(bad, 0)) {
        cursor_skip(c);
    } else {
        c->pos = pos;
        if (!b->crash_hdr) /* crash=DIR: published once written (crash_publish) */
            __atomic_store_n(&b->tail, c->pos, __ATOMIC_RELEASE);
    }
}

/*
 * Where the run of c (index i) starting at c->pos ends: before the first
 * record that is not older than the other buffers' oldest (lim, lim_i), or
 * once max bytes are covered (stage_run cuts there). The first record
 * always belongs (it is the oldest). Sizes are checked by stage_run.
 */
static uint64_t run_end(const struct cursor *c, size_t i, uint64_t lim, size_t lim_i, uint64_t max)
{
    uint8_t tmp[ST_EVENT_FIXED_SIZE];
    uint64_t pos = c->pos, stop = c->end - c->pos > max ? c->pos + max : c->end;

    for (;;) {
        const uint8_t *h;
        uint64_t size, key;

        if (stop - pos < ST_EVENT_FIXED_SIZE)
            return stop;
        h = cursor_header(c, pos, tmp);
        if (pos != c->pos) {
            key = st_fmt_get_u64(h + ST_EV_OFF_TIMESTAMP);
            if (!(key < lim || (key == lim && i < lim_i)))
                return pos;
        }
        size = 8 + (uint64_t)st_fmt_get_u32(h + ST_EV_OFF_LENGTH);
        if (size < ST_EVENT_FIXED_SIZE || size >= stop - pos)
            return stop; /* the last one, or one that is not a record */
        pos += size;
    }
}

/* How far ahead in a ring the merge prefetches (about 15 records). */
#define MERGE_PREFETCH 1024u

/*
 * Stages records of c (index i), just taken off the heap as the oldest,
 * while they stay older than every other buffer's next record. 0, or
 * -EIO when writing stopped.
 */
static int take_runs(struct cursor *c, size_t i)
{
    bool alone = wt.nheap == 0;
    uint64_t lim = alone ? 0 : wt.cur[wt.heap[0]].key;
    size_t lim_i = alone ? 0 : wt.heap[0];

    for (;;) {
        uint64_t room, stop, next = 0;

        if (wt.rotate) {
            /* rotate=: a piece ends before the record that would overflow it. */
            uint8_t tmp[ST_EVENT_FIXED_SIZE];
            next = 8 + (uint64_t)st_fmt_get_u32(cursor_header(c, c->pos, tmp) + ST_EV_OFF_LENGTH);
            if (piece_full(next) && rotate() < 0)
                return -EIO;
        }
        /* Room for at least the largest record, or for all of c when it is alone. */
        room = STAGE_SIZE - wt.len;
        if (room < ST_SCRATCH_SIZE || (alone && c->end - c->pos > room && wt.len > 0)) {
            if (stage_flush() < 0)
                return -EIO;
            room = STAGE_SIZE - wt.len;
        }
        if (wt.rotate) {
            /* A piece's first record goes in whatever its size: every piece makes progress. */
            uint64_t limit = piece_room() > next || wt.piece_records ? piece_room() : next;
            if (room > limit)
                room = limit;
        }
        if (alone) {
            stop = c->end - c->pos > room ? c->pos + room : c->end;
        } else {
            /*
             * Threads interleaving record by record make runs of one
             * record, and the next header is then a miss in a line another
             * core wrote: fetch ahead, within committed records only (the
             * line at head is being written). ~10% on such merges.
             */
            if (c->end - c->pos > MERGE_PREFETCH + 128) {
                __builtin_prefetch(c->ring + ((c->pos + MERGE_PREFETCH) & c->mask));
                __builtin_prefetch(c->ring + ((c->pos + MERGE_PREFETCH + 64) & c->mask));
            }
            stop = run_end(c, i, lim, lim_i, room);
        }
        stage_run(c, stop);
        if (!cursor_load(c))
            return 0;
        if (!alone && !(c->key < lim || (c->key == lim && i < lim_i)))
            return 0; /* another buffer's record is older now */
    }
}

/* Merges every cursor's records by raw timestamp. */
static int merge(void)
{
    wt.nheap = 0;
    for (size_t i = 0; i < wt.ncur; i++)
        if (cursor_load(&wt.cur[i]))
            heap_push(i);
    while (wt.nheap) {
        size_t i = heap_pop();
        struct cursor *c = &wt.cur[i];
        if (take_runs(c, i) < 0)
            return -EIO;
        if (c->pos < c->end) /* take_runs loaded its key */
            heap_push(i);
    }
    return 0;
}

/* Snapshots the buffer list: exited first, then head (acquire). */
static int snapshot(void)
{
    size_t n = 0;

    st__ring_lock();
    for (struct st_ring *b = st__rings; b; b = b->next)
        n++;
    if (n > wt.cap_cur) {
        size_t cap = n * 2;
        struct cursor *c = realloc(wt.cur, cap * sizeof *c);
        size_t *h = c ? realloc(wt.heap, cap * sizeof *h) : NULL;
        if (c)
            wt.cur = c;
        if (!h) {
            st__ring_unlock();
            return -ENOMEM; /* try again next pass */
        }
        wt.heap = h;
        wt.cap_cur = cap;
    }
    wt.ncur = 0;
    for (struct st_ring *b = st__rings; b; b = b->next) {
        struct cursor *c = &wt.cur[wt.ncur++];
        c->b = b;
        c->ring = b->ring;
        c->mask = b->mask;
        c->size = b->size;
        c->exited = __atomic_load_n(&b->exited, __ATOMIC_ACQUIRE) != 0;
        c->pos = b->tail;
        c->end = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
    }
    st__ring_unlock();
    return 0;
}

/* Frees buffers of exited threads that have nothing left to write. */
static void reap(void)
{
    for (size_t i = 0; i < wt.ncur; i++) {
        struct cursor *c = &wt.cur[i];
        struct st_ring *b = c->b, **pp;
        if (!c->exited || b->tail != c->end || __atomic_load_n(&b->pending_drop, __ATOMIC_RELAXED))
            continue;
        st__ring_lock();
        for (pp = &st__rings; *pp && *pp != b; pp = &(*pp)->next)
            ;
        if (*pp)
            *pp = b->next;
        st__ring_retired.committed += b->committed;
        st__ring_retired.dropped += st__ring_dropped(b);
        st__ring_retired.consumed += b->consumed;
        st__ring_unlock();
        st__ring_free(b);
    }
    wt.ncur = 0;
}

/* One pass; all_drops reports every thread's pending drops (flush, exit). */
static void pass(bool all_drops)
{
    if (snapshot() < 0)
        return;
    if (st__ring_file_on()) {
        /* Ring files get fresh anchors and the names file new IDs (for recover). */
        struct st_clock_anchor now = st__ts_sample();
        st__ring_file_sync_names();
        for (size_t i = 0; i < wt.ncur; i++)
            if (wt.cur[i].b->crash_hdr)
                st__ring_file_note_anchor(wt.cur[i].b, now.raw, now.ns);
    }
    if (wt.fd >= 0) {
        st__ts_conv_update(&wt.conv);
        if (stage_mappings(st__reg_count()) < 0 || merge() < 0)
            goto out;
        for (size_t i = 0; i < wt.ncur; i++) {
            struct cursor *c = &wt.cur[i];
            uint64_t n;
            /* st__ring_lost: drops of threads that ended or had no buffer (buffer.h), reported like theirs */
            if (!(all_drops || c->exited || c->b == &st__ring_lost) ||
                !__atomic_load_n(&c->b->pending_drop, __ATOMIC_RELAXED))
                continue;
            n = __atomic_exchange_n(&c->b->pending_drop, 0, __ATOMIC_RELAXED);
            if (n && stage_dropped(c->b, n) < 0) {
                /* The count was taken: it stays in the thread's dropped total. */
                goto out;
            }
        }
        if (wt.len)
            stage_flush();
    }
out:
    reap();
}

/* Applies a control op: drain and close the old file, adopt the new one. */
static void apply_op(const struct op *op)
{
    if (op->close && wt.fd >= 0) {
        pass(true);
        close_file(true);
    }
    if (op->fd < 0)
        return;
    adopt_file(op->fd, op->path, op->base_len);
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
        }
    }
}

/* Makes fd (empty, or appended to by the caller) the file being written, its header staged. */
static void adopt_file(int fd, const char *path, size_t base_len)
{
    struct stat st;

    wt.fd = fd;
    wt.dev = wt.ino = 0;
    if (fstat(fd, &st) == 0) {
        wt.dev = (uint64_t)st.st_dev;
        wt.ino = (uint64_t)st.st_ino;
    }
    snprintf(wt.path, sizeof wt.path, "%s", path);
    wt.base_len = base_len;
    wt.off = 0;
    wt.mapped = 0;
    wt.piece_records = false;
    wt.len = wt.hdr = st_fmt_put_header(wt.stage);
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

static void *writer_main(void *arg)
{
    (void)arg;
    st__ring_thread_notrace();
    writer_sched_setup();
    for (;;) {
        struct timespec until;
        struct op op;
        bool have, asked, final;
        uint64_t seq;

        pthread_mutex_lock(&wr_lock);
        asked = ws.req_seq > ws.done_seq;
        pthread_mutex_unlock(&wr_lock);
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

        pthread_mutex_lock(&wr_lock);
        seq = ws.req_seq;
        asked = seq > ws.done_seq;
        have = ws.have_op;
        if (have)
            op = ws.op;
        ws.have_op = false;
        final = ws.final;
        wt.rotate = ws.rotate;
        wt.keep = ws.keep;
        pthread_mutex_unlock(&wr_lock);

        if (have)
            apply_op(&op);
        pass(asked || final);
        if (final)
            close_file(true);

        pthread_mutex_lock(&wr_lock);
        ws.done_seq = seq;
        if (final) {
            ws.exited = true;
            __atomic_store_n(&writer_up, 0, __ATOMIC_RELAXED);
        }
        pthread_cond_broadcast(&wr_cond);
        pthread_mutex_unlock(&wr_lock);
        if (final)
            return NULL;
    }
}

/* --- control (caller threads) ---------------------------------------------- */

/* Starts the writer unless it runs; wr_lock held. */
static int start_writer(void)
{
    sigset_t all, old;
    int r;

    if (ws.running)
        return ws.exited ? -ECANCELED : 0;
    if (!wt.stage && !(wt.stage = malloc(STAGE_SIZE)))
        return -ENOMEM;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r = pthread_create(&ws.thread, NULL, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r)
        return -r;
    ws.running = true;
    __atomic_store_n(&writer_up, 1, __ATOMIC_RELAXED);
    return 0;
}

static bool writer_alive(void)
{
    return ws.running && !ws.exited;
}

/* Asks for a pass and (with wait) waits for it; wr_lock held. */
static void request_pass(bool wait)
{
    uint64_t seq = ++ws.req_seq;

    sem_post(&kick);
    while (wait && writer_alive() && ws.done_seq < seq)
        pthread_cond_wait(&wr_cond, &wr_lock);
}

/* Waits until the op slot is free; wr_lock held. */
static void wait_op_slot(void)
{
    while (ws.have_op && writer_alive())
        pthread_cond_wait(&wr_cond, &wr_lock);
}

int st__file_prepare(const char *path, struct st_file_prep *p, char *err, size_t errlen)
{
    struct closed_file last;
    struct stat st;
    bool same;

    p->fd = -1;
    p->created = p->append = false;
    p->mapped = 0;
    p->set_name = path ? 1 : 0;
    if (st__ring_flight()) {
        /* The producers own their rings' tails in flight mode (flight.c). */
        st__errmsg(err, errlen, "no trace file in flight mode (flight=): use a snapshot");
        return -EINVAL;
    }
    pthread_mutex_lock(&wr_lock);
    p->piece = 0;
    if (path) {
        snprintf(p->path, sizeof p->path, "%s", path);
        p->base_len = strlen(p->path);
    } else {
        p->base_len = current_name(p->path, sizeof p->path);
        p->piece = ws.piece;
    }
    if (ws.enabled) {
        char cur[sizeof ws.name];
        current_name(cur, sizeof cur);
        same = strcmp(cur, p->path) == 0;
    } else {
        same = false;
    }
    last = ws.last;
    pthread_mutex_unlock(&wr_lock);
    if (same)
        return 0;
    if (path && strlen(path) >= sizeof p->path) {
        st__errmsg(err, errlen, "file '%.64s...': %s", path, st_strerror(-ENAMETOOLONG));
        return -ENAMETOOLONG;
    }
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
    if (last.valid && fstat(p->fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == last.dev &&
        st.st_ino == last.ino && (uint64_t)st.st_size == last.size) {
        p->append = true;
        p->mapped = last.mapped;
    }
    return 0;
}

void st__file_abort(struct st_file_prep *p)
{
    if (p->fd < 0)
        return;
    close(p->fd);
    if (p->created)
        unlink(p->path);
    p->fd = -1;
}

/* Sets the file name (path, or the default for NULL) and starts at its first piece; wr_lock held. */
static void set_name(const char *path)
{
    snprintf(ws.name, sizeof ws.name, "%s", path ? path : "");
    ws.piece = 0;
    ws.name_gen++;
}

/* Sets the name as the prepared op asks; wr_lock held. */
static void apply_name(const struct st_file_prep *p)
{
    if (p->set_name)
        set_name(p->set_name == 1 ? p->path : NULL);
}

int st__file_commit(struct st_file_prep *p, bool wait)
{
    int r;

    pthread_mutex_lock(&wr_lock);
    if (p->fd < 0) { /* already the open file */
        apply_name(p);
        pthread_mutex_unlock(&wr_lock);
        return 0;
    }
    r = start_writer();
    if (r < 0) {
        pthread_mutex_unlock(&wr_lock);
        st__file_abort(p);
        return r;
    }
    if (!p->append && ftruncate(p->fd, 0) < 0) {
        /* a device such as /dev/full: nothing to truncate */
    }
    wait_op_slot();
    ws.op.close = true;
    ws.op.fd = p->fd;
    ws.op.append = p->append;
    ws.op.mapped = p->mapped;
    ws.op.base_len = p->base_len;
    ws.op.piece = p->piece;
    snprintf(ws.op.path, sizeof ws.op.path, "%s", p->path);
    ws.have_op = true;
    p->fd = -1;
    apply_name(p);
    ws.op.name_gen = ws.name_gen;
    ws.enabled = true;
    ws.lazy_open = false;
    __atomic_store_n(&lazy_flag, 0, __ATOMIC_RELAXED);
    ws.error = 0;
    request_pass(wait);
    pthread_mutex_unlock(&wr_lock);
    return 0;
}

/* Drains and closes the file; ctl_lock held. */
static int file_disable(void)
{
    int r;

    pthread_mutex_lock(&wr_lock);
    ws.lazy_open = false;
    __atomic_store_n(&lazy_flag, 0, __ATOMIC_RELAXED);
    if (!ws.enabled) {
        pthread_mutex_unlock(&wr_lock);
        return 0;
    }
    ws.enabled = false;
    if (writer_alive()) {
        wait_op_slot();
        ws.op.close = true;
        ws.op.fd = -1;
        ws.have_op = true;
        request_pass(true);
    }
    r = ws.error;
    pthread_mutex_unlock(&wr_lock);
    return r;
}

void st__file_set_rotation(int64_t size, long keep)
{
    pthread_mutex_lock(&wr_lock);
    if (size >= 0)
        ws.rotate = (uint64_t)size;
    if (keep >= 0)
        ws.keep = (unsigned)keep;
    pthread_mutex_unlock(&wr_lock);
}

ST_EXPORT int st_trace_file_set_enabled(bool enabled)
{
    struct st_file_prep prep;
    int r;

    st__init();
    st__ctl_lock();
    if (!enabled) {
        r = file_disable();
    } else {
        r = st__file_prepare(NULL, &prep, NULL, 0);
        if (r == 0)
            r = st__file_commit(&prep, true);
    }
    st__ctl_unlock();
    return r;
}

ST_EXPORT int st_trace_file_set_name(const char *path)
{
    struct st_file_prep prep;
    char def[64];
    bool on;
    int r = 0;

    st__init();
    if (path && !*path)
        return -EINVAL;
    if (path && strlen(path) >= sizeof ws.name)
        return -ENAMETOOLONG;
    st__ctl_lock();
    pthread_mutex_lock(&wr_lock);
    on = ws.enabled;
    if (!on)
        set_name(path);
    pthread_mutex_unlock(&wr_lock);
    if (on) {
        default_name(def, sizeof def);
        r = st__file_prepare(path ? path : def, &prep, NULL, 0);
        prep.set_name = path ? 1 : 2;
        if (r == 0)
            r = st__file_commit(&prep, true);
    }
    st__ctl_unlock();
    return r;
}

ST_EXPORT int st_trace_file_flush(void)
{
    int r;

    st__init();
    pthread_mutex_lock(&wr_lock);
    if (!ws.enabled) {
        r = ws.lazy_open ? 0 : ws.error ? ws.error : -EBADF;
    } else {
        if (writer_alive())
            request_pass(true);
        r = ws.enabled ? 0 : ws.error;
    }
    pthread_mutex_unlock(&wr_lock);
    return r;
}

ST_EXPORT int st_trace_file_status(struct st_file_status *status)
{
    st__init();
    if (!status)
        return -EINVAL;
    pthread_mutex_lock(&wr_lock);
    current_name(status->path, sizeof status->path);
    status->enabled = ws.enabled || ws.lazy_open;
    status->error = ws.error;
    pthread_mutex_unlock(&wr_lock);
    return 0;
}

/* A fork child's first event: open its own file now. */
void st__writer_first_event(void)
{
    struct st_file_prep prep;
    char err[4400];
    bool lazy;
    int r;

    if (!__atomic_load_n(&lazy_flag, __ATOMIC_RELAXED))
        return;
    st__ctl_lock();
    pthread_mutex_lock(&wr_lock);
    lazy = ws.lazy_open;
    pthread_mutex_unlock(&wr_lock);
    if (lazy) {
        r = st__file_prepare(NULL, &prep, err, sizeof err);
        if (r == 0)
            r = st__file_commit(&prep, false);
        if (r < 0) {
            pthread_mutex_lock(&wr_lock);
            ws.lazy_open = false;
            __atomic_store_n(&lazy_flag, 0, __ATOMIC_RELAXED);
            ws.error = r;
            pthread_mutex_unlock(&wr_lock);
            stderr_line("simpletrace: %s\n", err);
        }
    }
    st__ctl_unlock();
}

/* --- exit and fork ------------------------------------------------------- */

/* crash=DIR at a clean exit: ring files with nothing left to recover go. */
static void crash_exit_cleanup(void)
{
    unsigned kept = 0;

    if (!st__ring_file_on())
        return;
    st__ring_lock();
    for (struct st_ring *b = st__rings; b; b = b->next) {
        if (!b->crash_hdr)
            continue;
        if (__atomic_load_n(&b->tail, __ATOMIC_ACQUIRE) == __atomic_load_n(&b->head, __ATOMIC_ACQUIRE) &&
            !__atomic_load_n(&b->pending_drop, __ATOMIC_RELAXED) && b->crash_path)
            unlink(b->crash_path);
        else
            kept++;
    }
    st__ring_unlock();
    st__ring_file_exit(kept);
}

static void writer_atexit(void)
{
    pthread_t t;

    pthread_mutex_lock(&wr_lock);
    if (!writer_alive()) {
        pthread_mutex_unlock(&wr_lock);
        return;
    }
    ws.final = true;
    request_pass(true);
    t = ws.thread;
    pthread_mutex_unlock(&wr_lock);
    pthread_join(t, NULL);
    crash_exit_cleanup();
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&ctl_lock);
    st__reg_lock();
    pthread_mutex_lock(&wr_lock);
    st__ring_lock();
}

static void fork_parent(void)
{
    st__ring_unlock();
    pthread_mutex_unlock(&wr_lock);
    st__reg_unlock();
    pthread_mutex_unlock(&ctl_lock);
}

static void fork_child(void)
{
    bool was_on = ws.enabled || ws.lazy_open;
    size_t n;

    st__ring_fork_child();
    if (wt.fd >= 0)
        close(wt.fd); /* our copy only: the parent keeps writing it */
    if (ws.have_op && ws.op.fd >= 0)
        close(ws.op.fd);
    wt.fd = -1;
    wt.len = wt.hdr = 0;
    wt.stage_events = wt.stage_drops = 0;
    wt.ncur = wt.nheap = 0;
    ws.have_op = ws.running = ws.exited = ws.final = false;
    ws.req_seq = ws.done_seq = 0;
    ws.enabled = false;
    ws.error = 0;
    memset(&ws.last, 0, sizeof ws.last);
    n = strlen(ws.name);
    if (n)
        snprintf(ws.name + n, sizeof ws.name - n, "-%ld", (long)getpid());
    ws.piece = 0; /* the child's own file starts at its first piece */
    ws.lazy_open = was_on;
    lazy_flag = was_on;
    writer_up = 0;
    c_written = c_dropped_reported = c_bytes_written = c_write_dropped = 0;
    sem_init(&kick, 0, 0);
    pthread_cond_init(&wr_cond, NULL);
    pthread_mutex_init(&wr_lock, NULL);
    st__reg_fork_child();
    pthread_mutex_init(&ctl_lock, NULL);
}

void st__writer_init(void)
{
    sem_init(&kick, 0, 0);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(writer_atexit);
}
