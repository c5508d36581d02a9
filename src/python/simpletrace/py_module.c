/*
 * The module simpletrace._core: its exceptions, the interned names the
 * analyzer loop passes, and the module-level functions (catalogs).
 */
#include <errno.h>

#include "pyst.h"

PyObject *pyst_SimpleException;
PyObject *pyst_TraceError;
PyObject *pyst_EventsError;
PyObject *pyst_OpenError;
PyObject *pyst_kwnames;

/* The OpenError raised for an errno: also the builtin OSError subclass Python
 * itself raises for it (so `except FileNotFoundError` still catches it), the
 * base class OpenError for the others. Made at import. */
static struct {
    int err;
    PyObject **builtin;
    PyObject *cls;
} open_errors[] = {
    {ENOENT, &PyExc_FileNotFoundError, NULL},
    {EACCES, &PyExc_PermissionError, NULL},
    {EPERM, &PyExc_PermissionError, NULL},
    {EISDIR, &PyExc_IsADirectoryError, NULL},
    {ENOTDIR, &PyExc_NotADirectoryError, NULL},
};

static PyObject *open_error_class(int err)
{
    for (size_t i = 0; i < sizeof open_errors / sizeof open_errors[0]; i++)
        if (open_errors[i].err == err)
            return open_errors[i].cls;
    return pyst_OpenError;
}

PyObject *pyst_events_error(const char *message)
{
    PyErr_SetString(pyst_EventsError, message);
    return NULL;
}

/* Whether an open error is the system's (a path that cannot be opened) rather than the trace's. */
static bool is_os_error(int code)
{
    switch (-code) {
    case ENOENT: case EACCES: case EPERM: case EISDIR: case ENOTDIR: case ELOOP: case ENAMETOOLONG:
    case EMFILE: case ENFILE: case ENXIO: case ENODEV:
        return true;
    default:
        return false;
    }
}

PyObject *pyst_open_error(int code, const char *name, const char *text)
{
    if (code == -ENOMEM)
        return PyErr_NoMemory();
    if (!is_os_error(code)) {
        PyErr_SetString(pyst_TraceError, text);
        return NULL;
    }
    PyObject *cls = open_error_class(-code);
    if (name) {
        PyObject *fn = PyUnicode_DecodeFSDefault(name);
        if (fn) {
            errno = -code;
            PyErr_SetFromErrnoWithFilenameObject(cls, fn);
            Py_DECREF(fn);
        }
        return NULL;
    }
    /* Which of several files is not known here: the reader's text names it. */
    PyObject *exc = PyObject_CallFunction(cls, "is", -code, text);
    if (exc) {
        PyErr_SetObject(cls, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* _core.open_error(errno, strerror, filename): the OpenError Python's own open() would have raised as OSError. */
static PyObject *open_error(PyObject *mod, PyObject *args)
{
    int err;
    PyObject *strerror, *filename;
    if (!PyArg_ParseTuple(args, "iOO", &err, &strerror, &filename))
        return NULL;
    return PyObject_CallFunction(open_error_class(err), "iOO", err, strerror, filename);
}

/* _core.load_events(name, text): a Catalog of trace-events text. */
static PyObject *load_events(PyObject *mod, PyObject *args)
{
    const char *name, *text;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "ss#", &name, &text, &len))
        return NULL;
    struct st_catalog *cat;
    char errbuf[1024];
    int ret = st_catalog_load_buffer(&cat, name, text, (size_t)len, errbuf, sizeof errbuf);
    if (ret == -ENOMEM)
        return PyErr_NoMemory();
    if (ret < 0)
        return pyst_events_error(errbuf);
    return pyst_catalog_wrap(cat, true, NULL);
}

/* _core.load_events_files(paths): a Catalog of trace-events files, in order. */
static PyObject *load_events_files(PyObject *mod, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "paths must be a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **bytes = PyMem_Calloc(n ? (size_t)n : 1, sizeof *bytes);
    const char **paths = PyMem_Calloc(n ? (size_t)n : 1, sizeof *paths);
    PyObject *result = NULL;
    if (!bytes || !paths) {
        PyErr_NoMemory();
        goto out;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, i), &bytes[i]))
            goto out;
        paths[i] = PyBytes_AS_STRING(bytes[i]);
    }
    struct st_catalog *cat;
    char errbuf[1024];
    int ret = st_catalog_load(&cat, paths, (size_t)n, errbuf, sizeof errbuf);
    if (ret == -EINVAL || ret == -EMEDIUMTYPE)
        pyst_events_error(errbuf);
    else if (ret < 0)
        pyst_open_error(ret, n == 1 ? paths[0] : NULL, errbuf);
    else
        result = pyst_catalog_wrap(cat, true, NULL);
