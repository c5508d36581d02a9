/*
 * Descriptors the runtime keeps, and the file each was opened on.
 *
 * Servers close every descriptor at start-up (a daemon's close() loop
 * over 3..N, closefrom()), after our constructor opened the trace file or
 * the monitor's socket, and their next open() gets the same number. A
 * number alone then names the program's file: writing to it would put
 * trace records in its log, reading from it would take its clients'
 * bytes, closing it would close its file. So a descriptor kept for later
 * is remembered with the identity of its file (device and inode; every
 * pipe and socket has its own too) and checked before it is used or
 * closed. A file removed and closed frees its inode number, and the
 * program's next file often gets it (and the same descriptor number):
 * so the identity has the file's birth time too, where the file system
 * keeps one (ext4, xfs, btrfs, tmpfs). And none is ever 0, 1 or 2
 * (st__fd_keep). Header-only, C library only; statx(), fstat() and fcntl()
 * are system calls, safe in a fork child's handler too.
 */
#ifndef ST_COMMON_FD_IDENT_H
#define ST_COMMON_FD_IDENT_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The file a descriptor was opened on. */
struct st__fd_ident {
    uint64_t dev, ino;
    uint64_t born; /* birth time in ns, 0 where the file system keeps none */
};

/* Notes the file fd is open on into *id; false when fd is not open (id then matches nothing). */
static inline bool st__fd_ident_get(int fd, struct st__fd_ident *id)
{
    struct statx sx;
    struct stat st;

    id->born = 0;
    if (fd >= 0 && statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_BTIME, &sx) == 0) {
        id->dev = (uint64_t)makedev(sx.stx_dev_major, sx.stx_dev_minor);
        id->ino = (uint64_t)sx.stx_ino;
        if (sx.stx_mask & STATX_BTIME)
            id->born = (uint64_t)sx.stx_btime.tv_sec * 1000000000u + sx.stx_btime.tv_nsec;
        return true;
    }
    if (fd < 0 || fstat(fd, &st) != 0) { /* statx refused (an emulator, a seccomp filter): no birth time */
        id->dev = id->ino = UINT64_MAX;
        return false;
    }
    id->dev = (uint64_t)st.st_dev;
    id->ino = (uint64_t)st.st_ino;
    return true;
}

/* True when fd is still open on the file id notes (not closed, not reused for another file). */
static inline bool st__fd_is(int fd, const struct st__fd_ident *id)
{
    struct st__fd_ident now;

    return st__fd_ident_get(fd, &now) && now.dev == id->dev && now.ino == id->ino &&
           (!now.born || !id->born || now.born == id->born);
}

/* Closes fd when it is still id's file; a number the program has reused is left alone. */
static inline void st__fd_close_if(int fd, const struct st__fd_ident *id)
{
    if (st__fd_is(fd, id))
        close(fd);
}

/*
 * fd moved above the standard descriptors. One the runtime keeps must
 * never be 0, 1 or 2: a program started with them closed, or that closed
 * every descriptor (a daemon), opens /dev/null expecting 0 and writes its
 * messages to 2, which would then be our trace file or the monitor's pipe.
 * Returns fd itself when it is 3 or more (or negative: an open() that
 * failed, errno kept), else a copy numbered 3 or more, close-on-exec, with
 * fd closed (-1 and errno when no copy can be made).
 */
static inline int st__fd_keep(int fd)
{
    int copy, e;

    if (fd < 0 || fd > 2)
        return fd;
    copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    e = errno;
    close(fd);
    errno = e;
    return copy;
}

#endif /* ST_COMMON_FD_IDENT_H */
