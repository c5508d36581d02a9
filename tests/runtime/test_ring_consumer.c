/*
 * The rings' consumer API (core/ring_consumer.h), driven as the writeout
 * thread drives it but by this test, which like the drain sees only
 * ring.h and ring_consumer.h: producer threads trace through the public
 * hot path (st__simple_begin/commit) into the core alone (no drain, no
 * control: nothing else consumes), and every step of a pass is checked
 * against the rings' own counters: a snapshot lists what was committed,
 * consuming gives the room back, pending drops are taken once, and only
 * drained rings of exited threads are reaped.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <simpletrace/trace.h>

#include "ring.h"
#include "ring_consumer.h"
#include "tap.h"
#include "timestamp.h"
#include "trace_format.h"

#define EVENT_ID 7
#define PAYLOAD 8
#define RECORD (ST_EVENT_FIXED_SIZE + PAYLOAD)

static struct st_event ev = {.struct_size = sizeof ev, .enabled = 1, .id = EVENT_ID, .name = "ev"};

/* What a producer thread did: its tid and how many events it traced that were accepted. */
struct job {
    int events;
    uint32_t tid;
    int accepted;
    pthread_barrier_t *hold; /* non-NULL: stay alive until the test crosses it twice */
};

static void *producer(void *arg)
{
    struct job *j = arg;

    j->tid = (uint32_t)gettid();
    for (int i = 0; i < j->events; i++) {
        struct st__record rec;
        if (st__simple_begin(&rec, &ev, PAYLOAD) == 0) {
            uint64_t v = (uint64_t)i;
            memcpy(rec.pos, &v, sizeof v);
            st__simple_commit(&rec);
            j->accepted++;
        }
    }
    if (j->hold) {
        pthread_barrier_wait(j->hold); /* traced: the test looks */
        pthread_barrier_wait(j->hold); /* the test looked: exit */
    }
    return NULL;
}

/* The set's entry of the ring of thread tid, or NULL. */
static struct st__ring_cons *find(struct st__ring_cons_set *set, uint32_t tid)
{
    for (size_t i = 0; i < set->n; i++)
        if (set->v[i].tid == tid && !set->v[i].lost)
            return &set->v[i];
    return NULL;
}

/* The records of c in [pos, end) whose ID is EVENT_ID and whose payloads count 0, 1, 2, ... */
static int count_records(const struct st__ring_cons *c, uint64_t from)
{
    int n = 0;

    for (uint64_t p = c->pos; c->end - p >= RECORD; p += RECORD) {
        uint8_t rec[RECORD];
        for (size_t k = 0; k < RECORD; k++)
            rec[k] = c->bytes[(p + k) & c->mask];
        if (st__fmt_get_u64(rec + ST_EV_OFF_ID) != EVENT_ID || st__fmt_get_u64(rec + ST_EV_OFF_PAYLOAD) != from + (uint64_t)n)
            break;
        n++;
    }
    return n;
}