out:
    for (Py_ssize_t i = 0; bytes && i < n; i++)
        Py_XDECREF(bytes[i]);
    PyMem_Free(bytes);
    PyMem_Free(paths);
    Py_DECREF(seq);
    return result;
}

/* _core.load_trace_declarations(path, rotated=False): the Catalog a trace carries, or None. */
static PyObject *load_trace_declarations(PyObject *mod, PyObject *args)
{
    PyObject *path;
    int rotated = 0;
    if (!PyArg_ParseTuple(args, "O&|p", PyUnicode_FSConverter, &path, &rotated))
        return NULL;
    struct st_reader_options o = {.struct_size = sizeof o, .flags = rotated ? ST_READER_ROTATED : 0};
    struct st_catalog *cat;
    char errbuf[1024];
    int ret = st_catalog_load_trace(&cat, PyBytes_AS_STRING(path), &o, errbuf, sizeof errbuf);
    PyObject *result;
    if (ret == -ENODATA)
        result = Py_NewRef(Py_None);
    else if (ret == -EINVAL)
        result = pyst_events_error(errbuf);
    else if (ret < 0)
        result = pyst_open_error(ret, PyBytes_AS_STRING(path), errbuf);
    else
        result = pyst_catalog_wrap(cat, true, NULL);
    Py_DECREF(path);
    return result;
}

/* _core.parse_duration(text): nanoseconds of "N", "Nns", "Nus", "Nms" or "Ns". */
static PyObject *parse_duration(PyObject *mod, PyObject *arg)
{
    const char *text = PyUnicode_AsUTF8(arg);
    if (!text)
        return NULL;
    int64_t ns;
    if (st_parse_duration_ns(text, &ns) < 0)
        return PyErr_Format(PyExc_ValueError, "'%s' is not a duration (N, Nns, Nus, Nms or Ns)", text);
    return PyLong_FromLongLong(ns);
}

