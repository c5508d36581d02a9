/*
 * Columns: every remaining record of the reader, one column per field of
 * each event, filled in C without a Python object per value (strings
 * excepted: they are bytes objects in a list). Each numeric column is a
 * Buffer of packed native values that numpy.frombuffer() wraps without a
 * copy; the Python layer names the columns and makes the arrays.
 *
 * Memory: the columns themselves (the trace is read in its reader's fixed
 * buffer); each doubles as it grows (growbuf).
 */
#include <stdlib.h>
#include <string.h>

#include "growbuf.h"
#include "pyst.h"

/* --- Buffer: malloc'ed bytes exported through the buffer protocol ------------ */

typedef struct {
    PyObject_HEAD
    void *data; /* malloc'ed, freed with the object */
    Py_ssize_t len;
} BufferObject;

/* A Buffer taking over b's memory (b is left empty). NULL with an exception. */
static PyObject *buffer_take(struct st__growbuf *b)
{
    BufferObject *self = PyObject_New(BufferObject, &pyst_BufferType);
    if (!self)
        return NULL;
    self->data = b->data;
    self->len = (Py_ssize_t)b->len;
    *b = (struct st__growbuf){0};
    return (PyObject *)self;
}

static void buffer_dealloc(BufferObject *self)
{
    free(self->data);
    PyObject_Free(self);
}

static int buffer_getbuffer(BufferObject *self, Py_buffer *view, int flags)
{
    static char empty;
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data ? self->data : &empty, self->len, 0, flags);
}

static Py_ssize_t buffer_length(BufferObject *self)
{
    return self->len;
}

static PyBufferProcs buffer_as_buffer = {
    .bf_getbuffer = (getbufferproc)buffer_getbuffer,
};

static PySequenceMethods buffer_as_sequence = {
    .sq_length = (lenfunc)buffer_length,
};

PyTypeObject pyst_BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simpletrace._core.Buffer",
    .tp_doc = "Packed column values (bytes through the buffer protocol; numpy.frombuffer wraps them).",
    .tp_basicsize = sizeof(BufferObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)buffer_dealloc,
    .tp_as_buffer = &buffer_as_buffer,
    .tp_as_sequence = &buffer_as_sequence,
};

/* --- filling ----------------------------------------------------------------- */

/* Columns of one event: timestamp, pid, input, then one per argument. */
#define FIXED 3
struct colset {
    size_t rows;
    struct st__growbuf col[FIXED + ST_READER_MAX_ARGS];
    PyObject *strings[ST_READER_MAX_ARGS]; /* lists, for string arguments */
    PyObject *last[ST_READER_MAX_ARGS];    /* the last string of each (borrowed from its list): reused while it repeats */
};

/* Bytes per value and numpy type code of each conversion. */
static const struct {
    unsigned size;
    const char *code;
} conv_type[] = {
    [CONV_U8] = {1, "u1"}, [CONV_U16] = {2, "u2"}, [CONV_U32] = {4, "u4"}, [CONV_U64] = {8, "u8"},
    [CONV_I8] = {1, "i1"}, [CONV_I16] = {2, "i2"}, [CONV_I32] = {4, "i4"}, [CONV_I64] = {8, "i8"},
    [CONV_BOOL] = {1, "b1"}, [CONV_PTR] = {8, "u8"}, [CONV_STR] = {0, "O"},
};

/* Appends n bytes: inline while the column has room, growbuf's when it must grow. */
static inline void put(struct st__growbuf *b, const void *p, size_t n)
{
    if (b->data && b->cap - b->len >= n) {
        memcpy(b->data + b->len, p, n);
        b->len += n;
    } else {
        st__growbuf_put(b, p, n);
    }
}

/* Appends the stored word w as conversion conv's native value. */
static inline void put_word(struct st__growbuf *b, uint64_t w, enum pyst_conv conv)
{
    switch (conv_type[conv].size) {
    case 1: {
        uint8_t v = conv == CONV_BOOL ? (uint8_t)((uint8_t)w != 0) : (uint8_t)w;
        put(b, &v, 1);
        break;
    }
    case 2: {
        uint16_t v = (uint16_t)w;
        put(b, &v, 2);
        break;
    }
    case 4: {
        uint32_t v = (uint32_t)w;
        put(b, &v, 4);
        break;
    }
    default:
        put(b, &w, 8);
    }
}

