/*
 * An event's format read as printf reads it: literals concatenated,
 * escapes decoded ("\x25d" is %d), each PRI macro one unit standing for its
 * length modifier and conversion letter. The one reading of a format, for
 * the check of its conversions (conversions.c) and for rendering records
 * with it (the reader's log format).
 *
 * The text must have passed the events parser's syntax check (string
 * literals and PRI macros only); nothing else is assumed: a spec is read
 * whatever it holds, and the caller judges it.
 */
#ifndef ST_EVENTS_PRINTF_SCAN_H
#define ST_EVENTS_PRINTF_SCAN_H

#include <stdbool.h>
#include <stddef.h>

/* Where the scan is in a format. */
struct st__printf_cursor {
    const char *p;     /* next byte of the format text */
    bool in_literal;   /* inside "..." */
    bool stopped_nul;  /* the scan ended at a "\0" escape (printf stops there), not at the text's end */
    char text[4];      /* the bytes of an ST__PRINTF_TEXT piece */
    size_t text_len;
};

#define ST__SPEC_NONE (-1L) /* width or precision not written */
#define ST__SPEC_STAR (-2L) /* width or precision '*': an int argument of its own */
#define ST__SPEC_HUGE 2147483648L /* digits beyond INT_MAX: printf fails on them (EOVERFLOW) */

/* A conversion specification, from '%' to its conversion. */
struct st__printf_spec {
    char text[80];     /* as messages show it: %08"PRIx64" */
    size_t text_len;
    char flags[8];     /* the flags as written, of "-+ #0'" (at most 7 kept) */
    long width;        /* digits (at most ST__SPEC_HUGE), ST__SPEC_NONE or ST__SPEC_STAR */
    long precision;    /* likewise; "." alone is 0 */
    unsigned stars;    /* '*' width and precision: arguments taken before the converted one */
    char len[3];       /* length modifier: "", "h", "hh", "l", "ll", "j", "z", "t", "L" or "q" */
    char conv;         /* conversion letter; 0 when the format ended first */
    const char *pri;   /* the PRI macro that gave conv, or NULL */
    size_t pri_len;
    bool positional;   /* starts with N$ */
};

/* What st__printf_scan_next() found. */
enum st__printf_piece {
    ST__PRINTF_END,  /* end of the format (or a "\0": see stopped_nul) */
    ST__PRINTF_TEXT, /* bytes printed as they are, in the cursor's text: a literal byte, '%' for "%%",
                        or a PRI macro outside a conversion (its expansion, "lu" for PRIu64) */
    ST__PRINTF_CONV, /* a conversion specification (anything after '%' but "%%") */
};

/* Starts a scan of fmt. */
void st__printf_scan_init(struct st__printf_cursor *c, const char *fmt);

/* Reads the next piece: text into c->text, or a conversion into *spec. */
enum st__printf_piece st__printf_scan_next(struct st__printf_cursor *c, struct st__printf_spec *spec);

/*
 * Bytes of the integer an integer conversion reads on LP64 glibc: 1 (hh),
 * 2 (h), 4 (none; PRI*8/16/32, which glibc spells without a modifier),
 * 8 (l ll j z t q L, PRI*64/PTR/MAX).
 */
unsigned st__printf_spec_int_size(const struct st__printf_spec *s);

/* True when the PRI macro of s is PRI*8, PRI*16 or PRI*32 (read as int). */
bool st__printf_spec_pri_narrow(const struct st__printf_spec *s);

#endif /* ST_EVENTS_PRINTF_SCAN_H */
