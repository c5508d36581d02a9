/*
 * A symbolic link planted where the runtime writes is never followed: the
 * trace file (file=), a rotated piece (rotate=), dir='s file, the crash
 * ring file and names file (crash=DIR), the monitor socket (monitor=on).
 * Each case runs a program whose SIMPLETRACE names the link and checks:
 * the link's target keeps its bytes (nor is a dangling link's target
 * created), the link stays, one line on stderr names it and says it is not
 * followed, and the program exits 0 (where the trace file is not the link,
 * it still gets the records). Last, in this process, a flight snapshot
 * to a link is refused with -ELOOP.
 *
 *   test_rt_symlink plant LINK TARGET CONFIG MODE  makes LINK (%p: its pid) -> TARGET, then runs
 *                                                  itself (MODE) under SIMPLETRACE=CONFIG, same pid
 *   test_rt_symlink run                            traces RECORDS records and exits 0
 *   test_rt_symlink run-thread                     the same from a thread that ends first (its ring,
 *                                                  file-backed with crash=, is freed before exit)
 */
#include <pthread.h>

#include "rt_test.h"

TEST_EVENT(ev_s, "sl_s", "int seq, const char *s", "seq %d s %s", "is", 2, 0);
TEST_GROUP(grp_sl, "symlink", &ev_s)

static struct st_group *const groups[] = {&grp_sl, NULL};

#define PROG "test_rt_symlink"
#define RECORDS 2000 /* about 250K: several 64K pieces */
#define PRECIOUS "the link's target: not a trace, not to be touched\n"
#define WHY "is a symbolic link, not followed"

static void trace_s(uint64_t seq, const char *s)
{
    if (st_event_enabled(&ev_s)) {
        struct st__record rec;
        uint32_t sl = st__strlen(s);
        if (st__simple_begin(&rec, &ev_s, 8 + 4 + (size_t)sl) == 0) {
            st__put_u64(&rec, seq);
            st__put_str(&rec, s, sl);
            st__simple_commit(&rec);
        }
    }
}

static int run(void)
{
    static const char text[] = "a string long enough to fill a 64K piece with a couple of thousand records "
                               "0123456789012345678901234567890123456789";

    for (uint64_t i = 0; i < RECORDS; i++)
        trace_s(i, text);
    return 0;
}

/* tmpl with every %p replaced by pid. */
static void expand_pid(char *buf, size_t len, const char *tmpl, long pid)
{
    size_t n = 0;

    for (; *tmpl && n + 24 < len; tmpl++) {
        if (tmpl[0] == '%' && tmpl[1] == 'p') {
            n += (size_t)snprintf(buf + n, len - n, "%ld", pid);
            tmpl++;
        } else {
            buf[n++] = *tmpl;
        }
    }
    buf[n] = '\0';
}

static void *run_thread(void *arg)
{
    (void)arg;
    run();
    return NULL;
}

/* run() in a thread of its own: the main thread's file-backed ring would outlive exit (a leak to LeakSanitizer). */
static int run_in_thread(void)
{
    pthread_t t;

    if (pthread_create(&t, NULL, run_thread, NULL) != 0)
        return 5;
    pthread_join(t, NULL);
    return 0;
}

/* LINK (%p: our pid) -> target, then exec ourselves in mode (the pid stays) with SIMPLETRACE=config. */
static int plant(const char *argv0, const char *link_tmpl, const char *target, const char *config, const char *mode)
{
    char link[1200];

    expand_pid(link, sizeof link, link_tmpl, (long)getpid());
    if (symlink(target, link) != 0) {
        perror(link);
        return 3;
    }
    setenv("SIMPLETRACE", config, 1);
    execl("/proc/self/exe", argv0, mode, (char *)NULL);
    perror("exec");
    return 4;
}

/* The lines of text holding needle. */
static int lines_with(const char *text, const char *needle)
{
    int n = 0;

    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[4096];
        snprintf(buf, sizeof buf, "%.*s", (int)len, line);
        n += strstr(buf, needle) != NULL;
        line = end ? end + 1 : NULL;
    }
    return n;
}

static int count_lines(const char *text)
{
    int n = 0;

    for (; text && *text; text++)
        n += *text == '\n';
    return n;
}

struct outcome {
    int status;
    pid_t pid;
    char link[1200]; /* as the message names it */
    char *err;       /* the program's stderr */
};