/* The Python object of string argument v for column i: the previous one while the bytes repeat. */
static PyObject *string_value(struct colset *cs, unsigned i, const struct st_value *v)
{
    PyObject *last = cs->last[i];
    if (v->kind != ST_VALUE_STRING) /* v0: a pointer */
        return PyLong_FromUnsignedLongLong(v->u64);
    if (last && (size_t)PyBytes_GET_SIZE(last) == v->len && memcmp(PyBytes_AS_STRING(last), v->str, v->len) == 0)
        return Py_NewRef(last);
    return PyBytes_FromStringAndSize(v->str, v->len);
}

/* Appends rec to its event's columns (input only with several inputs). 0, or -1 with an exception. */
static int add_row(struct colset *cs, const struct pyst_evinfo *info, const struct st_record *rec, bool inputs)
{
    uint32_t pid = rec->pid, input = rec->input;
    put(&cs->col[0], &rec->timestamp_ns, 8);
    put(&cs->col[1], &pid, 4);
    if (inputs)
        put(&cs->col[2], &input, 4);
    for (unsigned i = 0; i < rec->nargs; i++) {
        const struct st_value *v = &rec->args[i];
        if (info->conv[i] != CONV_STR) {
            put_word(&cs->col[FIXED + i], v->u64, (enum pyst_conv)info->conv[i]);
            continue;
        }
        PyObject *o = string_value(cs, i, v);
        if (!o || PyList_Append(cs->strings[i], o) < 0) {
            Py_XDECREF(o);
            return -1;
        }
        cs->last[i] = PyBytes_CheckExact(o) ? o : NULL;
        Py_DECREF(o); /* the list holds it */
    }
    cs->rows++;
    return 0;
}

static void colset_free(struct colset *cs)
{
    if (!cs)
        return;
    for (size_t i = 0; i < FIXED + ST_READER_MAX_ARGS; i++)
        st__growbuf_free(&cs->col[i]);
    for (size_t i = 0; i < ST_READER_MAX_ARGS; i++)
        Py_XDECREF(cs->strings[i]);
    PyMem_Free(cs);
}

static struct colset *colset_new(const struct pyst_evinfo *info)
{
    struct colset *cs = PyMem_Calloc(1, sizeof *cs);
    if (!cs) {
        PyErr_NoMemory();
        return NULL;
    }
    for (unsigned i = 0; i < info->nargs; i++)
        if (info->conv[i] == CONV_STR && !(cs->strings[i] = PyList_New(0))) {
            colset_free(cs);
            return NULL;
        }
    return cs;
}

/* (index, rows, ((code, Buffer or list), ...)) for one event: timestamp, pid, input, arguments. */
static PyObject *colset_result(struct colset *cs, const struct pyst_evinfo *info, size_t index)
{
    static const char *fixed_code[FIXED] = {"u8", "u4", "u4"};
    PyObject *cols = PyTuple_New(FIXED + info->nargs);
    if (!cols)
        return NULL;
    for (unsigned i = 0; i < FIXED + info->nargs; i++) {
        bool str = i >= FIXED && info->conv[i - FIXED] == CONV_STR;
        if (!str && cs->col[i].failed) {
            Py_DECREF(cols);
            return PyErr_NoMemory();
        }
        PyObject *data = str ? Py_NewRef(cs->strings[i - FIXED]) : buffer_take(&cs->col[i]);
        PyObject *pair = data ? Py_BuildValue("(sN)", i < FIXED ? fixed_code[i] : conv_type[info->conv[i - FIXED]].code,
                                              data)
                              : NULL;
        if (!pair) {
            Py_DECREF(cols);
            return NULL;
        }
        PyTuple_SET_ITEM(cols, i, pair);
    }
    return Py_BuildValue("(nnN)", (Py_ssize_t)index, (Py_ssize_t)cs->rows, cols);
}

/* What columns() keeps of each event index: whether it is wanted (WANT_* until asked) and its columns. */
enum { WANT_UNKNOWN, WANT_YES, WANT_NO };

struct wanted {
    uint8_t *want;      /* per index */
    struct colset **sets;
    size_t n;
};

