/*
 * simpletrace recover [--pid N] [--trace FILE] DIR|RING-FILE... -o TRACE
 *
 * Rebuilds a v4 trace from the ring files a program traced into with
 * crash=DIR (layout: src/runtime/crash.h) after it died: for each thread,
 * the whole committed records in [tail, head) of its ring, i.e. those not
 * yet in the trace file, and a dropped record with the drops it had not
 * reported yet. Records of all threads are merged by time; timestamps are
 * converted to CLOCK_MONOTONIC ns with the anchors in the ring headers.
 *
 * A write() of the writeout thread may have been cut by the death: its
 * ring file then says which ring bytes and trace-file bytes it covered.
 * With --trace FILE (the program's trace file) recover counts how many of
 * each thread's records reached FILE and leaves those out, so FILE followed
 * by TRACE holds every record once; without it they are kept (a warning
 * says so) and may also be at the end of FILE.
 *
 * Every record is checked (type, length within the ring, within [tail,
 * head)); a ring that holds something else stops at that point, with a
 * warning naming the file offset. A damaged header is reported by field
 * and byte offset and the file left out.
 *
 * States any death can leave, which are not errors:
 *   - a ring file with no header yet (shorter than one, or magic still 0:
 *     crash.c stores the magic last), when the death came while a thread
 *     created it: the thread had not traced into it, so it holds no record;
 *   - rings with nothing unwritten (tail == head): an empty recovered trace.
 * Exit status: 0 done, 1 nothing usable or I/O error, 2 usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "trace_format.h"
#include "crash_format.h"

#define PROG "simpletrace recover"

/* One ring file, mapped read-only (or unborn: h is a zeroed header giving pid and tid only). */
struct ring {
    char path[PATH_MAX];
    const uint8_t *map;
    size_t len;
    bool unborn;             /* no header yet: h is malloc'd, map is NULL */
    const struct st_crash_hdr *h;
    uint64_t head, tail, pending, size;
    const uint8_t *ring;
    uint8_t *recs;       /* [tail, head) copied out, whole records only */
    size_t nrecs_bytes;
    uint64_t last_ns;
};

/* One record to emit: ring r, offset off in r->recs, converted time ns. */
struct out_rec {
    uint64_t ns;
    uint32_t r;
    uint64_t off;
};

static struct ring *rings;
static size_t nrings, cap_rings;

static uint64_t get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void ring_close(struct ring *r)
{
    if (r->unborn)
        free((void *)r->h);
    else
        munmap((void *)r->map, r->len);
}

/* pid and tid from a ring file's name, st-<pid>-<tid>.ring; false if it is not one. */
static bool ring_name_ids(const char *path, uint32_t *pid, uint32_t *tid)
{
    const char *base = strrchr(path, '/');
    unsigned p, t;
    int end = 0;

    base = base ? base + 1 : path;
    if (sscanf(base, "st-%u-%u.ring%n", &p, &t, &end) != 2 || end == 0 || base[end] != '\0')
        return false;
    *pid = p;
    *tid = t;
    return true;
}

/*
 * A ring file the program died creating (crash.c: open, posix_fallocate,
 * header, magic last): it holds no record. Kept as an empty ring of its
 * thread, so that a death before any thread had a whole ring file still
 * recovers (an empty trace). 0, or -1 when the name says no pid and tid.
 */
static int ring_unborn(struct ring *r, const char *path)
{
    struct st_crash_hdr *h;
    uint32_t pid, tid;

    if (!ring_name_ids(path, &pid, &tid)) {
        fprintf(stderr, "%s: %s: no ring file header, and not named st-PID-TID.ring\n", PROG, path);
        return -1;
    }
    h = calloc(1, sizeof *h);
    if (!h)
        return -1;
    h->pid = pid;
    h->tid = tid;
    r->h = h;
    r->unborn = true;
    r->size = 1; /* head == tail == 0: the ring is never read */
    fprintf(stderr, "%s: %s: no header yet (the program died creating it): no records in it\n", PROG, path);
    nrings++;
    return 0;
}

