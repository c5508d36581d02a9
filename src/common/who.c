/* The process as messages name it (who.h). */
#include "who.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "name_template.h"

bool st__user_name(long uid, char *buf, size_t len)
{
    FILE *f = fopen("/etc/passwd", "re");
    char line[1024];
    bool found = false;

    if (len)
        buf[0] = '\0';
    if (!f)
        return false;
    /* name:password:uid:... ; not getpwuid(): NSS modules may lock or load libraries. */
    while (!found && fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *end;
        if (!c2)
            continue;
        long u = strtol(c2 + 1, &end, 10);
        if (end == c2 + 1 || *end != ':' || u != uid)
            continue;
        snprintf(buf, len, "%.*s", (int)(c1 - line), line);
        found = true;
    }
    fclose(f);
    return found;
}

void st__who(char *buf, size_t len, bool with_user)
{
    struct st__name_vars v;
    char user[256];
    int n;

    st__name_vars_get(&v, 0);
    n = snprintf(buf, len, "process %ld (%s)", v.pid, v.prog);
    if (!with_user || n < 0 || (size_t)n >= len)
        return;
    long uid = (long)geteuid();
    if (st__user_name(uid, user, sizeof user))
        snprintf(buf + n, len - (size_t)n, ", user %s (uid %ld)", user, uid);
    else
        snprintf(buf + n, len - (size_t)n, ", uid %ld", uid);
}
