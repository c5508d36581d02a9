/*
 * Python file objects as stdio streams (glibc's fopencookie), so the
 * reader reads a BytesIO, a pipe or an open file from where Python left
 * it, in large blocks, and the text formatter writes to sys.stdout.
 *
 * The callbacks run inside st_reader_next() or fwrite(), with the GIL held
 * (the module never releases it). A Python exception met there is kept
 * and the callback fails; the caller re-raises it (pyst_stream_raise)
 * instead of the reader's "read error".
 */
#include <errno.h>
#include <string.h>

#include "pyst.h"

struct pyst_stream {
    PyObject *method;      /* bound readinto, read or write of the file object */
    bool use_read;         /* method is read(n), not readinto(buffer) */
    char *prefix;          /* bytes handed out before the file's */
    size_t prefix_len, prefix_pos;
    PyObject *exc_type, *exc_value, *exc_tb; /* what a callback met */
};

/* Keeps the pending exception for pyst_stream_raise (the first one only). */
static void keep_exception(struct pyst_stream *s)
{
    if (s->exc_type) {
        PyErr_Clear();
        return;
    }
    PyErr_Fetch(&s->exc_type, &s->exc_value, &s->exc_tb);
}

/* Reads through readinto(memoryview): bytes read, 0 at EOF, -1 with the exception kept. */
static ssize_t read_into(struct pyst_stream *s, char *buf, size_t size)
{
    PyObject *view = PyMemoryView_FromMemory(buf, (Py_ssize_t)size, PyBUF_WRITE);
    if (!view)
        return -1;
    PyObject *res = PyObject_CallOneArg(s->method, view);
    /* The memory is the reader's: no view of it may outlive the call (the call's exception kept aside). */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *rel = PyObject_CallMethod(view, "release", NULL);
    if (!rel)
        PyErr_Clear();
    Py_XDECREF(rel);
    PyErr_Restore(type, value, tb);
    Py_DECREF(view);
    if (!res)
        return -1;
    Py_ssize_t n = res == Py_None ? -2 : PyLong_AsSsize_t(res);
    Py_DECREF(res);
    if (n == -2) {
        PyErr_SetString(PyExc_BlockingIOError, "the trace's file object has no data yet (non-blocking)");
        return -1;
    }
    if (n < 0 || (size_t)n > size) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "readinto() of the trace's file object returned a bad count");
        return -1;
    }
    return n;
}

/* Reads through read(n) -> bytes. */
static ssize_t read_bytes(struct pyst_stream *s, char *buf, size_t size)
{
    PyObject *res = PyObject_CallFunction(s->method, "n", (Py_ssize_t)size);
    if (!res)
        return -1;
    char *p;
    Py_ssize_t n;
    if (PyBytes_AsStringAndSize(res, &p, &n) < 0 || (size_t)n > size) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "read(n) of the trace's file object returned more than n bytes");
        Py_DECREF(res);
        return -1;
    }
    memcpy(buf, p, (size_t)n);
    Py_DECREF(res);
    return n;
}

static ssize_t cookie_read(void *cookie, char *buf, size_t size)
{
    struct pyst_stream *s = cookie;
    if (s->prefix_pos < s->prefix_len) {
        size_t n = s->prefix_len - s->prefix_pos < size ? s->prefix_len - s->prefix_pos : size;
        memcpy(buf, s->prefix + s->prefix_pos, n);
        s->prefix_pos += n;
        return (ssize_t)n;
    }
    if (s->exc_type) {
        errno = EIO;
        return -1;
    }
    if (size > PY_SSIZE_T_MAX)
        size = PY_SSIZE_T_MAX;
    ssize_t n = s->use_read ? read_bytes(s, buf, size) : read_into(s, buf, size);
    if (n < 0) {
        keep_exception(s);
        errno = EIO;
    }
    return n;
}

static ssize_t cookie_write(void *cookie, const char *buf, size_t size)
{
    struct pyst_stream *s = cookie;
    if (s->exc_type) {
        errno = EIO;
        return -1;
    }
    PyObject *data = PyBytes_FromStringAndSize(buf, (Py_ssize_t)size);
    PyObject *res = data ? PyObject_CallOneArg(s->method, data) : NULL;
    Py_XDECREF(data);
    if (!res) {
        keep_exception(s);
        errno = EIO;
        return -1;
    }
    Py_DECREF(res);
    return (ssize_t)size;
}

static struct pyst_stream *stream_new(void)
{
    struct pyst_stream *s = PyMem_Calloc(1, sizeof *s);
    if (!s)
        PyErr_NoMemory();
    return s;
}

FILE *pyst_stream_open_read(PyObject *fobj, const void *prefix, size_t prefix_len, struct pyst_stream **streamp)
{
    struct pyst_stream *s = stream_new();
    if (!s)
        return NULL;
    s->method = PyObject_GetAttrString(fobj, "readinto");
    if (!s->method) {
        PyErr_Clear();
        s->use_read = true;
        s->method = PyObject_GetAttrString(fobj, "read");
    }
    if (!s->method) {
        PyErr_Format(PyExc_TypeError, "the trace must be a path, bytes or a binary file object, not %.80s",
                     Py_TYPE(fobj)->tp_name);
        goto fail;
    }
    if (prefix_len) {
        s->prefix = PyMem_Malloc(prefix_len);
        if (!s->prefix) {
            PyErr_NoMemory();
            goto fail;
        }
        memcpy(s->prefix, prefix, prefix_len);
        s->prefix_len = prefix_len;
    }
    FILE *f = fopencookie(s, "r", (cookie_io_functions_t){.read = cookie_read});
    if (!f) {
        PyErr_SetFromErrno(PyExc_OSError);
        goto fail;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 16); /* unbuffered, glibc would ask for one byte at a time */
    *streamp = s;
    return f;
fail:
    pyst_stream_free(s);
    return NULL;
}

FILE *pyst_stream_open_write(PyObject *writer, struct pyst_stream **streamp)
{
    struct pyst_stream *s = stream_new();
    if (!s)
        return NULL;
    s->method = PyObject_GetAttrString(writer, "write");
    if (!s->method)
        goto fail;
    FILE *f = fopencookie(s, "w", (cookie_io_functions_t){.write = cookie_write});
    if (!f) {
        PyErr_SetFromErrno(PyExc_OSError);
        goto fail;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 16);
    *streamp = s;
    return f;
fail:
    pyst_stream_free(s);
    return NULL;
}

bool pyst_stream_raise(struct pyst_stream *s)
{
    if (!s || !s->exc_type)
        return false;
    PyErr_Restore(s->exc_type, s->exc_value, s->exc_tb);
    s->exc_type = s->exc_value = s->exc_tb = NULL;
    return true;
}

void pyst_stream_free(struct pyst_stream *s)
{
    if (!s)
        return;
    Py_XDECREF(s->method);
    Py_XDECREF(s->exc_type);
    Py_XDECREF(s->exc_value);
    Py_XDECREF(s->exc_tb);
    PyMem_Free(s->prefix);
    PyMem_Free(s);
}
