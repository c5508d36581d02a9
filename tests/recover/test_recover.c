/*
 * crash=DIR and `simpletrace recover`: a child process traces from three
 * threads into file-backed rings and dies (SIGKILL at random moments,
 * abort(), _exit(), SIGSEGV), with its trace file on or off; recover
 * rebuilds what was in memory and the test checks, per thread, that the
 * trace file (to its last whole record) followed by the recovered trace
 * hold every record the child had finished, once:
 *
 *   Each thread t traces seq 0, 1, 2, ... and, after each trace call
 *   returns, stores seq + 1 in committed[t] (shared memory). When it dies,
 *   thread t has produced P_t records with committed[t] <= P_t <=
 *   committed[t] + 1 (the call in progress may or may not have finished).
 *   Every produced record is either an event record in one of the two
 *   files or counted in one of their dropped records, exactly once:
 *     A. per thread the seqs across file then recovered trace strictly
 *        increase (nothing twice, nothing out of order);
 *     B. events + dropped counts == sum of P_t, i.e. it lies within
 *        [sum committed, sum committed + threads];
 *     C. no seq beyond committed[t] (nothing invented);
 *     D. without drops, each thread's seqs are exactly 0..n-1 and n >=
 *        committed[t] (contiguous: nothing missing).
 * A clean exit leaves no ring file behind and the trace file holds all.
 */
#include <dirent.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#include "faults/fault_test.h"

#define THREADS 3

struct shared {
    uint64_t committed[THREADS];
    int running;
};

static struct shared *sh;
static const char *cli;
static const char *extra = "";
static uint64_t clean_records; /* per thread, then the tracers return */ /* more configuration, e.g. small buffers */

enum death { D_KILL, D_ABORT, D_EXIT, D_SEGV, D_CLEAN };
static const char *const death_name[] = {"SIGKILL", "abort()", "_exit()", "SIGSEGV", "clean exit"};

