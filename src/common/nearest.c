/* Nearest names for "did you mean" (nearest.h). */
#include "nearest.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Names longer than this are compared by their first bytes only: messages, not a spelling checker. */
#define MAX_LEN 128

size_t st__edit_distance(const char *a, size_t alen, const char *b, size_t blen, size_t cap)
{
    size_t row[3][MAX_LEN + 1], *prev2 = row[0], *prev = row[1], *cur = row[2];

    if (alen > MAX_LEN)
        alen = MAX_LEN;
    if (blen > MAX_LEN)
        blen = MAX_LEN;
    for (size_t j = 0; j <= blen; j++)
        prev[j] = j;
    for (size_t i = 1; i <= alen; i++) {
        size_t low = SIZE_MAX, *t;
        cur[0] = i;
        for (size_t j = 1; j <= blen; j++) {
            size_t d = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < d)
                d = prev[j] + 1;
            if (cur[j - 1] + 1 < d)
                d = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1; /* two letters swapped */
            cur[j] = d;
            if (d < low)
                low = d;
        }
        if (low >= cap)
            return cap; /* every path is already that far */
        t = prev2, prev2 = prev, prev = cur, cur = t;
    }
    return prev[blen] < cap ? prev[blen] : cap;
}

void st__nearest_init(struct st__nearest *s, const char *word)
{
    memset(s, 0, sizeof *s);
    s->word = word;
    s->len = strcspn(word, "*?");
    s->prefix = word[s->len] != '\0';
    s->best = SIZE_MAX;
}

/* How many edits a word of len bytes may be away from a name to be offered: a third of it, 1 to 3. */
static size_t allowed(size_t len)
{
    size_t n = len / 3;

    return n < 1 ? 1 : n > 3 ? 3 : n;
}

void st__nearest_offer(struct st__nearest *s, const char *name)
{
    size_t nlen = strlen(name), d;

    if (s->prefix && nlen > s->len)
        nlen = s->len; /* "jobs_*" against "job_start": "jobs_" against "job_s" */
    d = st__edit_distance(s->word, s->len, name, nlen, allowed(s->len) + 1);
    if (d > allowed(s->len) || d > s->best || (d == 0 && !s->prefix))
        return;
    if (d < s->best) {
        s->best = d;
        s->n = 0;
    }
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0)
            return;
    if (s->n < ST__NEAREST_MAX)
        s->names[s->n++] = name;
}

size_t st__nearest_list(const struct st__nearest *s, char *buf, size_t len)
{
    size_t at = 0;

    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < s->n && at < len; i++) {
        int n = snprintf(buf + at, len - at, "%s'%s'", i ? ", " : "", s->names[i]);
        if (n < 0)
            break;
        at += (size_t)n;
    }
    return s->n;
}