/* A thread traces 100 events and exits: listed, consumed, reaped. */
static void test_pass(void)
{
    struct st__ring_cons_set set = {0};
    struct st__ring_counters rc;
    struct job j = {.events = 100};
    struct st__ring_cons *c;
    pthread_t t;

    pthread_create(&t, NULL, producer, &j);
    pthread_join(t, NULL);
    is_int(j.accepted, 100, "the producer's events were all accepted (4 KiB ring)");
    is_int(st__ring_cons_snapshot(&set), 0, "snapshot");
    c = find(&set, j.tid);
    ok(c != NULL, "the exited thread's ring is listed");
    if (!c)
        return;
    ok(c->exited, "... as exited (it was joined before the snapshot)");
    is_u64(c->end - c->pos, 100 * RECORD, "... with its 100 records committed");
    is_int(count_records(c, 0), 100, "... in order, readable at bytes[pos & mask]");
    ok(set.n >= 2 && set.v[set.n - 1].lost && set.v[set.n - 1].tid == ST_LOST_TID,
       "the lost drops' ring is listed last, marked lost");

    /* Not consumed yet: the ring is kept. */
    st__ring_cons_reap(&set);
    is_int(set.n, 0, "reap empties the set");
    is_int(st__ring_cons_snapshot(&set), 0, "snapshot again");
    c = find(&set, j.tid);
    ok(c != NULL, "a ring with records left is not reaped");
    if (!c)
        return;
    c->last_ns = 12345;
    st__ring_cons_consume(c, c->pos + 40 * RECORD, 40);
    st__ring_counters(&rc);
    is_u64(rc.buffered, 60 * RECORD, "consuming 40 records gives their room back (tail moved)");
    is_u64(rc.consumed, 40, "... and counts them consumed");
    st__ring_cons_reap(&set);

    is_int(st__ring_cons_snapshot(&set), 0, "snapshot a third time");
    c = find(&set, j.tid);
    ok(c && c->last_ns == 12345, "the consumer's last_ns is kept in the ring between passes");
    ok(c && count_records(c, 40) == 60, "the next pass starts where the consumer stopped");
    if (!c)
        return;
    st__ring_cons_consume(c, c->end, 60);
    st__ring_cons_reap(&set);
    st__ring_counters(&rc);
    is_u64(rc.threads, 0, "a drained ring of an exited thread is reaped");
    is_u64(rc.committed, 100, "... its counters retired, not lost: committed");
    is_u64(rc.consumed, 100, "... consumed");
    is_int(st__ring_cons_snapshot(&set), 0, "snapshot after the reap");
    ok(find(&set, j.tid) == NULL, "... no longer lists it");
    st__ring_cons_reap(&set);
    st__ring_cons_set_free(&set);
}

/* A full ring drops: the consumer takes the pending count once, and the ring stays until it is taken. */
static void test_drops(void)
{
    struct st__ring_cons_set set = {0};
    struct st__ring_counters before, rc;
    pthread_barrier_t hold;
    struct job j = {.events = 1000, .hold = &hold};
    struct st__ring_cons *c;
    uint64_t taken, dropped;
    pthread_t t;

    pthread_barrier_init(&hold, NULL, 2);
    st__ring_counters(&before);
    pthread_create(&t, NULL, producer, &j);
    pthread_barrier_wait(&hold);
    dropped = (uint64_t)(j.events - j.accepted);
    ok(dropped > 0, "1000 records overflow a 4 KiB ring nobody drains (%llu dropped)", (unsigned long long)dropped);
    is_int(st__ring_cons_snapshot(&set), 0, "snapshot");
    c = find(&set, j.tid);
    ok(c && !c->exited, "the running thread's ring is listed, not exited");
    if (!c) {
        pthread_barrier_wait(&hold);
        pthread_join(t, NULL);
        return;
    }
    st__ring_cons_consume(c, c->end, (uint64_t)j.accepted);
    taken = st__ring_cons_take_drops(c);
    is_u64(taken, dropped, "take_drops returns every drop not yet written in a dropped record");
    is_u64(st__ring_cons_take_drops(c), 0, "... and only once");
    st__ring_counters(&rc);
    is_u64(rc.dropped - before.dropped, dropped, "the thread's dropped total still counts them");
    st__ring_cons_reap(&set);
    st__ring_counters(&rc);
    is_u64(rc.threads, 1, "a running thread's ring is never reaped, drained or not");
    pthread_barrier_wait(&hold);
    pthread_join(t, NULL);

    is_int(st__ring_cons_snapshot(&set), 0, "snapshot after the thread exited");
    c = find(&set, j.tid);
    ok(c && c->exited && c->end == c->pos, "exited, nothing left");
    st__ring_cons_reap(&set);
    st__ring_counters(&rc);
    is_u64(rc.threads, 0, "then it is reaped");
    st__ring_cons_set_free(&set);
    pthread_barrier_destroy(&hold);
}

int main(void)
{
    st__ts_init();
    st__ring_init();
    st__ring_set_size(ST_RING_SIZE_MIN); /* small, so that a thread fills it */
    test_pass();
    test_drops();
    return done_testing();
}
