/*
 * The virtual tables: SQLite's module interface over the scans (scan.c,
 * meta.c, spans.c). Two ways in: eponymous tables, one module per table
 * name, for `simpletrace sql` (st__sql_register_tables(): `SELECT * FROM
 * records` with nothing created), and the module "simpletrace", whose
 * tables CREATE VIRTUAL TABLE makes from its arguments (args.h) for the
 * loadable extension (and the command too).
 *
 * The plan (xBestIndex -> xFilter) is idxStr, one letter per argument
 * xFilter gets, in order:
 *   L  a lower bound of ts (>, >=)       U  an upper bound (<, <=)
 *   E  ts = value (both bounds)          N  name = value
 *   I  name IN (...), all values at once (sqlite3_vtab_in)
 *   G  (no argument) records' count per name: rows given grouped by name
 * or, alone, "K" and the columns used (hex colUsed), idxNum a column, one
 * argument: a lookup in an index of the table on that column (index.c), for
 * a join; the table is read into it at the first lookup of the statement.
 * Every constraint stays SQLite's to check too (omit is never set): a
 * bound only needs to be loose, never exact. On spans only end_ts bounds
 * from above are taken: a span that ends by T began and ended before T,
 * whatever came after; a begin_ts bound would change which begins a
 * trace's unmatched ends find (the engine's nesting rules), so it is left
 * to SQLite.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "args.h"
#include "sql_internal.h"

#define ERR_LEN 2048

struct sql_vtab {
    sqlite3_vtab base;
    struct st__sql_table *t;
    bool owns_t; /* a table of the module: its table, source and catalog are its own */
};

/* Where a cursor's rows come from. */
enum mode {
    MODE_SCAN,  /* a reader: records, an event's table, drops */
    MODE_SPANS, /* export's engine */
    MODE_ROWS,  /* rows in memory, made once per cursor: events, processes */
    MODE_INDEX, /* a lookup in an index made once per cursor (a join) */
};

struct sql_cursor {
    sqlite3_vtab_cursor base;
    enum mode mode;
    struct st__sql_scan scan;
    struct st__sql_spans *spans;
    struct st__sql_rows rows;
    bool have_rows;               /* rows are made (they depend on no constraint) */
    size_t row;
    struct st__sql_index *ix;     /* kept from one xFilter to the next */
    sqlite3_uint64 ix_used;       /* ... with the columns it holds */
    const struct st__sql_cell *ix_row; /* the current row of the lookup */
    sqlite3_int64 rowid;
    bool eof;
};

static const char *const fixed_names[] = {
    [ST__SQL_RECORDS] = "records", [ST__SQL_EVENTS] = "events", [ST__SQL_PROCESSES] = "processes",
    [ST__SQL_DROPS] = "drops",     [ST__SQL_SPANS] = "spans",
};

/* --- schema ----------------------------------------------------------------------------------- */

/* The CREATE TABLE statement sqlite3_declare_vtab() takes for t (sqlite3_free it), NULL without memory. */
static char *schema(const struct st__sql_table *t)
{
    switch (t->kind) {
    case ST__SQL_RECORDS:
        return sqlite3_mprintf("CREATE TABLE x(ts INTEGER, name TEXT, pid INTEGER, tid INTEGER, program TEXT, "
                               "host TEXT, args TEXT)");
    case ST__SQL_EVENTS: return sqlite3_mprintf("CREATE TABLE x(name TEXT, id INTEGER, args TEXT, format TEXT)");
    case ST__SQL_PROCESSES:
        return sqlite3_mprintf("CREATE TABLE x(pid INTEGER, program TEXT, host TEXT, exe TEXT, cmdline TEXT, "
                               "clock TEXT, version TEXT, trace TEXT, anchor_mono_ns INTEGER, anchor_real_ns INTEGER)");
    case ST__SQL_DROPS: return sqlite3_mprintf("CREATE TABLE x(ts INTEGER, tid INTEGER, count INTEGER, pid INTEGER)");
    case ST__SQL_SPANS:
        return sqlite3_mprintf("CREATE TABLE x(name TEXT, begin_ts INTEGER, end_ts INTEGER, dur INTEGER, "
                               "pid INTEGER, tid INTEGER, key, end_tid INTEGER)");
    case ST__SQL_EVENT: break;
    }
    char *s = sqlite3_mprintf("CREATE TABLE x(ts INTEGER, pid INTEGER, tid INTEGER");
    for (unsigned k = 0; s && k < t->ev->nargs; k++) {
        /* %w doubles the quotes: any name is a column name */
        const struct st__sql_arg *a = &t->ev->args[k];
        char *more = sqlite3_mprintf("%s, \"%w\" %s", s, a->column, a->text ? "TEXT" : "INTEGER");
        sqlite3_free(s);
        s = more;
    }
    char *done = s ? sqlite3_mprintf("%s)", s) : NULL;
    sqlite3_free(s);
    return done;
}

