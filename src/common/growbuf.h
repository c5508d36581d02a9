/*
 * A growable byte buffer: the one every part uses to build output whose
 * size is not known in advance (monitor answers, snapshots, generated
 * text). It never fails loudly: an allocation failure sets `failed`,
 * later appends do nothing, and the owner checks `failed` once at the end.
 */
#ifndef ST_COMMON_GROWBUF_H
#define ST_COMMON_GROWBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct st__growbuf {
    uint8_t *data; /* malloc'ed; NULL until something is appended */
    size_t len;    /* bytes used */
    size_t cap;    /* bytes allocated */
    bool failed;   /* an allocation failed: the contents are incomplete */
};

/* Makes room for n more bytes and returns where they go (st__growbuf_commit() them), or NULL once failed. */
uint8_t *st__growbuf_room(struct st__growbuf *b, size_t n);

/* Counts n bytes written at st__growbuf_room()'s pointer as used. */
static inline void st__growbuf_commit(struct st__growbuf *b, size_t n)
{
    b->len += n;
}

/* Appends n bytes of p. */
void st__growbuf_put(struct st__growbuf *b, const void *p, size_t n);

/* Appends a NUL-terminated string (without its NUL). */
void st__growbuf_puts(struct st__growbuf *b, const char *s);

/* Appends printf-style text (without a NUL). */
void st__growbuf_printf(struct st__growbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same with a va_list (consumed). */
void st__growbuf_vprintf(struct st__growbuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Frees the memory and empties the buffer (failed cleared too). */
void st__growbuf_free(struct st__growbuf *b);

#endif /* ST_COMMON_GROWBUF_H */
