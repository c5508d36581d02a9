/*
 * The hooks and the writer, driven directly: a child process (this program
 * re-executed with a configuration) calls __cyg_profile_func_enter/exit
 * with made-up function addresses, and the parent decodes the <tid>.dat
 * files it leaves (format/uftrace_format.h) and checks them record by record: types,
 * depths, addresses, magic, times, pairing, LOST accounting, plus the
 * task.txt and info files.
 *
 * This program is not built with -finstrument-functions: only the calls
 * written here reach the hooks.
 */
#include "tap.h"

#include "uftrace_format.h"
#include <simpletrace/functrace.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);

#define A ((void *)0x401000)
#define B ((void *)0x402000)
#define C ((void *)0x403000)
#define D ((void *)0x404000)
#define H ((void *)0x405000)

static void E(void *fn)
{
    __cyg_profile_func_enter(fn, NULL);
}
static void X(void *fn)
{
    __cyg_profile_func_exit(fn, NULL);
}

/* --- child side: one scenario each ---------------------------------------- */

static void *thread_left_open(void *arg)
{
    (void)arg;
    E(A);
    E(B);
    return NULL; /* no exits: the thread's end must close both frames */
}

static void on_signal(int sig)
{
    (void)sig;
    E(H);
    X(H);
}

static int child(const char *name)
{
    if (strcmp(name, "nest") == 0) {
        E(A); E(B); X(B); E(C); E(D); X(D); X(C); X(A);
    } else if (strcmp(name, "depth") == 0) {
        E(A); E(B); E(C); E(D); X(D); X(C); X(B); X(A);
    } else if (strcmp(name, "pause") == 0) {
        E(A);
        st_functrace_set_enabled(false);
        E(B); X(B); X(A);
        st_functrace_set_enabled(true);
        E(C); X(C);
    } else if (strcmp(name, "drops") == 0 || strcmp(name, "rotate") == 0) {
        for (int i = 0; i < 100000; i++) {
            E(A);
            X(A);
        }
        st_functrace_flush();
        struct st_functrace_stats s = {.struct_size = sizeof s};
        if (st_functrace_get_stats(&s) != 0)
            return 3;
        printf("written %llu lost %llu\n", (unsigned long long)s.written, (unsigned long long)s.lost);
    } else if (strcmp(name, "thread_end") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, thread_left_open, NULL);
        pthread_join(t, NULL);
    } else if (strcmp(name, "exit") == 0) {
        E(A); E(B); E(C);
        exit(0);
    } else if (strcmp(name, "flush") == 0) {
        E(A);
        printf("flush %d\n", st_functrace_flush());
        fflush(stdout);
        E(B); X(B); X(A);
    } else if (strcmp(name, "fork") == 0) {
        E(A);
        pid_t pid = fork();
        if (pid == 0) {
            E(B); X(B); X(A);
            exit(0);
        }
        waitpid(pid, NULL, 0);
        X(A);
    } else if (strcmp(name, "signal") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGPROF, &sa, NULL);
        struct itimerval it = {{0, 100}, {0, 100}};
        setitimer(ITIMER_PROF, &it, NULL);
        for (int i = 0; i < 2000000; i++) {
            E(A); E(B); X(B); X(A);
        }
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_PROF, &off, NULL);
    } else {
        return 2;
    }
    return 0;
}

/* --- parent side ----------------------------------------------------------- */

static char tmp[4096];

struct rec {
    uint64_t t, data;
};

struct file {
    int tid;
    struct rec *r;
    size_t n;
};

