#!/usr/bin/env python3
"""The module's own API (simpletrace.open and Records) and the QEMU layer's objects.

  - typed values and QEMU's raw words, offsets and record numbers, by an
    independent decoding of a synthetic trace (tracegen.py);
  - a trace that carries its declarations (the demo program's) read without
    trace-events, every value equal to `simpletrace print --format=json`'s;
  - several traces merged by timestamp (inputs, processes);
  - the filters (event globs, tid, pid, time window) against a count made here;
  - sources: path, bytes, BytesIO, a pipe; a file object's own exception;
  - numpy columns and pandas DataFrames (when numpy / pandas are installed),
    and without them an error naming their Debian packages;
  - Event/Arguments shape, is_string, an analyzer overriding _process_event;
  - help(simpletrace) and the type stubs name every public name;
  - errors: missing files, bad trace-events, QEMU traces without events.

argv: SIMPLETRACE-CLI DEMO FIXTURES-QEMU-DIR
"""
import ast
import errno
import io
import json
import os
import pydoc
import struct
import subprocess
import sys
import tempfile
import threading
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simpletrace  # noqa: E402
import tracegen  # noqa: E402
from tap import done, ok  # noqa: E402

try:
    import numpy
except ImportError:
    numpy = None
try:
    import pandas
except ImportError:
    pandas = None


def skip(what, why):
    """A check that cannot run here, said so (TAP SKIP); make check installs what it needs."""
    ok(True, '%s # SKIP %s' % (what, why))


def slurp(path, mode='r'):
    with open(path, mode) as f:
        return f.read()


def events_of(path):
    with open(path) as f:
        return simpletrace.read_events(f, path)


def expected_records(n, seed):
    """(name, ts, pid, typed args, raw args, offset, number) of tracegen's records, decoded here."""
    types = {'lock_acquire': 'p s i32', 'lock_release': 'p s i32', 'io_submit': 'u64 u32 bool',
             'io_complete': 'u64 i32', 'tick': '', 'job_delta': 'i64 i8 u16'}
    offset, number = 24, 0
    for i, name in enumerate(tracegen.NAMES):
        offset += 20 + len(name)
        number += 1
    for ev, ts, pid, payload in tracegen.records(n, seed):
        name = tracegen.NAMES[ev]
        typed, raw, at = [], [], 0
        for t in types[name].split():
            if t == 's':
                (size,) = struct.unpack_from('=I', payload, at)
                s = payload[at + 4:at + 4 + size]
                typed.append(s)
                raw.append(s)
                at += 4 + size
                continue
            (w,) = struct.unpack_from('=Q', payload, at)
            at += 8
            raw.append(w)
            if t in ('p', 'u64'):
                typed.append(w)
            elif t == 'bool':
                typed.append(bool(w & 0xff))
            else:
                bits = int(t[1:])
                v = w & ((1 << bits) - 1)
                typed.append(v - (1 << bits) if t[0] == 'i' and v >> (bits - 1) else v)
        number += 1
        yield name, ts, pid, tuple(typed), tuple(raw), offset, number
        offset += 32 + len(payload)


def check_typed(tmp):
    ev, tr = os.path.join(tmp, 'ev'), os.path.join(tmp, 'syn.trace')
    tracegen.write(ev, tr, 3000, seed=7)
    want = list(expected_records(3000, 7))
    with simpletrace.open(tr, ev) as trace:
        got = [(r.name, r.timestamp_ns, r.pid, r.args, r.raw_args, r.offset, r.number) for r in trace]
        ok(trace.counters()['events'] == 3000 and trace.version == 4 and not trace.byte_swapped,
           'counters, version and byte order of the synthetic trace')
    bad = [(w, g) for w, g in zip(want, got) if w != g]
    ok(len(got) == len(want) and not bad, 'typed and raw values, timestamps, pids, offsets, record numbers '
       'of 3000 records equal an independent decoding', bad[:3])
    ok(any(r[3] and isinstance(r[3][-1], bool) for r in got) and any(v < 0 for r in got for v in r[3]
                                                                   if isinstance(v, int)),
       'bool and negative values are among them')
    rec = next(iter(simpletrace.open(tr, ev, select='io_complete')))
    ok(rec['ret'] == rec[1] == rec.args[1] and rec.asdict() == dict(zip(rec.argnames, rec.args)) and len(rec) == 2
       and rec.event.name == 'io_complete' and rec.dropped is False and 'io_complete' in repr(rec),
       'a Record by name, by index, as a dict; its event, argnames, repr')
    ok(rec.id == 3 and rec.input == 0 and rec.process_pid == 0 and rec.process_program == '',
       'a Record of a trace without a description: id, input 0, process unknown')
    return ev, tr, want