/* The first thing wrong with a header whose magic is right, by field and byte offset; NULL if none. */
static const char *hdr_problem(const struct st_crash_hdr *h, size_t len, size_t *off, uint64_t *val)
{
#define HDR_BAD(field, cond, why)                        \
    do {                                                 \
        if (cond) {                                      \
            *off = offsetof(struct st_crash_hdr, field); \
            *val = h->field;                             \
            return #field " " why;                       \
        }                                                \
    } while (0)
    HDR_BAD(version, h->version != ST_CRASH_VERSION, "is not this program's version");
    HDR_BAD(hdr_size, h->hdr_size != ST_CRASH_HDR_SIZE, "is not the header size");
    HDR_BAD(ring_size, h->ring_size < 4096 || (h->ring_size & (h->ring_size - 1)), "is not a power of two >= 4096");
    HDR_BAD(ring_off, h->ring_off < ST_CRASH_HDR_SIZE + 8 || h->ring_off > len || h->ring_size > len - h->ring_off,
            "does not leave the ring inside the file");
    HDR_BAD(head_off, h->head_off < ST_CRASH_HDR_SIZE || h->head_off > h->ring_off - 8, "is not between header and ring");
    HDR_BAD(tail_off, h->tail_off < ST_CRASH_HDR_SIZE || h->tail_off > h->ring_off - 8, "is not between header and ring");
    HDR_BAD(pending_off, h->pending_off < ST_CRASH_HDR_SIZE || h->pending_off > h->ring_off - 8,
            "is not between header and ring");
#undef HDR_BAD
    return NULL;
}

/* Maps and checks one ring file; 0 (also for one with no header yet), or -1 with a message. */
static int ring_open(const char *path)
{
    struct ring *r;
    struct stat st;
    const struct st_crash_hdr *h;
    const char *why;
    size_t bad_off;
    uint64_t bad_val;
    int fd;

    if (nrings == cap_rings) {
        size_t cap = cap_rings ? cap_rings * 2 : 16;
        struct ring *n = realloc(rings, cap * sizeof *n);
        if (!n)
            return -1;
        rings = n;
        cap_rings = cap;
    }
    r = &rings[nrings];
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", path);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "%s: %s: %s\n", PROG, path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if ((size_t)st.st_size < ST_CRASH_HDR_SIZE) {
        close(fd); /* created, not yet sized (posix_fallocate) */
        return ring_unborn(r, path);
    }
    r->len = (size_t)st.st_size;
    r->map = mmap(NULL, r->len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (r->map == MAP_FAILED) {
        fprintf(stderr, "%s: %s: %s\n", PROG, path, strerror(errno));
        return -1;
    }
    h = r->h = (const struct st_crash_hdr *)r->map;
    if (h->magic == 0) {
        munmap((void *)r->map, r->len); /* sized, header not finished */
        r->map = NULL;
        return ring_unborn(r, path);
    }
    if (h->magic != ST_CRASH_MAGIC) {
        fprintf(stderr, "%s: %s: not a ring file (byte 0: magic %#llx)\n", PROG, path,
                (unsigned long long)h->magic);
        munmap((void *)r->map, r->len);
        return -1;
    }
    if ((why = hdr_problem(h, r->len, &bad_off, &bad_val))) {
        fprintf(stderr, "%s: %s: damaged header: byte %zu: %s (%llu); file left out\n", PROG, path, bad_off, why,
                (unsigned long long)bad_val);
        munmap((void *)r->map, r->len);
        return -1;
    }
    r->size = h->ring_size;
    r->ring = r->map + h->ring_off;
    r->head = get64(r->map + h->head_off);
    r->tail = get64(r->map + h->tail_off);
    r->pending = get64(r->map + h->pending_off);
    if (r->head < r->tail || r->head - r->tail > r->size) {
        fprintf(stderr, "%s: %s: head %llu (byte %llu) and tail %llu (byte %llu) do not fit a ring of %llu bytes\n",
                PROG, path, (unsigned long long)r->head, (unsigned long long)h->head_off,
                (unsigned long long)r->tail, (unsigned long long)h->tail_off, (unsigned long long)r->size);
        munmap((void *)r->map, r->len);
        return -1;
    }
    nrings++;
    return 0;
}

