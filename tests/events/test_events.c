/*
 * Unit tests of the trace-events parser: what it builds (types, kinds,
 * signedness, sizes, properties, formats) and every error it reports.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "tap.h"

/* Parses text as file "t.te"; returns the parse result. */
static int parse(struct st__event_list *l, const char *text, struct st__events_error *err)
{
    return st__events_parse_buffer(l, "t.te", text, strlen(text), err);
}

/* Parses one event line and returns its (only) event, or NULL. */
static const struct st__event_decl *one(struct st__event_list *l, const char *text)
{
    struct st__events_error err;
    st__events_free(l);
    if (parse(l, text, &err) != 0) {
        char buf[2048];
        st__events_error_format(&err, buf, sizeof buf);
        diag("unexpected error: %s", buf);
        return NULL;
    }
    return l->count == 1 ? &l->events[0] : NULL;
}

/* Checks that one argument type is classified as expected. */
static void check_type(const char *decl_type, const char *norm, enum st__arg_kind kind, int is_signed, unsigned size)
{
    struct st__event_list l;
    st__events_init(&l);
    char line[256];
    snprintf(line, sizeof line, "ev(%s a)\n", decl_type);
    if (strchr(decl_type, '*') && decl_type[strlen(decl_type) - 1] == '*')
        snprintf(line, sizeof line, "ev(%sa)\n", decl_type);
    const struct st__event_decl *ev = one(&l, line);
    if (!ok(ev && ev->nargs == 1, "type '%s' parses", decl_type)) {
        st__events_free(&l);
        return;
    }
    const struct st__arg *a = &ev->args[0];
    is_str(a->type, norm, "'%s' normalised", decl_type);
    is_str(a->name, "a", "'%s' name", decl_type);
    is_int(a->kind, kind, "'%s' kind", decl_type);
    is_int(a->is_signed, is_signed, "'%s' signedness", decl_type);
    is_int(a->size, size, "'%s' size", decl_type);
    st__events_free(&l);
}

static void test_types(void)
{
    const enum st__arg_kind I = ST_ARG_INTEGER, P = ST_ARG_POINTER, S = ST_ARG_STRING;
    check_type("int", "int", I, 1, 4);
    check_type("unsigned", "unsigned", I, 0, 4);
    check_type("unsigned int", "unsigned int", I, 0, 4);
    check_type("signed", "signed", I, 1, 4);
    check_type("long", "long", I, 1, 8);
    check_type("unsigned long", "unsigned long", I, 0, 8);
    check_type("long long", "long long", I, 1, 8);
    check_type("unsigned long long int", "unsigned long long int", I, 0, 8);
    check_type("short", "short", I, 1, 2);
    check_type("unsigned short", "unsigned short", I, 0, 2);
    check_type("char", "char", I, 1, 1);
    check_type("unsigned char", "unsigned char", I, 0, 1);
    check_type("signed char", "signed char", I, 1, 1);
    check_type("bool", "bool", I, 0, 1);
    check_type("int8_t", "int8_t", I, 1, 1);
    check_type("uint8_t", "uint8_t", I, 0, 1);
    check_type("int16_t", "int16_t", I, 1, 2);
    check_type("uint16_t", "uint16_t", I, 0, 2);
    check_type("int32_t", "int32_t", I, 1, 4);
    check_type("uint32_t", "uint32_t", I, 0, 4);
    check_type("int64_t", "int64_t", I, 1, 8);
    check_type("uint64_t", "uint64_t", I, 0, 8);
    check_type("size_t", "size_t", I, 0, 8);
    check_type("ssize_t", "ssize_t", I, 1, 8);
    check_type("ptrdiff_t", "ptrdiff_t", I, 1, 8);
    check_type("uintptr_t", "uintptr_t", I, 0, 8);
    check_type("const int", "const int", I, 1, 4);
    check_type("const  char*", "const char *", S, 0, 8);
    check_type("char *", "char *", S, 0, 8);
    check_type("const char *", "const char *", S, 0, 8);
    check_type("char **", "char **", P, 0, 8);
    check_type("char * *", "char **", P, 0, 8);
    check_type("unsigned char *", "unsigned char *", P, 0, 8);
    check_type("const uint8_t *", "const uint8_t *", P, 0, 8);
    check_type("void *", "void *", P, 0, 8);
    check_type("const void*", "const void *", P, 0, 8);
    check_type("uint64_t *", "uint64_t *", P, 0, 8);
    check_type("char\t*", "char *", S, 0, 8);
}

