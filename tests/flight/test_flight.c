/*
 * Flight-recorder mode (flight=SIZE): rings that keep each thread's newest
 * records, written only by a snapshot. argv[1] picks the part:
 *
 *   api      bad configurations; 3 threads trace N >> ring capacity
 *            sequence-numbered events, nothing is written, then
 *            st_trace_snapshot(): each thread's newest records, contiguous,
 *            ending at its last one, the dropped count exact; then two
 *            snapshots in a row with tracing between (per-interval counts)
 *   signal   flight-signal=USR2: raise it, the snapshot appears
 *   monitor  `trace-file snapshot PATH` over the monitor socket
 *   trigger  flight-trigger=fl_trig: tracing that event takes a snapshot
 *   busy     snapshots while 2 threads keep tracing: every file decodes
 *            strictly, every thread's records contiguous (nothing torn)
 *   exact    snapshots while 3 threads keep tracing: read in order, each
 *            thread's dropped counts and held records account for every
 *            event it traced exactly once (per gap and in sum)
 *   burst    flight=4K, flight-trigger=: the trigger then 10k records at
 *            once (overwritten long before a scan): a snapshot still comes
 *   late     the same with the trigger's group registered only just before
 *            (the producer cannot tell the trigger's ID yet: a suspect)
 *   exit     a child traces the trigger and exits at once, before a scan
 *            could run: the snapshot is taken at exit, not lost
 *   churn    200 short-lived threads on 4K rings, snapshots between: the
 *            rings kept stay bounded, and held records, per-thread dropped
 *            counts and lost drops (freed rings) account for every event
 *   compress compress=zstd: a snapshot is a compressed trace (zstd -d gives a
 *            v4 file the checks of `api` pass, the three skippable frames are
 *            there, the reader reads it seekable); compress=off then
 *            writes the same records plain; the signal's default-named
 *            snapshot is compressed too
 *
 * Everything is written in a temporary directory (the current directory
 * too, for default snapshot names) and bounded: rings of 64 KiB.
 */
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include <simpletrace/reader.h>

#include "rt_test.h"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* XDG_RUNTIME_DIR in test_dir, so the monitor's socket is the test's own. */
static char sockdir[700], sockpath[800];

static void setup(void)
{
    char xdg[600];

    test_tmpdir();
    snprintf(xdg, sizeof xdg, "%s/xdg", test_dir);
    snprintf(sockdir, sizeof sockdir, "%s/simpletrace", xdg);
    snprintf(sockpath, sizeof sockpath, "%s/%ld.sock", sockdir, (long)getpid());
    if (mkdir(xdg, 0700) < 0) {
        perror(xdg);
        exit(2);
    }
    setenv("XDG_RUNTIME_DIR", xdg, 1);
    signal(SIGPIPE, SIG_IGN);
}

/*
 * One command on a new connection to the monitor; the answer up to its
 * final line ("ok" or "error: ...") into buf, bounded by 5 s. 0 or -1.
 */
static int mon_cmd(const char *line, char *buf, size_t cap)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = 0;
    int fd;

    buf[0] = '\0';
    if (strlen(sockpath) >= sizeof sa.sun_path || (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return -1;
    memcpy(sa.sun_path, sockpath, strlen(sockpath) + 1);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || send(fd, line, strlen(line), MSG_NOSIGNAL) < 0) {
        close(fd);
        return -1;
    }
    for (int k = 0; k < 500 && len + 1 < cap; k++) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;
        if (poll(&p, 1, 10) <= 0)
            continue;
        n = recv(fd, buf + len, cap - 1 - len, 0);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, "ok\n") || strstr(buf, "error: "))
            break;
    }
    close(fd);
    return len ? 0 : -1;
}

TEST_EVENT(fl_ev, "fl_ev", "int thread, int seq", "thread %d seq %d", "ii", 2, 0);
TEST_EVENT(fl_trig, "fl_trig", "", "", "", 0, 0);
TEST_GROUP(fl_grp, "fl", &fl_ev, &fl_trig)
/* Registered by part_late only, at the last moment. */
TEST_EVENT(late_trig, "late_trig", "", "", "", 0, 0);
static struct st_event *const late_events[] = {&late_trig};
static struct st_group late_grp = {sizeof(struct st_group), "late", late_events, 1, 0};
static struct st_group *const fl_groups[] = {&fl_grp, &late_grp, NULL};

#define MAXT 8
#define RING "64K"

