#!/usr/bin/env python3
"""Export of a damaged trace (issue 21, item 1): a trace cut as kill -9
leaves it, its file ending inside a record, exports what was readable.

A trace of export_app (nested requests and steps on two threads, read with
its own declarations) is cut at several points; for each cut and each
format:
  - inside a record: exit 1, print's message (file, byte offset, record)
    then "OUT holds the records before that point"; the output is read by
    its consumer (uftrace dump, check_chrome.py, protoc with
    check_perfetto.py, babeltrace2 and python3-bt2 with check_ctf.py) and
    holds exactly the records `print --format=json` shows for the same cut
    trace, calls still open at the cut closed at the last record's time;
  - at a record boundary the file is a whole trace: exit 0, the same.
Refused, nothing written: a trace cut inside its header (no record before
the damage) and --align=realtime on a trace without clock anchors.

argv: SIMPLETRACE PIPE-STAGE EXPORT-APP UFTRACE PYTHON3 BT2-PYTHON3 PROTOC PROTO BABELTRACE2
      CHECK-PERFETTO CHECK-CTF CHECK-CHROME
"""
import collections
import json
import os
import re
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from tap import done, ok, run  # noqa: E402
from consumers import consumers  # noqa: E402

FORMATS = (('uftrace', 'data'), ('chrome', 'json'), ('perfetto', 'pftrace'), ('ctf', 'ctf'))
BEGINS = ('_enter', '_begin', '_start')
ENDS = ('_exit', '_end', '_done')


def _order(data):
    """'<' or '>': the byte order of the machine that wrote the trace (from its header's magic)."""
    return '<' if struct.unpack_from('<Q', data, 8)[0] == 0xF2B177CB0AA429B4 else '>'


def event_offsets(data):
    """Byte offsets of the event records of a v4 file (in the writer's byte order)."""
    o = _order(data)
    off = 24
    while off < len(data):
        rtype, = struct.unpack_from(o + 'Q', data, off)
        if rtype == 0:
            off += 20 + struct.unpack_from(o + 'I', data, off + 16)[0]
        else:
            yield off
            off += 8 + struct.unpack_from(o + 'I', data, off + 24)[0]


def declared(data):
    """The event names a v4 file maps (in the writer's byte order)."""
    o = _order(data)
    names, off = set(), 24
    while off < len(data):
        rtype, eid = struct.unpack_from(o + 'QQ', data, off)
        if rtype == 0:
            n = struct.unpack_from(o + 'I', data, off + 16)[0]
            if eid >> 32 == 0:
                names.add(data[off + 20:off + 20 + n].decode())
            off += 20 + n
        else:
            off += 8 + struct.unpack_from(o + 'I', data, off + 24)[0]
    return names


def expected(recs, names):
    """What every format shows of print's records, thread by thread: (kind, name, ts_ns) with kind B (a
    begin whose end is declared: its function), E (an end), I (an instant), and an E closing each call still
    open at the end, at the last record's time, flagged 'closed'."""
    threads, stacks = collections.defaultdict(list), collections.defaultdict(list)
    last = max((x['timestamp_ns'] for x in recs), default=0)
    for x in recs:
        tid, name, ts = x['pid'], x['name'], x['timestamp_ns']
        b = [name[:-len(s)] for s, t in zip(BEGINS, ENDS) if name.endswith(s) and name[:-len(s)] + t in names]
        e = [name[:-len(s)] for s in ENDS if name.endswith(s)]
        if b:
            stacks[tid].append(b[0])
            threads[tid].append(('B', b[0], ts))
        elif e and stacks[tid] and stacks[tid][-1] == e[0]:
            stacks[tid].pop()
            threads[tid].append(('E', e[0], ts))
        else:
            threads[tid].append(('I', name, ts))
    closed = 0
    for tid, st in stacks.items():
        while st:
            threads[tid].append(('E', st.pop(), last, 'closed'))
            closed += 1
    return dict(threads), closed