/*
 * What each type's value means, decided once here for every reader: a bool
 * or a char by its words, whatever their order or a const, and `_Bool`
 * refused (not a type word tracetool allows).
 */
static void test_encodings(void)
{
    static const struct {
        const char *type;
        enum st__arg_enc enc;
        bool names_bool;
    } cases[] = {
        {"bool", ST__ENC_BOOL, true},          {"const bool", ST__ENC_BOOL, true},
        {"bool const", ST__ENC_BOOL, true},    {"char", ST__ENC_CHAR, false},
        {"const char", ST__ENC_CHAR, false},   {"unsigned char", ST__ENC_CHAR, false},
        {"char unsigned", ST__ENC_CHAR, false}, {"const signed char", ST__ENC_CHAR, false},
        {"int", ST__ENC_INTEGER, false},       {"const uint8_t", ST__ENC_INTEGER, false},
        {"int8_t", ST__ENC_INTEGER, false},    {"bool *", ST__ENC_POINTER, true},
        {"const bool *", ST__ENC_POINTER, true}, {"char **", ST__ENC_POINTER, false},
        {"const char *", ST__ENC_STRING, false}, {"char *", ST__ENC_STRING, false},
    };
    struct st__event_list l;
    st__events_init(&l);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[128];
        snprintf(line, sizeof line, "ev(%s a)\n", cases[i].type);
        const struct st__event_decl *ev = one(&l, line);
        ok(ev && ev->args[0].enc == cases[i].enc && ev->args[0].names_bool == cases[i].names_bool,
           "'%s': encoding %d, names bool %d", cases[i].type, (int)cases[i].enc, (int)cases[i].names_bool);
    }
    st__events_free(&l);
    struct st__events_error err;
    ok(parse(&l, "ev(_Bool a)\n", &err) == -EINVAL && strstr(err.message, "'_Bool' is not allowed"),
       "_Bool is refused, as tracetool refuses it: %s", err.message);
    st__events_free(&l);
}

static void test_shapes(void)
{
    struct st__event_list l;
    st__events_init(&l);
    const struct st__event_decl *ev = one(&l, "foo(void)\n");
    ok(ev && ev->nargs == 0 && !ev->disabled && ev->fmt == NULL, "void, no format");
    if (ev)
        is_str(ev->name, "foo", "name");

    ev = one(&l, "  disable   bar(int x) \"x %d\"  \r\n");
    ok(ev && ev->disabled && ev->nargs == 1, "disable property, leading blanks, CRLF");
    if (ev)
        is_str(ev->fmt, "\"x %d\"", "format kept, trailing blanks cut");

    ev = one(&l, "disable disable baz(void)\n");
    ok(ev && ev->disabled, "disable twice");

    ev = one(&l, "ten(int a1, int a2, int a3, int a4, int a5, int a6, int a7, int a8, int a9, int a10) "
                 "\"%d %d %d %d %d %d %d %d %d %d\"\n");
    ok(ev && ev->nargs == 10, "10 arguments");
    if (ev)
        is_str(ev->args[9].name, "a10", "10th argument name");

    ev = one(&l, "x(int a,void) \"%d\"\n");
    ok(ev && ev->nargs == 1, "a void item is dropped");

    ev = one(&l, "fmt(uint64_t v, const char *s, uint32_t n) \"v=0x%\"PRIx64\" s=\\\"%s\\\" %\" PRIu32 \"\"\n");
    if (ok(ev != NULL, "PRI macros, escaped quotes, empty literal"))
        is_str(ev->fmt, "\"v=0x%\"PRIx64\" s=\\\"%s\\\" %\" PRIu32 \"\"", "format verbatim");

    ev = one(&l, "m(int64_t a, uintptr_t b, uint8_t c, int16_t d) "
                 "\"%\" PRIdMAX \" %\" PRIXPTR \" %\" PRIo8 \" %\" PRIi16\n");
    ok(ev != NULL, "PRI sizes MAX, PTR, 8, 16 and conversions X o i");

    ev = one(&l, "u(const char *str) \"\xc3\xa9t\xc3\xa9 \\t \\x41 %s\"\n");
    ok(ev != NULL, "UTF-8 and escapes in the literal");

    st__events_free(&l);
    struct st__events_error err;
    const char *text = "# comment\n\n   \n\t# indented comment\na(void)\n\nb(int x)\n";
    ok(parse(&l, text, &err) == 0 && l.count == 2, "comments and blank lines skipped");
    if (l.count == 2) {
        is_int(l.events[0].line, 5, "line number of a");
        is_int(l.events[1].line, 7, "line number of b");
        is_int(l.events[1].index, 1, "index of b");
        is_str(l.events[1].file, "t.te", "file name kept");
    }
    ok(parse(&l, "c(void)\n", &err) == 0 && l.count == 3 && l.events[2].index == 2, "second file appends");
    is_int(l.nfiles, 2, "two files recorded");
    ok(parse(&l, "", &err) == 0 && l.count == 3, "empty file is fine");
    st__events_free(&l);
}

