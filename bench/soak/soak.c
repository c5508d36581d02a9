/*
 * The soak benchmark's traced program (issue 7): run.sh starts it, steers
 * it through the monitor while it runs, and soak_check verifies its trace.
 *
 *   soak -o DIR [-t THREADS] [-d SECONDS] [-r RATE] [-B BURST]
 *        [-s ROTATE] [-b BUFSIZE]
 *
 * THREADS threads (default 4) trace for SECONDS (default 180) into
 * DIR/soak, rotated every ROTATE bytes (N[K|M|G], default 16M; "off" for
 * a single file), with the monitor on. Each thread makes calls in bursts
 * of BURST (default 4096) at full speed, then sleeps until its average is
 * back to RATE calls per second (default 0: never sleeps), so the disk use stays
 * bounded while the peaks still fill buffers. Call N of a thread is its
 * sequence number and, through soak.h, decides the event: soak_tick and
 * soak_burst stay enabled, soak_note (a string of 0-96 bytes) is what
 * run.sh toggles. A call of a disabled soak_note still takes its number.
 *
 * Prints, one line each, for run.sh and soak_check to read:
 *   soak-config threads=T seconds=S rate=R burst=B rotate=BYTES file=PATH
 *   soak-ready pid=PID                        (threads started, monitor up)
 *   soak-thread index=I tid=TID calls=N notes=M   (after the threads stopped)
 *   soak-stats produced=... written=... dropped=... dropped_reported=...
 *              bytes_written=... pending=... flush=ERR elapsed=SEC maxrss_kb=KB
 * The stats are taken after the threads stopped and st_trace_file_flush()
 * returned, so the trace files hold everything they count.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <simpletrace/simpletrace.h>

#include "soak-trace.h"
#include "soak.h"

struct opts {
    const char *dir;
    unsigned threads;
    double seconds;
    uint64_t rate;      /* calls per second per thread, 0: flat out */
    unsigned burst;     /* calls between two looks at the clock */
    const char *rotate; /* as given to rotate=, NULL: no rotation */
    uint64_t rotate_bytes;
    const char *bufsize; /* as given to bufsize=, NULL: the default */
};

struct worker {
    pthread_t thread;
    uint32_t index;
    uint32_t tid;   /* written by the worker before it traces */
    uint64_t calls; /* its last sequence number, once it stopped */
    uint64_t notes; /* calls that were soak_note (traced or not) */
    const struct opts *o;
    char text[SOAK_NOTE_MAX + 1];
};

static atomic_bool stop_flag;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleeps until the monotonic time t (seconds), through signals. */
static void sleep_until(double t)
{
    struct timespec ts = {.tv_sec = (time_t)t, .tv_nsec = (long)((t - (double)(time_t)t) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* Parses N[K|M|G] into *bytes: 0 or -EINVAL. */
static int parse_size(const char *s, uint64_t *bytes)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno || end == s)
        return -EINVAL;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (*end || n > (UINT64_MAX >> shift))
        return -EINVAL;
    *bytes = (uint64_t)n << shift;
    return 0;
}

/* One call: the event sequence number seq stands for (soak.h). */
static void trace_call(struct worker *w, uint64_t seq)
{
    switch (soak_kind(seq)) {
    case SOAK_TICK:
        trace_soak_tick(w->index, seq);
        break;
    case SOAK_NOTE:
        w->notes++;
        /* Build the text only when it will be recorded, as a real program would. */
        if (trace_soak_note_enabled()) {
            uint32_t len = soak_note_len(seq);
            for (uint32_t i = 0; i < len; i++)
                w->text[i] = soak_note_char(seq, i);
            w->text[len] = '\0';
            trace_soak_note(w->index, seq, w->text);
        }
        break;
    case SOAK_BURST:
        trace_soak_burst(w->index, seq, soak_burst_arg(seq, w->index, 0), soak_burst_arg(seq, w->index, 1),
                         soak_burst_arg(seq, w->index, 2), soak_burst_arg(seq, w->index, 3));
        break;
    }
}

/*
 * Keeps a thread's average at o->rate calls per second. A thread that fell
 * more than 100 ms behind (descheduled) forgets the debt instead of
 * running flat out until it caught up.
 */
static void pace(const struct opts *o, double *base_t, uint64_t *base_seq, uint64_t seq)
{
    double due = *base_t + (double)(seq - *base_seq) / (double)o->rate;
    double now = now_s();
    if (now < due)
        sleep_until(due);
    else if (now - due > 0.1) {
        *base_t = now;
        *base_seq = seq;
    }
}

static void *work(void *arg)
{
    struct worker *w = arg;
    const struct opts *o = w->o;
    uint64_t seq = 0, base_seq = 0;
    double base_t = now_s();

    w->tid = (uint32_t)syscall(SYS_gettid);
    while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
        for (unsigned i = 0; i < o->burst; i++)
            trace_call(w, ++seq);
        if (o->rate)
            pace(o, &base_t, &base_seq, seq);
    }
    w->calls = seq;
    return NULL;
}