/*
 * Runs the program with a link at link_tmpl (in test_dir; %p its pid) to
 * target (in test_dir; made with PRECIOUS unless dangling) under config.
 */
static void run_case(struct outcome *o, const char *link_tmpl, const char *target, bool dangling,
                     const char *config, const char *const env[])
{
    char link_arg[1200], target_path[1200], errfile[1200];
    /* With crash=, a thread traces: the main thread's ring file is refused, or would be a leak. */
    char *mode = strstr(config, "crash=") && !strstr(link_tmpl, ".ring") ? "run-thread" : "run";
    char *argv[] = {PROG, "plant", link_arg, target_path, (char *)config, mode, NULL};

    snprintf(link_arg, sizeof link_arg, "%s/%s", test_dir, link_tmpl);
    snprintf(target_path, sizeof target_path, "%s/%s", test_dir, target);
    snprintf(errfile, sizeof errfile, "%s/stderr-%s", test_dir, target);
    if (!dangling)
        test_write_file(target_path, PRECIOUS);
    o->status = test_run_self_pid(argv, env, errfile, test_dir, &o->pid);
    o->err = tu_slurp(errfile, NULL);
    expand_pid(o->link, sizeof o->link, link_arg, (long)o->pid);
}

/* What every case checks: the program went on, the target is intact, one message names the link. */
static void check_common(const struct outcome *o, const char *what, const char *target, bool dangling,
                         const char *message_start)
{
    char target_path[1200], want[1400];
    struct stat st;
    char *text;

    snprintf(target_path, sizeof target_path, "%s/%s", test_dir, target);
    snprintf(want, sizeof want, "%s '%s' " WHY, message_start, o->link);
    ok(WIFEXITED(o->status) && WEXITSTATUS(o->status) == 0, "%s: the program exits 0 (status %#x)", what,
       (unsigned)o->status);
    if (dangling) {
        ok(!test_exists(target_path), "%s: the dangling link's target was not created", what);
    } else {
        text = tu_slurp(target_path, NULL);
        ok(text && !strcmp(text, PRECIOUS), "%s: the link's target keeps its bytes", what);
        free(text);
    }
    ok(lstat(o->link, &st) == 0 && S_ISLNK(st.st_mode), "%s: the link is still there", what);
    /* Beside it, at most the exit report's count of what the refusal cost (records, crash protection). */
    size_t report = (size_t)lines_with(o->err, "records lost: writing") + (size_t)lines_with(o->err, "without crash "
                                                                                                   "protection");
    if (!ok(lines_with(o->err, want) == 1 && (size_t)count_lines(o->err) == 1 + report && report <= 1,
            "%s: one line on stderr: ...%s", what, want))
        diag("stderr: %s", o->err ? o->err : "(none)");
}

/* The sl_s records of path (-1: it does not decode). */
static long records_in(const char *path)
{
    struct test_trace t;
    long n = -1;

    if (test_collect(path, groups, &t) == 0)
        n = (long)test_count(&t, "sl_s");
    test_trace_free(&t);
    return n;
}

static const char *const env_plain[] = {"SIMPLETRACE=", NULL};

/* file=LINK: refused like an unopenable file, nothing else configured. */
static void file_link(void)
{
    struct outcome o;
    char cfg[1400];

    snprintf(cfg, sizeof cfg, "enable=sl_*,file=%s/f.trace", test_dir);
    run_case(&o, "f.trace", "f.target", false, cfg, env_plain);
    check_common(&o, "file=", "f.target", false, "SIMPLETRACE: trace file");
    free(o.err);

    snprintf(cfg, sizeof cfg, "enable=sl_*,file=%s/fd.trace", test_dir);
    run_case(&o, "fd.trace", "fd.target", true, cfg, env_plain);
    check_common(&o, "file= (dangling link)", "fd.target", true, "SIMPLETRACE: trace file");
    free(o.err);
}

/* rotate=: piece 1 is a link (also one left dangling): the file stops after piece 0. */
static void piece_link(void)
{
    struct outcome o;
    char cfg[1400];
    long n;

    snprintf(cfg, sizeof cfg, "enable=sl_*,file=%s/r.trace,rotate=64K", test_dir);
    run_case(&o, "r.trace.1", "r.target", false, cfg, env_plain);
    check_common(&o, "rotated piece", "r.target", false, "trace file piece");
    n = records_in(test_path("r.trace"));
    ok(n > 0 && n < RECORDS && test_file_size(test_path("r.trace")) <= 65536,
       "rotated piece: piece 0 holds the records before it (%ld)", n);
    free(o.err);

    snprintf(cfg, sizeof cfg, "enable=sl_*,file=%s/rd.trace,rotate=64K", test_dir);
    run_case(&o, "rd.trace.1", "rd.target", true, cfg, env_plain);
    check_common(&o, "rotated piece (dangling link)", "rd.target", true, "trace file piece");
    free(o.err);
}

