/*
 * Answers from traces, as the command gives them (src/analysis/, the same
 * runs and the same reports):
 *   Reader.latency_json()  `simpletrace latency --format=json` of the
 *                          records a Reader has left;
 *   compare_json()         `simpletrace compare --format=json` of two
 *                          Readers, with the --fail-if conditions met.
 * The JSON text is what the command prints, so the fields have one
 * definition (report.c, compare_report.c); the Python layer parses it.
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
    PyObject *by_bytes;
    PyObject *functions[2]; /* paths as bytes (compare: base's, new's) */
};

static void options_free(struct run_options *o)
{
    for (size_t i = 0; o->pair_bytes && i < o->an.npairs; i++)
        Py_XDECREF(o->pair_bytes[i]);
    PyMem_Free(o->pair_bytes);
    PyMem_Free(o->pairs);
    Py_XDECREF(o->by_bytes);
    Py_XDECREF(o->functions[0]);
    Py_XDECREF(o->functions[1]);
}

/* The pairing rules, each checked as the command checks --pair. 0, or -1 with an exception (ValueError). */
static int set_pairs(struct run_options *o, PyObject *pairs)
{
    if (!pairs || pairs == Py_None)
        return 0;
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

/* A function trace's path (None: none) into o->functions[k]. 0, or -1 with an exception. */
static int set_functions(struct run_options *o, int k, PyObject *path)
{
    return path == Py_None || PyUnicode_FSConverter(path, &o->functions[k]) ? 0 : -1;
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

/* Whether a run can read self now; else false with an exception. */
static bool readable(ReaderObject *self, const char *what)
{
    if (!pyst_reader_check_open(self))
        return false;
    if (self->has_pending || self->undeclared) {
        PyErr_Format(PyExc_ValueError, "%s: %s", what,
                     self->undeclared ? "a reader opened with undeclared=True delivers records no span can be made of"
                                      : "a record was read ahead (prime()): the reader is not at a record");
        return false;
    }
    return true;
}

/* Raises the error of a run that failed: the reader's (or a file object's), else the function trace's. NULL. */
static PyObject *run_error(ReaderObject *self, int ret, const char *err)
{
    if (st_reader_error(self->r)->code != 0)
        return pyst_reader_raise(self); /* or the exception a file object's callback raised */
    /* Before any record: the function trace (cannot be opened: OpenError; bad: TraceError), or memory. */
    return pyst_open_error(ret, NULL, err[0] ? err : st_strerror(ret));
}

/*
 * Measures the remaining records of self into *res (k: the function trace
 * of o to use). 0; 1 when the trace is damaged after records (*res holds
 * those; run_error() raises its error); -1 with an exception when no
 * result was made.
 */
static int measure(ReaderObject *self, struct run_options *o, int k, struct st__an_result **res)
{
    char err[2048] = "";
    struct st__an_options an = o->an;
    an.trace_name = st_reader_name(self->r);
    an.functions = o->functions[k] ? PyBytes_AS_STRING(o->functions[k]) : NULL;
    an.not_damage = not_damage;
    an.not_damage_opaque = self;
    self->busy = true; /* a file object's callback must not read or close the reader under the run */
    int ret = st__an_latency(self->r, &an, res, err, sizeof err);
    self->busy = false;
    if (ret == 0)
        return 0;
    if (*res)
        return 1;
    run_error(self, ret, err);
    return -1;
}

/* The rules of o that paired nothing in res, as a list of str. NULL with an exception. */
static PyObject *unused_rules(const struct run_options *o, const struct st__an_result *res)
{
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list && i < o->an.npairs && i < 64; i++) {
        if (!(res->sum.unused_rules >> i & 1))
            continue;
        PyObject *rule = PyUnicode_FromString(o->pairs[i]);
        if (!rule || PyList_Append(list, rule) < 0)
            Py_CLEAR(list);
        Py_XDECREF(rule);
    }
    return list;
}

/* What the command warns about after a run: (rules that paired nothing, whether an event declares by=). */
static PyObject *run_warnings(const struct run_options *o, ReaderObject *self, const struct st__an_result *res)
{
    PyObject *unused = unused_rules(o, res);
    bool declared = o->an.by != ST__AN_BY_ARG || declared_arg(st_reader_catalog(self->r), o->an.by_arg);
    PyObject *warn = unused ? Py_BuildValue("(OO)", unused, declared ? Py_True : Py_False) : NULL;
    Py_XDECREF(unused);
    return warn;
}

/* f's text (written by write(f, arg)) as a new str; NULL with an exception. */
static PyObject *report_text(int (*write)(FILE *f, const void *arg), const void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return PyErr_NoMemory();
    int ret = write(f, arg);
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

/* --- latency ------------------------------------------------------------------ */

struct latency_report {
    const struct st__an_result *res;
    struct st__an_report rep;
};

static int write_latency(FILE *f, const void *arg)
{
    const struct latency_report *l = arg;
    return st__an_write_json(f, l->res, &l->rep);
}

PyObject *pyst_reader_latency(ReaderObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"pairs", "no_default_pairs", "by", "slowest", "functions", "print_prefix", NULL};
    PyObject *pairs = NULL, *by = Py_None, *functions = Py_None;
    int no_default_pairs = 0;
    Py_ssize_t slowest = 5;
    const char *print_prefix = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OpOnOz", kwlist, &pairs, &no_default_pairs, &by, &slowest,
                                     &functions, &print_prefix) ||
        !readable(self, "latency"))
        return NULL;
    if (slowest < 0 || slowest > MAX_SLOWEST)
        return PyErr_Format(PyExc_ValueError, "slowest: 0..%d, not %zd", MAX_SLOWEST, slowest);
    struct run_options o = {.an = {.no_default_pairs = no_default_pairs, .slowest = (unsigned)slowest}};
    PyObject *result = NULL, *figures = NULL;
    struct st__an_result *res = NULL;
    int ret;
    if (set_pairs(&o, pairs) < 0 || set_by(&o, by) < 0 || set_functions(&o, 0, functions) < 0 ||
        (ret = measure(self, &o, 0, &res)) < 0)
        goto out;
    struct latency_report l = {res, {.print_prefix = print_prefix, .title = ""}};
    if (!(figures = report_text(write_latency, &l)))
        goto out;
    if (ret > 0) {
        run_error(self, ret, "");
        attach_figures(figures);
        goto out;
    }
    PyObject *warn = run_warnings(&o, self, res);
    if (warn)
        result = Py_BuildValue("(OO)", figures, warn);
    Py_XDECREF(warn);
