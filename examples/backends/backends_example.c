/*
 * The program the backend tests trace: the same calls whichever backends
 * its trace header was generated for (TRACE_HEADER names it).
 *
 *   backends_example [N]          be_start, N x be_tick, be_values,
 *                                 be_null_string, be_long_line, be_stop
 *   backends_example --wait-probe [SECONDS]
 *                                 waits (default 10 s at most) until a tool
 *                                 attaches to be_tick, then traces as above
 *                                 with N = 3; prints "attached" or "not attached"
 *   backends_example --close-fds FILE [N]
 *                                 as a daemon does at start-up: closes every
 *                                 descriptor from 3 on, opens FILE (it gets the
 *                                 lowest number, a backend's before), writes a
 *                                 line to it, traces as above, writes another
 *
 * Exit status 0, or 1 when --wait-probe saw no tool.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include TRACE_HEADER

#define LONG_TEXT 700 /* longer than an ftrace line */

static void trace_all(uint64_t n)
{
    char text[LONG_TEXT + 1];
    const char *null_string = NULL;

    memset(text, 'x', LONG_TEXT);
    text[LONG_TEXT] = '\0';
    trace_be_start((int)n, "example");
    for (uint64_t i = 0; i < n; i++)
        trace_be_tick(i);
    trace_be_values(-5, 65535, -100000, UINT64_C(0xfedcba9876543210), -2L, true, (void *)(uintptr_t)0x1234, "hello");
    trace_be_null_string(null_string);
    trace_be_long_line(text);
    trace_be_debug(1);
    trace_be_stop();
}

/* Polls the probe's switch until a tool sets it; true when it did within seconds. */
static bool wait_for_probe(long seconds)
{
    struct timespec pause = {0, 10 * 1000 * 1000};
    for (long i = 0; i < seconds * 100; i++) {
        if (trace_be_tick_enabled())
            return true;
        nanosleep(&pause, NULL);
    }
    return false;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--close-fds") == 0) {
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        FILE *f = fopen(argv[2], "w");
        if (!f)
            return 1;
        fprintf(f, "the program's first line\n");
        fflush(f);
        trace_all(argc > 3 ? strtoull(argv[3], NULL, 10) : 10);
        fprintf(f, "the program's last line\n");
        return fclose(f) == 0 ? 0 : 1;
    }
    if (argc > 1 && strcmp(argv[1], "--wait-probe") == 0) {
        printf("%s\n", trace_be_tick_enabled() ? "enabled before attach" : "not enabled before attach");
        bool attached = wait_for_probe(argc > 2 ? strtol(argv[2], NULL, 10) : 10);
        printf("%s\n", attached ? "attached" : "not attached");
        fflush(stdout);
        if (attached)
            trace_all(3);
        return attached ? 0 : 1;
    }
    trace_all(argc > 1 ? strtoull(argv[1], NULL, 10) : 10);
    return 0;
}
