/*
 * Stress: 4 threads x 1M events (two u64 + a 16-char string) into 64 KiB
 * buffers, so the writer cannot keep up and many events drop. After the
 * threads end and a flush: every record decodes, no record is torn (the
 * string is derived from the sequence number), each thread's sequence
 * numbers strictly increase and its timestamps never decrease, and
 * records written + dropped counts = events traced, exactly.
 * ST_TEST_EVENTS overrides the count; under TSan it is 50000.
 */
#include <pthread.h>

#include "rt_test.h"

#define THREADS 4

TEST_EVENT(ev_stress, "stress_ev", "int thread, int seq, const char *s", "t %d seq %d s %s", "iis", 3, 0);
TEST_GROUP(grp_stress, "stress", &ev_stress)

static struct st_group *const groups[] = {&grp_stress, NULL};
static unsigned long n_events;

/* The 16-char string for (thread, seq): 'T', thread digit, 14 hex digits. */
static void make_str(char *s, unsigned thread, uint64_t seq)
{
    static const char hex[] = "0123456789abcdef";
    s[0] = 'T';
    s[1] = (char)('0' + thread);
    for (int i = 15; i >= 2; i--, seq >>= 4)
        s[i] = hex[seq & 15];
    s[16] = '\0';
}

static void *producer(void *arg)
{
    unsigned idx = (unsigned)(uintptr_t)arg;
    char s[17];

    for (uint64_t i = 0; i < n_events; i++) {
        make_str(s, idx, i);
        test_trace_iis(&ev_stress, idx, i, s);
    }
    return NULL;
}

struct check {
    uint32_t tid[THREADS];
    uint64_t next_seq[THREADS], last_ts[THREADS], count[THREADS];
    uint64_t events, dropped, bad;
    char first_error[256];
};

static void bad(struct check *c, const char *what, const struct v4_record *r)
{
    if (!c->bad++)
        snprintf(c->first_error, sizeof c->first_error, "record %llu at offset %llu: %s",
                 (unsigned long long)r->index, (unsigned long long)r->offset, what);
}

static int visit(const struct v4_record *r, void *opaque)
{
    struct check *c = opaque;
    unsigned idx;
    char want[17];

    if (r->mapping)
        return 0;
    if (r->dropped) {
        c->dropped += r->drop_count;
        return 0;
    }
    c->events++;
    idx = (unsigned)r->args[0].u;
    if (idx >= THREADS)
        return bad(c, "thread index out of range", r), 0;
    if (!c->tid[idx])
        c->tid[idx] = r->pid;
    if (c->tid[idx] != r->pid)
        bad(c, "pid does not match the thread", r);
    if (r->args[1].u < c->next_seq[idx])
        bad(c, "sequence number not increasing", r);
    if (r->ts < c->last_ts[idx])
        bad(c, "timestamp decreased within a thread", r);
    make_str(want, idx, r->args[1].u);
    if (r->args[2].slen != 16 || memcmp(r->args[2].s, want, 16) != 0)
        bad(c, "torn record: string does not match its sequence number", r);
    c->next_seq[idx] = r->args[1].u + 1;
    c->last_ts[idx] = r->ts;
    c->count[idx]++;
    return 0;
}

int main(void)
{
    pthread_t t[THREADS];
    struct v4_decoder d;
    struct check c;
    struct st_stats st = {.struct_size = sizeof st};
    char cfg[1200];
    int r;

    n_events = test_scale(1000000, 50000);
    test_tmpdir();
    snprintf(cfg, sizeof cfg, "stress_ev,file=%s,bufsize=64K", test_path("stress.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure with 64K buffers");
    for (unsigned i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, producer, (void *)(uintptr_t)i);
    for (unsigned i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    is_int(st_trace_file_flush(), 0, "flush after the threads ended");

    memset(&c, 0, sizeof c);
    memset(&d, 0, sizeof d);
    d.kinds = test_kinds;
    d.kinds_opaque = (void *)groups;
    d.visit = visit;
    d.visit_opaque = &c;
    r = v4_decode_file(&d, test_path("stress.trace"));
    if (!ok(r == 0, "every record decodes strictly"))
        diag("%s", d.err);
    v4_decoder_free(&d);
    if (!ok(c.bad == 0, "no torn record, per-thread order and timestamps hold (%llu bad)",
            (unsigned long long)c.bad))
        diag("%s", c.first_error);
    diag("%llu events written, %llu dropped of %lu", (unsigned long long)c.events,
         (unsigned long long)c.dropped, THREADS * n_events);
    is_u64(c.events + c.dropped, THREADS * n_events, "records written + dropped counts = events traced");
    for (unsigned i = 0; i < THREADS; i++)
        ok(c.count[i] > 0, "thread %u has records in the file", i);

    st_stats_get(&st);
    is_u64(st.produced, THREADS * n_events, "stats: produced");
    is_u64(st.written, c.events, "stats: written = event records in the file");
    is_u64(st.dropped, c.dropped, "stats: dropped = counts in dropped records");
    is_u64(st.dropped_reported, st.dropped, "stats: every drop reported in the file");
    is_u64(st.pending, 0, "stats: nothing pending");
    is_int(st.threads, 0, "stats: exited threads' buffers freed");
    is_u64(st.bytes_written, (uint64_t)test_file_size(test_path("stress.trace")), "stats: bytes written = file size");
    st_trace_file_set_enabled(false);
    return done_testing();
}
