/* Every public header together, in one C translation unit (built with -Wall -Wextra -Wpedantic -Werror). */
#include <simpletrace/api.h>
#include <simpletrace/functrace.h>
#include <simpletrace/reader.h>
#include <simpletrace/simpletrace.h>
#include <simpletrace/trace.h>
#include <simpletrace/version.h>

/* Something from each, so the compiler looks at the declarations. */
int st_abi_headers_c(void);
int st_abi_headers_c(void)
{
    struct st_stats s = {.struct_size = sizeof s};
    struct st_reader_counters c;
    struct st_functrace_stats f;

    (void)c;
    (void)f;
    return (int)s.struct_size + SIMPLETRACE_VERSION_NUMBER;
}
