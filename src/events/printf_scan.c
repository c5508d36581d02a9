/*
 * A format read as printf reads it (printf_scan.h). Two levels: units (a
 * byte of a literal after escape decoding, or a whole PRI macro) and, on
 * top, specifications read unit by unit after each '%'.
 */
#include "printf_scan.h"

#include <stdio.h>
#include <string.h>

/* ---- units ------------------------------------------------------------------ */

/* One unit of the format as printf sees it. */
struct unit {
    char c;          /* the byte; for a PRI macro its conversion letter; 0 at the end */
    const char *pri; /* the PRI macro's text, NULL for a byte of a literal */
    size_t pri_len;
};

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* Decodes the escape after a backslash at *p, as a C compiler does; advances *p. */
static char decode_escape(const char **p)
{
    static const char from[] = "abfnrtv", to[] = "\a\b\f\n\r\t\v";
    const char *s = *p;
    const char *k = *s ? strchr(from, *s) : NULL;
    unsigned v = 0;
    if (k) {
        *p = s + 1;
        return to[k - from];
    }
    if (*s >= '0' && *s <= '7') {
        for (int i = 0; i < 3 && *s >= '0' && *s <= '7'; i++)
            v = v * 8 + (unsigned)(*s++ - '0');
        *p = s;
        return (char)v;
    }
    if (*s == 'x') {
        for (s++; is_hex(*s); s++)
            v = v * 16 + (unsigned)(*s <= '9' ? *s - '0' : (*s | 0x20) - 'a' + 10);
        *p = s;
        return (char)v;
    }
    *p = *s ? s + 1 : s;
    return *s; /* \\ \" \' \? and unknown escapes stand for themselves */
}

/* Length of the PRI macro at s (validated: PRI, a letter, then 8 16 32 64 PTR or MAX). */
static size_t pri_len(const char *s)
{
    size_t n = 4;
    while ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'A' && s[n] <= 'Z'))
        n++;
    return n;
}

/* The next unit; c == 0 at the end of the format or at a "\0" (where printf stops). */
static struct unit next_unit(struct st__printf_cursor *c)
{
    struct unit u = {0, NULL, 0};
    while (*c->p) {
        char b = *c->p;
        if (c->in_literal) {
            c->p++;
            if (b == '"') {
                c->in_literal = false;
                continue;
            }
            u.c = b == '\\' ? decode_escape(&c->p) : b;
            c->stopped_nul = u.c == '\0';
            return u;
        }
        if (b == '"') {
            c->in_literal = true;
            c->p++;
        } else if (strncmp(c->p, "PRI", 3) == 0 && c->p[3]) {
            u.c = c->p[3];
            u.pri = c->p;
            u.pri_len = pri_len(c->p);
            c->p += u.pri_len;
            return u;
        } else {
            c->p++; /* blanks between tokens */
        }
    }
    return u;
}

/* ---- one conversion specification ------------------------------------------ */

static void spec_add(struct st__printf_spec *s, const char *text, size_t n)
{
    if (s->text_len + n < sizeof s->text) {
        memcpy(s->text + s->text_len, text, n);
        s->text_len += n;
        s->text[s->text_len] = '\0';
    }
}

/* Adds one byte of the spec, escaped when it is not printable. */
static void spec_add_char(struct st__printf_spec *s, char c)
{
    char buf[8];
    unsigned char u = (unsigned char)c;
    if (u < 0x20 || u >= 0x7f)
        snprintf(buf, sizeof buf, "\\x%02x", u);
    else
        snprintf(buf, sizeof buf, "%c", c);
    spec_add(s, buf, strlen(buf));
}

/* Adds the unit to the spec's text and reads the next one. */
static struct unit take(struct st__printf_cursor *c, struct st__printf_spec *s, struct unit u)
{
    spec_add_char(s, u.c);
    return next_unit(c);
}

static bool is_digit(struct unit u)
{
    return !u.pri && u.c >= '0' && u.c <= '9';
}

/* Reads an N$ prefix if there is one; otherwise leaves the cursor where it was. */
static struct unit read_position(struct st__printf_cursor *c, struct st__printf_spec *s, struct unit u)
{
    struct st__printf_cursor save = *c;
    struct unit v = u;
    bool digits = false;
    for (; is_digit(v); v = next_unit(c))
        digits = true;
    *c = save;
    if (!digits || v.pri || v.c != '$')
        return u;
    s->positional = true;
    while (u.c != '$')
        u = take(c, s, u);
    return take(c, s, u);
}

