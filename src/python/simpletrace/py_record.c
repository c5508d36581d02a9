/*
 * Record: one record of a trace, copied out of the reader's buffer (its
 * strings included) and decoded lazily: a value becomes a Python object
 * only when it is asked for, so iterating costs one allocation per record.
 *
 * Records are not tracked by the garbage collector: they refer only to
 * their reader (for the bound Event objects and names), never to anything
 * that could refer back to a record.
 */
#include <string.h>

#include "pyst.h"

#define UNDECLARED UINT32_MAX

typedef struct {
    PyObject_VAR_HEAD                   /* ob_size: bytes of string data */
    ReaderObject *reader;
    PyObject *undeclared_name;          /* undeclared records: the mapped name (str) or None */
    uint64_t id, timestamp_ns, number, offset;
    uint32_t pid, process_pid, index, input;
    uint8_t nargs;
    bool has_pid;
    bool dropped;                       /* a dropped-event record */
    uint8_t kind[ST_READER_MAX_ARGS];   /* enum st_value_kind as stored */
    uint32_t len[ST_READER_MAX_ARGS];   /* strings: length */
    uint64_t word[ST_READER_MAX_ARGS];  /* integers: the word; strings: offset in data */
    char data[];
} RecordObject;

/* Keeps the program name of rec's input in the reader, once per input. 0 or -1 with an exception. */
static int cache_program(ReaderObject *r, const struct st_record *rec)
{
    Py_ssize_t n = (Py_ssize_t)rec->input + 1;
    if (r->programs && PyList_GET_SIZE(r->programs) >= n && PyList_GET_ITEM(r->programs, rec->input) != Py_None)
        return 0;
    if (!r->programs && !(r->programs = PyList_New(0)))
        return -1;
    while (PyList_GET_SIZE(r->programs) < n)
        if (PyList_Append(r->programs, Py_None) < 0)
            return -1;
    if (PyList_GET_ITEM(r->programs, rec->input) != Py_None)
        return 0; /* the usual case: one check per record */
    const char *p = rec->process_program ? rec->process_program : "";
    PyObject *s = PyUnicode_DecodeUTF8(p, (Py_ssize_t)strlen(p), "replace");
    return s ? PyList_SetItem(r->programs, rec->input, s) : -1;
}

PyObject *pyst_record_new(ReaderObject *reader, const struct st_record *rec)
{
    size_t strings = 0;
    for (unsigned i = 0; i < rec->nargs; i++)
        if (rec->args[i].kind == ST_VALUE_STRING)
            strings += rec->args[i].len;
    if (cache_program(reader, rec) < 0)
        return NULL;
    RecordObject *self = PyObject_NewVar(RecordObject, &pyst_RecordType, (Py_ssize_t)strings);
    if (!self)
        return NULL;
    self->reader = (ReaderObject *)Py_NewRef(reader);
    self->undeclared_name = NULL;
    self->dropped = rec->dropped;
    if (rec->event) {
        self->index = rec->event->index;
    } else {
        self->index = UNDECLARED;
        self->undeclared_name = rec->name ? PyUnicode_DecodeUTF8(rec->name, (Py_ssize_t)strlen(rec->name), "replace")
                                          : Py_NewRef(Py_None);
        if (!self->undeclared_name) {
            Py_DECREF(self);
            return NULL;
        }
    }
    self->id = rec->id;
    self->timestamp_ns = rec->timestamp_ns;
    self->number = rec->number;
    self->offset = rec->offset;
    self->pid = rec->pid;
    self->has_pid = rec->has_pid;
    self->process_pid = rec->process_pid;
    self->input = rec->input;
    self->nargs = (uint8_t)rec->nargs;
    size_t at = 0;
    for (unsigned i = 0; i < rec->nargs; i++) {
        const struct st_value *v = &rec->args[i];
        self->kind[i] = (uint8_t)v->kind;
        if (v->kind == ST_VALUE_STRING) {
            memcpy(self->data + at, v->str, v->len);
            self->word[i] = at;
            self->len[i] = v->len;
            at += v->len;
        } else {
            self->word[i] = v->u64;
        }
    }
    return (PyObject *)self;
}

static void record_dealloc(RecordObject *self)
{
    Py_XDECREF(self->reader);
    Py_XDECREF(self->undeclared_name);
    PyObject_Free(self);
}

