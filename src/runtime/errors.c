/*
 * Error texts. Every st_ function reports errors as negative errno values,
 * so the text is the C library's description of that errno. We use
 * strerrordesc_np (static strings, thread-safe, no locale) rather than
 * strerror, whose buffer may be overwritten by another thread.
 */
#include <errno.h>
#include <string.h>

#include "runtime/internal.h"

ST_EXPORT const char *st_strerror(int err)
{
    const char *s;

    if (err == 0)
        return "Success";
    s = strerrordesc_np(err < 0 ? -err : err);
    return s ? s : "Unknown error";
}
