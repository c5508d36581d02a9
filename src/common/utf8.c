/* Repairing UTF-8 (rules in utf8.h). */
#include "utf8.h"

#include <string.h>

uint8_t *st__utf8_repair(uint8_t *p, const uint8_t *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        size_t u;

        while (i < n && s[i] < 0x80) /* byte by byte: runs are short, a memcpy call costs more */
            *p++ = s[i++];
        if (i == n)
            break;
        if ((u = st__utf8_seq(s + i, n - i)) != 0) {
            memcpy(p, s + i, u);
            p += u;
            i += u;
            continue;
        }
        *p++ = (uint8_t)(0xc0 | s[i] >> 6); /* U+0080..U+00FF in two bytes */
        *p++ = (uint8_t)(0x80 | (s[i] & 0x3f));
        i++;
    }
    return p;
}
