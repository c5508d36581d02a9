/*
 * Reader: one st_reader, over a path, several paths (merged by time), bytes
 * or a Python file object. Iterating gives typed Records, or with qemu=True
 * the tuples simpletrace.py's read_trace_records() yields:
 * (event, event_id, timestamp_ns, pid, *args). The Python layer binds the
 * Event object and event_id of every catalog index (bind()) before reading.
 *
 * Value objects are reused while they repeat: the last pid, and per event
 * and argument the last integer or bytes (ints and bytes are immutable, so
 * nothing can tell, and QEMU traces repeat pointers and file names a lot).
 */
#include <errno.h>
#include <string.h>

#include "pyst.h"

/* The last raw value object of each argument of one event. */
struct lastvals {
    uint64_t word[ST_READER_MAX_ARGS];
    PyObject *obj[ST_READER_MAX_ARGS];
};

/* --- errors ------------------------------------------------------------------ */

/* Sets attribute name of obj to a new reference value (consumed). -1 on failure. */
static int set_attr(PyObject *obj, const char *name, PyObject *value)
{
    if (!value)
        return -1;
    int ret = PyObject_SetAttrString(obj, name, value);
    Py_DECREF(value);
    return ret;
}

PyObject *pyst_reader_raise(ReaderObject *self)
{
    if (pyst_stream_raise(self->stream))
        return NULL;
    const struct st_reader_error *e = st_reader_error(self->r);
    if (e->code == -ENOMEM)
        return PyErr_NoMemory();
    char text[1536];
    st_reader_format_error(self->r, text, sizeof text);
    PyObject *exc = PyObject_CallFunction(pyst_TraceError, "s", text);
    if (!exc)
        return NULL;
    if (set_attr(exc, "filename", PyUnicode_DecodeFSDefault(st_reader_name(self->r))) < 0 ||
        set_attr(exc, "offset", PyLong_FromUnsignedLongLong(e->offset)) < 0 ||
        set_attr(exc, "record", PyLong_FromUnsignedLongLong(e->record)) < 0 ||
        set_attr(exc, "errno", PyLong_FromLong(-e->code)) < 0 ||
        set_attr(exc, "reason", PyUnicode_DecodeUTF8(e->message, (Py_ssize_t)strlen(e->message), "replace")) < 0) {
        Py_DECREF(exc);
        return NULL;
    }
    PyErr_SetObject(pyst_TraceError, exc);
    Py_DECREF(exc);
    return NULL;
}

/* --- values ------------------------------------------------------------------ */

PyObject *pyst_pid_value(ReaderObject *self, const struct st_record *rec)
{
    if (self->last_pid_obj && rec->pid == self->last_pid)
        return Py_NewRef(self->last_pid_obj);
    PyObject *o = PyLong_FromUnsignedLong(rec->pid);
    if (o) {
        Py_XSETREF(self->last_pid_obj, Py_NewRef(o));
        self->last_pid = rec->pid;
    }
    return o;
}

PyObject *pyst_raw_value(ReaderObject *self, const struct st_record *rec, unsigned i)
{
    const struct st_value *v = &rec->args[i];
    size_t idx = rec->event->index;
    struct lastvals *lv = self->last ? self->last[idx] : NULL;
    if (!lv) {
        if (!self->last && !(self->last = PyMem_Calloc(self->nevents, sizeof *self->last)))
            return PyErr_NoMemory();
        if (!(lv = self->last[idx] = PyMem_Calloc(1, sizeof *lv)))
            return PyErr_NoMemory();
    }
    PyObject *o = lv->obj[i];
    if (v->kind == ST_VALUE_STRING) {
        if (o && PyBytes_CheckExact(o) && (size_t)PyBytes_GET_SIZE(o) == v->len &&
            memcmp(PyBytes_AS_STRING(o), v->str, v->len) == 0)
            return Py_NewRef(o);
        o = PyBytes_FromStringAndSize(v->str, v->len);
    } else {
        if (o && lv->word[i] == v->u64 && PyLong_CheckExact(o))
            return Py_NewRef(o);
        o = PyLong_FromUnsignedLongLong(v->u64);
        lv->word[i] = v->u64;
    }
    if (o)
        Py_XSETREF(lv->obj[i], Py_NewRef(o));
    return o;
}

