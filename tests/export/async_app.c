/*
 * A program traced by the runtime for the keyed-span tests (export-async):
 * the main thread submits requests (req_submit, key "req") and jobs
 * (job_queued, key "job", a string) to a queue; two workers take them and
 * complete them (req_complete, job_finished) inside a call of their own
 * (serve_begin/serve_end), so every span begins on one thread and ends on
 * another, and several are in flight at once. Besides:
 *   - request 100 is submitted twice before it completes (a key reused:
 *     the first submission never completes);
 *   - request 200 is submitted and never completed (never ended);
 *   - request 300 completes without being submitted (an end without begin).
 * Prints "pid P", then "worker K tid T" for each worker.
 * Tracing is configured from outside (SIMPLETRACE=enable=*,file=...).
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "export-async-trace.h"

#define REQUESTS 12
#define QUEUE_CAP 64

/* A request (job NULL) or a job; req < 0 tells a worker to stop. */
struct item {
    int req;
    const char *job;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    struct item items[QUEUE_CAP];
    unsigned head, tail;
} queue = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {{0, NULL}}, 0, 0};

struct worker {
    pthread_t thread;
    int id;
    long tid;
};

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void push(int req, const char *job)
{
    pthread_mutex_lock(&queue.lock);
    queue.items[queue.tail++ % QUEUE_CAP] = (struct item){req, job};
    pthread_cond_signal(&queue.ready);
    pthread_mutex_unlock(&queue.lock);
}

static struct item pop(void)
{
    pthread_mutex_lock(&queue.lock);
    while (queue.head == queue.tail)
        pthread_cond_wait(&queue.ready, &queue.lock);
    struct item it = queue.items[queue.head++ % QUEUE_CAP];
    pthread_mutex_unlock(&queue.lock);
    return it;
}

static void *serve(void *arg)
{
    struct worker *w = arg;
    w->tid = (long)syscall(SYS_gettid);
    for (;;) {
        struct item it = pop();
        if (it.req < 0)
            return NULL;
        trace_serve_begin(w->id);
        pause_us(400); /* others are submitted meanwhile: spans overlap */
        if (it.job)
            trace_job_finished(w->id, it.job);
        else
            trace_req_complete(w->id, it.req, it.req % 3 == 0 ? -1 : 0);
        trace_serve_end(w->id);
    }
}

int main(void)
{
    static const char *const jobs[] = {"job-a", "job-b"};
    struct worker w[2] = {{.id = 0}, {.id = 1}};
    printf("pid %ld\n", (long)getpid());
    fflush(stdout);
    for (int i = 0; i < 2; i++)
        pthread_create(&w[i].thread, NULL, serve, &w[i]);
    for (int r = 0; r < REQUESTS; r++) {
        trace_req_submit(r, r % 2 ? "write" : "read");
        push(r, NULL);
        if (r < 2) {
            trace_job_queued(jobs[r]);
            push(0, jobs[r]);
        }
        pause_us(100);
    }
    trace_req_submit(100, "lost");   /* never pushed: its key begins again below */
    pause_us(100);
    trace_req_submit(100, "retry");
    push(100, NULL);
    trace_req_submit(200, "forgotten"); /* never pushed: never completed */
    for (int i = 0; i < 2; i++)
        push(-1, NULL);
    for (int i = 0; i < 2; i++) {
        pthread_join(w[i].thread, NULL);
        printf("worker %d tid %ld\n", w[i].id, w[i].tid);
    }
    trace_req_complete(-1, 300, 0); /* never submitted */
    return 0;
}
