/*
 * What every simpletrace library shares: the export macro, the version,
 * error texts, and the rule that lets structures grow.
 *
 * ABI promise: within one SONAME (libsimpletrace.so.0, libsimpletrace-read.so.0,
 * libsimpletrace-func.so.0) a program built against an older release keeps
 * working with a newer library. Functions are only added; a structure that
 * programs compile in or allocate begins with `uint32_t struct_size`,
 * which the program sets to sizeof the structure it was built with, and
 * gains fields only at its end, so the library reads and writes only the
 * fields that program knows:
 *
 *     struct st_stats s = {.struct_size = sizeof s};      (C)
 *     st_stats s{}; s.struct_size = sizeof s;              (C++)
 *
 * A struct_size smaller than the first release's structure is -EINVAL.
 * Structures the library allocates and hands out by pointer grow at their
 * end without a size field; arrays a program indexes (st_arg_info,
 * st_value) never change.
 */
#ifndef SIMPLETRACE_API_H
#define SIMPLETRACE_API_H

#include <simpletrace/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the functions the libraries export (they are built with hidden visibility). */
#if defined(__GNUC__) || defined(__clang__)
#define ST_API __attribute__((visibility("default")))
#else
#define ST_API
#endif

/* SIMPLETRACE_VERSION_NUMBER of the library the program runs with (compare with the header's). */
ST_API unsigned st_version(void);

/* "MAJOR.MINOR.PATCH" of the library the program runs with (static storage). */
ST_API const char *st_version_string(void);

/*
 * Text for an error code returned by any st_ function of any simpletrace
 * library: functions return 0 (or a count) on success and a negative errno
 * value on failure. Static storage, thread-safe; positive values are read
 * as their negation.
 */
ST_API const char *st_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* SIMPLETRACE_API_H */