def chrome_seen(c_stdout):
    """check_chrome.py's listing as expected() tuples."""
    threads = collections.defaultdict(list)
    for line in c_stdout.splitlines()[:-1]:
        tid, ph, name, ts, args = line.split(' ', 4)
        if ph == 'M':
            continue
        us, frac = ts.split('.')
        t = (ph.upper(), name, int(us) * 1000 + int(frac))
        threads[int(tid)].append(t + ('closed',) if '"unfinished":true' in args else t)
    return dict(threads)


def uftrace_seen(dump):
    """uftrace dump's records as expected() tuples (exits of calls closed by the export are not told apart)."""
    threads = collections.defaultdict(list)
    for line in dump.splitlines():
        parts = line.split()
        if len(parts) < 4 or not parts[1].endswith(':') or not parts[2].startswith('['):
            continue
        ts = int(parts[0].replace('.', ''))
        kind = {'[entry]': 'B', '[exit': 'E', '[event]': 'I'}.get(parts[2])
        what = parts[3] if kind != 'E' else parts[4]
        name = what.split('(')[0]
        threads[int(parts[1][:-1])].append((kind, name.replace('simpletrace:', ''), ts))
    return dict(threads)


def strip_closed(threads):
    return {tid: [t[:3] for t in seq] for tid, seq in threads.items()}


def roles(names):
    """check_perfetto.py's EVENT=B:FUNCTION / EVENT=E:FUNCTION for every pair the declarations make: the
    exporter pairs by what is declared, not by what print shows before the cut (a begin whose end came after
    it is still a call, closed at the end)."""
    out = []
    for b, e in zip(BEGINS, ENDS):
        for name in names:
            if name.endswith(b) and name[:-len(b)] + e in names:
                out += ['%s=B:%s' % (name, name[:-len(b)]), '%s%s=E:%s' % (name[:-len(b)], e, name[:-len(b)])]
    return out


def exported(a, fmt, out, trace, printed, recs, want, closed, names):
    """Whether fmt's consumer reads out as holding exactly recs; a diagnostic when not."""
    if fmt == 'chrome':
        c = run(a.python, a.check_chrome, out)
        got = chrome_seen(c.stdout) if c.returncode == 0 else None
        return got == want, c.stdout[-800:] + c.stderr + '\n%s\n%s' % (got, want)
    if fmt == 'uftrace':
        u = run(a.uftrace, 'dump', '-d', out)
        got = uftrace_seen(u.stdout) if u.returncode == 0 else None
        return got == strip_closed(want), u.stdout[-800:] + u.stderr
    if fmt == 'perfetto':
        c = run(a.python, a.check_perfetto, a.protoc, a.proto, out, printed, *roles(names))
        last = c.stdout.splitlines()[-1] if c.stdout else ''
        return c.returncode == 0 and last.split()[-1:] == [str(closed)], c.stdout[-800:] + c.stderr
    c1 = run(a.python, a.check_ctf, 'cli', a.babeltrace, out, printed)
    c2 = run(a.bt2_python, a.check_ctf, 'bt2', out, printed)
    return c1.returncode == 0 and c2.returncode == 0, c1.stdout + c1.stderr + c2.stdout + c2.stderr


def where(message):
    """'byte offset N, record M' of a reader's message."""
    m = re.search(r'byte offset \d+, record \d+', message)
    return m.group(0) if m else '?'


