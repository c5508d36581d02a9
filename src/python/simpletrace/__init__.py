"""Read simpletrace and QEMU "simple" backend trace files, fast.

Two APIs over one C reader (libsimpletrace-read):

QEMU's scripts/simpletrace.py, with its semantics
    An analysis script written for QEMU's simpletrace.py runs unchanged once
    `import simpletrace` finds this module: Analyzer2 (methods named after
    events, called as m(*args, event=, event_id=, timestamp_ns=, pid=), else
    catchall), the deprecated Analyzer (the method's parameter count picks
    args / timestamp + args / timestamp + pid + args; catchall(event, rec)),
    begin()/end() and the context-manager protocol, process(), run(),
    read_trace_header(), read_trace_records(), SimpleException, Event
    objects shaped as tracetool's (name, args of (type, name), fmt) and
    is_string(). Values are what simpletrace.py gives: integers as unsigned
    64-bit words, strings as bytes; dropped records are Dropped_Event with
    event_id "dropped". `python3 -m simpletrace TRACE-EVENTS TRACE` prints
    the text simpletrace.py prints.

Beyond it: open()
    Reader objects iterate Records with typed values (negative ints, bool,
    bytes), need no trace-events file for traces that carry their
    declarations (simpletrace's own, since 0.2), merge several traces by
    timestamp, filter in C before Python sees a record (event globs, thread,
    process, time window), and give numpy columns and pandas DataFrames per
    event (when numpy / pandas are installed).

SQL: sql() and sql_connect()
    The tables of `simpletrace sql` (records, one per event, events,
    processes, drops, spans) in Python's sqlite3, read from the files as a
    query runs: simpletrace.sql('app.trace', 'SELECT name, count(*) FROM
    records GROUP BY name') gives the rows (a DataFrame with dataframe=True).

    with simpletrace.open('app.trace', select='job_*') as trace:
        for rec in trace:
            print(rec.name, rec.timestamp_ns, rec['job'])

Where this module differs from QEMU's simpletrace.py, on purpose:
  - traces of format versions 0, 2 and 3 and of the other byte order are
    read (simpletrace.py refuses them);
  - a truncated or corrupt trace raises TraceError (a SimpleException and a
    ValueError) naming the file, byte offset and record number, after every
    earlier record was delivered; a record holding more bytes than its
    declaration is an error (simpletrace.py ignores the extra bytes);
  - an analyzer's method for an event is looked up once, at the event's
    first record (simpletrace.py looks it up for every record): methods
    added to the analyzer while the trace is read are not seen;
  - Analyzer's DeprecationWarning is issued once per process() call, not
    once per record.
"""

import builtins
import fnmatch
import inspect
import os
import struct
import sys
import weakref

from . import _core
from ._core import EventsError, OpenError, Record, SimpleException, TraceError

__all__ = ['Analyzer', 'Analyzer2', 'process', 'run', 'read_trace_header', 'read_trace_records',
           'SimpleException', 'TraceError', 'EventsError', 'OpenError', 'Event', 'Arguments', 'read_events', 'is_string',
           'open', 'Reader', 'Record', 'sql', 'sql_connect']

__version__ = _core.library_version

# The v4 file layout, as simpletrace.py names it (src/format/trace_format.h specifies it).
header_event_id = 0xffffffffffffffff
header_magic = 0xf2b177cb0aa429b4
dropped_event_id = 0xfffffffffffffffe
record_type_mapping = 0
record_type_event = 1
log_header_fmt = '=QQQ'
rec_header_fmt = '=QQII'
rec_header_fmt_len = struct.calcsize(rec_header_fmt)

# How the C analyzer loop calls a handler (py_run.c's enum mode).
_M_KW, _M_ARGS, _M_TS, _M_TS_PID, _M_REC, _M_PROCESS = range(6)


# --- tracetool's event objects --------------------------------------------------