/* Room for every index the reader's catalog has now. 0, or -1 with MemoryError. */
static int wanted_grow(struct wanted *w, size_t n)
{
    uint8_t *want = PyMem_Realloc(w->want, n ? n : 1);
    if (want)
        w->want = want;
    struct colset **sets = want ? PyMem_Realloc(w->sets, (n ? n : 1) * sizeof *sets) : NULL;
    if (!sets) {
        PyErr_NoMemory();
        return -1;
    }
    memset(want + w->n, WANT_UNKNOWN, n - w->n);
    memset(sets + w->n, 0, (n - w->n) * sizeof *sets);
    w->sets = sets;
    w->n = n;
    return 0;
}

/*
 * Whether event index idx is wanted: select None takes all, a callable
 * decides each index once (an event the trace declares later included),
 * an iterable of indexes was marked before reading. -1 with an exception.
 */
static int is_wanted(struct wanted *w, PyObject *select, size_t idx)
{
    if (w->want[idx] == WANT_UNKNOWN) {
        int yes = 1;
        if (select != Py_None && PyCallable_Check(select)) {
            PyObject *r = PyObject_CallFunction(select, "n", (Py_ssize_t)idx);
            yes = r ? PyObject_IsTrue(r) : -1;
            Py_XDECREF(r);
        } else if (select != Py_None) {
            yes = 0; /* not among the indexes given */
        }
        if (yes < 0)
            return -1;
        w->want[idx] = yes ? WANT_YES : WANT_NO;
    }
    return w->want[idx] == WANT_YES;
}

/* Marks the indexes an iterable select names. 0, or -1 with an exception. */
static int mark_indexes(struct wanted *w, PyObject *select)
{
    PyObject *it = PyObject_GetIter(select), *item;
    if (!it)
        return -1;
    while ((item = PyIter_Next(it))) {
        Py_ssize_t i = PyLong_AsSsize_t(item);
        Py_DECREF(item);
        if (i >= 0 && (size_t)i < w->n)
            w->want[i] = WANT_YES;
        else if (!PyErr_Occurred())
            PyErr_SetString(PyExc_IndexError, "columns(): no event with that index");
        if (PyErr_Occurred())
            break;
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

PyObject *pyst_reader_columns(ReaderObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"select", NULL};
    PyObject *select = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", kwlist, &select))
        return NULL;
    if (!self->r || self->closed) {
        PyErr_SetString(PyExc_ValueError, "the reader is closed");
        return NULL;
    }
    struct wanted w = {0};
    PyObject *result = NULL;
    if (wanted_grow(&w, self->nevents) < 0)
        goto out;
    if (select != Py_None && !PyCallable_Check(select)) { /* the indexes named, and no other */
        memset(w.want, WANT_NO, w.n);
        if (mark_indexes(&w, select) < 0)
            goto out;
    }
    const struct st_record *rec;
    int ret, yes;
    bool inputs = st_reader_input_count(self->r) > 1;
    while ((ret = pyst_reader_next(self, &rec, true)) > 0) {
        size_t idx = rec->event->index;
        if (self->nevents > w.n && wanted_grow(&w, self->nevents) < 0) /* the catalog grew */
            goto out;
        if ((yes = is_wanted(&w, select, idx)) <= 0) {
            if (yes < 0)
                goto out;
            continue;
        }
        if (!w.sets[idx] && !(w.sets[idx] = colset_new(&self->info[idx])))
            goto out;
        if (add_row(w.sets[idx], &self->info[idx], rec, inputs) < 0)
            goto out;
    }
    if (ret < 0)
        goto out;
    if (!(result = PyList_New(0)))
        goto out;
    for (size_t i = 0; i < w.n; i++) {
        PyObject *one = w.sets[i] ? colset_result(w.sets[i], &self->info[i], i) : NULL;
        if (w.sets[i] && (!one || PyList_Append(result, one) < 0)) {
            Py_XDECREF(one);
            Py_CLEAR(result);
            goto out;
        }
        Py_XDECREF(one);
    }
out:
    for (size_t i = 0; w.sets && i < w.n; i++)
        colset_free(w.sets[i]);
    PyMem_Free(w.sets);
    PyMem_Free(w.want);
    return result;
}