/* --- reading ----------------------------------------------------------------- */

static bool check_open(ReaderObject *self)
{
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the reader is in use (by its own file object's callback?)");
        return false;
    }
    if (self->r && !self->closed)
        return true;
    PyErr_SetString(PyExc_ValueError, "the reader is closed");
    return false;
}

bool pyst_reader_check_open(ReaderObject *self)
{
    return check_open(self);
}

/* st_reader_next() with the reader marked busy. */
static int next_busy(ReaderObject *self, const struct st_record **rec)
{
    self->busy = true;
    int ret = st_reader_next(self->r, rec);
    self->busy = false;
    return ret;
}

/* Whether bind()'s tuples cover every event index with the right argument count. 0, or -1 with ValueError. */
static int check_bound(const ReaderObject *self, PyObject *events, PyObject *ids, PyObject *argnames)
{
    size_t n = self->nevents;
    if ((size_t)PyTuple_GET_SIZE(events) != n || (size_t)PyTuple_GET_SIZE(ids) != n ||
        (size_t)PyTuple_GET_SIZE(argnames) != n) {
        PyErr_Format(PyExc_ValueError, "bind() needs %zu events, ids and argument names", n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        PyObject *names = PyTuple_GET_ITEM(argnames, i);
        if (!PyTuple_Check(names) || (size_t)PyTuple_GET_SIZE(names) != self->info[i].nargs) {
            PyErr_Format(PyExc_ValueError, "bind(): event %zu has %u arguments", i, self->info[i].nargs);
            return -1;
        }
    }
    return 0;
}

/*
 * The catalog grew (a trace read without trace-events declared more
 * events): the per-index tables follow it, the Python layer's through
 * bind()'s grow callable. 0, or -1 with an exception.
 */
static int sync_catalog(ReaderObject *self)
{
    const struct st_catalog *cat = st_reader_catalog(self->r);
    size_t n = st_catalog_count(cat) + 1;
    struct pyst_evinfo *info = pyst_evinfo_build(cat);
    struct lastvals **last = self->last ? PyMem_Realloc(self->last, n * sizeof *last) : NULL;
    if (!info || (self->last && !last)) {
        PyMem_Free(info);
        return -1;
    }
    if (last) {
        memset(last + self->nevents, 0, (n - self->nevents) * sizeof *last);
        self->last = last;
    }
    PyMem_Free(self->own_info);
    self->info = self->own_info = info;
    self->nevents = n;
    if (!self->grow)
        return 0;
    PyObject *bound = PyObject_CallNoArgs(self->grow);
    if (!bound)
        return -1;
    PyObject *events, *ids, *argnames;
    int ok = PyArg_ParseTuple(bound, "O!O!O!", &PyTuple_Type, &events, &PyTuple_Type, &ids, &PyTuple_Type,
                              &argnames) &&
             check_bound(self, events, ids, argnames) == 0;
    if (ok) {
        Py_XSETREF(self->events, Py_NewRef(events));
        Py_XSETREF(self->ids, Py_NewRef(ids));
        Py_XSETREF(self->argnames, Py_NewRef(argnames));
    }
    Py_DECREF(bound);
    return ok ? 0 : -1;
}

int pyst_reader_next(ReaderObject *self, const struct st_record **rec, bool declared)
{
    if (!check_open(self))
        return -1;
    int ret;
    if (self->has_pending) {
        self->has_pending = false;
        ret = self->pending_ret;
        *rec = self->pending_rec;
    } else {
        ret = next_busy(self, rec);
    }
    if (ret > 0) {
        if ((*rec)->event && (*rec)->event->index >= self->nevents && sync_catalog(self) < 0)
            return -1;
        if (declared && !(*rec)->event) { /* only with undeclared=True */
            PyErr_Format(pyst_SimpleException, "%s: byte offset %llu, record %llu: event %s is not declared",
                         st_reader_name(self->r), (unsigned long long)(*rec)->offset,
                         (unsigned long long)(*rec)->number, (*rec)->name ? (*rec)->name : "(unmapped)");
            return -1;
        }
        return 1;
    }
    if (ret == 0)
        return 0;
    pyst_reader_raise(self);
    return -1;
}

/* A QEMU read_trace_records() tuple for rec. */
static PyObject *qemu_tuple(ReaderObject *self, const struct st_record *rec)
{
    size_t idx = rec->event->index;
    PyObject *t = PyTuple_New(4 + (Py_ssize_t)rec->nargs);
    if (!t)
        return NULL;
    PyTuple_SET_ITEM(t, 0, Py_NewRef(PyTuple_GET_ITEM(self->events, idx)));
    PyTuple_SET_ITEM(t, 1, Py_NewRef(PyTuple_GET_ITEM(self->ids, idx)));
    PyObject *ts = PyLong_FromUnsignedLongLong(rec->timestamp_ns);
    PyObject *pid = pyst_pid_value(self, rec);
    PyTuple_SET_ITEM(t, 2, ts);
    PyTuple_SET_ITEM(t, 3, pid);
    if (!ts || !pid)
        goto fail;
    for (unsigned i = 0; i < rec->nargs; i++) {
        PyObject *v = pyst_raw_value(self, rec, i);
        if (!v)
            goto fail;
        PyTuple_SET_ITEM(t, 4 + i, v);
    }
    return t;
fail:
    Py_DECREF(t);
    return NULL;
}

bool pyst_reader_bound(ReaderObject *self)
{
    if (self->events)
        return true;
    PyErr_SetString(PyExc_RuntimeError, "Reader.bind() was not called");
    return false;
}

static PyObject *reader_iternext(ReaderObject *self)
{
    const struct st_record *rec;
    if (!pyst_reader_bound(self))
        return NULL;
    int ret = pyst_reader_next(self, &rec, self->qemu);
    if (ret <= 0)
        return NULL; /* the end (no exception) or the error */
    return self->qemu ? qemu_tuple(self, rec) : pyst_record_new(self, rec);
}

/* --- opening ----------------------------------------------------------------- */

/* A v4 header in this machine's byte order, for a stream whose header was read already. */
static const uint64_t native_header[3] = {UINT64_C(0xffffffffffffffff), UINT64_C(0xf2b177cb0aa429b4), 4};

static void conflict(const char *message, void *opaque)
{
    ReaderObject *self = opaque;
    PyObject *m = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace");
    if (!m || PyList_Append(self->conflicts, m) < 0)
        PyErr_Clear(); /* a conflict not listed is no reason to stop reading */
    Py_XDECREF(m);
}

/* Whether obj is a path: str or os.PathLike (bytes are trace data). */
static bool is_path(PyObject *obj)
{
    return PyUnicode_Check(obj) || (!PyObject_CheckBuffer(obj) && PyObject_HasAttrString(obj, "__fspath__"));
}

/* Opens several paths as one merged reader (cat may be NULL: the union of their declarations). */
static int open_many(ReaderObject *self, PyObject *list, const struct st_catalog *cat,
                     const struct st_reader_options *o, struct st_reader_error *err)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(list);
    PyObject **bytes = PyMem_Calloc(n ? (size_t)n : 1, sizeof *bytes);
    const char **paths = PyMem_Calloc(n ? (size_t)n : 1, sizeof *paths);
    int ret = -1;
    if (!bytes || !paths) {
        PyErr_NoMemory();
        goto out;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(list, i), &bytes[i]))
            goto out;
        paths[i] = PyBytes_AS_STRING(bytes[i]);
    }
    ret = st_reader_open_many(&self->r, paths, (size_t)n, cat, o, err);
    if (ret < 0) {
        pyst_open_error(ret, NULL, err->message);
        ret = -1;
    }
