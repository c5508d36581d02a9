/*
 * The monitor keys of st_configure(), in process: their errors, an unsafe
 * socket directory (symlink, not a directory, open to others, someone
 * else's), all-or-nothing, the /tmp fallback, switching between on, PATH
 * and off, the timeout key, info trace while threads trace, and fork (the
 * child keeps none of the parent's sockets and may open its own).
 */
#include <pthread.h>

#include "mon_util.h"

TEST_EVENT(ev_a, "cfg_a", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_b, "cfg_b", "int x, const char *s", "x %d s %s", "is", 2, 0);
TEST_EVENT(ev_off, "cfg_off", "void", "", "", 0, ST_EVENT_COMPILED_OUT);
TEST_GROUP(grp_cfg, "cfg", &ev_a, &ev_b, &ev_off)

static char err[1400];

static void fails(const char *config, int ret, const char *msg)
{
    strcpy(err, "(unchanged)");
    is_int(st_configure(config, err, sizeof err), ret, "'%s' fails", config);
    is_str(err, msg, "'%s': message", config);
}

static void use_xdg(const char *dir)
{
    setenv("XDG_RUNTIME_DIR", dir, 1);
}

static void test_errors(void)
{
    char dir[800], msg[1200], target[1000];

    fails("monitor=", -EINVAL, "monitor=: want on, off or a socket path");
    fails("monitor-timeout=abc", -EINVAL, "invalid monitor-timeout 'abc': want N, Ns or Nms, from 1ms to 1 day");
    fails("monitor-timeout=0", -EINVAL, "invalid monitor-timeout '0': want N, Ns or Nms, from 1ms to 1 day");
    fails("monitor-timeout=5x", -EINVAL, "invalid monitor-timeout '5x': want N, Ns or Nms, from 1ms to 1 day");
    {
        char longp[300], cfg[400];
        memset(longp, 'x', 200);
        longp[200] = '\0';
        snprintf(cfg, sizeof cfg, "monitor=/%s", longp);
        is_int(st_configure(cfg, err, sizeof err), -ENAMETOOLONG, "a socket path over 107 bytes fails");
    }

    /* The directory is a symlink (to a perfectly good directory). */
    snprintf(dir, sizeof dir, "%s", test_path("x1"));
    mkdir(dir, 0700);
    snprintf(target, sizeof target, "%s", test_path("real"));
    mkdir(target, 0700);
    snprintf(msg, sizeof msg, "%s/simpletrace", dir);
    symlink(target, msg);
    use_xdg(dir);
    snprintf(msg, sizeof msg, "monitor: refusing %s/simpletrace: it is a symbolic link", dir);
    fails("cfg_a,monitor=on", -ENOTDIR, msg);
    is_int(st_event_get_state("cfg_a"), ST_EVENT_DISABLED, "all or nothing: cfg_a not enabled");
    {
        struct st_file_status fs = {.struct_size = sizeof fs};
        st_trace_file_status(&fs);
        ok(!fs.enabled, "all or nothing: no trace file");
    }

    /* Not a directory. */
    snprintf(dir, sizeof dir, "%s", test_path("x2"));
    mkdir(dir, 0700);
    snprintf(msg, sizeof msg, "%s/simpletrace", dir);
    test_write_file(msg, "");
    use_xdg(dir);
    snprintf(msg, sizeof msg, "monitor: refusing %s/simpletrace: it is not a directory", dir);
    fails("monitor=on", -ENOTDIR, msg);

    /* Open to the group. */
    snprintf(dir, sizeof dir, "%s", test_path("x3"));
    mkdir(dir, 0700);
    snprintf(msg, sizeof msg, "%s/simpletrace", dir);
    mkdir(msg, 0700);
    chmod(msg, 0770);
    use_xdg(dir);
    snprintf(msg, sizeof msg, "monitor: refusing %s/simpletrace: mode 0770 lets group or others in (want 0700)", dir);
    fails("monitor=on", -EPERM, msg);

    /* Someone else's. */
    if (geteuid() == 0) {
        snprintf(dir, sizeof dir, "%s", test_path("x4"));
        mkdir(dir, 0700);
        snprintf(msg, sizeof msg, "%s/simpletrace", dir);
        mkdir(msg, 0700);
        if (chown(msg, 65534, 65534) == 0) {
            use_xdg(dir);
            snprintf(msg, sizeof msg, "monitor: refusing %s/simpletrace: owned by uid 65534, not 0", dir);
            fails("monitor=on", -EPERM, msg);
        }
    } else {
        printf("ok %d - # SKIP a directory owned by someone else needs root\n", ++tap__count);
    }

    /* PATH taken: by a file, by a live listener. */
    snprintf(dir, sizeof dir, "%s", test_path("file.sock"));
    test_write_file(dir, "x");
    snprintf(msg, sizeof msg, "monitor=%s", dir);
    snprintf(target, sizeof target, "monitor: %s exists and is not a socket", dir);
    fails(msg, -EEXIST, target);
    {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        snprintf(dir, sizeof dir, "%s", test_path("busy.sock"));
        memcpy(sa.sun_path, dir, strlen(dir) < sizeof sa.sun_path ? strlen(dir) + 1 : 0);
        bind(fd, (struct sockaddr *)&sa, sizeof sa);
        listen(fd, 4);
        snprintf(msg, sizeof msg, "monitor=%s", dir);
        snprintf(target, sizeof target, "monitor: %s is in use by another process", dir);
        fails(msg, -EADDRINUSE, target);
        close(fd);
    }
    use_xdg(mon_xdg);
}

