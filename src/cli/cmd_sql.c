/*
 * simpletrace sql [OPTIONS] [TRACE-EVENTS...] TRACE... [-e QUERY]...
 *
 * SQL on trace files (src/sql/): the tables are SQLite virtual tables over
 * the reader, named so that nothing has to be created (records, events,
 * processes, drops, spans, one per declared event). Statements come from
 * each -e, or from standard input, one per ';' (SQLite's own rule,
 * sqlite3_complete(), says where a statement ends), with a prompt when it
 * is a terminal. Each statement's rows are written as they come: a table
 * (its widths from the first rows), CSV, or JSON lines.
 *
 * An error names where it is: SQLite's message (it names the table or
 * column), and the line and column of the statement it points at
 * (sqlite3_error_offset()); the command then stops with status 1 (at a
 * prompt it goes on to the next statement).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simpletrace/reader.h>

#include "commands.h"
#include "growbuf.h"
#include "help_texts.h"
#include "json_escape.h"
#include "reader_opts.h"
#include "span_opts.h"
#include "sql.h"

#define PROG "simpletrace sql"
#define TABLE_SAMPLE 1000 /* rows a table's widths are taken from */

enum sql_format { FORMAT_TABLE, FORMAT_CSV, FORMAT_JSON };

struct sql_cli {
    struct cli_input in;
    const char **queries; /* -e, in order (pointers into argv) */
    size_t nqueries;
    const char *pairs[CLI_MAX_PAIRS];
    size_t npairs;
    bool no_default_pairs;
    enum sql_format format;
};

static int usage_error(const char *fmt, const char *arg)
{
    return cli_usage_error("sql", fmt, arg);
}

/* --- options ------------------------------------------------------------------------------- */

enum { OPT_PAIR = CLI_OPT_OWN, OPT_NO_DEFAULT_PAIRS, OPT_FORMAT, OPT_HELP };

static int add_query(const char *q, struct sql_cli *o)
{
    const char **more = realloc(o->queries, (o->nqueries + 1) * sizeof *more);
    if (!more) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    o->queries = more;
    more[o->nqueries++] = q;
    return 0;
}

static int parse_one(int c, struct sql_cli *o, char **argv)
{
    switch (c) {
    case 'e': return add_query(optarg, o);
    case OPT_PAIR: return cli_add_pair("sql", optarg, o->pairs, &o->npairs);
    case OPT_NO_DEFAULT_PAIRS: o->no_default_pairs = true; return 0;
    case OPT_FORMAT:
        if (!strcmp(optarg, "table"))
            o->format = FORMAT_TABLE;
        else if (!strcmp(optarg, "csv"))
            o->format = FORMAT_CSV;
        else if (!strcmp(optarg, "json"))
            o->format = FORMAT_JSON;
        else
            return usage_error("unknown format '%s' (table, csv or json)", optarg);
        return 0;
    case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
    default: {
        int r = cli_reader_option("sql", c, optarg, &o->in);
        return r < 0 ? usage_error("unknown option '%s'", argv[optind - 1]) : r;
    }
    }
}

