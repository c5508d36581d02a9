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

Answers: latency() and compare()
    `simpletrace latency` and `simpletrace compare` in C on what open()
    reads: per span of paired events (job_start/job_done, or
    pairs=['submit:complete@req']) count, percentiles, histogram, slowest
    spans; two runs side by side with a significance test and fail_if
    conditions. Each returns the command's --format=json object as a dict;
    to_frame() makes a pandas DataFrame of one row per span.

    figures = simpletrace.latency('app.trace', by='thread')
    print(figures['spans'][0]['p99_ns'])
    diff = simpletrace.compare('before.trace', 'after.trace', fail_if='p99>+10%')
    if diff.met: ...

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
import json
import os
import struct
import sys
import warnings
import weakref

from . import _core
from ._core import EventsError, OpenError, Record, SimpleException, TraceError

__all__ = ['Analyzer', 'Analyzer2', 'process', 'run', 'read_trace_header', 'read_trace_records',
           'SimpleException', 'TraceError', 'EventsError', 'OpenError', 'Event', 'Arguments', 'read_events', 'is_string',
           'open', 'Reader', 'Record', 'latency', 'Latency', 'compare', 'Comparison', 'sql', 'sql_connect']

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
        self._operands = _operands(traces, self.name)
        self._print_prefix = _print_prefix(self._operands, events, no_header)

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


    def latency(self, *, pairs=(), no_default_pairs=False, by=None, slowest=5, functions=None):
        """Measures the spans of every remaining record: a Latency (see simpletrace.latency())."""
        return _latency(self, 3, pairs, no_default_pairs, by, slowest, functions)


# --- answers: simpletrace latency and compare ------------------------------------

# The scalar fields of a span in latency's JSON (simpletrace-latency(1)), for a DataFrame without spans.
_SPAN_COLUMNS = ('name', 'group', 'count', 'unfinished', 'unmatched_end', 'key_reused', 'min_ns', 'mean_ns',
                 'p50_ns', 'p90_ns', 'p99_ns', 'p999_ns', 'max_ns', 'total_ns', 'self_ns')
_TEXT_COLUMNS = ('name', 'group', 'test')
_INT_SUFFIXES = ('_ns', 'count', 'unfinished', 'unmatched_end', 'key_reused')
_PLAIN_WORD = frozenset('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+./=:,@%')
# latency() or compare() of a damaged trace: the figures of the records before the damage (None for other errors).
TraceError.figures = None


def _shell_word(word):
    """word as the command quotes it for a POSIX shell (cmd_latency.c's append_word)."""
    return word if word and set(word) <= _PLAIN_WORD else "'" + word.replace("'", "'\\''") + "'"


def _operands(traces, name):
    """The trace operands the command would be given for what a Reader reads: the paths, else its name."""
    items = traces if isinstance(traces, (list, tuple)) else [traces]
    if items and all(isinstance(p, (str, os.PathLike)) for p in items):
        return [os.fsdecode(p) for p in items]
    return [name]


def _print_prefix(operands, events, no_header):
    """The `simpletrace print` command reading what a Reader reads (its slowest spans' "print" fields)."""
    words = ['--no-header'] if no_header else []
    if events is not None:
        items = events if isinstance(events, (list, tuple)) else [events]
        words += [os.fsdecode(e) for e in items] if all(isinstance(e, (str, os.PathLike)) for e in items) else []
    return ' '.join(['simpletrace print'] + [_shell_word(w) for w in words + operands])


def _column(pandas, name, values):
    """One DataFrame column of JSON values: text as objects, booleans as nullable boolean, the integer fields
    (counts, nanoseconds) as nullable UInt64, the others (percentages, rates, statistics) as float64; <NA> or
    NaN where the JSON has null."""
    present = [v for v in values if v is not None]
    if name in _TEXT_COLUMNS or any(isinstance(v, str) for v in present):
        return pandas.array(values, dtype=object)
    if present and all(isinstance(v, bool) for v in present):
        return pandas.array(values, dtype='boolean')
    if 'pct' not in name and name.endswith(_INT_SUFFIXES) and all(isinstance(v, int) for v in present):
        return pandas.array(values, dtype='UInt64')
    return pandas.array([float('nan') if v is None else float(v) for v in values], dtype='float64')


