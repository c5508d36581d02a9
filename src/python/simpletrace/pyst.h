/*
 * simpletrace._core: the C half of the Python module `simpletrace`. It
 * uses libsimpletrace-read's public API (include/simpletrace/reader.h),
 * analysis.h for latency() and compare() (src/analysis/, linked in with
 * export's engine)
 * and Python's C API; the QEMU-compatible layer (Analyzer, process(), Event
 * objects) is Python, in __init__.py, and calls in here for every loop
 * over records.
 *
 * Objects:
 *   Catalog  an st_catalog (trace-events files, or a trace's declarations)
 *   Reader   an st_reader over a path, several paths, bytes or a Python file
 *            object; iterates typed Records or QEMU's record tuples, runs an
 *            analyzer's dispatch loop, fills numpy-ready columns
 *   Record   one record, decoded lazily: values become Python objects
 *            only when asked for
 *   Buffer   memory a column was filled into (numpy.frombuffer wraps it)
 *
 * Values as simpletrace.py gives them ("raw"): integers and pointers as the
 * unsigned 64-bit word stored, strings as bytes. Typed values (Record.args,
 * columns) follow the declaration: the word cut to the declared size and
 * sign, bool as bool, pointers as unsigned integers.
 *
 * The GIL is held throughout: records are handed to Python one by one, and
 * releasing it per record would cost more than decoding one.
 */
#ifndef ST_PYTHON_PYST_H
#define ST_PYTHON_PYST_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <simpletrace/reader.h>

/* How one argument's stored word becomes a typed Python value. */
enum pyst_conv {
    CONV_U8, CONV_U16, CONV_U32, CONV_U64,
    CONV_I8, CONV_I16, CONV_I32, CONV_I64,
    CONV_BOOL,
    CONV_PTR,
    CONV_STR,
};

/* Per event of a catalog: what records of it hold, for typed values and columns. */
struct pyst_evinfo {
    unsigned nargs;
    uint8_t conv[ST_READER_MAX_ARGS]; /* enum pyst_conv */
};

/* --- module (py_module.c) --- */

extern PyObject *pyst_SimpleException; /* simpletrace.SimpleException(Exception) */
extern PyObject *pyst_TraceError;      /* bad trace: (SimpleException, ValueError), with where */
extern PyObject *pyst_EventsError;     /* bad trace-events text: (SimpleException, ValueError) */
extern PyObject *pyst_OpenError;       /* a file that cannot be opened: (SimpleException, OSError) */

/* Interned keyword names of Analyzer2's calls, in call order, as one tuple. */
extern PyObject *pyst_kwnames;

/* Raises EventsError(message). Returns NULL. */
PyObject *pyst_events_error(const char *message);

/* Raises OpenError for an -errno of opening name (NULL: one of several, text names it), else
 * TraceError(text). Returns NULL. */
PyObject *pyst_open_error(int code, const char *name, const char *text);

/* --- catalogs (py_catalog.c) --- */

typedef struct {
    PyObject_HEAD
    struct st_catalog *cat;
    bool owned;                  /* freed with the object; else owner's */
    PyObject *owner;             /* keeps a borrowed catalog alive (its Reader) */
    struct pyst_evinfo *info;    /* count + 1 entries (Dropped_Event last) */
} CatalogObject;

extern PyTypeObject pyst_CatalogType;

/* Per event index of cat (count + 1 entries), PyMem-allocated. NULL with an exception. */
struct pyst_evinfo *pyst_evinfo_build(const struct st_catalog *cat);

/* A new Catalog object for cat (owned: freed with it; else owner is kept). NULL with an exception. */
PyObject *pyst_catalog_wrap(struct st_catalog *cat, bool owned, PyObject *owner);

/* --- file objects as FILE * (py_stream.c) --- */

struct pyst_stream;

/*
 * A FILE * that reads from a Python file object (readinto, else read),
 * after `prefix` bytes (may be NULL/0; copied). *streamp gets the state
 * that holds a Python exception the callbacks met. NULL with an exception.
 */
FILE *pyst_stream_open_read(PyObject *fobj, const void *prefix, size_t prefix_len, struct pyst_stream **streamp);

/* A FILE * whose writes go to write(bytes) of a Python object. NULL with an exception. */
FILE *pyst_stream_open_write(PyObject *writer, struct pyst_stream **streamp);