static void ring_copy(const struct ring *r, uint64_t pos, uint8_t *dst, uint64_t n)
{
    uint64_t off = pos & (r->size - 1), first = r->size - off;

    if (first > n)
        first = n;
    memcpy(dst, r->ring + off, first);
    memcpy(dst + first, r->ring, n - first);
}

/* Size of the valid event record at ring position pos (< end), or 0. */
static uint64_t ring_rec_size(const struct ring *r, uint64_t pos, uint64_t end)
{
    uint8_t hdr[ST_EVENT_FIXED_SIZE];
    uint64_t size;

    if (end - pos < ST_EVENT_FIXED_SIZE)
        return 0;
    ring_copy(r, pos, hdr, sizeof hdr);
    size = 8 + (uint64_t)get32(hdr + 24);
    if (get64(hdr) != ST_RECORD_TYPE_EVENT || size < ST_EVENT_FIXED_SIZE ||
        size > ST_MAX_EVENT_RECORD + ST_EVENT_FIXED_SIZE + 8 || size > end - pos)
        return 0;
    return size;
}

/*
 * A write() that was in flight: with the trace file, skip the records of
 * r that reached it (counted by pid = tid in the file's whole records from
 * the write's offset); the writer's dropped record for r comes after them,
 * so more records of r in the file than in the write means it arrived too.
 */
static void ring_inflight(struct ring *r, const char *trace)
{
    const struct st_crash_hdr *h = r->h;
    uint64_t end = h->inflight_end, n_ring = 0, n_file = 0, pos, skip;
    struct stat st;
    uint8_t *buf = NULL;
    int fd;

    if (!(h->inflight_seq & 1) || end < r->tail || end > r->head)
        return;
    for (pos = r->tail; pos < end;) {
        uint64_t sz = ring_rec_size(r, pos, end);
        if (!sz)
            break;
        n_ring++;
        pos += sz;
    }
    if (!trace) {
        fprintf(stderr, "%s: %s: the writeout thread was writing %llu of its records when the program died; "
                        "without --trace they are kept and may also end the trace file\n",
                PROG, r->path, (unsigned long long)n_ring);
        r->pending += h->inflight_drop;
        return;
    }
    fd = open(trace, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || (uint64_t)st.st_dev != h->file_dev || (uint64_t)st.st_ino != h->file_ino) {
        fprintf(stderr, "%s: %s: --trace %s is not the file that was being written; records kept\n", PROG,
                r->path, trace);
        if (fd >= 0)
            close(fd);
        r->pending += h->inflight_drop;
        return;
    }
    if ((uint64_t)st.st_size > h->inflight_off) {
        uint64_t avail = (uint64_t)st.st_size - h->inflight_off, at = 0;
        if (avail > h->inflight_len)
            avail = h->inflight_len;
        buf = malloc(avail ? avail : 1);
        if (buf && pread(fd, buf, avail, (off_t)h->inflight_off) == (ssize_t)avail) {
            while (avail - at >= ST_MAPPING_FIXED_SIZE) {
                uint64_t type = get64(buf + at), sz;
                if (type == ST_RECORD_TYPE_MAPPING) {
                    sz = ST_MAPPING_FIXED_SIZE + get32(buf + at + 16);
                } else {
                    if (avail - at < ST_EVENT_FIXED_SIZE)
                        break;
                    sz = 8 + (uint64_t)get32(buf + at + 24);
                    if (sz < ST_EVENT_FIXED_SIZE)
                        break;
                    if (sz <= avail - at && get32(buf + at + 28) == h->tid)
                        n_file++;
                }
                if (sz > avail - at)
                    break;
                at += sz;
            }
        }
        free(buf);
    }
    close(fd);
    skip = n_file < n_ring ? n_file : n_ring;
    for (pos = r->tail; skip; skip--)
        pos += ring_rec_size(r, pos, end);
    r->tail = pos;
    if (n_file <= n_ring)
        r->pending += h->inflight_drop; /* its dropped record did not arrive */
}