/* Parses argv into *o. Returns -1 to go on, or the exit status (0 for --help). */
static int parse_args(int argc, char **argv, struct sql_cli *o)
{
    static const struct option longopts[] = {
        {"pair", required_argument, NULL, OPT_PAIR},
        {"no-default-pairs", no_argument, NULL, OPT_NO_DEFAULT_PAIRS},
        {"format", required_argument, NULL, OPT_FORMAT},
        CLI_READER_LONGOPTS,
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    int c, ret = 0;
    opterr = 0;
    optind = 1;
    while (ret == 0 && (c = getopt_long(argc, argv, ":he:", longopts, NULL)) != -1) {
        if (c == 'h' || c == OPT_HELP) {
            fputs(st__help_sql, stdout);
            return 0;
        }
        ret = parse_one(c, o, argv);
    }
    if (ret)
        return ret;
    if (cli_trace_operands("sql", argc, argv, optind, &o->in))
        return 2;
    for (size_t i = 0; i < o->in.ntraces; i++)
        if (!strcmp(o->in.traces[i], "-"))
            return usage_error("%s", "a trace from standard input cannot be read: each table scan reads the trace "
                                     "anew (and standard input gives the statements); give a file");
    return -1;
}

/* --- output -------------------------------------------------------------------------------- */

/* How one statement's rows are written. */
struct out {
    enum sql_format format;
    sqlite3_stmt *st;
    int ncols;
    bool header_done;
    /* table: the first rows, held until the widths are known */
    char **held;          /* rows * ncols cell texts (owned) */
    bool *numeric;        /* per column: right-aligned (its held cells are all numbers or NULL) */
    size_t nheld;
    size_t *width;        /* per column, in characters */
    struct st__growbuf cell;
};

/* A REAL as its shortest text that reads back to it ("%.15g", else "%.17g"). */
static void real_text(double d, char *buf, size_t len)
{
    snprintf(buf, len, "%.15g", d);
    if (strtod(buf, NULL) != d)
        snprintf(buf, len, "%.17g", d);
}

/* Column i's value as text into b (NUL-terminated): "" for NULL, blobs in hex. */
static void value_text(sqlite3_stmt *st, int i, struct st__growbuf *b)
{
    char num[40];
    b->len = 0;
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        snprintf(num, sizeof num, "%lld", (long long)sqlite3_column_int64(st, i));
        st__growbuf_puts(b, num);
        break;
    case SQLITE_FLOAT:
        real_text(sqlite3_column_double(st, i), num, sizeof num);
        st__growbuf_puts(b, num);
        break;
    case SQLITE_TEXT: st__growbuf_put(b, sqlite3_column_text(st, i), (size_t)sqlite3_column_bytes(st, i)); break;
    case SQLITE_BLOB: {
        const uint8_t *p = sqlite3_column_blob(st, i);
        for (int k = 0; k < sqlite3_column_bytes(st, i); k++) {
            snprintf(num, sizeof num, "%02x", p[k]);
            st__growbuf_put(b, num, 2);
        }
        break;
    }
    default: break;
    }
    st__growbuf_put(b, "", 1);
}

/* --- JSON lines --- */

static void json_value(sqlite3_stmt *st, int i, struct st__growbuf *b)
{
    int type = sqlite3_column_type(st, i);
    if (type == SQLITE_NULL || (type == SQLITE_FLOAT && !isfinite(sqlite3_column_double(st, i)))) {
        st__growbuf_puts(b, "null");
        return;
    }
    if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) {
        struct st__growbuf t = {0};
        value_text(st, i, &t);
        st__growbuf_puts(b, t.data ? (const char *)t.data : "null");
        st__growbuf_free(&t);
        return;
    }
    const uint8_t *s = type == SQLITE_TEXT ? sqlite3_column_text(st, i) : NULL;
    size_t n = (size_t)sqlite3_column_bytes(st, i);
    if (type == SQLITE_BLOB) { /* hex in a string */
        struct st__growbuf t = {0};
        value_text(st, i, &t);
        st__growbuf_json(b, t.data ? (const char *)t.data : "");
        st__growbuf_free(&t);
        return;
    }
    char *p = (char *)st__growbuf_room(b, ST__JSON_ESCAPED_MAX(n) + 2);
    if (p)
        st__growbuf_commit(b, (size_t)(st__json_string(p, s ? s : (const uint8_t *)"", s ? n : 0) - p));
}

static void json_row(struct out *o)
{
    struct st__growbuf *b = &o->cell;
    b->len = 0;
    st__growbuf_put(b, "{", 1);
    for (int i = 0; i < o->ncols; i++) {
        if (i)
            st__growbuf_put(b, ",", 1);
        st__growbuf_json(b, sqlite3_column_name(o->st, i));
        st__growbuf_put(b, ":", 1);
        json_value(o->st, i, b);
    }
    st__growbuf_put(b, "}\n", 2);
    if (!b->failed)
        fwrite(b->data, 1, b->len, stdout);
}

/* --- CSV (RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled) --- */

static void csv_field(const char *s, size_t n)
{
    if (!memchr(s, ',', n) && !memchr(s, '"', n) && !memchr(s, '\n', n) && !memchr(s, '\r', n)) {
        fwrite(s, 1, n, stdout);
        return;
    }
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            putchar('"');
        putchar(s[i]);
    }
    putchar('"');
}

