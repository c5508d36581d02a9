/*
 * The analyzer loop of simpletrace.process(): for every record, the
 * callable the Python layer chose for its event is called the way QEMU's
 * simpletrace.py would call it. The choice is made once per event, the
 * first time a record of it comes (resolve(index) -> (callable, mode)),
 * and kept in a table indexed by the event's catalog index, so a record
 * costs one table load and one vectorcall; keyword names are one interned
 * tuple, the Event objects and event_ids are the reader's bound ones.
 */
#include <string.h>

#include "pyst.h"

/* How a callable is called (QEMU's Analyzer2 and the deprecated Analyzer's arity rule). */
enum mode {
    M_KW,      /* fn(*args, event=, event_id=, timestamp_ns=, pid=) (Analyzer2) */
    M_ARGS,    /* fn(*args) */
    M_TS,      /* fn(timestamp_ns, *args) */
    M_TS_PID,  /* fn(timestamp_ns, pid, *args) */
    M_REC,     /* fn(event, (event_id, timestamp_ns, pid, *args)) (Analyzer.catchall) */
    M_PROCESS, /* fn([*args], event=, event_id=, timestamp_ns=, pid=) (an own _process_event) */
    M_COUNT
};

struct slot {
    PyObject *fn; /* NULL until the event's first record */
    int mode;
};

/* Asks resolve(index) for the slot of event index. 0, or -1 with an exception. */
static int resolve_slot(struct slot *s, PyObject *resolve, size_t index)
{
    PyObject *r = PyObject_CallFunction(resolve, "n", (Py_ssize_t)index);
    if (!r)
        return -1;
    PyObject *fn;
    int mode;
    if (!PyArg_ParseTuple(r, "Oi;resolve() returns (callable, mode)", &fn, &mode) || mode < 0 || mode >= M_COUNT) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "resolve(): unknown mode");
        Py_DECREF(r);
        return -1;
    }
    s->fn = Py_NewRef(fn);
    s->mode = mode;
    Py_DECREF(r);
    return 0;
}

/* Calls slot s for rec. Returns what the call returned (new reference), NULL with an exception. */
static PyObject *call(ReaderObject *self, const struct slot *s, const struct st_record *rec)
{
    /* stack[0] is free for the callee (PY_VECTORCALL_ARGUMENTS_OFFSET); positionals, then keyword values. */
    PyObject *stack[1 + 2 + ST_READER_MAX_ARGS + 4];
    PyObject **a = stack + 1;
    PyObject *owned[2 + ST_READER_MAX_ARGS + 1];
    size_t n = 0, nowned = 0, idx = rec->event->index;
    PyObject *result = NULL, *ts = NULL, *pid = NULL, *kwnames = NULL;
    PyObject *event = PyTuple_GET_ITEM(self->events, idx), *event_id = PyTuple_GET_ITEM(self->ids, idx);

    if (s->mode != M_ARGS) {
        if (!(ts = owned[nowned++] = PyLong_FromUnsignedLongLong(rec->timestamp_ns)))
            goto out;
        if (s->mode != M_TS && !(pid = owned[nowned++] = pyst_pid_value(self, rec)))
            goto out;
    }
    if (s->mode == M_TS || s->mode == M_TS_PID)
        a[n++] = ts;
    if (s->mode == M_TS_PID)
        a[n++] = pid;
    if (s->mode == M_REC || s->mode == M_PROCESS) {
        /* The arguments go in one container: a tuple (event_id, ts, pid, *args) or a list. */
        size_t first = s->mode == M_REC ? 3 : 0;
        PyObject *c = s->mode == M_REC ? PyTuple_New((Py_ssize_t)(first + rec->nargs)) : PyList_New(rec->nargs);
        if (!(owned[nowned++] = c))
            goto out;
        if (s->mode == M_REC) {
            PyTuple_SET_ITEM(c, 0, Py_NewRef(event_id));
            PyTuple_SET_ITEM(c, 1, Py_NewRef(ts));
            PyTuple_SET_ITEM(c, 2, Py_NewRef(pid));
        }
        for (unsigned i = 0; i < rec->nargs; i++) {
            PyObject *v = pyst_raw_value(self, rec, i);
            if (!v)
                goto out;
            if (s->mode == M_REC)
                PyTuple_SET_ITEM(c, (Py_ssize_t)(first + i), v);
            else
                PyList_SET_ITEM(c, (Py_ssize_t)i, v);
        }
        if (s->mode == M_REC)
            a[n++] = event;
        a[n++] = c;
    } else {
        for (unsigned i = 0; i < rec->nargs; i++)
            if (!(a[n++] = owned[nowned++] = pyst_raw_value(self, rec, i)))
                goto out;
    }
    size_t npos = n;
    if (s->mode == M_KW || s->mode == M_PROCESS) {
        a[n++] = event;
        a[n++] = event_id;
        a[n++] = ts;
        a[n++] = pid;
        kwnames = pyst_kwnames;
    }
    result = PyObject_Vectorcall(s->fn, a, npos | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
out:
    while (nowned)
        Py_XDECREF(owned[--nowned]);
    return result;
}

PyObject *pyst_reader_run(ReaderObject *self, PyObject *args)
{
    PyObject *resolve;
    int deprecated;
    if (!PyArg_ParseTuple(args, "Op", &resolve, &deprecated))
        return NULL;
    if (!pyst_reader_bound(self))
        return NULL;
    size_t nslots = self->nevents;
    struct slot *slots = PyMem_Calloc(nslots, sizeof *slots);
    if (!slots)
        return PyErr_NoMemory();
    PyObject *result = NULL;
    const struct st_record *rec;
    int ret;
    while ((ret = pyst_reader_next(self, &rec, true)) > 0) {
        if (self->nevents > nslots) { /* the catalog grew: slots for its new events */
            struct slot *more = PyMem_Realloc(slots, self->nevents * sizeof *more);
            if (!more) {
                PyErr_NoMemory();
                goto out;
            }
            memset(more + nslots, 0, (self->nevents - nslots) * sizeof *more);
            slots = more;
            nslots = self->nevents;
        }
        struct slot *s = &slots[rec->event->index];
        if (!s->fn && resolve_slot(s, resolve, rec->event->index) < 0)
            goto out;
        if (deprecated) { /* once per run: QEMU warns per record, which the default filters show once */
            deprecated = 0;
            if (PyErr_WarnEx(PyExc_DeprecationWarning,
                             "simpletrace.Analyzer is deprecated (as in QEMU's simpletrace.py): subclass Analyzer2",
                             1) < 0)
                goto out;
        }
        PyObject *r = call(self, s, rec);
        if (!r)
            goto out;
        Py_DECREF(r);
    }
    if (ret == 0)
        result = Py_NewRef(Py_None);
out:
    for (size_t i = 0; i < nslots; i++)
        Py_XDECREF(slots[i].fn);
    PyMem_Free(slots);
    return result;
}
