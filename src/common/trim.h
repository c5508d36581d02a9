/*
 * Blanks around a word of configuration text, one definition for the
 * SIMPLETRACE items and the lines of an events= file. Header-only, depends
 * on the C library only.
 */
#ifndef ST_COMMON_TRIM_H
#define ST_COMMON_TRIM_H

#include <ctype.h>
#include <string.h>

/* s without the white space around it (spaces, tabs, CR, LF), in place. */
static inline char *st__trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

#endif /* ST_COMMON_TRIM_H */