static void csv_row(struct out *o, bool header)
{
    for (int i = 0; i < o->ncols; i++) {
        if (i)
            putchar(',');
        if (header) {
            const char *name = sqlite3_column_name(o->st, i);
            csv_field(name, strlen(name));
        } else {
            value_text(o->st, i, &o->cell);
            csv_field((const char *)o->cell.data, o->cell.len - 1);
        }
    }
    fputs("\r\n", stdout);
}

/* --- a table --- */

/* Characters (UTF-8 code points) in s. */
static size_t chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* A cell as a table shows it: line breaks and tabs as \n, \r, \t, so that a row stays one line. */
static char *table_cell(const char *s)
{
    size_t n = strlen(s), extra = 0;
    for (size_t i = 0; i < n; i++)
        extra += s[i] == '\n' || s[i] == '\r' || s[i] == '\t';
    char *d = malloc(n + extra + 1), *p = d;
    if (!d)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *esc = s[i] == '\n' ? "\\n" : s[i] == '\r' ? "\\r" : s[i] == '\t' ? "\\t" : NULL;
        if (esc) {
            memcpy(p, esc, 2);
            p += 2;
        } else {
            *p++ = s[i];
        }
    }
    *p = '\0';
    return d;
}

static void pad(size_t n)
{
    while (n--)
        putchar(' ');
}

static void table_line(const struct out *o, char *const *cells)
{
    for (int i = 0; i < o->ncols; i++) {
        size_t w = chars(cells[i]), room = o->width[i] > w ? o->width[i] - w : 0;
        if (i)
            fputs("  ", stdout);
        if (o->numeric[i])
            pad(room);
        fputs(cells[i], stdout);
        if (!o->numeric[i] && i + 1 < o->ncols)
            pad(room);
    }
    putchar('\n');
}

/* Writes the header, its rule and the held rows, with the widths they give. */
static void table_flush(struct out *o)
{
    char **names = calloc((size_t)o->ncols, sizeof *names);
    for (int i = 0; names && i < o->ncols; i++) {
        names[i] = (char *)sqlite3_column_name(o->st, i);
        size_t w = chars(names[i]);
        if (w > o->width[i])
            o->width[i] = w;
    }
    if (names) {
        table_line(o, names);
        for (int i = 0; i < o->ncols; i++) {
            if (i)
                fputs("  ", stdout);
            for (size_t k = 0; k < o->width[i]; k++)
                putchar('-');
        }
        putchar('\n');
    }
    free(names);
    for (size_t r = 0; r < o->nheld; r++)
        table_line(o, o->held + r * (size_t)o->ncols);
    o->header_done = true;
}

/* One row: held while the widths are being found, then written. -1 without memory. */
static int table_row(struct out *o)
{
    size_t n = (size_t)o->ncols;
    char **cells = o->header_done ? calloc(n, sizeof *cells) : o->held + o->nheld * n;
    if (!cells)
        return -1;
    for (int i = 0; i < o->ncols; i++) {
        value_text(o->st, i, &o->cell);
        if (!(cells[i] = table_cell(o->cell.failed ? "" : (const char *)o->cell.data)))
            return -1;
        int type = sqlite3_column_type(o->st, i);
        if (!o->header_done) {
            size_t w = chars(cells[i]);
            if (w > o->width[i])
                o->width[i] = w;
            if (type != SQLITE_INTEGER && type != SQLITE_FLOAT && type != SQLITE_NULL)
                o->numeric[i] = false;
        }
    }
    if (o->header_done) {
        table_line(o, cells);
        for (size_t i = 0; i < n; i++)
            free(cells[i]);
        free(cells);
    } else if (++o->nheld == TABLE_SAMPLE) {
        table_flush(o);
    }
    return 0;
}

static int out_start(struct out *o, enum sql_format format, sqlite3_stmt *st)
{
    memset(o, 0, sizeof *o);
    o->format = format;
    o->st = st;
    o->ncols = sqlite3_column_count(st);
    if (format != FORMAT_TABLE || o->ncols == 0)
        return 0;
    size_t n = (size_t)o->ncols;
    o->held = calloc(TABLE_SAMPLE * n, sizeof *o->held);
    o->numeric = malloc(n * sizeof *o->numeric);
    o->width = calloc(n, sizeof *o->width);
    if (!o->held || !o->numeric || !o->width)
        return -1;
    for (size_t i = 0; i < n; i++)
        o->numeric[i] = true;
    return 0;
}