/* Parses one event line; its arguments' conversions must be convs ('-' for none). */
static void check_convs(const char *line, const char *convs, const char *what)
{
    struct st__event_list l;
    st__events_init(&l);
    const struct st__event_decl *ev = one(&l, line);
    char got[ST_MAX_ARGS + 1] = "";
    for (unsigned i = 0; ev && i < ev->nargs; i++)
        got[i] = ev->args[i].conv ? ev->args[i].conv : '-';
    if (ok(ev != NULL, "%s: accepted", what))
        is_str(got, convs, "%s: conversions", what);
    st__events_free(&l);
}

/* Formats that fit their arguments, as -Wformat sees them on LP64. */
static void test_conversions(void)
{
    check_convs("a(int i, uint64_t u, const char *s, void *p, size_t z) \"%d %\" PRIx64 \" %s %p %zu\"\n", "dxspu",
                "one of each kind");
    check_convs("a(int w, int x) \"[%*d]\"\n", "*d", "'*' width takes an int");
    check_convs("a(unsigned w, const char *s) \"%.*s\"\n", "*s", "'*' precision takes an unsigned int too");
    check_convs("a(int w1, uint64_t v, int w2, uint64_t e) \"0x%0*\" PRIx64 \"-0x%0*\"PRIx64\n", "*x*x",
                "QEMU's pflash: '*' widths before PRI macros");
    check_convs("a(uint64_t v, long l, unsigned long ul) \"%lx %ld %lu\"\n", "xdu", "l fits the 64-bit types (LP64)");
    check_convs("a(long long a, unsigned long long b) \"%lld %llx\"\n", "dx", "ll fits long long");
    check_convs("a(ssize_t a, ptrdiff_t b, int64_t c, uintptr_t d) \"%zd %td %jd %\" PRIxPTR\n", "ddd" "x",
                "z, t, j and PRIxPTR");
    check_convs("a(uint8_t a, int16_t b, int c, bool d) \"%hhx %hd %hhu %d\"\n", "xdud", "hh and h on int-sized types");
    check_convs("a(uint8_t a, uint16_t b, uint32_t c, int d) \"%\" PRIx8 \" %\" PRIu16 \" %\" PRIX32 \" %\" PRIi32\n",
                "xuXi", "narrow PRI macros on int-sized types");
    check_convs("a(uint32_t a, int b, char c) \"%d %u %c\"\n", "duc", "signedness is not checked, %c takes a char");
    check_convs("a(const char *s, char **v, unsigned char *b) \"%p %p %p\"\n", "ppp", "%p takes any pointer or string");
    check_convs("a(int a) \"100%% %d %%\"\n", "d", "%% takes nothing");
    check_convs("a(int a, int b) \"\\x25\" \"d \\045i\"\n", "di", "escaped '%' is a conversion, as for the compiler");
    check_convs("a(int a) \"\\\\%d\"\n", "d", "an escaped backslash before '%'");
    check_convs("a(int a, int b, int c, int d, int e) \"%-5d %+d %#x % d %'d\"\n", "ddxdd", "flags");
    check_convs("a(const char *s, int n) \"%-20.10s %05.3d\"\n", "sd", "width and precision");
    check_convs("a(int a) \"%\" \"d\"\n", "d", "a conversion across two literals");
    check_convs("a(int a)\n", "-", "no format: nothing to match");
    check_convs("a(void) \"x \" PRId64\n", "", "a PRI macro outside a conversion is text");
    check_convs("disable a(void *env, uint64_t va) \"env=%p va=0x%lx\"\n", "px", "QEMU's hppa (disabled) formats");
}