/* Copies r's whole records from tail to head out of the ring. */
static int ring_take(struct ring *r)
{
    uint64_t pos = r->tail;

    r->recs = malloc(r->head - r->tail + 1);
    if (!r->recs)
        return -1;
    while (pos < r->head) {
        uint64_t sz = ring_rec_size(r, pos, r->head);
        if (!sz) {
            fprintf(stderr, "%s: %s: ring position %llu (byte %llu) does not hold a record; %llu bytes left out\n",
                    PROG, r->path, (unsigned long long)pos,
                    (unsigned long long)(r->h->ring_off + (pos & (r->size - 1))), (unsigned long long)(r->head - pos));
            break;
        }
        ring_copy(r, pos, r->recs + r->nrecs_bytes, sz);
        r->nrecs_bytes += sz;
        pos += sz;
    }
    return 0;
}

/* Raw timestamp -> ns, by the anchors (or a local measure of the TSC when they are too close). */
struct conv {
    bool tsc;
    uint64_t a_raw, a_ns;
    double slope;
};

static double local_tsc_slope(void)
{
#if defined(__x86_64__)
    struct timespec t0, t1, d = {0, 20000000};
    uint64_t r0, r1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    r0 = __builtin_ia32_rdtsc();
    nanosleep(&d, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    r1 = __builtin_ia32_rdtsc();
    return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / (double)(r1 - r0);
#else
    return 1.0;
#endif
}

/* From the first ring with a header (one process: the same clock and start anchor in all). */
static void conv_init(struct conv *cv)
{
    uint64_t b_raw = 0, b_ns = 0;
    size_t first = 0;

    memset(cv, 0, sizeof *cv);
    while (first < nrings && rings[first].unborn)
        first++;
    if (first == nrings)
        return; /* no header: no records to convert */
    cv->tsc = rings[first].h->clock_tsc != 0;
    cv->a_raw = rings[first].h->a_raw;
    cv->a_ns = rings[first].h->a_ns;
    for (size_t i = 0; i < nrings; i++) {
        if (rings[i].h->b_ns > b_ns) {
            b_ns = rings[i].h->b_ns;
            b_raw = rings[i].h->b_raw;
        }
    }
    if (!cv->tsc)
        return;
    if (b_ns > cv->a_ns + 1000000 && b_raw > cv->a_raw)
        cv->slope = (double)(b_ns - cv->a_ns) / (double)(b_raw - cv->a_raw);
    else
        cv->slope = local_tsc_slope(); /* under 1 ms of anchors: this machine's rate */
}

static uint64_t conv_ns(const struct conv *cv, uint64_t raw)
{
    double d;

    if (!cv->tsc)
        return raw;
    d = (double)(int64_t)(raw - cv->a_raw) * cv->slope;
    if (d < 0 && (uint64_t)(-d) > cv->a_ns)
        return 0;
    return (uint64_t)((int64_t)cv->a_ns + (int64_t)d);
}

static int cmp_out(const void *x, const void *y)
{
    const struct out_rec *a = x, *b = y;
    if (a->ns != b->ns)
        return a->ns < b->ns ? -1 : 1;
    if (a->r != b->r)
        return a->r < b->r ? -1 : 1;
    return a->off < b->off ? -1 : a->off > b->off;
}

static bool is_ring_name(const char *n)
{
    size_t len = strlen(n);
    return strncmp(n, "st-", 3) == 0 && len > 8 && strcmp(n + len - 5, ".ring") == 0;
}

static int add_dir(const char *dir)
{
    struct dirent *e;
    DIR *d = opendir(dir);
    int ret = 0;

    if (!d) {
        fprintf(stderr, "%s: %s: %s\n", PROG, dir, strerror(errno));
        return -1;
    }
    while ((e = readdir(d))) {
        char path[PATH_MAX];
        if (!is_ring_name(e->d_name))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (ring_open(path) < 0)
            ret = -1;
    }
    closedir(d);
    return ret;
}

/* Mapping records of the names file next to the first ring; names[id]. */
static char **load_names(uint32_t pid, uint64_t *count)
{
    char path[PATH_MAX], *slash;
    char **names = NULL;
    uint8_t *buf = NULL;
    size_t len = 0, at = 0;
    struct stat st;
    int fd;

    *count = 0;
    snprintf(path, sizeof path, "%s", rings[0].path);
    slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0), "st-%u.names", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "%s: %s: %s (events will be named st_unknown_ID)\n", PROG, path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) == 0 && st.st_size > 0 && (buf = malloc((size_t)st.st_size)))
        len = (size_t)read(fd, buf, (size_t)st.st_size) == (size_t)st.st_size ? (size_t)st.st_size : 0;
    close(fd);
    while (len - at >= ST_MAPPING_FIXED_SIZE && get64(buf + at) == ST_RECORD_TYPE_MAPPING) {
        uint64_t id = get64(buf + at + 8);
        uint32_t nl = get32(buf + at + 16);
        if (nl == 0 || nl > ST_MAX_NAME || nl > len - at - ST_MAPPING_FIXED_SIZE || id > (1u << 24))
            break;
        if (id >= *count) {
            uint64_t n = id + 64;
            char **nn = realloc(names, n * sizeof *nn);
            if (!nn)
                break;
            memset(nn + *count, 0, (n - *count) * sizeof *nn);
            names = nn;
            *count = n;
        }
        free(names[id]);
        names[id] = strndup((const char *)buf + at + ST_MAPPING_FIXED_SIZE, nl);
        at += ST_MAPPING_FIXED_SIZE + nl;
    }
    free(buf);
    return names;
}

