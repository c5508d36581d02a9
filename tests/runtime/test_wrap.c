/*
 * Records that straddle the end of a small (4 KiB) ring: strings of every
 * length 0..512 so that records of all sizes land across the end; each
 * string is derived from its sequence number, so a bad copy shows. Also an
 * impossible payload size is refused and counted.
 */
#include <pthread.h>

#include "rt_test.h"

TEST_EVENT(ev_wrap, "wrap_ev", "int seq, int len, const char *s", "", "iis", 3, 0);
TEST_GROUP(grp_wrap, "wrap", &ev_wrap)

static struct st_group *const groups[] = {&grp_wrap, NULL};
static unsigned long n_events;

static void fill(char *s, uint64_t seq, unsigned len)
{
    for (unsigned i = 0; i < len; i++)
        s[i] = (char)('a' + (seq + i) % 26);
    s[len] = '\0';
}

static void *producer(void *arg)
{
    char s[600];
    (void)arg;
    for (uint64_t i = 0; i < n_events; i++) {
        unsigned len = (unsigned)((i * 7) % 513);
        fill(s, i, len);
        test_trace_iis(&ev_wrap, i, len, s);
        if (i % 8 == 7)
            st_trace_file_flush(); /* keep drops rare so most records are written */
    }
    return NULL;
}

int main(void)
{
    struct st__record rec;
    struct test_trace t;
    struct st_stats st = {.struct_size = sizeof st}, st2 = {.struct_size = sizeof st2};
    pthread_t th;
    char cfg[1200], want[600];
    uint64_t next = 0, drops = 0, badstr = 0;
    int order = 1;

    n_events = test_scale(20000, 4000);
    test_tmpdir();
    snprintf(cfg, sizeof cfg, "wrap_ev,file=%s,bufsize=4K", test_path("wrap.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure 4K buffers");
    pthread_create(&th, NULL, producer, NULL);
    pthread_join(th, NULL);
    st_trace_file_flush();
    if (ok(test_collect(test_path("wrap.trace"), groups, &t) == 0, "every record decodes")) {
        for (size_t i = 0; i < t.n; i++) {
            const struct test_rec *r = &t.r[i];
            if (r->dropped)
                drops += r->drop_count;
            if (r->mapping || r->dropped)
                continue;
            order &= r->u[0] >= next;
            next = r->u[0] + 1;
            fill(want, r->u[0], (unsigned)r->u[1]);
            badstr += strcmp(want, r->s) != 0;
        }
        ok(order, "sequence strictly increasing");
        is_u64(badstr, 0, "every string intact across the ring's end");
        is_u64(t.sum.events + drops, n_events, "records + dropped = traced");
        ok(t.sum.events > n_events / 2, "most records written (%llu)", (unsigned long long)t.sum.events);
    }
    test_trace_free(&t);

    st_stats_get(&st);
    ev_wrap.enabled = 1;
    is_int(st__simple_begin(&rec, &ev_wrap, 100000), -1, "payload larger than any record is refused");
    st_stats_get(&st2);
    is_u64(st2.dropped, st.dropped + 1, "and counted as dropped");
    st_trace_file_set_enabled(false);
    return done_testing();
}
