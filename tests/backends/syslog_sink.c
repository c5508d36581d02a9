/*
 * Stands in for the system logger in the syslog backend's test: binds a
 * datagram socket at PATH (where the test mounts it as /dev/log), then
 * prints each message received as one line on stdout until COUNT messages
 * arrived or nothing came for SECONDS.
 *
 * usage: syslog_sink PATH COUNT SECONDS      exit 0, or 1 on a socket error
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Binds a datagram socket at path; the descriptor or -1. */
static int bind_socket(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path)
        return -1;
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (fd < 0)
        return -1;
    unlink(path);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s PATH COUNT SECONDS\n", argv[0]);
        return 2;
    }
    long count = strtol(argv[2], NULL, 10);
    int timeout_ms = (int)strtol(argv[3], NULL, 10) * 1000;
    int fd = bind_socket(argv[1]);
    if (fd < 0) {
        fprintf(stderr, "syslog_sink: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    for (long got = 0; got < count;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, timeout_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        char buf[8192];
        ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
        if (n < 0)
            continue;
        /* One line per message: syslog() adds no newline, but be robust. */
        while (n > 0 && buf[n - 1] == '\n')
            n--;
        printf("%.*s\n", (int)n, buf);
        fflush(stdout);
        got++;
    }
    close(fd);
    return 0;
}