out:
    for (Py_ssize_t i = 0; bytes && i < n; i++)
        Py_XDECREF(bytes[i]);
    PyMem_Free(bytes);
    PyMem_Free(paths);
    return ret;
}

/* One path: with no catalog given, the declarations the trace carries. */
static int open_path(ReaderObject *self, PyObject *source, const struct st_reader_options *o,
                     struct st_reader_error *err)
{
    PyObject *path;
    if (!PyUnicode_FSConverter(source, &path))
        return -1;
    const char *p = PyBytes_AS_STRING(path);
    /* No catalog: the trace's own declarations, read with its records in one pass. */
    int ret = st_reader_open(&self->r, p, self->catalog ? ((CatalogObject *)self->catalog)->cat : NULL, o, err);
    if (ret < 0)
        pyst_open_error(ret, p, err->message);
    Py_DECREF(path);
    return ret < 0 ? -1 : 0;
}

/* Sets a filter from an optional Python int (None: off). 0, or -1 with an exception. */
static int set_filter(PyObject *value, bool *on, int64_t *out)
{
    if (value == Py_None)
        return 0;
    *on = true;
    *out = PyLong_AsLongLong(value);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* A bytes-like trace (kept by the reader until it closes). */
static int open_memory(ReaderObject *self, PyObject *source, const char *name, const struct st_catalog *cat,
                       const struct st_reader_options *o, struct st_reader_error *err)
{
    if (PyObject_GetBuffer(source, &self->view, PyBUF_SIMPLE) < 0)
        return -1;
    self->has_view = true;
    int ret = st_reader_open_memory(&self->r, self->view.buf, (size_t)self->view.len, name ? name : "<bytes>", cat,
                                    o, err);
    if (ret < 0)
        pyst_open_error(ret, NULL, err->message);
    return ret < 0 ? -1 : 0;
}

/* A file object, read from where it stands (after a v4 header of our own when its header was read). */
static int open_file_object(ReaderObject *self, PyObject *source, const char *name, bool header,
                            const struct st_catalog *cat, const struct st_reader_options *o,
                            struct st_reader_error *err)
{
    self->fp = pyst_stream_open_read(source, header ? native_header : NULL, header ? sizeof native_header : 0,
                                     &self->stream);
    if (!self->fp)
        return -1;
    PyObject *attr = name ? NULL : PyObject_GetAttrString(source, "name"); /* the file's name for messages */
    PyObject *text = attr ? PyObject_Str(attr) : NULL;
    if (text)
        name = PyUnicode_AsUTF8(text);
    PyErr_Clear();
    int ret = st_reader_open_stream(&self->r, self->fp, name ? name : "<file object>", cat, o, err);
    Py_XDECREF(text);
    Py_XDECREF(attr);
    if (ret < 0)
        pyst_open_error(ret, NULL, err->message);
    return ret < 0 ? -1 : 0;
}

/* Opens source as the kind of thing it is. 0, or -1 with an exception. */
static int open_source(ReaderObject *self, PyObject *source, const char *name, bool header,
                       const struct st_reader_options *o)
{
    struct st_reader_error err = {.struct_size = sizeof err};
    const struct st_catalog *cat = self->catalog ? ((CatalogObject *)self->catalog)->cat : NULL;
    if (PyList_Check(source) || PyTuple_Check(source)) {
        PyObject *list = PySequence_Fast(source, "");
        int ret = list ? open_many(self, list, cat, o, &err) : -1;
        Py_XDECREF(list);
        return ret;
    }
    if (is_path(source))
        return open_path(self, source, o, &err);
    if (PyObject_CheckBuffer(source))
        return open_memory(self, source, name, cat, o, &err);
    return open_file_object(self, source, name, header, cat, o, &err);
}

static int reader_init(ReaderObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"source", "catalog", "no_header", "header", "select", "tid", "pid", "from_ns",
                             "to_ns", "rotated", "undeclared", "buffer_size", "qemu", "name", NULL};
    PyObject *source, *catalog = Py_None, *tid = Py_None, *pid = Py_None, *from_ns = Py_None, *to_ns = Py_None;
    int no_header = 0, header = 0, rotated = 0, undeclared = 0, qemu = 0;
    const char *select = NULL, *name = NULL;
    Py_ssize_t buffer_size = 0;
    if (self->r || self->conflicts) {
        PyErr_SetString(PyExc_RuntimeError, "a Reader is opened once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$ppzOOOOppnpz", kwlist, &source, &catalog, &no_header,
                                     &header, &select, &tid, &pid, &from_ns, &to_ns, &rotated, &undeclared,
                                     &buffer_size, &qemu, &name))
        return -1;
    if (catalog != Py_None && !PyObject_TypeCheck(catalog, &pyst_CatalogType)) {
        PyErr_SetString(PyExc_TypeError, "catalog must be a Catalog or None");
        return -1;
    }
    struct st_reader_options o = {.struct_size = sizeof o,
                                  .flags = (no_header ? ST_READER_NO_HEADER : 0u) | (rotated ? ST_READER_ROTATED : 0u) |
                                           (undeclared ? ST_READER_UNDECLARED : 0u),
                                  .buffer_size = buffer_size > 0 ? (size_t)buffer_size : 0,
                                  .events = select,
                                  .conflict = conflict,
                                  .conflict_opaque = self};
    int64_t tid64 = 0, pid64 = 0;
    if (set_filter(tid, &o.filter_tid, &tid64) < 0 || set_filter(pid, &o.filter_pid, &pid64) < 0 ||
        set_filter(from_ns, &o.filter_from, &o.from_ns) < 0 || set_filter(to_ns, &o.filter_to, &o.to_ns) < 0)
        return -1;
    o.tid = (uint32_t)tid64;
    o.pid = (uint32_t)pid64;
    self->qemu = qemu;
    self->undeclared = undeclared;
    if (!(self->conflicts = PyList_New(0)))
        return -1;
    if (catalog != Py_None)
        self->catalog = Py_NewRef(catalog);
    if (open_source(self, source, name, header, &o) < 0)
        return -1;
    const struct st_catalog *used = st_reader_catalog(self->r);
    self->nevents = st_catalog_count(used) + 1;
    if (self->catalog) {
        self->info = ((CatalogObject *)self->catalog)->info;
        return 0;
    }
    self->own_info = pyst_evinfo_build(used);
    self->info = self->own_info;
    return self->info ? 0 : -1;
}