/* Reads every <tid>.dat of dir (up to max). */
static size_t read_dat(const char *dir, struct file *files, size_t max)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n < max) {
        int tid;
        char tail[8];
        if (sscanf(e->d_name, "%d.%7s", &tid, tail) != 2 || strcmp(tail, "dat") != 0)
            continue;
        char path[8400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        files[n].tid = tid;
        files[n].n = (size_t)len / sizeof(struct rec);
        files[n].r = malloc((size_t)len + 1);
        if (fread(files[n].r, sizeof(struct rec), files[n].n, f) != files[n].n)
            files[n].n = 0;
        fclose(f);
        n++;
    }
    if (d)
        closedir(d);
    return n;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Runs this program as `child NAME` with env; returns its data dir. */
static const char *spawn(const char *name, const char *const *env, char **out_text, uint64_t *t0, uint64_t *t1)
{
    static char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", tmp, name);
    char out_path[4300];
    snprintf(out_path, sizeof out_path, "%s/%s.out", tmp, name);
    *t0 = mono_ns();
    pid_t pid = fork();
    if (pid == 0) {
        freopen(out_path, "w", stdout);
        setenv("SIMPLETRACE_FUNC_DIR", dir, 1);
        unsetenv("SIMPLETRACE_FUNC");
        unsetenv("SIMPLETRACE_FUNC_JOIN");
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execl("/proc/self/exe", "test_ft_hooks", "child", name, (char *)NULL);
        _exit(127);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    *t1 = mono_ns();
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child exits 0", name);
    FILE *f = fopen(out_path, "r");
    char buf[4096] = "";
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    *out_text = strdup(buf);
    return dir;
}

/* Compares a file with an expected sequence "EA0 EB1 XB1 XA0 ...". */
static void expect_seq(const char *what, const struct file *f, const char *seq, uint64_t t0, uint64_t t1)
{
    char got[4096] = "";
    size_t len = 0;
    bool magic = true, times = true, window = true;
    for (size_t i = 0; i < f->n; i++) {
        uint64_t d = f->r[i].data;
        unsigned type = st__uft_rec_type(d);
        uint64_t addr = st__uft_rec_addr(d);
        char fn = addr >= 0x401000 && addr <= 0x405000 ? (char)('A' + (addr - 0x401000) / 0x1000) : '?';
        if (len < sizeof got - 8)
            len += (size_t)snprintf(got + len, sizeof got - len, "%s%c%c%u", len ? " " : "",
                                    type == ST_UFT_REC_ENTRY ? 'E' : type == ST_UFT_REC_EXIT ? 'X' : 'L', fn,
                                    st__uft_rec_depth(d));
        magic &= st__uft_rec_magic(d) == ST_UFT_REC_MAGIC && !st__uft_rec_more(d);
        times &= i == 0 || f->r[i].t >= f->r[i - 1].t;
        /* Times are CLOCK_MONOTONIC: within the child's lifetime (1 ms slack). */
        window &= f->r[i].t + 1000000 >= t0 && f->r[i].t <= t1 + 1000000;
    }
    is_str(got, seq, "%s: records", what);
    ok(magic, "%s: magic 5, more bit clear in every record", what);
    ok(times, "%s: times never go back", what);
    ok(window, "%s: times are CLOCK_MONOTONIC ns within the run", what);
}

static char *read_text(const char *dir, const char *name)
{
    char path[8400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void simple(const char *name, const char *const *env, const char *seq)
{
    char *out;
    uint64_t t0, t1;
    const char *dir = spawn(name, env, &out, &t0, &t1);
    struct file files[8];
    size_t n = read_dat(dir, files, 8);
    is_int(n, 1, "%s: one .dat file", name);
    if (n == 1)
        expect_seq(name, &files[0], seq, t0, t1);
    for (size_t i = 0; i < n; i++)
        free(files[i].r);
    free(out);
}

/* Every ENTRY/EXIT pairs by address and depth; after a LOST record the
 * stack restarts from the next record's depth, as uftrace does. */
static bool well_nested(const struct file *f, long *entries, long *lost)
{
    uint64_t stack[64];
    int sp = 0;
    bool resync = false;
    *entries = *lost = 0;
    for (size_t i = 0; i < f->n; i++) {
        uint64_t d = f->r[i].data;
        unsigned type = st__uft_rec_type(d), depth = st__uft_rec_depth(d);
        uint64_t addr = st__uft_rec_addr(d);
        if (type == ST_UFT_REC_LOST) {
            *lost += (long)addr;
            resync = true;
            continue;
        }
        if (depth >= 64)
            return false;
        if (resync) { /* frames below are unknown: take this record's word */
            sp = (int)depth + (type == ST_UFT_REC_EXIT);
            stack[sp - (type == ST_UFT_REC_EXIT)] = addr;
            resync = false;
        }
        if (type == ST_UFT_REC_ENTRY) {
            if (depth != (unsigned)sp)
                return false;
            stack[sp++] = addr;
            ++*entries;
        } else if (type == ST_UFT_REC_EXIT) {
            if (sp == 0 || stack[sp - 1] != addr || depth != (unsigned)sp - 1)
                return false;
            sp--;
        }
    }
    return true;
}

static void counted(const char *name, const char *const *env, bool want_lost)
{
    char *out;
    uint64_t t0, t1;
    const char *dir = spawn(name, env, &out, &t0, &t1);
    struct file files[8];
    size_t n = read_dat(dir, files, 8);
    is_int(n, 1, "%s: one .dat file", name);
    unsigned long long written = 0, lost_stat = 0;
    sscanf(out, "written %llu lost %llu", &written, &lost_stat);
    if (n == 1) {
        long lost = 0, records = 0, entries;
        for (size_t i = 0; i < files[0].n; i++)
            records += st__uft_rec_type(files[0].r[i].data) != ST_UFT_REC_LOST;
        ok(well_nested(&files[0], &entries, &lost), "%s: records nest (resyncing after LOST)", name);
        is_int(records + lost, 200000, "%s: records in the file + LOST counts = calls made x 2", name);
        is_int(written + lost_stat, 200000, "%s: stats: written + lost = records made", name);
        is_int(records, (long)written, "%s: stats.written = records in the file", name);
        if (want_lost)
            ok(lost > 0, "%s: one 4K buffer per thread drops records (%ld)", name, lost);
    }
    for (size_t i = 0; i < n; i++)
        free(files[i].r);
    free(out);
}

static void test_thread_end(void)
{
    char *out;
    uint64_t t0, t1;
    const char *dir = spawn("thread_end", NULL, &out, &t0, &t1);
    struct file files[8];
    size_t n = read_dat(dir, files, 8);
    is_int(n, 1, "thread_end: one .dat file (only the thread traced)");
    if (n == 1)
        expect_seq("thread_end", &files[0], "EA0 EB1 XB1 XA0", t0, t1);
    char *task = read_text(dir, "task.txt");
    char want[64];
    snprintf(want, sizeof want, "tid=%d ", n ? files[0].tid : -1);
    ok(strncmp(task, "SESS timestamp=", 15) == 0 && strstr(task, want), "thread_end: task.txt has SESS, then its TASK");
    free(task);
    for (size_t i = 0; i < n; i++)
        free(files[i].r);
    free(out);
}

static void test_exit(void)
{
    char *out;
    uint64_t t0, t1;
    const char *dir = spawn("exit", NULL, &out, &t0, &t1);
    struct file files[8];
    size_t n = read_dat(dir, files, 8);
    is_int(n, 1, "exit: one .dat file");
    if (n == 1)
        expect_seq("exit", &files[0], "EA0 EB1 EC2 XC2 XB1 XA0", t0, t1);
    char *info = read_text(dir, "info");
    {
        /* version 4 (u32) and size 40 (u16), in this machine's byte order as uftrace's format has them. */
        uint32_t version;
        uint16_t size;
        memcpy(&version, info + 8, 4);
        memcpy(&size, info + 12, 2);
        ok(memcmp(info, "Ftrace!\0", 8) == 0 && version == 4 && size == 40,
           "exit: info header magic, version 4, size 40");
    }
    char want[64];
    snprintf(want, sizeof want, "taskinfo:nr_tid=1\ntaskinfo:tids=%d\n", n ? files[0].tid : -1);
    ok(strstr(info + 40, want) != NULL, "exit: info lists the one tid");
    ok(strstr(info + 40, "exit_status:0\n") != NULL, "exit: exit status recorded");
    free(info);
    DIR *d = opendir(dir);
    struct dirent *e;
    bool map = false;
    while (d && (e = readdir(d)))
        map |= strncmp(e->d_name, "sid-", 4) == 0;
    if (d)
        closedir(d);
    ok(map, "exit: a sid-<SID>.map file is written");
    for (size_t i = 0; i < n; i++)
        free(files[i].r);
    free(out);
}

static void test_flush(void)
{
    char *out;
    uint64_t t0, t1;
    const char *dir = spawn("flush", NULL, &out, &t0, &t1);
    ok(strstr(out, "flush 0") != NULL, "flush: st_functrace_flush returns 0");
    struct file files[8];
    size_t n = read_dat(dir, files, 8);
    is_int(n, 1, "flush: one .dat file");
    if (n == 1)
        expect_seq("flush", &files[0], "EA0 EB1 XB1 XA0", t0, t1); /* nothing written twice */
    for (size_t i = 0; i < n; i++)
        free(files[i].r);
    free(out);
}

static void test_fork(void)
{
    char *out;
    uint64_t t0, t1;
    const char *dir = spawn("fork", NULL, &out, &t0, &t1);
    struct file files[8];
    size_t n = read_dat(dir, files, 8);
    is_int(n, 2, "fork: a .dat file per process");
    for (size_t i = 0; i < n && n == 2; i++) {
        bool is_child = files[i].n == 4;
        expect_seq(is_child ? "fork child" : "fork parent", &files[i],
                   is_child ? "EA0 EB1 XB1 XA0" : "EA0 XA0", t0, t1);
    }
    char *task = read_text(dir, "task.txt");
    int sess = 0, tasks = 0;
    for (char *p = strstr(task, "SESS "); p; p = strstr(p + 1, "SESS "))
        sess++;
    for (char *p = strstr(task, "TASK "); p; p = strstr(p + 1, "TASK "))
        tasks++;
    ok(sess == 2 && tasks == 2, "fork: task.txt has 2 sessions and 2 tasks");
    free(task);
    char *info = read_text(dir, "info");
    ok(strstr(info + 40, "taskinfo:nr_tid=2\n") != NULL, "fork: info lists both processes' tids");
    free(info);
    for (size_t i = 0; i < n; i++)
        free(files[i].r);
    free(out);
}

static void test_signal(void)
{
    char *out;
    uint64_t t0, t1;
    const char *dir = spawn("signal", NULL, &out, &t0, &t1);
    struct file files[8];
    size_t n = read_dat(dir, files, 8);
    is_int(n, 1, "signal: one .dat file");
    if (n == 1) {
        long entries, lost, a = 0, h = 0;
        ok(well_nested(&files[0], &entries, &lost) && lost == 0,
           "signal: handler calls never corrupt the records around them");
        for (size_t i = 0; i < files[0].n; i++) {
            uint64_t d = files[0].r[i].data;
            if (st__uft_rec_type(d) == ST_UFT_REC_ENTRY) {
                a += st__uft_rec_addr(d) == 0x401000;
                h += st__uft_rec_addr(d) == 0x405000;
            }
        }
        is_int(a, 2000000, "signal: every call of the interrupted loop recorded");
        diag("signal: %ld handler calls recorded", h);
    }
    for (size_t i = 0; i < n; i++)
        free(files[i].r);
    free(out);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "child") == 0)
        return child(argv[2]);
    snprintf(tmp, sizeof tmp, "%s/ft-hooks-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp)) {
        ok(0, "mkdtemp");
        return done_testing();
    }
    simple("nest", NULL, "EA0 EB1 XB1 EC1 ED2 XD2 XC1 XA0");
    const char *depth2[] = {"SIMPLETRACE_FUNC_DEPTH=2", NULL};
    simple("depth", depth2, "EA0 EB1 XB1 XA0");
    simple("pause", NULL, "EA0 XA0 EC0 XC0");
    const char *drops[] = {"SIMPLETRACE_FUNC_BUFSIZE=4K", "SIMPLETRACE_FUNC_BUFFERS=1", NULL};
    counted("drops", drops, true);
    const char *rotate[] = {"SIMPLETRACE_FUNC_BUFSIZE=64K", "SIMPLETRACE_FUNC_BUFFERS=64", NULL};
    counted("rotate", rotate, false);
    test_thread_end();
    test_exit();
    test_flush();
    test_fork();
    test_signal();
    int rc = done_testing();
    if (rc == 0) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd) != 0)
            diag("could not remove %s", tmp);
    } else {
        printf("# data kept in %s\n", tmp);
    }
    return rc;
}
