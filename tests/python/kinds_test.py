#!/usr/bin/env python3
"""An argument's kind, decided once (issue 22, item 2): the module types
`const bool` and `bool const` arguments as Python bools (and numpy columns
as numpy.bool_), as it types `bool`, from the reader's
st_catalog_arg_encoding(), whichever kind of catalog reads the trace: one
from trace-events text, or the declarations the trace carries.

argv: (none)
"""
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simpletrace  # noqa: E402
import tracegen  # noqa: E402
from tap import done, ok  # noqa: E402

try:
    import numpy
except ImportError:
    numpy = None

DECL = 'kinds(bool b, const bool cb, bool const bk, const char cc, int8_t i8) "b %d cb %d bk %d cc %c i8 %d"'
DECL_ID = 0xFFFFFFFE00000000  # the declaration record of event ID 0 (meta_format.h)
VALUES = [(1, 1, 1, ord('x'), -3), (0, 0, 0, 0x80, 5)]
WANT = [(True, True, True, ord('x'), -3), (False, False, False, -128, 5)]


def write_trace(path, declared):
    data = tracegen.header() + tracegen.mapping(0, 'kinds')
    if declared:
        data += struct.pack('=QQI', 0, DECL_ID, len(DECL)) + DECL.encode()
    for i, vals in enumerate(VALUES):
        data += tracegen.record(0, 1000 * (i + 1), 4242, b''.join(tracegen.u64(v) for v in vals))
    with open(path, 'wb') as f:
        f.write(data)


def check(what, trace, events):
    got = [r.args for r in simpletrace.open(trace, events)]
    ok(got == WANT and all(type(v) is bool for r in got for v in r[:3]),
       '%s: bool, const bool and bool const are Python bools; const char a signed number' % what, got)
    if numpy is None:
        ok(True, '%s: numpy columns # SKIP numpy is not installed (Debian python3-numpy)' % what)
        return
    cols = simpletrace.open(trace, events).columns()['kinds']
    ok(all(cols[k].dtype == numpy.bool_ for k in ('b', 'cb', 'bk')) and cols['cb'].tolist() == [True, False],
       '%s: numpy columns of the three are numpy.bool_' % what, {k: str(c.dtype) for k, c in cols.items()})


def main():
    with tempfile.TemporaryDirectory() as tmp:
        events, plain, declared = (os.path.join(tmp, n) for n in ('trace-events', 'plain.trace', 'declared.trace'))
        with open(events, 'w') as f:
            f.write(DECL + '\n')
        write_trace(plain, False)
        write_trace(declared, True)
        check('trace-events', plain, events)
        check('declared', declared, None)
    return done()


if __name__ == '__main__':
    sys.exit(main())
