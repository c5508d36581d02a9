/* The growable byte buffer (growbuf.h). Doubling growth, 256 bytes at first. */
#include "growbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint8_t *st__growbuf_room(struct st__growbuf *b, size_t n)
{
    size_t cap;
    uint8_t *d;

    if (b->failed)
        return NULL;
    if (b->data && b->cap - b->len >= n)
        return b->data + b->len;
    cap = b->cap ? b->cap : 256;
    while (cap - b->len < n) {
        if (cap > SIZE_MAX / 2) {
            b->failed = true;
            return NULL;
        }
        cap *= 2;
    }
    d = realloc(b->data, cap);
    if (!d) {
        b->failed = true;
        return NULL;
    }
    b->data = d;
    b->cap = cap;
    return d + b->len;
}

void st__growbuf_put(struct st__growbuf *b, const void *p, size_t n)
{
    uint8_t *at;

    if (n == 0 || !(at = st__growbuf_room(b, n)))
        return;
    memcpy(at, p, n);
    b->len += n;
}

void st__growbuf_puts(struct st__growbuf *b, const char *s)
{
    st__growbuf_put(b, s, strlen(s));
}

void st__growbuf_vprintf(struct st__growbuf *b, const char *fmt, va_list ap)
{
    char small[256];
    uint8_t *at;
    va_list again;
    int n;

    va_copy(again, ap);
    n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        b->failed = true;
    } else if ((size_t)n < sizeof small) {
        st__growbuf_put(b, small, (size_t)n);
    } else if ((at = st__growbuf_room(b, (size_t)n + 1))) {
        /* Longer than the stack buffer: format again straight into the buffer. */
        vsnprintf((char *)at, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
}

void st__growbuf_printf(struct st__growbuf *b, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    st__growbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

void st__growbuf_free(struct st__growbuf *b)
{
    free(b->data);
    *b = (struct st__growbuf){0};
}