static void usage(const char *prog)
{
    fprintf(stderr, "usage: %s -o DIR [-t THREADS] [-d SECONDS] [-r RATE] [-B BURST] [-s ROTATE|off] [-b BUFSIZE]\n",
            prog);
}

/* Fills *o from argv: 0, or -EINVAL after a message. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.threads = 4, .seconds = 180, .rate = 0, .burst = 4096, .rotate = "16M"};
    int c;
    while ((c = getopt(argc, argv, "o:t:d:r:B:s:b:")) != -1) {
        switch (c) {
        case 'o': o->dir = optarg; break;
        case 't': o->threads = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'd': o->seconds = strtod(optarg, NULL); break;
        case 'r': o->rate = strtoull(optarg, NULL, 10); break;
        case 'B': o->burst = (unsigned)strtoul(optarg, NULL, 10); break;
        case 's': o->rotate = strcmp(optarg, "off") == 0 ? NULL : optarg; break;
        case 'b': o->bufsize = optarg; break;
        default: usage(argv[0]); return -EINVAL;
        }
    }
    if (!o->dir || optind != argc || o->threads < 1 || o->threads > SOAK_MAX_THREADS || !(o->seconds > 0) ||
        o->burst < 1) {
        usage(argv[0]);
        return -EINVAL;
    }
    o->rotate_bytes = 0;
    if (o->rotate && parse_size(o->rotate, &o->rotate_bytes) < 0) {
        fprintf(stderr, "soak: bad rotate size \"%s\"\n", o->rotate);
        return -EINVAL;
    }
    return 0;
}

/* Configures the runtime: file, rotation, monitor, every soak event on. 0 or -errno. */
static int configure(const struct opts *o, char *path, size_t pathlen)
{
    char cfg[8192], err[512] = "";
    if ((size_t)snprintf(path, pathlen, "%s/soak", o->dir) >= pathlen)
        return -ENAMETOOLONG;
    int n = snprintf(cfg, sizeof cfg, "enable=soak_*,file=%s,monitor=on", path);
    if (o->rotate)
        n += snprintf(cfg + n, sizeof cfg - (size_t)n, ",rotate=%s", o->rotate);
    if (o->bufsize)
        n += snprintf(cfg + n, sizeof cfg - (size_t)n, ",bufsize=%s", o->bufsize);
    if ((size_t)n >= sizeof cfg)
        return -ENAMETOOLONG;
    int rc = st_configure(cfg, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "soak: st_configure(\"%s\"): %s%s%s\n", cfg, st_strerror(rc), *err ? ": " : "", err);
    return rc;
}

/* Prints the per-thread and runtime counters soak_check compares with the trace. */
static void report(const struct opts *o, const struct worker *w, int flush_rc, double elapsed)
{
    struct st_stats s = {.struct_size = sizeof s};
    struct rusage ru;
    st_stats_get(&s);
    getrusage(RUSAGE_SELF, &ru);
    for (unsigned t = 0; t < o->threads; t++)
        printf("soak-thread index=%u tid=%u calls=%" PRIu64 " notes=%" PRIu64 "\n", w[t].index, w[t].tid,
               w[t].calls, w[t].notes);
    printf("soak-stats produced=%" PRIu64 " written=%" PRIu64 " dropped=%" PRIu64 " dropped_reported=%" PRIu64
           " bytes_written=%" PRIu64 " pending=%" PRIu64 " flush=%d elapsed=%.3f maxrss_kb=%ld\n",
           s.produced, s.written, s.dropped, s.dropped_reported, s.bytes_written, s.pending, flush_rc, elapsed,
           ru.ru_maxrss);
}

int main(int argc, char **argv)
{
    struct opts o;
    char path[4096];
    static struct worker w[SOAK_MAX_THREADS];

    if (parse_opts(argc, argv, &o) < 0)
        return 2;
    if (configure(&o, path, sizeof path) < 0)
        return 1;
    printf("soak-config threads=%u seconds=%g rate=%" PRIu64 " burst=%u rotate=%" PRIu64 " file=%s\n", o.threads,
           o.seconds, o.rate, o.burst, o.rotate_bytes, path);

    double start = now_s();
    for (unsigned t = 0; t < o.threads; t++) {
        w[t].index = t;
        w[t].o = &o;
        int rc = pthread_create(&w[t].thread, NULL, work, &w[t]);
        if (rc != 0) {
            fprintf(stderr, "soak: pthread_create: %s\n", strerror(rc));
            return 1;
        }
    }
    printf("soak-ready pid=%ld\n", (long)getpid());
    fflush(stdout);

    sleep_until(start + o.seconds);
    atomic_store(&stop_flag, true);
    for (unsigned t = 0; t < o.threads; t++)
        pthread_join(w[t].thread, NULL);
    double elapsed = now_s() - start;

    /* Everything committed is in the files, every drop reported: what soak_check compares. */
    int flush_rc = st_trace_file_flush();
    if (flush_rc < 0)
        fprintf(stderr, "soak: st_trace_file_flush: %s\n", st_strerror(flush_rc));
    report(&o, w, flush_rc, elapsed);
    return flush_rc < 0 ? 1 : 0;
}