static int declare(sqlite3 *db, const struct st__sql_table *t, char **pzErr)
{
    char *sql = schema(t);
    if (!sql)
        return SQLITE_NOMEM;
    int rc = sqlite3_declare_vtab(db, sql);
    if (rc != SQLITE_OK)
        *pzErr = sqlite3_mprintf("simpletrace: declaring the table: %s", sqlite3_errmsg(db));
    sqlite3_free(sql);
    return rc;
}

static int new_vtab(sqlite3 *db, struct st__sql_table *t, bool owns, sqlite3_vtab **out, char **pzErr)
{
    int rc = declare(db, t, pzErr);
    if (rc != SQLITE_OK)
        return rc;
    struct sql_vtab *vt = sqlite3_malloc(sizeof *vt);
    if (!vt)
        return SQLITE_NOMEM;
    memset(vt, 0, sizeof *vt);
    vt->t = t;
    vt->owns_t = owns;
    *out = &vt->base;
    return SQLITE_OK;
}

static void table_free(struct st__sql_table *t)
{
    if (!t)
        return;
    st__sql_source_free(t->own_src);
    st_catalog_free(t->own_cat);
    free(t);
}

/* --- the module "simpletrace" ---------------------------------------------------------------- */

/* Which table of src args names (table=, event=) into t. */
static int pick_table(struct st__sql_table *t, const struct st__sql_args *a, char *err, size_t errlen)
{
    const char *name = a->event ? a->event : a->table ? a->table : "records";
    t->kind = ST__SQL_EVENT;
    for (size_t k = 0; !a->event && k < sizeof fixed_names / sizeof fixed_names[0]; k++)
        if (fixed_names[k] && !strcmp(fixed_names[k], name))
            t->kind = (enum st__sql_kind)k;
    if (t->kind != ST__SQL_EVENT)
        return 0;
    for (size_t i = 0; i < t->src->nev; i++)
        if (!strcmp(t->src->ev[i].name, name)) {
            t->ev = &t->src->ev[i];
            return 0;
        }
    snprintf(err, errlen, "no table '%.200s': records, events, processes, drops, spans, or a declared event's", name);
    return -ENOENT;
}

/* A table of the module, from its arguments argv[3..argc) (argv[0..2]: module, database and table names). */
static int module_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                          char **pzErr)
{
    struct st__sql_args a;
    char err[ERR_LEN];
    err[0] = '\0';
    struct st__sql_table *t = calloc(1, sizeof *t);
    int ret = t ? st__sql_args_parse(&a, argc - 3, argv + 3, err, sizeof err) : -ENOMEM;
    if (ret == 0 && a.nevents_files)
        ret = st_catalog_load(&t->own_cat, (const char *const *)a.events_files, a.nevents_files, err, sizeof err);
    if (ret == 0) {
        struct st__sql_input in = {.traces = (const char *const *)a.traces, .ntraces = a.ntraces, .cat = t->own_cat,
                                   .rd = &a.rd, .pairs = (const char *const *)a.pairs, .npairs = a.npairs,
                                   .no_default_pairs = a.no_default_pairs};
        ret = st__sql_source_new(&t->own_src, &in, err, sizeof err);
        t->src = t->own_src;
    }
    if (ret == 0)
        ret = pick_table(t, &a, err, sizeof err);
    if (t) {
        t->reads = aux;
        st__sql_args_free(&a);
    }
    if (ret < 0) {
        table_free(t);
        if (ret == -ENOMEM && !err[0])
            return SQLITE_NOMEM;
        *pzErr = sqlite3_mprintf("simpletrace: %s", err);
        return SQLITE_ERROR;
    }
    int rc = new_vtab(db, t, true, out, pzErr);
    if (rc != SQLITE_OK)
        table_free(t);
    return rc;
}

