/*
 * "Did you mean": the names nearest a misspelt one, for messages about a
 * configuration key or an event pattern that matched nothing.
 */
#ifndef ST_COMMON_NEAREST_H
#define ST_COMMON_NEAREST_H

#include <stdbool.h>
#include <stddef.h>

/* Edit distance (insertions, deletions, substitutions, transpositions) of a[0..alen) and b[0..blen), capped at cap. */
size_t st__edit_distance(const char *a, size_t alen, const char *b, size_t blen, size_t cap);

/* The best candidates seen so far for a misspelt word. */
#define ST__NEAREST_MAX 3
struct st__nearest {
    const char *word;                 /* what was typed */
    size_t len;                       /* its length (a glob: the part before its first wildcard) */
    bool prefix;                      /* compare with candidates' prefixes of len bytes (a glob's literal start) */
    size_t best;                      /* distance of the names kept, SIZE_MAX before any */
    const char *names[ST__NEAREST_MAX];
    size_t n;
};

/* Starts a search for names near word; a glob (with * or ?) is compared by its literal start. */
void st__nearest_init(struct st__nearest *s, const char *word);

/* Offers a candidate name (kept by pointer: it must outlive the search). */
void st__nearest_offer(struct st__nearest *s, const char *name);

/*
 * Writes the kept names as "'a', 'b'" into buf (len bytes) and returns how
 * many there are; none (0, buf "") when nothing was near enough (within a
 * third of the word's length, at least 1, at most 3 edits).
 */
size_t st__nearest_list(const struct st__nearest *s, char *buf, size_t len);

#endif /* ST_COMMON_NEAREST_H */
