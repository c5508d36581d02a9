#!/usr/bin/env python3
"""Damaged, live and piped traces read like whole ones (one pass).

The demo program is traced; its trace is then cut at record boundaries and
inside records (the header, the description, the declarations, event
records), as `kill -9` or a full disk leaves a file. For each cut, without
and with the trace-events file, from a file, standard input, a FIFO and a
process substitution, `simpletrace print` must print every complete record
before the cut (the same lines as the whole trace's first ones), then one
error naming the byte offset and record number of the cut record, exit 1
(exit 0 at a boundary: the file simply ends there). stats, info, merge and
the Python module read the same prefix. A trace still being written is
read while the program runs.

argv: SIMPLETRACE-CLI DEMO TRACE-EVENTS PYTHONPATH ("": the Python module is not checked)
"""
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from tap import done, ok, run  # noqa: E402


def _order(data):
    """'<' or '>': the byte order of the machine that wrote the trace (from its header's magic)."""
    return '<' if struct.unpack_from('<Q', data, 8)[0] == 0xF2B177CB0AA429B4 else '>'


def record_spans(data):
    """(start, end, is_event) of every record after the 24-byte header of a v4 file."""
    spans, off = [], 24
    while off < len(data):
        rtype, = struct.unpack_from(_order(data) + 'Q', data, off)
        if rtype == 0:
            end = off + 20 + struct.unpack_from(_order(data) + 'I', data, off + 16)[0]
        else:
            end = off + 8 + struct.unpack_from(_order(data) + 'I', data, off + 24)[0]
        spans.append((off, end, rtype != 0))
        off = end
    return spans


