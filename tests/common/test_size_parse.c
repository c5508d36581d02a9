/*
 * Sizes as users write them (src/common/size_parse.h): N, NK, NM, NG in
 * either case, everything else refused with -EINVAL, values above the
 * bound (or beyond 64 bits) with -ERANGE, and *out left alone on error.
 */
#include "tap.h"

#include "size_parse.h"

#include <errno.h>
#include <stdint.h>

#define SENTINEL UINT64_C(0x5a5a5a5a5a5a5a5a)

/* Parses s with max; checks the return code and the value (or that out was left alone). */
static void check(const char *s, uint64_t max, int want_rc, uint64_t want)
{
    uint64_t out = SENTINEL;
    int rc = st__parse_size(s, max, &out);

    if (!ok(rc == want_rc && out == (want_rc ? SENTINEL : want), "\"%s\" (max %llu): %s", s,
            (unsigned long long)max, want_rc == 0 ? "parsed" : want_rc == -EINVAL ? "-EINVAL" : "-ERANGE"))
        diag("rc %d, value %llu", rc, (unsigned long long)out);
}

int main(void)
{
    /* N and the binary suffixes, either case. */
    check("0", UINT64_MAX, 0, 0);
    check("123", UINT64_MAX, 0, 123);
    check("007", UINT64_MAX, 0, 7);
    check("4k", UINT64_MAX, 0, 4096);
    check("4K", UINT64_MAX, 0, 4096);
    check("3m", UINT64_MAX, 0, UINT64_C(3) << 20);
    check("3M", UINT64_MAX, 0, UINT64_C(3) << 20);
    check("2g", UINT64_MAX, 0, UINT64_C(2) << 30);
    check("2G", UINT64_MAX, 0, UINT64_C(2) << 30);
    check("0K", UINT64_MAX, 0, 0);

    /* Junk. */
    check("", UINT64_MAX, -EINVAL, 0);
    check("k", UINT64_MAX, -EINVAL, 0);
    check("-1", UINT64_MAX, -EINVAL, 0);
    check("+1", UINT64_MAX, -EINVAL, 0);
    check(" 1", UINT64_MAX, -EINVAL, 0);
    check("1 ", UINT64_MAX, -EINVAL, 0);
    check("1x", UINT64_MAX, -EINVAL, 0);
    check("1T", UINT64_MAX, -EINVAL, 0);
    check("1KB", UINT64_MAX, -EINVAL, 0);
    check("1kk", UINT64_MAX, -EINVAL, 0);
    check("1.5M", UINT64_MAX, -EINVAL, 0);
    check("0x10", UINT64_MAX, -EINVAL, 0);
    check("99999999999999999999999x", UINT64_MAX, -EINVAL, 0); /* the form is checked before the range */

    /* Up to 2^64 - 1, and beyond 64 bits. */
    check("18446744073709551615", UINT64_MAX, 0, UINT64_MAX);
    check("18446744073709551610", UINT64_MAX, 0, UINT64_MAX - 5);
    check("18446744073709551616", UINT64_MAX, -ERANGE, 0);
    check("99999999999999999999999", UINT64_MAX, -ERANGE, 0);
    check("17179869184G", UINT64_MAX, -ERANGE, 0); /* 2^34 << 30 = 2^64 */
    check("17179869183G", UINT64_MAX, 0, ((UINT64_C(1) << 34) - 1) << 30);
    check("18014398509481984K", UINT64_MAX, -ERANGE, 0); /* 2^54 << 10 */
    check("1844674407370955161", UINT64_MAX, 0, UINT64_C(1844674407370955161));

    /* The bound: inclusive, applied to the value after the suffix. */
    check("4096", 4096, 0, 4096);
    check("4097", 4096, -ERANGE, 0);
    check("4K", 4096, 0, 4096);
    check("4K", 4095, -ERANGE, 0);
    check("5K", 5000, -ERANGE, 0);
    check("1M", 4096, -ERANGE, 0);
    check("16G", UINT64_C(16) << 30, 0, UINT64_C(16) << 30);
    check("16385M", UINT64_C(16) << 30, -ERANGE, 0);
    check("0", 0, 0, 0);
    check("1", 0, -ERANGE, 0);
    return done_testing();
}
