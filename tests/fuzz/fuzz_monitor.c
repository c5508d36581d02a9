/*
 * libFuzzer target for the monitor's request line parser: any bytes (as
 * the server gets them: one line, no newline, NUL-terminated) must split
 * without crashing, and the words must obey the parser's contract.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "monitor_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int blank(char c)
{
    return c == ' ' || c == '\t';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st__mon_request req;
    char *line = malloc(size + 1), *end;

    if (!line)
        return 0;
    memcpy(line, data, size);
    line[size] = '\0';
    end = line + strlen(line);
    st__mon_parse_line(line, &req);
    if (req.argc < 0 || req.argc > 4)
        __builtin_trap();
    for (int i = 0; i < req.argc; i++) {
        const char *w = req.argv[i];
        size_t n;
        if (w < line || w >= end || !*w || blank(*w))
            __builtin_trap(); /* a word is a non-empty part of the line, not starting with a blank */
        n = strlen(w);
        if (blank(w[n - 1]))
            __builtin_trap(); /* nor ending with one (PATH of trace-file set included) */
        if (!(req.argc == 3 && i == 2 && !strcmp(req.argv[0], "trace-file") && !strcmp(req.argv[1], "set")))
            for (size_t k = 0; k < n; k++)
                if (blank(w[k]))
                    __builtin_trap(); /* only that PATH holds blanks */
    }
    free(line);
    return 0;
}
