/*
 * Stands in for the system logger in the syslog backend's test: binds a
 * datagram socket at PATH (where the test mounts it as /dev/log), then
 * prints each message received as one line on stdout until COUNT messages
 * arrived or SIGTERM came: then what is queued still is printed and it
 * exits. The test sends SIGTERM once the program has exited: a datagram is
 * in our queue when the sender's send() returns, so none is missed, and no
 * wait for quiet is needed (a loaded machine may leave the program silent
 * for longer than any such wait).
 *
 * usage: syslog_sink PATH COUNT      exit 0, or 1 on a socket error
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
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

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

/* Prints one message as one line; false when none is queued (flags MSG_DONTWAIT) or on an error. */
static int print_one(int fd, int flags)
{
    char buf[8192];
    ssize_t n = recv(fd, buf, sizeof buf - 1, flags);
    if (n < 0)
        return 0;
    /* One line per message: syslog() adds no newline, but be robust. */
    while (n > 0 && buf[n - 1] == '\n')
        n--;
    printf("%.*s\n", (int)n, buf);
    fflush(stdout);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s PATH COUNT\n", argv[0]);
        return 2;
    }
    long count = strtol(argv[2], NULL, 10), got = 0;
    struct sigaction sa = {.sa_handler = on_term}; /* no SA_RESTART: poll returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    int fd = bind_socket(argv[1]);
    if (fd < 0) {
        fprintf(stderr, "syslog_sink: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    while (got < count && !stop) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        /* A bounded wait: a SIGTERM between the check and poll() is seen within it. */
        int r = poll(&p, 1, 100);
        if (r > 0)
            got += print_one(fd, MSG_DONTWAIT);
    }
    while (got < count && print_one(fd, MSG_DONTWAIT))
        got++;
    close(fd);
    return 0;
}
