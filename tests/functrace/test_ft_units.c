/*
 * Unit tests of libsimpletrace-func's pure parts: the record encoding
 * (against the bytes of a real uftrace 0.13 recording), the choice of
 * clock, st_functrace_get_stats()'s struct_size rule, the filter's glob
 * matching, the command line in info, and the .sym line format.
 */
#include "tap.h"

#include "clock.h"
#include "elfsym.h"
#include "ft.h"
#include "uftrace_format.h"
#include "symfile.h"
#include "uftrace_write.h"
#include <simpletrace/functrace.h>

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

static void test_record(void)
{
    /* uftrace 0.13, -finstrument-functions, entry of main (spec section 6). */
    static const unsigned char bytes[16] = {0xa7, 0x4a, 0xbb, 0x90, 0x33, 0x00, 0x00, 0x00,
                                            0x28, 0x00, 0x71, 0x52, 0xc5, 0x53, 0xc0, 0x55};
    uint64_t w[2] = {0, 0};
    /* Recorded on x86-64: the words are little-endian bytes, whatever this machine's order. */
    for (int i = 7; i >= 0; i--) {
        w[0] = w[0] << 8 | bytes[i];
        w[1] = w[1] << 8 | bytes[8 + i];
    }
    is_u64(w[0], 0x3390bb4aa7ull, "record: time word of the reference record");
    is_u64(st__uft_rec_data(ST_UFT_REC_ENTRY, 0, 0x55c053c55271ull), w[1],
           "record: ENTRY depth 0 of 0x55c053c55271 encodes to the reference bytes");
    is_int(st__uft_rec_type(w[1]), ST_UFT_REC_ENTRY, "record: decoded type");
    is_int(st__uft_rec_magic(w[1]), 5, "record: decoded magic");
    is_int(st__uft_rec_depth(w[1]), 0, "record: decoded depth");
    is_u64(st__uft_rec_addr(w[1]), 0x55c053c55271ull, "record: decoded address");
    is_int(st__uft_rec_more(w[1]), 0, "record: more bit clear");

    uint64_t x = st__uft_rec_data(ST_UFT_REC_EXIT, 1023, 0x7fffffffffffull);
    ok(st__uft_rec_type(x) == ST_UFT_REC_EXIT && st__uft_rec_depth(x) == 1023 && st__uft_rec_addr(x) == 0x7fffffffffffull,
       "record: EXIT, largest depth and user address round-trip");
    x = st__uft_rec_data(ST_UFT_REC_EXIT, 1024 + 5, 0xffff123456789abcull);
    ok(st__uft_rec_depth(x) == 5 && st__uft_rec_addr(x) == 0x123456789abcull && st__uft_rec_magic(x) == 5,
       "record: depth keeps its low 10 bits, address its low 48, magic untouched");
    x = st__uft_rec_data(ST_UFT_REC_LOST, 3, 77);
    ok(st__uft_rec_type(x) == ST_UFT_REC_LOST && st__uft_rec_addr(x) == 77, "record: LOST carries the count");
    is_int(ST_UFT_REC_SIZE, 16, "record: 16 bytes");
}

