/* Directories the runtime writes into (dir_ready.h). */
#include "dir_ready.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simpletrace/api.h>

#include "diag.h"

/* Room left under the directory for the names written there (st-PID-TID.ring, PROGRAM-PID.trace). */
#define NAME_ROOM 64

/* The reason dir cannot be used, or 0; *created when this call made it. */
static int make_or_check(const char *dir, bool *created)
{
    struct stat st;

    if (strlen(dir) > PATH_MAX - NAME_ROOM)
        return -ENAMETOOLONG;
    /* mkdir, not stat then mkdir: another process making it meanwhile is EEXIST, then checked. */
    if (mkdir(dir, ST__OWNER_DIR_MODE) == 0) {
        *created = true;
        return 0;
    }
    if (errno != EEXIST)
        return -errno;
    if (stat(dir, &st) != 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    return access(dir, W_OK | X_OK) != 0 ? -errno : 0;
}

int st__dir_ready(const char *key, const char *dir, bool *created, char *err, size_t errlen)
{
    int e;

    *created = false;
    if (!*dir)
        return 0;
    if ((e = make_or_check(dir, created)) < 0)
        st__errmsg(err, errlen, "%s=%.200s%s: %s", key, dir, strlen(dir) > 200 ? "..." : "", st_strerror(e));
    return e;
}
