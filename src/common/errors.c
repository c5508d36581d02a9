/*
 * Error texts (api.h). Every st_ function of every library reports errors
 * as negative errno values, so the text is the C library's description of
 * that errno: strerrordesc_np gives static strings, thread-safe and
 * locale-free, where strerror's buffer may be overwritten by another thread.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include <simpletrace/api.h>

const char *st_strerror(int err)
{
    const char *s;

    if (err == 0)
        return "Success";
    if (err == INT_MIN)
        return "Unknown error"; /* no errno, and its negation does not exist */
    s = strerrordesc_np(err < 0 ? -err : err);
    return s ? s : "Unknown error";
}