static void *tracer(void *arg)
{
    uint64_t th = (uint64_t)(uintptr_t)arg, dummy = 0;
    struct timespec pause = {0, 100000};

    __atomic_fetch_add(&sh->running, 1, __ATOMIC_RELEASE);
    for (uint64_t seq = 0;; seq++) {
        ft_trace(th, seq, &dummy);
        __atomic_store_n(&sh->committed[th], seq + 1, __ATOMIC_RELEASE);
        if (seq % 64 == 63)
            nanosleep(&pause, NULL); /* about 0.5M records/s per thread: rings do not fill at once */
        if (seq + 1 == clean_records)
            return NULL; /* bounded, for the clean exit */
    }
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The child: configure, trace from THREADS threads, die as told after ms. */
static void child(const char *dir, int file_on, enum death how, long ms)
{
    pthread_t th[THREADS];
    char cfg[2000], err[256];

    if (file_on)
        snprintf(cfg, sizeof cfg, "ft_*,crash=%s,file=%s/trace%s", dir, dir, extra);
    else
        snprintf(cfg, sizeof cfg, "crash=%s%s", dir, extra);
    if (st_configure(cfg, err, sizeof err) != 0 || (!file_on && st_event_set_enabled("ft_*", true) < 0)) {
        fprintf(stderr, "child: %s\n", err);
        _exit(90);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, tracer, (void *)(uintptr_t)i);
    if (how == D_CLEAN) {
        for (int i = 0; i < THREADS; i++)
            pthread_join(th[i], NULL);
        exit(0);
    }
    sleep_ms(ms);
    switch (how) {
    case D_ABORT: abort();
    case D_EXIT: _exit(3);
    case D_SEGV: raise(SIGSEGV); break;
    default: break;
    }
    for (;;)
        pause(); /* SIGKILL comes from the parent */
}

/* Runs `simpletrace recover`; its exit status. */
static int run_recover(const char *dir, const char *trace, const char *out)
{
    int status = -1;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int fd = open(test_path("recover.err"), O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(fd, 2);
        dup2(fd, 1);
        if (trace)
            execl(cli, cli, "recover", "--trace", trace, dir, "-o", out, (char *)NULL);
        else
            execl(cli, cli, "recover", dir, "-o", out, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static unsigned ring_files(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    unsigned n = 0;

    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".ring") != NULL;
    if (d)
        closedir(d);
    return n;
}

static void one_run(int run, enum death how, int file_on, long ms)
{
    char dir[800], trace[900], out[900], what[200];
    uint64_t committed = 0, produced_lo, total;
    struct ft_sum s;
    uint64_t from_file = 0;
    int status = 0, ok_c = 1, ok_d = 1, rc;
    pid_t pid;

    snprintf(dir, sizeof dir, "%s", test_path(""));
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "run%d", run);
    mkdir(dir, 0755);
    snprintf(trace, sizeof trace, "%s/trace", dir);
    snprintf(out, sizeof out, "%s/recovered", dir);
    snprintf(what, sizeof what, "run %d: %s after %ld ms, trace file %s", run, death_name[how], ms,
             file_on ? "on" : "off");
    memset(sh, 0, sizeof *sh);
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        child(dir, file_on, how, ms);
    if (how == D_KILL) {
        while (__atomic_load_n(&sh->running, __ATOMIC_ACQUIRE) < THREADS)
            sleep_ms(1);
        sleep_ms(ms);
        kill(pid, SIGKILL);
    }
    waitpid(pid, &status, 0);
    for (int t = 0; t < THREADS; t++)
        committed += __atomic_load_n(&sh->committed[t], __ATOMIC_ACQUIRE);
    ft_sum_init(&s);
    if (how == D_CLEAN) {
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: child exited 0", what);
        is_int(ring_files(dir), 0, "%s: no ring file left behind", what);
        ft_sum_file(&s, trace, 0);
        from_file = s.events;
    } else {
        ok(!(WIFEXITED(status) && WEXITSTATUS(status) == 90), "%s: child configured crash=DIR", what);
        rc = run_recover(dir, file_on ? trace : NULL, out);
        if (!ok(rc == 0, "%s: simpletrace recover succeeded", what)) {
            char *e = test_slurp(test_path("recover.err"), NULL);
            diag("%s", e ? e : "");
            free(e);
            return;
        }
        if (file_on && test_file_size(trace) > 0)
            ft_sum_prefix(&s, trace);
        from_file = s.events;
        ft_sum_file(&s, out, 0);
    }
    total = s.events + s.drops;
    produced_lo = committed;
    for (int t = 0; t < THREADS; t++) {
        uint64_t c = sh->committed[t];
        ok_c &= s.last_seq[t] <= c + 1;
        if (!s.drops)
            ok_d &= s.last_seq[t] == s.per_thread[t] && s.last_seq[t] >= c;
    }
    ok(s.decoded, "%s: both traces decode", what);
    ok(s.order, "A: %s: per-thread seqs strictly increase across file + recovered", what);
    if (!ok(total >= produced_lo && total <= produced_lo + (how == D_CLEAN ? 0 : THREADS),
            "B: %s: records + drops = what the threads produced", what))
        diag("events %llu + drops %llu = %llu; committed %llu", (unsigned long long)s.events,
             (unsigned long long)s.drops, (unsigned long long)total, (unsigned long long)committed);
    ok(ok_c, "C: %s: nothing beyond what was traced", what);
    ok(ok_d, "D: %s: %s", what, s.drops ? "drops counted (contiguity checked through B)" : "each thread 0..n-1, nothing missing");
    diag("%s: %llu committed; %llu records in the file, %llu recovered, %llu dropped", what,
         (unsigned long long)committed, (unsigned long long)from_file, (unsigned long long)(s.events - from_file),
         (unsigned long long)s.drops);
}

int main(int argc, char **argv)
{
    unsigned kills = (unsigned)test_scale(12, 4);
    int run = 0;

    cli = argc > 1 ? argv[1] : NULL;
    clean_records = test_scale(400000, 20000);
    if (!cli) {
        printf("1..0 # SKIP needs the simpletrace command as argument\n");
        return 0;
    }
    test_tmpdir();
    {
        char cfg[900], err[256];
        test_write_file(test_path("plain"), "x\n");
        snprintf(cfg, sizeof cfg, "crash=%s", test_path("plain"));
        is_int(st_configure(cfg, err, sizeof err), -ENOTDIR, "crash= a regular file: -ENOTDIR");
        snprintf(cfg, sizeof cfg, "crash=%s", test_path("missing/dir"));
        is_int(st_configure(cfg, err, sizeof err), -ENOENT, "crash= a missing directory: -ENOENT");
        ok(strstr(err, "crash=") != NULL, "the message names the item (%s)", err);
    }
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    srand((unsigned)getpid());
    for (unsigned i = 0; i < kills; i++)
        one_run(run++, D_KILL, (int)(i & 1), 5 + rand() % 150);
    one_run(run++, D_ABORT, 1, 40);
    one_run(run++, D_EXIT, 1, 40);
    one_run(run++, D_SEGV, 1, 40);
    one_run(run++, D_KILL, 0, 30);
    /* 64 KiB rings: they fill, and the drops kept in them are recovered too. */
    extra = ",bufsize=64K";
    one_run(run++, D_KILL, 0, 60);
    one_run(run++, D_KILL, 1, 60);
    extra = "";
    one_run(run++, D_CLEAN, 1, 0);
    return done_testing();
}
