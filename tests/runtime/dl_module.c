/*
 * A module loaded with dlopen() by test_dlopen: its own event group,
 * registered by a constructor and unregistered by a destructor, as
 * generated code for a loadable module does.
 */
#include <simpletrace/simpletrace.h>

#include "rt_test.h"

TEST_EVENT(ev_dl_one, "dl_one", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_dl_two, "dl_two", "int x, int y, const char *s", "x %d y %d s %s", "iis", 3, 0);
static struct st_event *const dl_events[] = {&ev_dl_one, &ev_dl_two};
static struct st_group dl_group = {sizeof(struct st_group), "dlmod", dl_events, 2, 0};

__attribute__((constructor)) static void dl_register(void)
{
    st_group_register(&dl_group);
}

__attribute__((destructor)) static void dl_unregister(void)
{
    st_group_unregister(&dl_group);
}

/* Traces n pairs of events; returns the ID of dl_one. */
__attribute__((visibility("default"))) unsigned dlmod_trace(int n);
__attribute__((visibility("default"))) unsigned dlmod_trace(int n)
{
    for (int i = 0; i < n; i++) {
        test_trace_i(&ev_dl_one, (uint64_t)i);
        test_trace_iis(&ev_dl_two, (uint64_t)i, (uint64_t)(2 * i), "from the module");
    }
    return ev_dl_one.id;
}
