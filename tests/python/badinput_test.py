#!/usr/bin/env python3
"""Truncated and corrupt traces through the module: every record before the
bad one is delivered, then SimpleException (TraceError) names the byte offset
and record number of the bad one; never another exception, never a crash.

  - truncation of a real QEMU trace and a synthetic one at every record
    boundary and next to it, inside the header, and at random places: the
    records delivered are exactly those that end before the cut, the error's
    offset and record are those of the record the cut falls in, and its
    message says so; process() calls the analyzer for each of them and
    not end();
  - a fuzz-style run of mutated files (bytes flipped, lengths and IDs
    overwritten, cut and mutated) through Records, QEMU's tuples and
    process(): only SimpleException, and the records before the first
    mutated byte are the original ones.

argv: FIXTURES-QEMU-DIR [MUTANTS]
"""
import os
import random
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simpletrace  # noqa: E402
import tracegen  # noqa: E402
from tap import done, ok  # noqa: E402


def layout(data):
    """(offset, end, number, is_event) of every record after the 24-byte v4 header, walked here."""
    out, pos, number = [], 24, 0
    while pos < len(data):
        (kind,) = struct.unpack_from('=Q', data, pos)
        if kind == 0:
            (size,) = struct.unpack_from('=I', data, pos + 16)
            end = pos + 20 + size
        else:
            (length,) = struct.unpack_from('=I', data, pos + 24)
            end = pos + 8 + length
        number += 1
        out.append((pos, end, number, kind != 0))
        pos = end
    return out


def read(data, events):
    """The (offset, number, raw args) delivered, and the exception that ended the reading (or None)."""
    got = []
    try:
        for r in simpletrace.open(data, events):
            got.append((r.offset, r.number, r.raw_args))
    except Exception as e:  # what is raised is checked by the caller
        return got, e
    return got, None


class Counter(simpletrace.Analyzer2):
    def __init__(self):
        self.n = 0
        self.ended = False

    def catchall(self, *args, **kwargs):
        self.n += 1

    def end(self):
        self.ended = True


