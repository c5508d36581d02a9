/*
 * Outputs that appear complete or not at all, for every writer: a file is
 * written as ".NAME.XXXXXX" next to it (common/out_file.h, with messages
 * added here), a directory filled as ".NAME.tmp-XXXXXX" next to it, and
 * either is renamed into place by
 * install; discard removes whatever is left (our partial output, or the
 * old directory an exchange swapped out).
 *
 * An existing directory is replaced only when every file in it is one the
 * writer's kind owns (uftrace data, a CTF trace; for Parquet also the
 * directories it makes, holding only its files): we never delete what we
 * did not write. It is checked when the export starts and again when it
 * is swapped, atomically where the file system can exchange names
 * (renameat2), else by removing the old files and renaming.
 */
#include "export_internal.h"
#include "out_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The mode a new file or directory gets under the current umask. */
static mode_t new_mode(mode_t base)
{
    mode_t mask = umask(0);
    umask(mask);
    return base & ~mask;
}

/* A malloc'ed "DIR/.BASE.tmp-XXXXXX" template for path (trailing slashes ignored). */
static char *tmp_name(const char *path)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        len--;
    const char *slash = memrchr(path, '/', len);
    size_t plen = slash ? (size_t)(slash - path) + 1 : 0, need = len + 32;
    char *tmp = malloc(need);
    if (tmp)
        snprintf(tmp, need, "%.*s.%.*s.tmp-XXXXXX", (int)plen, path, (int)(len - plen), path + plen);
    return tmp;
}

/* --- files (common/out_file.h, with the export's messages) --------------------------- */

void st__ex_file_init(struct st__ex_file *f)
{
    f->path = NULL;
    f->out.fd = -1;
    f->out.path = f->out.tmp = NULL;
}

int st__ex_file_open(struct st__ex_ctx *ctx, struct st__ex_file *f, const char *path)
{
    f->path = path;
    int ret = st__out_file_open(&f->out, path);
    if (ret == -EISDIR)
        return st__ex_fail(ctx, ret, "cannot write %s", path);
    if (ret < 0 && ret != -ENOMEM)
        return st__ex_fail(ctx, ret, "cannot create a file next to %s", path);
    return ret;
}

int st__ex_file_install(struct st__ex_ctx *ctx, struct st__ex_file *f)
{
    int ret = st__out_file_commit(&f->out);
    return ret < 0 ? st__ex_fail(ctx, ret, "cannot write %s", f->path) : 0;
}

void st__ex_file_discard(struct st__ex_file *f)
{
    st__out_file_discard(&f->out);
}

/* --- directories ---------------------------------------------------------------------- */

/* Whether entry e of dirfd is a directory (d_type, or a look when the file system does not fill it in). */
static bool is_dir(int dirfd, const struct dirent *e)
{
    struct stat st;
    if (e->d_type != DT_UNKNOWN)
        return e->d_type == DT_DIR;
    return fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

static int walk(int dirfd, const struct st__ex_dir_kind *kind, bool clear, char *bad, size_t badlen);

/* A directory of the kind's own (kind->ours_dir): walked as its parent is, then (clear) removed. */
static int walk_sub(int dirfd, const char *name, const struct st__ex_dir_kind *kind, bool clear, char *bad,
                    size_t badlen)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(bad, badlen, "%s", name);
        return -errno;
    }
    int err = walk(fd, kind, clear, bad, badlen);
    close(fd);
    if (err == 0 && clear && unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
        err = -errno;
        snprintf(bad, badlen, "%s", name);
    }
    return err;
}

/*
 * Walks dir: with clear, removes the kind's files (and directories); else
 * stops at the first other entry (-EEXIST, named in bad).
 */
static int walk(int dirfd, const struct st__ex_dir_kind *kind, bool clear, char *bad, size_t badlen)
{
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int err = -errno;
        if (fd >= 0)
            close(fd);
        return err;
    }
    rewinddir(d);
    int err = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && (clear || !err);) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        bool dir = is_dir(dirfd, e);
        if (dir && kind->ours_dir && kind->ours_dir(e->d_name)) {
            int sub = walk_sub(dirfd, e->d_name, kind, clear, bad, badlen);
            if (!err)
                err = sub;
            continue;
        }
        bool ours = !dir && kind->ours(e->d_name);
        if (!ours && !clear) {
            snprintf(bad, badlen, "%s", e->d_name);
            err = -EEXIST;
        } else if (ours && clear && unlinkat(dirfd, e->d_name, 0) != 0 && errno != ENOENT && !err) {
            err = -errno;
            snprintf(bad, badlen, "%s", e->d_name);
        }
    }
    closedir(d);
    return err;
}