PyObject *pyst_typed_word(uint64_t w, enum pyst_conv conv)
{
    switch (conv) {
    case CONV_U8: return PyLong_FromUnsignedLong((uint8_t)w);
    case CONV_U16: return PyLong_FromUnsignedLong((uint16_t)w);
    case CONV_U32: return PyLong_FromUnsignedLong((uint32_t)w);
    case CONV_I8: return PyLong_FromLong((int8_t)(uint8_t)w);
    case CONV_I16: return PyLong_FromLong((int16_t)(uint16_t)w);
    case CONV_I32: return PyLong_FromLong((int32_t)(uint32_t)w);
    case CONV_I64: return PyLong_FromLongLong((int64_t)w);
    case CONV_BOOL: return PyBool_FromLong((uint8_t)w != 0);
    default: return PyLong_FromUnsignedLongLong(w);
    }
}

/* Argument i: typed by its declaration, or as simpletrace.py gives it (raw). */
static PyObject *value(RecordObject *self, unsigned i, bool raw)
{
    if (self->kind[i] == ST_VALUE_STRING)
        return PyBytes_FromStringAndSize(self->data + self->word[i], self->len[i]);
    if (raw || self->index == UNDECLARED)
        return PyLong_FromUnsignedLongLong(self->word[i]);
    enum pyst_conv conv = self->reader->info[self->index].conv[i];
    return pyst_typed_word(self->word[i], conv == CONV_STR ? CONV_PTR : conv); /* v0: strings are pointers */
}

static PyObject *values(RecordObject *self, bool raw)
{
    PyObject *t = PyTuple_New(self->nargs);
    for (unsigned i = 0; t && i < self->nargs; i++) {
        PyObject *v = value(self, i, raw);
        if (!v) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyObject *get_args(RecordObject *self, void *unused)
{
    return values(self, false);
}

static PyObject *get_raw_args(RecordObject *self, void *unused)
{
    return values(self, true);
}

/* Item index of the reader's per-event tuples (names, events, ...), or None for undeclared records. */
static PyObject *bound(RecordObject *self, PyObject *table)
{
    if (self->index == UNDECLARED || !table)
        return Py_NewRef(Py_None);
    return Py_NewRef(PyTuple_GET_ITEM(table, self->index));
}

static PyObject *get_name(RecordObject *self, void *unused)
{
    if (self->index == UNDECLARED)
        return Py_NewRef(self->undeclared_name);
    PyObject *ev = bound(self, self->reader->events);
    PyObject *name = ev == Py_None ? Py_NewRef(Py_None) : PyObject_GetAttrString(ev, "name");
    Py_DECREF(ev);
    return name;
}

static PyObject *get_event(RecordObject *self, void *unused)
{
    return bound(self, self->reader->events);
}

static PyObject *get_argnames(RecordObject *self, void *unused)
{
    if (self->index == UNDECLARED)
        return PyTuple_New(0);
    return bound(self, self->reader->argnames);
}

static PyObject *get_u64(RecordObject *self, void *offset)
{
    return PyLong_FromUnsignedLongLong(*(uint64_t *)((char *)self + (size_t)offset));
}

static PyObject *get_u32(RecordObject *self, void *offset)
{
    return PyLong_FromUnsignedLong(*(uint32_t *)((char *)self + (size_t)offset));
}

static PyObject *get_pid(RecordObject *self, void *unused)
{
    return self->has_pid ? PyLong_FromUnsignedLong(self->pid) : Py_NewRef(Py_None);
}

static PyObject *get_process_program(RecordObject *self, void *unused)
{
    PyObject *p = self->reader->programs;
    if (!p || (Py_ssize_t)self->input >= PyList_GET_SIZE(p) || PyList_GET_ITEM(p, self->input) == Py_None)
        return PyUnicode_FromString("");
    return Py_NewRef(PyList_GET_ITEM(p, self->input));
}

static PyObject *get_dropped(RecordObject *self, void *unused)
{
    return PyBool_FromLong(self->dropped);
}

/* rec[key]: an argument by name or position, typed. */
static PyObject *record_subscript(RecordObject *self, PyObject *key)
{
    if (PyLong_Check(key)) {
        Py_ssize_t i = PyLong_AsSsize_t(key);
        if (i < 0)
            i += self->nargs;
        if (i < 0 || i >= self->nargs) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_IndexError, "record argument index out of range");
            return NULL;
        }
        return value(self, (unsigned)i, false);
    }
    if (self->index != UNDECLARED && self->reader->argnames) {
        PyObject *names = PyTuple_GET_ITEM(self->reader->argnames, self->index);
        for (unsigned i = 0; i < self->nargs; i++) {
            int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(names, i), key, Py_EQ);
            if (eq < 0)
                return NULL;
            if (eq)
                return value(self, i, false);
        }
    }
    PyErr_SetObject(PyExc_KeyError, key);
    return NULL;
}

