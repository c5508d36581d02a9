/* A file written under a temporary name and renamed into place (out_file.h). */
#include "out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void names_free(struct st__out_file *f)
{
    free(f->path);
    free(f->tmp);
    f->path = f->tmp = NULL;
    f->fd = -1;
}

int st__out_file_open(struct st__out_file *f, const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0, need = strlen(path) + 16;
    mode_t mask = umask(0);

    struct stat st;

    umask(mask);
    f->fd = -1;
    f->path = f->tmp = NULL;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return -EISDIR; /* the rename would fail at the end: say so before the work */
    f->path = strdup(path);
    f->tmp = malloc(need);
    if (!f->path || !f->tmp) {
        names_free(f);
        return -ENOMEM;
    }
    snprintf(f->tmp, need, "%.*s.%s.XXXXXX", (int)dirlen, path, slash ? slash + 1 : path);
    if ((f->fd = mkostemp(f->tmp, O_CLOEXEC)) < 0) {
        int ret = -errno;
        names_free(f);
        return ret;
    }
    if (fchmod(f->fd, 0666 & ~mask) != 0) { /* mkostemp() makes it 0600 */
        int ret = -errno;
        st__out_file_discard(f);
        return ret;
    }
    return 0;
}

int st__out_file_commit(struct st__out_file *f)
{
    int ret = close(f->fd) == 0 ? 0 : -errno;

    f->fd = -1;
    if (ret == 0 && rename(f->tmp, f->path) != 0)
        ret = -errno;
    if (ret < 0)
        unlink(f->tmp);
    names_free(f);
    return ret;
}

void st__out_file_discard(struct st__out_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    if (f->tmp)
        unlink(f->tmp);
    names_free(f);
}