def check_truncations(name, data, events, seed):
    recs = layout(data)
    full, err = read(data, events)
    ok(err is None and len(full) == sum(r[3] for r in recs), '%s: read whole (%d records)' % (name, len(full)))
    cuts = set(range(0, 30))
    for off, end, _, _ in recs[:60] + recs[-60:]:
        cuts |= {off - 1, off, off + 1, off + 9, end - 1}
    rnd = random.Random(seed)
    cuts |= {rnd.randrange(len(data)) for _ in range(150)}
    cuts = sorted(c for c in cuts if 0 <= c < len(data))
    bad = []
    for cut in cuts:
        got, e = read(data[:cut], events)
        want = [f for f, r in zip(full, [r for r in recs if r[3]]) if r[1] <= cut]
        inside = [r for r in recs if r[0] < cut < r[1]]
        if cut < 24:
            where = (0, 0)
        elif inside:
            where = (inside[0][0], inside[0][2])
        else:
            where = None  # a cut between two records is a shorter, complete trace
        if where is None:
            good = e is None and got == want
        else:
            good = (isinstance(e, simpletrace.TraceError) and got == want and (e.offset, e.record) == where and
                    'byte offset %d, record %d' % where in str(e))
        if not good:
            bad.append((cut, where, repr(e), len(got), len(want)))
    ok(not bad, '%s: cut at %d places: the records before the cut, then TraceError naming the offset and '
       'record the cut falls in' % (name, len(cuts)), bad[:5])
    cut = recs[len(recs) // 2][0] + 5
    analyzer = Counter()
    try:
        simpletrace.process(events, data[:cut], analyzer)
        ok(False, '%s: process() of a truncated trace raises' % name)
    except simpletrace.SimpleException as e:
        n = sum(1 for r in recs if r[3] and r[1] <= cut)
        ok(analyzer.n == n and not analyzer.ended,
           '%s: process() of the trace cut at %d: %d records analysed, then %s; end() not called'
           % (name, cut, n, e))


def mutate(data, rnd, recs):
    """A mutated copy and the offset of its first changed byte."""
    data = bytearray(data)
    r = rnd.choice(recs)
    how = rnd.randrange(5)
    if how == 0:  # bytes flipped anywhere after the header
        at = rnd.randrange(24, len(data))
        for i in range(rnd.randrange(1, 4)):
            if at + i < len(data):
                data[at + i] ^= 1 << rnd.randrange(8)
    elif how == 1:  # a record length (or a mapping's name length) overwritten
        at = r[0] + (24 if r[3] else 16)
        data[at:at + 4] = struct.pack('=I', rnd.choice([0, 1, 23, 24, 25, 0xffff, 0x7fffffff, 0xffffffff,
                                                        rnd.randrange(1 << 32)]))
    elif how == 2:  # an event ID or record type overwritten
        at = r[0] + rnd.choice([0, 8])
        data[at:at + 8] = struct.pack('=Q', rnd.choice([2, 0xfffffffffffffffe, rnd.randrange(1 << 64),
                                                        rnd.randrange(1000)]))
    elif how == 3:  # a string length inside an event record
        at = r[0] + 32 + rnd.randrange(max(1, r[1] - r[0] - 32))
        data[at:at + 4] = struct.pack('=I', rnd.choice([0xffffffff, 513, rnd.randrange(100)]))
    else:  # cut and mutated
        at = rnd.randrange(24, len(data))
        data[at] ^= 0xff
        del data[rnd.randrange(at, len(data) + 1):]
    return bytes(data), at


def check_mutants(name, data, events, count, seed):
    recs = layout(data)
    full, _ = read(data, events)
    events_recs = [r for r in recs if r[3]]
    rnd = random.Random(seed)
    wrong, errors, changed = [], 0, 0
    with open(events) as f:
        events = simpletrace.read_events(f, events)  # parsed once: a list serves every run
    for i in range(count):
        mutant, at = mutate(data, rnd, recs)
        got, e = read(mutant, events)
        if e is not None and not isinstance(e, simpletrace.SimpleException):
            wrong.append((i, at, 'records: %r' % e))
        unchanged = [f for f, r in zip(full, events_recs) if r[1] <= at]
        if got[:len(unchanged)] != unchanged:
            wrong.append((i, at, 'records before the mutation differ'))
        errors += e is not None
        changed += got != full
        try:  # QEMU's tuples and the analyzer loop, on the same bytes
            with tempfile.TemporaryFile() as f:
                f.write(mutant[24:])
                f.seek(0)
                for _ in simpletrace.read_trace_records(events, f, True):
                    pass
        except simpletrace.SimpleException:
            pass
        except Exception as x:
            wrong.append((i, at, 'read_trace_records: %r' % x))
        try:
            simpletrace.process(events, mutant, Counter())
        except simpletrace.SimpleException:
            pass
        except Exception as x:
            wrong.append((i, at, 'process: %r' % x))
    ok(not wrong and errors > count // 4,
       '%s: %d mutated files (%d raised SimpleException, %d read differently): only SimpleException, '
       'the records before the first mutated byte unchanged' % (name, count, errors, changed), wrong[:5])


def main():
    fixtures = sys.argv[1]
    mutants = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    qemu_events = os.path.join(fixtures, 'trace-events-all')
    with open(os.path.join(fixtures, 'create_qcow2.bin'), 'rb') as f:
        qemu = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        ev, tr = os.path.join(tmp, 'ev'), os.path.join(tmp, 'syn')
        tracegen.write(ev, tr, 2000, seed=3)
        with open(tr, 'rb') as f:
            syn = f.read()
        for name, data, events, seed in (('create_qcow2', qemu, qemu_events, 1), ('synthetic', syn, ev, 2)):
            check_truncations(name, data, events, seed)
            check_mutants(name, data, events, mutants, seed)
    return done()


if __name__ == '__main__':
    sys.exit(main())