def is_string(arg):
    """True when the C type arg is recorded as a string ("const char *", "char *": one '*')."""
    t = arg.lstrip()
    return t.startswith(('const char*', 'char*', 'const char *', 'char *')) and t.count('*') == 1


class Arguments:
    """An event's arguments: iterable of (type, name) pairs, with len() and indexing (as tracetool's)."""

    def __init__(self, args):
        self._args = []
        for a in args:
            self._args.extend(a._args if isinstance(a, Arguments) else [tuple(a)])

    @staticmethod
    def build(arg_str):
        """Arguments of a declaration's parameter list ("int a, const char *s", or "void")."""
        pairs = []
        for arg in arg_str.split(','):
            arg = arg.strip()
            if not arg:
                raise ValueError("Empty argument (did you forget to use 'void'?)")
            if arg == 'void':
                continue
            star = arg.rfind('*')
            if star >= 0:  # the type runs up to the last '*', the name follows it
                pairs.append((arg[:star + 1], arg[star + 1:].strip()))
            else:
                words = arg.rsplit(None, 1)
                if len(words) != 2:
                    raise ValueError("Argument '%s' has no name" % arg)
                pairs.append((words[0], words[1]))
        return Arguments(pairs)

    def copy(self):
        return Arguments(list(self._args))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Arguments(self._args[index])
        return self._args[index]

    def __iter__(self):
        return iter(self._args)

    def __len__(self):
        return len(self._args)

    def __str__(self):
        return ', '.join('%s %s' % pair for pair in self._args) if self._args else 'void'

    def __repr__(self):
        return 'Arguments("%s")' % self

    def names(self):
        """The argument names, in order."""
        return [name for _, name in self._args]

    def types(self):
        """The argument types, in order."""
        return [type_ for type_, _ in self._args]

    def casted(self):
        return ['(%s)%s' % pair for pair in self._args]


class Event:
    """One declared event, shaped as tracetool's: name, properties, args (Arguments), fmt, lineno, filename."""

    def __init__(self, name, props, fmt, args, lineno=0, filename=''):
        self.name = name
        self.properties = list(props)
        self.fmt = fmt
        self.args = args
        self.lineno = int(lineno)
        self.filename = str(filename)
        self.original = weakref.ref(self)

    @staticmethod
    def build(line_str, lineno, filename):
        """The Event of one trace-events line: [props] name(args) ["format"]."""
        line = line_str.rstrip('\n')
        open_paren = line.find('(')
        close_paren = line.find(')', open_paren + 1)
        head = line[:open_paren].split() if open_paren > 0 else []
        if not head or close_paren < 0 or not head[-1].replace('_', 'a').isalnum():
            raise ValueError('Malformed event line: %r' % line.strip())
        rest = line[close_paren + 1:]
        quote = rest.find('"')
        fmt = rest[quote:] if quote >= 0 else ''
        if '%m' in fmt:
            raise ValueError("Event format '%m' is forbidden, pass the error as an explicit trace argument")
        if fmt.rstrip().endswith('\\n"'):
            raise ValueError('Event format must not end with a newline character')
        args = Arguments.build(line[open_paren + 1:close_paren])
        if len(args) > 10:
            raise ValueError("Event '%s' has more than 10 arguments" % head[-1])
        return Event(head[-1], head[:-1], fmt, args, lineno, filename)

    def copy(self):
        return Event(self.name, self.properties, self.fmt, self.args.copy(), self.lineno, self.filename)

    def __repr__(self):
        return "Event('%s %s(%s) %s')" % (' '.join(self.properties), self.name, self.args, self.fmt)


def read_events(fobj, fname):
    """The Events of a trace-events file: fobj yields its lines (a text file), fname is for messages."""
    events = []
    for lineno, line in enumerate(fobj, 1):
        if not line.endswith('\n'):
            raise ValueError('%s does not end with a new line' % fname)
        text = line.strip()
        if not text or text.startswith('#'):
            continue
        try:
            events.append(Event.build(line, lineno, fname))
        except ValueError as e:
            e.args = ('Error at %s:%d: %s' % (fname, lineno, e.args[0]),) + e.args[1:]
            raise
    return events


