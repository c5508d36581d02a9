/*
 * Hand-written number and string formatting for the printers: the hot path
 * of `simpletrace print` writes every field with these instead of printf.
 *
 * Every st__put_* writes at p (the caller guarantees room: see the bound
 * in each comment) and returns the end of what it wrote. No NUL is added.
 */
#ifndef ST_READER_TEXTFMT_H
#define ST_READER_TEXTFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "json_escape.h"

/* Room for any number st__put_dec/st__put_hex write (scratch included). */
#define ST__NUM_ROOM 24
/* Room st__put_delta_us / st__put_us_exact need. */
#define ST__US_ROOM 48

/* Decimal digits of v (at most 20 bytes). */
static inline char *st__put_dec(char *p, uint64_t v)
{
    static const char pairs[201] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    char tmp[20];
    char *t = tmp + sizeof tmp;
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        *--t = pairs[d + 1];
        *--t = pairs[d];
    }
    if (v >= 10) {
        *--t = pairs[v * 2 + 1];
        *--t = pairs[v * 2];
    } else {
        *--t = (char)('0' + v);
    }
    size_t n = (size_t)(tmp + sizeof tmp - t);
    memcpy(p, t, n);
    return p + n;
}

/*
 * Eight hex digits of x as ASCII, most significant first in memory order:
 * spread the nibbles into bytes (SWAR), then add '0', or 'a' - 10.
 */
static inline uint64_t st__hex8(uint32_t x)
{
    uint64_t v = x;
    v = ((v & UINT64_C(0xffff0000)) << 16) | (v & UINT64_C(0xffff));
    v = ((v & UINT64_C(0x0000ff000000ff00)) << 8) | (v & UINT64_C(0x000000ff000000ff));
    v = ((v & UINT64_C(0x00f000f000f000f0)) << 4) | (v & UINT64_C(0x000f000f000f000f));
    uint64_t letters = ((v + UINT64_C(0x0606060606060606)) >> 4) & UINT64_C(0x0101010101010101);
    v += UINT64_C(0x3030303030303030) + letters * ('a' - '0' - 10);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* The 16 hex digits of v, most significant first, stored at out (16 bytes). */
static inline void st__hex16(char *out, uint64_t v)
{
#if defined(__SSE2__) && defined(__x86_64__)
    /* One byte per lane, most significant first; split nibbles, interleave, map to ASCII. */
    __m128i x = _mm_cvtsi64_si128((long long)__builtin_bswap64(v));
    __m128i low4 = _mm_set1_epi8(0x0f);
    __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), low4), _mm_and_si128(x, low4));
    __m128i letters = _mm_and_si128(_mm_cmpgt_epi8(nib, _mm_set1_epi8(9)), _mm_set1_epi8('a' - '0' - 10));
    _mm_storeu_si128((__m128i *)(void *)out, _mm_add_epi8(_mm_add_epi8(nib, _mm_set1_epi8('0')), letters));
#else
    uint64_t hi = st__hex8((uint32_t)(v >> 32)), lo = st__hex8((uint32_t)v);
    memcpy(out, &hi, 8);
    memcpy(out + 8, &lo, 8);
#endif
}

/*
 * "0x" and lowercase hex digits of v without padding, as Python's '0x%x'.
 * Writes 18 bytes whatever the length (the bytes past the result are
 * scratch), so reserve ST__NUM_ROOM.
 */
static inline char *st__put_hex(char *p, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    if (v < 0x100) { /* small integers (lengths, flags, line numbers) are the common case */
        p[0] = '0';
        p[1] = 'x';
        if (v < 0x10) {
            p[2] = digits[v];
            return p + 3;
        }
        p[2] = digits[v >> 4];
        p[3] = digits[v & 15];
        return p + 4;
    }
    unsigned n = (unsigned)(67 - __builtin_clzll(v)) / 4;  /* hex digits (v >= 0x100 here) */
    uint64_t top = v << (4 * (16 - n));                     /* digits to the top */
    p[0] = '0';
    p[1] = 'x';
    st__hex16(p + 2, top);
    return p + 2 + n;
}

/*
 * Copies n bytes of s to p, in whole 16-byte blocks when n <= 32 (fixed-size
 * copies compile to a few vector moves). Both sides need 32 readable/writable
 * bytes: only for template text, never for data from the trace.
 */
static inline char *st__put_short(char *p, const char *s, size_t n)
{
    if (n <= 16)
        memcpy(p, s, 16);
    else if (n <= 32)
        memcpy(p, s, 32);
    else
        memcpy(p, s, n);
    return p + n;
}

/* "000".."999", 4 bytes apart: the fraction digits of microseconds. */
extern const char st__digits3[1000][4];

/* "[-]U.UUU": a signed amount of nanoseconds as exact microseconds, 3 decimals (at most 25 bytes). */
static inline char *st__put_us_exact(char *p, bool negative, uint64_t ns)
{
    if (negative && ns)
        *p++ = '-';
    uint64_t us = ns / 1000;
    unsigned frac = (unsigned)(ns - us * 1000);
    if (us < 10)
        *p++ = (char)('0' + us);
    else
        p = st__put_dec(p, us);
    *p = '.';
    memcpy(p + 1, st__digits3[frac], 4); /* the 4th byte is scratch */
    return p + 4;
}

/* Slow path of st__put_delta_us for deltas too large to format exactly (textfmt.c). */
char *st__put_delta_us_double(char *p, bool negative, uint64_t ns);

/*
 * A delta of (negative ? -ns : ns) nanoseconds exactly as Python prints
 * f'{delta_ns / 1000:0.3f}': the true quotient rounded to a double, then
 * to 3 decimals. Below 2^52 ns that is the exact decimal value.
 */
static inline char *st__put_delta_us(char *p, bool negative, uint64_t ns)
{
    if (__builtin_expect(ns < (UINT64_C(1) << 52), 1))
        return st__put_us_exact(p, negative, ns);
    return st__put_delta_us_double(p, negative, ns);
}

/*
 * bytes s[0..len) as Python's repr(bytes): b'...' (or b"..." when s holds
 * ' and no "), escaping \\ \t \n \r, the quote, and \xhh for the rest of
 * 0x00-0x1f and 0x7f-0xff. Needs at most 4 * len + 3 bytes.
 */
char *st__put_bytes_repr(char *p, const uint8_t *s, size_t len);

#endif /* ST_READER_TEXTFMT_H */