def cut_points(spans, size):
    """Where to cut: inside the header, after it, the boundaries and middles of the first records (the
    description and declarations), and a spread of event records, boundary and inside."""
    points = {0, 1, 12, 23, 24, 25}
    for start, end, _ in spans[:12]:
        points |= {start + 1, (start + end) // 2, end - 1, end}
    events = [s for s in spans if s[2]]
    for start, end, _ in events[:: max(1, len(events) // 12)]:
        points |= {start, start + 7, start + 8, start + 31, (start + end) // 2, end - 1}
    return sorted(p for p in points if 0 <= p <= size)


def expected(spans, whole_lines, cut):
    """The lines print gives for the trace cut at cut, and where the cut record starts (None at a boundary)."""
    complete = sum(1 for s, e, ev in spans if ev and e <= cut)
    partial = [s for s, e, _ in spans if s < cut < e]
    if cut < 24:
        partial = [0] if cut else [0]
    return whole_lines[:complete], (partial[0] if partial else None)


def error_at(stderr):
    """The byte offset an error names, or None."""
    m = re.search(r'byte offset (\d+), record (\d+)', stderr)
    return int(m.group(1)) if m else None


def check_cut(cli, events_file, path, spans, lines, cut, tmp):
    want, at = expected(spans, lines, cut)
    want_status = 0 if at is None and cut >= 24 else 1
    bad = []
    for how in ('file', 'trace-events', 'stdin', 'fifo', 'substitution'):
        if how == 'file':
            r = run(cli, 'print', path)
        elif how == 'trace-events':
            r = run(cli, 'print', events_file, path)
        elif how == 'stdin':
            with open(path, 'rb') as f:
                r = run(cli, 'print', '-', stdin=f)
        elif how == 'fifo':
            fifo = os.path.join(tmp, 'cut.fifo')
            if os.path.exists(fifo):
                os.unlink(fifo)
            os.mkfifo(fifo)
            feeder = threading.Thread(target=lambda: open(fifo, 'wb').write(open(path, 'rb').read()))
            feeder.start()
            r = run(cli, 'print', fifo, timeout=60)
            feeder.join()
        else:
            r = run('bash', '-c', '"$0" print <(cat "$1")', cli, path)
        got = r.stdout.splitlines()
        where = error_at(r.stderr)
        if got != want or r.returncode != want_status or (want_status and cut >= 24 and where != at) \
                or r.stderr.count('\n') > (1 if want_status else 0):
            bad.append('%s: cut at %d: %d lines (want %d), exit %d (want %d), error at %s (want %s): %s'
                       % (how, cut, len(got), len(want), r.returncode, want_status, where, at, r.stderr.strip()))
    return bad


def stats_events(text):
    m = re.search(r'^events\s+(\d+)', text, re.M) or re.search(r'(\d+) events', text)
    return int(m.group(1)) if m else None


def main():
    cli, demo, events_file, pythonpath = (os.path.abspath(a) for a in sys.argv[1:5])
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, 'demo.trace')
        r = run(demo, '--workers', '2', '--jobs', '300', env=dict(os.environ, SIMPLETRACE='enable=*,file=' + trace))
        data = open(trace, 'rb').read()
        spans = record_spans(data)
        whole = run(cli, 'print', trace)
        lines = whole.stdout.splitlines()
        ok(r.returncode == 0 and whole.returncode == 0 and len(lines) > 500,
           'the demo traced and printed whole (%d records)' % len(lines), r.stderr + whole.stderr)

        cut = os.path.join(tmp, 'cut.trace')
        points = cut_points(spans, len(data))
        bad = []
        for p in points:
            open(cut, 'wb').write(data[:p])
            bad += check_cut(cli, events_file, cut, spans, lines, p, tmp)
        ok(not bad, 'cut at %d places (boundaries and inside records): every complete record first, then one '
           'error at the cut record, from a file, with trace-events, stdin, a FIFO, a process substitution'
           % len(points), '\n'.join(bad))

        # Garbage after a valid prefix: the prefix, then the error where it starts.
        events = [s for s in spans if s[2]]
        mid = events[len(events) // 2][0]
        open(cut, 'wb').write(data[:mid] + b'\x07' * 64)
        r = run(cli, 'print', cut)
        want, _ = expected(spans, lines, mid)
        ok(r.returncode == 1 and r.stdout.splitlines() == want and error_at(r.stderr) == mid,
           'garbage after a valid prefix: the prefix, then the error at its byte offset', r.stderr)

        # The other readers on a trace cut inside an event record.
        at = events[len(events) // 2]
        point = (at[0] + at[1]) // 2
        open(cut, 'wb').write(data[:point])
        want, _ = expected(spans, lines, point)
        s = run(cli, 'stats', cut)
        ok(s.returncode == 1 and 'byte offset %d' % at[0] in s.stderr and str(len(want)) in s.stdout,
           'stats of a cut trace: the table of what was read, then the error', s.stdout + s.stderr)
        i = run(cli, 'info', cut)
        ok(i.returncode == 1 and 'embedded' in i.stdout and 'byte offset %d' % at[0] in i.stderr,
           'info of a cut trace: what it read (its declarations embedded), and where it stopped', i.stdout + i.stderr)
        out = os.path.join(tmp, 'merged.trace')
        m = run(cli, 'merge', '-o', out, cut)
        back = run(cli, 'print', out)
        ok(m.returncode == 1 and 'byte offset %d' % at[0] in m.stderr and back.returncode == 0 and
           [x.split(' ', 1)[0] for x in back.stdout.splitlines()] == [x.split(' ', 1)[0] for x in want],
           'merge of a cut trace writes the records before the damage, says where it stopped, exit 1', m.stderr)

        # The Python module (run as python-damaged): the same records, then TraceError with the offset.
        code = ('import sys, simpletrace\n'
                'for source in (sys.argv[1], open(sys.argv[1], "rb"), open(sys.argv[1], "rb").read()):\n'
                '    n = 0\n'
                '    try:\n'
                '        for rec in simpletrace.open(source):\n'
                '            n += 1\n'
                '    except simpletrace.TraceError as e:\n'
                '        print(n, e.offset)\n')
        if pythonpath != os.path.abspath(''):
            py = run(sys.executable, '-c', code, cut, env=dict(os.environ, PYTHONPATH=pythonpath))
            ok(py.returncode == 0 and py.stdout.split() == [str(len(want)), str(at[0])] * 3,
               'Python, without trace-events, from a path, a file object and bytes: every record before the '
               'damage, then TraceError at its byte offset', py.stdout + py.stderr)

        # A 0-byte file is an empty trace, not a trace-events file.
        empty = os.path.join(tmp, 'empty.trace')
        open(empty, 'wb').close()
        r = run(cli, 'print', empty)
        ok(r.returncode == 1 and 'empty' in r.stderr and 'trace-events' not in r.stderr,
           'a 0-byte trace: an empty trace, exit 1', r.stderr)

        # A trace still being written: stats and print read what is there, cleanly cut or not.
        live = os.path.join(tmp, 'live.trace')
        proc = subprocess.Popen([demo, '--workers', '2', '--jobs', '200000'], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL,
                                env=dict(os.environ, SIMPLETRACE='enable=*,file=' + live))
        try:
            seen = []
            for _ in range(200):
                if os.path.exists(live) and os.path.getsize(live) > 200000:
                    break
                proc.wait(timeout=0.05) if proc.poll() is not None else None
                threading.Event().wait(0.02)
            for cmd in ('print', 'stats'):
                r = run(cli, cmd, live)
                seen.append((cmd, r.returncode, len(r.stdout), r.stderr.strip()))
        finally:
            proc.kill()
            proc.wait()
        ok(all(code in (0, 1) and n > 0 and (code == 0 or 'byte offset' in err) for _, code, n, err in seen),
           'a trace being written: print and stats read what is there (the last record maybe cut)', seen)
    return done()


if __name__ == '__main__':
    sys.exit(main())
