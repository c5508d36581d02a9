/*
 * A program built with -finstrument-functions whose tracepoints come from
 * `simpletrace gen` (simple and ftrace backends, header and source both
 * instrumented): the function tracer must record the program's functions
 * (main, handle_job, checksum) and none of tracing's own (trace_*,
 * st__*, st_event_enabled), inlined or not.
 *
 *   ft_generated_app JOBS
 */
#include <stdint.h>
#include <stdlib.h>

#include "ft_generated_trace.h"

static int __attribute__((noinline)) checksum(const char *s)
{
    int sum = 0;
    while (*s)
        sum += (unsigned char)*s++;
    return sum;
}

static void __attribute__((noinline)) handle_job(int worker, uint64_t job, const char *key, void *table)
{
    trace_ftg_job_start(worker, job);
    if (trace_ftg_lookup_enabled()) /* the guard for an argument that costs */
        trace_ftg_lookup(table, key, checksum(key));
    trace_ftg_job_done(worker, job);
}

int main(int argc, char **argv)
{
    int jobs = argc > 1 ? atoi(argv[1]) : 3;
    static int table;
    for (int i = 0; i < jobs; i++)
        handle_job(i % 2, (uint64_t)i * 1000u, "key", &table);
    return 0;
}
