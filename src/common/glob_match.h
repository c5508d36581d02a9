/*
 * Event-name globs, one definition for every part that matches names (the
 * runtime's enable rules, the reader's --events filter, the function
 * tracer's filter). Header-only, depends on nothing.
 */
#ifndef ST_COMMON_GLOB_MATCH_H
#define ST_COMMON_GLOB_MATCH_H

#include <stdbool.h>
#include <stddef.h>

/*
 * True when name matches the first plen bytes of pattern as a whole: '*'
 * matches any run of characters, '?' any one; case-sensitive. Linear in
 * practice: on a mismatch only the last '*' is retried.
 */
#if defined(__GNUC__)
__attribute__((no_instrument_function))
#endif
static inline bool st__glob_match_n(const char *pattern, size_t plen, const char *name)
{
    size_t p = 0, star = (size_t)-1;
    const char *resume = name;

    while (*name) {
        if (p < plen && pattern[p] == '*') {
            star = p++;
            resume = name;
        } else if (p < plen && (pattern[p] == '?' || pattern[p] == *name)) {
            p++;
            name++;
        } else if (star != (size_t)-1) {
            /* Let the last '*' swallow one more character and retry. */
            p = star + 1;
            name = ++resume;
        } else {
            return false;
        }
    }
    while (p < plen && pattern[p] == '*')
        p++;
    return p == plen;
}

#endif /* ST_COMMON_GLOB_MATCH_H */
