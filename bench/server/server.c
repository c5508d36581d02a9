/*
 * A small single-threaded epoll HTTP server on loopback, for bench/server
 * (run.sh drives it with wrk): one process, one thread, non-blocking
 * sockets, keep-alive, and per request what a real event loop does (read,
 * parse, some CPU work, a malloc'd response formatted with snprintf,
 * write) with five events (begin, parse, work, end; accept and close per
 * connection).
 *
 *   server [--work BYTES] [--idle-thread]
 *
 * Prints its port on stdout, serves until SIGTERM or SIGINT, then prints
 * on stderr the service time of its requests (from the request's read to
 * its write, on this thread: an inline drain pass shows there): p50, p99,
 * p99.9, p99.99, max, in us; and the CPU time per request of its own
 * thread (what bounds its throughput) and of the whole process (a
 * writeout thread's included), in ns: on a machine shared with other
 * work these vary far less than requests/s do. --work: bytes hashed per request (default
 * 8 KiB, ~17 us on the 2-core VM). --idle-thread: one more thread that only sleeps,
 * as a tracer's thread costs a single-threaded program (glibc leaves its
 * single-thread fast paths). Built twice (meson.build): with its events
 * traced, and with none (SRV_UNINSTRUMENTED: no simpletrace at all).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifdef SRV_UNINSTRUMENTED
#define trace_srv_accept(fd) ((void)(fd))
#define trace_srv_request_begin(fd, n) ((void)(fd), (void)(n))
#define trace_srv_request_parse(fd, p) ((void)(fd), (void)(p))
#define trace_srv_request_work(s) ((void)(s))
#define trace_srv_request_end(fd, st, n) ((void)(fd), (void)(st), (void)(n))
#define trace_srv_close(fd) ((void)(fd))
#else
#include TRACE_HEADER
#endif

#define MAX_CONN 1024
#define BUF 4096

struct conn {
    int fd;
    size_t len;
    char buf[BUF];
};

static volatile sig_atomic_t stop;
static size_t work_bytes = 8 << 10;
static uint8_t *work_buf;

/* Service times: log-linear buckets of 1/16 per power of two, ns. */
#define HBUCKETS (64 * 16)
static uint64_t hist[HBUCKETS], served, max_ns;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned bucket(uint64_t v)
{
    unsigned e;

    if (v < 16)
        return (unsigned)v;
    e = 63u - (unsigned)__builtin_clzll(v);
    return (e - 3) * 16 + (unsigned)((v >> (e - 4)) & 15);
}

static uint64_t bucket_low(unsigned b)
{
    unsigned e = b / 16 + 3, m = b % 16;

    return b < 16 ? b : ((uint64_t)(16 + m) << (e - 4));
}

static double percentile(double p)
{
    uint64_t want = (uint64_t)(p / 100.0 * (double)served), seen = 0;

    for (unsigned b = 0; b < HBUCKETS; b++) {
        seen += hist[b];
        if (seen > want)
            return (double)bucket_low(b) / 1000.0;
    }
    return 0;
}

/* ns of CPU (user + system) per request served. */
static double cpu_per_request(const struct rusage *ru)
{
    double ns = ((double)ru->ru_utime.tv_sec + (double)ru->ru_stime.tv_sec) * 1e9 +
                ((double)ru->ru_utime.tv_usec + (double)ru->ru_stime.tv_usec) * 1e3;

    return served ? ns / (double)served : 0;
}

/* The request's CPU work: a hash over work_bytes. */
static uint64_t work(void)
{
    uint64_t h = 1469598103934665603u;

    for (size_t i = 0; i < work_bytes; i++)
        h = (h ^ work_buf[i]) * 1099511628211u;
    return h;
}