/* --- methods ----------------------------------------------------------------- */

/* Reader.bind(events, ids, argnames, grow=None): per catalog index, the Event object, its event_id and argument names. */
static PyObject *reader_bind(ReaderObject *self, PyObject *args)
{
    PyObject *events, *ids, *argnames, *grow = Py_None;
    if (!PyArg_ParseTuple(args, "O!O!O!|O", &PyTuple_Type, &events, &PyTuple_Type, &ids, &PyTuple_Type, &argnames,
                          &grow))
        return NULL;
    if (grow != Py_None && !PyCallable_Check(grow))
        return PyErr_Format(PyExc_TypeError, "bind(): grow must be callable or None");
    if (check_bound(self, events, ids, argnames) < 0)
        return NULL;
    Py_XSETREF(self->events, Py_NewRef(events));
    Py_XSETREF(self->ids, Py_NewRef(ids));
    Py_XSETREF(self->argnames, Py_NewRef(argnames));
    Py_XSETREF(self->grow, grow == Py_None ? NULL : Py_NewRef(grow));
    Py_RETURN_NONE;
}

/* Reader.prime(): reads the header (and the first record, kept for later); raises a bad header now. */
static PyObject *reader_prime(ReaderObject *self, PyObject *unused)
{
    if (!check_open(self))
        return NULL;
    if (self->has_pending)
        Py_RETURN_NONE;
    const struct st_record *rec = NULL;
    int ret = next_busy(self, &rec);
    if (ret < 0 && st_reader_error(self->r)->record == 0)
        return pyst_reader_raise(self);
    self->has_pending = true;
    self->pending_ret = ret;
    self->pending_rec = rec;
    Py_RETURN_NONE;
}

