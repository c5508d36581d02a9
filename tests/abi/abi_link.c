/*
 * One program that uses every library: built once against all the shared
 * libraries and once against all the static ones (libsimpletrace,
 * libsimpletrace-read and libsimpletrace-func at once: their shared
 * helpers must not clash), and run: each library answers, and says it is
 * the release its headers belong to.
 */
#include <errno.h>
#include <string.h>

#include <simpletrace/api.h>
#include <simpletrace/functrace.h>
#include <simpletrace/reader.h>
#include <simpletrace/simpletrace.h>

#include "tap.h"

int main(void)
{
    static const char events[] = "abi_event(int n) \"n %d\"\n";
    struct st_stats stats = {.struct_size = sizeof stats}, old = {.struct_size = 4};
    struct st_catalog *cat = NULL;
    char err[256];
    int r;

    is_int((int)st_version(), SIMPLETRACE_VERSION_NUMBER, "st_version() is the headers' release");
    is_str(st_version_string(), SIMPLETRACE_VERSION_STRING, "st_version_string() too");
    is_str(st_strerror(-ENOENT), strerror(ENOENT), "st_strerror() names an errno");
    is_str(st_strerror(0), "Success", "st_strerror(0)");
    /* the runtime */
    is_int(st_stats_get(&stats), 0, "libsimpletrace: st_stats_get");
    is_int(st_stats_get(&old), -EINVAL, "libsimpletrace: a struct_size too small is refused");
    is_int(st_event_get_state("no_such_event"), -ENOENT, "libsimpletrace: st_event_get_state");
    /* the reader */
    r = st_catalog_load_buffer(&cat, "abi", events, sizeof events - 1, err, sizeof err);
    ok(r == 0 && st_catalog_count(cat) == 1, "libsimpletrace-read: a catalog of one event (%s)", r ? err : "ok");
    ok(cat && st_catalog_find(cat, "abi_event") != NULL, "libsimpletrace-read: st_catalog_find");
    st_catalog_free(cat);
    /* the function tracer (SIMPLETRACE_FUNC=off: nothing is written) */
    r = st_functrace_set_enabled(true);
    ok(r == 0 || r == -ENODEV, "libsimpletrace-func: st_functrace_set_enabled answers (%d)", r);
    return done_testing();
}
