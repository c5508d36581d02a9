/*
 * JSON strings: the one escaper for every JSON we write (reader output,
 * Chrome export, monitor answers, `simpletrace ctl`, uftrace's info file).
 *
 * Rules, chosen so that any bytes give valid JSON and valid UTF-8 reads as
 * itself: '"' and '\' are backslash-escaped; \n, \r and \t use their short
 * escapes; other bytes below 0x20 become \u00XX; valid UTF-8 sequences are
 * copied as they are; every byte of an invalid sequence (overlong forms,
 * surrogates, code points above U+10FFFF, stray continuation bytes) becomes
 * \u00XX, i.e. its Latin-1 reading. 0x7f is copied (JSON allows it).
 */
#ifndef ST_COMMON_JSON_ESCAPE_H
#define ST_COMMON_JSON_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "growbuf.h"

/* Most bytes the escaped body of n input bytes takes (a \u00XX per byte). */
#define ST__JSON_ESCAPED_MAX(n) (6 * (size_t)(n))

/* Writes the escaped body of s[0..n) (no quotes) at p, which has room for ST__JSON_ESCAPED_MAX(n); returns the end. */
char *st__json_escape(char *p, const uint8_t *s, size_t n);

/* True for a byte written as it is: printable ASCII but the quote and the backslash. */
static inline int st__json_plain(uint8_t c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/*
 * Writes s[0..n) as a quoted JSON string at p (room: ST__JSON_ESCAPED_MAX(n)
 * + 2); returns the end. Inline: readers write one per string argument, and
 * most strings have nothing to escape.
 */
static inline char *st__json_string(char *p, const uint8_t *s, size_t n)
{
    size_t i = 0;

    *p++ = '"';
    while (i < n && st__json_plain(s[i])) {
        p[i] = (char)s[i];
        i++;
    }
    p += i;
    if (i < n)
        p = st__json_escape(p, s + i, n - i);
    *p++ = '"';
    return p;
}

/* Appends the NUL-terminated s as a quoted JSON string. */
void st__growbuf_json(struct st__growbuf *b, const char *s);

/* Writes the NUL-terminated s as a quoted JSON string; 0, or EOF on a write error. */
int st__json_fputs(FILE *f, const char *s);

#endif /* ST_COMMON_JSON_ESCAPE_H */