/* dir=DIR: the process's file DIR/PROG-PID.trace is a link. */
static void dir_link(void)
{
    struct outcome o;
    char cfg[1400];

    ok(mkdir(test_path("dd"), 0700) == 0, "dir=: the directory");
    snprintf(cfg, sizeof cfg, "enable=sl_*,dir=%s/dd", test_dir);
    run_case(&o, "dd/" PROG "-%p.trace", "d.target", false, cfg, env_plain);
    check_common(&o, "dir= file", "d.target", false, "SIMPLETRACE: trace file");
    free(o.err);
}

/* crash=DIR: the main thread's ring file, then the names file, are links; the trace file gets everything. */
static void crash_links(void)
{
    struct outcome o;
    char cfg[1400];

    ok(mkdir(test_path("cr"), 0700) == 0 && mkdir(test_path("cn"), 0700) == 0, "crash=: the directories");
    snprintf(cfg, sizeof cfg, "enable=sl_*,file=%s/c.trace,crash=%s/cr", test_dir, test_dir);
    run_case(&o, "cr/st-%p-%p.ring", "c.target", false, cfg, env_plain);
    check_common(&o, "crash ring file", "c.target", false, "crash ring file");
    is_int(records_in(test_path("c.trace")), RECORDS, "crash ring file: the trace file holds every record");
    free(o.err);

    snprintf(cfg, sizeof cfg, "enable=sl_*,file=%s/n.trace,crash=%s/cn", test_dir, test_dir);
    run_case(&o, "cn/st-%p.names", "n.target", false, cfg, env_plain);
    check_common(&o, "crash names file", "n.target", false, "crash names file");
    is_int(records_in(test_path("n.trace")), RECORDS, "crash names file: the trace file holds every record");
    free(o.err);
}

/* monitor=on: $XDG_RUNTIME_DIR/simpletrace/PID.sock is a link. */
static void monitor_link(void)
{
    struct outcome o;
    char xdg[1200];
    const char *env[] = {"SIMPLETRACE=", xdg, NULL};

    ok(mkdir(test_path("xdg"), 0700) == 0 && mkdir(test_path("xdg/simpletrace"), 0700) == 0,
       "monitor: the socket directory, 0700");
    snprintf(xdg, sizeof xdg, "XDG_RUNTIME_DIR=%s/xdg", test_dir);
    run_case(&o, "xdg/simpletrace/%p.sock", "m.target", false, "monitor=on", env);
    check_common(&o, "monitor socket", "m.target", false, "SIMPLETRACE: monitor: socket path");
    free(o.err);
}

/* A flight snapshot (st_trace_snapshot) to a link: refused with -ELOOP, the target intact; this process last. */
static void snapshot_link(void)
{
    char *text;

    is_int(st_configure("flight=64K,enable=sl_*", NULL, 0), 0, "flight=64K");
    run();
    test_write_file(test_path("s.target"), PRECIOUS);
    ok(symlink(test_path("s.target"), test_path("s.snap")) == 0, "snapshot: s.snap -> s.target");
    is_int(st_trace_snapshot(test_path("s.snap")), -ELOOP, "snapshot to the link: -ELOOP");
    text = tu_slurp(test_path("s.target"), NULL);
    ok(text && !strcmp(text, PRECIOUS), "snapshot: the link's target keeps its bytes");
    free(text);
    is_int(st_trace_snapshot(test_path("s.trace")), 0, "a snapshot to a plain name is written");
    ok(records_in(test_path("s.trace")) > 0, "and holds records");
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "run"))
        return run();
    if (argc > 1 && !strcmp(argv[1], "run-thread"))
        return run_in_thread();
    if (argc > 5 && !strcmp(argv[1], "plant"))
        return plant(argv[0], argv[2], argv[3], argv[4], argv[5]);
    test_tmpdir();
    file_link();
    piece_link();
    dir_link();
    crash_links();
    monitor_link();
    snapshot_link();
    return done_testing();
}