/* Reads the flags into s->flags. */
static struct unit read_flags(struct st__printf_cursor *c, struct st__printf_spec *s, struct unit u)
{
    size_t n = 0;
    while (!u.pri && u.c && strchr("-+ #0'", u.c)) {
        if (n + 1 < sizeof s->flags)
            s->flags[n++] = u.c;
        u = take(c, s, u);
    }
    s->flags[n] = '\0';
    return u;
}

/* Reads a width or precision into *num: '*' (one more argument) or digits. */
static struct unit read_number(struct st__printf_cursor *c, struct st__printf_spec *s, struct unit u, long *num)
{
    if (!u.pri && u.c == '*') {
        s->stars++;
        *num = ST__SPEC_STAR;
        return take(c, s, u);
    }
    long v = 0;
    while (is_digit(u)) {
        v = v * 10 + (u.c - '0');
        if (v > ST__SPEC_HUGE)
            v = ST__SPEC_HUGE;
        u = take(c, s, u);
    }
    *num = v;
    return u;
}

/* Reads the length modifier into s->len. */
static struct unit read_length(struct st__printf_cursor *c, struct st__printf_spec *s, struct unit u)
{
    size_t n = 0;
    if (!u.pri && u.c && strchr("hlLqjzt", u.c)) {
        char first = u.c;
        s->len[n++] = u.c;
        u = take(c, s, u);
        if ((first == 'h' || first == 'l') && !u.pri && u.c == first) {
            s->len[n++] = u.c;
            u = take(c, s, u);
        }
    }
    s->len[n] = '\0';
    return u;
}

/* Reads the specification after a '%' up to its conversion. */
static void read_spec(struct st__printf_cursor *c, struct st__printf_spec *s)
{
    memset(s, 0, sizeof *s);
    s->width = s->precision = ST__SPEC_NONE;
    spec_add(s, "%", 1);
    struct unit u = read_position(c, s, next_unit(c));
    u = read_flags(c, s, u);
    if (is_digit(u) || (!u.pri && u.c == '*'))
        u = read_number(c, s, u, &s->width);
    if (!u.pri && u.c == '.') {
        u = take(c, s, u);
        u = read_number(c, s, u, &s->precision);
    }
    u = read_length(c, s, u);
    s->conv = u.c;
    if (u.pri) {
        s->pri = u.pri;
        s->pri_len = u.pri_len;
        spec_add(s, "\"", 1);
        spec_add(s, u.pri, u.pri_len);
        spec_add(s, "\"", 1);
    } else if (u.c) {
        spec_add_char(s, u.c);
    }
}

/* ---- the scan --------------------------------------------------------------- */

void st__printf_scan_init(struct st__printf_cursor *c, const char *fmt)
{
    c->p = fmt ? fmt : "";
    c->in_literal = false;
    c->stopped_nul = false;
}

/* Sets the cursor's text to one byte. */
static enum st__printf_piece text_byte(struct st__printf_cursor *c, char b)
{
    c->text[0] = b;
    c->text_len = 1;
    return ST__PRINTF_TEXT;
}

/* A PRI macro outside a conversion prints its expansion: glibc's on LP64 ("lu" for PRIu64, "x" for PRIx32). */
static enum st__printf_piece text_pri(struct st__printf_cursor *c, struct unit u)
{
    struct st__printf_spec s = {.pri = u.pri, .pri_len = u.pri_len};
    c->text_len = 0;
    if (!st__printf_spec_pri_narrow(&s))
        c->text[c->text_len++] = 'l';
    c->text[c->text_len++] = u.c;
    return ST__PRINTF_TEXT;
}

enum st__printf_piece st__printf_scan_next(struct st__printf_cursor *c, struct st__printf_spec *spec)
{
    struct unit u = next_unit(c);
    if (!u.c)
        return ST__PRINTF_END;
    if (u.pri)
        return text_pri(c, u);
    if (u.c != '%')
        return text_byte(c, u.c);
    read_spec(c, spec);
    if (!strcmp(spec->text, "%%"))
        return text_byte(c, '%');
    return ST__PRINTF_CONV;
}

bool st__printf_spec_pri_narrow(const struct st__printf_spec *s)
{
    if (!s->pri)
        return false;
    const char *size = s->pri + 4;
    size_t n = s->pri_len - 4;
    return (n == 1 && size[0] == '8') || (n == 2 && (memcmp(size, "16", 2) == 0 || memcmp(size, "32", 2) == 0));
}

unsigned st__printf_spec_int_size(const struct st__printf_spec *s)
{
    if (s->pri)
        return st__printf_spec_pri_narrow(s) ? 4 : 8;
    if (!strcmp(s->len, "hh"))
        return 1;
    if (!strcmp(s->len, "h"))
        return 2;
    return s->len[0] ? 8 : 4;
}