/* An eponymous table of the command: aux is its st__sql_table. */
static int eponymous_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                             char **pzErr)
{
    (void)argc, (void)argv;
    return new_vtab(db, aux, false, out, pzErr);
}

static int vt_disconnect(sqlite3_vtab *tab)
{
    struct sql_vtab *vt = (struct sql_vtab *)tab;
    if (vt->owns_t)
        table_free(vt->t);
    sqlite3_free(vt);
    return SQLITE_OK;
}

/* --- planning ---------------------------------------------------------------------------------- */

/* The column of t that is a time the reader can bound, or -1. */
static int ts_column(const struct st__sql_table *t)
{
    switch (t->kind) {
    case ST__SQL_RECORDS: return REC_TS;
    case ST__SQL_EVENT: return EV_TS;
    case ST__SQL_DROPS: return DROP_TS;
    case ST__SQL_SPANS: return SPAN_END;
    default: return -1;
    }
}

/* Whether a count per name fits: records grouped (GROUP BY or DISTINCT) by name alone, and no other column used. */
static bool grouped_plan(const struct st__sql_table *t, sqlite3_index_info *info)
{
    if (t->kind != ST__SQL_RECORDS || info->nOrderBy != 1 || info->aOrderBy[0].iColumn != REC_NAME ||
        (info->colUsed & ~((sqlite3_uint64)1 << REC_NAME)) != 0)
        return false;
    int d = sqlite3_vtab_distinct(info);
    return d == 1 || d == 2; /* grouped rows do (d 0 and 3 want them sorted) */
}

/* Number of columns of t. */
static int ncols_of(const struct st__sql_table *t)
{
    switch (t->kind) {
    case ST__SQL_RECORDS: return REC_NCOLS;
    case ST__SQL_EVENT: return EV_ARG0 + (int)t->ev->nargs;
    case ST__SQL_EVENTS: return CAT_NCOLS;
    case ST__SQL_PROCESSES: return PROC_NCOLS;
    case ST__SQL_DROPS: return DROP_NCOLS;
    default: return SPAN_NCOLS;
    }
}

/* The affinity column col of t was declared with: SQLITE_INTEGER, SQLITE_TEXT, 0 (none: spans.key). */
static int affinity_of(const struct st__sql_table *t, int col)
{
    if (t->kind == ST__SQL_EVENT && col >= EV_ARG0)
        return t->ev->args[col - EV_ARG0].text ? SQLITE_TEXT : SQLITE_INTEGER;
    if (t->kind == ST__SQL_SPANS)
        return col == SPAN_NAME ? SQLITE_TEXT : col == SPAN_KEY ? 0 : SQLITE_INTEGER;
    return SQLITE_INTEGER;
}

/*
 * A constraint c = VALUE that an index answers (index.c): on a table whose
 * rows are few enough to hold (not records), with a value SQLite knows
 * only as the query runs (another table's column: a join; a parameter);
 * a constant is better read through once.
 */
static bool index_plan(const struct st__sql_table *t, sqlite3_index_info *info, int i)
{
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    sqlite3_value *v;
    if (!c->usable || c->op != SQLITE_INDEX_CONSTRAINT_EQ || c->iColumn < 0 ||
        (t->kind != ST__SQL_EVENT && t->kind != ST__SQL_DROPS && t->kind != ST__SQL_SPANS) ||
        sqlite3_vtab_rhs_value(info, i, &v) == SQLITE_OK)
        return false;
    return affinity_of(t, c->iColumn) != SQLITE_TEXT || !strcmp(sqlite3_vtab_collation(info, i), "BINARY");
}

