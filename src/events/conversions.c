/*
 * An event's printf conversions matched against its arguments.
 *
 * Why: the log, ftrace and syslog backends pass the arguments to printf
 * with the event's format, so a format that reads something else than what
 * is passed prints garbage or crashes (`ev(int x) "x %s"` dereferences x).
 * The C compiler only warns, and only with -Wformat; this check refuses
 * such an event where it is declared, for the generator and the reader
 * alike.
 *
 * The rules, those of GCC's -Wformat on the LP64 targets simpletrace runs
 * on (x86-64, aarch64), signedness aside as -Wformat leaves it aside:
 *
 *   - each argument is printed by one conversion, in order, and a '*'
 *     width or precision takes an argument of its own (an int): no
 *     conversion without an argument, no argument without a conversion;
 *   - %s takes a string (char * or const char *), %p any pointer or
 *     string, %d %i %o %u %x %X %c an integer, never a double (%f...);
 *   - the integer's size class is the one its length modifier reads:
 *       int and narrower types          none, hh, h, PRI*8, PRI*16, PRI*32
 *       long, int64_t, uint64_t,        l, z, t, j, PRI*64, PRI*PTR, PRI*MAX
 *       size_t, ssize_t, ptrdiff_t,
 *       uintptr_t (all long on LP64)
 *       long long                       ll
 *     so %d for an int64_t is refused, %lx for a uint64_t is accepted
 *     (QEMU has such formats) and PRI macros, the portable spelling, are
 *     what the messages suggest;
 *   - never %n (it writes through its argument), positional conversions
 *     (%1$d), unknown conversions, or a length modifier that does not
 *     apply to its conversion (%ls, %Ld, %l"PRIx64").
 *
 * The format is read as printf sees it: literals concatenated, escapes
 * decoded ("\x25d" is %d), each PRI macro one unit standing for its
 * length modifier and conversion letter.
 */
#include "conversions.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ---- reading the format ------------------------------------------------- */

/* Where the reader is in a validated format. */
struct cursor {
    const char *p;   /* next byte of the format text */
    bool in_literal; /* inside "..." */
};

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
static struct unit next_unit(struct cursor *c)
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

/* A conversion specification, from '%' to its conversion. */
struct spec {
    char text[80];   /* as the messages show it: %08"PRIx64" */
    size_t text_len;
    unsigned stars;  /* '*' width and precision: arguments taken before the converted one */
    char len[3];     /* length modifier: "", "h", "hh", "l", "ll", "j", "z", "t", "L" or "q" */
    char conv;       /* conversion letter; 0 when the format ended first */
    const char *pri; /* the PRI macro that gave conv, or NULL */
    size_t pri_len;
    bool positional; /* starts with N$ */
};

static void spec_add(struct spec *s, const char *text, size_t n)
{
    if (s->text_len + n < sizeof s->text) {
        memcpy(s->text + s->text_len, text, n);
        s->text_len += n;
        s->text[s->text_len] = '\0';
    }
}

/* Adds one byte of the spec, escaped when it is not printable. */
static void spec_add_char(struct spec *s, char c)
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
static struct unit take(struct cursor *c, struct spec *s, struct unit u)
{
    spec_add_char(s, u.c);
    return next_unit(c);
}

/* Reads an N$ prefix if there is one; otherwise leaves the cursor where it was. */
static struct unit read_position(struct cursor *c, struct spec *s, struct unit u)
{
    struct cursor save = *c;
    struct unit v = u;
    bool digits = false;
    for (; !v.pri && v.c >= '0' && v.c <= '9'; v = next_unit(c))
        digits = true;
    *c = save;
    if (!digits || v.pri || v.c != '$')
        return u;
    s->positional = true;
    while (u.c != '$')
        u = take(c, s, u);
    return take(c, s, u);
}

/* Reads a width or precision: '*' (one more argument) or digits. */
static struct unit read_number(struct cursor *c, struct spec *s, struct unit u)
{
    if (!u.pri && u.c == '*') {
        s->stars++;
        return take(c, s, u);
    }
    while (!u.pri && u.c >= '0' && u.c <= '9')
        u = take(c, s, u);
    return u;
}

