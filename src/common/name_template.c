/* Trace file names with placeholders (name_template.h). */
#include "name_template.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "diag.h"

/* A name's part must not lead into another directory. */
static void no_slash(char *s)
{
    for (; *s; s++)
        if (*s == '/')
            *s = '_';
}

/* The basename of the executable, for a program started without argv[0]. */
static void exe_name(char *buf, size_t len)
{
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    const char *slash;

    if (n <= 0) {
        snprintf(buf, len, "unknown");
        return;
    }
    path[n] = '\0';
    slash = strrchr(path, '/');
    snprintf(buf, len, "%.255s", slash ? slash + 1 : path);
}

/* The program's name, read once (name_prog_once). */
static char prog_name[256];
static pthread_once_t prog_once = PTHREAD_ONCE_INIT;

static void name_prog_once(void)
{
    /* argv[0]'s basename, as ps shows it: a multi-call binary's own name, not the file's. */
    if (program_invocation_short_name && *program_invocation_short_name)
        snprintf(prog_name, sizeof prog_name, "%s", program_invocation_short_name);
    else
        exe_name(prog_name, sizeof prog_name);
}

void st__name_prog_init(void)
{
    pthread_once(&prog_once, name_prog_once);
}

void st__name_vars_get(struct st__name_vars *v, time_t start)
{
    struct tm tm;

    v->pid = (long)getpid();
    /*
     * Read once: program_invocation_short_name points into argv[0], which
     * servers overwrite to retitle themselves for ps (setproctitle), and a
     * fork child made after that must not name its file from the title.
     */
    st__name_prog_init();
    snprintf(v->prog, sizeof v->prog, "%s", prog_name);
    if (gethostname(v->host, sizeof v->host) != 0 || !v->host[0])
        snprintf(v->host, sizeof v->host, "unknown");
    v->host[sizeof v->host - 1] = '\0';
    if (gmtime_r(&start, &tm))
        strftime(v->start, sizeof v->start, "%Y%m%dT%H%M%SZ", &tm);
    else
        snprintf(v->start, sizeof v->start, "%lld", (long long)start);
    no_slash(v->prog);
    no_slash(v->host);
}

/* The value placeholder c stands for ("%" for %%), or NULL for an unknown one; pidbuf holds %p's text. */
static const char *value_of(char c, const struct st__name_vars *v, char *pidbuf, size_t pidlen)
{
    switch (c) {
    case 'p':
        snprintf(pidbuf, pidlen, "%ld", v->pid);
        return pidbuf;
    case 'e': return v->prog;
    case 'h': return v->host;
    case 't': return v->start;
    case '%': return "%";
    default: return NULL;
    }
}

/* The error for the placeholder at s (s[0] == '%'). */
static int bad_placeholder(const char *s, char *err, size_t errlen)
{
    if (!s[1])
        st__errmsg(err, errlen, "a lone %% at the end (valid: %s)", ST__NAME_PLACEHOLDERS);
    else
        st__errmsg(err, errlen, "unknown placeholder %%%c (valid: %s)", s[1], ST__NAME_PLACEHOLDERS);
    return -EINVAL;
}

int st__name_check(const char *tmpl, char *err, size_t errlen)
{
    static const struct st__name_vars none;
    char pidbuf[8];

    for (const char *s = tmpl; *s; s++) {
        if (*s != '%')
            continue;
        if (!s[1] || !value_of(s[1], &none, pidbuf, sizeof pidbuf))
            return bad_placeholder(s, err, errlen);
        s++;
    }
    return 0;
}

int st__name_expand(const char *tmpl, const struct st__name_vars *v, char *buf, size_t len, char *err,
                    size_t errlen)
{
    char pidbuf[24];
    size_t n = 0;

    for (const char *s = tmpl; *s; s++) {
        const char *val = NULL;
        size_t k;
        if (*s == '%') {
            if (!s[1] || !(val = value_of(s[1], v, pidbuf, sizeof pidbuf)))
                return bad_placeholder(s, err, errlen);
            s++;
        }
        k = val ? strlen(val) : 1;
        if (n + k >= len) {
            st__errmsg(err, errlen, "expanded, the name is longer than %zu bytes", len - 1);
            return -ENAMETOOLONG;
        }
        memcpy(buf + n, val ? val : s, k);
        n += k;
    }
    buf[n] = '\0';
    return 0;
}

bool st__name_has_pid(const char *tmpl)
{
    for (const char *s = tmpl; *s; s++) {
        if (*s != '%' || !s[1])
            continue;
        if (s[1] == 'p')
            return true;
        s++;
    }
    return false;
}

int st__name_absolute(const char *tmpl, char *buf, size_t len)
{
    char cwd[PATH_MAX];
    size_t n = 0;

    if (tmpl[0] == '/')
        return snprintf(buf, len, "%s", tmpl) < (int)len ? 0 : -ENAMETOOLONG;
    if (!getcwd(cwd, sizeof cwd))
        return -errno;
    /* The directory's own '%' are literal: doubled, so expanding keeps them. */
    for (const char *s = cwd; *s; s++) {
        if (n + 2 >= len)
            return -ENAMETOOLONG;
        buf[n++] = *s;
        if (*s == '%')
            buf[n++] = '%';
    }
    if (n + 1 + strlen(tmpl) >= len)
        return -ENAMETOOLONG;
    snprintf(buf + n, len - n, "%s%s", n == 1 ? "" : "/", tmpl);
    return 0;
}