static Py_ssize_t record_length(RecordObject *self)
{
    return self->nargs;
}

/* Record.asdict(): {argument name: typed value}. */
static PyObject *record_asdict(RecordObject *self, PyObject *unused)
{
    PyObject *d = PyDict_New();
    if (!d || self->index == UNDECLARED || !self->reader->argnames)
        return d;
    PyObject *names = PyTuple_GET_ITEM(self->reader->argnames, self->index);
    for (unsigned i = 0; i < self->nargs; i++) {
        PyObject *v = value(self, i, false);
        if (!v || PyDict_SetItem(d, PyTuple_GET_ITEM(names, i), v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

static PyObject *record_repr(RecordObject *self)
{
    PyObject *name = get_name(self, NULL);
    PyObject *args = name ? record_asdict(self, NULL) : NULL;
    PyObject *r = NULL;
    if (args)
        r = PyUnicode_FromFormat("Record(%R, timestamp_ns=%llu, pid=%lu, args=%R)", name,
                                 (unsigned long long)self->timestamp_ns, (unsigned long)self->pid, args);
    Py_XDECREF(name);
    Py_XDECREF(args);
    return r;
}

static PyMethodDef record_methods[] = {
    {"asdict", (PyCFunction)record_asdict, METH_NOARGS, "asdict() -> {argument name: typed value}"},
    {NULL, NULL, 0, NULL},
};

#define OFF(field) ((void *)offsetof(RecordObject, field))

static PyGetSetDef record_getset[] = {
    {"name", (getter)get_name, NULL, "The event's name (\"Dropped_Event\" for dropped records).", NULL},
    {"event", (getter)get_event, NULL, "The Event object (tracetool's shape: name, args, fmt).", NULL},
    {"argnames", (getter)get_argnames, NULL, "The argument names, in order.", NULL},
    {"args", (getter)get_args, NULL,
     "The arguments, typed by their declaration: signed integers may be negative, bool is bool,\n"
     "pointers are ints, strings are bytes.", NULL},
    {"raw_args", (getter)get_raw_args, NULL,
     "The arguments as simpletrace.py gives them: the stored unsigned 64-bit words, strings as bytes.", NULL},
    {"id", (getter)get_u64, NULL, "The event ID stored in the file.", OFF(id)},
    {"timestamp_ns", (getter)get_u64, NULL, "The timestamp (CLOCK_MONOTONIC nanoseconds for simpletrace's traces).",
     OFF(timestamp_ns)},
    {"pid", (getter)get_pid, NULL,
     "The record's pid field (the thread id in simpletrace's traces, QEMU's process id); None in v0 files.", NULL},
    {"number", (getter)get_u64, NULL, "The record number (header 0, every record counted).", OFF(number)},
    {"offset", (getter)get_u64, NULL, "The record's byte offset in its file.", OFF(offset)},
    {"input", (getter)get_u32, NULL, "Which of several traces read as one holds the record (0 for one).", OFF(input)},
    {"process_pid", (getter)get_u32, NULL, "The writing process as its trace describes it; 0 when unknown.",
     OFF(process_pid)},
    {"process_program", (getter)get_process_program, NULL,
     "The writing program's name as its trace describes it (several traces); \"\" when unknown.", NULL},
    {"dropped", (getter)get_dropped, NULL, "True for a dropped-events record (args: the count).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMappingMethods record_as_mapping = {
    .mp_length = (lenfunc)record_length,
    .mp_subscript = (binaryfunc)record_subscript,
};

PyTypeObject pyst_RecordType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simpletrace.Record",
    .tp_doc = "One record of a trace. rec['arg'] or rec[i] is one typed argument, len(rec) their number.",
    .tp_basicsize = offsetof(RecordObject, data),
    .tp_itemsize = 1,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)record_dealloc,
    .tp_repr = (reprfunc)record_repr,
    .tp_methods = record_methods,
    .tp_getset = record_getset,
    .tp_as_mapping = &record_as_mapping,
};