class _Figures(dict):
    """A command's JSON object, with its lists of objects as pandas DataFrames."""

    _EMPTY_COLUMNS = {}

    def to_frame(self, part='spans'):
        """A pandas DataFrame of self[part] ('spans' or 'events'), one row per item; columns: their scalar fields,
        and those of their objects as OBJECT_FIELD (compare's base_p99_ns, change_pct_p99); lists left out."""
        pandas = _optional('pandas', '%s.to_frame()' % type(self).__name__)
        rows = []
        for item in self[part]:
            row = {}
            for key, value in item.items():
                if isinstance(value, dict):
                    row.update(('%s_%s' % (key, k), v) for k, v in value.items() if not isinstance(v, (list, dict)))
                elif not isinstance(value, list):
                    row[key] = value
            rows.append(row)
        columns = list(rows[0]) if rows else list(self._EMPTY_COLUMNS.get(part, ()))
        return pandas.DataFrame({c: _column(pandas, c, [r.get(c) for r in rows]) for c in columns})


class Latency(_Figures):
    """The figures of `simpletrace latency --format=json`, as its JSON object (simpletrace-latency(1)).

    "spans": per span name (and group): name, group (None without by=), count,
    unfinished, unmatched_end, key_reused, min_ns, mean_ns, p50_ns, p90_ns,
    p99_ns, p999_ns, max_ns (None when count is 0), total_ns, self_ns,
    histogram [{lo_ns, hi_ns, count}], slowest [{begin_ns, duration_ns, pid,
    tid, end_tid, key, print}]; "events": [{name, count}]; "records",
    "first_ns", "last_ns"; "partial" (True: the figures of the records before
    a damaged trace's damage, on TraceError.figures). to_frame(): the spans
    as a pandas DataFrame, one row each, their scalar fields as columns (name
    and group as text, the others as nullable UInt64, <NA> where the JSON has
    null); to_frame('events') the events.
    """

    _EMPTY_COLUMNS = {'spans': _SPAN_COLUMNS, 'events': ('name', 'count')}


class Comparison(_Figures):
    """The figures of `simpletrace compare --format=json`, as its JSON object (simpletrace-compare(1)).

    "test" ("mann-whitney-u"), "alpha"; "base" and "new": {trace, records,
    first_ns, last_ns, duration_ns, partial}; "events": [{name, base_count,
    new_count, change_pct, base_rate, new_rate, rate_change_pct, in_base,
    in_new}]; "spans": [{name, group, base, new (each the latency fields
    but slowest), change_pct {count, min, mean, p50, p90, p99, p999, max,
    total}, test, p_value, u, z, effect, significant}].

    met: the fail_if conditions met, one dict per span or event: condition,
    name, group, kind ('span' or 'event'), field, base, new, change_pct (None:
    from 0), p_value (the test's, for durations; else None). Empty: none met
    (the command's exit status 0; met: its status 3). to_frame(): the spans
    as a pandas DataFrame, one row each (base_p99_ns, new_p99_ns as nullable
    UInt64, change_pct_p99, p_value as float64, significant as boolean, ...);
    to_frame('events') the events.
    """

    met = ()


def _warn_run(what, warnings_of_run, by, stacklevel):
    """The command's warnings after a run, as Python warnings (stacklevel: the caller's frame, from the caller of
    this function)."""
    unused, by_declared = warnings_of_run
    for rule in unused:
        warnings.warn('%s: pairs rule %r pairs no declared events%s' %
                      (what, rule, ' (both must declare the key\'s argument)' if '@' in rule else ''),
                      stacklevel=stacklevel + 1)
    if not by_declared:
        warnings.warn('%s: by=%r: no event declares an argument %r (every span is in group "")' % (what, by, by),
                      stacklevel=stacklevel + 1)


def _rules(pairs):
    return [pairs] if isinstance(pairs, str) else pairs


def _with_figures(kind):
    """An exception's JSON figures (a damaged trace: the records before the damage) as a kind."""
    def convert(e):
        if isinstance(getattr(e, 'figures', None), str):
            e.figures = kind(json.loads(e.figures))
    return convert


def _latency(reader, stacklevel, pairs, no_default_pairs, by, slowest, functions):
    """Reader.latency(); the command's warnings as Python warnings (stacklevel: the caller's frame)."""
    try:
        text, warned = reader.latency_json(pairs=_rules(pairs), no_default_pairs=no_default_pairs, by=by,
                                           slowest=slowest, functions=functions, print_prefix=reader._print_prefix)
    except Exception as e:
        _with_figures(Latency)(e)
        raise
    _warn_run('latency', warned, by, stacklevel)
    return Latency(json.loads(text))


