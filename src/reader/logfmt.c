/*
 * Records rendered with their declared format (logfmt.h).
 *
 * The format is never handed to printf: it comes from a file, and a
 * record's values need not be what its conversions read. The format is
 * walked with the events module's scanner (printf_scan.h, the same reading
 * that checked it), literal bytes are copied, and each conversion is
 * printed alone by snprintf with a specification rebuilt here,
 *
 *     "%" FLAGS "*.*" LENGTH CONV     width and precision passed as ints
 *
 * (a precision of -1 is "none", as C says of a negative '*' precision),
 * and a value of exactly the C type that specification reads. What printf
 * would have read is recomputed from the declaration: the argument of the
 * declared type, promoted to int or kept 64-bit, then read with the
 * conversion's size (so %hhx of an int 300 prints 2c, %x of an int -1
 * ffffffff, as in the program).
 *
 * The log backend formats with vsnprintf into PIPE_BUF bytes, so the line
 * is built the same way: every byte counted, the first PIPE_BUF kept, and
 * the same rules applied at the end (cut, missing newline, a failed
 * vsnprintf giving an empty line).
 */
#include "logfmt.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "printf_scan.h"
#include "reader_internal.h"

#define CUT_MARK "...\n"

/*
 * Widths and precisions are taken as at most this: printf writes every
 * byte of a padding (a '*' of 2^31-1 costs seconds per record), and a
 * trace must not make the reader that slow. The line is cut at PIPE_BUF
 * bytes anyway; only formats no one writes differ (reader.h).
 */
#define PAD_MAX 65536

/* A line being built: the first ST__LOG_LINE_MAX bytes kept, all counted. */
struct line {
    char *buf;
    size_t kept;    /* bytes in buf */
    uint64_t total; /* bytes printf would have produced */
    bool failed;    /* printf would have failed (EOVERFLOW): the log backend prints an empty line */
};

static void put(struct line *l, const char *s, size_t n)
{
    size_t room = ST__LOG_LINE_MAX - l->kept;
    memcpy(l->buf + l->kept, s, n < room ? n : room);
    l->kept += n < room ? n : room;
    l->total += n;
}

/* Adds what snprintf returned for a piece printed into piece (of size cap). */
static void put_piece(struct line *l, const char *piece, size_t cap, int n)
{
    if (n < 0) {
        l->failed = true;
        return;
    }
    size_t have = (size_t)n < cap ? (size_t)n : cap - 1;
    put(l, piece, have);
    l->total += (size_t)n - have; /* bytes beyond the piece buffer are past the line's end anyway */
}

/* The arguments of a record, taken in order by the conversions. */
struct args {
    const struct st_event_info *ev;
    const struct st_record *rec;
    unsigned next;
};

/* The next argument: its declaration in *a, its value returned; NULL when there is none. */
static const struct st_value *take(struct args *in, const struct st_arg_info **a)
{
    if (in->next >= in->rec->nargs || in->next >= in->ev->nargs)
        return NULL;
    *a = &in->ev->args[in->next];
    return &in->rec->args[in->next++];
}

/* An integer argument as the int it is passed as (a '*' or a narrow conversion reads int). */
static uint32_t as_int_bits(const struct st_arg_info *a, const struct st_value *v)
{
    return (uint32_t)st_arg_value(a, v->u64);
}

/* Reads a width or precision: its digits, or the int argument of a '*'. 0 or -EINVAL. */
static int take_number(struct args *in, long spec, int none, int *out, struct line *l)
{
    const struct st_arg_info *a;
    const struct st_value *v;
    if (spec == ST__SPEC_STAR) {
        if (!(v = take(in, &a)))
            return -EINVAL;
        uint32_t bits = as_int_bits(a, v);
        int n;
        memcpy(&n, &bits, sizeof n);
        *out = n > PAD_MAX ? PAD_MAX : n < -PAD_MAX ? -PAD_MAX : n; /* negative: '-' flag, or no precision */
    } else if (spec == ST__SPEC_NONE) {
        *out = none;
    } else if (spec >= ST__SPEC_HUGE) {
        l->failed = true; /* printf refuses a width beyond INT_MAX */
        *out = none;
    } else {
        *out = spec > PAD_MAX ? PAD_MAX : (int)spec;
    }
    return 0;
}

/* Builds "%" FLAGS "*.*" LENGTH CONV into out (32 bytes). */
static void rebuild(char *out, const struct st__printf_spec *s, const char *length, char conv)
{
    snprintf(out, 32, "%%%s*.*%s%c", s->flags, length, conv);
}

/* printf of one specification: the format is built here, never taken from the trace. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

/* A string for %s (and for %p, which cannot print an address the trace does not hold). */
static int put_string(struct line *l, const struct st__printf_spec *s, const struct st_value *v, int width,
                      int prec, char *piece, size_t cap)
{
    char spec[32];
    rebuild(spec, s, "", 's');
    /* Not NUL-terminated in the record: the precision bounds the read (printf still stops at a NUL). */
    size_t n = v->len;
    if (prec >= 0 && (size_t)prec < n)
        n = (size_t)prec;
    if (n > INT_MAX)
        n = INT_MAX;
    put_piece(l, piece, cap, snprintf(piece, cap, spec, width, (int)n, v->str ? v->str : ""));
    return 0;
}

