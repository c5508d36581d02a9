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
 * The recovered trace describes itself: the child's pid and program, a
 * declaration per event, and it prints the same without trace-events.
 *
 * Death times are counted from the child's first committed record: a
 * death before any thread created its ring file leaves DIR without one,
 * which recover rightly reports as nothing to recover (exit 1); on a loaded
 * machine under ASan 40 ms after the threads start was once not enough.
 * The other threads may still be creating theirs, a state recover must
 * accept.
 *
 * With compress=zstd (issue 25) the trace file is zstd frames: it is read
 * with libzstd's streaming decoder fed the whole file (unzstd.h; what a
 * cut last frame's whole blocks hold counts as in the file), the zstd
 * command giving a prefix of that, and `simpletrace print` reading exactly
 * as many records of it (exit 0, or 1 naming the compressed byte offset of
 * a cut); recover then leaves out what of its cut write reached the file
 * as decompressed, and the same checks A-D hold (at level 19 a frame
 * takes long to make, its write in flight all the while, so most kills
 * there cut one: the test says which did). Some of those runs write
 * the recovered trace compressed (-o *.zst): `zstd -d` gives what the
 * plain output (recover --keep first) holds, byte for byte, and print
 * reads it as it is.
 *
 * Then hand-made ring files pin down states a death can leave that the
 * random kills reach only now and then: every ring written out (nothing to
 * recover: once made recover's UBSan build abort in qsort), ring files with
 * no header yet, and a damaged header (named by file and byte offset).
 */
#include <dirent.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>
#include <time.h>

#include "fault_test.h"
#include "trace_format.h"
#include "crash_format.h"
#include "unzstd.h"

#define THREADS 3

struct shared {
    uint64_t committed[THREADS];
};

static struct shared *sh;
static const char *cli;
static const char *extra = "";
static bool z_out; /* write the recovered trace compressed (-o *.zst) */
static uint64_t clean_records; /* per thread, then the tracers return */ /* more configuration, e.g. small buffers */

enum death { D_KILL, D_ABORT, D_EXIT, D_SEGV, D_CLEAN };
static const char *const death_name[] = {"SIGKILL", "abort()", "_exit()", "SIGSEGV", "clean exit"};

static void *tracer(void *arg)
{
    uint64_t th = (uint64_t)(uintptr_t)arg, dummy = 0;
    struct timespec pause = {0, 100000};

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

/* True once some thread of the child committed a record (so one ring file is whole). */
static int first_record(void)
{
    for (int t = 0; t < THREADS; t++)
        if (__atomic_load_n(&sh->committed[t], __ATOMIC_ACQUIRE))
            return 1;
    return 0;
}

/* Waits for the child's first record: up to 20 s (a loaded machine under ASan can be that slow). */
static void wait_first_record(void)
{
    for (int i = 0; i < 20000 && !first_record(); i++)
        sleep_ms(1);
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
    wait_first_record();
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

/* Runs `simpletrace recover [--keep]`; its exit status (128 + signal if killed), its stderr in recover.err. */
static int run_recover_keep(const char *dir, const char *trace, const char *out, bool keep)
{
    int status = -1;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int fd = open(test_path("recover.err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const char *k = keep ? "--keep" : "--trace";
        dup2(fd, 2);
        dup2(fd, 1);
        if (trace)
            execl(cli, cli, "recover", "--trace", trace, keep ? k : dir, keep ? dir : "-o", keep ? "-o" : out,
                  keep ? out : (char *)NULL, (char *)NULL);
        else
            execl(cli, cli, "recover", dir, "-o", out, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int run_recover(const char *dir, const char *trace, const char *out)
{
    return run_recover_keep(dir, trace, out, false);
}

/* --- compressed files ---------------------------------------------------------------------- */

/*
 * path decompressed by libzstd (unzstd.h) into dst: 0 clean, 1 cut inside
 * a frame, -1 damaged or unreadable. The zstd command must give a prefix
 * of the same bytes (it decodes a cut frame's last block later).
 */
static int unzstd_file(const char *path, const char *dst)
{
    size_t len = 0, declen = 0;
    uint8_t *data = (uint8_t *)tu_slurp(path, &len), *dec = NULL;
    int st = data ? unzstd_all(data, len, &dec, &declen) : -1;
    FILE *f = fopen(dst, "wb");
    struct tu_run r;
    char *argv[] = {"zstd", "-q", "-d", "-c", (char *)path, NULL};

    if (!f || (declen && fwrite(dec, 1, declen, f) != declen) || fclose(f) != 0)
        st = -1;
    tu_run(argv, NULL, NULL, false, &r);
    if (r.out_len > declen || memcmp(r.out, dec, r.out_len) || (r.status != 0) != (st != 0)) {
        diag("%s: zstd -dc gave %zu bytes (exit %d), libzstd %zu (%d)", path, r.out_len, r.status, declen, st);
        st = -1;
    }
    tu_run_free(&r);
    free(data);
    free(dec);
    return st;
}

/* `simpletrace print TRACE` of a compressed trace: the ft_ev records it prints, its exit status, stderr in *err. */
static uint64_t print_count(const char *trace, int *status, char **err)
{
    char *argv[] = {(char *)cli, "print", (char *)trace, NULL};
    struct tu_run r;
    uint64_t n = 0;

    tu_run(argv, NULL, NULL, false, &r);
    /* Line by line (strstr from each match would be quadratic under ASan, which measures the rest each time). */
    for (const char *p = r.out, *end = r.out + r.out_len, *nl; p && p < end; p = nl + 1) {
        n += end - p >= 6 && !memcmp(p, "ft_ev ", 6);
        if (!(nl = memchr(p, '\n', (size_t)(end - p))))
            break;
    }
    *status = r.status;
    *err = r.err;
    r.err = NULL;
    tu_run_free(&r);
    return n;
}

/* --- what the recovered trace says about itself ---------------------------------------- */

/* Runs `simpletrace print [EVENTS] TRACE` with stdout into out; its exit status. */
static int run_print(const char *events, const char *trace, const char *out)
{
    int status = -1;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        if (events)
            execl(cli, cli, "print", events, trace, (char *)NULL);
        else
            execl(cli, cli, "print", trace, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * The recovered trace carries the crashed child's description (its pid,
 * the program) and a declaration for each event it maps, so that
 * `simpletrace print RECOVERED` alone prints what it prints given the
 * trace-events file.
 */
static void check_self_describing(const char *what, const char *recovered, const char *decoded, pid_t child)
{
    char want[64], with[1000], without[1000];
    struct v4_decoder d;
    uint64_t events;
    char *a, *b;

    memset(&d, 0, sizeof d);
    d.kinds = test_kinds;
    d.kinds_opaque = (void *)ft_groups;
    ok(v4_decode_file(&d, decoded) == 0 && d.sum.descriptions == 1, "%s: the recovered trace has a description", what);
    snprintf(want, sizeof want, "\npid=%ld\n", (long)child);
    ok(strstr(d.info, want) && strstr(d.info, "\nprogram=test_recover\n"),
       "%s: ... of the crashed child (pid %ld), program test_recover: %s", what, (long)child, d.info);
    ok(d.sum.mappings > 0 && d.sum.declarations == d.sum.mappings, "%s: a declaration for each of its %llu mappings",
       what, (unsigned long long)d.sum.mappings);
    events = d.sum.events; /* 0 when the writer had written everything */
    v4_decoder_free(&d);
    snprintf(with, sizeof with, "%s.with", recovered);
    snprintf(without, sizeof without, "%s.without", recovered);
    test_write_file(test_path("ft.trace-events"), "ft_ev(int thread, int seq) \"thread %d seq %d\"\n"
                                                  "ft_sig(int n) \"n %d\"\n");
    ok(run_print(test_path("ft.trace-events"), recovered, with) == 0 && run_print(NULL, recovered, without) == 0,
       "%s: print with and without trace-events succeed", what);
    a = tu_slurp(with, NULL);
    b = tu_slurp(without, NULL);
    ok(a && b && (a[0] || !events) && !strcmp(a, b),
       "%s: print without trace-events gives what it gives with them (%zu bytes)", what, a ? strlen(a) : 0);
    free(a);
    free(b);
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
    char dir[800], trace[900], out[900], what[200], plain[900], dec_out[900];
    bool z_trace = strstr(extra, "compress=zstd") != NULL;
    uint64_t committed = 0, produced_lo, total;
    struct ft_sum s;
    uint64_t from_file = 0;
    int status = 0, ok_c = 1, ok_d = 1, rc;
    pid_t pid;

    snprintf(dir, sizeof dir, "%s", test_path(""));
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "run%d", run);
    mkdir(dir, 0755);
    snprintf(trace, sizeof trace, "%s/trace", dir);
    snprintf(out, sizeof out, "%s/recovered%s", dir, z_out ? ".zst" : "");
    snprintf(what, sizeof what, "run %d: %s after %ld ms, trace file %s%s%s", run, death_name[how], ms,
             file_on ? "on" : "off", z_trace ? " (compress=zstd)" : "", z_out ? ", -o *.zst" : "");
    memset(sh, 0, sizeof *sh);
    fflush(stdout);
    pid = fork();
    if (pid == 0)
        child(dir, file_on, how, ms);
    if (how == D_KILL) {
        wait_first_record();
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
        if (z_out) { /* the plain output first, the ring files kept for the compressed one */
            snprintf(plain, sizeof plain, "%s/recovered-plain", dir);
            ok(run_recover_keep(dir, file_on ? trace : NULL, plain, true) == 0, "%s: recover --keep, plain", what);
        }
        rc = run_recover(dir, file_on ? trace : NULL, out);
        if (!ok(rc == 0, "%s: simpletrace recover succeeded", what)) {
            char *e = tu_slurp(test_path("recover.err"), NULL);
            diag("exit status %d; stderr:\n%s", rc, e ? e : "(none)");
            free(e);
            return;
        }
        ok(ring_files(dir) == 0, "%s: the ring files are removed once recovered", what);
        {
            char *e = tu_slurp(test_path("recover.err"), NULL), *cut = e ? strstr(e, "of the write cut by the death") : NULL;
            while (cut && cut > e && cut[-1] != '\n')
                cut--;
            if (cut) /* which kill caught a write in flight is chance: said, not asserted */
                diag("%s: the death cut a write: %.*s", what, (int)strcspn(cut, "\n"), cut);
            free(e);
        }
        if (z_out) {
            snprintf(dec_out, sizeof dec_out, "%s/recovered.dec", dir);
            size_t a = 0, b = 0;
            char *x = unzstd_file(out, dec_out) == 0 ? tu_slurp(dec_out, &a) : NULL, *y = tu_slurp(plain, &b);
            char *e = tu_slurp(test_path("recover.err"), NULL);
            ok(x && y && a == b && !memcmp(x, y, a) && e && strstr(e, " (zstd)\n"),
               "%s: -o recovered.zst: zstd -d gives the plain output byte for byte (%zu bytes)", what, a);
            free(x);
            free(y);
            free(e);
        }
        if (run < 2 || how != D_KILL || extra[0])
            check_self_describing(what, out, z_out ? dec_out : out, pid);
        if (file_on && test_file_size(trace) > 0 && z_trace) {
            char dec[1000], *err = NULL;
            int pst;
            snprintf(dec, sizeof dec, "%s.dec", trace);
            int zst = unzstd_file(trace, dec);
            ok(zst >= 0, "%s: the compressed trace decompresses (%s)", what, zst ? "its last frame cut" : "whole");
            ft_sum_prefix(&s, dec);
            uint64_t printed = print_count(trace, &pst, &err);
            ok(printed == s.events && (pst == 0 || (pst == 1 && err && strstr(err, "compressed byte"))),
               "%s: print reads the %llu records libzstd gives of it (%llu; exit %d%s%s)", what,
               (unsigned long long)s.events, (unsigned long long)printed, pst, pst ? ": " : "", pst && err ? err : "");
            free(err);
        } else if (file_on && test_file_size(trace) > 0) {
            ft_sum_prefix(&s, trace);
        }
        from_file = s.events;
        ft_sum_file(&s, z_out ? dec_out : out, 0);
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

/* --- hand-made ring files ------------------------------------------------ */

#define HM_PID 4000001u            /* the files' process (recover does not look for it) */
#define HM_RING_OFF 8192u          /* header page, a page for head, tail, pending, then the ring */
#define HM_RING_SIZE 4096u
#define HM_REC (ST_EVENT_FIXED_SIZE + 16) /* ft_ev: two 8-byte arguments */

static void hm_write(const char *path, const void *p, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    bool done = fd >= 0 && write(fd, p, len) == (ssize_t)len;

    if (fd >= 0)
        done &= close(fd) == 0;
    ok(done, "made %s (%zu bytes)", path, len);
}

/* dir/st-PID.names: ID 0 is ft_ev. */
static void hm_names_of(const char *dir, uint32_t pid)
{
    uint8_t rec[64];
    char path[900];

    snprintf(path, sizeof path, "%s/st-%u.names", dir, pid);
    hm_write(path, rec, st__fmt_put_mapping(rec, 0, "ft_ev", 5));
}

static void hm_names(const char *dir)
{
    hm_names_of(dir, HM_PID);
}

/* What a hand-made ring's header says of its process: which, when it started, the trace file it wrote. */
struct hm_proc {
    uint32_t pid;
    uint64_t start_ns;       /* a_ns, the start-up anchor */
    uint64_t file_dev, file_ino;
};

/*
 * dir/st-PID-tid.ring as ring_file.c makes it, holding ft_ev thread 0 seq
 * 0..n-1 from ring position 0, with the given tail (head is after the
 * last); ring_size is the header's field (HM_RING_SIZE unless damaging it).
 */
static void hm_ring_of(const char *dir, const struct hm_proc *pr, uint32_t tid, unsigned n, uint64_t tail,
                       uint64_t ring_size)
{
    size_t len = HM_RING_OFF + HM_RING_SIZE;
    uint8_t *f = calloc(1, len);
    struct st__crash_hdr h = {.magic = ST_CRASH_MAGIC, .version = ST_CRASH_VERSION, .hdr_size = ST_CRASH_HDR_SIZE,
                             .pid = pr->pid, .tid = tid, .ring_off = HM_RING_OFF, .ring_size = ring_size,
                             .head_off = 4096, .tail_off = 4104, .pending_off = 4112, .a_ns = pr->start_ns,
                             .b_ns = pr->start_ns, .file_dev = pr->file_dev, .file_ino = pr->file_ino};
    uint64_t head = (uint64_t)n * HM_REC;
    char path[900];

    for (unsigned i = 0; i < n; i++) {
        uint8_t *p = f + HM_RING_OFF + i * HM_REC;
        st__fmt_put_event_header(p, 0, 1000 + i, 16, tid);
        st__fmt_put_u64(p + ST_EV_OFF_PAYLOAD, 0);
        st__fmt_put_u64(p + ST_EV_OFF_PAYLOAD + 8, i);
    }
    memcpy(f, &h, sizeof h);
    memcpy(f + h.head_off, &head, 8);
    memcpy(f + h.tail_off, &tail, 8);
    snprintf(path, sizeof path, "%s/st-%u-%u.ring", dir, pr->pid, tid);
    hm_write(path, f, len);
    free(f);
}

static void hm_ring(const char *dir, uint32_t tid, unsigned n, uint64_t tail, uint64_t ring_size)
{
    const struct hm_proc pr = {.pid = HM_PID};
    hm_ring_of(dir, &pr, tid, n, tail, ring_size);
}

/* A ring file the program died creating: len bytes of zeros (0: before posix_fallocate). */
static void hm_unborn(const char *dir, uint32_t tid, size_t len)
{
    uint8_t *f = calloc(1, len + 1);
    char path[900];

    snprintf(path, sizeof path, "%s/st-%u-%u.ring", dir, HM_PID, tid);
    hm_write(path, f, len);
    free(f);
}

/* A fresh directory for one hand-made case. */
static const char *hm_dir(const char *name)
{
    const char *dir = test_path(name);
    mkdir(dir, 0755);
    return dir;
}

/* Runs recover on dir; checks its status, the output's ft_ev count, and that stderr holds want (if any). */
static void hm_check(const char *what, const char *dir, int want_rc, uint64_t want_events, const char *want_err)
{
    char out[900];
    char *err;
    int rc;

    snprintf(out, sizeof out, "%s/recovered", dir);
    rc = run_recover(dir, NULL, out);
    err = tu_slurp(test_path("recover.err"), NULL);
    if (!ok(rc == want_rc, "%s: recover exits %d", what, want_rc))
        diag("exit status %d; stderr:\n%s", rc, err ? err : "(none)");
    if (want_err && !ok(err && strstr(err, want_err), "%s: stderr says \"%s\"", what, want_err))
        diag("stderr:\n%s", err ? err : "(none)");
    if (want_rc == 0) {
        struct ft_sum s;
        ft_sum_init(&s);
        ft_sum_file(&s, out, 0);
        ok(s.decoded && s.order, "%s: the recovered trace decodes, seqs in order", what);
        is_u64(s.events, want_events, "%s: records recovered", what);
        is_u64(s.drops, 0, "%s: no drops", what);
    }
    free(err);
}

static void hand_made(void)
{
    const char *dir;
    char want[200];

    /* Every record written out before the death (tail == head): an empty trace, not an error. */
    dir = hm_dir("hm-written");
    hm_names(dir);
    hm_ring(dir, 11, 3, 3 * HM_REC, HM_RING_SIZE);
    hm_check("every ring written out", dir, 0, 0, "0 records of 1 threads");

    /* Died creating the only ring files: before posix_fallocate, and before the magic. */
    dir = hm_dir("hm-unborn");
    hm_names(dir);
    hm_unborn(dir, 12, 0);
    hm_unborn(dir, 13, HM_RING_OFF + HM_RING_SIZE);
    snprintf(want, sizeof want, "st-%u-13.ring: no header yet", HM_PID);
    hm_check("only ring files with no header yet", dir, 0, 0, want);

    /* One of them next to a whole ring: that ring's records. */
    dir = hm_dir("hm-unborn-and-whole");
    hm_names(dir);
    hm_unborn(dir, 12, 100);
    hm_ring(dir, 11, 3, 0, HM_RING_SIZE);
    snprintf(want, sizeof want, "st-%u-12.ring: no header yet", HM_PID);
    hm_check("a ring with no header yet and a whole one", dir, 0, 3, want);

    /* A damaged header is named by file, field and byte offset; with nothing else usable, exit 1. */
    dir = hm_dir("hm-damaged");
    hm_names(dir);
    hm_ring(dir, 11, 3, 0, 12345);
    snprintf(want, sizeof want, "st-%u-11.ring: damaged header: byte %zu: ring_size", HM_PID,
             offsetof(struct st__crash_hdr, ring_size));
    hm_check("a damaged header", dir, 1, 0, want);
}

/* Whether dir/NAME exists. */
static bool hm_exists(const char *dir, const char *name)
{
    char path[900];
    struct stat st;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* Runs `simpletrace recover ARGS...` (up to a NULL); exit status, stderr in *err (malloc'ed). */
static int run_args(char **err, ...)
{
    char *argv[16] = {(char *)cli, "recover"};
    int n = 2, status = -1;
    va_list ap;
    pid_t pid;

    va_start(ap, err);
    while (n < 15 && (argv[n] = va_arg(ap, char *)) != NULL)
        n++;
    va_end(ap);
    argv[n] = NULL;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int fd = open(test_path("recover.err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        dup2(fd, 1);
        execv(cli, argv);
        _exit(127);
    }
    waitpid(pid, &status, 0);
    *err = tu_slurp(test_path("recover.err"), NULL);
    if (!*err)
        *err = strdup("");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * Two crashes left their ring files in one directory (issue 12): --trace
 * chooses the process that wrote that trace file, not the first found;
 * the ring files of the process recovered are removed after, with the
 * space freed said (--keep keeps them); --pid gets no advice to use --pid;
 * no -o says just that.
 */
static void two_crashes(void)
{
    const char *dir = hm_dir("hm-two-crashes");
    char t1[900], t2[900], out[900], want[1200], *err;
    struct stat s1, s2;
    int rc;

    snprintf(t1, sizeof t1, "%s/crash1.trace", dir);
    snprintf(t2, sizeof t2, "%s/crash2.trace", dir);
    snprintf(out, sizeof out, "%s/recovered", dir);
    test_write_file(t1, "x");
    test_write_file(t2, "y");
    ok(stat(t1, &s1) == 0 && stat(t2, &s2) == 0, "two trace files");
    /* Crash 1 (pid 4000011, two threads) started before crash 2 (pid 4000022, one thread). */
    struct hm_proc c1 = {4000011u, 1000, (uint64_t)s1.st_dev, (uint64_t)s1.st_ino};
    struct hm_proc c2 = {4000022u, 9000, (uint64_t)s2.st_dev, (uint64_t)s2.st_ino};
    hm_ring_of(dir, &c1, 1, 3, 0, HM_RING_SIZE);
    hm_ring_of(dir, &c1, 2, 2, 0, HM_RING_SIZE);
    hm_names_of(dir, c1.pid);
    hm_ring_of(dir, &c2, 7, 5, 0, HM_RING_SIZE);
    hm_names_of(dir, c2.pid);

    rc = run_args(&err, dir, NULL);
    ok(rc == 2 && !strcmp(err, "simpletrace recover: -o TRACE is missing (the file to write the recovered trace to)\n"
                               "Try 'simpletrace recover --help'.\n"),
       "no -o: exit 2, says -o is missing, not the whole usage: %s", err);
    free(err);

    rc = run_args(&err, "--trace", t1, "--keep", dir, "-o", out, NULL);
    snprintf(want, sizeof want, "recovering pid %u, whose ring files name %s as their trace file (other pids: %u)",
             c1.pid, t1, c2.pid);
    ok(rc == 0 && strstr(err, want) && strstr(err, "pid 4000011: 5 records of 2 threads"),
       "--trace crash1.trace: the earlier crash's process, said: %s", err);
    ok(!strstr(err, "removed") && hm_exists(dir, "st-4000011-1.ring") && hm_exists(dir, "st-4000011.names"),
       "--keep: its ring files stay");
    free(err);

    rc = run_args(&err, "--pid", "4000011", "--keep", dir, "-o", out, NULL);
    ok(rc == 0 && strstr(err, "recovering pid 4000011 as asked; the ring files of other processes are left as they "
                              "are (pids 4000022)") && !strstr(err, "choose with"),
       "--pid: the other process named, no advice to use --pid: %s", err);
    free(err);

    rc = run_args(&err, "--trace", t2, dir, "-o", out, NULL);
    snprintf(want, sizeof want, "recovering pid %u, whose ring files name %s as their trace file", c2.pid, t2);
    ok(rc == 0 && strstr(err, want) && strstr(err, "pid 4000022: 5 records of 1 threads"),
       "--trace crash2.trace: the later crash's process: %s", err);
    snprintf(want, sizeof want, "removed 1 ring file and %s/st-4000022.names: 0.0", dir);
    ok(strstr(err, want) && strstr(err, " MB freed (--keep keeps them)\n") && !hm_exists(dir, "st-4000022-7.ring") &&
           !hm_exists(dir, "st-4000022.names") && hm_exists(dir, "st-4000011-1.ring") &&
           hm_exists(dir, "st-4000011-2.ring") && hm_exists(dir, "st-4000011.names"),
       "crash 2's ring files and names file removed, crash 1's kept");
    free(err);

    rc = run_args(&err, dir, "-o", out, NULL);
    ok(rc == 0 && strstr(err, "pid 4000011: 5 records of 2 threads") && !strstr(err, "several"),
       "the one process left: recovered without a word of others: %s", err);
    ok(!hm_exists(dir, "st-4000011-1.ring") && !hm_exists(dir, "st-4000011-2.ring") &&
           !hm_exists(dir, "st-4000011.names"),
       "... and its files removed: nothing left");
    free(err);

    /* A process that still runs (this one): its ring files are in use, never removed. */
    struct hm_proc me = {(uint32_t)getpid(), 1, 0, 0};
    hm_ring_of(dir, &me, (uint32_t)getpid(), 1, 0, HM_RING_SIZE);
    rc = run_args(&err, dir, "-o", out, NULL);
    snprintf(want, sizeof want, "pid %u is running (or its id is another process's now): its ring files are kept",
             (unsigned)getpid());
    ok(rc == 0 && strstr(err, want), "a running process's ring files stay: %s", err);
    free(err);

    /*
     * A process killed but not reaped yet is a zombie, which kill(pid, 0)
     * still finds: it has ended, its ring files go. Here this test does not
     * wait for its child yet; a daemon whose parent is a container's init
     * that does not reap stays one (a Redis killed with kill -9 was taken
     * for a running process, its ring files kept).
     */
    fflush(stdout);
    pid_t z = fork();
    if (z == 0) {
        pause();
        _exit(0);
    }
    siginfo_t si;
    memset(&si, 0, sizeof si);
    ok(z > 0 && kill(z, SIGKILL) == 0 && waitid(P_PID, (id_t)z, &si, WEXITED | WNOWAIT) == 0 && si.si_pid == z,
       "a child killed, left unreaped (a zombie)");
    struct hm_proc zp = {(uint32_t)z, 1, 0, 0};
    char zpid[32], zring[64], znames[64];
    snprintf(zpid, sizeof zpid, "%ld", (long)z);
    snprintf(zring, sizeof zring, "st-%ld-%ld.ring", (long)z, (long)z);
    snprintf(znames, sizeof znames, "st-%ld.names", (long)z);
    hm_ring_of(dir, &zp, (uint32_t)z, 2, 0, HM_RING_SIZE);
    hm_names_of(dir, zp.pid);
    rc = run_args(&err, "--pid", zpid, dir, "-o", out, NULL);
    snprintf(want, sizeof want, "pid %s: 2 records of 1 threads", zpid);
    ok(rc == 0 && strstr(err, want) && strstr(err, "removed 1 ring file and ") && !strstr(err, "is running") &&
           !hm_exists(dir, zring) && !hm_exists(dir, znames),
       "recover of the zombie's rings: recovered, its ring files and names file removed: %s", err);
    free(err);
    waitpid(z, NULL, 0);

    rc = run_args(&err, "--pid=x", dir, "-o", out, NULL);
    ok(rc == 2 && strstr(err, "bad process id 'x'"), "--pid=x: usage error");
    free(err);
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
    /* compress=zstd: the trace file is frames, the write cut by the death settled in its decompressed stream. */
    extra = ",compress=zstd";
    for (unsigned i = 0; i < kills; i++) {
        z_out = i % 3 == 2;
        one_run(run++, D_KILL, 1, 5 + rand() % 150);
    }
    extra = ",compress=zstd,bufsize=64K";
    one_run(run++, D_KILL, 1, 60);
    /* Level 19 makes a frame slowly (its write is in flight while it compresses): most kills cut one. */
    extra = ",compress=zstd:19";
    for (unsigned i = 0; i < 3; i++) {
        z_out = i == 1;
        one_run(run++, D_KILL, 1, 30 + rand() % 150);
    }
    z_out = false;
    extra = "";
    one_run(run++, D_CLEAN, 1, 0);
    hand_made();
    two_crashes();
    return done_testing();
}
