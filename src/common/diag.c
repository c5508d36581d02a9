/* One line to stderr (diag.h). */
#include "diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__GNUC__)
__attribute__((no_instrument_function))
#endif
void st__diag(const char *who, const char *fmt, ...)
{
    static const char cut[] = "...\n";
    char line[ST__DIAG_LINE_MAX];
    int saved = errno, n, m;
    size_t len;
    va_list ap;

    n = snprintf(line, sizeof line, "%s: ", who);
    if (n < 0 || (size_t)n >= sizeof line)
        n = 0;
    va_start(ap, fmt);
    m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    len = (size_t)n + (m > 0 ? (size_t)m : 0);
    if (len >= sizeof line) {
        len = sizeof line - sizeof cut + 1;
        memcpy(line + len, cut, sizeof cut - 1);
        len += sizeof cut - 1;
    } else if (len == 0 || line[len - 1] != '\n') {
        line[len++] = '\n';
    }
    if (write(STDERR_FILENO, line, len) < 0) {
        /* stderr is gone: there is nowhere else to say it */
    }
    errno = saved;
}

void st__errmsg(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || !errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
