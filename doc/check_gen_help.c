/*
 * The --format list of `simpletrace gen --help` (and of simpletrace-gen(1),
 * the same source: doc/simpletrace-gen.1.txt) against the generator's own
 * table: every format it knows is listed with its summary, and the list
 * names no other. The list is text in the source, so this is what keeps
 * the two from drifting apart.
 */
#include <stdio.h>
#include <string.h>

#include "gen.h"
#include "help_texts.h"
#include "tap.h"

/* Whether the help has the row "      NAME   SUMMARY" (the name padded, as the source writes it). */
static bool listed(const char *name, const char *summary)
{
    for (const char *p = strstr(st__help_gen, name); p; p = strstr(p + 1, name)) {
        const char *q = p + strlen(name);
        if (p[-1] != ' ' || *q != ' ')
            continue;
        while (*q == ' ')
            q++;
        if (!strncmp(q, summary, strlen(summary)) && q[strlen(summary)] == '\n')
            return true;
    }
    return false;
}

int main(void)
{
    const struct st__gen_format_info *f = st__gen_formats();
    size_t n = 0;
    for (; f[n].name; n++)
        ok(listed(f[n].name, f[n].summary), "gen --help lists --format=%s: %s", f[n].name, f[n].summary);
    /* The rows of the list: lines indented 25 + 2 in the --format entry, up to the next option. */
    const char *start = strstr(st__help_gen, "what to generate:\n"), *end = start ? strstr(start, "\n  --") : NULL;
    size_t rows = 0;
    for (const char *p = start; p && p < end && (p = strchr(p, '\n')) && p < end; p++)
        rows++;
    ok(start && end && rows == n, "the list has no other row (%zu rows, %zu formats)", rows, n);
    return done_testing();
}
