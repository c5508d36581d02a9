/*
 * Reader.latency_json(): `simpletrace latency` on the records a Reader has
 * left (src/analysis/, the same run and the same report), as the JSON text
 * `simpletrace latency --format=json` prints, so the fields have one
 * definition (report.c); the Python layer parses it.
 *
 * A damaged trace raises the reader's error, as iterating does, after the
 * records before the damage were measured: their figures go with the
 * exception (its `figures`, the JSON text here), as the command prints
 * them before its message.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "pyst.h"

#define MAX_SLOWEST 10000 /* as the command's --slowest */

/* The options of one run and what they hold (freed by options_free). */
struct run_options {
    struct st__an_options an;
    const char **pairs;
    PyObject **pair_bytes; /* the rules as UTF-8 bytes */
    PyObject *by_bytes, *functions_path;
};

static void options_free(struct run_options *o)
{
    for (size_t i = 0; o->pair_bytes && i < o->an.npairs; i++)
        Py_XDECREF(o->pair_bytes[i]);
    PyMem_Free(o->pair_bytes);
    PyMem_Free(o->pairs);
    Py_XDECREF(o->by_bytes);
    Py_XDECREF(o->functions_path);
}

/* The pairing rules, each checked as the command checks --pair. 0, or -1 with an exception (ValueError). */
static int set_pairs(struct run_options *o, PyObject *pairs)
{
    PyObject *seq = PySequence_Fast(pairs, "pairs must be a sequence of rules");
    if (!seq)
        return -1;
    size_t n = (size_t)PySequence_Fast_GET_SIZE(seq);
    int ret = -1;
    o->pairs = PyMem_Calloc(n ? n : 1, sizeof *o->pairs);
    o->pair_bytes = PyMem_Calloc(n ? n : 1, sizeof *o->pair_bytes);
    if (!o->pairs || !o->pair_bytes) {
        PyErr_NoMemory();
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        PyObject *rule = PySequence_Fast_GET_ITEM(seq, (Py_ssize_t)i);
        char err[512];
        if (!PyUnicode_Check(rule)) {
            PyErr_Format(PyExc_TypeError, "pairs: a rule is a str (BEGIN:END[=NAME][@ARG]), not %.100s",
                         Py_TYPE(rule)->tp_name);
            goto out;
        }
        if (!(o->pair_bytes[i] = PyUnicode_AsUTF8String(rule)))
            goto out;
        o->pairs[o->an.npairs++] = PyBytes_AS_STRING(o->pair_bytes[i]);
        if (st__an_check_pair(o->pairs[i], err, sizeof err) < 0) {
            PyErr_SetString(PyExc_ValueError, err);
            goto out;
        }
    }
    o->an.pairs = o->pairs;
    ret = 0;
out:
    Py_DECREF(seq);
    return ret;
}

/* by=None|'thread'|'process'|ARG. 0, or -1 with an exception. */
static int set_by(struct run_options *o, PyObject *by)
{
    if (by == Py_None)
        return 0;
    if (!PyUnicode_Check(by) || PyUnicode_GetLength(by) == 0) {
        PyErr_SetString(PyExc_ValueError, "by: 'thread', 'process' or an argument's name");
        return -1;
    }
    if (!(o->by_bytes = PyUnicode_AsUTF8String(by)))
        return -1;
    const char *text = PyBytes_AS_STRING(o->by_bytes);
    o->an.by = !strcmp(text, "thread") ? ST__AN_BY_THREAD : !strcmp(text, "process") ? ST__AN_BY_PROCESS : ST__AN_BY_ARG;
    o->an.by_arg = o->an.by == ST__AN_BY_ARG ? text : NULL;
    return 0;
}

/* Whether some event of the reader's catalog declares an argument named name. */
static bool declared_arg(const struct st_catalog *cat, const char *name)
{
    for (size_t i = 0; i <= st_catalog_count(cat); i++) {
        const struct st_event_info *ev = st_catalog_event(cat, i);
        for (unsigned k = 0; ev && k < ev->nargs; k++)
            if (strcmp(ev->args[k].name, name) == 0)
                return true;
    }
    return false;
}