/* The tracer's use of the clock module (its conversion is tested in tests/common). */
static void test_clock(void)
{
    ok(!st__ft_clock_choose("monotonic"), "clock: SIMPLETRACE_FUNC_CLOCK=monotonic is honoured");
    ok(st__ft_clock_choose(ST_CLOCK_COUNTER) == ST_CLOCK_HAVE_COUNTER &&
           st__ft_clock_choose("counter") == ST_CLOCK_HAVE_COUNTER,
       "clock: SIMPLETRACE_FUNC_CLOCK=%s or counter forces the counter where it exists", ST_CLOCK_COUNTER);
    ok(st__ft_clock_choose(NULL) == st__clock_counter_usable() && st__ft_clock_choose("") == st__clock_counter_usable() &&
           st__ft_clock_choose("bogus") == st__clock_counter_usable(),
       "clock: unset, empty or unknown: the TSC exactly when usable");

    /* Real clock, as a pass does it: a raw time taken between two knots converts to CLOCK_MONOTONIC. */
    bool tsc = st__ft_clock_choose(NULL);
    diag("clock source here: %s", tsc ? "TSC" : "CLOCK_MONOTONIC");
    struct st__clock_conv cv;
    st__clock_conv_init(&cv, tsc, st__clock_sample(tsc, NULL));
    uint64_t mid_raw = st__ft_raw(tsc), mid_ns = st__ft_mono_ns();
    struct timespec ts = {0, 3000000};
    nanosleep(&ts, NULL);
    st__clock_conv_update(&cv);
    ok(!tsc || cv.nknots == 2, "clock: the first update adds a knot");
    long long diff = (long long)st__clock_conv(&cv, mid_raw) - (long long)mid_ns;
    ok(diff > -20000 && diff < 20000, "clock: a raw time converts to CLOCK_MONOTONIC within 20 us (%lld ns)", diff);
    uint64_t a = st__ft_mono_ns(), b = st__clock_mono_ns();
    ok(b >= a && b - a < 1000000000u, "clock: the out-of-line read is CLOCK_MONOTONIC");
}

/* struct_size (api.h): too small is refused, larger works, bytes beyond the known fields stay untouched. */
static void test_stats_size(void)
{
    const size_t first = offsetof(struct st_functrace_stats, write_error) + sizeof(int);
    struct {
        struct st_functrace_stats s;
        unsigned char later[24]; /* fields a later release might add */
    } big;
    struct st_functrace_stats s;
    bool untouched = true;

    is_int(st_functrace_get_stats(NULL), -EINVAL, "stats: NULL is -EINVAL");
    memset(&s, 0xaa, sizeof s);
    s.struct_size = 0;
    is_int(st_functrace_get_stats(&s), -EINVAL, "stats: struct_size 0 is -EINVAL");
    s.struct_size = (uint32_t)first - 1;
    is_int(st_functrace_get_stats(&s), -EINVAL, "stats: struct_size one below the first release's is -EINVAL");
    ok(s.written == UINT64_C(0xaaaaaaaaaaaaaaaa) && s.write_error == (int)0xaaaaaaaa,
       "stats: a refused call writes nothing");

    s.struct_size = (uint32_t)first;
    is_int(st_functrace_get_stats(&s), 0, "stats: the first release's size works");
    ok(s.written == 0 && s.lost == 0 && s.threads == 0 && s.write_error == 0,
       "stats: every field written (tracing is off here: all zero)");

    memset(&big, 0xaa, sizeof big);
    big.s.struct_size = sizeof big;
    is_int(st_functrace_get_stats(&big.s), 0, "stats: a larger struct_size than known works");
    ok(big.s.written == 0 && big.s.write_error == 0, "stats: known fields written in the larger structure");
    for (size_t i = 0; i < sizeof big.later; i++)
        untouched &= big.later[i] == 0xaa;
    ok(untouched, "stats: bytes beyond the known fields untouched");
    is_int(big.s.struct_size, sizeof big, "stats: struct_size itself untouched");
}

static void test_glob(void)
{
    ok(st__ft_glob_match("fib", "fib"), "glob: literal");
    ok(!st__ft_glob_match("fib", "fibo"), "glob: whole name only");
    ok(st__ft_glob_match("f*", "fib") && st__ft_glob_match("*b", "fib") && st__ft_glob_match("*", ""),
       "glob: star at either end, alone");
    ok(st__ft_glob_match("a*b*c", "axxbyyc") && !st__ft_glob_match("a*b*c", "axxbyy"), "glob: several stars");
    ok(st__ft_glob_match("f?b", "fib") && !st__ft_glob_match("f?b", "fb"), "glob: question mark is one char");
    ok(st__ft_glob_match("*_leaves", "sum_leaves") && st__ft_glob_match("*a*a", "banana"),
       "glob: backtracking");
}

