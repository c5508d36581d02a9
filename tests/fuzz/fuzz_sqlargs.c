/*
 * libFuzzer target for the SQLite module's argument parser (src/sql/args.h):
 * the input is the arguments, one per line, as SQLite would hand them over
 * (the SQL text itself is SQLite's to parse). Every input must give a
 * result or a refusal that says why, never a crash; what is accepted has
 * a trace and only known flags.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    const char *argv[MAX_ARGS];
    int argc = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && argc < MAX_ARGS;
         line = strtok_r(NULL, "\n", &save))
        argv[argc++] = line;
    struct st__sql_args a;
    char err[512];
    int ret = st__sql_args_parse(&a, argc, argv, err, sizeof err);
    if (ret < 0 && !err[0])
        abort(); /* a refusal must say why */
    if (ret == 0 && (a.ntraces == 0 || (a.rd.flags & ~(unsigned)(ST_READER_ROTATED | ST_READER_NO_HEADER |
                                                                  ST_READER_ALIGN_REALTIME))))
        abort();
    for (size_t i = 0; ret == 0 && i < a.ntraces; i++)
        if (!a.traces[i])
            abort();
    st__sql_args_free(&a);
    free(text);
    return 0;
}
