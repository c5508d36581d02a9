/*
 * Unit tests of the hand-written formatting (src/reader/textfmt.h): hex and
 * decimal numbers, Python-compatible deltas (values checked against
 * Python 3.11's f'{n / 1000:0.3f}'), bytes repr; and JSON strings as the
 * reader writes them (with the shared escaper, src/common/json_escape.h).
 */
#include "json_escape.h"
#include "textfmt.h"
#include "tap.h"

static char buf[8192];

#define FMT(call) (*(call) = 0, buf)

static void test_numbers(void)
{
    is_str(FMT(st__put_hex(buf, 0)), "0x0", "hex 0");
    is_str(FMT(st__put_hex(buf, 0xa)), "0xa", "hex one digit");
    is_str(FMT(st__put_hex(buf, 0x7f0012345678)), "0x7f0012345678", "hex pointer");
    is_str(FMT(st__put_hex(buf, UINT64_MAX - 4)), "0xfffffffffffffffb", "hex -5 as u64");
    is_str(FMT(st__put_hex(buf, 0x1000000000000000)), "0x1000000000000000", "hex 16 digits");
    uint64_t w = st__hex8(0x1234abcdu); /* the portable path of st__hex16 */
    memcpy(buf, &w, 8);
    buf[8] = 0;
    is_str(buf, "1234abcd", "SWAR hex8");
    w = st__hex8(0xf09a0005u);
    memcpy(buf, &w, 8);
    is_str(buf, "f09a0005", "SWAR hex8 letters and zeros");
    st__hex16(buf, UINT64_C(0x0123456789abcdef));
    buf[16] = 0;
    is_str(buf, "0123456789abcdef", "hex16");
    is_str(FMT(st__put_dec(buf, 0)), "0", "dec 0");
    is_str(FMT(st__put_dec(buf, 4242)), "4242", "dec pid");
    is_str(FMT(st__put_dec(buf, UINT64_MAX)), "18446744073709551615", "dec max");
    is_str(FMT(st__put_us_exact(buf, true, 100)), "-0.100", "exact negative");
    is_str(FMT(st__put_us_exact(buf, true, 0)), "0.000", "no negative zero");
    is_str(FMT(st__put_us_exact(buf, false, UINT64_MAX)), "18446744073709551.615", "exact max");
}

static void test_delta(void)
{
    static const struct {
        uint64_t ns;
        const char *pos, *neg;
    } cases[] = {
        {0ULL, "0.000", "0.000"},
        {1ULL, "0.001", "-0.001"},
        {999ULL, "0.999", "-0.999"},
        {1001ULL, "1.001", "-1.001"},
        {123456789ULL, "123456.789", "-123456.789"},
        {4503599627370495ULL, "4503599627370.495", "-4503599627370.495"},
        {4503599627370497ULL, "4503599627370.497", "-4503599627370.497"},
        {8796093022208001ULL, "8796093022208.002", "-8796093022208.002"},
        {9007199254740993ULL, "9007199254740.992", "-9007199254740.992"},
        {12345678901234567ULL, "12345678901234.566", "-12345678901234.566"},
        {18446744073709551615ULL, "18446744073709552.000", "-18446744073709552.000"},
        {9223372036854776308ULL, "9223372036854776.000", "-9223372036854776.000"},
        {1152921504606848476ULL, "1152921504606848.500", "-1152921504606848.500"},
        {9007199254743492ULL, "9007199254743.492", "-9007199254743.492"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        is_str(FMT(st__put_delta_us(buf, false, cases[i].ns)), cases[i].pos, "delta %llu ns",
               (unsigned long long)cases[i].ns);
        is_str(FMT(st__put_delta_us(buf, true, cases[i].ns)), cases[i].neg, "delta -%llu ns",
               (unsigned long long)cases[i].ns);
    }
}

static const char *repr(const char *s, size_t len)
{
    *st__put_bytes_repr(buf, (const uint8_t *)s, len) = 0;
    return buf;
}

static void test_repr(void)
{
    is_str(repr("hello", 5), "b'hello'", "plain bytes");
    is_str(repr("", 0), "b''", "empty");
    is_str(repr("caf\xc3\xa9", 5), "b'caf\\xc3\\xa9'", "UTF-8 as \\x");
    is_str(repr("\xff\xfe bad utf8", 11), "b'\\xff\\xfe bad utf8'", "invalid UTF-8");
    is_str(repr("it's \"quoted\"", 13), "b'it\\'s \"quoted\"'", "both quotes: single, escaped");
    is_str(repr("it's", 4), "b\"it's\"", "only ': double quotes");
    is_str(repr("say \"hi\"", 8), "b'say \"hi\"'", "only \": single quotes");
    is_str(repr("a\\b\t\n\r\x01\x7f", 8), "b'a\\\\b\\t\\n\\r\\x01\\x7f'", "escapes");
    is_str(repr("x\0y", 3), "b'x\\x00y'", "NUL byte");
}

static const char *json(const char *s, size_t len)
{
    *st__json_string(buf, (const uint8_t *)s, len) = 0;
    return buf;
}

static void test_json(void)
{
    is_str(json("hello", 5), "\"hello\"", "json plain");
    is_str(json("caf\xc3\xa9", 5), "\"caf\xc3\xa9\"", "json valid UTF-8 kept");
    is_str(json("\xff\xfe", 2), "\"\\u00ff\\u00fe\"", "json invalid bytes as \\u00XX");
    is_str(json("\xe2\x82", 2), "\"\\u00e2\\u0082\"", "json cut sequence");
    is_str(json("\xc0\xaf", 2), "\"\\u00c0\\u00af\"", "json overlong");
    is_str(json("\xed\xa0\x80", 3), "\"\\u00ed\\u00a0\\u0080\"", "json surrogate");
    is_str(json("\xf0\x9f\x98\x80", 4), "\"\xf0\x9f\x98\x80\"", "json 4-byte sequence");
    is_str(json("a\"b\\c\n\x01", 7), "\"a\\\"b\\\\c\\n\\u0001\"", "json escapes");
    is_str(json("\r\t\x1f\x7f", 4), "\"\\r\\t\\u001f\x7f\"", "json short escapes, DEL kept");
    is_str(json("x\0y", 3), "\"x\\u0000y\"", "json NUL byte");
    is_str(json("\xf4\x90\x80\x80", 4), "\"\\u00f4\\u0090\\u0080\\u0080\"", "json beyond U+10FFFF");
    is_str(json("\x80" "a", 2), "\"\\u0080a\"", "json stray continuation byte");
    is_str(json("\xf4\x8f\xbf\xbf", 4), "\"\xf4\x8f\xbf\xbf\"", "json U+10FFFF kept");
}

int main(void)
{
    test_numbers();
    test_delta();
    test_repr();
    test_json();
    return done_testing();
}
