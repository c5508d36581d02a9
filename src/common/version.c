/* The library's own version (api.h), which a program compares with the header it was built with. */
#include <simpletrace/api.h>

unsigned st_version(void)
{
    return SIMPLETRACE_VERSION_NUMBER;
}

const char *st_version_string(void)
{
    return SIMPLETRACE_VERSION_STRING;
}