struct bad_case {
    const char *text;
    const char *message; /* expected "FILE:LINE: message" */
};

static const struct bad_case bad_cases[] = {
    {"frob foo(void)\n", "t.te:1: Unknown properties: frob"},
    {"tcg vcpu foo(void)\n", "t.te:1: Unknown properties: tcg, vcpu"},
    {"foo(struct bar *b)\n",
     "t.te:1: Argument type 'struct bar *' is not allowed: use standard C integer types, fixed-size integer "
     "types, 'const char *' or 'void *' for other pointers"},
    {"foo(float f)\n",
     "t.te:1: Argument type 'float' is not allowed: use standard C integer types, fixed-size integer "
     "types, 'const char *' or 'void *' for other pointers"},
    {"foo(int8_t long x)\n", "t.te:1: Argument type 'int8_t long' is not a valid C type"},
    {"foo(void x)\n", "t.te:1: Argument type 'void' is not a valid C type"},
    {"foo(short char x)\n", "t.te:1: Argument type 'short char' is not a valid C type"},
    {"foo(int a1, int a2, int a3, int a4, int a5, int a6, int a7, int a8, int a9, int a10, int a11)\n",
     "t.te:1: Too many arguments (at most 10)"},
    {"foo()\n", "t.te:1: Empty argument (did you forget to use 'void'?)"},
    {"foo(int a, )\n", "t.te:1: Empty argument (did you forget to use 'void'?)"},
    {"foo(int)\n", "t.te:1: Argument 'int' has no name (write 'TYPE NAME')"},
    {"foo(char *)\n", "t.te:1: Argument 'char *' has no name (write 'TYPE NAME')"},
    {"foo(unsigned int)\n", "t.te:1: Argument 'unsigned int' has no name ('int' is a C keyword)"},
    {"foo(int 1x)\n", "t.te:1: Argument 'int 1x' has an invalid name '1x'"},
    {"foo(int st__rec)\n", "t.te:1: Argument name 'st__rec' is reserved (the prefix st__ is for generated code)"},
    {"foo(int a, long a)\n", "t.te:1: Duplicate argument name 'a'"},
    {"foo\n", "t.te:1: Malformed event: missing '(' (expected '[disable] NAME(ARGS) \"FORMAT\"')"},
    {"foo(int a \"x\"\n", "t.te:1: Malformed event: missing ')' after the arguments"},
    {"foo (int a)\n", "t.te:1: Malformed event: no blank allowed between the event name and '('"},
    {"(int a)\n", "t.te:1: Malformed event: expected '[disable] NAME(ARGS) \"FORMAT\"'"},
    {"1foo(int a)\n", "t.te:1: Invalid event name '1foo' (must be a C identifier)"},
    {"foo-bar(int a)\n", "t.te:1: Invalid event name 'foo-bar'"},
    {"dis-able foo(int a)\n", "t.te:1: Malformed event: unexpected '-' before the event name"},
    {"foo(int a) garbage\n", "t.te:1: Malformed event: unexpected 'garbage' after ')' (a format starts with '\"')"},
    {"foo(int a) \"%m\"\n",
     "t.te:1: Event format '%m' is forbidden, pass the error as an explicit trace argument"},
    {"foo(int a) \"a %d\\n\"\n", "t.te:1: Event format must not contain a newline character ('\\n')"},
    {"foo(int a) \"a\\n %d\"\n", "t.te:1: Event format must not contain a newline character ('\\n')"},
    {"foo(int a) \"a %d\n", "t.te:1: Malformed format: unterminated string literal"},
    {"foo(int a) \"a %d\\\"\n", "t.te:1: Malformed format: unterminated string literal"},
    {"foo(int a) \"a\" x \"%d\"\n",
     "t.te:1: Malformed format: unexpected 'x' (only string literals and PRI macros)"},
    {"foo(int a) \"a %\" PRId128\n",
     "t.te:1: Malformed format: unexpected 'PRId128' (only string literals and PRI macros)"},
    {"foo(int a) \"a %\" PRIu64x\n",
     "t.te:1: Malformed format: unexpected 'PRIu64x' (only string literals and PRI macros)"},
    {"foo(int a) \"%d\" # trailing comment\n",
     "t.te:1: Malformed format: unexpected '#' (only string literals and PRI macros)"},
    {"a(void)\nfoo(int a) \"%d\"", "t.te:2: does not end with a new line"},
    {"# just a comment", "t.te:1: does not end with a new line"},
    {"foo(int a)\0 \"x\"\n", "t.te:1: Malformed line: contains a NUL byte"},
    {"\n\n# c\nfoo(long long long x)\n", "t.te:4: Argument type 'long long long' is not a valid C type"},
    /* formats against arguments: conversions.c */
    {"ev(int x) \"x %s\"\n", "t.te:1: Argument 1 'x' is int but '%s' wants a string"},
    {"ev(int a, unsigned char *b) \"%d %s\"\n",
     "t.te:1: Argument 2 'b' is unsigned char * but '%s' wants a string (only char * and const char * are recorded "
     "as strings)"},
    {"ev(const char *name) \"%d\"\n", "t.te:1: Argument 1 'name' is const char * but '%d' wants an integer (use '%s' "
                                      "for a string)"},
    {"ev(void *p) \"%lx\"\n", "t.te:1: Argument 1 'p' is void * but '%lx' wants an integer (use '%p' for a pointer)"},
    {"ev(uint64_t addr) \"%p\"\n",
     "t.te:1: Argument 1 'addr' is uint64_t but '%p' wants a pointer (use '%\"PRIx64\"' for an integer)"},
    {"ev(int x) \"%p\"\n", "t.te:1: Argument 1 'x' is int but '%p' wants a pointer (use '%x' for an integer)"},
    {"ev(int64_t v) \"%d\"\n", "t.te:1: Argument 1 'v' is int64_t but '%d' wants int (use '%\"PRId64\"')"},
    {"ev(int x) \"%ld\"\n", "t.te:1: Argument 1 'x' is int but '%ld' wants long (use '%d')"},
    {"ev(uint64_t v) \"%llx\"\n",
     "t.te:1: Argument 1 'v' is uint64_t but '%llx' wants unsigned long long (use '%\"PRIx64\"')"},
    {"ev(long long v) \"%lu\"\n", "t.te:1: Argument 1 'v' is long long but '%lu' wants unsigned long (use '%llu')"},
    {"ev(size_t n) \"%u\"\n", "t.te:1: Argument 1 'n' is size_t but '%u' wants unsigned int (use '%zu')"},
    {"ev(uint32_t n) \"%\" PRIu64\n", "t.te:1: Argument 1 'n' is uint32_t but '%\"PRIu64\"' wants uint64_t (use '%u')"},
    {"ev(uintptr_t p) \"%\" PRIx32\n",
     "t.te:1: Argument 1 'p' is uintptr_t but '%\"PRIx32\"' wants unsigned int (use '%\"PRIxPTR\"')"},
    {"ev(ptrdiff_t d) \"%hhd\"\n", "t.te:1: Argument 1 'd' is ptrdiff_t but '%hhd' wants int (use '%td')"},
    {"ev(int64_t c) \"%c\"\n", "t.te:1: Argument 1 'c' is int64_t but '%c' wants int"},
    {"ev(int x) \"%f\"\n", "t.te:1: Argument 1 'x' is int but '%f' wants a double"},
    {"ev(int *p) \"%n\"\n", "t.te:1: Format conversion '%n' is forbidden: it writes through its argument"},
    {"ev(int a) \"%d %d\"\n", "t.te:1: Format conversion '%d' needs argument 2, but the event has 1"},
    {"ev(void) \"%d\"\n", "t.te:1: Format conversion '%d' needs argument 1, but the event has none"},
    {"ev(int a) \"%*d\"\n", "t.te:1: Format conversion '%*d' needs argument 2, but the event has 1"},
    {"ev(int a, int b) \"%d\"\n", "t.te:1: Argument 2 'b' has no conversion: the format prints 1 of the 2 arguments"},
    {"ev(int a) \"\"\n", "t.te:1: Argument 1 'a' has no conversion: the format prints 0 of the 1 arguments"},
    {"ev(int a, int b) \"%d\\0%d\"\n",
     "t.te:1: Argument 2 'b' has no conversion: the format prints 1 of the 2 arguments"},
    {"ev(uint64_t w, int x) \"%*d\"\n", "t.te:1: Argument 1 'w' is uint64_t but the '*' of '%*d' wants int"},
    {"ev(const char *s, int x) \"%.*d\"\n", "t.te:1: Argument 1 's' is const char * but the '*' of '%.*d' wants int"},
    {"ev(int x) \"%y\"\n", "t.te:1: Unknown format conversion '%y'"},
    {"ev(int x) \"%5%\"\n", "t.te:1: Unknown format conversion '%5%'"},
    {"ev(int x) \"%\\t\"\n", "t.te:1: Unknown format conversion '%\\x09'"},
    {"ev(int x) \"%d %-0\"\n",
     "t.te:1: Incomplete format conversion '%-0' at the end of the format (a percent sign is written %%)"},
    {"ev(int x) \"%1$d\"\n", "t.te:1: Positional format conversion '%1$d' is not supported"},
    {"ev(const char *s) \"%ls\"\n", "t.te:1: Length modifier 'l' does not apply to '%ls'"},
    {"ev(long long x) \"%Ld\"\n", "t.te:1: Length modifier 'L' does not apply to '%Ld'"},
    {"ev(uint64_t x) \"%l\" PRIx64\n", "t.te:1: Length modifier 'l' does not apply to '%l\"PRIx64\"'"},
    {"ev(void *p) \"%zp\"\n", "t.te:1: Length modifier 'z' does not apply to '%zp'"},
};

