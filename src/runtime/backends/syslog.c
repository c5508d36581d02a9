/*
 * The syslog backend's runtime: generated code calls
 * st__syslog("NAME " FMT, args...) for an enabled event and we hand it to
 * the C library's syslog() at LOG_INFO. The log is opened once, on the
 * first event, with openlog(NULL, LOG_PID, LOG_DAEMON): the program's name
 * as ident, its pid in each message. A program that calls openlog() itself
 * after that changes the ident for our messages too (there is one log per
 * process). errno is preserved.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <syslog.h>

#include <simpletrace/trace.h>

static pthread_once_t syslog_once = PTHREAD_ONCE_INIT;

static void syslog_open(void)
{
    openlog(NULL, LOG_PID, LOG_DAEMON);
}

void st__syslog(const char *fmt, ...)
{
    int saved = errno;
    va_list ap;

    if (!fmt)
        return;
    pthread_once(&syslog_once, syslog_open);
    va_start(ap, fmt);
    vsyslog(LOG_INFO, fmt, ap);
    va_end(ap);
    errno = saved;
}
