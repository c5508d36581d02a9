/*
 * UTF-8 repair (src/common/utf8.h): valid text is kept byte for byte,
 * each byte of an invalid sequence becomes its Latin-1 reading, the same
 * characters the JSON escaper writes as \u00XX.
 */
#include "tap.h"

#include "utf8.h"

#include <string.h>

/* Repairs s (n bytes) and compares with want (NUL-terminated). */
static void check(const char *s, size_t n, const char *want, const char *what)
{
    uint8_t out[64];
    uint8_t *end = st__utf8_repair(out, (const uint8_t *)s, n);
    size_t len = (size_t)(end - out);
    ok(len == strlen(want) && memcmp(out, want, len) == 0 && len <= ST__UTF8_REPAIRED_MAX(n), "%s", what);
}

int main(void)
{
    check("plain ascii\x01\x7f", 13, "plain ascii\x01\x7f", "ASCII, control bytes included, is copied");
    check("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
          "valid 2-, 3- and 4-byte sequences are copied");
    check("a\xff" "b", 3, "a\xc3\xbf" "b", "an invalid byte becomes its Latin-1 character (U+00FF)");
    check("\xc0\xaf", 2, "\xc3\x80\xc2\xaf", "an overlong form: each byte on its own");
    check("\xed\xa0\x80", 3, "\xc3\xad\xc2\xa0\xc2\x80", "a surrogate: each byte on its own");
    check("\xc3", 1, "\xc3\x83", "a sequence cut by the end of the string");
    check("\x80x", 2, "\xc2\x80x", "a stray continuation byte");
    check("", 0, "", "nothing in, nothing out");
    is_int((int)st__utf8_seq((const uint8_t *)"\xf4\x90\x80\x80", 4), 0, "above U+10FFFF is not a sequence");
    return done_testing();
}
