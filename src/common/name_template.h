/*
 * Trace file names with placeholders (file=, st_trace_file_set_name()):
 * %p the process ID, %e the program name, %h the host name, %t the time
 * tracing started (UTC, YYYYMMDDTHHMMSSZ), %% a literal %. Any other %x
 * is an error, checked when the name is configured and expanded when the
 * file is opened.
 */
#ifndef ST_COMMON_NAME_TEMPLATE_H
#define ST_COMMON_NAME_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* The placeholders, as error messages list them. */
#define ST__NAME_PLACEHOLDERS "%p pid, %e program name, %h host name, %t start time, %% a literal %"

/* What the placeholders stand for. */
struct st__name_vars {
    long pid;       /* %p */
    char prog[256]; /* %e: the program's name as invoked, without its directory */
    char host[256]; /* %h */
    char start[32]; /* %t */
};

/*
 * Fills v for this process, %t from start (seconds since the epoch); '/'
 * in a value becomes '_'. %e is the program's name as read on the first
 * call (or st__name_prog_init()), kept from then on, fork children
 * included: a later rewrite of argv[0] (a server's title for ps) does not
 * change it.
 */
void st__name_vars_get(struct st__name_vars *v, time_t start);

/* Reads the program's name now, if not yet (the runtime's start-up: before main can retitle argv[0]). */
void st__name_prog_init(void);

/*
 * tmpl made absolute: as it is when it starts with '/', else the current
 * directory ('%' in it doubled, so it stays literal) then '/' then tmpl,
 * so that a process that changes directory later (a daemon's chdir("/"))
 * and its fork children still name the same file. 0, -ENAMETOOLONG, or
 * -errno of getcwd().
 */
int st__name_absolute(const char *tmpl, char *buf, size_t len);

/*
 * Checks tmpl's placeholders: 0, or -EINVAL with a message naming the bad
 * one and listing the valid ones, e.g. "unknown placeholder %q (valid: ...)".
 */
int st__name_check(const char *tmpl, char *err, size_t errlen);

/* Expands tmpl into buf (len bytes): 0, -EINVAL as st__name_check, or -ENAMETOOLONG. */
int st__name_expand(const char *tmpl, const struct st__name_vars *v, char *buf, size_t len, char *err,
                    size_t errlen);

/* True when tmpl holds %p (%%p is a literal "%p", not one). */
bool st__name_has_pid(const char *tmpl);

#endif /* ST_COMMON_NAME_TEMPLATE_H */