def latency(traces, events=None, *, pairs=(), no_default_pairs=False, by=None, slowest=5, functions=None,
            select=None, tid=None, pid=None, from_ns=None, to_ns=None, no_header=False, rotated=False):
    """`simpletrace latency` on traces: a Latency, the dict of its --format=json (to_frame(): a DataFrame).

    traces, events and the filters (select, tid, pid, from_ns, to_ns,
    no_header, rotated) as open() takes them; or traces an open Reader (as
    Reader.latency(): its remaining records). As the command's options:
      pairs             pairing rules "BEGIN:END[=NAME][@ARG]" (a str or a list), tried before the
                        built-in *_enter:*_exit, *_begin:*_end, *_start:*_done
      no_default_pairs  only the pairs given
      by                None, 'thread', 'process' or an argument's name: every figure per group
      slowest           the N slowest spans kept per span name and group (0..10000)
      functions         a function trace (uftrace.data directory) of the same run: its calls are spans too
    A rule that pairs nothing and a by= argument no event declares are
    warnings. Raises ValueError for a bad rule, OpenError/TraceError as
    open() does, and for a damaged trace TraceError after measuring the
    records before the damage: their figures are its `figures` (a Latency
    with "partial": True).
    """
    if isinstance(traces, Reader):
        return _latency(traces, 3, pairs, no_default_pairs, by, slowest, functions)
    with Reader(traces, events, select=select, tid=tid, pid=pid, from_ns=from_ns, to_ns=to_ns,
                no_header=no_header, rotated=rotated) as reader:
        return _latency(reader, 3, pairs, no_default_pairs, by, slowest, functions)


def compare(base, new, events=None, *, pairs=(), no_default_pairs=False, by=None, functions=None, alpha=0.01,
            fail_if=(), select=None, tid=None, pid=None, from_ns=None, to_ns=None, no_header=False, rotated=False):
    """`simpletrace compare` of two runs: a Comparison, the dict of its --format=json.

    base, new: each what open() takes (a path, a list of paths read as one
    run, bytes, a file object), or an open Reader (its remaining records);
    events and the filters apply to both as open() takes them (a Reader
    was opened with its own). As the
    command's options: pairs, no_default_pairs and by as latency() takes
    them; functions: None or (BASE's function trace, NEW's); alpha: the
    significance level of the Mann-Whitney U test (default 0.01); fail_if:
    conditions "[NAME:]FIELD>+N%" or "<-N%" (a str or a list; FIELD count,
    rate, mean, min, p50, p90, p99, p999, max, total; durations only when
    the test says significant too): those met are the result's `met` (empty:
    none). Warnings and errors as latency()'s (a bad condition: ValueError);
    a damaged run raises TraceError after both were measured, the comparison
    of what was read its `figures` (a Comparison, the conditions not
    evaluated).
    """
    fail_if = _rules(fail_if)
    functions = (None, None) if functions is None else tuple(functions)
    if len(functions) != 2:
        raise ValueError('compare: functions is (BASE\'s function trace, NEW\'s)')
    opened = []
    try:
        runs = []
        for run in (base, new):
            if not isinstance(run, Reader):
                run = Reader(run, events, select=select, tid=tid, pid=pid, from_ns=from_ns, to_ns=to_ns,
                             no_header=no_header, rotated=rotated)
                opened.append(run)
            runs.append(run)
        try:
            text, (met, unseen), *warned = _core.compare_json(
                runs[0], runs[1], pairs=_rules(pairs), no_default_pairs=no_default_pairs, by=by, functions=functions,
                alpha=alpha, fail_if=fail_if, titles=tuple(' '.join(r._operands) for r in runs))
        except Exception as e:
            _with_figures(Comparison)(e)
            raise
    finally:
        for run in opened:
            run.close()
    for name, w in zip(('BASE', 'NEW'), warned):
        _warn_run('compare: ' + name, w, by, 2)
    for condition in unseen:
        warnings.warn('compare: fail_if %r: no span or event of that name in either run' % condition, stacklevel=2)
    figures = Comparison(json.loads(text))
    figures.met = met
    return figures


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