/* Removes the kind's files of directory path, then the directory itself. */
static int remove_dir(const char *path, const struct st__ex_dir_kind *kind)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char bad[256];
    int ret = walk(fd, kind, true, bad, sizeof bad);
    close(fd);
    if (ret == 0 && rmdir(path) != 0)
        ret = -errno;
    return ret;
}

/* Checks what is at d->path now; sets d->replace. */
static int check_target(struct st__ex_ctx *ctx, struct st__ex_dir *d)
{
    struct stat st;
    d->replace = false;
    if (stat(d->path, &st) != 0)
        return errno == ENOENT ? 0 : st__ex_fail(ctx, -errno, "cannot use %s", d->path);
    if (!S_ISDIR(st.st_mode))
        return st__ex_fail(ctx, -ENOTDIR, "%s exists", d->path);
    int fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return st__ex_fail(ctx, -errno, "cannot open %s", d->path);
    char bad[256];
    int ret = walk(fd, d->kind, false, bad, sizeof bad);
    close(fd);
    if (ret == -EEXIST) {
        snprintf(ctx->err, ctx->errlen, "%s exists and holds '%s', which is not %s; not replacing it", d->path, bad,
                 d->kind->what);
        return ret;
    }
    if (ret < 0)
        return st__ex_fail(ctx, ret, "cannot read %s", d->path);
    d->replace = true;
    return 0;
}

int st__ex_dir_open(struct st__ex_ctx *ctx, struct st__ex_dir *d, const char *path,
                    const struct st__ex_dir_kind *kind)
{
    *d = (struct st__ex_dir){.path = path, .dirfd = -1, .kind = kind};
    int ret = check_target(ctx, d);
    if (ret < 0)
        return ret;
    if (!(d->tmp = tmp_name(path)))
        return -ENOMEM;
    if (!mkdtemp(d->tmp)) {
        ret = st__ex_fail(ctx, -errno, "cannot create a directory next to %s", path);
        free(d->tmp);
        d->tmp = NULL;
        return ret;
    }
    chmod(d->tmp, new_mode(0777)); /* mkdtemp made it 0700 */
    d->dirfd = open(d->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return d->dirfd < 0 ? st__ex_fail(ctx, -errno, "cannot open %s", d->tmp) : 0;
}

/* Puts tmp in place of the directory: a plain rename, or an exchange with the old one. */
static int swap_in(struct st__ex_ctx *ctx, struct st__ex_dir *d)
{
    int ret = check_target(ctx, d); /* again: it may have changed while we converted */
    if (ret < 0)
        return ret;
    if (!d->replace)
        return rename(d->tmp, d->path) == 0 ? 0 : st__ex_fail(ctx, -errno, "cannot rename %s to %s", d->tmp, d->path);
    if (renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->path, RENAME_EXCHANGE) == 0)
        return 1; /* the old data now sits at tmp */
    if (errno != EINVAL && errno != ENOSYS)
        return st__ex_fail(ctx, -errno, "cannot replace %s", d->path);
    /* No exchange on this file system: remove the old data, then rename. */
    if ((ret = remove_dir(d->path, d->kind)) < 0)
        return st__ex_fail(ctx, ret, "cannot remove the old %s", d->path);
    return rename(d->tmp, d->path) == 0 ? 0 : st__ex_fail(ctx, -errno, "cannot rename %s to %s", d->tmp, d->path);
}

int st__ex_dir_install(struct st__ex_ctx *ctx, struct st__ex_dir *d)
{
    if (d->dirfd >= 0)
        close(d->dirfd);
    d->dirfd = -1;
    int ret = swap_in(ctx, d);
    if (ret == 0) {
        free(d->tmp); /* nothing left there to remove */
        d->tmp = NULL;
    }
    return ret < 0 ? ret : 0;
}

void st__ex_dir_discard(struct st__ex_dir *d)
{
    if (d->dirfd >= 0)
        close(d->dirfd);
    d->dirfd = -1;
    if (d->tmp)
        remove_dir(d->tmp, d->kind); /* our partial output, or the data we replaced */
    free(d->tmp);
    d->tmp = NULL;
}