out:
    st__an_result_free(res);
    Py_XDECREF(figures);
    options_free(&o);
    return result;
}

/* --- compare ------------------------------------------------------------------ */

/* The --fail-if conditions, parsed (the texts they point into are held by texts). */
struct conditions {
    struct st__an_cond *c;
    size_t n;
    PyObject *texts; /* list of UTF-8 bytes */
};

static void conditions_free(struct conditions *cs)
{
    for (size_t i = 0; i < cs->n; i++)
        st__an_cond_free(&cs->c[i]);
    PyMem_Free(cs->c);
    Py_XDECREF(cs->texts);
}

/* Parses fail_if (a sequence of str) as the command parses --fail-if. 0, or -1 with ValueError. */
static int parse_conditions(struct conditions *cs, PyObject *fail_if)
{
    PyObject *seq = PySequence_Fast(fail_if, "fail_if must be a sequence of conditions");
    if (!seq)
        return -1;
    size_t n = (size_t)PySequence_Fast_GET_SIZE(seq);
    int ret = -1;
    if (!(cs->texts = PyList_New(0)) || !(cs->c = PyMem_Calloc(n ? n : 1, sizeof *cs->c))) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        PyObject *text = PySequence_Fast_GET_ITEM(seq, (Py_ssize_t)i), *bytes;
        char err[1024];
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "fail_if: a condition is a str ([NAME:]FIELD>+N%%), not %.100s",
                         Py_TYPE(text)->tp_name);
            goto out;
        }
        if (!(bytes = PyUnicode_AsUTF8String(text)) || PyList_Append(cs->texts, bytes) < 0) {
            Py_XDECREF(bytes);
            goto out;
        }
        Py_DECREF(bytes); /* the list holds it */
        int r = st__an_cond_parse(PyBytes_AS_STRING(bytes), &cs->c[cs->n], err, sizeof err);
        if (r == -ENOMEM) {
            PyErr_NoMemory();
            goto out;
        }
        if (r < 0) {
            PyErr_SetString(PyExc_ValueError, err);
            goto out;
        }
        cs->n++;
    }
    ret = 0;
out:
    Py_DECREF(seq);
    return ret;
}

/* st__an_cond_eval()'s hit: one dict per span or event that met a condition, appended to a list. */
struct hits {
    PyObject *list;
    bool failed; /* an exception is set */
};

static void add_hit(const struct st__an_hit *h, void *opaque)
{
    struct hits *hs = opaque;
    if (hs->failed)
        return;
    PyObject *pct = h->infinite ? Py_NewRef(Py_None) : PyFloat_FromDouble(h->pct);
    PyObject *p = st__an_field_tested(h->cond->field) ? PyFloat_FromDouble(h->p) : Py_NewRef(Py_None);
    PyObject *d = pct && p ? Py_BuildValue("{s:s,s:s,s:z,s:s,s:s,s:d,s:d,s:O,s:O}", "condition", h->cond->text,
                                           "name", h->name, "group", h->group, "kind", h->is_event ? "event" : "span",
                                           "field", st__an_field_name(h->cond->field), "base", h->base, "new",
                                           h->new_value, "change_pct", pct, "p_value", p)
                           : NULL;
    if (!d || PyList_Append(hs->list, d) < 0)
        hs->failed = true;
    Py_XDECREF(d);
    Py_XDECREF(pct);
    Py_XDECREF(p);
}