def cut_trace(a, tmp, data, at, label):
    trace = os.path.join(tmp, 'cut-%s.trace' % label)
    with open(trace, 'wb') as f:
        f.write(data[:at])
    p = run(a.cli, 'print', '--format=json', trace)
    printed = trace + '.print.json'
    with open(printed, 'w') as f:
        f.write(p.stdout)
    recs = [json.loads(line) for line in p.stdout.splitlines()]
    names = declared(data)  # the runtime declares every event at the head
    want, closed = expected(recs, names)
    for fmt, ext in FORMATS:
        out = os.path.join(tmp, 'cut-%s.%s' % (label, ext))
        r = run(a.cli, 'export', '-q', '--format=' + fmt, '-o', out, trace)
        if p.returncode == 0:
            status = r.returncode == 0 and r.stderr == ''
        else:
            status = (r.returncode == 1 and 'byte offset ' in r.stderr and r.stderr == p.stderr.replace('simpletrace print:', 'simpletrace export:') +
                      'simpletrace export: %s holds the records before that point\n' % out)
        good, why = (exported(a, fmt, out, trace, printed, recs, want, closed, names) if os.path.exists(out)
                     else (False, ''))
        ok(status and good and len(recs) > 0,
           '%s: %s: %s; the output holds the %d records print shows, %d open calls closed' %
           (label, fmt, 'exit 0, a whole trace' if p.returncode == 0 else
            'exit 1, print\'s message (%s) and what the output holds' % where(p.stderr), len(recs), closed),
           'print %d: %s\nexport %d: %s\n%s' % (p.returncode, p.stderr, r.returncode, r.stderr, why))
        leftover = [n for n in os.listdir(tmp) if '.tmp' in n]
        ok(not leftover, '%s: %s: no temporary left' % (label, fmt), leftover)
    return closed


def refused(a, tmp, trace, extra, label):
    p = run(a.cli, 'print', *extra, trace)
    for fmt, ext in FORMATS:
        out = os.path.join(tmp, 'refused.' + ext)
        r = run(a.cli, 'export', '-q', '--format=' + fmt, '-o', out, *extra, trace)
        ok(r.returncode == 1 and p.returncode == 1 and p.stdout == '' and not os.path.exists(out) and
           'holds the records' not in r.stderr and
           r.stderr == p.stderr.replace('simpletrace print:', 'simpletrace export:'),
           '%s: %s: refused with print\'s message, nothing written' % (label, fmt), r.stderr + p.stderr)


def main():
    a = consumers(('cli', 'stage', 'app', 'uftrace'))
    if a is None:
        return done()
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, 'app.trace')
        r = run(a.app, env=dict(os.environ, SIMPLETRACE='enable=*,file=%s,clock=monotonic' % trace))
        ok(r.returncode == 0, 'export_app ran traced', r.stderr)
        data = open(trace, 'rb').read()
        offs = list(event_offsets(data))
        ok(len(offs) == 53, 'its trace holds 53 event records', len(offs))
        closed = 0
        for at, label in ((offs[len(offs) // 3] + 13, 'inside-record'), (offs[2 * len(offs) // 3] + 3, 'inside-type'),
                          (len(data) - 5, 'inside-last'), (offs[len(offs) // 2], 'boundary')):
            closed += cut_trace(a, tmp, data, at, label)
        ok(closed >= 1, 'the cuts leave calls open (%d in all; the last record ends a request)' % closed)
        with open(trace + '.header', 'wb') as f:
            f.write(data[:10])
        refused(a, tmp, trace + '.header', [], 'cut inside the header')
        bare = os.path.join(tmp, 'bare.trace')  # no description: no clock anchors
        with open(bare, 'wb') as f:
            f.write(struct.pack('<QQQ', 0xFFFFFFFFFFFFFFFF, 0xF2B177CB0AA429B4, 4) +
                    struct.pack('<QQI', 0, 0, 1) + b'x' + struct.pack('<QQI', 0, 0xFFFFFFFE00000000, 7) + b'x(void)' +
                    struct.pack('<QQQII', 1, 0, 1000, 24, 7) + struct.pack('<QQQ', 1, 0, 2000)[:13])
        refused(a, tmp, bare, ['--align=realtime'], '--align=realtime without clock anchors (and damage later)')
    return done()


if __name__ == '__main__':
    sys.exit(main())