/* Like parse() but with an explicit length, for inputs with NUL bytes. */
static int parse_len(struct st__event_list *l, const char *text, size_t len, struct st__events_error *err)
{
    return st__events_parse_buffer(l, "t.te", text, len, err);
}

static void test_errors(void)
{
    struct st__event_list l;
    st__events_init(&l);
    struct st__events_error err;
    ok(parse(&l, "keep(int a)\n", &err) == 0, "a first file parses");
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const struct bad_case *c = &bad_cases[i];
        size_t len = strlen(c->text);
        if (strstr(c->message, "NUL byte"))
            len += 1 + strlen(c->text + len + 1);
        memset(&err, 0, sizeof err);
        int rc = parse_len(&l, c->text, len, &err);
        char buf[2048];
        st__events_error_format(&err, buf, sizeof buf);
        is_int(rc, -EINVAL, "error %zu returns -EINVAL", i);
        is_str(buf, c->message, "error %zu message", i);
        ok(l.count == 1 && l.nfiles == 1 && strcmp(l.events[0].name, "keep") == 0, "error %zu: list unchanged", i);
    }
    st__events_free(&l);
}

/*
 * The readers' lenient parse: a format that does not fit its arguments is
 * kept and marked, with one warning naming FILE:LINE; every other error
 * stays one; the strict parse (the generator's) is unchanged.
 */
