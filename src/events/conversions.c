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
 * The format is read as printf sees it (printf_scan.h).
 */
#include "conversions.h"
#include "printf_scan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ---- types ------------------------------------------------------------------- */

/* The size classes -Wformat tells apart among integers on LP64. */
enum rank {
    RANK_INT,   /* int and narrower (promoted to int) */
    RANK_LONG,  /* long and the 64-bit typedefs, which are long on LP64 */
    RANK_LLONG, /* long long */
};

static enum rank arg_rank(const struct st__arg *a)
{
    if (a->size <= 4)
        return RANK_INT;
    return strstr(a->type, "long long") ? RANK_LLONG : RANK_LONG;
}

static enum rank spec_rank(const struct st__printf_spec *s)
{
    if (s->pri)
        return st__printf_spec_pri_narrow(s) ? RANK_INT : RANK_LONG;
    if (!strcmp(s->len, "ll"))
        return RANK_LLONG;
    if (s->len[0] && strchr("ljzt", s->len[0]))
        return RANK_LONG;
    return RANK_INT;
}

/* The type an integer conversion reads, as -Wformat names it. */
static const char *spec_wants(const struct st__printf_spec *s)
{
    bool sig = s->conv == 'd' || s->conv == 'i' || s->conv == 'c';
    const char *l = s->len;
    if (s->pri) {
        const char *size = s->pri + 4;
        if (st__printf_spec_pri_narrow(s))
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
static void suggest(const struct st__arg *a, char conv, char *buf, size_t n)
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
static int check_spec_alone(const struct st__printf_spec *s, char *msg, size_t len)
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
static struct st__arg *take_arg(struct st__event_decl *ev, unsigned *next, const struct st__printf_spec *s, char *msg,
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
static int check_integer(const struct st__arg *a, unsigned num, const struct st__printf_spec *s, char *msg, size_t len)
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
static int check_arg(const struct st__arg *a, unsigned num, const struct st__printf_spec *s, char *msg, size_t len)
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
static int match_spec(struct st__event_decl *ev, unsigned *next, const struct st__printf_spec *s, char *msg, size_t len)
{
    int rc = check_spec_alone(s, msg, len);
    if (rc)
        return rc;
    for (unsigned i = 0; i < s->stars; i++) {
        struct st__arg *a = take_arg(ev, next, s, msg, len);
        if (!a)
            return -EINVAL;
        if (a->kind != ST_ARG_INTEGER || arg_rank(a) != RANK_INT)
            return refuse(msg, len, "Argument %u '%s' is %s but the '*' of '%s' wants int", *next, a->name, a->type,
                          s->text);
        a->conv = '*';
    }
    struct st__arg *a = take_arg(ev, next, s, msg, len);
    if (!a)
        return -EINVAL;
    rc = check_arg(a, *next, s, msg, len);
    if (rc == 0)
        a->conv = s->conv;
    return rc;
}

int st__events_match_conversions(struct st__event_decl *ev, char *msg, size_t len)
{
    for (unsigned i = 0; i < ev->nargs; i++)
        ev->args[i].conv = 0;
    if (!ev->fmt)
        return 0;
    struct st__printf_cursor c;
    struct st__printf_spec s;
    unsigned next = 0; /* the next argument a conversion takes */
    enum st__printf_piece piece;
    st__printf_scan_init(&c, ev->fmt);
    while ((piece = st__printf_scan_next(&c, &s)) != ST__PRINTF_END) {
        if (piece != ST__PRINTF_CONV)
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