static int out_row(struct out *o)
{
    switch (o->format) {
    case FORMAT_JSON: json_row(o); return o->cell.failed ? -1 : 0;
    case FORMAT_CSV:
        if (!o->header_done) {
            csv_row(o, true);
            o->header_done = true;
        }
        csv_row(o, false);
        return o->cell.failed ? -1 : 0;
    default: return table_row(o);
    }
}

/* After the last row: a table's header and rows when fewer than the sample; a CSV header without rows. */
static void out_end(struct out *o, bool had_rows)
{
    if (o->ncols > 0 && o->format == FORMAT_TABLE && !o->header_done && had_rows)
        table_flush(o);
    else if (o->ncols > 0 && o->format == FORMAT_CSV && !o->header_done)
        csv_row(o, true);
    for (size_t i = 0; o->held && i < o->nheld * (size_t)o->ncols; i++)
        free(o->held[i]);
    free(o->held);
    free(o->numeric);
    free(o->width);
    st__growbuf_free(&o->cell);
}

/* --- statements ---------------------------------------------------------------------------- */

/* Where the statements come from, for messages. */
struct origin {
    const char *what;   /* "-e 2", "standard input" */
    const char *text;   /* the whole text (for line and column) */
    size_t first_line;  /* the line text starts at (standard input: counted) */
};

/* Prints SQLite's error for the statement at stmt (in o->text), with the line and column it points at. */
static void report(sqlite3 *db, const struct origin *o, const char *stmt)
{
    int off = sqlite3_error_offset(db);
    const char *msg = sqlite3_errmsg(db);
    if (off < 0) {
        fprintf(stderr, PROG ": %s: %s\n", o->what, msg);
        return;
    }
    const char *at = stmt + off, *line = o->text;
    size_t lineno = o->first_line;
    for (const char *p = o->text; p < at; p++)
        if (*p == '\n') {
            lineno++;
            line = p + 1;
        }
    size_t col = 1;
    for (const char *p = line; p < at; p++)
        col += ((unsigned char)*p & 0xc0) != 0x80;
    const char *eol = strchr(line, '\n');
    int len = eol ? (int)(eol - line) : (int)strlen(line);
    fprintf(stderr, PROG ": %s, line %zu, column %zu: %s\n  %.*s\n  %*s^\n", o->what, lineno, col, msg, len, line,
            (int)(col - 1), "");
}

/* Runs every statement of text; 0, or 1 after the first error (reported). */
static int run_text(const struct sql_cli *cli, sqlite3 *db, const struct origin *org)
{
    const char *tail = org->text;
    while (*tail) {
        sqlite3_stmt *st = NULL;
        const char *start = tail;
        if (sqlite3_prepare_v2(db, start, -1, &st, &tail) != SQLITE_OK) {
            report(db, org, start);
            return 1;
        }
        if (!st) /* blanks or a comment */
            continue;
        struct out o;
        int rc = out_start(&o, cli->format, st) < 0 ? SQLITE_NOMEM : SQLITE_ROW;
        bool had_rows = false;
        while (rc == SQLITE_ROW && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            had_rows = true;
            if (out_row(&o) < 0)
                rc = SQLITE_NOMEM;
        }
        out_end(&o, had_rows);
        fflush(stdout);
        if (rc != SQLITE_DONE) {
            if (rc == SQLITE_NOMEM)
                fprintf(stderr, PROG ": %s: out of memory\n", org->what);
            else
                report(db, org, start);
            sqlite3_finalize(st);
            return 1;
        }
        sqlite3_finalize(st);
        if (cli->format == FORMAT_TABLE && o.ncols > 0 && tail[strspn(tail, " \t\r\n")])
            putchar('\n'); /* a blank line between two statements' tables */
    }
    return 0;
}

