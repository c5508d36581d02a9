// The public reader header compiles alone as C++ and links from C++ code,
// api.h's functions included.
#include <simpletrace/reader.h>

#include <cstdio>

int main()
{
    st_reader_options o = {};
    o.struct_size = sizeof o;
    int64_t ns = 0;
    bool good = st_parse_duration_ns("2ms", &ns) == 0 && ns == 2000000 && o.flags == 0 &&
                st_version() == SIMPLETRACE_VERSION_NUMBER && st_strerror(-22)[0] != '\0';
    std::printf("%s 1 - reader.h compiles and links as C++\n1..1\n", good ? "ok" : "not ok");
    return good ? 0 : 1;
}