static int put_mapping(FILE *f, uint64_t id, const char *name)
{
    uint8_t rec[ST_MAPPING_FIXED_SIZE + ST_MAX_NAME];
    size_t n = strlen(name);
    if (n > ST_MAX_NAME)
        n = ST_MAX_NAME;
    n = st_fmt_put_mapping(rec, id, name, (uint32_t)n);
    return fwrite(rec, 1, n, f) == n ? 0 : -1;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: %s [--pid N] [--trace FILE] DIR|RING-FILE... -o TRACE\n"
                 "\n"
                 "Rebuilds a v4 trace from the ring files a program wrote with crash=DIR: the\n"
                 "records it had traced but not yet written to its trace file, and its drops.\n"
                 "  --pid N       the process to recover when DIR holds several\n"
                 "  --trace FILE  the program's trace file: records of a write cut by its death\n"
                 "                that reached FILE are left out (FILE + TRACE hold each once)\n"
                 "  -o TRACE      the file to write\n", PROG);
}

int st_cmd_recover(int argc, char **argv)
{
    static const struct option opts[] = {
        {"pid", required_argument, NULL, 'p'}, {"trace", required_argument, NULL, 't'},
        {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *trace = NULL, *out = NULL;
    long want_pid = -1;
    struct out_rec *recs = NULL;
    size_t nout = 0, cap_out = 0, kept = 0;
    uint64_t nnames = 0, drops = 0, events = 0;
    char **names = NULL;
    struct conv cv;
    uint32_t pid;
    FILE *f;
    int c, ret = 1;

    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': want_pid = strtol(optarg, NULL, 10); break;
        case 't': trace = optarg; break;
        case 'o': out = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc || !out) {
        usage(stderr);
        return 2;
    }
    for (; optind < argc; optind++) {
        struct stat st;
        if (stat(argv[optind], &st) == 0 && S_ISDIR(st.st_mode))
            add_dir(argv[optind]);
        else
            ring_open(argv[optind]);
    }
    /* Keep one process's rings: by default that of the first ring with a header (one with records). */
    for (size_t i = 0; i < nrings && want_pid < 0; i++)
        if (!rings[i].unborn)
            want_pid = rings[i].h->pid;
    for (size_t i = 0; i < nrings; i++) {
        if (want_pid < 0)
            want_pid = rings[i].h->pid;
        if (rings[i].h->pid == (uint32_t)want_pid)
            rings[kept++] = rings[i];
        else
            ring_close(&rings[i]);
    }
    if (kept != nrings) {
        fprintf(stderr, "%s: ring files of several processes: recovering pid %ld (choose with --pid)\n", PROG,
                want_pid);
    }
    nrings = kept;
    if (!nrings) {
        fprintf(stderr, "%s: no ring file to recover\n", PROG);
        return 1;
    }
    pid = rings[0].h->pid;
    names = load_names(pid, &nnames);
    conv_init(&cv);
    for (size_t i = 0; i < nrings; i++) {
        struct ring *r = &rings[i];
        ring_inflight(r, trace);
        if (ring_take(r) < 0)
            goto out;
        for (uint64_t off = 0; off < r->nrecs_bytes;) {
            uint64_t sz = 8 + (uint64_t)get32(r->recs + off + 24), ns;
            if (nout == cap_out) {
                size_t cap = cap_out ? cap_out * 2 : 4096;
                struct out_rec *n = realloc(recs, cap * sizeof *n);
                if (!n)
                    goto out;
                recs = n;
                cap_out = cap;
            }
            ns = conv_ns(&cv, get64(r->recs + off + 16));
            if (ns < r->last_ns)
                ns = r->last_ns; /* per thread, time never goes back */
            r->last_ns = ns;
            recs[nout++] = (struct out_rec){ns, (uint32_t)i, off};
            off += sz;
        }
    }
    if (nout) /* none when every ring was written out: recs is NULL, which qsort must not get */
        qsort(recs, nout, sizeof *recs, cmp_out);
    f = fopen(out, "wb");
    if (!f) {
        fprintf(stderr, "%s: %s: %s\n", PROG, out, strerror(errno));
        goto out;
    }
    {
        uint8_t hdr[ST_HEADER_SIZE], drop[ST_EVENT_FIXED_SIZE + 8];
        uint64_t max_id = 0;
        bool bad = fwrite(hdr, 1, st_fmt_put_header(hdr), f) != ST_HEADER_SIZE;
        for (uint64_t id = 0; id < nnames; id++)
            if (names[id])
                bad |= put_mapping(f, id, names[id]) < 0;
        /* IDs the names file lacks (registered just before the death) still need a mapping. */
        for (size_t i = 0; i < nout; i++) {
            const uint8_t *p = rings[recs[i].r].recs + recs[i].off;
            uint64_t id = get64(p + 8);
            if (id != ST_DROPPED_EVENT_ID && (id >= nnames || !names[id]) && id >= max_id) {
                char nm[64];
                snprintf(nm, sizeof nm, "st_unknown_%llu", (unsigned long long)id);
                bad |= put_mapping(f, id, nm) < 0;
                max_id = id + 1;
            }
        }
        for (size_t i = 0; i < nout; i++) {
            const uint8_t *p = rings[recs[i].r].recs + recs[i].off;
            uint64_t sz = 8 + (uint64_t)get32(p + 24);
            uint8_t h[ST_EVENT_FIXED_SIZE];
            memcpy(h, p, sizeof h);
            st_fmt_put_u64(h + 16, recs[i].ns);
            bad |= fwrite(h, 1, sizeof h, f) != sizeof h || fwrite(p + sizeof h, 1, sz - sizeof h, f) != sz - sizeof h;
            if (get64(p + 8) == ST_DROPPED_EVENT_ID)
                drops += get64(p + ST_EVENT_FIXED_SIZE);
            else
                events++;
        }
        for (size_t i = 0; i < nrings; i++) {
            if (!rings[i].pending)
                continue;
            st_fmt_put_dropped(drop, rings[i].last_ns ? rings[i].last_ns : rings[i].h->b_ns, rings[i].h->tid,
                               rings[i].pending);
            bad |= fwrite(drop, 1, sizeof drop, f) != sizeof drop;
            drops += rings[i].pending;
        }
        if (fclose(f) != 0 || bad) {
            fprintf(stderr, "%s: writing %s: %s\n", PROG, out, strerror(errno));
            goto out;
        }
    }
    fprintf(stderr, "%s: pid %u: %llu records of %zu threads, %llu dropped, written to %s\n", PROG, pid,
            (unsigned long long)events, nrings, (unsigned long long)drops, out);
    ret = 0;
out:
    for (uint64_t id = 0; id < nnames; id++)
        free(names[id]);
    free(names);
    free(recs);
    for (size_t i = 0; i < nrings; i++) {
        free(rings[i].recs);
        ring_close(&rings[i]);
    }
    free(rings);
    rings = NULL;
    nrings = cap_rings = 0;
    return ret;
}