_DROPPED_LINE = 'Dropped_Event(uint64_t num_events_dropped)'
Dropped_Event = Event.build(_DROPPED_LINE, 0, __file__)


def _declaration(event):
    """A trace-events line for an Event object (ours or tracetool's)."""
    fmt = event.fmt if isinstance(event.fmt, str) else event.fmt[-1]
    return '%s %s(%s) %s\n' % (' '.join(event.properties), event.name, event.args, fmt)


class _Declarations:
    """The events records are decoded with: a C Catalog and, per catalog index, the Event objects
    handed to analyzers (the caller's when given as a list), QEMU's event_id and the argument names."""

    def __init__(self, catalog, events=()):
        self.catalog = catalog
        self._given = {e.name: e for e in events}
        self.events, self._ids, self._argnames, self.by_name = [], [], [], {}
        self._extend()

    def _extend(self):
        """Entries for the catalog's events from the first without one (all at first; later, those that a
        trace read without trace-events declared since: its catalog grows)."""
        dropped = self.catalog.dropped()
        for i in range(len(self.events), len(self.catalog) + 1):
            name, args, fmt, disabled = self.catalog.event(i)
            if i == dropped:
                event = Dropped_Event
            else:
                event = self._given.get(name) or Event(name, ['disable'] if disabled else [], fmt or '',
                                                       Arguments(args), 0, '')
            self.events.append(event)
            self._ids.append('dropped' if i == dropped else sys.intern(event.name))
            self._argnames.append(tuple(sys.intern(a) for _, a in args))
            self.by_name[event.name] = event
        self.ids, self.argnames = tuple(self._ids), tuple(self._argnames)

    def _grown(self):
        """bind()'s grow: the tuples again, with the events the catalog gained."""
        self._extend()
        return tuple(self.events), self.ids, self.argnames

    @classmethod
    def load(cls, events):
        """From a trace-events path, a list of paths, a text file object or a list of Event objects."""
        if isinstance(events, (str, os.PathLike)):
            events = [events]
        if isinstance(events, (list, tuple)):
            if all(isinstance(e, (str, os.PathLike)) for e in events):
                texts = []
                for path in events:
                    with _open_file(path, 'r') as f:
                        texts.append((os.fsdecode(path), f.read()))
                catalog = _core.load_events_files(list(events))  # before ours: its errors say FILE:LINE: what
                return cls(catalog, [e for name, text in texts for e in read_events(text.splitlines(True), name)])
            return cls(_core.load_events('<events list>', ''.join(_declaration(e) for e in events)), events)
        name, text = str(getattr(events, 'name', '<events>')), events.read()
        catalog = _core.load_events(name, text)
        return cls(catalog, read_events(text.splitlines(keepends=True), name))

    def bind(self, reader):
        reader.bind(tuple(self.events), self.ids, self.argnames, self._grown)


def _open_file(path, mode):
    """builtins.open(path, mode), raising OpenError (an OSError naming path) when it fails."""
    try:
        return builtins.open(path, mode)
    except OSError as e:
        raise _core.open_error(e.errno, e.strerror, e.filename) from None


# --- QEMU's analyzers -----------------------------------------------------------

