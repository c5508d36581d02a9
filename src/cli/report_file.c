/* A report written to a file, put in place when complete (report_file.h). */
#include "report_file.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "out_file.h"

int cli_report_file(const char *cmd, const char *path, int (*write)(FILE *f, const void *arg), const void *arg)
{
    struct st__out_file out;
    int ret = st__out_file_open(&out, path);
    if (ret < 0) {
        fprintf(stderr, "simpletrace %s: cannot create %s: %s\n", cmd, path, strerror(-ret));
        return 1;
    }
    /* The stream gets its own descriptor: fclose() closes it, the commit closes the file's. */
    int fd = dup(out.fd);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        ret = -errno;
        if (fd >= 0)
            close(fd);
    } else {
        errno = 0;
        ret = write(f, arg) < 0 || ferror(f) ? -(errno ? errno : EIO) : 0;
        if (fclose(f) != 0 && ret == 0)
            ret = -errno;
    }
    if (ret == 0 && (ret = st__out_file_commit(&out)) == 0)
        return 0;
    if (out.path)
        st__out_file_discard(&out);
    fprintf(stderr, "simpletrace %s: cannot write %s: %s\n", cmd, path, strerror(-ret));
    return 1;
}
