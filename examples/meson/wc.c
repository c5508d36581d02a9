/* A traced program built with Meson (examples/meson/meson.build): counts
 * the lines and bytes of a file, one event per line. */
#include <inttypes.h>
#include <stdio.h>

#include "trace.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: wc FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    trace_wc_file(argv[1]);
    uint64_t lines = 0, bytes = 0, line_bytes = 0;
    for (int c; (c = getc(f)) != EOF;) {
        bytes++;
        line_bytes++;
        if (c == '\n') {
            trace_wc_line(++lines, line_bytes);
            line_bytes = 0;
        }
    }
    fclose(f);
    trace_wc_total(lines, bytes);
    printf("%" PRIu64 " lines, %" PRIu64 " bytes\n", lines, bytes);
    return 0;
}
