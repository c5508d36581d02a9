/*
 * The warnings a catalog's trace-events text gave (st_catalog_warning():
 * an event whose format does not fit its arguments, read anyway as QEMU's
 * simpletrace.py reads it), printed for the commands that read traces.
 */
#ifndef ST_CLI_CATALOG_WARN_H
#define ST_CLI_CATALOG_WARN_H

#include <stddef.h>

#include <simpletrace/reader.h>

/*
 * Prints on stderr, one line each ("FILE:LINE: warning: ..."), the warnings
 * of cat not printed yet, and returns how many it printed. Safe to call
 * again on the same catalog (loading it, a command using it, a catalog that
 * grew): each warning is printed once. cat NULL prints nothing.
 */
size_t cli_catalog_warn(const struct st_catalog *cat);

#endif /* ST_CLI_CATALOG_WARN_H */
