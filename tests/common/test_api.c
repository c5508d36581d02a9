/*
 * What every library shares (include/simpletrace/api.h): st_version()
 * and st_version_string() agree with the headers the program was built
 * with, and st_strerror() gives one static text per error, for negative
 * and positive codes alike.
 */
#include "tap.h"

#include <simpletrace/api.h>

#include <errno.h>
#include <limits.h>

int main(void)
{
    unsigned major, minor, patch;
    char tail;

    is_u64(st_version(), SIMPLETRACE_VERSION_NUMBER, "st_version() is SIMPLETRACE_VERSION_NUMBER");
    is_str(st_version_string(), SIMPLETRACE_VERSION_STRING, "st_version_string() is SIMPLETRACE_VERSION_STRING");
    ok(sscanf(st_version_string(), "%u.%u.%u%c", &major, &minor, &patch, &tail) == 3 &&
           major == SIMPLETRACE_VERSION_MAJOR && minor == SIMPLETRACE_VERSION_MINOR &&
           patch == SIMPLETRACE_VERSION_PATCH,
       "the string is MAJOR.MINOR.PATCH of the macros");
    is_u64(st_version(), major * 10000u + minor * 100u + patch, "the number is MAJOR * 10000 + MINOR * 100 + PATCH");

    is_str(st_strerror(0), "Success", "st_strerror(0)");
    is_str(st_strerror(-ENOENT), "No such file or directory", "st_strerror(-ENOENT)");
    is_str(st_strerror(-EINVAL), "Invalid argument", "st_strerror(-EINVAL)");
    is_str(st_strerror(-ENODEV), "No such device", "st_strerror(-ENODEV)");
    is_str(st_strerror(-ESHUTDOWN), "Cannot send after transport endpoint shutdown", "st_strerror(-ESHUTDOWN)");
    ok(st_strerror(ERANGE) == st_strerror(-ERANGE), "a positive code reads as its negation");
    ok(st_strerror(-EBUSY) == st_strerror(-EBUSY), "static storage: the same text each time");
    is_str(st_strerror(-99999), "Unknown error", "an unknown code");
    is_str(st_strerror(INT_MIN), "Unknown error", "INT_MIN, which has no negation");
    return done_testing();
}
