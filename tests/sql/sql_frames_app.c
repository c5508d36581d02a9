/*
 * A program traced by the runtime for the SQL seeking tests: FRAMES
 * flushes of RECORDS records each (frame_tick), each flush ended by a
 * frame_mark. With compress=zstd each flush is a zstd frame of its own, so
 * the trace's seek table indexes FRAMES time ranges, one after the other.
 * Tracing is configured from outside (SIMPLETRACE=enable=*,file=...,compress=zstd).
 *   sql_frames_app FRAMES RECORDS
 */
#include <stdio.h>
#include <stdlib.h>

#include <simpletrace/simpletrace.h>

#include "sql-frames-trace.h"

int main(int argc, char **argv)
{
    static const char *const what[] = {"alpha", "beta", "gamma \xff"};
    if (argc != 3) {
        fprintf(stderr, "usage: sql_frames_app FRAMES RECORDS\n");
        return 2;
    }
    unsigned long frames = strtoul(argv[1], NULL, 10), records = strtoul(argv[2], NULL, 10);
    for (unsigned long f = 0; f < frames; f++) {
        for (unsigned long k = 0; k < records; k++)
            trace_frame_tick(f, k, what[k % 3]);
        trace_frame_mark((int)f);
        if (st_trace_file_flush() != 0) {
            fprintf(stderr, "sql_frames_app: flush failed\n");
            return 1;
        }
    }
    return 0;
}
