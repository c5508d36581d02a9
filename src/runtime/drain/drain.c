/*
 * The drain's start-up, exit and fork handlers (drain.h), called by
 * control's init.c: each drives the drain's parts together, in the order
 * their locks and threads need (the writer, writer.c; trace-file control,
 * tracefile.c; snapshots, snapshot.c), so that no part's file knows the
 * others' life.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "drain.h"
#include "drain_internal.h"
#include "name_template.h"
#include "ring_consumer.h"

/* The rings' first-event hook: a fork child's own file opened, and the writer told (a second thread, writer=auto). */
static void first_event(void)
{
    st__file_first_event();
    st__writer_first_event();
}

void st__drain_init(void)
{
    static const struct st__ring_hooks hooks = {.wake = st__writer_kick, .first_event = first_event,
                                                .trigger_evicted = st__flight_trigger_evicted};

    st__writer_init();
    st__ws.start = time(NULL);
    st__ring_set_hooks(&hooks);
}

/* At exit: the final pass, by the writeout thread (then joined) or, without it, right here. */
void st__drain_exit(void)
{
    pthread_t t;
    bool join;

    pthread_mutex_lock(&st__wr_lock);
    if (!st__writer_alive()) {
        pthread_mutex_unlock(&st__wr_lock);
        return;
    }
    st__ws.final = true;
    /*
     * Asked, not waited for on wr_cond: the join below waits for the last
     * pass (without a thread, the request runs it here). exit() may run in
     * a signal handler (SIGTERM's, in servers) that interrupted this very
     * thread inside a wait on wr_cond (a flush): a second wait on it there
     * never returns, and the writer's broadcast after its pass would wait
     * for the interrupted one.
     */
    st__writer_request(false);
    join = st__ws.threaded;
    t = st__ws.thread;
    pthread_mutex_unlock(&st__wr_lock);
    if (join)
        pthread_join(t, NULL);
    /* The writing is over: ring files it wrote out go (crash=DIR). */
    st__ring_cons_exit();
}

void st__drain_fork_prepare(void)
{
    st__file_lock();
    st__snapshot_lock();
    st__writer_pass_lock(); /* before wr_lock: a pass takes it */
    st__writer_fork_pass(); /* no thread: the parent's records reach its file before the child runs */
    pthread_mutex_lock(&st__wr_lock);
}

void st__drain_fork_parent(void)
{
    pthread_mutex_unlock(&st__wr_lock);
    st__writer_pass_unlock();
    st__snapshot_unlock();
    st__file_unlock();
}

/* Fork child: the shared state starts afresh, with the child's own file name to come. */
static void shared_fork_child(void)
{
    bool was_on = st__ws.enabled || st__ws.lazy_open || st__ws.open_failed; /* a child that failed: try again */
    size_t n;

    if (st__ws.have_op && st__ws.op.fd >= 0)
        close(st__ws.op.fd);
    if (st__ws.have_op && st__ws.op.unlock_fd >= 0)
        st__fd_close_if(st__ws.op.unlock_fd, &st__ws.op.unlock_id);
    st__ws.have_op = st__ws.running = st__ws.exited = st__ws.final = st__ws.stop = st__ws.threaded = false;
    st__ws.req_seq = st__ws.done_seq = 0;
    st__ws.enabled = false;
    st__ws.error = 0;
    memset(&st__ws.last, 0, sizeof st__ws.last);
    st__ws.fail_error = 0;
    st__ws.fail_path[0] = '\0';
    /* The child's own name, expanded when it opens it: %p is its pid; without %p, F-%p (not F.%p: a piece). */
    n = strlen(st__ws.tmpl);
    if (n && !st__name_has_pid(st__ws.tmpl))
        snprintf(st__ws.tmpl + n, sizeof st__ws.tmpl - n, "-%%p");
    st__ws.name[0] = '\0';
    st__ws.piece = 0; /* the child's own file starts at its first piece */
    st__ws.lazy_open = was_on;
    st__ws.open_failed = false;
    st__lazy_flag = was_on;
    pthread_cond_init(&st__wr_cond, NULL);
    pthread_mutex_init(&st__wr_lock, NULL);
}

void st__drain_fork_child(void)
{
    st__writer_fork_child();
    shared_fork_child();
    st__snapshot_fork_child();
    st__flight_fork_child();
    st__file_fork_child();
}