/* What a snapshot holds, per thread index (the events' first argument). */
struct snap {
    uint64_t n[MAXT], first[MAXT], last[MAXT];
    uint32_t pid[MAXT];
    uint64_t drop_by_pid_count[64];
    uint32_t drop_pid[64];
    size_t ndrop;
    int contiguous, decoded;
    uint64_t last_ts;
    int ts_order;
    uint64_t trig;
};

static int snap_visit(const struct v4_record *r, void *opaque)
{
    struct snap *s = opaque;

    if (r->mapping)
        return 0;
    if (r->ts < s->last_ts)
        s->ts_order = 0;
    s->last_ts = r->ts;
    if (r->dropped) {
        if (s->ndrop < 64) {
            s->drop_pid[s->ndrop] = r->pid;
            s->drop_by_pid_count[s->ndrop++] = r->drop_count;
        }
        return 0;
    }
    if (!strcmp(r->name, "fl_trig") || !strcmp(r->name, "late_trig")) {
        s->trig++;
        return 0;
    }
    uint64_t th = r->args[0].u, seq = r->args[1].u;
    if (th >= MAXT) {
        s->contiguous = 0;
        return 0;
    }
    if (s->n[th] == 0) {
        s->first[th] = seq;
        s->pid[th] = r->pid;
    } else if (seq != s->last[th] + 1 || r->pid != s->pid[th]) {
        if (s->contiguous)
            diag("thread %llu: seq %llu after %llu", (unsigned long long)th, (unsigned long long)seq,
                 (unsigned long long)s->last[th]);
        s->contiguous = 0;
    }
    s->last[th] = seq;
    s->n[th]++;
    return 0;
}

static int snap_read(struct snap *s, const char *path)
{
    struct v4_decoder d;
    int r;

    memset(s, 0, sizeof *s);
    s->contiguous = s->ts_order = 1;
    memset(&d, 0, sizeof d);
    d.kinds = test_kinds;
    d.kinds_opaque = (void *)fl_groups;
    d.visit = snap_visit;
    d.visit_opaque = s;
    r = v4_decode_file(&d, path);
    if (r)
        diag("decoding %s: %s", path, d.err);
    s->decoded = r == 0;
    v4_decoder_free(&d);
    return r;
}

/* The dropped count of thread index th (0 when it has no dropped record). */
static uint64_t snap_drops(const struct snap *s, int th)
{
    uint64_t c = 0;

    for (size_t i = 0; i < s->ndrop; i++)
        if (s->drop_pid[i] == s->pid[th])
            c += s->drop_by_pid_count[i];
    return c;
}

struct worker {
    pthread_t t;
    int idx;
    uint64_t n;       /* events to trace (busy: a bound) */
    uint64_t done;    /* events traced (atomic) */
    int *stop;
    uint32_t tid;     /* the thread's id, its records' pid (atomic) */
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;