/* Reader.format_text(writer, show_process=False): simpletrace.py's text of every remaining record. */
static PyObject *reader_format_text(ReaderObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"writer", "show_process", NULL};
    PyObject *writer;
    int show_process = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p", kwlist, &writer, &show_process) || !check_open(self))
        return NULL;
    struct pyst_stream *s;
    FILE *out = pyst_stream_open_write(writer, &s);
    if (!out)
        return NULL;
    struct st_formatter_options fo = {.struct_size = sizeof fo, .format = ST_OUTPUT_TEXT,
                                      .timestamps = ST_TIMESTAMP_DELTA, .out = out, .show_process = show_process};
    struct st_formatter *f;
    int ret = st_formatter_new(&f, st_reader_catalog(self->r), &fo);
    PyObject *result = NULL;
    if (ret < 0) {
        PyErr_SetString(PyExc_OSError, st_strerror(ret));
        goto out;
    }
    const struct st_record *rec;
    while ((ret = pyst_reader_next(self, &rec, true)) > 0) {
        self->busy = true; /* the writer's callback must not close the reader under the record */
        ret = st_formatter_write(f, rec);
        self->busy = false;
        if (ret < 0)
            break;
    }
    if (ret == 0 && (ret = st_formatter_flush(f)) == 0)
        result = Py_NewRef(Py_None);
    else if (!PyErr_Occurred() && !pyst_stream_raise(s)) /* the reader's error is set already */
        PyErr_SetString(PyExc_OSError, st_strerror(ret));
    st_formatter_free(f);