/* As the command's: with trace-events given, a trace they do not match is no damage (nothing is kept). */
static bool not_damage(const struct st_reader *r, void *opaque)
{
    const ReaderObject *self = opaque;
    const struct st_reader_error *e = st_reader_error(r);
    return self->catalog && e->code == -EBADMSG && strstr(e->message, "do not match the trace") != NULL;
}

/* The result as latency's JSON text (a new str), NULL with an exception. */
static PyObject *json_text(const struct st__an_result *res, const char *print_prefix)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return PyErr_NoMemory();
    struct st__an_report rep = {.print_prefix = print_prefix, .title = ""};
    int ret = st__an_write_json(f, res, &rep);
    if (fclose(f) != 0 || ret < 0) {
        free(buf);
        return PyErr_NoMemory(); /* a memory stream fails only when memory is short */
    }
    PyObject *text = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)len, "replace");
    free(buf);
    return text;
}

/* Attaches the figures of the records before the damage to the exception being raised. */
static void attach_figures(PyObject *figures)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value && PyObject_SetAttrString(value, "figures", figures) < 0)
        PyErr_Clear(); /* the error itself still says what is wrong */
    PyErr_Restore(type, value, tb);
}

/* The error of a run that made no result, or of the reader after a partial one. Returns NULL. */
static PyObject *run_error(ReaderObject *self, int ret, const char *err)
{
    if (st_reader_error(self->r)->code != 0)
        return pyst_reader_raise(self); /* or the exception a file object's callback raised */
    /* Before any record: the function trace (cannot be opened: OpenError; bad: TraceError), or memory. */
    return pyst_open_error(ret, NULL, err[0] ? err : st_strerror(ret));
}

PyObject *pyst_reader_latency(ReaderObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"pairs", "no_default_pairs", "by", "slowest", "functions", "print_prefix", NULL};
    PyObject *pairs = NULL, *by = Py_None, *functions = Py_None;
    int no_default_pairs = 0;
    Py_ssize_t slowest = 5;
    const char *print_prefix = NULL;
    char err[2048] = "";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OpOnOz", kwlist, &pairs, &no_default_pairs, &by, &slowest,
                                     &functions, &print_prefix) ||
        !pyst_reader_check_open(self))
        return NULL;
    if (self->has_pending || self->undeclared)
        return PyErr_Format(PyExc_ValueError, "latency: %s",
                            self->undeclared ? "a reader opened with undeclared=True delivers records no span can "
                                               "be made of"
                                             : "a record was read ahead (prime()): the reader is not at a record");
    if (slowest < 0 || slowest > MAX_SLOWEST)
        return PyErr_Format(PyExc_ValueError, "slowest: 0..%d, not %zd", MAX_SLOWEST, slowest);
    struct run_options o = {.an = {.no_default_pairs = no_default_pairs, .slowest = (unsigned)slowest,
                                   .trace_name = st_reader_name(self->r), .not_damage = not_damage,
                                   .not_damage_opaque = self}};
    PyObject *result = NULL, *figures = NULL;
    struct st__an_result *res = NULL;
    if ((pairs && pairs != Py_None && set_pairs(&o, pairs) < 0) || set_by(&o, by) < 0)
        goto out;
    if (functions != Py_None) {
        if (!PyUnicode_FSConverter(functions, &o.functions_path))
            goto out;
        o.an.functions = PyBytes_AS_STRING(o.functions_path);
    }
    self->busy = true; /* a file object's callback must not read or close the reader under the run */
    int ret = st__an_latency(self->r, &o.an, &res, err, sizeof err);
    self->busy = false;
    if (res && !(figures = json_text(res, print_prefix)))
        goto out;
    if (ret < 0) {
        run_error(self, ret, err);
        if (figures)
            attach_figures(figures);
        goto out;
    }
    result = Py_BuildValue("(OzO)", figures, res->unused_rule,
                           o.an.by == ST__AN_BY_ARG && !declared_arg(st_reader_catalog(self->r), o.an.by_arg)
                               ? Py_False
                               : Py_True);
out:
    st__an_result_free(res);
    Py_XDECREF(figures);
    options_free(&o);
    return result;
}
