/*
 * A report written to a file named by an option (latency's and compare's
 * --html=FILE): put in place only once complete (common/out_file.h), so a
 * failure leaves nothing and a reader never sees half a page.
 */
#ifndef ST_CLI_REPORT_FILE_H
#define ST_CLI_REPORT_FILE_H

#include <stdio.h>

/*
 * Writes path through write(f, arg) (which returns < 0 on failure) and
 * puts it in place. 0, or 1 after a message naming the file.
 */
int cli_report_file(const char *cmd, const char *path, int (*write)(FILE *f, const void *arg), const void *arg);

#endif
