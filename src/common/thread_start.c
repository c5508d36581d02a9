/* Starting our own threads: see thread_start.h for why the call waits. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>

#include "thread_start.h"

struct start_handshake {
    void *(*fn)(void *);
    void *arg;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool entered;
};

/* Runs in the new thread: reports it is up, then runs the caller's function (the handshake is the caller's stack: copy first). */
static void *trampoline(void *p)
{
    struct start_handshake *h = p;
    void *(*fn)(void *) = h->fn;
    void *arg = h->arg;

    pthread_mutex_lock(&h->lock);
    h->entered = true;
    pthread_cond_signal(&h->cond);
    pthread_mutex_unlock(&h->lock);
    return fn(arg);
}

int st__thread_start(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg,
                     const char *name)
{
    struct start_handshake h = { .fn = fn, .arg = arg, .entered = false };
    sigset_t all, old;
    int r;

    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.cond, NULL);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r = pthread_create(thread, attr, trampoline, &h);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r == 0) {
        pthread_mutex_lock(&h.lock);
        while (!h.entered)
            pthread_cond_wait(&h.cond, &h.lock);
        pthread_mutex_unlock(&h.lock);
        if (name)
            pthread_setname_np(*thread, name);
    }
    pthread_cond_destroy(&h.cond);
    pthread_mutex_destroy(&h.lock);
    return -r;
}