static void test_lenient(void)
{
    static const char text[] = "ok(int a) \"a %d\"\n"
                               "disable nh_never(int x) \"compiled out\"\n"
                               "odd(int x, const char *s) \"x %s\"\n";
    struct st__event_list l;
    struct st__events_error err;
    st__events_init(&l);
    is_int(st__events_parse_buffer(&l, "t.te", text, strlen(text), &err), -EINVAL, "strict: refused");
    is_int((int)l.count, 0, "strict: nothing kept");
    int rc = st__events_parse_buffer_flags(&l, "t.te", text, strlen(text), ST_EVENTS_LENIENT, &err);
    if (!ok(rc == 0 && l.count == 3, "lenient: all three events read")) {
        st__events_free(&l);
        return;
    }
    const struct st__event_decl *fit = &l.events[0], *never = &l.events[1], *odd = &l.events[2];
    ok(!fit->fmt_unfit && !fit->fmt_warning && fit->args[0].conv == 'd', "a fitting format: no mark, conv kept");
    ok(never->fmt_unfit && never->disabled && never->nargs == 1 && !strcmp(never->name, "nh_never") &&
           !strcmp(never->fmt, "\"compiled out\"") && never->line == 2,
       "no conversion for x: marked, otherwise the event as declared");
    is_str(never->fmt_warning,
           "t.te:2: warning: event 'nh_never': Argument 1 'x' has no conversion: the format prints 0 of the 1 "
           "arguments (read anyway, as QEMU's simpletrace.py reads it: its format is not used, the log format "
           "shows its arguments instead; simpletrace gen refuses it)",
           "its warning: FILE:LINE, the event, what does not fit");
    ok(odd->fmt_unfit && odd->args[0].conv == 0 && odd->args[1].conv == 0 && odd->args[1].kind == ST_ARG_STRING,
       "%%s of an int: marked, no conversion trusted (conv 0)");
    ok(odd->fmt_warning && strstr(odd->fmt_warning, "t.te:3: warning: event 'odd': Argument 1 'x' is int but '%s'"),
       "its warning names line 3: %s", odd->fmt_warning ? odd->fmt_warning : "(none)");
    static const char broken[] = "fine(int a)\nbad(int a \"x\"\n";
    rc = st__events_parse_buffer_flags(&l, "u.te", broken, strlen(broken), ST_EVENTS_LENIENT, &err);
    ok(rc == -EINVAL && err.line == 2 && l.count == 3, "lenient: a syntax error is still an error (list unchanged)");
    static const char percent_m[] = "e(int a) \"%m %d\"\n";
    rc = st__events_parse_buffer_flags(&l, "v.te", percent_m, strlen(percent_m), ST_EVENTS_LENIENT, &err);
    ok(rc == -EINVAL && strstr(err.message, "%m"), "lenient: %%m stays refused, as tracetool refuses it");
    st__events_free(&l);
}

