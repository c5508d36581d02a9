/*
 * The JSON string escaper (src/common/json_escape.h): one check per rule
 * of the header, the three wrappers, the ST__JSON_ESCAPED_MAX bound, and
 * (when python3 is given) a few thousand random byte strings whose escaped
 * form python's strict json parser must read back as their expected text:
 * valid UTF-8 as itself, every other byte as its Latin-1 character.
 *
 *   test_json_escape [PYTHON3]
 */
#include "tap.h"

#include "json_escape.h"

#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

/* The escaped body of n bytes of s, NUL-terminated (static storage). */
static const char *esc_n(const char *s, size_t n)
{
    static char out[4096];
    char *end = st__json_escape(out, (const uint8_t *)s, n);

    *end = '\0';
    return out;
}

#define ESC(lit) esc_n(lit, sizeof(lit) - 1)

static void test_rules(void)
{
    is_str(ESC(""), "", "empty input, empty output");
    is_str(ESC("plain text 0-9 ~!@#$%^&*()"), "plain text 0-9 ~!@#$%^&*()", "printable ASCII copied");
    is_str(ESC("say \"hi\""), "say \\\"hi\\\"", "quotes escaped");
    is_str(ESC("a\\b"), "a\\\\b", "backslash escaped");
    is_str(ESC("\n\r\t"), "\\n\\r\\t", "newline, CR and tab use their short escapes");
    is_str(ESC("\x01\x08\x0c\x1f"), "\\u0001\\u0008\\u000c\\u001f",
           "other control bytes as \\u00XX (no \\b or \\f short forms)");
    is_str(ESC("a\0b"), "a\\u0000b", "a NUL byte inside the length is escaped");
    is_str(ESC("\x7f"), "\x7f", "0x7f copied");
    is_str(ESC("/"), "/", "the slash is not escaped");

    is_str(ESC("\xc2\x80 \xc3\xa9 \xdf\xbf"), "\xc2\x80 \xc3\xa9 \xdf\xbf", "valid 2-byte UTF-8 kept (U+0080..U+07FF)");
    is_str(ESC("\xe0\xa0\x80 \xe2\x82\xac \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbf"),
           "\xe0\xa0\x80 \xe2\x82\xac \xed\x9f\xbf \xee\x80\x80 \xef\xbf\xbf",
           "valid 3-byte UTF-8 kept (U+0800, U+20AC, around the surrogates, U+FFFF)");
    is_str(ESC("\xf0\x90\x80\x80 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"), "\xf0\x90\x80\x80 \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf",
           "valid 4-byte UTF-8 kept (U+10000, U+1F600, U+10FFFF)");

    is_str(ESC("\xc0\x80"), "\\u00c0\\u0080", "overlong 2-byte (NUL) as \\u00XX per byte");
    is_str(ESC("\xc1\xbf"), "\\u00c1\\u00bf", "overlong 2-byte (U+007F)");
    is_str(ESC("\xe0\x80\x80"), "\\u00e0\\u0080\\u0080", "overlong 3-byte");
    is_str(ESC("\xf0\x80\x80\x80"), "\\u00f0\\u0080\\u0080\\u0080", "overlong 4-byte");
    is_str(ESC("\xed\xa0\x80"), "\\u00ed\\u00a0\\u0080", "surrogate U+D800");
    is_str(ESC("\xed\xbf\xbf"), "\\u00ed\\u00bf\\u00bf", "surrogate U+DFFF");
    is_str(ESC("\xf4\x90\x80\x80"), "\\u00f4\\u0090\\u0080\\u0080", "too large: U+110000");
    is_str(ESC("\xf5\x80\x80\x80"), "\\u00f5\\u0080\\u0080\\u0080", "too large: lead byte 0xf5");
    is_str(ESC("\xfe\xff"), "\\u00fe\\u00ff", "0xfe and 0xff");
    is_str(ESC("\x80\xbf"), "\\u0080\\u00bf", "stray continuation bytes");
    is_str(ESC("x\xc3"), "x\\u00c3", "truncated 2-byte sequence at the end");
    is_str(ESC("\xe2\x82"), "\\u00e2\\u0082", "truncated 3-byte sequence at the end");
    is_str(ESC("\xf0\x9f\x98"), "\\u00f0\\u009f\\u0098", "truncated 4-byte sequence at the end");
    is_str(ESC("\xe2\x82" "a"), "\\u00e2\\u0082a", "truncated sequence followed by ASCII");
    is_str(ESC("\xff\xc3\xa9"), "\\u00ff\xc3\xa9", "a valid character right after an invalid byte is kept");
    is_str(ESC("\xe2\xc3\xa9"), "\\u00e2\xc3\xa9", "a lead byte cut short by another lead byte");
    is_str(esc_n("\xc3\xa9", 1), "\\u00c3", "the length is respected: a sequence cut by n is invalid");
}

