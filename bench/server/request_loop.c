/*
 * The server's request without the network (bench/server/run.sh): N
 * requests of the same work and the same five events as server.c, one
 * after another on one thread, and the CPU time each costs (this thread's,
 * and the process's), which the load of a shared machine moves far less
 * than it moves a server's requests/s. With --idle-thread, one more thread
 * that only sleeps; with the events disabled (SIMPLETRACE empty) each
 * costs one load and branch, the baseline.
 *
 *   request_loop N WORK_BYTES [--idle-thread]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include TRACE_HEADER

static double cpu_ns(int who)
{
    struct rusage ru;

    getrusage(who, &ru);
    return ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e9 +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e3;
}

static void *idle_main(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 100000;
    size_t work = argc > 2 ? strtoul(argv[2], NULL, 0) : 8192;
    uint8_t *buf = malloc(work ? work : 1);
    uint64_t sink = 0;
    double t0, p0;

    if (!buf)
        return 1;
    if (argc > 3 && !strcmp(argv[3], "--idle-thread")) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle_main, NULL) != 0)
            return 1;
    }
    for (size_t i = 0; i < work; i++)
        buf[i] = (uint8_t)(i * 7);
    t0 = cpu_ns(RUSAGE_THREAD);
    p0 = cpu_ns(RUSAGE_SELF);
    for (unsigned long r = 0; r < n; r++) {
        uint64_t h = 1469598103934665603u;
        char *resp;
        trace_srv_request_begin((int)(r & 1023), 78);
        trace_srv_request_parse((int)(r & 1023), "/");
        for (size_t i = 0; i < work; i++)
            h = (h ^ buf[i]) * 1099511628211u;
        trace_srv_request_work(h);
        if ((resp = malloc(512))) {
            int len = snprintf(resp, 512, "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n%016llx\n", (unsigned long long)h);
            sink += (uint64_t)len + (uint8_t)resp[len - 2];
            free(resp);
        }
        trace_srv_request_end((int)(r & 1023), 200, 97);
    }
    printf("cpu_ns_thread %.1f cpu_ns_process %.1f sink %llu\n", (cpu_ns(RUSAGE_THREAD) - t0) / (double)n,
           (cpu_ns(RUSAGE_SELF) - p0) / (double)n, (unsigned long long)(sink & 1));
    return 0;
}
