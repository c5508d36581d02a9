/*
 * The portable program (tests/e2e/cross_traces_test.py): traces every
 * event of trace-events, each argument kind at the edges of its type and
 * a few hundred records of seeded mixed values, from the main thread and
 * a second one, and prints on stdout, one JSON object per line, what it
 * traced: {"event": NAME, "args": [VALUES]}, integers as the unsigned
 * 64-bit value a record stores, strings as they were (null: a NULL
 * pointer). Cross-built for aarch64 and s390x and run under qemu-user,
 * its trace is read on the build machine and compared with these lines.
 * Usage: portable [RECORDS]   (SIMPLETRACE says where the trace goes)
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "portable_trace.h"

/* Output of both threads, one line at a time. */
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

/* One argument as printed: an integer (u), a string (s) or NULL (n). */
struct arg {
    char kind;
    uint64_t u;
    const char *s;
};

#define U(v) ((struct arg){'u', (uint64_t)(v), NULL})
#define S(v) ((struct arg){(v) ? 's' : 'n', 0, (v)})

/* The string as a JSON string: bytes outside printable ASCII as \u00XX (the test reads them as latin-1). */
static void put_json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

/* Prints what one trace call recorded. */
static void said(const char *event, int n, const struct arg *a)
{
    pthread_mutex_lock(&out_lock);
    printf("{\"event\": \"%s\", \"args\": [", event);
    for (int i = 0; i < n; i++) {
        if (i)
            fputs(", ", stdout);
        if (a[i].kind == 'u')
            printf("%" PRIu64, a[i].u);
        else if (a[i].kind == 's')
            put_json_string(a[i].s);
        else
            fputs("null", stdout);
    }
    puts("]}");
    pthread_mutex_unlock(&out_lock);
}

#define SAID(event, ...)                                                                                      \
    do {                                                                                                       \
        const struct arg said_args[] = {__VA_ARGS__};                                                          \
        said(event, (int)(sizeof said_args / sizeof said_args[0]), said_args);                                 \
    } while (0)

/* A small seeded generator (xorshift64*): the same values on every machine. */
static uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

static const char *const names[] = {"alpha", "", "b\xc3\xa9ta", "gamma-gamma-gamma-gamma", "\x01\x7f\xff"};

/* Seeded records of mixed kinds; seed tells the threads apart. */
static void mixed(uint64_t seed, uint64_t count)
{
    uint64_t s = seed;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t r = next(&s);
        const char *name = names[r % 5];
        int32_t delta = (int32_t)(uint32_t)(r >> 8);
        uint16_t port = (uint16_t)(r >> 40);
        const char *tail = (r >> 20) & 1 ? "tail" : NULL;
        trace_pt_mixed(r, name, delta, port, tail);
        SAID("pt_mixed", U(r), S(name), U((int64_t)delta), U(port), S(tail));
    }
}

static void *second_thread(void *arg)
{
    mixed(UINT64_C(0x9e3779b97f4a7c15), *(uint64_t *)arg);
    return NULL;
}

int main(int argc, char **argv)
{
    uint64_t count = argc > 1 ? strtoull(argv[1], NULL, 10) : 200;
    const uint16_t one = 1;
    int big = *(const unsigned char *)&one == 0;
    const char *volatile null_string = NULL; /* unknown to the compiler: no -Wformat-overflow */
    static int some_int;
    pthread_t t;

#if defined(__aarch64__)
    const char *arch = "aarch64";
#elif defined(__s390x__)
    const char *arch = "s390x";
#elif defined(__x86_64__)
    const char *arch = "x86_64";
#else
    const char *arch = "other";
#endif
    trace_pt_start(arch, big);
    SAID("pt_start", S(arch), U(big));
    trace_pt_s8(INT8_MIN, INT8_MAX, UINT8_MAX);
    SAID("pt_s8", U((int64_t)INT8_MIN), U(INT8_MAX), U(UINT8_MAX));
    trace_pt_s16(INT16_MIN, INT16_MAX, UINT16_MAX);
    SAID("pt_s16", U((int64_t)INT16_MIN), U(INT16_MAX), U(UINT16_MAX));
    trace_pt_s32(INT32_MIN, INT32_MAX, UINT32_MAX);
    SAID("pt_s32", U((int64_t)INT32_MIN), U(INT32_MAX), U(UINT32_MAX));
    trace_pt_s64(INT64_MIN, INT64_MAX, UINT64_MAX);
    SAID("pt_s64", U(INT64_MIN), U(INT64_MAX), U(UINT64_MAX));
    trace_pt_c(-7, 8u, -2L, 0xdeadbeefUL, -3LL, 18446744073709551615ULL, -300, 65000);
    SAID("pt_c", U((int64_t)-7), U(8u), U((int64_t)-2L), U(0xdeadbeefUL), U((int64_t)-3LL), U(18446744073709551615ULL),
         U((int64_t)-300), U(65000));
    trace_pt_sizes(SIZE_MAX, -1, (uintptr_t)0xffffffffffffULL, -42);
    SAID("pt_sizes", U(SIZE_MAX), U((int64_t)-1), U(0xffffffffffffULL), U((int64_t)-42));
    trace_pt_bool_char(true, false, 'A', 200, -56);
    SAID("pt_bool_char", U(1), U(0), U('A'), U(200), U((int64_t)-56));
    trace_pt_ptr(&some_int, NULL);
    SAID("pt_ptr", U((uintptr_t)&some_int), U(0));
    trace_pt_str("hello", "", "\x01\x02 \xfe\xff", null_string);
    SAID("pt_str", S("hello"), S(""), S("\x01\x02 \xfe\xff"), S(null_string));
    trace_pt_noargs();
    said("pt_noargs", 0, NULL);
    if (pthread_create(&t, NULL, second_thread, &count) != 0)
        return 1;
    mixed(42, count);
    pthread_join(t, NULL);
    trace_pt_end(2 * count + 12);
    SAID("pt_end", U(2 * count + 12));
    return 0;
}
