/*
 * One stage of a traced shell pipeline, for the tests of several processes
 * on one timeline: `pipe_stage N` copies its standard input to its standard
 * output line by line, tracing each line as a begin/end pair, and forks a
 * traced child for every EVERY-th line (a process of its own, whose trace
 * lands in the same dir= directory). Built twice: plain, and with
 * -finstrument-functions and the function tracer, so that the calls of
 * handle_line() and checksum() can be put on the events' timeline.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pipe-trace.h"

#define EVERY 8

/* Kept out of line so that the function tracer sees a call. */
__attribute__((noinline)) static uint32_t checksum(const char *s)
{
    uint32_t h = 2166136261u;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

__attribute__((noinline)) static void handle_line(uint64_t n, const char *line)
{
    trace_line_begin(n, strlen(line));
    trace_line_end(n, checksum(line));
}

__attribute__((noinline)) static void child_main(int stage, uint64_t n)
{
    trace_child_work(stage, n);
    checksum("child");
}

static int spawn_child(int stage, uint64_t n)
{
    fflush(stdout); /* the child must not write our buffered lines again */
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        child_main(stage, n);
        exit(0); /* exit(), not _exit(): the tracers write at exit */
    }
    int status;
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    int stage = argc > 1 ? atoi(argv[1]) : 0;
    char line[4096];
    uint64_t n = 0;
    trace_stage_start(stage);
    while (fgets(line, sizeof line, stdin)) {
        n++;
        handle_line(n, line);
        if (fputs(line, stdout) == EOF)
            return 1;
        if (n % EVERY == 0 && spawn_child(stage, n) < 0) {
            fprintf(stderr, "pipe_stage %d: the child for line %llu failed\n", stage, (unsigned long long)n);
            return 1;
        }
    }
    trace_stage_done(stage, n);
    return fflush(stdout) == 0 ? 0 : 1;
}