static void test_check_and_find(void)
{
    struct st__event_list l;
    st__events_init(&l);
    struct st__events_error err;
    ok(st__events_parse_buffer(&l, "a.te", "x(void)\ny(int v)\n", 17, &err) == 0, "file a");
    ok(st__events_parse_buffer(&l, "b.te", "# c\nz(void)\n", 12, &err) == 0, "file b");
    is_int(st__events_check(&l, &err), 0, "no duplicates");
    ok(st__events_find(&l, "y", 1) == &l.events[1], "find without index (scan)");
    is_int(st__events_build_index(&l), 0, "index built");
    ok(st__events_find(&l, "zzz", 1) == &l.events[2], "find by counted name");
    ok(st__events_find(&l, "x", 1) == &l.events[0], "find x");
    ok(st__events_find(&l, "w", 1) == NULL, "absent name");
    ok(st__events_find(&l, "y\0", 2) == NULL, "counted name with NUL does not match");
    ok(st__events_find(&l, "", 0) == NULL, "empty name");
    ok(st__events_parse_buffer(&l, "c.te", "\n\ny(void)\n", 10, &err) == 0, "file c repeats y");
    ok(st__events_find(&l, "z", 1) == &l.events[2], "find after a later parse");
    is_int(st__events_check(&l, &err), -EINVAL, "duplicate found");
    char buf[2048];
    st__events_error_format(&err, buf, sizeof buf);
    is_str(buf, "c.te:3: Duplicate event name 'y' (first declared at a.te:2)", "duplicate message names both places");
    st__events_free(&l);

    /* Many events: the index must resolve collisions. */
    size_t n = 5000, len = 0;
    char *text = malloc(n * 32);
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(text + len, "event_%zu(int a)\n", i);
    ok(st__events_parse_buffer(&l, "big.te", text, len, &err) == 0 && l.count == n, "5000 events parse");
    is_int(st__events_check(&l, &err), 0, "5000 distinct names");
    is_int(st__events_build_index(&l), 0, "index of 5000");
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        char name[32];
        int k = sprintf(name, "event_%zu", i);
        const struct st__event_decl *ev = st__events_find(&l, name, (size_t)k);
        found += ev && ev->index == i;
    }
    is_int(found, n, "every event found by name");
    free(text);
    st__events_free(&l);
}

