/* Calls into the installed libraries named by USE_RUNTIME, USE_READ and
 * USE_FUNC, so that linking them through the CMake package's targets takes
 * each in for real (a static library is only linked if something is used).
 * Prints the version on success; exit 1 if a call misbehaves. */
#include <stdbool.h>
#include <stdio.h>

#include <simpletrace/functrace.h>
#include <simpletrace/reader.h>
#include <simpletrace/simpletrace.h>

int main(void)
{
#ifdef USE_RUNTIME
    if (!st_glob_match("job_*", "job_start"))
        return 1;
#endif
#ifdef USE_READ
    static const char events[] = "job_start(int worker) \"worker %d\"\n";
    struct st_catalog *cat = NULL;
    char err[256];
    if (st_catalog_load_buffer(&cat, "events", events, sizeof events - 1, err, sizeof err) != 0 ||
        st_catalog_count(cat) != 1)
        return 1;
    st_catalog_free(cat);
#endif
#ifdef USE_FUNC
    if (st_functrace_set_enabled(true) != 0)
        return 1;
#endif
    printf("%s\n", st_version_string());
    return 0;
}
