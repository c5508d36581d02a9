/*
 * Writing a whole buffer to a file descriptor, one definition for the parts
 * that write files (generator, exporters, function tracer). Header-only,
 * depends on the C library only.
 */
#ifndef ST_COMMON_WRITE_ALL_H
#define ST_COMMON_WRITE_ALL_H

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

/* Writes all len bytes of buf to fd, retrying short writes and EINTR. 0 or -errno. */
#if defined(__GNUC__)
__attribute__((no_instrument_function))
#endif
static inline int st__write_all(int fd, const void *buf, size_t len)
{
    const char *p = (const char *)buf;

    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

#endif /* ST_COMMON_WRITE_ALL_H */
