/*
 * The simpletrace release these headers belong to. The build checks that
 * it equals the project's version (meson.build): change both together.
 */
#ifndef SIMPLETRACE_VERSION_H
#define SIMPLETRACE_VERSION_H

#define SIMPLETRACE_VERSION_MAJOR 0
#define SIMPLETRACE_VERSION_MINOR 2
#define SIMPLETRACE_VERSION_PATCH 0

/* MAJOR * 10000 + MINOR * 100 + PATCH, what st_version() returns. */
#define SIMPLETRACE_VERSION_NUMBER \
    (SIMPLETRACE_VERSION_MAJOR * 10000 + SIMPLETRACE_VERSION_MINOR * 100 + SIMPLETRACE_VERSION_PATCH)

#define SIMPLETRACE_VERSION_STRING "0.2.0"

#endif /* SIMPLETRACE_VERSION_H */