static PyMethodDef module_methods[] = {
    {"load_events", load_events, METH_VARARGS,
     "load_events(name, text) -> Catalog\n\nParses trace-events text (name is used in messages)."},
    {"load_events_files", load_events_files, METH_O,
     "load_events_files(paths) -> Catalog\n\nParses trace-events files, in order."},
    {"load_trace_declarations", load_trace_declarations, METH_VARARGS,
     "load_trace_declarations(path, rotated=False) -> Catalog or None\n\n"
     "The event declarations a trace carries; None when it carries none (QEMU's traces)."},
    {"open_error", open_error, METH_VARARGS,
     "open_error(errno, strerror, filename) -> OpenError\n\n"
     "The OpenError for an OSError of opening filename (FileNotFoundError and the like as well)."},
    {"parse_duration", parse_duration, METH_O,
     "parse_duration(text) -> int\n\nNanoseconds of a duration \"N\", \"Nns\", \"Nus\", \"Nms\" or \"Ns\"."},
    {"compare_json", (PyCFunction)(void (*)(void))pyst_compare_json, METH_VARARGS | METH_KEYWORDS,
     "compare_json(base, new, *, pairs=(), no_default_pairs=False, by=None, functions=(None, None), alpha=0.01,\n"
     "             fail_if=(), titles=(None, None)) -> (json, (met, unseen), base_warnings, new_warnings)\n\n"
     "Measures the remaining records of two Readers and compares them: `simpletrace compare --format=json`'s\n"
     "text, the --fail-if conditions met (dicts) and those whose NAME is in neither run, and per run the\n"
     "rules that paired nothing and whether an event declares the by= argument."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "simpletrace._core",
    .m_doc = "The C half of simpletrace: readers, records and the analyzer loop on libsimpletrace-read.",
    .m_size = -1,
    .m_methods = module_methods,
};

/* Creates an exception class simpletrace.NAME. NULL with an exception. */
static PyObject *new_exception(PyObject *mod, const char *name, const char *doc, PyObject *bases)
{
    char qualified[64];
    snprintf(qualified, sizeof qualified, "simpletrace.%s", name);
    PyObject *e = PyErr_NewExceptionWithDoc(qualified, doc, bases, NULL);
    if (e && PyModule_AddObjectRef(mod, name, e) < 0)
        Py_CLEAR(e);
    return e;
}

static int add_type(PyObject *mod, PyTypeObject *type, const char *name)
{
    if (PyType_Ready(type) < 0)
        return -1;
    return PyModule_AddObjectRef(mod, name, (PyObject *)type);
}

PyMODINIT_FUNC PyInit__core(void);

PyMODINIT_FUNC PyInit__core(void)
{
    PyObject *mod = PyModule_Create(&module_def);
    if (!mod)
        return NULL;
    pyst_SimpleException = new_exception(mod, "SimpleException",
                                         "What simpletrace raises for input it cannot read (as QEMU's simpletrace.py).",
                                         NULL);
    if (!pyst_SimpleException)
        goto fail;
    PyObject *bases = PyTuple_Pack(2, pyst_SimpleException, PyExc_ValueError);
    if (!bases)
        goto fail;
    pyst_TraceError = new_exception(mod, "TraceError",
                                    "A trace that cannot be read further: truncated, corrupt, or not matching its\n"
                                    "declarations. Every record before the bad one was delivered. Attributes:\n"
                                    "filename, offset (byte offset of the bad record or header), record (its\n"
                                    "number: header 0, then every record counted), errno, reason (the message\n"
                                    "without the place).",
                                    bases);
    pyst_EventsError = new_exception(mod, "EventsError",
                                     "trace-events text that does not parse (the message says FILE:LINE: what).",
                                     bases);
    Py_DECREF(bases);
    if (!pyst_TraceError || !pyst_EventsError)
        goto fail;
    bases = PyTuple_Pack(2, pyst_SimpleException, PyExc_OSError);
    if (!bases)
        goto fail;
    pyst_OpenError = new_exception(mod, "OpenError",
                                   "A file that cannot be opened (a trace, a trace-events file): an OSError with\n"
                                   "errno, strerror and filename. The one raised is also the OSError subclass\n"
                                   "Python raises for its errno (FileNotFoundError, PermissionError,\n"
                                   "IsADirectoryError, NotADirectoryError).",
                                   bases);
    Py_DECREF(bases);
    if (!pyst_OpenError)
        goto fail;
    for (size_t i = 0; i < sizeof open_errors / sizeof open_errors[0]; i++) {
        bases = PyTuple_Pack(2, pyst_OpenError, *open_errors[i].builtin);
        if (!bases)
            goto fail;
        /* Named OpenError too: a traceback says simpletrace.OpenError, the errno says which. */
        open_errors[i].cls = PyErr_NewExceptionWithDoc("simpletrace.OpenError", NULL, bases, NULL);
        Py_DECREF(bases);
        if (!open_errors[i].cls)
            goto fail;
    }
    PyObject *kw[4] = {PyUnicode_InternFromString("event"), PyUnicode_InternFromString("event_id"),
                       PyUnicode_InternFromString("timestamp_ns"), PyUnicode_InternFromString("pid")};
    if (kw[0] && kw[1] && kw[2] && kw[3])
        pyst_kwnames = PyTuple_Pack(4, kw[0], kw[1], kw[2], kw[3]);
    for (int i = 0; i < 4; i++)
        Py_XDECREF(kw[i]);
    if (!pyst_kwnames)
        goto fail;
    if (add_type(mod, &pyst_CatalogType, "Catalog") < 0 || add_type(mod, &pyst_ReaderType, "Reader") < 0 ||
        add_type(mod, &pyst_RecordType, "Record") < 0 || add_type(mod, &pyst_BufferType, "Buffer") < 0)
        goto fail;
    if (PyModule_AddStringConstant(mod, "library_version", st_version_string()) < 0)
        goto fail;
    return mod;
fail:
    Py_DECREF(mod);
    return NULL;
}