static void test_switching(void)
{
    char path[800], cfg[900], mine[800], *a;
    struct stat st1, st2;
    struct st_file_status fs = {.struct_size = sizeof fs};

    snprintf(mine, sizeof mine, "%s", mon_sock(getpid()));
    is_int(st_configure("monitor=on,monitor-timeout=200ms", err, sizeof err), 0, "monitor=on");
    st_trace_file_status(&fs);
    ok(!fs.enabled, "monitor keys alone do not enable the trace file");
    ok(stat(mine, &st1) == 0 && S_ISSOCK(st1.st_mode), "socket at $XDG_RUNTIME_DIR/simpletrace/PID.sock");
    a = mon_ask(mine, "info trace-events\n");
    is_str(a, "cfg_a : state 0\ncfg_b : state 0\ncfg_off : state 0 (unavailable)\nok\n", "it answers, in process");
    free(a);
    is_int(st_configure("monitor=on", err, sizeof err), 0, "monitor=on again");
    ok(stat(mine, &st2) == 0 && st1.st_ino == st2.st_ino, "... keeps the same socket");

    {
        int fd = mon_connect(mine), eof;
        double t0 = mon_now();
        char *ans = mon_read_answer(fd, 2000, &eof);
        ok(!strncmp(ans, "error: timeout", 14) && mon_now() - t0 < 1.0, "monitor-timeout=200ms applies");
        free(ans);
        close(fd);
    }

    snprintf(path, sizeof path, "%s", test_path("m.sock"));
    snprintf(cfg, sizeof cfg, "monitor=%s", path);
    is_int(st_configure(cfg, err, sizeof err), 0, "monitor=PATH");
    ok(!test_exists(mine), "the per-user socket is removed");
    a = mon_ask(path, "trace-event cfg_b on\n");
    /* The file is off here: the reply notes where the records go. */
    is_str(a,
           "enabled event \"cfg_b\"\n"
           "The trace file is off: these records stay in memory (info trace shows them) and are written nowhere "
           "until trace-file on.\nok\n",
           "PATH serves");
    free(a);
    is_int(st_event_get_state("cfg_b"), ST_EVENT_ENABLED, "and its commands act on this process");

    /* A relative PATH is made absolute: the socket is still removed after a chdir. */
    is_int(st_configure("monitor=rel.sock", err, sizeof err), 0, "monitor=relative PATH");
    ok(!test_exists(path) && test_exists(test_path("rel.sock")), "old socket removed, new one in the cwd");
    if (chdir("/") != 0)
        return;
    is_int(st_configure("monitor=off", err, sizeof err), 0, "monitor=off (from another directory)");
    ok(!test_exists(test_path("rel.sock")), "the socket is removed");
    ok(mon_connect(test_path("rel.sock")) == -ENOENT, "nobody to connect to");
    if (chdir(test_dir) != 0)
        return;

    /* XDG_RUNTIME_DIR unset or relative: /tmp/simpletrace-UID. */
    setenv("XDG_RUNTIME_DIR", "relative/dir", 1);
    is_int(st_configure("monitor=on", err, sizeof err), 0, "monitor=on without a usable XDG_RUNTIME_DIR");
    snprintf(path, sizeof path, "/tmp/simpletrace-%ld/%ld.sock", (long)geteuid(), (long)getpid());
    ok(test_exists(path), "socket in /tmp/simpletrace-UID");
    is_int(st_configure("monitor=off", err, sizeof err), 0, "off");
    ok(!test_exists(path), "removed");
    use_xdg(mon_xdg);
}

static int spinning;

static void *tracer(void *arg)
{
    (void)arg;
    for (uint64_t i = 0; __atomic_load_n(&spinning, __ATOMIC_RELAXED); i++)
        test_trace_iis(&ev_b, i, 0, "a string to make records of several sizes");
    return NULL;
}

