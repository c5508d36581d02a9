/*
 * The program of typed_test.sh: each event of trace-events once, with
 * values at the edges of their types. Built with the simple and log
 * backends together: one run writes the trace and prints the log lines.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "typed_trace.h"

#define PART 500 /* nine of them make a line longer than the log backend's PIPE_BUF */

int main(void)
{
    static int some_int;
    static char *some_ptr;
    static char part[PART + 1];
    char mutable[] = "mutable";
    const char *volatile null_string = NULL; /* unknown to the compiler: no -Wformat-overflow */

    memset(part, 'y', PART);
    trace_ty_int8(INT8_MIN, INT8_MAX, UINT8_MAX);
    trace_ty_int16(INT16_MIN, UINT16_MAX);
    trace_ty_int32(INT32_MIN, UINT32_MAX, -1);
    trace_ty_int64(INT64_MIN, INT64_MAX, UINT64_MAX);
    trace_ty_c_types(-7, 8u, -2L, 0xdeadbeefUL, -3LL, 18446744073709551615ULL, -300, 65000);
    trace_ty_sizes(SIZE_MAX, -1, (uintptr_t)0xffffffffffffULL, -42, -9);
    trace_ty_bool_char(true, false, 'A', '\n', 200, -56);
    trace_ty_ptrs((void *)(uintptr_t)0x1234, NULL, &some_int, &some_ptr);
    trace_ty_strings("hello", "", mutable, "it's \"quoted\"");
    trace_ty_null(null_string);
    trace_ty_flags(0xbeef, -12, 5, 0xabc, "truncate", 3, 0);
    trace_ty_pri(UINT64_C(0xfedcba9876543210), 8, 42, INT64_MIN);
    trace_ty_star(8, 2, "abcdef", -6, 77);
    trace_ty_narrow(300, -129, 70000);
    trace_ty_escape(1);
    trace_ty_pri_text();
    trace_ty_noargs();
    trace_ty_nofmt(5);
    trace_ty_wide(9);
    trace_ty_long(part, part, part, part, part, part, part, part, part);
    return 0;
}