def check_sources(ev, tr, want):
    names = [w[0] for w in want]
    data = slurp(tr, 'rb')
    ok([r.name for r in simpletrace.open(data, ev)] == names, 'bytes as the trace')
    ok([r.name for r in simpletrace.open(io.BytesIO(data), ev)] == names, 'a BytesIO as the trace')
    rfd, wfd = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(wfd, data), os.close(wfd)))
    writer.start()
    with os.fdopen(rfd, 'rb') as pipe:
        got = [r.name for r in simpletrace.open(pipe, ev)]
    writer.join()
    ok(got == names, 'a pipe as the trace')

    class Failing(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, b):
            raise ConnectionResetError('the source broke')
    try:
        list(simpletrace.open(Failing(), ev))
        ok(False, "a file object's exception reaches the caller")
    except ConnectionResetError as e:
        ok(str(e) == 'the source broke', "a file object's exception reaches the caller as it was raised")
    class Reentrant(io.RawIOBase):  # reads the reader it feeds, from inside the read
        reader = None

        def readable(self):
            return True

        def readinto(self, b):
            next(self.reader)
            return 0
    source = Reentrant()
    source.reader = simpletrace.open(source, ev)
    try:
        next(source.reader)
        ok(False, 'a file object that reads its own reader')
    except RuntimeError as e:
        ok('in use' in str(e), 'a file object that reads its own reader from its callback: RuntimeError, no crash')
    with open(ev) as f:
        as_file = [r.name for r in simpletrace.open(tr, f)]
    ok(as_file == names and [r.name for r in simpletrace.open(tr, events_of(ev))] == names,
       'events as a text file and as a list of Event objects')


def check_filters(ev, tr, want):
    def names(**kw):
        return [(r.name, r.timestamp_ns, r.pid) for r in simpletrace.open(tr, ev, **kw)]
    base = [(w[0], w[1], w[2]) for w in want]
    ok(names(select='lock_*') == [b for b in base if b[0].startswith('lock_')], "select='lock_*'")
    ok(names(select=['*', '-tick', '-io_*']) == [b for b in base if b[0] not in ('tick', 'io_submit', 'io_complete')],
       "select=['*', '-tick', '-io_*'] (the last match wins)")
    ok(names(tid=4243) == [b for b in base if b[2] == 4243] and names(tid=4243), 'tid=4243')
    origin = base[0][1]
    window = [b for b in base if 1000000 <= b[1] - origin <= 2000000]
    ok(names(from_ns=1000000, to_ns='2ms') == window and window, 'from_ns=1000000, to_ns="2ms"')
    try:
        list(simpletrace.open(tr, ev, pid=1))
        ok(False, 'pid= on a trace that does not record its process is an error')
    except simpletrace.TraceError as e:
        ok('does not record which process' in str(e), 'pid= on a trace that does not record its process: %s' % e)