static int vt_best_index(sqlite3_vtab *tab, sqlite3_index_info *info)
{
    const struct st__sql_table *t = ((struct sql_vtab *)tab)->t;
    for (int i = 0; i < info->nConstraint; i++) {
        if (!index_plan(t, info, i))
            continue;
        /* idxNum the column, idxStr "K" and the columns used: the index keeps those */
        if (!(info->idxStr = sqlite3_mprintf("K%llx", (unsigned long long)info->colUsed)))
            return SQLITE_NOMEM;
        info->needToFreeIdxStr = 1;
        info->idxNum = info->aConstraint[i].iColumn;
        info->aConstraintUsage[i].argvIndex = 1;
        info->estimatedCost = 10; /* a lookup; the one read of the table is paid once */
        info->estimatedRows = 10;
        return SQLITE_OK;
    }
    int ts = ts_column(t);
    char plan[64];
    int n = 0;
    double cost = t->kind == ST__SQL_EVENTS || t->kind == ST__SQL_PROCESSES ? 100 : 1e6, rows = cost;
    if (t->kind == ST__SQL_EVENT || t->kind == ST__SQL_DROPS) { /* reads one event: fewer rows than records */
        cost /= 2;
        rows /= 10;
    }
    for (int i = 0; i < info->nConstraint && n < (int)sizeof plan - 2; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        char letter = 0;
        if (!c->usable)
            continue;
        if (c->iColumn == ts && ts >= 0) {
            switch (c->op) {
            case SQLITE_INDEX_CONSTRAINT_EQ: letter = t->kind == ST__SQL_SPANS ? 'U' : 'E'; break;
            case SQLITE_INDEX_CONSTRAINT_GT:
            case SQLITE_INDEX_CONSTRAINT_GE: letter = t->kind == ST__SQL_SPANS ? 0 : 'L'; break;
            case SQLITE_INDEX_CONSTRAINT_LT:
            case SQLITE_INDEX_CONSTRAINT_LE: letter = 'U'; break;
            default: break;
            }
            if (letter) {
                cost *= 0.5; /* the records outside are read, not decoded */
                rows *= letter == 'E' ? 0.001 : 0.3;
            }
        } else if (t->kind == ST__SQL_RECORDS && c->iColumn == REC_NAME && c->op == SQLITE_INDEX_CONSTRAINT_EQ &&
                   !strcmp(sqlite3_vtab_collation(info, i), "BINARY")) {
            letter = sqlite3_vtab_in(info, i, -1) ? 'I' : 'N';
            if (letter == 'I')
                sqlite3_vtab_in(info, i, 1);
            cost *= 0.2;
            rows *= 0.1;
        }
        if (letter) {
            plan[n++] = letter;
            info->aConstraintUsage[i].argvIndex = n;
        }
    }
    if (grouped_plan(t, info)) {
        plan[n++] = 'G';
        info->orderByConsumed = 1;
    }
    plan[n] = '\0';
    if (!(info->idxStr = sqlite3_mprintf("%s", plan)))
        return SQLITE_NOMEM;
    info->needToFreeIdxStr = 1;
    info->estimatedCost = cost;
    info->estimatedRows = (sqlite3_int64)(rows < 1 ? 1 : rows);
    return SQLITE_OK;
}

/* --- the plan, as xFilter gets it --------------------------------------------------------------- */

/* A bound of ts from v: false when v is no number (SQLite filters). Loose: floor for lower, ceil for upper. */
static bool bound_of(sqlite3_value *v, bool lower, int64_t *out)
{
    int type = sqlite3_value_numeric_type(v);
    if (type == SQLITE_INTEGER) {
        *out = sqlite3_value_int64(v);
        return true;
    }
    if (type != SQLITE_FLOAT)
        return false;
    double d = sqlite3_value_double(v);
    if (isnan(d))
        return false;
    d = lower ? floor(d) : ceil(d);
    *out = d >= 9223372036854775807.0 ? INT64_MAX : d <= -9223372036854775808.0 ? INT64_MIN : (int64_t)d;
    return true;
}