class Analyzer:
    """[Deprecated: subclass Analyzer2.] A trace analyzer, as QEMU's simpletrace.Analyzer.

    process() or run() calls begin(), then for every record the method named
    after its event, else catchall(event, rec), then end(); as a context
    manager, entering calls begin() and leaving without an exception end().

    A method's parameter count (self excluded) picks its arguments: the
    event's arguments; one more: the timestamp first; two more: the
    timestamp and the pid first:

        def runstate_set(self, new_state): ...
        def runstate_set(self, timestamp, new_state): ...
        def runstate_set(self, timestamp, pid, new_state): ...

    catchall gets the Event and rec = (event_id, timestamp_ns, pid, *args).
    """

    def begin(self):
        """Called before the first record."""

    def catchall(self, event, rec):
        """Called for records of events without a method of their own."""

    def end(self):
        """Called after the last record (not when the analysis raised)."""

    def __enter__(self):
        self.begin()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if exc_type is None:
            self.end()
        return False

    def _handler(self, event):
        """(callable, mode) for records of event (QEMU's arity rule)."""
        fn = getattr(self, event.name, None)
        if fn is None:
            return self.catchall, _M_REC
        extra = len(inspect.getfullargspec(fn)[0]) - 1 - len(event.args)
        return fn, {1: _M_TS, 2: _M_TS_PID}.get(extra, _M_ARGS)

    def _process_event(self, rec_args, *, event, event_id, timestamp_ns, pid, **kwargs):
        """One record, as process() delivers it (for subclasses overriding this)."""
        import warnings
        warnings.warn('simpletrace.Analyzer is deprecated: subclass Analyzer2', DeprecationWarning, stacklevel=2)
        cache = self.__dict__.setdefault('_fn_cache', {})
        if event_id not in cache:
            cache[event_id] = self._handler(event)
        fn, mode = cache[event_id]
        if mode == _M_REC:
            fn(event, (event_id, timestamp_ns, pid, *rec_args))
        else:
            fn(*{_M_TS: (timestamp_ns,), _M_TS_PID: (timestamp_ns, pid)}.get(mode, ()), *rec_args)


class Analyzer2(Analyzer):
    """A trace analyzer, as QEMU's simpletrace.Analyzer2.

    process() or run() calls begin(), then for every record the method named
    after its event, else catchall, then end(); as a context manager,
    entering calls begin() and leaving without an exception end().

    Methods get the event's arguments and keyword arguments (take **kwargs
    too, more may come):
        event         the Event object (name, args, fmt)
        event_id      the event's name ("dropped" for dropped records), as QEMU passes it
        timestamp_ns  the record's timestamp in nanoseconds
        pid           the record's pid field

        def runstate_set(self, new_state, *, timestamp_ns, **kwargs): ...
    """

    def catchall(self, *rec_args, event, timestamp_ns, pid, event_id, **kwargs):
        """Called for records of events without a method of their own."""

    def _process_event(self, rec_args, *, event, **kwargs):
        """One record, as process() delivers it (for subclasses overriding this)."""
        getattr(self, event.name, self.catchall)(*rec_args, event=event, **kwargs)


def _resolver(analyzer, decl):
    """resolve(index) -> (callable, mode) for the C loop, and whether the analyzer is deprecated."""
    events = decl.events
    own = getattr(type(analyzer), '_process_event', None)
    if own is Analyzer2._process_event:
        return (lambda i: (getattr(analyzer, events[i].name, analyzer.catchall), _M_KW)), False
    if own is Analyzer._process_event:
        return (lambda i: analyzer._handler(events[i])), True
    # Its own _process_event (or none: AttributeError at the first record, as in simpletrace.py).
    return (lambda i: (analyzer._process_event, _M_PROCESS)), False


def process(events, log, analyzer, read_header=True):
    """Runs analyzer over the trace log, as QEMU's simpletrace.process().

    events: a trace-events path, a list of Event objects (tracetool's or
    read_events()'), or an open text file; log: a trace path or an open
    binary file (read from where it stands and left open); read_header:
    False for a trace without its header (event IDs then index events).
    Raises SimpleException: OpenError (an OSError) for a file that cannot be
    opened, EventsError for bad trace-events text, TraceError for a trace
    it cannot read, after every earlier record was analysed.
    """
    decl = _Declarations.load(events)
    reader = _core.Reader(log, decl.catalog, no_header=not read_header)
    with reader:
        decl.bind(reader)
        if read_header:
            reader.prime()  # a bad header raises before begin(), as in simpletrace.py
        resolve, deprecated = _resolver(analyzer, decl)
        with analyzer:
            reader.run(resolve, deprecated)