/* Reads the length modifier into s->len. */
static struct unit read_length(struct cursor *c, struct spec *s, struct unit u)
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
static void read_spec(struct cursor *c, struct spec *s)
{
    memset(s, 0, sizeof *s);
    spec_add(s, "%", 1);
    struct unit u = read_position(c, s, next_unit(c));
    while (!u.pri && u.c && strchr("-+ #0'", u.c))
        u = take(c, s, u);
    u = read_number(c, s, u);
    if (!u.pri && u.c == '.') {
        u = take(c, s, u);
        u = read_number(c, s, u);
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

/* ---- types ------------------------------------------------------------------- */

/* The size classes -Wformat tells apart among integers on LP64. */
enum rank {
    RANK_INT,   /* int and narrower (promoted to int) */
    RANK_LONG,  /* long and the 64-bit typedefs, which are long on LP64 */
    RANK_LLONG, /* long long */
};

static enum rank arg_rank(const struct st_arg *a)
{
    if (a->size <= 4)
        return RANK_INT;
    return strstr(a->type, "long long") ? RANK_LLONG : RANK_LONG;
}

/* Size of the PRI macro: the digits or letters after "PRIx". */
static bool pri_is_narrow(const struct spec *s)
{
    const char *size = s->pri + 4;
    size_t n = s->pri_len - 4;
    return (n == 1 && size[0] == '8') || (n == 2 && (memcmp(size, "16", 2) == 0 || memcmp(size, "32", 2) == 0));
}

static enum rank spec_rank(const struct spec *s)
{
    if (s->pri)
        return pri_is_narrow(s) ? RANK_INT : RANK_LONG;
    if (!strcmp(s->len, "ll"))
        return RANK_LLONG;
    if (s->len[0] && strchr("ljzt", s->len[0]))
        return RANK_LONG;
    return RANK_INT;
}

/* The type an integer conversion reads, as -Wformat names it. */
static const char *spec_wants(const struct spec *s)
{
    bool sig = s->conv == 'd' || s->conv == 'i' || s->conv == 'c';
    const char *l = s->len;
    if (s->pri) {
        const char *size = s->pri + 4;
        if (pri_is_narrow(s))
            return sig ? "int" : "unsigned int";
        if (!strncmp(size, "64", 2))
            return sig ? "int64_t" : "uint64_t";
        if (!strncmp(size, "PTR", 3))
            return sig ? "intptr_t" : "uintptr_t";
        return sig ? "intmax_t" : "uintmax_t";
    }
    if (!strcmp(l, "l"))
        return sig ? "long" : "unsigned long";
    if (!strcmp(l, "ll"))
        return sig ? "long long" : "unsigned long long";
    if (!strcmp(l, "j"))
        return sig ? "intmax_t" : "uintmax_t";
    if (!strcmp(l, "z"))
        return sig ? "ssize_t" : "size_t";
    if (!strcmp(l, "t"))
        return "ptrdiff_t";
    return sig ? "int" : "unsigned int";
}

/* The conversion that prints integer argument a with letter conv, for "(use ...)". */
static void suggest(const struct st_arg *a, char conv, char *buf, size_t n)
{
    static const struct {
        const char *word, *before, *after; /* the type contains word: %<before><conv><after> */
    } ways[] = {
        {"int64_t", "\"PRI", "64\""}, {"intptr_t", "\"PRI", "PTR\""}, {"size_t", "z", ""},
        {"ptrdiff_t", "t", ""},        {"long long", "ll", ""},         {"long", "l", ""},
    };
    if (arg_rank(a) != RANK_INT)
        for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++)
            if (strstr(a->type, ways[i].word)) {
                snprintf(buf, n, "%%%s%c%s", ways[i].before, conv, ways[i].after);
                return;
            }
    snprintf(buf, n, "%%%c", conv);
}

/* ---- matching ---------------------------------------------------------------- */

/* Writes a message into msg; returns -EINVAL. */
static int refuse(char *msg, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(char *msg, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

static bool is_integer_conv(char c)
{
    return c && strchr("diouxXc", c);
}

static bool is_float_conv(char c)
{
    return c && strchr("aAeEfFgG", c);
}

/* Refuses what is wrong with the spec itself, whatever the arguments. */
static int check_spec_alone(const struct spec *s, char *msg, size_t len)
{
    if (!s->conv)
        return refuse(msg, len,
                      "Incomplete format conversion '%s' at the end of the format (a percent sign is written %%%%)",
                      s->text);
    if (s->positional)
        return refuse(msg, len, "Positional format conversion '%s' is not supported", s->text);
    if (s->conv == 'n')
        return refuse(msg, len, "Format conversion '%s' is forbidden: it writes through its argument", s->text);
    if (!is_integer_conv(s->conv) && !is_float_conv(s->conv) && !strchr("sp", s->conv))
        return refuse(msg, len, "Unknown format conversion '%s'", s->text);
    bool fits;
    if (s->pri || s->conv == 'c' || s->conv == 's' || s->conv == 'p')
        fits = s->len[0] == '\0';
    else if (is_float_conv(s->conv))
        fits = !strcmp(s->len, "") || !strcmp(s->len, "l") || !strcmp(s->len, "L");
    else
        fits = !s->len[0] || !strchr("Lq", s->len[0]);
    if (!fits)
        return refuse(msg, len, "Length modifier '%s' does not apply to '%s'", s->len, s->text);
    return 0;
}

/* Takes the next argument for the spec; NULL (msg filled) when there is none. */
static struct st_arg *take_arg(struct st_event_decl *ev, unsigned *next, const struct spec *s, char *msg,
                               size_t len)
{
    if (*next < ev->nargs)
        return &ev->args[(*next)++];
    if (ev->nargs == 0)
        refuse(msg, len, "Format conversion '%s' needs argument %u, but the event has none", s->text, *next + 1);
    else
        refuse(msg, len, "Format conversion '%s' needs argument %u, but the event has %u", s->text, *next + 1,
               ev->nargs);
    return NULL;
}

/* Checks the argument printed by an integer conversion. */
static int check_integer(const struct st_arg *a, unsigned num, const struct spec *s, char *msg, size_t len)
{
    if (a->kind == ST_ARG_STRING)
        return refuse(msg, len, "Argument %u '%s' is %s but '%s' wants an integer (use '%%s' for a string)", num,
                      a->name, a->type, s->text);
    if (a->kind == ST_ARG_POINTER)
        return refuse(msg, len, "Argument %u '%s' is %s but '%s' wants an integer (use '%%p' for a pointer)", num,
                      a->name, a->type, s->text);
    if (arg_rank(a) == spec_rank(s))
        return 0;
    if (s->conv == 'c')
        return refuse(msg, len, "Argument %u '%s' is %s but '%s' wants int", num, a->name, a->type, s->text);
    char use[32];
    suggest(a, s->conv, use, sizeof use);
    return refuse(msg, len, "Argument %u '%s' is %s but '%s' wants %s (use '%s')", num, a->name, a->type, s->text,
                  spec_wants(s), use);
}

/* Checks the argument printed by the spec's conversion. */
static int check_arg(const struct st_arg *a, unsigned num, const struct spec *s, char *msg, size_t len)
{
    if (s->conv == 's' && a->kind == ST_ARG_POINTER)
        return refuse(msg, len,
                      "Argument %u '%s' is %s but '%s' wants a string (only char * and const char * are "
                      "recorded as strings)",
                      num, a->name, a->type, s->text);
    if (s->conv == 's' && a->kind != ST_ARG_STRING)
        return refuse(msg, len, "Argument %u '%s' is %s but '%s' wants a string", num, a->name, a->type, s->text);
    if (s->conv == 'p' && a->kind == ST_ARG_INTEGER) {
        char use[32];
        suggest(a, 'x', use, sizeof use);
        return refuse(msg, len, "Argument %u '%s' is %s but '%s' wants a pointer (use '%s' for an integer)", num,
                      a->name, a->type, s->text, use);
    }
    if (is_float_conv(s->conv))
        return refuse(msg, len, "Argument %u '%s' is %s but '%s' wants a double", num, a->name, a->type, s->text);
    if (is_integer_conv(s->conv))
        return check_integer(a, num, s, msg, len);
    return 0;
}

/* Matches one spec with the arguments it takes, from *next on. */
static int match_spec(struct st_event_decl *ev, unsigned *next, const struct spec *s, char *msg, size_t len)
{
    int rc = check_spec_alone(s, msg, len);
    if (rc)
        return rc;
    for (unsigned i = 0; i < s->stars; i++) {
        struct st_arg *a = take_arg(ev, next, s, msg, len);
        if (!a)
            return -EINVAL;
        if (a->kind != ST_ARG_INTEGER || arg_rank(a) != RANK_INT)
            return refuse(msg, len, "Argument %u '%s' is %s but the '*' of '%s' wants int", *next, a->name, a->type,
                          s->text);
        a->conv = '*';
    }
    struct st_arg *a = take_arg(ev, next, s, msg, len);
    if (!a)
        return -EINVAL;
    rc = check_arg(a, *next, s, msg, len);
    if (rc == 0)
        a->conv = s->conv;
    return rc;
}

int st__events_match_conversions(struct st_event_decl *ev, char *msg, size_t len)
{
    for (unsigned i = 0; i < ev->nargs; i++)
        ev->args[i].conv = 0;
    if (!ev->fmt)
        return 0;
    struct cursor c = {ev->fmt, false};
    unsigned next = 0; /* the next argument a conversion takes */
    for (struct unit u = next_unit(&c); u.c; u = next_unit(&c)) {
        if (u.pri || u.c != '%')
            continue;
        struct spec s;
        read_spec(&c, &s);
        if (!strcmp(s.text, "%%"))
            continue;
        int rc = match_spec(ev, &next, &s, msg, len);
        if (rc)
            return rc;
    }
    if (next < ev->nargs)
        return refuse(msg, len, "Argument %u '%s' has no conversion: the format prints %u of the %u arguments",
                      next + 1, ev->args[next].name, next, ev->nargs);
    return 0;
}
