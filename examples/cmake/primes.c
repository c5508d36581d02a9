/* A traced program built with CMake (examples/cmake/CMakeLists.txt). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "trace.h"

static int is_prime(uint64_t n)
{
    if (n < 2)
        return 0;
    for (uint64_t d = 2; d * d <= n; d++)
        if (n % d == 0)
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    uint64_t limit = argc > 1 ? strtoull(argv[1], NULL, 10) : 30;
    uint64_t count = 0;

    trace_primes_search(limit);
    for (uint64_t n = 0; n < limit; n++) {
        if (is_prime(n)) {
            trace_primes_found(n);
            count++;
        }
    }
    trace_primes_done(limit, count);
    printf("%" PRIu64 " primes below %" PRIu64 "\n", count, limit);
    return 0;
}
