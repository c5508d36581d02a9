/* The JSON string escaper (rules in json_escape.h). */
#include "json_escape.h"
#include "utf8.h"

#include <string.h>

static const char hexdig[] = "0123456789abcdef";

char *st__json_escape(char *p, const uint8_t *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        size_t u;
        uint8_t c;

        while (i < n && st__json_plain(s[i])) /* byte by byte: runs are short, a memcpy call costs more */
            *p++ = (char)s[i++];
        if (i == n)
            break;
        c = s[i];
        if (c >= 0x80 && (u = st__utf8_seq(s + i, n - i)) != 0) {
            memcpy(p, s + i, u);
            p += u;
            i += u;
            continue;
        }
        *p++ = '\\';
        switch (c) {
        case '"': *p++ = '"'; break;
        case '\\': *p++ = '\\'; break;
        case '\n': *p++ = 'n'; break;
        case '\r': *p++ = 'r'; break;
        case '\t': *p++ = 't'; break;
        default:
            memcpy(p, "u00", 3);
            p[3] = hexdig[c >> 4];
            p[4] = hexdig[c & 15];
            p += 5;
        }
        i++;
    }
    return p;
}

void st__growbuf_json(struct st__growbuf *b, const char *s)
{
    size_t n = strlen(s);
    uint8_t *at = st__growbuf_room(b, ST__JSON_ESCAPED_MAX(n) + 2);

    if (at)
        st__growbuf_commit(b, (size_t)((uint8_t *)st__json_string((char *)at, (const uint8_t *)s, n) - at));
}

int st__json_fputs(FILE *f, const char *s)
{
    struct st__growbuf b = {0};
    int r = 0;

    st__growbuf_json(&b, s);
    if (b.failed || fwrite(b.data, 1, b.len, f) != b.len)
        r = EOF;
    st__growbuf_free(&b);
    return r;
}