static void test_wrappers(void)
{
    char buf[64], *end;
    struct st__growbuf b = {0};
    char *mem = NULL;
    size_t len = 0;
    FILE *f;
    char all80[100];

    end = st__json_string(buf, (const uint8_t *)"a\"b", 3);
    *end = '\0';
    is_str(buf, "\"a\\\"b\"", "json_string: quoted");
    st__growbuf_json(&b, "x\ty");
    st__growbuf_json(&b, "");
    ok(b.len == 8 && memcmp(b.data, "\"x\\ty\"\"\"", 8) == 0 && !b.failed, "growbuf_json: appends quoted strings");
    st__growbuf_free(&b);
    f = open_memstream(&mem, &len);
    ok(f && st__json_fputs(f, "caf\xc3\xa9 \xff") == 0, "json_fputs: returns 0");
    if (f)
        fclose(f);
    is_str(mem, "\"caf\xc3\xa9 \\u00ff\"", "json_fputs: writes the quoted string");
    free(mem);

    memset(all80, 0x80, sizeof all80);
    is_int(strlen(esc_n(all80, sizeof all80)), ST__JSON_ESCAPED_MAX(sizeof all80),
           "ST__JSON_ESCAPED_MAX: reached by all-invalid input, exactly");
}

/* A reproducible byte generator biased towards the interesting bytes. */
static uint32_t rnd(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static uint8_t pick(uint32_t *s)
{
    static const uint8_t interesting[] = {'"', '\\', '\n', '\r', '\t', 0,    1,    0x1f, 0x7f, 0x80, 0xbf,
                                          0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff,
                                          0xa0, 0x9f, 0x90, 0x8f, 'a', ' '};
    uint32_t r = rnd(s);

    return r % 3 ? interesting[(r >> 8) % sizeof interesting] : (uint8_t)(r >> 16);
}

/*
 * Writes N random strings as a JSON array of escaped strings, and their
 * bytes as hex lines; python decodes each hex line with a handler that
 * reads every byte of an invalid sequence as Latin-1 and compares.
 */
static void test_python(const char *python)
{
    static const char script[] =
        "import codecs, json, sys\n"
        "codecs.register_error('latin1each', lambda e: (''.join(map(chr, e.object[e.start:e.end])), e.end))\n"
        "got = json.load(open(sys.argv[1], encoding='utf-8'))\n"
        "want = [bytes.fromhex(l.strip()).decode('utf-8', 'latin1each') for l in open(sys.argv[2])]\n"
        "bad = [i for i in range(len(want)) if i >= len(got) or got[i] != want[i]]\n"
        "if bad or len(got) != len(want): print('# %d strings back, %d written, first mismatches:' % (len(got), len(want)), bad[:5])\n"
        "sys.exit(1 if bad or len(got) != len(want) else 0)\n";
    char dir[] = "/tmp/st-json-XXXXXX", jpath[64], hpath[64];
    FILE *j, *h;
    uint32_t seed = 12345;
    int status = -1;
    pid_t pid;

    if (!mkdtemp(dir)) {
        ok(0, "mkdtemp");
        return;
    }
    snprintf(jpath, sizeof jpath, "%s/s.json", dir);
    snprintf(hpath, sizeof hpath, "%s/s.hex", dir);
    j = fopen(jpath, "w");
    h = fopen(hpath, "w");
    if (!ok(j && h, "python: files written"))
        return;
    fputs("[", j);
    for (int i = 0; i < 3000; i++) {
        uint8_t in[40];
        size_t n = rnd(&seed) % sizeof in;
        char out[ST__JSON_ESCAPED_MAX(40) + 2], *end;

        for (size_t k = 0; k < n; k++)
            in[k] = pick(&seed);
        end = st__json_string(out, in, n);
        fprintf(j, "%s%.*s\n", i ? "," : "", (int)(end - out), out);
        for (size_t k = 0; k < n; k++)
            fprintf(h, "%02x", in[k]);
        fputs("\n", h);
    }
    fputs("]", j);
    fclose(j);
    fclose(h);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        execl(python, python, "-c", script, jpath, hpath, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "python: 3000 random escaped strings parse as strict JSON and read back as their bytes");
    unlink(jpath);
    unlink(hpath);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    test_rules();
    test_wrappers();
    if (argc > 1 && argv[1][0])
        test_python(argv[1]);
    else
        printf("ok %d - # SKIP python3 not found\n", ++tap__count);
    return done_testing();
}