def demo_trace(demo, path, jobs):
    env = dict(os.environ, SIMPLETRACE='enable=*,file=' + path)
    r = subprocess.run([demo, '--jobs', str(jobs)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ok(r.returncode == 0, 'the demo runs traced into %s' % os.path.basename(path), r.stderr)


def json_value(v, decl_type):
    if isinstance(v, dict):  # a char
        return v['value']
    if isinstance(v, str) and (decl_type.endswith('*') and 'char' not in decl_type or decl_type.count('*') > 1 or
                               decl_type.startswith(('const uint8_t', 'uint8_t'))):
        return int(v, 16)
    if isinstance(v, str):
        return v.encode('latin-1') if any(ord(c) > 127 for c in v) else v.encode()
    return v


def check_self_describing(cli, demo, tmp):
    a, b = os.path.join(tmp, 'a.trace'), os.path.join(tmp, 'b.trace')
    demo_trace(demo, a, 20)
    demo_trace(demo, b, 30)
    lines = [json.loads(x) for x in subprocess.run([cli, 'print', '--format=json', a], stdout=subprocess.PIPE,
                                                   text=True).stdout.splitlines()]
    with simpletrace.open(a) as trace:
        recs = list(trace)
        desc = trace.description()
        evs = trace.events
    mismatch = []
    for want, rec in zip(lines, recs):
        types = dict((n, t) for t, n in rec.event.args)
        args = {k: json_value(v, types[k]) for k, v in want['args'].items()}
        if (want['name'], want['timestamp_ns'], want['pid']) != (rec.name, rec.timestamp_ns, rec.pid) or \
                args != rec.asdict():
            mismatch.append((want, rec))
    ok(len(recs) == len(lines) > 0 and not mismatch,
       'a trace read with the declarations it carries: every typed value equals print --format=json\'s',
       mismatch[:2])
    ok(desc and desc['program'] == 'demo' and desc['pid'] == lines[0]['pid'] and desc['clock'],
       'description(): program, pid and clock of the demo process', desc)
    ok('all_kinds' in evs and [t for t, _ in evs['all_kinds'].args][-1] == 'const char *' and
       evs['all_kinds'].fmt.startswith('"i8 %d'), 'Event objects made from the declarations the trace carries')
    with simpletrace.open([a, b]) as merged:
        recs2 = list(merged)
        ok(merged.inputs == 2, 'two traces read as one')
    pids = {r.input: (r.process_pid, r.process_program) for r in recs2}
    # A trace's own records need not be in time order (a thread's ring drained in a later pass): the merge
    # keeps each input's order, and where it passes from one input to the other, time never goes back.
    own = [[(r.name, r.timestamp_ns) for r in recs2 if r.input == i] for i in (0, 1)]
    switches_back = [(p.timestamp_ns, r.timestamp_ns) for p, r in zip(recs2, recs2[1:])
                     if p.input != r.input and r.timestamp_ns < p.timestamp_ns]
    ok(own[0] == [(r.name, r.timestamp_ns) for r in recs] and
       own[1] == [(r.name, r.timestamp_ns) for r in simpletrace.open(b)] and not switches_back,
       'the records of both, merged by timestamp', switches_back[:3])
    ok(pids[0] == (desc['pid'], 'demo') and pids[1][1] == 'demo' and pids[1][0] != pids[0][0],
       'each record names its input and process', pids)
    only_a = list(simpletrace.open([a, b], pid=desc['pid']))
    ok(len(only_a) == len(recs) and {r.input for r in only_a} == {0}, 'pid= keeps the process of one input')
    return a


def check_columns(ev, tr, want):
    if numpy is None:
        skip('numpy columns', 'numpy is not installed (Debian python3-numpy)')
        return
    cols = simpletrace.open(tr, ev).columns()
    lock = cols['lock_acquire']
    ok(set(cols) == set(tracegen.NAMES) and lock['line'].dtype == numpy.int32 and lock['mutex'].dtype == numpy.uint64
       and lock['file'].dtype == object and cols['io_submit']['write'].dtype == numpy.bool_ and
       cols['io_submit']['bytes'].dtype == numpy.uint32 and cols['job_delta']['small'].dtype == numpy.int8 and
       cols['job_delta']['port'].dtype == numpy.uint16 and lock['timestamp_ns'].dtype == numpy.uint64 and
       'input' not in lock, 'columns: one array per field, typed by the declaration')
    bad = []
    for name, table in cols.items():
        rows = [w for w in want if w[0] == name]
        for i, w in enumerate(rows):
            if (table['timestamp_ns'][i], table['pid'][i]) != (w[1], w[2]) or \
                    tuple(table[a][i] for a in list(table)[2:]) != w[3]:
                bad.append((name, i))
        if len(table['pid']) != len(rows):
            bad.append((name, 'rows'))
    ok(not bad, 'every column value equals the record\'s typed value', bad[:5])
    part = simpletrace.open(tr, ev, tid=4244).columns(['io_*'])
    ok(set(part) == {'io_submit', 'io_complete'} and all((t['pid'] == 4244).all() for t in part.values()),
       'columns(select) with a reader filter')
    ok(set(simpletrace.open(tr, ev).columns('io_*,-io_complete,tick')) == {'io_submit', 'tick'},
       "columns('io_*,-io_complete,tick'): globs as open() takes them")
    if pandas is None:
        skip('pandas DataFrames', 'pandas is not installed (Debian python3-pandas)')
        return
    df = simpletrace.open(tr, ev).dataframe('io_complete')
    ok(list(df.columns) == ['timestamp_ns', 'pid', 'offset', 'ret'] and len(df) == sum(w[0] == 'io_complete'
                                                                                    for w in want)
       and (df['ret'] < 0).any(), 'dataframe(event): a pandas DataFrame of its records')
    ok(set(simpletrace.open(tr, ev).dataframes()) == set(tracegen.NAMES), 'dataframes(): one per event')


def check_qemu_objects(ev, tr):
    events = events_of(ev)
    lock = events[0]
    ok(lock.name == 'lock_acquire' and list(lock.args) == [('void *', 'mutex'), ('const char *', 'file'),
                                                          ('int', 'line')]
       and len(lock.args) == 3 and lock.args.names() == ['mutex', 'file', 'line'] and lock.fmt == '"mutex %p %s:%d"'
       and lock.lineno == 2 and lock.filename == ev and str(events[4].args) == 'void',
       'Event objects as tracetool makes them: name, args of (type, name), fmt, lineno, filename')
    ok(simpletrace.is_string('const char *') and simpletrace.is_string('char*') and
       not simpletrace.is_string('char **') and not simpletrace.is_string('void *'), 'is_string()')

    class Own(simpletrace.Analyzer2):
        def __init__(self):
            self.calls = []

        def _process_event(self, rec_args, *, event, event_id, timestamp_ns, pid):
            self.calls.append((type(rec_args), event.name, event_id))
            if event.name == 'io_complete':
                super()._process_event(rec_args, event=event, event_id=event_id, timestamp_ns=timestamp_ns, pid=pid)

        def io_complete(self, offset, ret, **kwargs):
            self.calls.append('io_complete handler')
    own = Own()
    simpletrace.process(ev, tr, own)
    ok(len([c for c in own.calls if c != 'io_complete handler']) == 3000 and own.calls[0][0] is list and
       own.calls.count('io_complete handler') == sum(1 for c in own.calls if c != 'io_complete handler' and
                                                     c[1] == 'io_complete'),
       "an analyzer's own _process_event gets every record (args as a list), and Analyzer2's through super()")


def check_legacy_override(ev, tr, want):
    class Legacy(simpletrace.Analyzer):
        def __init__(self):
            self.seen = []

        def _process_event(self, rec_args, **kwargs):  # filters, then QEMU's Analyzer logic through super()
            if kwargs['event'].name in ('io_submit', 'io_complete', 'tick'):
                super()._process_event(rec_args, **kwargs)

        def io_submit(self, timestamp, pid, offset, nbytes, write):
            self.seen.append(('io_submit', timestamp, pid, offset, nbytes, write))

        def io_complete(self, offset, ret):
            self.seen.append(('io_complete', offset, ret))

        def catchall(self, event, rec):
            self.seen.append((event.name,) + rec)
    legacy = Legacy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        simpletrace.process(ev, tr, legacy)
    expect = []
    for name, ts, pid, _, raw, _, _ in want:
        if name == 'io_submit':
            expect.append((name, ts, pid) + raw)
        elif name == 'io_complete':
            expect.append((name,) + raw)
        elif name == 'tick':
            expect.append((name, name, ts, pid))
    ok(legacy.seen == expect and any(w.category is DeprecationWarning for w in caught),
       "Analyzer's arity rule and catchall(event, rec) through super()._process_event, with a DeprecationWarning")


def check_docs():
    text = pydoc.render_doc(simpletrace, renderer=pydoc.plaintext)
    ok(all(w in text for w in ('Analyzer2', 'process(', 'open(', 'class Reader', 'SimpleException')),
       'help(simpletrace) describes the API')
    undocumented = [n for n in simpletrace.__all__ if not getattr(simpletrace, n).__doc__]
    ok(not undocumented, 'every public name has a docstring', undocumented)
    stub = os.path.join(os.path.dirname(simpletrace.__file__), '__init__.pyi')
    tree = ast.parse(slurp(stub))
    declared = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    declared |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    declared |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
    ok(set(simpletrace.__all__) <= declared, 'the type stubs declare every public name',
       set(simpletrace.__all__) - declared)
    ok(os.path.exists(os.path.join(os.path.dirname(stub), 'py.typed')), 'py.typed marks the package typed')


def check_optional_missing(ev, tr):
    """numpy and pandas absent (a None entry in sys.modules makes their import fail): the error names the package."""
    saved = {m: sys.modules.get(m, ImportError) for m in ('numpy', 'pandas')}
    try:
        for module, call in (('numpy', lambda r: r.columns()), ('pandas', lambda r: r.dataframes()),
                             ('pandas', lambda r: r.dataframe('tick'))):
            sys.modules[module] = None
            try:
                call(simpletrace.open(tr, ev))
                ok(False, 'without %s' % module)
            except ImportError as e:
                ok('python3-%s' % module in str(e) and e.name == module,
                   'without %s: an ImportError naming the Debian package: %s' % (module, e))
            sys.modules.update({m: v for m, v in saved.items() if v is not ImportError})
    finally:
        for m, v in saved.items():
            if v is ImportError:
                sys.modules.pop(m, None)
            else:
                sys.modules[m] = v


def check_errors(ev, tr, fixtures, tmp):
    missing = os.path.join(tmp, 'missing.trace')
    for base in (FileNotFoundError, OSError, simpletrace.OpenError, simpletrace.SimpleException):
        for what, call in (('a missing trace', lambda: simpletrace.open(missing, ev)),
                           ('a missing trace-events file', lambda: simpletrace.open(tr, missing)),
                           ('a missing trace among several', lambda: simpletrace.open([tr, missing], ev)),
                           ('a missing trace, process()', lambda: simpletrace.process(ev, missing, simpletrace.Analyzer2()))):
            try:
                call()
                ok(False, what)
            except base as e:
                ok(isinstance(e, simpletrace.OpenError) and e.errno == errno.ENOENT and 'missing.trace' in str(e),
                   '%s: except %s catches it, an OpenError naming the file: %s' % (what, base.__name__, e))
    ok(issubclass(simpletrace.OpenError, OSError) and issubclass(simpletrace.OpenError, simpletrace.SimpleException)
       and all(issubclass(c, simpletrace.SimpleException) for c in (simpletrace.TraceError, simpletrace.EventsError)),
       'one hierarchy: OpenError, TraceError and EventsError are SimpleExceptions; OpenError an OSError')
    ok('OpenError' in simpletrace.open.__doc__ and 'OSError' in simpletrace.OpenError.__doc__,
       "open()'s and OpenError's docstrings say so")
    bad = os.path.join(tmp, 'bad-events')
    with open(bad, 'w') as f:
        f.write('ok_event(int x) "x %d"\nbroken(int x "x %d"\n')
    try:
        simpletrace.open(tr, bad)
        ok(False, 'bad trace-events text')
    except simpletrace.EventsError as e:
        ok(isinstance(e, ValueError) and isinstance(e, simpletrace.SimpleException) and ':2' in str(e),
           'bad trace-events text: EventsError (a ValueError) naming the line: %s' % e)
    got = []
    try:
        for rec in simpletrace.open(os.path.join(fixtures, 'create_qcow2.bin')):  # one pass: known at its first record
            got.append(rec)
        ok(False, 'a QEMU trace without trace-events')
    except simpletrace.TraceError as e:
        ok(not got and 'trace-events' in str(e) and e.offset > 0,
           'a QEMU trace without trace-events says to give them, at its first record: %s' % e)
    r = simpletrace.open(tr, ev)
    r.close()
    try:
        next(iter(r))
        ok(False, 'a closed reader')
    except ValueError as e:
        ok('closed' in str(e), 'reading a closed reader: ValueError')


def main():
    cli, demo, fixtures = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as tmp:
        ev, tr, want = check_typed(tmp)
        check_sources(ev, tr, want)
        check_filters(ev, tr, want)
        check_self_describing(cli, demo, tmp)
        check_columns(ev, tr, want)
        check_optional_missing(ev, tr)
        check_qemu_objects(ev, tr)
        check_legacy_override(ev, tr, want)
        check_docs()
        check_errors(ev, tr, fixtures, tmp)
    return done()


if __name__ == '__main__':
    sys.exit(main())