static void add_bound(struct st__sql_plan *p, sqlite3_value *v, bool lower)
{
    int64_t b;
    if (!bound_of(v, lower, &b))
        return;
    if (lower && (!p->range.have_from || b > p->range.from)) {
        p->range.have_from = true;
        p->range.from = b;
    } else if (!lower && (!p->range.have_to || b < p->range.to)) {
        p->range.have_to = true;
        p->range.to = b;
    }
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Appends v's text (a name) to the set; other values name no event. 0 or -ENOMEM. */
static int set_add(char ***set, size_t *n, sqlite3_value *v)
{
    if (sqlite3_value_type(v) != SQLITE_TEXT)
        return 0;
    char **m = realloc(*set, (*n + 1) * sizeof *m);
    if (!m)
        return -ENOMEM;
    *set = m;
    if (!(m[*n] = strdup((const char *)sqlite3_value_text(v))))
        return -ENOMEM;
    (*n)++;
    return 0;
}

/* The plan's names become their intersection with set (a constraint's names). */
static void intersect(struct st__sql_plan *p, bool *have, char **set, size_t n)
{
    if (!*have) {
        *have = true;
        p->names = set;
        p->nnames = n;
        return;
    }
    size_t kept = 0;
    for (size_t i = 0; i < p->nnames; i++) {
        bool in = false;
        for (size_t k = 0; !in && k < n; k++)
            in = !strcmp(p->names[i], set[k]);
        if (in)
            p->names[kept++] = p->names[i];
        else
            free(p->names[i]);
    }
    p->nnames = kept;
    free_names(set, n);
}

static int decode_plan(const char *idx, int argc, sqlite3_value **argv, struct st__sql_plan *p)
{
    bool have_names = false;
    memset(p, 0, sizeof *p);
    for (int k = 0; idx && idx[k]; k++) {
        sqlite3_value *v = k < argc ? argv[k] : NULL;
        char **set = NULL;
        size_t n = 0;
        int ret = 0;
        switch (idx[k]) {
        case 'L': add_bound(p, v, true); break;
        case 'U': add_bound(p, v, false); break;
        case 'E':
            add_bound(p, v, true);
            add_bound(p, v, false);
            break;
        case 'N':
            ret = set_add(&set, &n, v);
            break;
        case 'I': {
            sqlite3_value *x;
            int rc = sqlite3_vtab_in_first(v, &x);
            for (; rc == SQLITE_OK && ret == 0; rc = sqlite3_vtab_in_next(v, &x))
                ret = set_add(&set, &n, x);
            if (rc != SQLITE_OK && rc != SQLITE_DONE)
                ret = -ENOMEM;
            break;
        }
        case 'G': p->grouped = true; break;
        default: break;
        }
        if (ret < 0) {
            free_names(set, n);
            return ret;
        }
        if (idx[k] == 'N' || idx[k] == 'I')
            intersect(p, &have_names, set, n);
    }
    if (have_names && p->nnames == 0)
        p->empty = true;
    if (p->range.have_from && p->range.have_to && p->range.from > p->range.to)
        p->empty = true;
    return 0;
}

/* --- cursors ------------------------------------------------------------------------------------------ */

static int vt_open(sqlite3_vtab *tab, sqlite3_vtab_cursor **out)
{
    (void)tab;
    struct sql_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    c->eof = true;
    *out = &c->base;
    return SQLITE_OK;
}

/* Ends the scan of the last xFilter. Rows made in memory and the index stay: they do not depend on it. */
static void cursor_reset(struct sql_cursor *c)
{
    st__sql_scan_stop(&c->scan);
    st__sql_spans_stop(c->spans);
    c->spans = NULL;
    c->row = 0;
    c->rowid = 0;
    c->eof = true;
}

static int vt_close(sqlite3_vtab_cursor *cur)
{
    struct sql_cursor *c = (struct sql_cursor *)cur;
    cursor_reset(c);
    st__sql_rows_free(&c->rows);
    st__sql_index_free(c->ix);
    sqlite3_free(cur);
    return SQLITE_OK;
}

/* Sets the table's error message; returns the SQLite code of err (negative errno). */
static int fail(struct sql_cursor *c, int err, const char *msg)
{
    sqlite3_vtab *tab = c->base.pVtab;
    if (err == -ENOMEM)
        return SQLITE_NOMEM;
    sqlite3_free(tab->zErrMsg);
    tab->zErrMsg = sqlite3_mprintf("simpletrace: %s", msg);
    return SQLITE_ERROR;
}

/* The next row of a scan or of the spans: 1, 0 at the end, or a negative errno with err set. */
static int next_row(struct sql_cursor *c, char *err, size_t errlen)
{
    switch (c->mode) {
    case MODE_ROWS: c->row = (size_t)c->rowid; return c->rowid < (sqlite3_int64)c->rows.nrows;
    case MODE_INDEX: return (c->ix_row = st__sql_index_next(c->ix)) != NULL;
    case MODE_SPANS: return st__sql_spans_next(c->spans, err, errlen);
    default: return st__sql_scan_next(&c->scan, err, errlen);
    }
}

/* Column col of the current row of a scan or the spans. */
static int row_cell(struct sql_cursor *c, int col, struct st__sql_cell *cell, char *err, size_t errlen)
{
    *cell = (struct st__sql_cell){0};
    switch (c->mode) {
    case MODE_ROWS:
        if (col >= 0 && (size_t)col < c->rows.ncols)
            *cell = c->rows.cells[c->row * c->rows.ncols + (size_t)col];
        return 0;
    case MODE_INDEX:
        if (col >= 0 && col < 63 && (c->ix_used >> col & 1))
            *cell = c->ix_row[col];
        return 0;
    case MODE_SPANS: return st__sql_spans_cell(c->spans, col, cell);
    default: return st__sql_scan_cell(&c->scan, col, cell, err, errlen);
    }
}

static int vt_next(sqlite3_vtab_cursor *cur)
{
    struct sql_cursor *c = (struct sql_cursor *)cur;
    char err[ERR_LEN];
    err[0] = '\0';
    int ret = next_row(c, err, sizeof err);
    if (ret < 0) {
        c->eof = true;
        return fail(c, ret, err);
    }
    c->eof = ret == 0;
    c->rowid++;
    return SQLITE_OK;
}

/* Starts reading t in the cursor's mode (a scan, the spans) with plan p. */
static int start(struct sql_cursor *c, const struct st__sql_table *t, const struct st__sql_plan *p, char *err,
                 size_t errlen)
{
    c->mode = t->kind == ST__SQL_SPANS ? MODE_SPANS : MODE_SCAN;
    if (c->mode == MODE_SPANS)
        return st__sql_spans_start(&c->spans, t, p, err, errlen);
    return st__sql_scan_start(&c->scan, t, p, err, errlen);
}

/* Reads all of t once into an index on column col, keeping the columns of used (and col). */
static int build_index(struct sql_cursor *c, const struct st__sql_table *t, int col, sqlite3_uint64 used, char *err,
                       size_t errlen)
{
    struct st__sql_plan all = {0};
    int ncols = ncols_of(t), ret;
    st__sql_index_free(c->ix);
    c->ix = NULL;
    used |= (sqlite3_uint64)1 << col;
    if ((ret = st__sql_index_new(&c->ix, (size_t)ncols, col, affinity_of(t, col))) < 0 ||
        (ret = start(c, t, &all, err, errlen)) < 0)
        goto out;
    while ((ret = next_row(c, err, errlen)) == 1) {
        struct st__sql_cell *row = st__sql_index_row(c->ix), cell;
        if (!row) {
            ret = -ENOMEM;
            break;
        }
        for (int k = 0; ret == 1 && k < ncols && k < 63; k++) {
            if (!(used >> k & 1))
                continue;
            /* one cell at a time: a column's text may live in a buffer the next one reuses */
            if ((ret = row_cell(c, k, &cell, err, errlen)) == 0)
                ret = st__sql_cell_copy(&row[k], &cell) < 0 ? -ENOMEM : 1;
        }
        if (ret != 1)
            break;
    }
    if (ret == 0)
        ret = st__sql_index_finish(c->ix);
out:
    cursor_reset(c);
    if (ret < 0) {
        st__sql_index_free(c->ix);
        c->ix = NULL;
        if (ret == -ENOMEM)
            snprintf(err, errlen, "out of memory");
        return ret;
    }
    c->ix_used = used;
    return 0;
}

/* The index plan: the index (made at the first call), looked up for v. */
static int filter_index(struct sql_cursor *c, const struct st__sql_table *t, int col, const char *idx,
                        sqlite3_value *v, char *err, size_t errlen)
{
    sqlite3_uint64 used = strtoull(idx + 1, NULL, 16) | (sqlite3_uint64)1 << col;
    if (!c->ix || st__sql_index_col(c->ix) != col || c->ix_used != used) {
        int ret = build_index(c, t, col, used, err, errlen);
        if (ret < 0)
            return ret;
    }
    c->mode = MODE_INDEX;
    st__sql_index_seek(c->ix, v);
    return 0;
}

static int vt_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc, sqlite3_value **argv)
{
    struct sql_cursor *c = (struct sql_cursor *)cur;
    const struct st__sql_table *t = ((struct sql_vtab *)cur->pVtab)->t;
    struct st__sql_plan p = {0};
    char err[ERR_LEN];
    err[0] = '\0';
    cursor_reset(c);
    int ret = 0;
    if (idxStr && idxStr[0] == 'K' && argc == 1) {
        ret = filter_index(c, t, idxNum, idxStr, argv[0], err, sizeof err);
    } else if (t->kind == ST__SQL_EVENTS || t->kind == ST__SQL_PROCESSES) {
        c->mode = MODE_ROWS;
        if (!c->have_rows)
            ret = st__sql_meta_rows(t, &c->rows, err, sizeof err);
        c->have_rows = ret == 0;
    } else if ((ret = decode_plan(idxStr, argc, argv, &p)) == 0) {
        ret = start(c, t, &p, err, sizeof err);
    }
    free_names(p.names, p.nnames);
    if (ret < 0)
        return fail(c, ret, err);
    return vt_next(cur);
}

