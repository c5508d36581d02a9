/*
 * Start-up, exit and fork: the one place that knows every layer below and
 * drives them in order.
 *
 * Groups register from generated constructors in an order nobody controls
 * (and later from dlopen'ed modules), so every public entry point first
 * runs st__init() through pthread_once: the clock, the rings, the drain,
 * the exit and fork handlers, then SIMPLETRACE.
 *
 * Exit: the atexit handler, registered here (normally before main, so it
 * runs after the handlers the program registers), has the drain write
 * everything still buffered (st__finish: also st_trace_finish(), for a
 * process that ends with _exit()). fork(): the prepare handler takes every
 * runtime lock in order (control.h), so the child never inherits one
 * mid-update; each layer's child handler then starts it afresh.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "diag.h"
#include "drain.h"
#include "name_template.h"
#include "registry.h"
#include "ring.h"
#include "timestamp.h"

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static atomic_bool finished; /* st__finish ran in this process */

#define FINISH_HOOKS 4
static void (*_Atomic finish_hooks[FINISH_HOOKS])(void); /* st__finish_hook's, in order */
static atomic_uint finish_hook_count;

void st__ctl_lock(void)
{
    pthread_mutex_lock(&ctl_lock);
}

void st__ctl_unlock(void)
{
    pthread_mutex_unlock(&ctl_lock);
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&ctl_lock);
    st__drain_fork_prepare();
    st__reg_lock();
    st__ring_lock();
}

static void fork_parent(void)
{
    st__ring_unlock();
    st__reg_unlock();
    st__drain_fork_parent();
    pthread_mutex_unlock(&ctl_lock);
}

static void fork_child(void)
{
    st__ring_fork_child();
    st__reg_fork_child();
    st__drain_fork_child();
    pthread_mutex_init(&ctl_lock, NULL);
    atomic_store(&finished, false); /* the child's own end is still to come */
}

int st__finish_hook(void (*fn)(void))
{
    unsigned i = atomic_fetch_add(&finish_hook_count, 1);

    if (i >= FINISH_HOOKS)
        return -ENOSPC;
    atomic_store(&finish_hooks[i], fn);
    return 0;
}

void st__finish(void)
{
    unsigned n = atomic_load(&finish_hook_count);

    if (atomic_exchange(&finished, true))
        return;
    for (unsigned i = 0; i < n && i < FINISH_HOOKS; i++) {
        void (*fn)(void) = atomic_load(&finish_hooks[i]);
        if (fn)
            fn();
    }
    st__flight_exit();
    st__drain_exit();
    if (st__reg_none_recorded())
        st__file_remove_unwritten();
    st__exit_report();
}

static void at_exit(void)
{
    st__finish();
}

/*
 * SIMPLETRACE_WRITER=MODE: writer=MODE for a whole tree of processes,
 * whatever SIMPLETRACE each is given (a later writer= in it wins). A word
 * of letters only, so it can carry no other key.
 */
static void apply_writer_environment(void)
{
    const char *env = secure_getenv("SIMPLETRACE_WRITER");
    char cfg[32], msg[512];

    if (!env || !*env)
        return;
    if (strlen(env) > 16 || strspn(env, "abcdefghijklmnopqrstuvwxyz") != strlen(env))
        snprintf(msg, sizeof msg, "invalid writer '%.64s': want auto, thread or inline", env);
    else if (snprintf(cfg, sizeof cfg, "writer=%s", env), st__cfg_apply(cfg, true, msg, sizeof msg) == 0)
        return;
    st__diag("simpletrace", "SIMPLETRACE_WRITER: %s", msg);
}

/* Applies SIMPLETRACE; an error is one line on stderr and the program goes on. */
static void apply_environment(void)
{
    const char *env = secure_getenv("SIMPLETRACE");
    char msg[512];

    apply_writer_environment();

    if (env && st__cfg_apply(env, true, msg, sizeof msg) < 0)
        st__diag("simpletrace", "SIMPLETRACE: %s", msg);
}

static void do_init(void)
{
    /* Now, normally before main: servers retitle argv[0] for ps later (%e, the files' program=). */
    st__name_prog_init();
    st__ts_init();
    st__ring_init();
    st__drain_init();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(at_exit);
    apply_environment();
}

void st__init(void)
{
    pthread_once(&init_once, do_init);
}
