/*
 * File name templates (src/common/name_template.h): each placeholder
 * expands to its value, %% to one %, an unknown one or a lone % at the end
 * is refused with a message naming it, a result too long is
 * -ENAMETOOLONG, and %p is found only where it is a placeholder.
 */
#include "tap.h"

#include "name_template.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static const struct st__name_vars vars = {.pid = 4242, .prog = "prog", .host = "box", .start = "20261124T193637Z"};

static void expands(const char *tmpl, const char *want)
{
    char buf[128], err[256] = "";
    int r = st__name_expand(tmpl, &vars, buf, sizeof buf, err, sizeof err);

    if (!ok(r == 0 && !strcmp(buf, want), "'%s' -> '%s'", tmpl, want))
        diag("rc %d, got '%s' (%s)", r, r ? "" : buf, err);
}

static void refused(const char *tmpl, const char *msg)
{
    char buf[128], err[256] = "";

    is_int(st__name_check(tmpl, err, sizeof err), -EINVAL, "'%s' refused by check", tmpl);
    is_str(err, msg, "'%s': message", tmpl);
    err[0] = '\0';
    is_int(st__name_expand(tmpl, &vars, buf, sizeof buf, err, sizeof err), -EINVAL, "'%s' refused by expand", tmpl);
    is_str(err, msg, "'%s': same message", tmpl);
}

int main(void)
{
    struct st__name_vars now;
    char buf[16], err[256];

    expands("plain.trace", "plain.trace");
    expands("t-%p", "t-4242");
    expands("%e.trace", "prog.trace");
    expands("%h-%t", "box-20261124T193637Z");
    expands("100%%-%%p", "100%-%p");
    expands("%e-%p-%h-%t.trace", "prog-4242-box-20261124T193637Z.trace");
    is_int(st__name_check("a-%p-%e-%h-%t-%%", NULL, 0), 0, "every valid placeholder passes the check");
    refused("x-%q", "unknown placeholder %q (valid: %p pid, %e program name, %h host name, %t start time, %% a literal %)");
    refused("x%", "a lone % at the end (valid: %p pid, %e program name, %h host name, %t start time, %% a literal %)");
    is_int(st__name_expand("0123456789-%p", &vars, buf, 15, err, sizeof err), -ENAMETOOLONG,
           "a result longer than the buffer: -ENAMETOOLONG");
    is_int(st__name_expand("0123456789-%p", &vars, buf, 16, NULL, 0), 0, "... and one that fits exactly is fine");
    ok(st__name_has_pid("a-%p") && !st__name_has_pid("a-%%p") && !st__name_has_pid("a-%e%") &&
           st__name_has_pid("%%%p"),
       "has_pid finds %%p placeholders only");
    st__name_vars_get(&now, 0);
    is_int(now.pid, getpid(), "vars: this process's pid");
    is_str(now.start, "19700101T000000Z", "vars: %%t of the epoch, UTC");
    ok(now.prog[0] && !strchr(now.prog, '/') && now.host[0] && !strchr(now.host, '/'), "vars: a program and host name, no '/'");
    is_str(now.prog, "test_common_name_template", "vars: %%e is the program's name");
    return done_testing();
}