static void *idle_main(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* One whole request in c->buf: answer it. 0, or -1 to close. */
static int answer(struct conn *c, size_t end)
{
    char path[128] = "/", *sp, *resp;
    uint64_t sum;
    int n;

    trace_srv_request_begin(c->fd, end);
    if ((sp = memchr(c->buf, ' ', end)) && sp + 1 < c->buf + end) {
        size_t k = strcspn(sp + 1, " \r\n");
        snprintf(path, sizeof path, "%.*s", (int)(k < sizeof path ? k : sizeof path - 1), sp + 1);
    }
    trace_srv_request_parse(c->fd, path);
    sum = work();
    trace_srv_request_work(sum);
    if (!(resp = malloc(512)))
        return -1;
    n = snprintf(resp, 512, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%016llx\n",
                 17, (unsigned long long)sum);
    n = (int)write(c->fd, resp, (size_t)n);
    free(resp);
    trace_srv_request_end(c->fd, 200, (uint64_t)(n > 0 ? n : 0));
    return n > 0 ? 0 : -1;
}

/* Reads what c's socket holds and answers each whole request. 0, or -1 to close. */
static int serve(struct conn *c)
{
    for (;;) {
        ssize_t r = read(c->fd, c->buf + c->len, BUF - 1 - c->len);
        char *end;
        if (r == 0)
            return -1;
        if (r < 0)
            return errno == EAGAIN ? 0 : -1;
        c->len += (size_t)r;
        c->buf[c->len] = '\0';
        while ((end = strstr(c->buf, "\r\n\r\n"))) {
            size_t used = (size_t)(end + 4 - c->buf);
            uint64_t t0 = now_ns(), dt;
            if (answer(c, used) < 0)
                return -1;
            dt = now_ns() - t0;
            hist[bucket(dt) < HBUCKETS ? bucket(dt) : HBUCKETS - 1]++;
            max_ns = dt > max_ns ? dt : max_ns;
            served++;
            memmove(c->buf, c->buf + used, c->len - used + 1);
            c->len -= used;
        }
        if (c->len >= BUF - 1)
            return -1;
    }
}

int main(int argc, char **argv)
{
    static struct conn *conns[MAX_CONN];
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t slen = sizeof sa;
    struct sigaction act = {.sa_handler = on_signal};
    struct epoll_event ev, evs[64];
    int ls, ep, one = 1;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--work") && i + 1 < argc) {
            work_bytes = strtoul(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--idle-thread")) {
            pthread_t t;
            if (pthread_create(&t, NULL, idle_main, NULL) != 0)
                return 1;
        } else {
            fprintf(stderr, "usage: server [--work BYTES] [--idle-thread]\n");
            return 2;
        }
    }
    if (!(work_buf = malloc(work_bytes ? work_bytes : 1)))
        return 1;
    for (size_t i = 0; i < work_bytes; i++)
        work_buf[i] = (uint8_t)(i * 7);
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    signal(SIGPIPE, SIG_IGN);
    ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ls, 512) < 0 ||
        getsockname(ls, (struct sockaddr *)&sa, &slen) < 0) {
        perror("server: listen");
        return 1;
    }
    printf("%d\n", ntohs(sa.sin_port));
    fflush(stdout);
    ep = epoll_create1(EPOLL_CLOEXEC);
    ev = (struct epoll_event){.events = EPOLLIN, .data.fd = -1};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    while (!stop) {
        int n = epoll_wait(ep, evs, 64, 200);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.fd == -1) {
                int fd;
                while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    if (fd >= MAX_CONN || !(conns[fd] = calloc(1, sizeof *conns[fd]))) {
                        close(fd);
                        continue;
                    }
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    conns[fd]->fd = fd;
                    trace_srv_accept(fd);
                    ev = (struct epoll_event){.events = EPOLLIN, .data.fd = fd};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                }
                continue;
            }
            struct conn *c = conns[evs[i].data.fd];
            if (c && serve(c) < 0) {
                trace_srv_close(c->fd);
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                conns[c->fd] = NULL;
                free(c);
            }
        }
    }
    struct rusage self, proc;
    getrusage(RUSAGE_THREAD, &self);
    getrusage(RUSAGE_SELF, &proc);
    fprintf(stderr, "served %llu service_us p50 %.2f p99 %.2f p99.9 %.2f p99.99 %.2f max %.2f cpu_ns_thread %.0f cpu_ns_process %.0f\n",
            (unsigned long long)served, percentile(50), percentile(99), percentile(99.9), percentile(99.99),
            (double)max_ns / 1000.0, cpu_per_request(&self), cpu_per_request(&proc));
    return 0;
}
