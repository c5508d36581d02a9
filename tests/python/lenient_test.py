#!/usr/bin/env python3
"""Trace-events files that QEMU's simpletrace.py reads and `simpletrace gen`
refuses (issue 21, "Read what QEMU reads"): a format that does not fit its
arguments (`disable nh_never(int x) "compiled out"`; tracetool never looks
at formats). The module reads them as simpletrace.py does, with one
UserWarning per such event naming FILE:LINE through the warnings module:

  - open() and process() deliver every record with its arguments;
  - exactly one warning per such event, in declaration order, for every way
    of giving the declarations (a path, a text file, Event objects);
  - warnings turned into errors (-W error) make loading fail with it;
  - a file whose formats all fit gives no warning.

argv: (none)
"""
import io
import os
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simpletrace  # noqa: E402
import tracegen  # noqa: E402
from tap import done, ok  # noqa: E402

EVENTS = ('# formats simpletrace.py reads and gen refuses\n'
          'fits(int n) "n %d"\n'
          'disable nh_never(int x) "compiled out"\n'
          'nh_odd(int x, const char *s) "odd %d"\n')


def write_trace(path):
    """fits(7), nh_odd(5, "hi"), nh_odd(-1, "") by hand (struct, no simpletrace code)."""
    data = tracegen.header() + tracegen.mapping(0, 'fits') + tracegen.mapping(1, 'nh_odd')
    data += tracegen.record(0, 1000, 4242, tracegen.u64(7))
    data += tracegen.record(1, 3000, 4242, tracegen.u64(5) + tracegen.string(b'hi'))
    data += tracegen.record(1, 4000, 4242, tracegen.u64(-1) + tracegen.string(b''))
    with open(path, 'wb') as f:
        f.write(data)


def caught(fn):
    """(fn()'s result, [warning messages]) with every warning recorded."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter('always')
        result = fn()
    return result, [w for w in got if issubclass(w.category, UserWarning)]


def check_warnings(got, name, what):
    texts = [str(w.message) for w in got]
    ok(len(got) == 2 and texts[0].startswith("%s:3: warning: event 'nh_never': Argument 1 'x' has no conversion"
                                             % name)
       and texts[1].startswith("%s:4: warning: event 'nh_odd': Argument 2 's' has no conversion" % name)
       and all('simpletrace gen refuses it' in t for t in texts),
       '%s: one UserWarning per event whose format does not fit, naming FILE:LINE' % what, '\n'.join(texts))


class Odd(simpletrace.Analyzer2):
    def __init__(self):
        self.seen = []

    def fits(self, n, **kw):
        self.seen.append(('fits', n))

    def nh_odd(self, x, s, **kw):
        self.seen.append(('nh_odd', x, s))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        events = os.path.join(tmp, 'trace-events')
        trace = os.path.join(tmp, 't.trace')
        with open(events, 'w') as f:
            f.write(EVENTS)
        write_trace(trace)

        def records():
            with simpletrace.open(trace, events) as r:
                return [(rec.name, rec.timestamp_ns, dict(rec.asdict())) for rec in r]
        got_records, got = caught(records)
        check_warnings(got, events, 'open(path)')
        ok([(n, ts, d.get('x')) for n, ts, d in got_records] == [('fits', 1000, None), ('nh_odd', 3000, 5),
                                                                 ('nh_odd', 4000, -1)]
           and got_records[0][2].get('n') == 7 and got_records[1][2].get('s') in (b'hi', 'hi'),
           'open(): every record with its arguments, typed by the declaration', got_records)

        analyzer = Odd()
        _, got = caught(lambda: simpletrace.process(events, trace, analyzer))
        check_warnings(got, events, 'process(path)')
        ok(analyzer.seen == [('fits', 7), ('nh_odd', 5, b'hi'), ('nh_odd', 0xffffffffffffffff, b'')],
           'process(): the analyzer gets simpletrace.py\'s values', analyzer.seen)

        _, got = caught(lambda: simpletrace.process(io.StringIO(EVENTS), trace, Odd()))
        check_warnings(got, '<events>', 'process(text file)')
        parsed = simpletrace.read_events(io.StringIO(EVENTS), 'trace-events')
        ok([e.name for e in parsed] == ['fits', 'nh_never', 'nh_odd'], 'read_events(): every event, as tracetool')
        _, got = caught(lambda: simpletrace.process(parsed, trace, Odd()))
        ok(len(got) == 2 and all(str(w.message).startswith('<events list>:') for w in got),
           'process(Event objects): the same warnings', '\n'.join(str(w.message) for w in got))

        with warnings.catch_warnings():
            warnings.simplefilter('error')
            try:
                simpletrace.open(trace, events)
                ok(False, 'warnings as errors: loading fails')
            except UserWarning as e:
                ok(str(e).startswith(events + ':3: warning:'), 'warnings as errors: loading fails with the first', e)

        fitting = os.path.join(tmp, 'fitting')
        with open(fitting, 'w') as f:
            f.write(EVENTS.replace('"compiled out"', '"x %d"').replace('"odd %d"', '"odd %d %s"'))
        n, got = caught(lambda: sum(1 for _ in simpletrace.open(trace, fitting)))
        ok(n == 3 and not got, 'formats that fit: no warning', [str(w.message) for w in got])
    return done()


if __name__ == '__main__':
    sys.exit(main())