    __atomic_store_n(&w->tid, (uint32_t)gettid(), __ATOMIC_RELAXED);
    for (uint64_t i = 0; i < w->n; i++) {
        if (w->stop && __atomic_load_n(w->stop, __ATOMIC_RELAXED))
            break;
        test_trace_ii(&fl_ev, (uint64_t)w->idx, i);
        __atomic_store_n(&w->done, i + 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void expect_einval(const char *config, const char *why)
{
    char err[256] = "";
    int r = st_configure(config, err, sizeof err);
    is_int(r, -EINVAL, "%s: '%s' is refused (%s)", why, config, err);
    ok(err[0] != '\0', "with a message");
}

/*
 * The dropped count a snapshot holding [first, last] of a thread must have
 * when the earlier ones held or counted everything below *next (the count
 * covers what none holds, an overlap is not counted); advances *next.
 */
static uint64_t expect_drops(uint64_t first, uint64_t last, uint64_t *next)
{
    uint64_t d = first > *next ? first - *next : 0;

    if (last + 1 > *next)
        *next = last + 1;
    return d;
}

/* Checks a snapshot of threads [0, nt) that traced want[i] events, the earlier snapshots having accounted for next[i]. */
static void check_snap(const char *path, int nt, const uint64_t *want, uint64_t *next, const char *what)
{
    struct snap s;

    ok(snap_read(&s, path) == 0, "%s: decodes strictly", what);
    ok(s.contiguous, "%s: every thread's records are contiguous", what);
    ok(s.ts_order, "%s: records in time order", what);
    for (int i = 0; i < nt; i++) {
        ok(s.n[i] > 0 && s.n[i] < want[i], "%s: thread %d: %llu of %llu records kept", what, i,
           (unsigned long long)s.n[i], (unsigned long long)want[i]);
        is_u64(s.last[i], want[i] - 1, "%s: thread %d: the newest record is its last one", what, i);
        is_u64(snap_drops(&s, i), expect_drops(s.first[i], s.last[i], &next[i]),
               "%s: thread %d: dropped count = records no snapshot holds since the last one", what, i);
    }
}

static void part_api(void)
{
    enum { NT = 3 };
    struct worker w[NT];
    uint64_t want[NT + 1], prev[NT + 1] = {0};
    char err[256];
    const char *crashdir = test_path("crash");

    mkdir(crashdir, 0700);
    is_int(st_trace_snapshot(NULL), -EINVAL, "snapshot outside flight mode: -EINVAL");
    expect_einval("flight=3K", "size not a power of two / too small");
    expect_einval("flight=2G", "size too large");
    expect_einval("flight=banana", "size not a number");
    expect_einval("flight=64K,file=x.trace", "flight= and file=");
    {
        char cfg[700];
        snprintf(cfg, sizeof cfg, "flight=64K,crash=%s", crashdir);
        expect_einval(cfg, "flight= and crash=");
    }
    expect_einval("flight=64K,flight-signal=SIGFOO", "unknown signal");
    expect_einval("flight=64K,bufsize=1M", "flight= and bufsize=");
    expect_einval("flight-signal=USR2", "flight-signal without flight=");
    is_int(st_configure("flight=" RING ",fl_ev", err, sizeof err), 0, "flight=" RING ": accepted (%s)", err);
    is_int(st_trace_file_set_enabled(true), -EINVAL, "a trace file in flight mode: -EINVAL");
    expect_einval("file=y.trace", "file= in flight mode");
    {
        char cfg[700];
        snprintf(cfg, sizeof cfg, "crash=%s", crashdir);
        expect_einval(cfg, "crash= in flight mode");
    }
    rmdir(crashdir);

    for (int i = 0; i < NT; i++) {
        w[i] = (struct worker){.idx = i, .n = 20000 + 7000 * (uint64_t)i};
        want[i] = w[i].n;
        pthread_create(&w[i].t, NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < NT; i++)
        pthread_join(w[i].t, NULL);
    is_int(tu_dir_count(test_dir, "", "xdg"), 0, "nothing is written before a snapshot");
    is_int(st_trace_snapshot(test_path("s1")), 0, "st_trace_snapshot(PATH)");
    check_snap(test_path("s1"), NT, want, prev, "snapshot 1");

    /* Two in a row, the main thread (index NT) tracing between them. */
    for (uint64_t i = 0; i < 5000; i++)
        test_trace_ii(&fl_ev, NT, i);
    want[NT] = 5000;
    is_int(st_trace_snapshot(NULL), 0, "st_trace_snapshot(NULL)");
    {
        char name[64];
        snprintf(name, sizeof name, "snapshot-%ld-0", (long)getpid());
        ok(test_exists(name), "default name %s", name);
        check_snap(name, NT + 1, want, prev, "snapshot 2");
    }
    for (uint64_t i = 5000; i < 12000; i++)
        test_trace_ii(&fl_ev, NT, i);
    want[NT] = 12000;
    is_int(st_trace_snapshot(test_path("s3")), 0, "a third snapshot");
    {
        struct snap s;
        snap_read(&s, test_path("s3"));
        ok(s.decoded && s.contiguous, "snapshot 3 decodes, contiguous");
        is_u64(s.last[NT], 11999, "snapshot 3: main thread's newest record");
        is_u64(snap_drops(&s, NT), expect_drops(s.first[NT], s.last[NT], &prev[NT]),
               "snapshot 3: main thread's count covers only what snapshot 2 did not hold");
        for (int i = 0; i < NT; i++)
            is_u64(snap_drops(&s, i), 0, "snapshot 3: exited thread %d lost nothing since", i);
    }
    is_int(st_trace_snapshot(""), -EINVAL, "empty path: -EINVAL");
    ok(st_trace_snapshot("/nonexistent-dir/x") < 0, "unwritable path: an error");
}

static void part_signal(void)
{
    enum { NT = 2 };
    struct worker w[NT];
    uint64_t want[NT], prev[NT] = {0};
    char err[256], name[64];
    int found = 0;

    is_int(st_configure("flight=" RING ",flight-signal=SIGUSR2,fl_ev", err, sizeof err), 0, "flight-signal=SIGUSR2 (%s)", err);
    for (int i = 0; i < NT; i++) {
        w[i] = (struct worker){.idx = i, .n = 30000};
        want[i] = w[i].n;
        pthread_create(&w[i].t, NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < NT; i++)
        pthread_join(w[i].t, NULL);
    is_int(tu_dir_count(test_dir, "", "xdg"), 0, "nothing is written before the signal");
    snprintf(name, sizeof name, "snapshot-%ld-0", (long)getpid());
    raise(SIGUSR2);
    /* The snapshot thread writes it; wait (bounded) until it decodes whole. */
    for (int k = 0; k < 1000 && !found; k++) {
        struct snap s;
        sleep_ms(10);
        if (test_exists(name) && test_file_size(name) > 0) {
            sleep_ms(50);
            found = snap_read(&s, name) == 0 && s.n[0] && s.n[1];
        }
    }
    ok(found, "the signal wrote %s", name);
    if (found)
        check_snap(name, NT, want, prev, "signal snapshot");
}

static void part_trigger(void)
{
    enum { NT = 2 };
    struct worker w[NT];
    uint64_t want[NT], prev[NT] = {0};
    char err[256], name[64];
    int found = 0;

    expect_einval("flight-trigger=fl_trig", "flight-trigger without flight=");
    expect_einval("flight=" RING ",flight-trigger=fl_*", "flight-trigger with a pattern");
    is_int(st_configure("flight=" RING ",flight-trigger=fl_trig,fl_*", err, sizeof err), 0, "flight-trigger=fl_trig (%s)", err);
    for (int i = 0; i < NT; i++) {
        w[i] = (struct worker){.idx = i, .n = 30000};
        want[i] = w[i].n;
        pthread_create(&w[i].t, NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < NT; i++)
        pthread_join(w[i].t, NULL);
    sleep_ms(100); /* the scanner runs meanwhile: fl_ev takes no snapshot */
    is_int(tu_dir_count(test_dir, "", "xdg"), 0, "nothing is written before the trigger event");
    snprintf(name, sizeof name, "snapshot-%ld-0", (long)getpid());
    test_trace_void(&fl_trig);
    for (int k = 0; k < 1000 && !found; k++) {
        struct snap s;
        sleep_ms(10);
        if (test_exists(name) && test_file_size(name) > 0) {
            sleep_ms(50);
            found = snap_read(&s, name) == 0 && s.trig == 1;
        }
    }
    ok(found, "the trigger event wrote %s, holding it", name);
    if (found)
        check_snap(name, NT, want, prev, "trigger snapshot");
    sleep_ms(100);
    is_int(tu_dir_count(test_dir, "", "xdg"), 1, "one trigger, one snapshot");
}

static void part_exit(void)
{
    char name[64];
    struct snap s;
    int status = -1;
    pid_t pid = fork();

    if (pid == 0) {
        /* A 10 ms scan period is far longer than this child lives. */
        if (st_configure("flight=" RING ",flight-trigger=fl_trig,fl_*", NULL, 0) < 0)
            _exit(3);
        test_trace_void(&fl_trig);
        exit(0);
    }
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child traced the trigger and exited");
    snprintf(name, sizeof name, "snapshot-%ld-0", (long)pid);
    ok(test_exists(name) && snap_read(&s, name) == 0 && s.trig == 1, "its snapshot %s was taken at exit, holding it",
       name);
    is_int(tu_dir_count(test_dir, "", "xdg"), 1, "one trigger, one snapshot");
}

static void part_monitor(void)
{
    enum { NT = 2 };
    struct worker w[NT];
    uint64_t want[NT], prev[NT] = {0};
    char err[256], cmd[800], a[4096];
    int up = 0;

    is_int(st_configure("flight=" RING ",monitor=on,fl_ev", err, sizeof err), 0, "flight with monitor=on (%s)", err);
    for (int k = 0; k < 500 && !(up = test_exists(sockpath)); k++)
        sleep_ms(10);
    ok(up, "the socket appears");
    for (int i = 0; i < NT; i++) {
        w[i] = (struct worker){.idx = i, .n = 25000};
        want[i] = w[i].n;
        pthread_create(&w[i].t, NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < NT; i++)
        pthread_join(w[i].t, NULL);
    snprintf(cmd, sizeof cmd, "trace-file snapshot %s\n", test_path("m1"));
    ok(mon_cmd(cmd, a, sizeof a) == 0 && strstr(a, "ok\n"), "trace-file snapshot PATH answers ok: %s", a);
    check_snap(test_path("m1"), NT, want, prev, "monitor snapshot");
    ok(mon_cmd("trace-file on\n", a, sizeof a) == 0 && strstr(a, "error"), "trace-file on in flight mode is an error: %s", a);
    ok(mon_cmd("trace-file snapshot\n", a, sizeof a) == 0 && strstr(a, "ok\n"), "trace-file snapshot (default name)");
    snprintf(cmd, sizeof cmd, "snapshot-%ld-0", (long)getpid());
    ok(test_exists(cmd), "wrote %s", cmd);
}

static void part_busy(void)
{
    enum { NT = 2, SNAPS = 6 };
    struct worker w[NT];
    int stop = 0;
    char err[256];
    int all_ok = 1;

    is_int(st_configure("flight=" RING ",fl_ev", err, sizeof err), 0, "flight=" RING " (%s)", err);
    for (int i = 0; i < NT; i++) {
        w[i] = (struct worker){.idx = i, .n = test_scale(50000000, 2000000), .stop = &stop};
        pthread_create(&w[i].t, NULL, worker_main, &w[i]);
    }
    for (int k = 0; k < SNAPS; k++) {
        char name[32];
        struct snap s;
        sleep_ms(20);
        snprintf(name, sizeof name, "b%d", k);
        if (st_trace_snapshot(test_path(name)) != 0 || snap_read(&s, test_path(name)) != 0 || !s.contiguous) {
            diag("snapshot %d failed", k);
            all_ok = 0;
        }
        unlink(test_path(name)); /* bounded disk */
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < NT; i++)
        pthread_join(w[i].t, NULL);
    ok(all_ok, "%d snapshots while 2 threads trace: each decodes strictly, nothing torn, contiguous", SNAPS);
}

/*
 * Many threads' view of a snapshot (exact, churn): per thread index (the
 * events' first argument) the range held, and every dropped record.
 */
#define MANY 256
#define KEEP_EXITED 8 /* ST_RING_KEEP_EXITED (src/runtime/core/ring.h): exited rings kept with few threads running */
struct many {
    uint64_t n[MANY], first[MANY], last[MANY];
    uint32_t pid[MANY];
    uint32_t drop_pid[1024];
    uint64_t drop_count[1024];
    size_t ndrop;
    int ok; /* decoded, every thread's records contiguous, nothing unexpected */
};

static int many_visit(const struct v4_record *r, void *opaque)
{
    struct many *m = opaque;
    uint64_t th, seq;

    if (r->mapping)
        return 0;
    if (r->dropped) {
        if (m->ndrop == 1024) {
            m->ok = 0;
            return 0;
        }
        m->drop_pid[m->ndrop] = r->pid;
        m->drop_count[m->ndrop++] = r->drop_count;
        return 0;
    }
    th = r->args[0].u;
    seq = r->args[1].u;
    if (th >= MANY || (m->n[th] && (seq != m->last[th] + 1 || r->pid != m->pid[th]))) {
        m->ok = 0;
        return 0;
    }
    if (!m->n[th]) {
        m->first[th] = seq;
        m->pid[th] = r->pid;
    }
    m->last[th] = seq;
    m->n[th]++;
    return 0;
}

static void many_read(struct many *m, const char *path)
{
    struct v4_decoder d;

    memset(m, 0, sizeof *m);
    m->ok = 1;
    memset(&d, 0, sizeof d);
    d.kinds = test_kinds;
    d.kinds_opaque = (void *)fl_groups;
    d.visit = many_visit;
    d.visit_opaque = m;
    if (v4_decode_file(&d, path)) {
        diag("decoding %s: %s", path, d.err);
        m->ok = 0;
    }
    v4_decoder_free(&d);
}

static uint64_t many_drops(const struct many *m, uint32_t pid)
{
    uint64_t c = 0;

    for (size_t i = 0; i < m->ndrop; i++)
        if (m->drop_pid[i] == pid)
            c += m->drop_count[i];
    return c;
}

/*
 * Accounting of one thread across snapshots read in order: next is the
 * first event no snapshot held or counted so far. A snapshot that holds
 * [first, last] must count exactly [next, first) (per-gap check); one that
 * holds nothing of it (its copy overwritten meanwhile) counts what was
 * evicted before it, unchecked here but covered by the sum check.
 */
struct acct {
    uint64_t next, held, dropped;
    int gaps_ok;
};

static void acct_snap(struct acct *a, const struct many *m, int th, uint32_t pid)
{
    uint64_t d = many_drops(m, pid);

    a->dropped += d;
    if (!m->n[th]) {
        a->next += d;
        return;
    }
    if (d != (m->first[th] > a->next ? m->first[th] - a->next : 0)) {
        if (a->gaps_ok)
            diag("thread %d: count %llu, held from %llu, accounted up to %llu", th, (unsigned long long)d,
                 (unsigned long long)m->first[th], (unsigned long long)a->next);
        a->gaps_ok = 0;
    }
    if (m->first[th] > a->next)
        a->next = m->first[th];
    if (m->last[th] + 1 > a->next) {
        a->held += m->last[th] + 1 - a->next;
        a->next = m->last[th] + 1;
    }
}

static void part_exact(void)
{
    enum { NT = 3, SNAPS = 10 };
    struct worker w[NT];
    struct acct a[NT];
    int stop = 0, all_ok = 1, overlap = 0;
    char err[256];

    is_int(st_configure("flight=" RING ",fl_ev", err, sizeof err), 0, "flight=" RING " (%s)", err);
    for (int i = 0; i < NT; i++) {
        w[i] = (struct worker){.idx = i, .n = UINT64_MAX, .stop = &stop};
        a[i] = (struct acct){.gaps_ok = 1};
        pthread_create(&w[i].t, NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < NT; i++)
        while (!__atomic_load_n(&w[i].done, __ATOMIC_RELAXED))
            sleep_ms(1);
    /* SNAPS while they trace flat out (some 1 ms apart: consecutive ones then overlap), then one after */
    for (int k = 0; k <= SNAPS; k++) {
        char name[32];
        struct many m;
        if (k == SNAPS) {
            __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
            for (int i = 0; i < NT; i++)
                pthread_join(w[i].t, NULL);
        } else {
            sleep_ms(k % 2 ? 1 : 7);
        }
        snprintf(name, sizeof name, "e%d", k);
        if (st_trace_snapshot(test_path(name)) != 0)
            all_ok = 0;
        many_read(&m, test_path(name));
        all_ok &= m.ok;
        for (int i = 0; i < NT; i++) {
            overlap |= m.n[i] && m.first[i] < a[i].next;
            acct_snap(&a[i], &m, i, w[i].tid);
        }
        unlink(test_path(name));
    }
    ok(all_ok, "%d snapshots while 3 threads trace, and one after: each decodes, contiguous per thread", SNAPS);
    for (int i = 0; i < NT; i++) {
        ok(a[i].gaps_ok, "thread %d: each dropped count = the events between what the snapshots before held and what this one holds", i);
        is_u64(a[i].held + a[i].dropped, w[i].done, "thread %d: held %llu + dropped %llu = traced", i,
               (unsigned long long)a[i].held, (unsigned long long)a[i].dropped);
    }
    diag("consecutive snapshots overlapped: %s", overlap ? "yes" : "no");
}

/* Waits (bounded) until the default-named snapshot n exists and decodes with its trigger record or not. */
static int wait_snapshot(unsigned n)
{
    char name[64];
    struct snap s;

    snprintf(name, sizeof name, "snapshot-%ld-%u", (long)getpid(), n);
    for (int k = 0; k < 500; k++) {
        sleep_ms(10);
        if (test_exists(name) && test_file_size(name) > 0) {
            sleep_ms(50);
            return snap_read(&s, name) == 0;
        }
    }
    return 0;
}

/* The trigger, then at once enough records to overwrite it many times over. */
static void trigger_buried(struct st_event *trig)
{
    test_trace_void(trig);
    for (uint64_t i = 0; i < 10000; i++)
        test_trace_ii(&fl_ev, 0, i);
}

static void part_burst(void)
{
    char err[256];

    is_int(st_configure("flight=4K,flight-trigger=fl_trig,fl_*", err, sizeof err), 0, "flight=4K,flight-trigger=fl_trig (%s)",
           err);
    for (int round = 0; round < 3; round++) {
        trigger_buried(&fl_trig);
        ok(wait_snapshot((unsigned)round), "round %d: a trigger overwritten at once still takes a snapshot", round);
    }
    sleep_ms(100);
    is_int(tu_dir_count(test_dir, "", "xdg"), 3, "one snapshot per trigger (the producer and the scan never both report it)");
}

static void part_late(void)
{
    char err[256];

    is_int(st_configure("flight=4K,flight-trigger=late_trig,fl_*,late_*", err, sizeof err), 0,
           "flight-trigger= of a group not registered yet (%s)", err);
    for (uint64_t i = 0; i < 10000; i++) /* fills the ring: nothing is a trigger yet */
        test_trace_ii(&fl_ev, 0, i);
    sleep_ms(50);
    is_int(tu_dir_count(test_dir, "", "xdg"), 0, "no snapshot before the trigger");
    is_int(st_group_register(&late_grp), 0, "the trigger's group registers");
    trigger_buried(&late_trig);
    ok(wait_snapshot(0), "its trigger, overwritten at once, takes a snapshot");
    sleep_ms(100);
    is_int(tu_dir_count(test_dir, "", "xdg"), 1, "one snapshot");
}

static void part_churn(void)
{
    enum { THREADS = 200, BATCH = 4, EVENTS = 300 };
    static struct worker w[THREADS];
    static struct acct a[THREADS];
    uint64_t lost = 0, traced = 0, held = 0, dropped = 0;
    uint32_t max_threads = 0;
    int all_ok = 1, snaps = 0, gaps_ok = 1;
    char err[256];

    is_int(st_configure("flight=4K,fl_ev", err, sizeof err), 0, "flight=4K (%s)", err);
    for (int first = 0; first <= THREADS; first += BATCH) {
        struct st_stats st = {.struct_size = sizeof st};
        for (int i = first; i < first + BATCH && i < THREADS; i++) {
            w[i] = (struct worker){.idx = i, .n = EVENTS + (uint64_t)i};
            a[i] = (struct acct){.gaps_ok = 1};
            pthread_create(&w[i].t, NULL, worker_main, &w[i]);
        }
        for (int i = first; i < first + BATCH && i < THREADS; i++)
            pthread_join(w[i].t, NULL);
        st_stats_get(&st);
        if (st.threads > max_threads)
            max_threads = st.threads;
        /* Snapshots now and then, and after the last thread (first == THREADS). */
        if (first % (BATCH * 7) == 0 || first == THREADS) {
            char name[32];
            struct many m;
            snprintf(name, sizeof name, "c%d", snaps++);
            if (st_trace_snapshot(test_path(name)) != 0)
                all_ok = 0;
            many_read(&m, test_path(name));
            all_ok &= m.ok;
            for (int i = 0; i < first + BATCH && i < THREADS; i++)
                acct_snap(&a[i], &m, i, w[i].tid);
            lost += many_drops(&m, 0xffffffffu);
            unlink(test_path(name));
        }
    }
    for (int i = 0; i < THREADS; i++) {
        traced += w[i].done;
        held += a[i].held;
        dropped += a[i].dropped;
        gaps_ok &= a[i].gaps_ok;
    }
    ok(max_threads <= KEEP_EXITED, "rings kept after each batch: at most %d (%u)", KEEP_EXITED, max_threads);
    ok(all_ok, "%d snapshots decode, every thread contiguous", snaps);
    ok(gaps_ok, "per thread: each dropped count = the events between what earlier snapshots held and what it holds");
    ok(lost > 0, "freed rings' records no snapshot held are counted as lost drops (%llu)", (unsigned long long)lost);
    is_u64(held + dropped + lost, traced, "held %llu + dropped %llu + lost %llu = traced", (unsigned long long)held,
           (unsigned long long)dropped, (unsigned long long)lost);
}

/* Runs argv; its exit status, stdout in *out when asked (freed by the caller). */
static int run_tool(char *const argv[], char **out)
{
    struct tu_run r;
    int st;

    if (tu_run(argv, NULL, NULL, out == NULL, &r) < 0)
        return -1;
    st = r.status;
    if (out) {
        *out = r.out;
        r.out = NULL;
    }
    tu_run_free(&r);
    return st;
}

/* Whether path starts as a zstd frame does (magic 0xFD2FB528, little-endian). */
static bool zstd_magic(const char *path)
{
    unsigned char m[4] = {0};
    FILE *f = fopen(path, "rb");
    bool yes = f && fread(m, 1, 4, f) == 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd;

    if (f)
        fclose(f);
    return yes;
}

/* zstd -d path -o path.dec, and zstd -l's count of skippable frames (-1 when zstd fails). */
static int unzstd(const char *path, char *dec, size_t len)
{
    char *out = NULL;
    snprintf(dec, len, "%s.dec", path);
    char *d[] = {"zstd", "-q", "-d", "-f", (char *)path, "-o", dec, NULL}, *l[] = {"zstd", "-l", "-v", (char *)path, NULL};
    if (run_tool(d, NULL) != 0 || run_tool(l, &out) != 0) {
        free(out);
        return -1;
    }
    const char *sk = strstr(out, "Skippable Frames: ");
    int n = sk ? atoi(sk + 18) : -1;
    free(out);
    return n;
}

static void part_compress(void)
{
    enum { NT = 3 };
    struct worker w[NT];
    uint64_t want[NT], prev[NT] = {0};
    char err[256], dec[600], name[64];
    struct snap z, p;
    struct st_reader *r;
    struct st_reader_compression c = {.struct_size = sizeof c};
    const struct st_record *rec;
    uint64_t nrec = 0, held = 0;
    bool found = false;

    is_int(st_configure("flight=" RING ",compress=zstd,flight-signal=SIGUSR2,fl_ev", err, sizeof err), 0,
           "flight=" RING ",compress=zstd: accepted (%s)", err);
    for (int i = 0; i < NT; i++) {
        w[i] = (struct worker){.idx = i, .n = 20000 + 5000 * (uint64_t)i};
        want[i] = w[i].n;
        pthread_create(&w[i].t, NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < NT; i++)
        pthread_join(w[i].t, NULL);
    is_int(tu_dir_count(test_dir, "", "xdg"), 0, "nothing is written before a snapshot");
    is_int(st_trace_snapshot(test_path("z1")), 0, "st_trace_snapshot(PATH) with compress=zstd");
    ok(zstd_magic(test_path("z1")), "the snapshot is zstd frames");
    is_int(unzstd(test_path("z1"), dec, sizeof dec), 3, "zstd -d reads it; zstd -l: its summary, time index and seek table");
    check_snap(dec, NT, want, prev, "compressed snapshot");
    snap_read(&z, dec);
    ok(st_reader_open(&r, test_path("z1"), NULL, NULL, NULL) == 0, "the reader opens it");
    while (st_reader_next(r, &rec) == 1)
        nrec += !rec->dropped;
    st_reader_get_compression(r, &c);
    for (int i = 0; i < NT; i++)
        held += z.n[i];
    ok(st_reader_error(r)->code == 0 && nrec == held && c.compressed && c.seekable,
       "... reads its %llu records, compressed and seekable (%llu)", (unsigned long long)held,
       (unsigned long long)nrec);
    st_reader_close(r);

    /* compress=off, nothing traced since: the same records, plain. */
    is_int(st_configure("compress=off", err, sizeof err), 0, "compress=off in flight mode (%s)", err);
    is_int(st_trace_snapshot(test_path("p1")), 0, "a snapshot with compress=off");
    ok(!zstd_magic(test_path("p1")) && snap_read(&p, test_path("p1")) == 0, "... plain v4, decoded strictly");
    bool same = true;
    for (int i = 0; i < NT; i++)
        same &= p.n[i] == z.n[i] && p.first[i] == z.first[i] && p.last[i] == z.last[i] && snap_drops(&p, i) == 0;
    ok(same, "... the compressed one's records, thread by thread, none counted as dropped again");

    /* The signal's snapshot (the flight thread's, default name) with compress=zstd. */
    is_int(st_configure("compress=zstd:9", err, sizeof err), 0, "compress=zstd:9 (%s)", err);
    for (uint64_t i = 0; i < 3000; i++)
        test_trace_ii(&fl_ev, NT, i); /* this thread, index NT */
    snprintf(name, sizeof name, "snapshot-%ld-0", (long)getpid());
    raise(SIGUSR2);
    for (int k = 0; k < 1000 && !found; k++) { /* written by the flight thread: wait (bounded) until it is whole */
        sleep_ms(10);
        found = test_exists(name) && unzstd(name, dec, sizeof dec) == 3;
    }
    ok(found && zstd_magic(name), "the signal wrote %s compressed, its tables at the end", name);
    ok(found && snap_read(&z, dec) == 0 && z.contiguous && z.n[NT] && z.last[NT] == 2999,
       "... zstd -d of it decodes strictly, this thread's records contiguous up to its last one");
}

int main(int argc, char **argv)
{
    const char *part = argc > 1 ? argv[1] : "api";

    setup();
    if (chdir(test_dir) < 0) {
        perror(test_dir);
        return 2;
    }
    if (!strcmp(part, "api"))
        part_api();
    else if (!strcmp(part, "signal"))
        part_signal();
    else if (!strcmp(part, "monitor"))
        part_monitor();
    else if (!strcmp(part, "trigger"))
        part_trigger();
    else if (!strcmp(part, "busy"))
        part_busy();
    else if (!strcmp(part, "exact"))
        part_exact();
    else if (!strcmp(part, "burst"))
        part_burst();
    else if (!strcmp(part, "late"))
        part_late();
    else if (!strcmp(part, "churn"))
        part_churn();
    else if (!strcmp(part, "exit"))
        part_exit();
    else if (!strcmp(part, "compress"))
        part_compress();
    else {
        fprintf(stderr, "unknown part %s\n", part);
        return 2;
    }
    return done_testing();
}
