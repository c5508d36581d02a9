// Every public header together, in one C++ translation unit (built with -Wall -Wextra -Wpedantic -Werror).
#include <simpletrace/api.h>
#include <simpletrace/functrace.h>
#include <simpletrace/reader.h>
#include <simpletrace/simpletrace.h>
#include <simpletrace/trace.h>
#include <simpletrace/version.h>

int st_abi_headers_cxx();
int st_abi_headers_cxx()
{
    st_stats s{};
    s.struct_size = sizeof s;
    st_reader_counters c{};
    st_functrace_stats f{};
    (void)c;
    (void)f;
    return static_cast<int>(s.struct_size) + SIMPLETRACE_VERSION_NUMBER;
}