/* Re-raises the exception a callback of the stream met and returns true; false when none. */
bool pyst_stream_raise(struct pyst_stream *s);

/* Frees the state (after fclose of its FILE *). */
void pyst_stream_free(struct pyst_stream *s);

/* --- readers (py_reader.c) --- */

typedef struct {
    PyObject_HEAD
    struct st_reader *r;
    PyObject *catalog;           /* the CatalogObject given, or NULL: the reader owns its catalog */
    const struct pyst_evinfo *info; /* per event index: catalog's, or own_info */
    struct pyst_evinfo *own_info;
    size_t nevents;              /* catalog count + 1 (it grows with a trace read without trace-events) */
    PyObject *grow;              /* bind()'s grow: () -> (events, ids, argnames) for a grown catalog */
    PyObject *events;            /* tuple: the Event object of each index (bind()) */
    PyObject *ids;               /* tuple: what QEMU passes as event_id (the name; "dropped") */
    PyObject *argnames;          /* tuple of tuples: each index's argument names */
    PyObject *programs;          /* list: process_program str per input, filled lazily */
    PyObject *conflicts;         /* list of messages (st_conflict_fn) */
    bool qemu;                   /* iteration yields QEMU's tuples, not Records */
    bool undeclared;             /* opened with undeclared=True: records may have no event */
    bool closed;
    bool busy;                   /* inside the library: a file object's callback may run Python code,
                                    which must not read or close this reader meanwhile */
    /* the source, when not a path */
    FILE *fp;
    struct pyst_stream *stream;
    Py_buffer view;
    bool has_view;
    /* a record read ahead by prime(), handed out next */
    bool has_pending;
    int pending_ret;             /* st_reader_next()'s result for it */
    const struct st_record *pending_rec;
    /* value objects reused while they repeat */
    uint32_t last_pid;
    PyObject *last_pid_obj;
    struct lastvals **last;      /* per event index, NULL until used */
    PyObject *weakrefs;
} ReaderObject;

extern PyTypeObject pyst_ReaderType;

/*
 * The next record: 1 with *rec, 0 at the end, or -1 with an exception set
 * (TraceError and the like; with declared, also for a record of an event
 * not declared, which only undeclared=True delivers).
 */
int pyst_reader_next(ReaderObject *self, const struct st_record **rec, bool declared);

/* The raw (simpletrace.py) value of argument i of rec as a new reference; NULL with an exception. */
PyObject *pyst_raw_value(ReaderObject *self, const struct st_record *rec, unsigned i);

/* The record's pid as a new reference (reused while it repeats). */
PyObject *pyst_pid_value(ReaderObject *self, const struct st_record *rec);

/* Whether the reader can be read now (open, not inside a callback of its own); else false with an exception. */
bool pyst_reader_check_open(ReaderObject *self);

/* Whether bind() gave the reader its Event objects; else false with RuntimeError. */
bool pyst_reader_bound(ReaderObject *self);

/* Raises the reader's error (or the stream's Python exception). Returns NULL. */
PyObject *pyst_reader_raise(ReaderObject *self);

/* --- records (py_record.c) --- */

extern PyTypeObject pyst_RecordType;

/* A Record holding a copy of rec (strings included). NULL with an exception. */
PyObject *pyst_record_new(ReaderObject *reader, const struct st_record *rec);

/* A typed Python value of one stored word by its conversion. */
PyObject *pyst_typed_word(uint64_t w, enum pyst_conv conv);

/* --- analyzers (py_run.c) and columns (py_columns.c) --- */

/* Reader.run(resolve, warning): the analyzer loop. */
PyObject *pyst_reader_run(ReaderObject *self, PyObject *args);

/* Reader.columns(select=None): numpy-ready columns per event. */
PyObject *pyst_reader_columns(ReaderObject *self, PyObject *args, PyObject *kwargs);

extern PyTypeObject pyst_BufferType;

/* --- answers (py_analysis.c) --- */

/* Reader.latency_json(...): `simpletrace latency --format=json` of the remaining records. */
PyObject *pyst_reader_latency(ReaderObject *self, PyObject *args, PyObject *kwargs);

/* _core.compare_json(base, new, ...): `simpletrace compare --format=json` of two Readers, the conditions met. */
PyObject *pyst_compare_json(PyObject *mod, PyObject *args, PyObject *kwargs);

#endif /* ST_PYTHON_PYST_H */
