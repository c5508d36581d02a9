/*
 * Which printf conversion consumes each argument of an event's format. The
 * log backend needs it to cast pointers passed to %p to (const void *), which
 * -Wpedantic otherwise reports for `char **` and the like. The format was
 * validated by the parser: string literals and PRI macros only.
 */
#include <string.h>

#include "gen.h"

/* Walks the logical characters of a format: literal contents, with each PRI macro as its conversion letter. */
struct fmt_walk {
    const char *p;   /* next input byte */
    bool in_literal; /* inside "..." */
};

/* Returns the next logical character, or 0 at the end. */
static char walk_next(struct fmt_walk *w)
{
    for (;;) {
        char c = *w->p;
        if (c == '\0')
            return 0;
        if (w->in_literal) {
            w->p++;
            if (c == '"') {
                w->in_literal = false;
                continue;
            }
            if (c == '\\' && *w->p) {
                w->p++;
                return '\\'; /* an escape is never a conversion character */
            }
            return c;
        }
        if (c == '"') {
            w->in_literal = true;
            w->p++;
            continue;
        }
        if (strncmp(w->p, "PRI", 3) == 0 && w->p[3]) {
            char conv = w->p[3];
            w->p += 4;
            while (*w->p >= '0' && *w->p <= 'Z' && *w->p != '"')
                w->p++; /* the size: 8 16 32 64 PTR MAX */
            return conv;
        }
        w->p++; /* blanks between tokens */
    }
}

/* Stores one consumed argument. */
static void record(char *conv, unsigned max, unsigned *n, char c)
{
    if (*n < max)
        conv[*n] = c;
    (*n)++;
}

unsigned st_gen_format_conversions(const char *fmt, char *conv, unsigned max)
{
    struct fmt_walk w = {fmt ? fmt : "", false};
    unsigned n = 0;
    char c;
    while ((c = walk_next(&w)) != 0) {
        if (c != '%')
            continue;
        /* flags, width, precision, length modifiers, then the conversion */
        while ((c = walk_next(&w)) != 0) {
            if (c == '*')
                record(conv, max, &n, '*');
            else if (!strchr("-+ #0'123456789.hlLqjzt", c))
                break;
        }
        if (c == 0)
            break;
        if (c != '%')
            record(conv, max, &n, c);
    }
    return n;
}

void st_out_format(struct st_out *out, const char *fmt)
{
    const char *p = fmt;
    bool first = true;
    while (*p) {
        if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\v' || *p == '\f') {
            p++;
            continue;
        }
        const char *start = p;
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1])
                    p++;
            if (*p)
                p++;
        } else {
            while (*p && *p != '"' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\v' && *p != '\f')
                p++;
        }
        st_out_printf(out, "%s%.*s", first ? "" : " ", (int)(p - start), start);
        first = false;
    }
}