static int vt_eof(sqlite3_vtab_cursor *cur)
{
    return ((struct sql_cursor *)cur)->eof;
}

static int vt_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    struct sql_cursor *c = (struct sql_cursor *)cur;
    struct st__sql_cell cell;
    char err[ERR_LEN];
    err[0] = '\0';
    int ret = row_cell(c, col, &cell, err, sizeof err);
    if (ret == -ENOMEM) {
        sqlite3_result_error_nomem(ctx);
        return SQLITE_NOMEM;
    }
    if (ret < 0) {
        char *msg = sqlite3_mprintf("simpletrace: %s", err);
        sqlite3_result_error(ctx, msg ? msg : "simpletrace: error", -1);
        sqlite3_free(msg);
        return SQLITE_ERROR;
    }
    st__sql_result(ctx, &cell);
    return SQLITE_OK;
}

static int vt_rowid(sqlite3_vtab_cursor *cur, sqlite_int64 *rowid)
{
    *rowid = ((struct sql_cursor *)cur)->rowid;
    return SQLITE_OK;
}

/* --- registration ------------------------------------------------------------------------------------- */

static const sqlite3_module simpletrace_module = {
    .iVersion = 1,
    .xCreate = module_connect,
    .xConnect = module_connect,
    .xBestIndex = vt_best_index,
    .xDisconnect = vt_disconnect,
    .xDestroy = vt_disconnect,
    .xOpen = vt_open,
    .xClose = vt_close,
    .xFilter = vt_filter,
    .xNext = vt_next,
    .xEof = vt_eof,
    .xColumn = vt_column,
    .xRowid = vt_rowid,
};

