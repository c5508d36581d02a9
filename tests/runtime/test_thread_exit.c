/*
 * Threads that end: their buffered records are written and their buffers
 * freed; while the file is off the records wait in the exited thread's
 * buffer until it is enabled again.
 */
#include <pthread.h>

#include "rt_test.h"

#define PER_THREAD 2000

TEST_EVENT(ev_te, "te_ev", "int thread, int seq", "t %d seq %d", "ii", 2, 0);
TEST_GROUP(grp_te, "te", &ev_te)

static struct st_group *const groups[] = {&grp_te, NULL};

static void *worker(void *arg)
{
    for (uint64_t i = 0; i < PER_THREAD; i++)
        test_trace_ii(&ev_te, (uintptr_t)arg, i);
    return NULL;
}

/* Every thread in [from, to) has seq 0..PER_THREAD-1 complete, in order. */
static void check(const struct test_trace *t, unsigned from, unsigned to, const char *what)
{
    uint64_t next[16] = {0};
    int order = 1;

    for (size_t i = 0; i < t->n; i++) {
        const struct test_rec *r = &t->r[i];
        if (r->mapping || r->dropped || r->u[0] >= 16)
            continue;
        order &= r->u[1] == next[r->u[0]]++;
    }
    for (unsigned i = from; i < to; i++)
        order &= next[i] == PER_THREAD;
    ok(order, "%s: every thread's records complete and in order", what);
}

int main(void)
{
    pthread_t t[16];
    struct test_trace tr;
    struct st_stats st = {.struct_size = sizeof st};
    char cfg[1200];

    test_tmpdir();
    snprintf(cfg, sizeof cfg, "te_ev,file=%s", test_path("te.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure");
    for (unsigned wave = 0; wave < 2; wave++) {
        for (unsigned i = 0; i < 4; i++)
            pthread_create(&t[wave * 4 + i], NULL, worker, (void *)(uintptr_t)(wave * 4 + i));
        for (unsigned i = 0; i < 4; i++)
            pthread_join(t[wave * 4 + i], NULL);
    }
    is_int(st_trace_file_flush(), 0, "flush");
    if (ok(test_collect(test_path("te.trace"), groups, &tr) == 0, "trace decodes")) {
        is_u64(tr.sum.events, 8 * PER_THREAD, "all records of 8 ended threads written");
        is_u64(tr.sum.dropped_records, 0, "no drops");
        check(&tr, 0, 8, "8 threads");
    }
    test_trace_free(&tr);
    st_stats_get(&st);
    is_int(st.threads, 0, "buffers of ended threads freed");

    /* A thread that ends while the file is off keeps its records. */
    st_trace_file_set_enabled(false);
    pthread_create(&t[8], NULL, worker, (void *)(uintptr_t)8);
    pthread_join(t[8], NULL);
    st_trace_file_flush();
    st_stats_get(&st);
    ok(st.threads == 1 && st.pending == PER_THREAD, "file off: ended thread's buffer kept with its records");
    is_int(st_trace_file_set_enabled(true), 0, "file on again (appends)");
    is_int(st_trace_file_flush(), 0, "flush");
    if (ok(test_collect(test_path("te.trace"), groups, &tr) == 0, "trace decodes"))
        check(&tr, 0, 9, "9 threads");
    test_trace_free(&tr);
    st_stats_get(&st);
    ok(st.threads == 0 && st.pending == 0, "then written and freed");
    ok(st.produced == st.written + st.dropped + st.pending, "stats add up");
    st_trace_file_set_enabled(false);
    return done_testing();
}