def run(analyzer):
    """Runs analyzer over the trace named on the command line: [--no-header] trace-events trace-file."""
    args = sys.argv[1:]
    no_header = len(args) == 3 and args[0] == '--no-header'
    if len(args) != 2 + no_header:
        raise SimpleException('usage: %s [--no-header] <trace-events> <trace-file>\n' % sys.argv[0])
    with _open_file(args[-2], 'r') as events_fobj, _open_file(args[-1], 'rb') as log_fobj:
        process(events_fobj, log_fobj, analyzer, read_header=not no_header)


def read_header(fobj, hfmt):
    """Reads and unpacks one struct of format hfmt from fobj."""
    size = struct.calcsize(hfmt)
    data = fobj.read(size)
    if len(data) != size:
        raise SimpleException('Error reading header: %d of %d bytes (not a trace file?)' % (len(data), size))
    return struct.unpack(hfmt, data)


def read_trace_header(fobj):
    """Reads and checks a v4 trace header from fobj (ValueError when it is none)."""
    event_id, magic, version = read_header(fobj, log_header_fmt)
    if event_id != header_event_id:
        raise TraceError('Not a valid trace file: header ID 0x%x is not 0x%x' % (event_id, header_event_id))
    if magic != header_magic:
        raise TraceError('Not a valid trace file: header magic 0x%x is not 0x%x' % (magic, header_magic))
    if version != 4:
        raise TraceError('Trace format version %d: read_trace_records() reads version 4 only '
                         '(process() and open() read them all)' % version)


def read_trace_records(events, fobj, read_header):
    """Yields (event, event_id, timestamp_ns, pid, *args) for every record of fobj, as simpletrace.py does.

    events: a list of Event objects; read_header: whether fobj's header was
    read (by read_trace_header()); without one, event IDs index events.
    """
    decl = _Declarations.load(events)
    reader = _core.Reader(fobj, decl.catalog, header=read_header, no_header=not read_header, qemu=True)
    decl.bind(reader)
    return reader


# --- beyond QEMU's API ----------------------------------------------------------

def _optional(name, what):
    """The optional module name, imported for what; ModuleNotFoundError naming its Debian package if missing."""
    try:
        return __import__(name)
    except ImportError:
        pass  # raised below, outside this handler, so the traceback shows one error
    raise ModuleNotFoundError('simpletrace: %s needs %s, which is not installed (Debian: apt-get install python3-%s)'
                              % (what, name, name), name=name)


def _filter_ns(value):
    return _core.parse_duration(value) if isinstance(value, str) else value