/* info trace while threads trace and the writer drains: each snapshot is a clean v4 stream. */
static void test_snapshot_under_load(void)
{
    pthread_t th[2];
    int good = 0;

    char cfg[900];

    snprintf(cfg, sizeof cfg, "bufsize=16K,monitor=on,cfg_b,file=%s", test_path("load.bin"));
    is_int(st_configure(cfg, err, sizeof err), 0, "monitor on, cfg_b traced, 16K buffers");
    __atomic_store_n(&spinning, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, tracer, NULL);
    for (int k = 0; k < 10; k++) {
        char *a = mon_ask(mon_sock(getpid()), "info trace\n");
        char *data = a ? strstr(a, "data ") : NULL;
        size_t n = data ? strtoull(data + 5, NULL, 10) : 0;
        const uint8_t *p = data ? (const uint8_t *)strchr(data, '\n') + 1 : NULL;
        int whole = p != NULL && n >= 24;
        /* Walk it: header, mappings, then whole event records of cfg_b with ordered timestamps. */
        uint64_t last = 0;
        for (size_t off = 24; whole && off < n;) {
            uint64_t type, ts;
            uint32_t len;
            memcpy(&type, p + off, 8);
            if (type == 0) {
                memcpy(&len, p + off + 16, 4);
                off += 20 + len;
                continue;
            }
            memcpy(&ts, p + off + 16, 8);
            memcpy(&len, p + off + 24, 4);
            whole = off + 8 + len <= n && ts >= last && (len == 24 + 8 || len == 24 + 16 + 4 + 41);
            last = ts;
            off += 8 + (size_t)len;
        }
        good += whole;
        free(a);
    }
    __atomic_store_n(&spinning, 0, __ATOMIC_RELAXED);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    is_int(good, 10, "10 snapshots under load: whole records, time-ordered");
    st_configure("-cfg_b", NULL, 0);
    st_trace_file_set_enabled(false);
}

/* The socket descriptors open in this process ("socket:[INODE]" links), up to max; how many. */
static int socket_links(char links[][64], int max)
{
    char path[64], link[64];
    int n = 0;

    for (int fd = 0; fd < 1024 && n < max; fd++) {
        ssize_t l;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        l = readlink(path, link, sizeof link - 1);
        if (l > 0 && (link[l] = '\0', strncmp(link, "socket:", 7) == 0))
            snprintf(links[n++], sizeof links[0], "%s", link);
    }
    return n;
}

static void test_fork(void)
{
    char parent[900], theirs[64][64], mine_now[64][64], path_sock[800];
    int status, ntheirs;
    pid_t pid;

    snprintf(parent, sizeof parent, "%s", mon_sock(getpid()));
    st_configure("monitor=on", err, sizeof err);
    ok(test_exists(parent), "parent serves");
    ntheirs = socket_links(theirs, 64);
    pid = fork();
    if (pid == 0) {
        int code = 0, n;
        char *a;
        char mine[800];
        snprintf(mine, sizeof mine, "%s", mon_sock(getpid()));
        n = socket_links(mine_now, 64);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < ntheirs; j++)
                if (!strcmp(mine_now[i], theirs[j]))
                    code |= 1; /* kept a socket of the parent's monitor */
        if (!test_exists(mine))
            code |= 2; /* monitor=on: the child serves its own socket at once */
        if (st_configure("monitor=on", NULL, 0) != 0 || !test_exists(mine))
            code |= 4;
        a = mon_ask(mine, "info trace-events cfg_a\n");
        if (!a || strcmp(a, "cfg_a : state 0\nok\n") != 0)
            code |= 8;
        free(a);
        exit(code); /* atexit removes the child's socket, not the parent's */
    }
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status), "child exited");
    ok(!(WEXITSTATUS(status) & 1), "the fork child holds none of the parent's sockets");
    ok(!(WEXITSTATUS(status) & 2), "with monitor=on the child serves its own socket, <childpid>.sock, at once");
    ok(!(WEXITSTATUS(status) & 4), "configuring monitor=on again in the child keeps it");
    ok(!(WEXITSTATUS(status) & 8), "... which serves the child");
    ok(!test_exists(mon_sock(pid)), "the child's socket is removed at its exit");
    ok(test_exists(parent), "the parent's socket is still there");
    {
        char *a = mon_ask(parent, "info trace-events cfg_a\n");
        is_str(a, "cfg_a : state 0\nok\n", "and the parent still answers");
        free(a);
    }

    /* monitor=PATH is the parent's own: a fork child serves nothing unless it configures a monitor. */
    snprintf(path_sock, sizeof path_sock, "%s", test_path("explicit.sock"));
    snprintf(parent, sizeof parent, "monitor=%s", path_sock);
    is_int(st_configure(parent, err, sizeof err), 0, "monitor=PATH");
    pid = fork();
    if (pid == 0)
        exit(test_exists(mon_sock(getpid())) || mon_count_sockets() != 0 ? 1 : 0);
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "monitor=PATH: the fork child serves nothing, holds no socket");
    ok(test_exists(path_sock), "... and the parent still serves PATH");
    is_int(st_configure("monitor=on", err, sizeof err), 0, "back to monitor=on");
}

/* Run in a child: configure the monitor, then exit(0) from main. */
static void test_exit(void)
{
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        st_configure("monitor=on", NULL, 0);
        exit(test_exists(mon_sock(getpid())) ? 0 : 3);
    }
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a process with a monitor exits normally");
    ok(!test_exists(mon_sock(pid)), "its socket is gone after exit()");
}

int main(void)
{
    mon_setup();
    if (chdir(test_dir) != 0) /* default trace files land there */
        return 2;
    test_errors();
    test_switching();
    test_snapshot_under_load();
    if (TEST_UNDER_TSAN) {
        /* TSan cannot start threads in the child of a multi-threaded fork. */
        printf("ok %d - # SKIP fork and exit tests under ThreadSanitizer\n", ++tap__count);
    } else {
        test_exit();
        test_fork();
    }
    return done_testing();
}
