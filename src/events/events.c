/*
 * trace-events parser (grammar in events.h and spec section 9).
 *
 * Design: a file is split into lines; each event line is parsed into a
 * struct st__event_decl appended directly to the list. If any line fails, the
 * events appended by this call are freed and the count restored, so a failed
 * parse leaves the list as it was. Nothing here prints or exits.
 *
 * Compatibility rule: whatever QEMU's tracetool accepts and that also yields
 * compilable C is accepted; a few inputs tracetool lets through but that would
 * only fail later in the C compiler (a name starting with a digit, an argument
 * named after a C keyword, `int8_t long`, text after ')' that is not a format)
 * are rejected here with a message instead.
 */
#include "events.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conversions.h"
#include "trace_format.h"

/* ---- small helpers ------------------------------------------------------ */

/* Python's \s for ASCII: what tracetool strips and splits on. */
static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(char c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

static char *dup_range(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* A [begin, end) slice of the input; never NUL-terminated. */
struct span {
    const char *p;
    size_t n;
};

static struct span span_trim(struct span s)
{
    while (s.n && is_space(s.p[0])) {
        s.p++;
        s.n--;
    }
    while (s.n && is_space(s.p[s.n - 1]))
        s.n--;
    return s;
}

static bool span_eq(struct span s, const char *word)
{
    size_t n = strlen(word);
    return s.n == n && memcmp(s.p, word, n) == 0;
}

static bool span_is_ident(struct span s)
{
    if (s.n == 0 || !is_ident_start(s.p[0]))
        return false;
    for (size_t i = 1; i < s.n; i++)
        if (!is_ident_char(s.p[i]))
            return false;
    return true;
}

/* ---- errors ------------------------------------------------------------- */

/* Where the parser is; errors are reported against it. */
struct pctx {
    const char *file;
    unsigned line;
    struct st__events_error *err;
    unsigned flags; /* enum st__events_parse_flags */
};

static void set_error(struct st__events_error *err, const char *file, unsigned line, const char *fmt, va_list ap)
{
    if (!err)
        return;
    snprintf(err->file, sizeof err->file, "%s", file ? file : "");
    err->line = line;
    err->subject = false;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
}

/* Fills ctx->err with a message about the current line; returns -EINVAL. */
static int fail(const struct pctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(const struct pctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error(ctx->err, ctx->file, ctx->line, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

/* Same as fail() for an errno-style code other than -EINVAL. */
static int fail_code(const struct pctx *ctx, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_code(const struct pctx *ctx, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error(ctx->err, ctx->file, ctx->line, fmt, ap);
    va_end(ap);
    return code;
}

/* Prints at most max bytes of s, for quoting user text in messages. */
#define QUOTE_MAX 200
#define QUOTED(s) (int)((s).n < QUOTE_MAX ? (s).n : QUOTE_MAX), (s).p

void st__events_error_format(const struct st__events_error *err, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    if (err->line)
        snprintf(buf, len, "%s:%u: %s", err->file, err->line, err->message);
    else if (err->subject)
        snprintf(buf, len, "%s %s", err->file, err->message);
    else
        snprintf(buf, len, "%s: %s", err->file, err->message);
}

/* ---- list storage ------------------------------------------------------- */

void st__events_init(struct st__event_list *list)
{
    memset(list, 0, sizeof *list);
}

static void decl_free(struct st__event_decl *ev)
{
    free(ev->name);
    free(ev->fmt);
    free(ev->fmt_warning);
    for (unsigned i = 0; i < ev->nargs; i++) {
        free(ev->args[i].type);
        free(ev->args[i].name);
    }
    memset(ev, 0, sizeof *ev);
}

/* The hash index: open addressing over event positions. */
struct name_index {
    size_t mask;     /* capacity - 1; capacity is a power of two */
    uint32_t *slots; /* event position + 1; 0 = empty */
};

static void index_free(struct st__event_list *list)
{
    struct name_index *ix = list->index;
    if (ix) {
        free(ix->slots);
        free(ix);
    }
    list->index = NULL;
}

void st__events_free(struct st__event_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        decl_free(&list->events[i]);
    free(list->events);
    for (size_t i = 0; i < list->nfiles; i++)
        free(list->files[i]);
    free(list->files);
    index_free(list);
    st__events_init(list);
}

/* Returns a zeroed slot at the end of the list, or NULL when out of memory. */
static struct st__event_decl *list_push(struct st__event_list *list)
{
    if (list->count == list->capacity) {
        size_t cap = list->capacity ? list->capacity * 2 : 64;
        struct st__event_decl *p = realloc(list->events, cap * sizeof *p);
        if (!p)
            return NULL;
        list->events = p;
        list->capacity = cap;
    }
    struct st__event_decl *ev = &list->events[list->count];
    memset(ev, 0, sizeof *ev);
    return ev;
}

/* Appends a copy of name to list->files; returns the copy or NULL. */
static char *list_add_file(struct st__event_list *list, const char *name)
{
    char **p = realloc(list->files, (list->nfiles + 1) * sizeof *p);
    if (!p)
        return NULL;
    list->files = p;
    char *copy = strdup(name);
    if (!copy)
        return NULL;
    list->files[list->nfiles++] = copy;
    return copy;
}

/* ---- argument types ----------------------------------------------------- */

/* The type words tracetool allows (spec section 9). */
static const char *const allowed_types[] = {
    "int",     "long",    "short",    "char",     "bool",     "unsigned", "signed",
    "int8_t",  "uint8_t", "int16_t",  "uint16_t", "int32_t",  "uint32_t", "int64_t",
    "uint64_t", "void",   "size_t",   "ssize_t",  "uintptr_t", "ptrdiff_t",
};

static bool type_word_allowed(struct span w)
{
    for (size_t i = 0; i < sizeof allowed_types / sizeof allowed_types[0]; i++)
        if (span_eq(w, allowed_types[i]))
            return true;
    return false;
}

/* Typedef names: each stands alone (with const); value = size, sign. */
struct typedef_info {
    const char *name;
    unsigned size;
    bool is_signed;
};

static const struct typedef_info typedefs[] = {
    {"bool", 1, false},     {"int8_t", 1, true},     {"uint8_t", 1, false},  {"int16_t", 2, true},
    {"uint16_t", 2, false}, {"int32_t", 4, true},    {"uint32_t", 4, false}, {"int64_t", 8, true},
    {"uint64_t", 8, false}, {"size_t", 8, false},    {"ssize_t", 8, true},   {"uintptr_t", 8, false},
    {"ptrdiff_t", 8, true},
};

/* Counts of each word of a type, as the C rules for combining them need. */
struct type_words {
    unsigned n_long, n_short, n_char, n_int, n_signed, n_unsigned, n_void, n_typedef, n_stars;
    const struct typedef_info *td;
};

static void count_word(struct type_words *tw, struct span w)
{
    if (span_eq(w, "long"))
        tw->n_long++;
    else if (span_eq(w, "short"))
        tw->n_short++;
    else if (span_eq(w, "char"))
        tw->n_char++;
    else if (span_eq(w, "int"))
        tw->n_int++;
    else if (span_eq(w, "signed"))
        tw->n_signed++;
    else if (span_eq(w, "unsigned"))
        tw->n_unsigned++;
    else if (span_eq(w, "void"))
        tw->n_void++;
    else
        for (size_t i = 0; i < sizeof typedefs / sizeof typedefs[0]; i++)
            if (span_eq(w, typedefs[i].name)) {
                tw->n_typedef++;
                tw->td = &typedefs[i];
            }
}

/* True when the counted words form one valid C base type. */
static bool type_words_valid(const struct type_words *tw)
{
    unsigned kw = tw->n_long + tw->n_short + tw->n_char + tw->n_int + tw->n_signed + tw->n_unsigned;
    if (tw->n_typedef)
        return tw->n_typedef == 1 && kw == 0 && tw->n_void == 0;
    if (tw->n_void)
        return tw->n_void == 1 && kw == 0 && tw->n_stars > 0; /* a plain void has no value */
    if (kw == 0 || tw->n_int > 1 || tw->n_signed + tw->n_unsigned > 1 || tw->n_long > 2)
        return false;
    if (tw->n_char)
        return tw->n_char == 1 && tw->n_int == 0 && tw->n_short == 0 && tw->n_long == 0;
    if (tw->n_short)
        return tw->n_short == 1 && tw->n_long == 0;
    return true;
}

/* Sets kind, encoding, size and signedness of a validated type. */
static void classify(struct st__arg *arg, const struct type_words *tw)
{
    arg->names_bool = tw->td && strcmp(tw->td->name, "bool") == 0;
    if (tw->n_stars) {
        /* "char *" and "const char *" are strings; "char **" and "unsigned char *" are not
           (tracetool's is_string(), which decides what QEMU records). */
        const char *t = arg->type;
        if (strncmp(t, "const ", 6) == 0)
            t += 6;
        arg->kind = (tw->n_stars == 1 && strcmp(t, "char *") == 0) ? ST_ARG_STRING : ST_ARG_POINTER;
        arg->enc = arg->kind == ST_ARG_STRING ? ST__ENC_STRING : ST__ENC_POINTER;
        arg->is_signed = false;
        arg->size = 8;
        return;
    }
    arg->kind = ST_ARG_INTEGER;
    /* by the words, not the spelling: "bool const" and "char unsigned" are a bool and a char too */
    arg->enc = arg->names_bool ? ST__ENC_BOOL : tw->n_char ? ST__ENC_CHAR : ST__ENC_INTEGER;
    if (tw->td) {
        arg->size = tw->td->size;
        arg->is_signed = tw->td->is_signed;
        return;
    }
    arg->is_signed = tw->n_unsigned == 0;
    if (tw->n_char)
        arg->size = 1; /* plain char is signed on the LP64 targets we follow */
    else if (tw->n_short)
        arg->size = 2;
    else if (tw->n_long)
        arg->size = 8;
    else
        arg->size = 4;
}

/*
 * Normalises the type text: words separated by one space, a space before the
 * first '*' that follows a word, stars written together ("char **"). Also
 * counts its words. Returns the new string or NULL when out of memory.
 */
static char *normalise_type(struct span t, struct type_words *tw)
{
    char *out = malloc(t.n * 2 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    char prev = 0; /* 0 start, 'w' word, '*' star */
    for (size_t i = 0; i < t.n;) {
        if (is_space(t.p[i])) {
            i++;
            continue;
        }
        if (t.p[i] == '*') {
            if (prev == 'w')
                out[o++] = ' ';
            out[o++] = '*';
            tw->n_stars++;
            prev = '*';
            i++;
            continue;
        }
        size_t j = i;
        while (j < t.n && !is_space(t.p[j]) && t.p[j] != '*')
            j++;
        if (prev)
            out[o++] = ' ';
        memcpy(out + o, t.p + i, j - i);
        o += j - i;
        count_word(tw, (struct span){t.p + i, j - i});
        prev = 'w';
        i = j;
    }
    out[o] = '\0';
    return out;
}

/* Validates each word of a type as tracetool does; 0 or -EINVAL. */
static int check_type_words(const struct pctx *ctx, struct span t)
{
    for (size_t i = 0; i < t.n;) {
        if (is_space(t.p[i]) || t.p[i] == '*') {
            i++;
            continue;
        }
        size_t j = i;
        while (j < t.n && !is_space(t.p[j]) && t.p[j] != '*')
            j++;
        struct span w = {t.p + i, j - i};
        if (!span_eq(w, "const") && !type_word_allowed(w))
            return fail(ctx,
                        "Argument type '%.*s' is not allowed: use standard C integer types, "
                        "fixed-size integer types, 'const char *' or 'void *' for other pointers",
                        QUOTED(span_trim(t)));
        i = j;
    }
    return 0;
}

/* ---- arguments ---------------------------------------------------------- */

/* C keywords: an argument with such a name could never compile. */
static const char *const c_keywords[] = {
    "auto",     "break",  "case",     "char",   "const",    "continue", "default",  "do",
    "double",   "else",   "enum",     "extern", "float",    "for",      "goto",     "if",
    "inline",   "int",    "long",     "register", "restrict", "return", "short",    "signed",
    "sizeof",   "static", "struct",   "switch", "typedef",  "union",    "unsigned", "void",
    "volatile", "while",  "_Alignas", "_Alignof", "_Atomic", "_Bool",   "_Complex", "_Generic",
    "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local", "bool",
};

static bool is_c_keyword(struct span s)
{
    for (size_t i = 0; i < sizeof c_keywords / sizeof c_keywords[0]; i++)
        if (span_eq(s, c_keywords[i]))
            return true;
    return false;
}

/* Parses one non-void argument "TYPE NAME" into arg (owning its strings). */
static int parse_arg(const struct pctx *ctx, struct span item, struct st__arg *arg)
{
    struct span type, name;
    const char *star = NULL;
    for (size_t i = item.n; i-- > 0;)
        if (item.p[i] == '*') {
            star = item.p + i;
            break;
        }
    if (star) {
        type = (struct span){item.p, (size_t)(star - item.p) + 1};
        name = span_trim((struct span){star + 1, item.n - type.n});
    } else {
        size_t i = item.n;
        while (i > 0 && !is_space(item.p[i - 1]))
            i--;
        if (i == 0)
            return fail(ctx, "Argument '%.*s' has no name (write 'TYPE NAME')", QUOTED(item));
        type = (struct span){item.p, i};
        name = (struct span){item.p + i, item.n - i};
    }
    if (name.n == 0)
        return fail(ctx, "Argument '%.*s' has no name (write 'TYPE NAME')", QUOTED(item));
    int rc = check_type_words(ctx, type);
    if (rc)
        return rc;
    if (!span_is_ident(name))
        return fail(ctx, "Argument '%.*s' has an invalid name '%.*s'", QUOTED(item), QUOTED(name));
    if (is_c_keyword(name))
        return fail(ctx, "Argument '%.*s' has no name ('%.*s' is a C keyword)", QUOTED(item), QUOTED(name));
    if (name.n >= 4 && memcmp(name.p, "st__", 4) == 0)
        return fail(ctx, "Argument name '%.*s' is reserved (the prefix st__ is for generated code)",
                    QUOTED(name));
    struct type_words tw = {0};
    char *norm = normalise_type(type, &tw);
    if (!norm)
        return fail_code(ctx, -ENOMEM, "out of memory");
    if (!type_words_valid(&tw)) {
        rc = fail(ctx, "Argument type '%s' is not a valid C type", norm);
        free(norm);
        return rc;
    }
    arg->type = norm;
    arg->name = dup_range(name.p, name.n);
    if (!arg->name)
        return fail_code(ctx, -ENOMEM, "out of memory");
    classify(arg, &tw);
    return 0;
}

/* Rejects two arguments of one event with the same name. */
static int check_arg_names(const struct pctx *ctx, const struct st__event_decl *ev)
{
    for (unsigned i = 0; i < ev->nargs; i++)
        for (unsigned j = 0; j < i; j++)
            if (strcmp(ev->args[i].name, ev->args[j].name) == 0)
                return fail(ctx, "Duplicate argument name '%s'", ev->args[i].name);
    return 0;
}

/* Parses the text between the parentheses into ev->args. */
static int parse_args(const struct pctx *ctx, struct span args, struct st__event_decl *ev)
{
    size_t start = 0;
    for (size_t i = 0; i <= args.n; i++) {
        if (i < args.n && args.p[i] != ',')
            continue;
        struct span item = span_trim((struct span){args.p + start, i - start});
        start = i + 1;
        if (item.n == 0)
            return fail(ctx, "Empty argument (did you forget to use 'void'?)");
        if (span_eq(item, "void"))
            continue; /* tracetool drops "void" items */
        if (ev->nargs == ST_MAX_ARGS)
            return fail(ctx, "Too many arguments (at most %u)", ST_MAX_ARGS);
        int rc = parse_arg(ctx, item, &ev->args[ev->nargs]);
        /* Count it even on failure: decl_free() must free a half-built argument. */
        ev->nargs++;
        if (rc)
            return rc;
    }
    return check_arg_names(ctx, ev);
}

/* ---- format ------------------------------------------------------------- */

/* Length of a PRI macro at s (PRI[diouxX](8|16|32|64|PTR|MAX)), or 0. */
static size_t pri_macro_len(const char *s, size_t n)
{
    static const char *const sizes[] = {"8", "16", "32", "64", "PTR", "MAX"};
    if (n < 5 || memcmp(s, "PRI", 3) != 0 || !strchr("diouxX", s[3]))
        return 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t k = strlen(sizes[i]);
        if (n >= 4 + k && memcmp(s + 4, sizes[i], k) == 0 && (n == 4 + k || !is_ident_char(s[4 + k])))
            return 4 + k;
    }
    return 0;
}

/*
 * Length of the string literal at s (s[0] == '"'), or 0 when it is
 * unterminated or holds a raw control character. Sets *newline when it
 * contains a \n escape.
 */
static size_t literal_len(const char *s, size_t n, bool *newline)
{
    for (size_t i = 1; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
            return i + 1;
        if (c < 0x20 && c != '\t')
            return 0;
        if (c == '\\') {
            if (++i == n)
                return 0;
            if (s[i] == 'n')
                *newline = true;
            if ((unsigned char)s[i] < 0x20)
                return 0;
        }
    }
    return 0;
}

/* Validates the format: C string literals and PRI macros, no %m, no \n. */
static int check_format(const struct pctx *ctx, struct span f)
{
    for (size_t i = 0; i + 1 < f.n; i++)
        if (f.p[i] == '%' && f.p[i + 1] == 'm')
            return fail(ctx, "Event format '%%m' is forbidden, pass the error as an explicit trace argument");
    size_t i = 0;
    while (i < f.n) {
        if (is_space(f.p[i])) {
            i++;
            continue;
        }
        if (f.p[i] == '"') {
            bool newline = false;
            size_t len = literal_len(f.p + i, f.n - i, &newline);
            if (len == 0)
                return fail(ctx, "Malformed format: unterminated string literal");
            if (newline)
                return fail(ctx, "Event format must not contain a newline character ('\\n')");
            i += len;
            continue;
        }
        size_t len = pri_macro_len(f.p + i, f.n - i);
        if (len == 0) {
            size_t j = i;
            while (j < f.n && !is_space(f.p[j]) && f.p[j] != '"')
                j++;
            return fail(ctx, "Malformed format: unexpected '%.*s' (only string literals and PRI macros)",
                        QUOTED(((struct span){f.p + i, j - i})));
        }
        i += len;
    }
    return 0;
}

/* ---- event lines -------------------------------------------------------- */

/* Checks the properties before the name; only "disable" is known. */
static int parse_props(const struct pctx *ctx, struct span props, struct st__event_decl *ev)
{
    char unknown[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < props.n;) {
        if (is_space(props.p[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < props.n && !is_space(props.p[j]))
            j++;
        struct span w = {props.p + i, j - i};
        if (span_eq(w, "disable")) {
            ev->disabled = true;
        } else if (used < sizeof unknown) {
            int k = snprintf(unknown + used, sizeof unknown - used, "%s%.*s", used ? ", " : "", QUOTED(w));
            used += k > 0 ? (size_t)k : 0;
        }
        i = j;
    }
    if (unknown[0])
        return fail(ctx, "Unknown properties: %s", unknown);
    return 0;
}

/*
 * Splits the text before '(' into properties and name. The name is the run
 * of identifier characters just before '('; what precedes it must be words
 * followed by blanks.
 */
static int parse_head(const struct pctx *ctx, struct span head, struct span *name, struct st__event_decl *ev)
{
    size_t i = head.n;
    while (i > 0 && is_ident_char(head.p[i - 1]))
        i--;
    *name = (struct span){head.p + i, head.n - i};
    if (name->n == 0) {
        if (i > 0 && is_space(head.p[i - 1]))
            return fail(ctx, "Malformed event: no blank allowed between the event name and '('");
        return fail(ctx, "Malformed event: expected '[disable] NAME(ARGS) \"FORMAT\"'");
    }
    if (i > 0 && !is_space(head.p[i - 1]))
        return fail(ctx, "Invalid event name '%.*s'", QUOTED(span_trim(head)));
    struct span props = {head.p, i};
    for (size_t k = 0; k < props.n; k++)
        if (!is_space(props.p[k]) && !is_ident_char(props.p[k]))
            return fail(ctx, "Malformed event: unexpected '%c' before the event name", props.p[k]);
    if (!is_ident_start(name->p[0]))
        return fail(ctx, "Invalid event name '%.*s' (must be a C identifier)", QUOTED(*name));
    if (name->n > ST_MAX_NAME)
        return fail(ctx, "Event name is too long (%zu bytes, at most %u)", name->n, ST_MAX_NAME);
    return parse_props(ctx, props, ev);
}

/*
 * Lenient parse, a format that does not fit (msg says how): the event is
 * kept with its name and the warning, and none of its conversions is
 * trusted (conv 0), so nothing prints with that format. 0 or -ENOMEM.
 */
static int mark_unfit(const struct pctx *ctx, struct span name, struct st__event_decl *ev, const char *msg)
{
    static const char tail[] = " (read anyway, as QEMU's simpletrace.py reads it: its format is not used, "
                               "the log format shows its arguments instead; simpletrace gen refuses it)";
    for (unsigned i = 0; i < ev->nargs; i++)
        ev->args[i].conv = 0;
    ev->fmt_unfit = true;
    ev->name = dup_range(name.p, name.n);
    int n = snprintf(NULL, 0, "%s:%u: warning: event '%.*s': %s%s", ctx->file, ctx->line, QUOTED(name), msg, tail);
    ev->fmt_warning = n > 0 ? malloc((size_t)n + 1) : NULL;
    if (!ev->name || !ev->fmt_warning)
        return fail_code(ctx, -ENOMEM, "out of memory");
    snprintf(ev->fmt_warning, (size_t)n + 1, "%s:%u: warning: event '%.*s': %s%s", ctx->file, ctx->line,
             QUOTED(name), msg, tail);
    return 0;
}

/* Parses one event line (no newline, trimmed, not blank or comment) into ev. */
static int parse_event(const struct pctx *ctx, struct span line, struct st__event_decl *ev)
{
    if (memchr(line.p, '\0', line.n))
        return fail(ctx, "Malformed line: contains a NUL byte");
    const char *open = memchr(line.p, '(', line.n);
    if (!open)
        return fail(ctx, "Malformed event: missing '(' (expected '[disable] NAME(ARGS) \"FORMAT\"')");
    struct span name;
    int rc = parse_head(ctx, (struct span){line.p, (size_t)(open - line.p)}, &name, ev);
    if (rc)
        return rc;
    const char *args_p = open + 1;
    size_t rest_n = line.n - (size_t)(args_p - line.p);
    const char *close = memchr(args_p, ')', rest_n);
    if (!close)
        return fail(ctx, "Malformed event: missing ')' after the arguments");
    rc = parse_args(ctx, (struct span){args_p, (size_t)(close - args_p)}, ev);
    if (rc)
        return rc;
    struct span fmt = span_trim((struct span){close + 1, line.n - (size_t)(close + 1 - line.p)});
    if (fmt.n && fmt.p[0] != '"')
        return fail(ctx, "Malformed event: unexpected '%.*s' after ')' (a format starts with '\"')",
                    QUOTED(fmt));
    if (fmt.n) {
        rc = check_format(ctx, fmt);
        if (rc)
            return rc;
        ev->fmt = dup_range(fmt.p, fmt.n);
        if (!ev->fmt)
            return fail_code(ctx, -ENOMEM, "out of memory");
        char msg[sizeof ctx->err->message];
        if (st__events_match_conversions(ev, msg, sizeof msg)) {
            if (!(ctx->flags & ST_EVENTS_LENIENT))
                return fail(ctx, "%s", msg);
            return mark_unfit(ctx, name, ev, msg);
        }
    }
    ev->name = dup_range(name.p, name.n);
    if (!ev->name)
        return fail_code(ctx, -ENOMEM, "out of memory");
    return 0;
}

/* Parses one line; appends an event for event lines. */
static int parse_line(struct st__event_list *list, const struct pctx *ctx, struct span line, const char *file)
{
    line = span_trim(line);
    if (line.n == 0 || line.p[0] == '#')
        return 0;
    struct st__event_decl *ev = list_push(list);
    if (!ev)
        return fail_code(ctx, -ENOMEM, "out of memory");
    int rc = parse_event(ctx, line, ev);
    if (rc) {
        decl_free(ev);
        return rc;
    }
    ev->file = file;
    ev->line = ctx->line;
    ev->index = (unsigned)list->count;
    list->count++;
    return 0;
}

/* Undoes a failed parse: drops the events and the file name it added. */
static void rollback(struct st__event_list *list, size_t old_count, size_t old_nfiles)
{
    while (list->count > old_count)
        decl_free(&list->events[--list->count]);
    while (list->nfiles > old_nfiles)
        free(list->files[--list->nfiles]);
}

int st__events_parse_buffer(struct st__event_list *list, const char *name, const char *text, size_t len,
                           struct st__events_error *err)
{
    return st__events_parse_buffer_flags(list, name, text, len, 0, err);
}

int st__events_parse_buffer_flags(struct st__event_list *list, const char *name, const char *text, size_t len,
                                 unsigned flags, struct st__events_error *err)
{
    struct pctx ctx = {name ? name : "<input>", 0, err, flags};
    size_t old_count = list->count, old_nfiles = list->nfiles;
    const char *file = list_add_file(list, ctx.file);
    if (!file)
        return fail_code(&ctx, -ENOMEM, "out of memory");
    int rc = 0;
    size_t pos = 0;
    uint64_t version;
    if (st__fmt_is_header((const uint8_t *)text, len, &version)) {
        /* A trace given where its trace-events file belongs: say so, not "Malformed event" at line 1. */
        rc = fail_code(&ctx, -EINVAL, "is a trace file (format version %llu), not a trace-events file",
                       (unsigned long long)version);
        if (err)
            err->subject = true;
        rollback(list, old_count, old_nfiles);
        return rc;
    }
    while (pos < len) {
        ctx.line++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        if (!nl) {
            rc = fail(&ctx, "does not end with a new line");
            break;
        }
        rc = parse_line(list, &ctx, (struct span){text + pos, (size_t)(nl - (text + pos))}, file);
        if (rc)
            break;
        pos = (size_t)(nl - text) + 1;
    }
    if (rc) {
        rollback(list, old_count, old_nfiles);
        return rc;
    }
    if (list->count != old_count)
        index_free(list); /* stale now; st__events_find() falls back to a scan */
    return 0;
}

/* Reads a whole file into a malloc'ed buffer; 0 or -errno. */
static int read_all(const char *path, char **out, size_t *out_len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    int rc = buf ? 0 : -ENOMEM;
    while (rc == 0) {
        if (len == cap) {
            char *p = realloc(buf, cap * 2);
            if (!p) {
                rc = -ENOMEM;
                break;
            }
            buf = p;
            cap *= 2;
        }
        errno = 0;
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f))
                rc = -(errno ? errno : EIO); /* a directory: EISDIR, said so */
            break;
        }
    }
    fclose(f);
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
    *out_len = len;
    return 0;
}

int st__events_parse_file(struct st__event_list *list, const char *path, struct st__events_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = read_all(path, &buf, &len);
    if (rc) {
        struct pctx ctx = {path, 0, err, 0};
        return fail_code(&ctx, rc, "%s", strerror(-rc));
    }
    rc = st__events_parse_buffer(list, path, buf, len, err);
    free(buf);
    return rc;
}

/* ---- names: check and index --------------------------------------------- */

static uint64_t hash_name(const char *s, size_t n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* Exact comparison with a counted name (which may hold NUL bytes). */
static bool name_is(const struct st__event_decl *ev, const char *name, size_t len)
{
    return strlen(ev->name) == len && memcmp(ev->name, name, len) == 0;
}

/*
 * Builds a name index of the list's events; a repeated name keeps its first
 * declaration. When dup_first is not NULL (and *dup_first is SIZE_MAX), the
 * positions of the first repeated pair are stored there. 0 or -ENOMEM.
 */
static int index_build(const struct st__event_list *list, struct name_index *ix, size_t *dup_first,
                       size_t *dup_second)
{
    size_t cap = 16;
    while (cap < list->count * 2)
        cap *= 2;
    ix->slots = calloc(cap, sizeof *ix->slots);
    if (!ix->slots)
        return -ENOMEM;
    ix->mask = cap - 1;
    for (size_t i = 0; i < list->count; i++) {
        const char *name = list->events[i].name;
        size_t len = strlen(name);
        size_t s = (size_t)hash_name(name, len) & ix->mask;
        while (ix->slots[s]) {
            size_t other = ix->slots[s] - 1;
            if (name_is(&list->events[other], name, len)) {
                if (dup_first && *dup_first == SIZE_MAX) {
                    *dup_first = other;
                    *dup_second = i;
                }
                break; /* keep the first declaration */
            }
            s = (s + 1) & ix->mask;
        }
        if (!ix->slots[s])
            ix->slots[s] = (uint32_t)(i + 1);
    }
    return 0;
}

int st__events_check(const struct st__event_list *list, struct st__events_error *err)
{
    struct name_index ix;
    size_t first = SIZE_MAX, second = SIZE_MAX;
    struct pctx ctx = {"", 0, err, 0};
    if (list->count > UINT32_MAX - 1)
        return fail_code(&ctx, -E2BIG, "too many events");
    if (index_build(list, &ix, &first, &second))
        return fail_code(&ctx, -ENOMEM, "out of memory");
    free(ix.slots);
    if (first == SIZE_MAX)
        return 0;
    const struct st__event_decl *a = &list->events[first], *b = &list->events[second];
    ctx.file = b->file;
    ctx.line = b->line;
    return fail(&ctx, "Duplicate event name '%s' (first declared at %s:%u)", b->name, a->file, a->line);
}

int st__events_build_index(struct st__event_list *list)
{
    if (list->count > UINT32_MAX - 1)
        return -E2BIG;
    struct name_index *ix = malloc(sizeof *ix);
    if (!ix)
        return -ENOMEM;
    if (index_build(list, ix, NULL, NULL)) {
        free(ix);
        return -ENOMEM;
    }
    index_free(list);
    list->index = ix;
    return 0;
}

/* Puts event position i into an index with room for it (a name already there keeps its first position). */
static void index_put(const struct st__event_list *list, struct name_index *ix, size_t i)
{
    const char *name = list->events[i].name;
    size_t len = strlen(name);
    size_t s = (size_t)hash_name(name, len) & ix->mask;
    while (ix->slots[s]) {
        if (name_is(&list->events[ix->slots[s] - 1], name, len))
            return;
        s = (s + 1) & ix->mask;
    }
    ix->slots[s] = (uint32_t)(i + 1);
}

void st__events_pop(struct st__event_list *list)
{
    if (list->count == 0)
        return;
    decl_free(&list->events[--list->count]);
    index_free(list); /* st__events_add_line() makes it anew */
}

int st__events_add_line(struct st__event_list *list, const char *file, unsigned line, const char *text, size_t len,
                       struct st__events_error *err)
{
    struct pctx ctx = {file, line, err, ST_EVENTS_LENIENT}; /* a reader's: as QEMU's reader takes them */
    size_t old_count = list->count, old_nfiles = list->nfiles;
    const char *stored = list->nfiles && !strcmp(list->files[list->nfiles - 1], file) ? list->files[list->nfiles - 1]
                                                                                        : list_add_file(list, file);
    if (!stored || list->count >= UINT32_MAX - 1)
        return fail_code(&ctx, -ENOMEM, "out of memory");
    int rc = parse_line(list, &ctx, (struct span){text, len}, stored);
    if (rc == 0 && list->count == old_count)
        rc = fail(&ctx, "declares no event");
    if (rc == 0 && (!list->index || list->count * 2 > ((struct name_index *)list->index)->mask + 1))
        rc = st__events_build_index(list) ? fail_code(&ctx, -ENOMEM, "out of memory") : 0; /* doubles, or makes it */
    else if (rc == 0)
        index_put(list, list->index, list->count - 1);
    if (rc)
        rollback(list, old_count, old_nfiles);
    return rc;
}

const struct st__event_decl *st__events_find(const struct st__event_list *list, const char *name, size_t name_len)
{
    const struct name_index *ix = list->index;
    if (!ix) {
        for (size_t i = 0; i < list->count; i++)
            if (name_is(&list->events[i], name, name_len))
                return &list->events[i];
        return NULL;
    }
    for (size_t s = (size_t)hash_name(name, name_len) & ix->mask; ix->slots[s]; s = (s + 1) & ix->mask) {
        const struct st__event_decl *ev = &list->events[ix->slots[s] - 1];
        if (name_is(ev, name, name_len))
            return ev;
    }
    return NULL;
}