class Reader(_core.Reader):
    """A trace being read, record by record (see open()).

    Iterating gives Records; `events` maps names to Event objects; columns(),
    dataframe() and dataframes() read the rest of the trace into numpy arrays
    and pandas DataFrames; description() says who wrote the trace; close()
    (or a with block) closes it.
    """

    def __init__(self, traces, events=None, *, select=None, tid=None, pid=None, from_ns=None, to_ns=None,
                 no_header=False, rotated=False, undeclared=False, buffer_size=0):
        decl = None if events is None else _Declarations.load(events)
        if isinstance(traces, (list, tuple)) and len(traces) == 1:
            traces = traces[0]
        if isinstance(select, (list, tuple)):
            select = ','.join(select)
        super().__init__(traces, decl.catalog if decl else None, no_header=no_header, select=select, tid=tid,
                         pid=pid, from_ns=_filter_ns(from_ns), to_ns=_filter_ns(to_ns), rotated=rotated,
                         undeclared=undeclared, buffer_size=buffer_size)
        self._decl = decl or _Declarations(self.catalog)
        self._decl.bind(self)

    @property
    def events(self):
        """{name: Event} of every declared event (Dropped_Event included)."""
        return dict(self._decl.by_name)

    def _selector(self, select):
        """A predicate on catalog indexes: whether select names the event (globs, "-glob" excluding; the last
        match wins). Asked once per event as records come, so events a trace declares later are judged too."""
        globs = [g for part in ([select] if isinstance(select, str) else select) for g in part.split(',') if g]

        def wanted(index):
            keep = False
            for g in globs:
                if fnmatch.fnmatchcase(self._decl.events[index].name, g.lstrip('-')):
                    keep = not g.startswith('-')
            return keep
        return wanted

    def columns(self, select=None):
        """Reads every remaining record into numpy arrays: {event name: {column: array}}.

        Columns: timestamp_ns (uint64), pid (uint32), input (uint32, with
        several traces), then one per argument, typed by its declaration
        (int8..int64, uint8..uint64, bool; pointers uint64; strings an object
        array of bytes). An argument named like a record column gets the
        suffix "_arg". select: event globs as open() takes them ("io_*,-tick"
        or a list); None: every event. Events without records have no entry.
        """
        numpy = _optional('numpy', 'columns()')
        out = {}
        several = self.inputs > 1
        for index, rows, cols in super().columns(None if select is None else self._selector(select)):
            names = ['timestamp_ns', 'pid', 'input']
            names += [a + '_arg' if a in names else a for a in self._decl.argnames[index]]
            table = {}
            for name, (code, data) in zip(names, cols):
                if name == 'input' and not several:
                    continue
                if code == 'O':
                    table[name] = numpy.empty(rows, dtype=object)
                    table[name][:] = data
                else:
                    table[name] = numpy.frombuffer(data, dtype=code)
            out[self._decl.events[index].name] = table
        return out

    def dataframes(self, select=None):
        """Reads every remaining record into one pandas DataFrame per event: {event name: DataFrame}."""
        pandas = _optional('pandas', 'dataframes()')
        return {name: pandas.DataFrame(cols) for name, cols in self.columns(select).items()}

    def dataframe(self, event):
        """Reads every remaining record; the DataFrame of the records of event (no rows when none)."""
        pandas = _optional('pandas', 'dataframe()')
        frames = self.dataframes([event])  # first: a trace read without trace-events may declare it late
        if event in frames:
            return frames[event]
        if event not in self._decl.by_name:
            raise KeyError('no event %r is declared' % event)
        names = ['timestamp_ns', 'pid'] + list(self._decl.argnames[self._decl.events.index(self._decl.by_name[event])])
        return pandas.DataFrame({n: [] for n in names})


def open(traces, events=None, *, select=None, tid=None, pid=None, from_ns=None, to_ns=None, no_header=False,
         rotated=False, undeclared=False, buffer_size=0):
    """Opens traces for reading: a Reader, iterable of Records.

    traces: a path, a list of paths (read as one, merged by timestamp; each
    trace keeps its own event IDs), bytes, or a binary file object.
    events: trace-events path(s), a text file, or a list of Event objects;
    None: the declarations the traces carry (simpletrace writes them into
    every trace since 0.2; QEMU's traces need their trace-events files).
    Filters, applied before Python sees a record:
      select      event globs, "job_*,-job_debug" or a list (last match wins)
      tid         records whose pid field is this thread id
      pid         records of this process (traces that describe their process)
      from_ns     records from this time on: nanoseconds after the first record, or "1.5ms", "2s", ...
      to_ns       records up to this time, counted the same way
    no_header: a trace without its header (IDs index events); rotated: read
    a trace written in pieces (FILE, FILE.1, ...) as one; undeclared:
    deliver records of undeclared events (event None, no arguments).
    Raises OpenError (an OSError, FileNotFoundError for a missing file) when
    a file cannot be opened, EventsError for bad trace-events text,
    TraceError for a trace that cannot be read; all three are
    SimpleExceptions.
    """
    return Reader(traces, events, select=select, tid=tid, pid=pid, from_ns=from_ns, to_ns=to_ns,
                  no_header=no_header, rotated=rotated, undeclared=undeclared, buffer_size=buffer_size)


# After _optional, which sql(dataframe=True) uses.
from ._sql import sql, sql_connect  # noqa: E402
