/*
 * An event's format as generated code writes it. The format was validated
 * by the parser: string literals and PRI macros only, and its conversions
 * fit the arguments (each argument's conv, events/conversions.c).
 */
#include "gen.h"

void st__out_format(struct st__out *out, const char *fmt)
{
    const char *p = fmt;
    bool first = true;
    while (*p) {
        if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\v' || *p == '\f') {
            p++;
            continue;
        }
        const char *start = p;
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++)
                if (*p == '\\' && p[1])
                    p++;
            if (*p)
                p++;
        } else {
            while (*p && *p != '"' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\v' && *p != '\f')
                p++;
        }
        st__out_printf(out, "%s%.*s", first ? "" : " ", (int)(p - start), start);
        first = false;
    }
}
