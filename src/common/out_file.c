/* A file written under a temporary name and renamed into place, and whether an output is an input (out_file.h). */
#include "out_file.h"
#include "diag.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/* Opens path, found to be no regular file, to be written as it is. 0 or -errno. */
static int open_device(struct st__out_file *f, const char *path)
{
    struct stat st;
    int ret;

    if (!(f->path = strdup(path)))
        return -ENOMEM;
    /* No O_CREAT, no O_TRUNC: a regular file put there meanwhile is refused below, untouched. */
    if ((f->fd = open(path, O_WRONLY | O_CLOEXEC)) >= 0 && fstat(f->fd, &st) == 0 && !S_ISREG(st.st_mode))
        return 0;
    ret = f->fd < 0 ? -errno : -EAGAIN;
    if (f->fd >= 0)
        close(f->fd);
    names_free(f);
    return ret;
}

int st__out_file_open(struct st__out_file *f, const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0, need = strlen(path) + 16;
    mode_t mask = umask(0);

    struct stat st;
    bool exists;

    umask(mask);
    f->fd = -1;
    f->path = f->tmp = NULL;
    f->link = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
    exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        return -EISDIR; /* the rename would fail at the end: say so before the work */
    if (exists && !S_ISREG(st.st_mode))
        return open_device(f, path);
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

/* The notice for a symbolic link about to be replaced: not an error (the link's target is safe), but never silent. */
static void say_link_replaced(const char *path)
{
    char target[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof target - 1);

    if (n < 0)
        return; /* no longer a link: nothing replaced that the user made */
    target[n] = '\0';
    st__diag("simpletrace", "note: '%s' was a symbolic link (to '%s'): replaced by the file written, its target untouched",
             path, target);
}

int st__out_file_commit(struct st__out_file *f)
{
    int ret = close(f->fd) == 0 ? 0 : -errno;

    f->fd = -1;
    if (ret == 0 && f->tmp && f->link)
        say_link_replaced(f->path);
    if (ret == 0 && f->tmp && rename(f->tmp, f->path) != 0)
        ret = -errno;
    if (ret < 0 && f->tmp)
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

/* --- an output that is an input ------------------------------------------------------ */

#define REFUSING "refusing to overwrite an input"

static bool same_inode(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* path's directory ("." when it names none) into dir; returns its last component. */
static const char *split(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');

    if (!slash) {
        snprintf(dir, len, ".");
        return path;
    }
    snprintf(dir, len, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    return slash + 1;
}

/* True when path, its links resolved, is the directory dir or lies somewhere under it. */
static bool inside(const char *path, const struct stat *dir)
{
    char *p = realpath(path, NULL), *slash;
    struct stat st;
    bool found = false;

    while (p && !found) {
        found = stat(p, &st) == 0 && same_inode(&st, dir);
        if (!(slash = strrchr(p, '/')) || (slash == p && !p[1]))
            break; /* "/" was the last one */
        slash[slash == p] = '\0';
    }
    free(p);
    return found;
}

/*
 * True when out (*ost: its stat, NULL when it does not exist) is a piece of
 * the rotated trace in, the pieces named by rule: a piece's name of in's
 * beside it, or another name for one of in's pieces 1, 2, ... (up to the
 * first missing, as readers take them).
 */
static bool is_piece(const char *out, const struct stat *ost, const char *in, const struct st__out_pieces *rule)
{
    char odir[PATH_MAX], idir[PATH_MAX], piece[PATH_MAX + 24];
    const char *obase = split(out, odir, sizeof odir), *ibase = split(in, idir, sizeof idir);
    size_t base_len;
    struct stat a, b;

    if (!ost)
        return false;
    if (rule->number(obase, &base_len) && base_len == strlen(ibase) && !strncmp(obase, ibase, base_len) &&
        stat(odir, &a) == 0 && stat(idir, &b) == 0 && same_inode(&a, &b))
        return true;
    for (uint64_t k = 1; k < UINT64_MAX; k++) {
        if (rule->name(piece, sizeof piece, in, k) < 0 || stat(piece, &a) != 0)
            return false;
        if (same_inode(&a, ost))
            return true;
    }
    return false;
}

bool st__out_is_input(const char *out, bool out_dir, const struct st__out_input *in, size_t n, char *msg,
                      size_t msglen)
{
    struct stat ost, ist;
    bool out_exists;

    if (!out || !strcmp(out, "-"))
        return false;
    out_exists = stat(out, &ost) == 0;
    for (size_t i = 0; i < n; i++) {
        const char *p = in[i].path;
        bool in_exists;

        if (!p || !strcmp(p, "-"))
            continue;
        in_exists = stat(p, &ist) == 0;
        if (!strcmp(out, p) || (out_exists && in_exists && same_inode(&ost, &ist))) {
            snprintf(msg, msglen, "output '%s' is the input '%s'%s: " REFUSING, out, p,
                     strcmp(out, p) ? " (the same file)" : "");
            return true;
        }
        if (in[i].pieces && is_piece(out, out_exists ? &ost : NULL, p, in[i].pieces)) {
            snprintf(msg, msglen, "output '%s' is a piece of the input '%s' (a rotated trace, read with it): " REFUSING,
                     out, p);
            return true;
        }
        if (out_exists && in_exists && S_ISDIR(ist.st_mode) && inside(out, &ist)) {
            snprintf(msg, msglen, "output '%s' is in the input directory '%s': " REFUSING, out, p);
            return true;
        }
        if (out_dir && out_exists && S_ISDIR(ost.st_mode) && in_exists && inside(p, &ost)) {
            snprintf(msg, msglen, "output directory '%s' holds the input '%s': " REFUSING, out, p);
            return true;
        }
    }
    return false;
}
