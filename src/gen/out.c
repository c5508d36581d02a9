/*
 * The in-memory output of a generation run (a growable buffer that counts
 * lines for #line). Emitters append to it without checking for errors; an
 * allocation failure is remembered and the driver discards the whole
 * text, so nothing partial is ever written.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gen.h"

void st__out_init(struct st__out *out)
{
    memset(out, 0, sizeof *out);
    out->line = 1;
}

void st__out_free(struct st__out *out)
{
    st__growbuf_free(&out->text);
    st__out_init(out);
}

/* Appends n bytes, counting the newlines in them. */
static void append(struct st__out *out, const char *s, size_t n)
{
    st__growbuf_put(&out->text, s, n);
    for (size_t i = 0; i < n; i++)
        out->line += s[i] == '\n';
}

void st__out_printf(struct st__out *out, const char *fmt, ...)
{
    size_t at = out->text.len;
    va_list ap;

    va_start(ap, fmt);
    st__growbuf_vprintf(&out->text, fmt, ap);
    va_end(ap);
    for (size_t i = at; i < out->text.len; i++)
        out->line += out->text.data[i] == '\n';
}

void st__out_c_escaped(struct st__out *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            st__out_printf(out, "\\%c", c);
        else if (c == '?')
            st__out_printf(out, "\\?"); /* never part of a trigraph */
        else if (c < 0x20 || c == 0x7f)
            st__out_printf(out, "\\%03o", c); /* octal stops after 3 digits, unlike \x */
        else
            append(out, (const char *)&c, 1);
    }
}

/* Keywords of C++ that are not C keywords: valid argument names in C (QEMU uses `new`). */
static const char *const cxx_keywords[] = {
    "alignas",   "alignof",      "and",        "and_eq",     "asm",         "bitand",           "bitor",
    "catch",     "char8_t",      "char16_t",   "char32_t",   "class",       "co_await",         "co_return",
    "co_yield",  "compl",        "concept",    "consteval",  "constexpr",   "constinit",        "const_cast",
    "decltype",  "delete",       "dynamic_cast", "explicit", "export",      "false",            "friend",
    "mutable",   "namespace",    "new",        "noexcept",   "not",         "not_eq",           "nullptr",
    "operator",  "or",           "or_eq",      "private",    "protected",   "public",           "reinterpret_cast",
    "requires",  "static_assert", "static_cast", "template", "this",        "thread_local",     "throw",
    "true",      "try",          "typeid",     "typename",   "using",       "virtual",          "wchar_t",
    "xor",       "xor_eq",
};

static bool is_cxx_keyword(const char *s)
{
    for (size_t i = 0; i < sizeof cxx_keywords / sizeof cxx_keywords[0]; i++)
        if (strcmp(s, cxx_keywords[i]) == 0)
            return true;
    return false;
}

void st__out_param(struct st__out *out, const struct st__arg *arg)
{
    /* The parser reserves st__ for generated names, so this cannot collide. */
    st__out_printf(out, is_cxx_keyword(arg->name) ? "st__%s" : "%s", arg->name);
}

void st__out_arg_decl(struct st__out *out, const struct st__arg *arg, bool cxx_safe)
{
    size_t n = strlen(arg->type);
    st__out_printf(out, "%s%s", arg->type, n && arg->type[n - 1] == '*' ? "" : " ");
    if (cxx_safe)
        st__out_param(out, arg);
    else
        st__out_printf(out, "%s", arg->name);
}

void st__out_upper(struct st__out *out, const char *name)
{
    for (; *name; name++) {
        char c = *name >= 'a' && *name <= 'z' ? (char)(*name - 'a' + 'A') : *name;
        append(out, &c, 1);
    }
}
