/*
 * Tracing from a signal handler. Deterministic: a handler that traces while
 * its thread is in the middle of a record is dropped and counted, and the
 * interrupted record is intact. Random: signals hammer a tracing thread;
 * every record decodes, the loop's sequence stays ordered, and records +
 * dropped = events traced.
 */
#include <pthread.h>
#include <sched.h>

#include "rt_test.h"

TEST_EVENT(ev_loop, "sig_loop", "int seq, int x", "seq %d x %d", "ii", 2, 0);
TEST_EVENT(ev_sig, "sig_handler", "int n", "n %d", "i", 1, 0);
TEST_GROUP(grp_sig, "sig", &ev_loop, &ev_sig)

static struct st_group *const groups[] = {&grp_sig, NULL};

static volatile sig_atomic_t handled;
static volatile int stop;
static unsigned long loops;

static void handler(int sig)
{
    (void)sig;
    test_trace_i(&ev_sig, (uint64_t)handled);
    handled = handled + 1;
}

static void *worker(void *arg)
{
    uint64_t i = 0;
    (void)arg;
    test_trace_ii(&ev_loop, i++, 0); /* buffer exists before the first signal */
    __atomic_store_n(&loops, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
        test_trace_ii(&ev_loop, i++, 1);
    __atomic_store_n(&loops, i, __ATOMIC_RELEASE);
    return NULL;
}

/*
 * What the storm's checks need of the trace, counted as it is decoded:
 * the trace is not held in memory (test_collect keeps about 800 bytes a
 * record), as on a loaded machine the worker traces flat out while the
 * sender of the signals waits for the CPU: tens of millions of records,
 * and the test was killed for memory (11.8 GB under ASan).
 */
struct storm {
    size_t index;                /* records seen; the first 7 are the first part's */
    uint64_t next, loop_recs, sig_recs, drops;
    int order;
};

static int storm_visit(const struct v4_record *r, void *opaque)
{
    struct storm *s = opaque;

    if (s->index++ < 7)
        return 0;
    if (r->dropped) {
        s->drops += r->drop_count;
    } else if (r->name && !strcmp(r->name, "sig_loop")) {
        s->order &= r->args[0].u >= s->next;
        s->next = r->args[0].u + 1;
        s->loop_recs++;
    } else {
        s->sig_recs++;
    }
    return 0;
}

/* Decodes path through storm_visit into *s. 0, or -1 with a diag line. */
static int storm_count(const char *path, struct storm *s)
{
    struct v4_decoder d;
    int r;

    memset(s, 0, sizeof *s);
    s->order = 1;
    memset(&d, 0, sizeof d);
    d.kinds = test_kinds;
    d.kinds_opaque = (void *)groups;
    d.visit = storm_visit;
    d.visit_opaque = s;
    if ((r = v4_decode_file(&d, path)))
        diag("decoding %s: %s", path, d.err);
    v4_decoder_free(&d);
    return r ? -1 : 0;
}

int main(void)
{
    struct sigaction sa;
    struct st__record rec;
    struct st_stats st0 = {.struct_size = sizeof st0}, st1 = {.struct_size = sizeof st1};
    struct test_trace t;
    pthread_t w;
    char cfg[1200];
    struct storm storm;
    uint64_t sent, n_sig;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigaction(SIGUSR1, &sa, NULL);
    test_tmpdir();
    snprintf(cfg, sizeof cfg, "sig_*,file=%s", test_path("sig.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure");

    /* A signal arrives while this thread is between begin and commit. */
    test_trace_ii(&ev_loop, 1000, 0);
    st_stats_get(&st0);
    is_int(st__simple_begin(&rec, &ev_loop, 16), 0, "begin a record");
    st__put_u64(&rec, 1001);
    raise(SIGUSR1);
    st__put_u64(&rec, 2);
    st__simple_commit(&rec);
    is_int(handled, 1, "handler ran mid-record");
    st_stats_get(&st1);
    is_u64(st1.dropped, st0.dropped + 1, "its event was dropped and counted");
    test_trace_ii(&ev_loop, 1002, 0); /* carries the dropped record */
    raise(SIGUSR1); /* outside a record: traced normally */
    st_trace_file_flush();
    if (ok(test_collect(test_path("sig.trace"), groups, &t) == 0, "file decodes")) {
        size_t i = 2;
        ok(t.n == 7 && !strcmp(t.r[i].name, "sig_loop") && t.r[i].u[0] == 1000, "first record");
        ok(t.r[i + 1].u[0] == 1001 && t.r[i + 1].u[1] == 2, "interrupted record intact");
        ok(t.r[i + 2].dropped && t.r[i + 2].drop_count == 1, "dropped record (count 1) before the next event");
        ok(t.r[i + 3].u[0] == 1002, "next event");
        ok(!strcmp(t.r[i + 4].name, "sig_handler") && t.r[i + 4].u[0] == 1, "handler outside a record traced");
    }
    test_trace_free(&t);

    /* Many signals at a thread that traces all the time. */
    st_stats_get(&st0);
    handled = 0;
    pthread_create(&w, NULL, worker, NULL);
    while (!__atomic_load_n(&loops, __ATOMIC_ACQUIRE))
        sched_yield();
    sent = test_scale(20000, 2000);
    for (uint64_t i = 0; i < sent; i++) {
        pthread_kill(w, SIGUSR1);
        if (i % 64 == 0)
            sched_yield();
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(w, NULL);
    n_sig = (uint64_t)handled;
    st_trace_file_flush();
    if (ok(storm_count(test_path("sig.trace"), &storm) == 0, "file decodes after the storm")) {
        ok(storm.order, "loop sequence strictly increasing");
        diag("%llu loop events, %llu handler events, %llu dropped", (unsigned long long)loops,
             (unsigned long long)n_sig, (unsigned long long)storm.drops);
        is_u64(storm.loop_recs + storm.sig_recs + storm.drops, loops + n_sig, "records + dropped = events traced");
    }
    st_stats_get(&st1);
    is_u64(st1.produced - st0.produced, loops + n_sig, "stats: produced");
    ok(st1.produced == st1.written + st1.dropped + st1.pending, "stats add up");
    st_trace_file_set_enabled(false);
    return done_testing();
}