static void test_files(void)
{
    struct st__event_list l;
    st__events_init(&l);
    struct st__events_error err;
    char path[] = "/tmp/st-events-test-XXXXXX";
    int fd = mkstemp(path);
    const char text[] = "# file\nev_file(const char *s) \"%s\"\n";
    ok(fd >= 0 && write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1), "temp file written");
    close(fd);
    is_int(st__events_parse_file(&l, path, &err), 0, "parse_file");
    ok(l.count == 1 && l.events[0].line == 2 && strcmp(l.events[0].file, path) == 0, "event from file");
    unlink(path);
    is_int(st__events_parse_file(&l, path, &err), -ENOENT, "missing file is -ENOENT");
    char buf[2048];
    st__events_error_format(&err, buf, sizeof buf);
    ok(strstr(buf, path) == buf && strstr(buf, "No such file") != NULL, "I/O error names the file: %s", buf);
    is_int(l.count, 1, "list unchanged after I/O error");
    st__events_free(&l);
}

/* Arguments that a conversion of their event's format prints. */
static size_t count_printed_args(const struct st__event_list *l)
{
    size_t n = 0;
    for (size_t i = 0; i < l->count; i++)
        for (unsigned a = 0; a < l->events[i].nargs; a++)
            n += l->events[i].args[a].conv != 0;
    return n;
}

static void test_shared_fixtures(const char *shared)
{
    char path[4096];
    struct st__event_list l;
    struct st__events_error err;
    st__events_init(&l);
    snprintf(path, sizeof path, "%s/fixtures/qemu/trace-events-all", shared);
    is_int(st__events_parse_file(&l, path, &err), 0, "QEMU trace-events-all parses");
    is_int(l.count, 932, "932 events");
    is_int(st__events_check(&l, &err), 0, "no duplicates in trace-events-all");
    is_int(count_printed_args(&l), 1872, "every argument of trace-events-all has its conversion");
    st__events_free(&l);
    /* The system emulator's catalogue: every target, 15 disabled events (never compiled by QEMU). */
    snprintf(path, sizeof path, "%s/fixtures/qemu/trace-events-all.system-x86_64", shared);
    is_int(st__events_parse_file(&l, path, &err), 0, "QEMU trace-events-all.system-x86_64 parses");
    is_int(l.count, 6086, "6086 events");
    is_int(count_printed_args(&l), 13090, "every argument of the system catalogue has its conversion");
    st__events_free(&l);
    snprintf(path, sizeof path, "%s/fixtures/edge/trace-events", shared);
    is_int(st__events_parse_file(&l, path, &err), 0, "edge trace-events parses");
    const struct st__event_decl *ev = st__events_find(&l, "ev_ptrptr", 9);
    ok(ev && ev->args[0].kind == ST_ARG_POINTER && ev->args[1].kind == ST_ARG_STRING, "char ** pointer, const char* string");
    ev = st__events_find(&l, "ev_disabled", 11);
    ok(ev && ev->disabled, "disabled event");
    st__events_free(&l);
}

int main(int argc, char **argv)
{
    test_types();
    test_encodings();
    test_shapes();
    test_conversions();
    test_errors();
    test_lenient();
    test_check_and_find();
    test_files();
    if (argc > 1)
        test_shared_fixtures(argv[1]);
    return done_testing();
}