/* Eponymous only (xCreate NULL): the table exists by its module's name. */
static const sqlite3_module eponymous_module = {
    .iVersion = 1,
    .xConnect = eponymous_connect,
    .xBestIndex = vt_best_index,
    .xDisconnect = vt_disconnect,
    .xDestroy = vt_disconnect,
    .xOpen = vt_open,
    .xClose = vt_close,
    .xFilter = vt_filter,
    .xNext = vt_next,
    .xEof = vt_eof,
    .xColumn = vt_column,
    .xRowid = vt_rowid,
};

static void reads_unref(void *p)
{
    struct st__sql_reads *rd = p;
    if (rd && --rd->refs == 0)
        free(rd);
}

/* simpletrace_reads(): what the connection's scans read so far, as a JSON object. */
static void reads_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    const struct st__sql_reads *rd = sqlite3_user_data(ctx);
    (void)argc, (void)argv;
    char *json = sqlite3_mprintf("{\"scans\":%llu,\"records\":%llu,\"skipped\":%llu,\"bytes\":%llu,\"frames\":%llu,"
                                 "\"frames_read\":%llu,\"frames_skipped\":%llu}",
                                 (unsigned long long)rd->scans, (unsigned long long)rd->records,
                                 (unsigned long long)rd->skipped, (unsigned long long)rd->bytes,
                                 (unsigned long long)rd->frames, (unsigned long long)rd->frames_read,
                                 (unsigned long long)rd->frames_skipped);
    if (!json) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    sqlite3_result_text(ctx, json, -1, sqlite3_free);
    sqlite3_result_subtype(ctx, 'J'); /* JSON, for SQLite's json functions */
}

