/*
 * Diagnostics: the one way library code says something it cannot return
 * (a setting that could not be applied at start-up, a write that failed in
 * a background thread). One line on standard error, written with a single
 * write() so that lines of several threads never mix; errno is kept.
 */
#ifndef ST_COMMON_DIAG_H
#define ST_COMMON_DIAG_H

#include <stddef.h>

/* Longest line st__diag() writes, newline included; longer ones are cut and end in "...". */
#define ST__DIAG_LINE_MAX 4096

/* Writes "WHO: MESSAGE\n" to stderr in one write() (who: "simpletrace", "simpletrace-func"). */
void st__diag(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Puts a message into a caller's buffer (err, errlen bytes; nothing when
 * err is NULL or errlen 0): how functions that return an error code also
 * say what was wrong.
 */
void st__errmsg(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* ST_COMMON_DIAG_H */
