/*
 * libFuzzer target for the uftrace.data reader's text parsers (export
 * --functions): the bytes up to the first NUL are a task.txt, the rest the
 * `.sym` file of the first session's module. Any input must parse or fail
 * with a message, never crash, and what parsed must obey the contract.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uftrace_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct st__uft_data *d = st__uft_data_new();
    char err[512] = "";
    const char *text = (const char *)data, *nul = memchr(text, '\0', size);
    size_t tasks_len = nul ? (size_t)(nul - text) : size;

    if (!d)
        return 0;
    int ret = st__uft_parse_tasks(d, text, tasks_len, "task.txt", err, sizeof err);
    if (ret < 0 && ret != -ENOMEM && !err[0])
        __builtin_trap(); /* every refusal says why */
    if (ret == 0) {
        if (st__uft_data_sessions(d) == 0)
            __builtin_trap(); /* accepted task lists have a session */
        for (size_t i = 0; i < st__uft_data_sessions(d); i++)
            if (st__uft_data_session(d, i)->pid <= 0 || !st__uft_data_session(d, i)->exename)
                __builtin_trap();
        if (nul) {
            err[0] = '\0';
            ret = st__uft_parse_syms(d, nul + 1, size - tasks_len - 1, "x.sym", 0x400000, 0x800000, err, sizeof err);
            if (ret < 0 && ret != -ENOMEM && !err[0])
                __builtin_trap();
            for (size_t i = 0; i < st__uft_data_funcs(d); i++)
                if (!st__uft_data_func(d, i)[0])
                    __builtin_trap(); /* no empty function name */
        }
    }
    st__uft_data_close(d);
    return 0;
}
