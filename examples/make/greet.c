/* A traced program built by a plain Makefile (examples/make/Makefile). */
#include <stdio.h>

#include "trace.h"

int main(int argc, char **argv)
{
    trace_greet_start(argc - 1);
    for (int i = 1; i < argc; i++) {
        trace_greet_name(i, argv[i]);
        printf("hello, %s\n", argv[i]);
    }
    return 0;
}
