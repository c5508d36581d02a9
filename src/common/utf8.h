/*
 * UTF-8 as every output reads it: a valid sequence stands for itself, and
 * each byte of an invalid one (overlong forms, surrogates, code points
 * above U+10FFFF, stray continuation bytes, a cut sequence) is read as
 * Latin-1, the rule of the JSON escaper (json_escape.h). Binary formats
 * (Perfetto's strings, CTF's) carry the repaired text, so that every
 * export shows the same characters as `print --format=json`.
 */
#ifndef ST_COMMON_UTF8_H
#define ST_COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence starting a non-ASCII byte at s (n bytes available), 0 if it is not one. */
static inline size_t st__utf8_seq(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    uint32_t min, cp;
    size_t len;

    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, min = 0x80, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, min = 0x800, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0; /* overlong, beyond Unicode, or a surrogate */
    return len;
}

/* Most bytes st__utf8_repair() writes for n input bytes (each invalid byte takes two). */
#define ST__UTF8_REPAIRED_MAX(n) (2 * (size_t)(n))

/*
 * Copies s[0..n) to p as valid UTF-8 (room ST__UTF8_REPAIRED_MAX(n)),
 * invalid bytes as their Latin-1 reading (U+0080..U+00FF); returns the end.
 */
uint8_t *st__utf8_repair(uint8_t *p, const uint8_t *s, size_t n);

#endif /* ST_COMMON_UTF8_H */