static int put_pointer(struct line *l, const struct st__printf_spec *s, uint64_t value, int width, int prec,
                       char *piece, size_t cap)
{
    char spec[32];
    rebuild(spec, s, "", 'p');
    put_piece(l, piece, cap, snprintf(piece, cap, spec, width, prec, (const void *)(uintptr_t)value));
    return 0;
}

/* An integer conversion (d i o u x X c) of value, an argument of type a. */
static int put_integer(struct line *l, const struct st__printf_spec *s, const struct st_arg_info *a,
                       const struct st_value *v, int width, int prec, char *piece, size_t cap)
{
    char spec[32];
    bool sig = s->conv == 'd' || s->conv == 'i' || s->conv == 'c';
    unsigned size = s->conv == 'c' ? 4 : st__printf_spec_int_size(s);
    int n;
    if (size <= 4) {
        uint32_t bits = as_int_bits(a, v);
        rebuild(spec, s, size == 1 ? "hh" : size == 2 ? "h" : "", s->conv);
        int iv;
        memcpy(&iv, &bits, sizeof iv);
        n = sig ? snprintf(piece, cap, spec, width, prec, iv) : snprintf(piece, cap, spec, width, prec, (unsigned)bits);
    } else {
        uint64_t bits = st_arg_value(a, v->u64);
        rebuild(spec, s, "ll", s->conv);
        long long sv;
        memcpy(&sv, &bits, sizeof sv);
        n = sig ? snprintf(piece, cap, spec, width, prec, sv)
                : snprintf(piece, cap, spec, width, prec, (unsigned long long)bits);
    }
    put_piece(l, piece, cap, n);
    return 0;
}

#pragma GCC diagnostic pop

/* One conversion with the arguments it takes. 0 or -EINVAL. */
static int put_conv(struct line *l, const struct st__printf_spec *s, struct args *in)
{
    char piece[ST__LOG_LINE_MAX + 1];
    int width, prec;
    const struct st_arg_info *a;
    const struct st_value *v;
    if (s->positional || take_number(in, s->width, 0, &width, l) || take_number(in, s->precision, -1, &prec, l))
        return -EINVAL;
    if (!(v = take(in, &a)))
        return -EINVAL;
    if (s->len[0] == 'L' || s->len[0] == 'q')
        return -EINVAL; /* no integer length a checked format has */
    switch (s->conv) {
    case 's':
        if (v->kind != ST_VALUE_STRING) /* v0 stores char * as a pointer */
            return put_pointer(l, s, v->u64, width, -1, piece, sizeof piece);
        return put_string(l, s, v, width, prec, piece, sizeof piece);
    case 'p':
        if (v->kind == ST_VALUE_STRING)
            return put_string(l, s, v, width, prec, piece, sizeof piece);
        return put_pointer(l, s, v->u64, width, prec, piece, sizeof piece);
    case 'd': case 'i': case 'o': case 'u': case 'x': case 'X': case 'c':
        return put_integer(l, s, a, v, width, prec, piece, sizeof piece);
    default:
        return -EINVAL; /* %n, floats, unknown: refused by the events parser */
    }
}

/* The log backend's end of line: empty on failure, cut when too long, '\n' added when missing. */
static long finish(struct line *l)
{
    if (l->failed || l->total > INT_MAX)
        l->kept = l->total = 0;
    if (l->total + 1 > ST__LOG_LINE_MAX) {
        size_t n = ST__LOG_LINE_MAX - strlen(CUT_MARK);
        memcpy(l->buf + n, CUT_MARK, strlen(CUT_MARK));
        return (long)ST__LOG_LINE_MAX;
    }
    if (l->kept == 0 || l->buf[l->kept - 1] != '\n')
        l->buf[l->kept++] = '\n';
    return (long)l->kept;
}

long st__log_line(const struct st_event_info *ev, const struct st_record *rec, char *buf)
{
    struct line l = {buf, 0, 0, false};
    struct args in = {ev, rec, 0};
    put(&l, ev->name, strlen(ev->name));
    if (!ev->format) { /* the generated call is st__log("NAME\n") */
        put(&l, "\n", 1);
        return finish(&l);
    }
    put(&l, " ", 1);
    struct st__printf_cursor c;
    struct st__printf_spec s;
    enum st__printf_piece piece;
    st__printf_scan_init(&c, ev->format);
    while ((piece = st__printf_scan_next(&c, &s)) != ST__PRINTF_END) {
        if (piece == ST__PRINTF_TEXT)
            put(&l, c.text, c.text_len);
        else if (put_conv(&l, &s, &in) < 0)
            return -EINVAL;
    }
    if (!c.stopped_nul) /* the "\n" the generated call appends; after a "\0" printf never sees it */
        put(&l, "\n", 1);
    return finish(&l);
}