/* The cmdline line of info (uftrace_write.c, escaped by json_escape.h), after "cmdline:". */
static char *info_cmdline(const char *cmdline)
{
    struct st__uft_info info = {.cmdline = cmdline};
    char *buf = NULL, *line = NULL, *start, *end;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);

    if (!out)
        return NULL;
    st__uft_info_write(out, &info);
    fclose(out);
    start = len > ST_UFT_INFO_HEADER_SIZE ? strstr(buf + ST_UFT_INFO_HEADER_SIZE, "cmdline:") : NULL;
    if (start && (end = strchr(start, '\n')) != NULL)
        line = strndup(start + 8, (size_t)(end - start - 8));
    free(buf);
    return line;
}

/* True when s is whole escapes and whole UTF-8 characters (what a cut may leave). */
static bool whole_units(const char *s)
{
    for (size_t i = 0, n = strlen(s); i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t u = c == '\\' ? (s[i + 1] == 'u' ? 6 : 2) : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        if (c >= 0x80 && c < 0xc0)
            return false; /* a character cut in the middle */
        if (i + u > n)
            return false;
        i += u;
    }
    return true;
}

static void test_cmdline(void)
{
    char *line, *big = malloc(5001);

    line = info_cmdline("prog \"q\" a\\b\n\r\t\x01 caf\xc3\xa9 \xff\x7f");
    is_str(line, "prog \\\"q\\\" a\\\\b\\n\\r\\t\\u0001 caf\xc3\xa9 \\u00ff\x7f",
           "cmdline: JSON-escaped (json_escape.h rules), on one line");
    free(line);
    line = info_cmdline(NULL);
    is_str(line, "", "cmdline: NULL writes an empty line");
    free(line);

    memset(big, 'a', 5000);
    big[5000] = '\0';
    line = info_cmdline(big);
    is_int(line ? strlen(line) : 0, ST_UFT_CMDLINE_MAX - 1, "cmdline: plain text cut just below the cap");
    free(line);
    for (size_t i = 0; i + 2 <= 5000; i += 2)
        memcpy(big + i, "\xc3\xa9", 2);
    line = info_cmdline(big);
    ok(line && strlen(line) < ST_UFT_CMDLINE_MAX && strlen(line) >= ST_UFT_CMDLINE_MAX - 3 && whole_units(line),
       "cmdline: UTF-8 text cut between characters, below the cap (%zu bytes)", line ? strlen(line) : 0);
    free(line);
    big[0] = 'x';
    memset(big + 1, '\x01', 4999);
    line = info_cmdline(big);
    ok(line && strlen(line) == 1 + 6 * ((ST_UFT_CMDLINE_MAX - 2) / 6) && whole_units(line),
       "cmdline: escapes never cut in the middle (%zu bytes)", line ? strlen(line) : 0);
    free(line);
    free(big);
}

static void test_symfile(void)
{
    /* Two adjacent functions, a gap, a last one; base 0x400000 (non-PIE). */
    char names[] = "first\0second\0third";
    struct st__elf_func funcs[] = {
        {.addr = 0x401000, .size = 0x10, .name = 0},
        {.addr = 0x401010, .size = 0x20, .name = 6},
        {.addr = 0x401100, .size = 0x8, .name = 13},
    };
    struct st__elf_syms syms = {.first_load = 0x400000, .funcs = funcs, .nfuncs = 3, .names = names};
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    int n = st__symfile_write(out, &syms, 4096);
    fclose(out);
    is_int(n, 3, "symfile: three functions written");
    is_str(buf,
           "0000000000001000 T first\n"
           "0000000000001010 T second\n"
           "0000000000001030 ? __func_end\n"
           "0000000000001100 T third\n"
           "0000000000001108 ? __sym_end\n",
           "symfile: 0.13 format, relative to the first mapping, end markers where needed");
    free(buf);
}

int main(void)
{
    test_record();
    test_clock();
    test_stats_size();
    test_glob();
    test_cmdline();
    test_symfile();
    return done_testing();
}
