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
static struct st_group *const fl_groups[] = {&fl_grp, NULL};

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
    if (!strcmp(r->name, "fl_trig")) {
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

static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "xdg"))
            n++;
    closedir(d);
    return n;
}

struct worker {
    pthread_t t;
    int idx;
    uint64_t n;       /* events to trace (busy: a bound) */
    uint64_t done;    /* events traced (atomic) */
    int *stop;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;

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

/* Checks a snapshot of threads [0, nt) that traced want[i] events, the earlier snapshots having seen prev_first[i]. */
static void check_snap(const char *path, int nt, const uint64_t *want, uint64_t *prev_first, const char *what)
{
    struct snap s;

    ok(snap_read(&s, path) == 0, "%s: decodes strictly", what);
    ok(s.contiguous, "%s: every thread's records are contiguous", what);
    ok(s.ts_order, "%s: records in time order", what);
    for (int i = 0; i < nt; i++) {
        ok(s.n[i] > 0 && s.n[i] < want[i], "%s: thread %d: %llu of %llu records kept", what, i,
           (unsigned long long)s.n[i], (unsigned long long)want[i]);
        is_u64(s.last[i], want[i] - 1, "%s: thread %d: the newest record is its last one", what, i);
        is_u64(snap_drops(&s, i), s.first[i] - prev_first[i], "%s: thread %d: dropped count = records lost since the last snapshot",
               what, i);
        prev_first[i] = s.first[i];
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
    is_int(dir_entries(test_dir), 0, "nothing is written before a snapshot");
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
        is_u64(snap_drops(&s, NT), s.first[NT] - prev[NT], "snapshot 3: main thread's count covers only the interval");
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
    is_int(dir_entries(test_dir), 0, "nothing is written before the signal");
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
    is_int(dir_entries(test_dir), 0, "nothing is written before the trigger event");
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
    is_int(dir_entries(test_dir), 1, "one trigger, one snapshot");
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
    else {
        fprintf(stderr, "unknown part %s\n", part);
        return 2;
    }
    return done_testing();
}