/* The module "simpletrace" and the function simpletrace_reads(), sharing the connection's totals (*out). */
static int register_module(sqlite3 *db, struct st__sql_reads **out)
{
    struct st__sql_reads *rd = calloc(1, sizeof *rd);
    if (!rd)
        return SQLITE_NOMEM;
    rd->refs = 2; /* each registration drops its reference when the connection closes, or when it fails */
    int rc = sqlite3_create_module_v2(db, "simpletrace", &simpletrace_module, rd, reads_unref);
    int rc2 = sqlite3_create_function_v2(db, "simpletrace_reads", 0, SQLITE_UTF8, rd, reads_fn, NULL, NULL,
                                         reads_unref);
    *out = rd;
    return rc != SQLITE_OK ? rc : rc2;
}

int st__sql_register_module(sqlite3 *db)
{
    struct st__sql_reads *rd;
    return register_module(db, &rd);
}

static void free_aux(void *p)
{
    free(p);
}

static int register_one(sqlite3 *db, struct st__sql_source *src, struct st__sql_reads *rd, enum st__sql_kind kind,
                        const struct st__sql_event *ev, const char *name, char *err, size_t errlen)
{
    struct st__sql_table *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return SQLITE_NOMEM;
    }
    *t = (struct st__sql_table){.kind = kind, .src = src, .ev = ev, .reads = rd};
    /* sqlite3_create_module_v2() calls free_aux on failure too */
    int rc = sqlite3_create_module_v2(db, name, &eponymous_module, t, free_aux);
    if (rc != SQLITE_OK)
        snprintf(err, errlen, "table %s: %s", name, sqlite3_errmsg(db));
    return rc;
}

/* Whether name is a fixed table's, or an earlier event's, as SQL compares names (ignoring case). */
static const char *name_taken(const struct st__sql_source *src, size_t i)
{
    const char *name = src->ev[i].name;
    for (size_t k = 0; k < sizeof fixed_names / sizeof fixed_names[0]; k++)
        if (fixed_names[k] && !strcasecmp(fixed_names[k], name))
            return fixed_names[k];
    for (size_t k = 0; k < i; k++)
        if (!strcasecmp(src->ev[k].name, name))
            return src->ev[k].name;
    return NULL;
}

int st__sql_register_tables(sqlite3 *db, struct st__sql_source *src, st__sql_warn_fn warn, void *opaque, char *err,
                            size_t errlen)
{
    struct st__sql_reads *rd;
    int rc = register_module(db, &rd);
    if (rc != SQLITE_OK)
        snprintf(err, errlen, "%s", sqlite3_errmsg(db));
    for (size_t k = 0; rc == SQLITE_OK && k < sizeof fixed_names / sizeof fixed_names[0]; k++)
        if (fixed_names[k])
            rc = register_one(db, src, rd, (enum st__sql_kind)k, NULL, fixed_names[k], err, errlen);
    for (size_t i = 0; rc == SQLITE_OK && i < src->nev; i++) {
        const char *taken = name_taken(src, i);
        if (taken) {
            char msg[1024];
            snprintf(msg, sizeof msg,
                     "event %.200s has no table of its own: the name is the table %.200s's "
                     "(CREATE VIRTUAL TABLE t USING simpletrace(..., event=%.200s) makes one)",
                     src->ev[i].name, taken, src->ev[i].name);
            if (warn)
                warn(msg, opaque);
            continue;
        }
        rc = register_one(db, src, rd, ST__SQL_EVENT, &src->ev[i], src->ev[i].name, err, errlen);
    }
    return rc;
}
