/*
 * The out-of-line parts of textfmt.h: Python-compatible delta rounding for
 * huge deltas, bytes repr, and the plain-byte table of JSON strings.
 */
#include "textfmt.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

__extension__ typedef __int128 st__i128;

#define D1(a, b) {a, b, '0', 0}, {a, b, '1', 0}, {a, b, '2', 0}, {a, b, '3', 0}, {a, b, '4', 0}, \
                 {a, b, '5', 0}, {a, b, '6', 0}, {a, b, '7', 0}, {a, b, '8', 0}, {a, b, '9', 0}
#define D2(a) D1(a, '0'), D1(a, '1'), D1(a, '2'), D1(a, '3'), D1(a, '4'), \
              D1(a, '5'), D1(a, '6'), D1(a, '7'), D1(a, '8'), D1(a, '9')
const char st__digits3[1000][4] = {D2('0'), D2('1'), D2('2'), D2('3'), D2('4'),
                                   D2('5'), D2('6'), D2('7'), D2('8'), D2('9')};
#undef D2
#undef D1


/*
 * c * 1000 - ns, scaled by 2^11, exactly. c >= 2^42 here, so c = m * 2^e
 * with e >= -11 and every product fits 128 bits.
 */
static st__i128 scaled_error(double c, uint64_t ns)
{
    int ex;
    double f = frexp(c, &ex);                      /* c = f * 2^ex, f in [0.5, 1) */
    st__i128 m = (st__i128)ldexp(f, DBL_MANT_DIG); /* 53-bit integer mantissa */
    int shift = ex - DBL_MANT_DIG + 11;            /* >= 0 for c >= 2^42 */
    return ((m * 1000) << shift) - ((st__i128)ns << 11);
}

/* Whether c's 53-bit mantissa is even (for round-half-even ties). */
static bool mantissa_even(double c)
{
    int ex;
    uint64_t m = (uint64_t)ldexp(frexp(c, &ex), DBL_MANT_DIG);
    return (m & 1) == 0;
}

/*
 * The double nearest to ns / 1000 (ties to even), as Python's int / int
 * true division gives it: start from a long double estimate and pick the
 * best of it and its neighbours by exact integer comparison.
 */
static double nearest_quotient(uint64_t ns)
{
    double best = (double)((long double)ns / 1000.0L);
    st__i128 best_err = scaled_error(best, ns);
    double cand[2] = {nextafter(best, 0.0), nextafter(best, INFINITY)};
    for (int i = 0; i < 2; i++) {
        st__i128 err = scaled_error(cand[i], ns);
        st__i128 a = err < 0 ? -err : err, b = best_err < 0 ? -best_err : best_err;
        if (a < b || (a == b && mantissa_even(cand[i]))) {
            best = cand[i];
            best_err = err;
        }
    }
    return best;
}

char *st__put_delta_us_double(char *p, bool negative, uint64_t ns)
{
    /* printf's %.3f rounds the exact binary value half-to-even, as Python's format does. */
    double q = nearest_quotient(ns);
    int n = snprintf(p, ST__US_ROOM, "%.3f", negative ? -q : q);
    return p + (n > 0 ? n : 0);
}

/* Bytes Python's bytes repr writes as themselves under either quote. */
static inline bool repr_plain(uint8_t c)
{
    return c >= 0x20 && c < 0x7f && c != '\\' && c != '\'' && c != '"';
}

static const char hexdig[] = "0123456789abcdef";

/* One byte of a bytes repr whose quote is q. */
static char *repr_byte(char *p, uint8_t c, char q)
{
    switch (c) {
    case '\\': *p++ = '\\'; *p++ = '\\'; return p;
    case '\t': *p++ = '\\'; *p++ = 't'; return p;
    case '\n': *p++ = '\\'; *p++ = 'n'; return p;
    case '\r': *p++ = '\\'; *p++ = 'r'; return p;
    default: break;
    }
    if (c == (uint8_t)q) {
        *p++ = '\\';
        *p++ = q;
    } else if (c < 0x20 || c >= 0x7f) {
        *p++ = '\\';
        *p++ = 'x';
        *p++ = hexdig[c >> 4];
        *p++ = hexdig[c & 15];
    } else {
        *p++ = (char)c;
    }
    return p;
}

#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* Non-zero when some byte of w is zero (the classic bit trick, no false negatives). */
static inline uint64_t has_zero(uint64_t w)
{
    return (w - ONES) & ~w & HIGHS;
}

/* Non-zero when some byte of w needs escaping in a bytes repr (or is a quote). */
static inline uint64_t has_special(uint64_t w)
{
    uint64_t ctrl = (w - ONES * 0x20) & ~w & HIGHS; /* bytes below 0x20 */
    return ctrl | (w & HIGHS) | has_zero(w ^ (ONES * 0x7f)) | has_zero(w ^ (ONES * '\\')) |
           has_zero(w ^ (ONES * '\'')) | has_zero(w ^ (ONES * '"'));
}

/* Length of the prefix of s that repr writes unchanged: 8 bytes at a time, then bytewise. */
static size_t plain_prefix(const uint8_t *s, size_t len)
{
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (has_special(w))
            break;
    }
    while (i < len && repr_plain(s[i]))
        i++;
    return i;
}

char *st__put_bytes_repr(char *p, const uint8_t *s, size_t len)
{
    size_t plain = plain_prefix(s, len);
    *p++ = 'b';
    if (plain == len) { /* the common case: nothing to escape */
        *p++ = '\'';
        memcpy(p, s, len);
        p += len;
        *p++ = '\'';
        return p;
    }
    /* Python picks " only when the bytes contain ' and no ". */
    bool squote = memchr(s, '\'', len) != NULL, dquote = memchr(s, '"', len) != NULL;
    char q = squote && !dquote ? '"' : '\'';
    *p++ = q;
    memcpy(p, s, plain);
    p += plain;
    for (size_t i = plain; i < len; i++)
        p = repr_byte(p, s[i], q);
    *p++ = q;
    return p;
}
