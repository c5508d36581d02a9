/* Splitting a monitor request line (monitor_parse.h). */
#include "monitor_parse.h"

#include <string.h>

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

void st__mon_parse_line(char *line, struct st__mon_request *req)
{
    size_t n = strlen(line);
    char *p = line;

    req->argc = 0;
    req->json = false;
    if (n && line[n - 1] == '\r') /* telnet and friends */
        line[--n] = '\0';
    while (blank(*p))
        p++;
    if (strncmp(p, "json", 4) == 0 && (blank(p[4]) || p[4] == '\0')) {
        req->json = true;
        p += 4;
    }
    while (req->argc < 4) {
        while (blank(*p))
            p++;
        if (!*p)
            break;
        if (req->argc == 2 && strcmp(req->argv[0], "trace-file") == 0 && strcmp(req->argv[1], "set") == 0) {
            /* PATH may hold blanks: take the rest, trailing blanks cut. */
            char *e = p + strlen(p);
            while (e > p && blank(e[-1]))
                *--e = '\0';
            req->argv[req->argc++] = p;
            break;
        }
        req->argv[req->argc++] = p;
        while (*p && !blank(*p))
            p++;
        if (*p)
            *p++ = '\0';
    }
}
