/*
 * An index for a join. SQLite builds no index for a virtual table: the
 * inner table of a join on c = other.x would be scanned again, the trace
 * read anew, for every row of the outer one. When xBestIndex sees such an
 * equality whose value is known only as the query runs (another table's
 * column, a parameter), it plans a lookup instead: the table is read once,
 * the columns the query uses kept in memory, hashed on c, and each lookup
 * walks one hash chain.
 *
 * A lookup gives every row whose value hashes like the one sought; SQLite
 * still compares them (with its affinities: 5 = 5.0 = '5' on a numeric
 * column), so the hash need only never separate values SQLite calls equal.
 * Numbers hash by value (an integral REAL like the integer), text by its
 * bytes. A value whose comparison SQLite would make by converting the
 * column's (a number sought in a TEXT column) gives every row instead.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sql_internal.h"

#define NONE UINT32_MAX

struct st__sql_index {
    int col;                  /* the key column */
    int affinity;             /* its declared affinity: SQLITE_INTEGER (numeric), SQLITE_TEXT, 0 (none) */
    struct st__sql_rows rows;
    uint64_t *hash;           /* per row; 0: its key is NULL (equal to nothing) */
    uint32_t *next;           /* per row: the next row of its chain */
    uint32_t *bucket;         /* nbuckets chain heads (a power of two) */
    size_t nbuckets;
    /* the lookup */
    bool all;                 /* every row */
    uint64_t sought;          /* else the rows of this hash (0: none) */
    uint32_t at;              /* the next row to consider */
};

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

/* Never 0 (a NULL's). */
static uint64_t nonzero(uint64_t h)
{
    return h ? h : 1;
}

static uint64_t hash_int(sqlite3_int64 i)
{
    return nonzero(mix((uint64_t)i ^ UINT64_C(0x9e3779b97f4a7c15)));
}

static uint64_t hash_real(double d)
{
    if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
        return hash_int((sqlite3_int64)d); /* 5.0 = 5 */
    uint64_t bits;
    if (d == 0)
        d = 0; /* -0.0 = 0.0 */
    memcpy(&bits, &d, sizeof bits);
    return nonzero(mix(bits ^ UINT64_C(0x2545f4914f6cdd1d)));
}

static uint64_t hash_text(const void *s, size_t n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)s)[i]) * UINT64_C(0x100000001b3);
    return nonzero(mix(h));
}

static uint64_t hash_cell(const struct st__sql_cell *c)
{
    switch (c->type) {
    case SQLITE_INTEGER: return hash_int(c->i);
    case SQLITE_FLOAT: return hash_real(c->d);
    case SQLITE_TEXT: return hash_text(c->s, c->n);
    default: return 0;
    }
}

int st__sql_index_new(struct st__sql_index **out, size_t ncols, int col, int affinity)
{
    struct st__sql_index *ix = calloc(1, sizeof *ix);
    *out = ix;
    if (!ix)
        return -ENOMEM;
    ix->col = col;
    ix->affinity = affinity;
    ix->rows.ncols = ncols;
    ix->at = NONE;
    return 0;
}

struct st__sql_cell *st__sql_index_row(struct st__sql_index *ix)
{
    if (ix->rows.nrows >= NONE - 1)
        return NULL; /* more rows than a chain can name */
    return st__sql_rows_new(&ix->rows, ix->rows.ncols);
}

int st__sql_index_finish(struct st__sql_index *ix)
{
    size_t n = ix->rows.nrows;
    ix->nbuckets = 16;
    while (ix->nbuckets < n)
        ix->nbuckets *= 2;
    ix->hash = malloc((n ? n : 1) * sizeof *ix->hash);
    ix->next = malloc((n ? n : 1) * sizeof *ix->next);
    ix->bucket = malloc(ix->nbuckets * sizeof *ix->bucket);
    if (!ix->hash || !ix->next || !ix->bucket)
        return -ENOMEM;
    memset(ix->bucket, 0xff, ix->nbuckets * sizeof *ix->bucket);
    /* from the last row back, so that each chain gives its rows in the order they were read */
    for (size_t r = n; r-- > 0;) {
        uint64_t h = hash_cell(&ix->rows.cells[r * ix->rows.ncols + (size_t)ix->col]);
        ix->hash[r] = h;
        ix->next[r] = NONE;
        if (!h)
            continue;
        uint32_t *head = &ix->bucket[h & (ix->nbuckets - 1)];
        ix->next[r] = *head;
        *head = (uint32_t)r;
    }
    return 0;
}

void st__sql_index_seek(struct st__sql_index *ix, sqlite3_value *v)
{
    int type = sqlite3_value_type(v);
    ix->all = false;
    ix->sought = 0;
    ix->at = NONE;
    if (type == SQLITE_NULL)
        return; /* = NULL is never true */
    if (ix->affinity == SQLITE_INTEGER)
        type = sqlite3_value_numeric_type(v); /* '5' is 5 to a numeric column */
    if (type == SQLITE_BLOB || (ix->affinity == SQLITE_TEXT && type != SQLITE_TEXT)) {
        ix->all = true; /* SQLite converts the column's values to compare: it decides */
        ix->at = ix->rows.nrows ? 0 : NONE;
        return;
    }
    if (type == SQLITE_INTEGER)
        ix->sought = hash_int(sqlite3_value_int64(v));
    else if (type == SQLITE_FLOAT)
        ix->sought = hash_real(sqlite3_value_double(v));
    else
        ix->sought = hash_text(sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v));
    if (ix->nbuckets)
        ix->at = ix->bucket[ix->sought & (ix->nbuckets - 1)];
}

const struct st__sql_cell *st__sql_index_next(struct st__sql_index *ix)
{
    if (ix->all) {
        if (ix->at == NONE)
            return NULL;
        uint32_t r = ix->at;
        ix->at = r + 1 < ix->rows.nrows ? r + 1 : NONE;
        return ix->rows.cells + (size_t)r * ix->rows.ncols;
    }
    while (ix->at != NONE && ix->hash[ix->at] != ix->sought)
        ix->at = ix->next[ix->at];
    if (ix->at == NONE)
        return NULL;
    uint32_t r = ix->at;
    ix->at = ix->next[r];
    return ix->rows.cells + (size_t)r * ix->rows.ncols;
}

int st__sql_index_col(const struct st__sql_index *ix)
{
    return ix->col;
}

void st__sql_index_free(struct st__sql_index *ix)
{
    if (!ix)
        return;
    st__sql_rows_free(&ix->rows);
    free(ix->hash);
    free(ix->next);
    free(ix->bucket);
    free(ix);
}
