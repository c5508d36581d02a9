/*
 * A small TAP producer for the tests: each test program prints "ok N - what"
 * lines and a plan, and exits non-zero if anything failed. Meson reads it
 * with protocol 'tap'.
 */
#ifndef ST_TEST_TAP_H
#define ST_TEST_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap__count, tap__failed;

static inline int tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;
    char text[4096];
    printf("%sok %d - ", cond ? "" : "not ", ++tap__count);
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* A description quoting a message may hold newlines: the lines after
     * the first become TAP comments, so the harness reads them as such. */
    for (const char *c = text; *c; c++) {
        if (*c == '\n' && c[1])
            fputs("\n# ", stdout);
        else if (*c != '\n')
            putchar(*c);
    }
    printf("\n");
    fflush(stdout);
    if (!cond)
        tap__failed++;
    return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __VA_ARGS__)

#define is_int(got, want, ...)                                                              \
    do {                                                                                    \
        long long g__ = (long long)(got), w__ = (long long)(want);                          \
        if (!ok(g__ == w__, __VA_ARGS__))                                                   \
            printf("#   got %lld, want %lld (%s:%d)\n", g__, w__, __FILE__, __LINE__);     \
    } while (0)

#define is_u64(got, want, ...)                                                              \
    do {                                                                                    \
        unsigned long long g__ = (unsigned long long)(got), w__ = (unsigned long long)(want); \
        if (!ok(g__ == w__, __VA_ARGS__))                                                   \
            printf("#   got %llu, want %llu (%s:%d)\n", g__, w__, __FILE__, __LINE__);     \
    } while (0)

#define is_str(got, want, ...)                                                              \
    do {                                                                                    \
        const char *g__ = (got), *w__ = (want);                                             \
        if (!ok(g__ && w__ && strcmp(g__, w__) == 0, __VA_ARGS__))                          \
            printf("#   got  \"%s\"\n#   want \"%s\" (%s:%d)\n", g__ ? g__ : "(null)",      \
                   w__ ? w__ : "(null)", __FILE__, __LINE__);                               \
    } while (0)

#define diag(...) (printf("# "), printf(__VA_ARGS__), printf("\n"))

/* Prints the plan; returns the exit status for main(). */
static inline int done_testing(void)
{
    printf("1..%d\n", tap__count);
    return tap__failed ? 1 : 0;
}

#endif
