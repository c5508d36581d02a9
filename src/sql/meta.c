/*
 * The small tables, made in memory when scanned: events (the catalog, made
 * once with the source) and processes (the traces' descriptions).
 *
 * A process is an input of the traces, or the inputs whose descriptions
 * name one pid and host (a rotated piece, a recovered tail:
 * st_reader_input_process()); the description of each is read at the head
 * of its trace. A file `simpletrace merge` wrote holds several processes,
 * each described where its records are: such a file is read to its end
 * (every other table reads it as it goes anyway).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sql_internal.h"

static struct st__sql_cell int_cell(uint64_t v)
{
    return v ? (struct st__sql_cell){.type = SQLITE_INTEGER, .i = (sqlite3_int64)v} : (struct st__sql_cell){0};
}

/* The row of a process input i describes (d NULL: it has no description). */
static int add_process(struct st__sql_rows *rows, const struct st__sql_source *src, size_t i,
                       const struct st_trace_description *d)
{
    struct st__sql_cell row[PROC_NCOLS] = {[PROC_TRACE] = st__sql_str_cell(src->traces[i < src->ntraces ? i : 0])};
    if (d) {
        row[PROC_PID] = int_cell(d->pid);
        row[PROC_PROGRAM] = st__sql_str_cell(d->program);
        row[PROC_HOST] = st__sql_str_cell(d->host);
        row[PROC_EXE] = st__sql_str_cell(d->exe);
        row[PROC_CMDLINE] = st__sql_str_cell(d->cmdline);
        row[PROC_CLOCK] = st__sql_str_cell(d->clock);
        row[PROC_VERSION] = st__sql_str_cell(d->version);
        if (d->anchor_mono_ns || d->anchor_real_ns) {
            row[PROC_ANCHOR_MONO] = (struct st__sql_cell){.type = SQLITE_INTEGER, .i = (sqlite3_int64)d->anchor_mono_ns};
            row[PROC_ANCHOR_REAL] = (struct st__sql_cell){.type = SQLITE_INTEGER, .i = (sqlite3_int64)d->anchor_real_ns};
        }
    }
    return st__sql_rows_add(rows, row, PROC_NCOLS);
}

/* One row per (input, process) the records of a merged file name, as they come. */
struct seen {
    size_t input;
    uint32_t pid;
    char program[256];
};

static int merged_processes(struct st_reader *r, const struct st_record *rec, const struct st__sql_source *src,
                            struct st__sql_rows *rows, char *err, size_t errlen)
{
    struct seen *seen = NULL;
    size_t n = 0, cap = 0;
    int ret = 1;
    for (; ret == 1; ret = st_reader_next(r, &rec)) {
        size_t k = 0;
        while (k < n && !(seen[k].input == rec->input && seen[k].pid == rec->process_pid &&
                          !strcmp(seen[k].program, rec->process_program ? rec->process_program : "")))
            k++;
        if (k < n)
            continue;
        if (n == cap) {
            struct seen *m = realloc(seen, (cap = cap ? 2 * cap : 16) * sizeof *m);
            if (!m) {
                ret = -ENOMEM;
                break;
            }
            seen = m;
        }
        seen[n].input = rec->input;
        seen[n].pid = rec->process_pid;
        snprintf(seen[n].program, sizeof seen[n].program, "%s", rec->process_program ? rec->process_program : "");
        n++;
        struct st_trace_description d = {.struct_size = sizeof d};
        bool described = st_reader_description(st_reader_input(r, rec->input), &d) == 0;
        if ((ret = add_process(rows, src, rec->input, described ? &d : NULL)) < 0)
            break;
    }
    free(seen);
    if (ret == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    else if (ret < 0)
        st__sql_reader_error(r, err, errlen);
    return ret;
}

static int processes(const struct st__sql_source *src, struct st__sql_rows *rows, char *err, size_t errlen)
{
    struct st_reader *r;
    const struct st_record *rec = NULL;
    int ret = st__sql_open_plain(src, &r, err, errlen);
    if (ret < 0)
        return ret;
    ret = st_reader_next(r, &rec); /* every input's head, and its description */
    if (ret < 0)
        st__sql_reader_error(r, err, errlen);
    size_t n = st_reader_input_count(r);
    bool merged = false;
    for (size_t i = 0; ret >= 0 && i < n; i++)
        merged |= st_reader_process_count(st_reader_input(r, i)) > 1;
    if (ret == 1 && merged) {
        ret = merged_processes(r, rec, src, rows, err, errlen);
    } else {
        for (size_t i = 0; ret >= 0 && i < n; i++) {
            if (st_reader_input_process(r, i) != i)
                continue;
            struct st_trace_description d = {.struct_size = sizeof d};
            bool described = st_reader_description(st_reader_input(r, i), &d) == 0;
            if ((ret = add_process(rows, src, i, described ? &d : NULL)) < 0)
                snprintf(err, errlen, "out of memory");
        }
    }
    st_reader_close(r);
    return ret < 0 ? ret : 0;
}

int st__sql_meta_rows(const struct st__sql_table *t, struct st__sql_rows *rows, char *err, size_t errlen)
{
    if (t->kind == ST__SQL_PROCESSES)
        return processes(t->src, rows, err, errlen);
    const struct st__sql_rows *cat = &t->src->catalog;
    for (size_t i = 0; i < cat->nrows; i++)
        if (st__sql_rows_add(rows, cat->cells + i * cat->ncols, cat->ncols) < 0) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
    return 0;
}