out:
    fclose(out);
    if (!result && !PyErr_Occurred())
        pyst_stream_raise(s);
    pyst_stream_free(s);
    return result;
}

static void release(ReaderObject *self)
{
    st_reader_close(self->r);
    self->r = NULL;
    if (self->fp)
        fclose(self->fp);
    self->fp = NULL;
    pyst_stream_free(self->stream);
    self->stream = NULL;
    if (self->has_view)
        PyBuffer_Release(&self->view);
    self->has_view = false;
    self->closed = true;
}

static PyObject *reader_close(ReaderObject *self, PyObject *unused)
{
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the reader is in use: it cannot be closed now");
        return NULL;
    }
    release(self);
    Py_RETURN_NONE;
}

static PyObject *reader_enter(ReaderObject *self, PyObject *unused)
{
    return Py_NewRef(self);
}

static PyObject *reader_exit(ReaderObject *self, PyObject *args)
{
    PyObject *r = reader_close(self, NULL);
    if (!r)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

/* Reader.counters(): what was read so far, as a dict. */
static PyObject *reader_counters(ReaderObject *self, PyObject *unused)
{
    if (!check_open(self))
        return NULL;
    struct st_reader_counters c = {.struct_size = sizeof c};
    st_reader_get_counters(self->r, &c);
    return Py_BuildValue("{sKsKsKsKsKsKsK}", "records", (unsigned long long)c.records, "mappings",
                         (unsigned long long)c.mappings, "events", (unsigned long long)c.events, "dropped_records",
                         (unsigned long long)c.dropped_records, "dropped_events", (unsigned long long)c.dropped_events,
                         "filtered", (unsigned long long)c.filtered, "bytes", (unsigned long long)c.bytes);
}

/* Reader.description(input=0): who wrote the trace, as a dict, or None when it does not say. */
static PyObject *reader_description(ReaderObject *self, PyObject *args)
{
    Py_ssize_t i = 0;
    if (!PyArg_ParseTuple(args, "|n", &i) || !check_open(self))
        return NULL;
    const struct st_reader *in = i >= 0 ? st_reader_input(self->r, (size_t)i) : NULL;
    if (!in) {
        PyErr_SetString(PyExc_IndexError, "no input with that number");
        return NULL;
    }
    struct st_trace_description d = {.struct_size = sizeof d};
    if (st_reader_description(in, &d) < 0)
        Py_RETURN_NONE;
    return Py_BuildValue("{sssssssssssssIsKsKsK}", "version", d.version, "program", d.program, "exe", d.exe,
                         "cmdline", d.cmdline, "host", d.host, "clock", d.clock, "pid", (unsigned)d.pid, "tsc_hz",
                         (unsigned long long)d.tsc_hz, "anchor_mono_ns", (unsigned long long)d.anchor_mono_ns,
                         "anchor_real_ns", (unsigned long long)d.anchor_real_ns);
}

static PyObject *get_version(ReaderObject *self, void *unused)
{
    if (!check_open(self))
        return NULL;
    int v = st_reader_version(self->r);
    return v < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(v);
}

static PyObject *get_byte_swapped(ReaderObject *self, void *unused)
{
    if (!check_open(self))
        return NULL;
    return PyBool_FromLong(st_reader_byte_swapped(self->r));
}

static PyObject *get_name(ReaderObject *self, void *unused)
{
    if (!check_open(self))
        return NULL;
    return PyUnicode_DecodeFSDefault(st_reader_name(self->r));
}

static PyObject *get_inputs(ReaderObject *self, void *unused)
{
    if (!check_open(self))
        return NULL;
    return PyLong_FromSize_t(st_reader_input_count(self->r));
}

static PyObject *get_origin(ReaderObject *self, void *unused)
{
    uint64_t ts;
    if (!check_open(self))
        return NULL;
    return st_reader_origin(self->r, &ts) < 0 ? Py_NewRef(Py_None) : PyLong_FromUnsignedLongLong(ts);
}

static PyObject *get_catalog(ReaderObject *self, void *unused)
{
    if (self->catalog)
        return Py_NewRef(self->catalog);
    if (!check_open(self))
        return NULL;
    /* The reader's own catalog (the union of several traces' declarations) lives as long as it is open. */
    return pyst_catalog_wrap((struct st_catalog *)st_reader_catalog(self->r), false, (PyObject *)self);
}

static PyObject *get_closed(ReaderObject *self, void *unused)
{
    return PyBool_FromLong(self->closed || !self->r);
}

static PyObject *get_conflicts(ReaderObject *self, void *unused)
{
    return Py_NewRef(self->conflicts ? self->conflicts : Py_None);
}

static PyObject *get_events(ReaderObject *self, void *unused)
{
    return Py_NewRef(self->events ? self->events : Py_None);
}

/* --- the type ---------------------------------------------------------------- */

static int reader_traverse(ReaderObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->catalog);
    Py_VISIT(self->events);
    Py_VISIT(self->ids);
    Py_VISIT(self->argnames);
    Py_VISIT(self->grow);
    Py_VISIT(self->programs);
    Py_VISIT(self->conflicts);
    return 0;
}

