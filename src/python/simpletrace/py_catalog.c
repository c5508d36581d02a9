/*
 * Catalog: an st_catalog seen from Python. The Python layer turns its
 * events into tracetool-shaped Event objects; the C side keeps, per event,
 * how each argument's word becomes a typed value (struct pyst_evinfo).
 */
#include "pyst.h"

/* How argument i of cat's event ev is converted to a typed value. */
static enum pyst_conv arg_conv(const struct st_catalog *cat, const struct st_event_info *ev, unsigned i)
{
    switch (st_catalog_arg_encoding(cat, ev, i)) {
    case ST_ARG_ENCODING_STRING: return CONV_STR;
    case ST_ARG_ENCODING_POINTER: return CONV_PTR;
    case ST_ARG_ENCODING_BOOL: return CONV_BOOL;
    default: break;
    }
    static const enum pyst_conv by_size[2][4] = {{CONV_U8, CONV_U16, CONV_U32, CONV_U64},
                                                 {CONV_I8, CONV_I16, CONV_I32, CONV_I64}};
    const struct st_arg_info *a = &ev->args[i];
    unsigned s = a->size >= 8 ? 3 : a->size >= 4 ? 2 : a->size >= 2 ? 1 : 0;
    return by_size[a->is_signed][s];
}

struct pyst_evinfo *pyst_evinfo_build(const struct st_catalog *cat)
{
    size_t n = st_catalog_count(cat) + 1;
    struct pyst_evinfo *info = PyMem_Calloc(n, sizeof *info);
    if (!info) {
        PyErr_NoMemory();
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const struct st_event_info *ev = st_catalog_event(cat, i);
        info[i].nargs = ev->nargs;
        for (unsigned j = 0; j < ev->nargs && j < ST_READER_MAX_ARGS; j++)
            info[i].conv[j] = (uint8_t)arg_conv(cat, ev, j);
    }
    return info;
}

/*
 * The catalog's warnings (st_catalog_warning(): an event whose format does
 * not fit its arguments, read anyway as simpletrace.py reads it) through
 * Python's warnings module, one UserWarning each. 0, or -1 with the
 * exception set (a filter turned warnings into errors).
 */
static int warn_catalog(const struct st_catalog *cat)
{
    size_t n = st_catalog_warning_count(cat);
    for (size_t i = 0; i < n; i++)
        if (PyErr_WarnEx(PyExc_UserWarning, st_catalog_warning(cat, i), 1) < 0)
            return -1;
    return 0;
}

PyObject *pyst_catalog_wrap(struct st_catalog *cat, bool owned, PyObject *owner)
{
    CatalogObject *self = PyObject_New(CatalogObject, &pyst_CatalogType);
    if (!self) {
        if (owned)
            st_catalog_free(cat);
        return NULL;
    }
    self->cat = cat;
    self->owned = owned;
    self->owner = Py_XNewRef(owner);
    self->info = pyst_evinfo_build(cat);
    /* A catalog just loaded warns; one borrowed from a reader was loaded (and warned) before. */
    if (!self->info || (owned && warn_catalog(cat) < 0)) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void catalog_dealloc(CatalogObject *self)
{
    if (self->owned)
        st_catalog_free(self->cat);
    Py_XDECREF(self->owner);
    PyMem_Free(self->info);
    PyObject_Free(self);
}

/* A borrowed catalog dies with its reader's st_reader. */
static bool catalog_alive(CatalogObject *self)
{
    if (!self->owner || !((ReaderObject *)self->owner)->closed)
        return true;
    PyErr_SetString(PyExc_ValueError, "the catalog's reader is closed");
    return false;
}

static Py_ssize_t catalog_len(CatalogObject *self)
{
    if (!catalog_alive(self))
        return -1;
    return (Py_ssize_t)st_catalog_count(self->cat);
}

/* Catalog.event(i): (name, ((type, name), ...), format or None, disabled, (typed?, ...)). */
static PyObject *catalog_event(CatalogObject *self, PyObject *arg)
{
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if ((i == -1 && PyErr_Occurred()) || !catalog_alive(self))
        return NULL;
    const struct st_event_info *ev = i >= 0 ? st_catalog_event(self->cat, (size_t)i) : NULL;
    if (!ev) {
        PyErr_SetString(PyExc_IndexError, "no event with that index");
        return NULL;
    }
    PyObject *args = PyTuple_New(ev->nargs);
    if (!args)
        return NULL;
    for (unsigned j = 0; j < ev->nargs; j++) {
        PyObject *pair = Py_BuildValue("(ss)", ev->args[j].type, ev->args[j].name);
        if (!pair) {
            Py_DECREF(args);
            return NULL;
        }
        PyTuple_SET_ITEM(args, j, pair);
    }
    return Py_BuildValue("(sNzO)", ev->name, args, ev->format, ev->disabled ? Py_True : Py_False);
}

/* Catalog.dropped(): the index of Dropped_Event. */
static PyObject *catalog_dropped(CatalogObject *self, PyObject *unused)
{
    if (!catalog_alive(self))
        return NULL;
    return PyLong_FromUnsignedLong(st_catalog_dropped(self->cat)->index);
}

/* Catalog.find(name): the index of the event called name, or -1. */
static PyObject *catalog_find(CatalogObject *self, PyObject *arg)
{
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name || !catalog_alive(self))
        return NULL;
    const struct st_event_info *ev = st_catalog_find(self->cat, name);
    return PyLong_FromLong(ev ? (long)ev->index : -1L);
}

static PyMethodDef catalog_methods[] = {
    {"event", (PyCFunction)catalog_event, METH_O,
     "event(i) -> (name, ((type, name), ...), format, disabled)\n\n"
     "Event number i in declaration order, 0 <= i <= len(catalog); dropped() is Dropped_Event's."},
    {"dropped", (PyCFunction)catalog_dropped, METH_NOARGS,
     "dropped() -> the index of Dropped_Event: len(catalog) for trace-events files, 0 for a trace's own "
     "declarations (a catalog that grows as they arrive)."},
    {"find", (PyCFunction)catalog_find, METH_O, "find(name) -> index of the event called name, or -1."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods catalog_as_sequence = {
    .sq_length = (lenfunc)catalog_len,
};

PyTypeObject pyst_CatalogType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simpletrace._core.Catalog",
    .tp_doc = "Declared events (trace-events files, or the declarations a trace carries). len() counts them.",
    .tp_basicsize = sizeof(CatalogObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)catalog_dealloc,
    .tp_methods = catalog_methods,
    .tp_as_sequence = &catalog_as_sequence,
};