/* Statements from standard input, one per ';', with a prompt on a terminal (which goes on after an error). */
static int run_stdin(const struct sql_cli *cli, sqlite3 *db)
{
    bool tty = isatty(STDIN_FILENO);
    struct st__growbuf stmt = {0};
    char *line = NULL;
    size_t cap = 0, lineno = 0, first = 1;
    int status = 0;
    ssize_t n;
    for (;;) {
        if (tty) {
            fputs(stmt.len ? "   ...> " : "sql> ", stdout);
            fflush(stdout);
        }
        if ((n = getline(&line, &cap, stdin)) < 0)
            break;
        lineno++;
        if (stmt.len == 0)
            first = lineno;
        st__growbuf_put(&stmt, line, (size_t)n);
        st__growbuf_put(&stmt, "", 1);
        if (stmt.failed) {
            fprintf(stderr, PROG ": out of memory\n");
            status = 1;
            break;
        }
        stmt.len--; /* the NUL stays after the text */
        if (!sqlite3_complete((const char *)stmt.data))
            continue;
        struct origin org = {.what = "standard input", .text = (const char *)stmt.data, .first_line = first};
        if (run_text(cli, db, &org)) {
            status = 1;
            if (!tty)
                break;
        }
        stmt.len = 0;
    }
    if (status == 0 && stmt.len) { /* the last statement without its ';' */
        st__growbuf_put(&stmt, "", 1);
        struct origin org = {.what = "standard input", .text = (const char *)stmt.data, .first_line = first};
        for (const char *p = org.text; *p; p++)
            if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
                status = run_text(cli, db, &org);
                break;
            }
    }
    if (tty)
        putchar('\n');
    free(line);
    st__growbuf_free(&stmt);
    return status;
}

/* --- running it --------------------------------------------------------------------------------- */

static void warn(const char *message, void *opaque)
{
    (void)opaque;
    fprintf(stderr, PROG ": warning: %s\n", message);
}

/*
 * Opens the traces as print does (its messages and hints for a bad trace,
 * conflicts, pieces), reads their first record, and makes the tables'
 * source from what that settled. 0, or the exit status.
 */
static int open_source(struct sql_cli *o, struct cli_trace *t, struct st__sql_source **src)
{
    int ret = cli_trace_open("sql", &o->in, t);
    if (ret)
        return ret;
    const struct st_record *rec;
    if (st_reader_next(t->r, &rec) < 0) {
        char msg[2048];
        cli_reader_error("sql", t, &o->in, msg, sizeof msg);
        fprintf(stderr, PROG ": %s\n", msg);
        return 1;
    }
    st_reader_close(t->r); /* each scan opens its own; the catalog (t->cat) stays */
    t->r = NULL;
    char err[2048];
    struct st__sql_input in = {.traces = (const char *const *)o->in.traces, .ntraces = o->in.ntraces,
                               .cat = t->embedded ? NULL : t->cat, .rd = &o->in.rd, .pairs = o->pairs,
                               .npairs = o->npairs, .no_default_pairs = o->no_default_pairs};
    if (st__sql_source_new(src, &in, err, sizeof err) < 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return 1;
    }
    return 0;
}

int st__cmd_sql(int argc, char **argv)
{
    struct sql_cli o = {0};
    struct cli_trace t = {0};
    struct st__sql_source *src = NULL;
    sqlite3 *db = NULL;
    char err[1024];
    cli_input_init(&o.in);
    int status = parse_args(argc, argv, &o);
    if (status >= 0)
        goto out;
    if ((status = open_source(&o, &t, &src)))
        goto out;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
        fprintf(stderr, PROG ": cannot open SQLite: %s\n", db ? sqlite3_errmsg(db) : "out of memory");
        status = 1;
        goto out;
    }
    if (st__sql_register_tables(db, src, warn, NULL, err, sizeof err) != SQLITE_OK) {
        fprintf(stderr, PROG ": %s\n", err);
        status = 1;
        goto out;
    }
    status = 0;
    for (size_t i = 0; status == 0 && i < o.nqueries; i++) {
        char what[32];
        snprintf(what, sizeof what, "-e %zu", i + 1);
        struct origin org = {.what = o.nqueries == 1 ? "-e" : what, .text = o.queries[i], .first_line = 1};
        status = run_text(&o, db, &org);
    }
    if (o.nqueries == 0)
        status = run_stdin(&o, db);
    if (fflush(stdout) != 0) {
        fprintf(stderr, PROG ": writing standard output: %s\n", strerror(errno));
        status = 1;
    }
out:
    sqlite3_close(db);
    st__sql_source_free(src);
    cli_trace_close(&t);
    cli_input_free(&o.in);
    free(o.queries);
    return status;
}