/* The conditions met in cmp: (list of hit dicts, list of the conditions whose NAME is in neither run). */
static PyObject *eval_conditions(const struct conditions *cs, const struct st__an_comparison *cmp)
{
    struct hits hs = {PyList_New(0), false};
    PyObject *unseen = PyList_New(0);
    for (size_t i = 0; hs.list && unseen && !hs.failed && i < cs->n; i++) {
        bool seen;
        st__an_cond_eval(cmp, &cs->c[i], &seen, add_hit, &hs);
        PyObject *text = seen ? NULL : PyUnicode_FromString(cs->c[i].text);
        if (!seen && (!text || PyList_Append(unseen, text) < 0))
            hs.failed = true;
        Py_XDECREF(text);
    }
    if (!hs.list || !unseen || hs.failed) {
        Py_XDECREF(hs.list);
        Py_XDECREF(unseen);
        return NULL;
    }
    PyObject *both = Py_BuildValue("(OO)", hs.list, unseen);
    Py_DECREF(hs.list);
    Py_DECREF(unseen);
    return both;
}

struct compare_report {
    const struct st__an_comparison *cmp;
    struct st__an_report rep;
};

static int write_compare(FILE *f, const void *arg)
{
    const struct compare_report *c = arg;
    return st__an_write_compare_json(f, c->cmp, &c->rep);
}

/* Reads a Reader argument of compare_json(). */
static int reader_arg(PyObject *obj, void *out)
{
    if (!PyObject_TypeCheck(obj, &pyst_ReaderType)) {
        PyErr_Format(PyExc_TypeError, "compare: a Reader, not %.100s", Py_TYPE(obj)->tp_name);
        return 0;
    }
    *(ReaderObject **)out = (ReaderObject *)obj;
    return 1;
}

PyObject *pyst_compare_json(PyObject *mod, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"base", "new", "pairs", "no_default_pairs", "by", "functions", "alpha", "fail_if",
                             "titles", NULL};
    ReaderObject *run[2];
    PyObject *pairs = NULL, *by = Py_None, *fail_if = NULL, *functions[2] = {Py_None, Py_None};
    int no_default_pairs = 0;
    double alpha = 0.01;
    const char *title[2] = {NULL, NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&|$OpO(OO)dO(zz)", kwlist, reader_arg, &run[0], reader_arg,
                                     &run[1], &pairs, &no_default_pairs, &by, &functions[0], &functions[1], &alpha,
                                     &fail_if, &title[0], &title[1]) ||
        !readable(run[0], "compare") || !readable(run[1], "compare"))
        return NULL;
    if (!(alpha > 0 && alpha < 1)) {
        char text[64];
        snprintf(text, sizeof text, "alpha: a probability between 0 and 1, not %g", alpha);
        PyErr_SetString(PyExc_ValueError, text);
        return NULL;
    }
    if (run[0] == run[1])
        return PyErr_Format(PyExc_ValueError, "compare: base and new are one reader");
    struct run_options o = {.an = {.no_default_pairs = no_default_pairs, .slowest = 0}}; /* as the command's */
    struct conditions cs = {0};
    struct st__an_result *res[2] = {NULL, NULL};
    struct st__an_comparison cmp;
    bool compared = false;
    int status[2] = {0, 0};
    PyObject *result = NULL, *figures = NULL, *warn[2] = {NULL, NULL}, *met = NULL;
    if (set_pairs(&o, pairs) < 0 || set_by(&o, by) < 0 || set_functions(&o, 0, functions[0]) < 0 ||
        set_functions(&o, 1, functions[1]) < 0 || (fail_if && fail_if != Py_None && parse_conditions(&cs, fail_if) < 0))
        goto out;
    /* Both runs measured, as the command does, even when the base's trace is damaged after records. */
    for (int k = 0; k < 2; k++)
        if ((status[k] = measure(run[k], &o, k, &res[k])) < 0 ||
            (status[k] == 0 && !(warn[k] = run_warnings(&o, run[k], res[k]))))
            goto out;
    if (st__an_compare(res[0], res[1], alpha, &cmp) < 0) {
        PyErr_NoMemory();
        goto out;
    }
    compared = true;
    struct compare_report c = {&cmp, {.title = title[0], .run_title = {title[0], title[1]}}};
    if (!(figures = report_text(write_compare, &c)))
        goto out;
    if (status[0] || status[1]) { /* the conditions are not evaluated on a damaged run's figures */
        int k = status[0] ? 0 : 1;
        run_error(run[k], 1, "");
        attach_figures(figures);
        goto out;
    }
    if ((met = eval_conditions(&cs, &cmp)))
        result = Py_BuildValue("(OOOO)", figures, met, warn[0], warn[1]);
out:
    Py_XDECREF(met);
    Py_XDECREF(warn[0]);
    Py_XDECREF(warn[1]);
    if (compared)
        st__an_comparison_free(&cmp);
    st__an_result_free(res[0]);
    st__an_result_free(res[1]);
    Py_XDECREF(figures);
    conditions_free(&cs);
    options_free(&o);
    return result;
}