static void clear_values(ReaderObject *self)
{
    for (size_t i = 0; self->last && i < self->nevents; i++) {
        for (unsigned j = 0; self->last[i] && j < ST_READER_MAX_ARGS; j++)
            Py_CLEAR(self->last[i]->obj[j]);
        PyMem_Free(self->last[i]);
    }
    PyMem_Free(self->last);
    self->last = NULL;
    Py_CLEAR(self->last_pid_obj);
}

static int reader_clear(ReaderObject *self)
{
    Py_CLEAR(self->events);
    Py_CLEAR(self->ids);
    Py_CLEAR(self->argnames);
    Py_CLEAR(self->grow);
    Py_CLEAR(self->programs);
    Py_CLEAR(self->conflicts);
    clear_values(self);
    return 0;
}

static void reader_dealloc(ReaderObject *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)self);
    release(self);
    reader_clear(self);
    Py_CLEAR(self->catalog);
    PyMem_Free(self->own_info);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef reader_methods[] = {
    {"bind", (PyCFunction)reader_bind, METH_VARARGS,
     "bind(events, ids, argnames, grow=None)\n\nPer catalog index: the Event object, the event_id QEMU passes, the "
     "argument names; grow() gives them anew when the catalog grew (a trace read without trace-events)."},
    {"prime", (PyCFunction)reader_prime, METH_NOARGS,
     "prime()\n\nReads the header now (a bad one raises here); the first record is kept for later."},
    {"run", (PyCFunction)pyst_reader_run, METH_VARARGS,
     "run(resolve, deprecated)\n\nCalls an analyzer for every remaining record (see simpletrace.process)."},
    {"columns", (PyCFunction)(void (*)(void))pyst_reader_columns, METH_VARARGS | METH_KEYWORDS,
     "columns(select=None) -> {event name: {column: (typecode, Buffer or list)}}\n\n"
     "Reads every remaining record into one column per field of each event."},
    {"latency_json", (PyCFunction)(void (*)(void))pyst_reader_latency, METH_VARARGS | METH_KEYWORDS,
     "latency_json(*, pairs=(), no_default_pairs=False, by=None, slowest=5, functions=None, print_prefix=None)\n"
     "-> (json, (unused_rules, by_declared))\n\n"
     "Measures the spans of every remaining record: `simpletrace latency --format=json`'s text, the\n"
     "--pair rules that paired nothing, and whether an event declares the by= argument."},
    {"format_text", (PyCFunction)(void (*)(void))reader_format_text, METH_VARARGS | METH_KEYWORDS,
     "format_text(writer, show_process=False)\n\nWrites simpletrace.py's text of every remaining record "
     "with writer.write(bytes)."},
    {"counters", (PyCFunction)reader_counters, METH_NOARGS,
     "counters() -> dict\n\nRecords, mappings, events, dropped records and events, filtered records and bytes "
     "read so far."},
    {"description", (PyCFunction)reader_description, METH_VARARGS,
     "description(input=0) -> dict or None\n\nWho wrote the trace (program, pid, host, clock, ...), as the trace "
     "says; None when it says nothing (QEMU's traces)."},
    {"close", (PyCFunction)reader_close, METH_NOARGS, "close()\n\nCloses the trace (records read stay valid)."},
    {"__enter__", (PyCFunction)reader_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)reader_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef reader_getset[] = {
    {"version", (getter)get_version, NULL, "Format version of the file (0, 2, 3, 4); None before the header.", NULL},
    {"byte_swapped", (getter)get_byte_swapped, NULL, "True when the file was written in the other byte order.", NULL},
    {"name", (getter)get_name, NULL, "The trace's name (of the input of the last record, with several).", NULL},
    {"inputs", (getter)get_inputs, NULL, "Number of traces read as one.", NULL},
    {"origin", (getter)get_origin, NULL, "Timestamp of the first record (None before it).", NULL},
    {"catalog", (getter)get_catalog, NULL, "The Catalog the records are decoded with.", NULL},
    {"closed", (getter)get_closed, NULL, "True once closed.", NULL},
    {"conflicts", (getter)get_conflicts, NULL,
     "Messages about declarations the trace carries that differ from the events given.", NULL},
    {"bound_events", (getter)get_events, NULL, "The Event objects given to bind(), by catalog index.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject pyst_ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "simpletrace._core.Reader",
    .tp_doc = "Reader(source, catalog=None, *, no_header=False, header=False, select=None, tid=None, pid=None,\n"
              "       from_ns=None, to_ns=None, rotated=False, undeclared=False, buffer_size=0, qemu=False,\n"
              "       name=None)\n\n"
              "A trace being read: source is a path, a list of paths (merged by timestamp), bytes or a\n"
              "binary file object (read from where it stands; header=True when its header was read).",
    .tp_basicsize = sizeof(ReaderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)reader_init,
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_traverse = (traverseproc)reader_traverse,
    .tp_clear = (inquiry)reader_clear,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)reader_iternext,
    .tp_methods = reader_methods,
    .tp_getset = reader_getset,
    .tp_weaklistoffset = offsetof(ReaderObject, weakrefs),
};
