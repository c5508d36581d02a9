#!/usr/bin/env python3
"""A trace read without its trace-events file, and unchanged for QEMU's reader.

The demo program is traced; its file carries its own description and
declarations (src/format/meta_format.h). Checked here:
  - a reader that knows what QEMU's scripts/simpletrace.py knows
    (v4_decode.py: record types 0 and 1 only, every mapping name decoded as
    strict UTF-8 and stored by ID, records printed in its text format)
    reads the file without an error and prints exactly what `simpletrace
    print TRACE-EVENTS TRACE` prints: the embedded records change nothing
    for it;
  - `simpletrace print TRACE` (no trace-events file) prints the same text,
    and stats/export without it give what they give with it;
  - stats: the records total is the sum of its parts (self-description
    records counted here), AVG/s is the count over the trace's duration;
  - a QEMU trace, which carries no declarations, says to give its
    trace-events files, exit 1.

argv: SIMPLETRACE-CLI DEMO TRACE-EVENTS FIXTURES-DIR
"""
import json
import os
import re
import struct
import sys
import tempfile

from tap import done, ok, run
from v4_decode import parse_events, qemu_like_text


def _order(data):
    """'<' or '>': the byte order of the machine that wrote the trace (from its header's magic)."""
    return '<' if struct.unpack_from('<Q', data, 8)[0] == 0xF2B177CB0AA429B4 else '>'


def event_offsets(data):
    """Byte offsets of the event records of a v4 file."""
    off = 24
    while off < len(data):
        rtype, = struct.unpack_from(_order(data) + 'Q', data, off)
        if rtype == 0:
            off += 20 + struct.unpack_from(_order(data) + 'I', data, off + 16)[0]
        else:
            yield off
            off += 8 + struct.unpack_from(_order(data) + 'I', data, off + 24)[0]


def meta_counts(data):
    desc = decls = 0
    off = 24
    while off < len(data):
        rtype, eid = struct.unpack_from(_order(data) + 'QQ', data, off)
        if rtype == 0:
            length, = struct.unpack_from(_order(data) + 'I', data, off + 16)
            desc += eid == 0xFFFFFFFFFFFFFF00
            decls += eid >> 32 == 0xFFFFFFFE
            off += 20 + length
        else:
            off += 8 + struct.unpack_from(_order(data) + 'I', data, off + 24)[0]
    return desc, decls



def main():
    cli, demo, events_file, fixtures = (os.path.abspath(a) for a in sys.argv[1:5])
    tmp = tempfile.mkdtemp(prefix='st-selfdesc-')
    trace = os.path.join(tmp, 'demo.trace')
    env = dict(os.environ, SIMPLETRACE='enable=*,file=' + trace)
    r = run(demo, '--workers', '2', '--jobs', '50', env=env)
    ok(r.returncode == 0, 'the demo runs traced', r.stderr)
    data = open(trace, 'rb').read()
    events = parse_events(events_file)
    desc, decls = meta_counts(data)
    ok(desc == 1 and decls == len(events) - 1,
       'the file carries a description and a declaration per event (%d, %d)' % (desc, decls))
    try:
        qemu_text, err = qemu_like_text(events, data), ''
    except (ValueError, KeyError, UnicodeDecodeError, struct.error) as e:
        qemu_text, err = None, repr(e)
    ok(qemu_text is not None, "a reader knowing only QEMU's record types reads it", err)
    with_te = run(cli, 'print', events_file, trace)
    ok(with_te.returncode == 0 and qemu_text == with_te.stdout,
       "... and prints what `print TRACE-EVENTS TRACE` prints", with_te.stderr)
    alone = run(cli, 'print', trace)
    ok(alone.returncode == 0 and alone.stdout == with_te.stdout and alone.stderr == '',
       '`print TRACE` without trace-events prints the same', alone.stderr)
    s1, s2 = run(cli, 'stats', events_file, trace), run(cli, 'stats', trace)
    ok(s2.returncode == 0 and s1.stdout == s2.stdout, '`stats TRACE` gives the same table', s2.stderr)
    # The records total as parts that add up, the self-description records counted here independently.
    m = re.search(r'^records +(\d+) = (\d+) events \+ (\d+) dropped-event records \+ (\d+) event mappings '
                  r'\+ (\d+) self-description records$', s2.stdout, re.M)
    parts = [int(x) for x in m.groups()] if m else [0] * 5
    ok(m and parts[0] == sum(parts[1:]) and parts[4] == desc + decls,
       'stats: records %d = the sum of its parts, %d of them self-description records (a description, %d '
       'declarations)' % (parts[0], desc + decls, decls), s2.stdout)
    for args in ([], ['--events=job_*']):
        j = run(cli, 'stats', '--format=json', *args, trace)
        st = json.loads(j.stdout) if j.returncode == 0 else {}
        total = sum(st.get(k, 0) for k in ('events', 'dropped_records', 'filtered', 'mappings',
                                            'self_description_records'))
        ok(st and st['records'] == total and st['self_description_records'] == desc + decls,
           'stats --format=json %s: records = events + dropped_records + filtered + mappings + '
           'self_description_records' % ' '.join(args), j.stdout + j.stderr)
        avg = [(e['avg_per_s'], e['count'] * 1e9 / st['duration_ns']) for e in st.get('per_event', [])]
        ok(avg and all(abs(a - want) <= 1e-3 + want * 1e-9 for a, want in avg),
           'stats --format=json %s: avg_per_s is the count over the whole trace\'s duration' % ' '.join(args), avg)
    head = s2.stdout.splitlines()[0].split() if s2.stdout else []
    ok(head[-1:] == ['AVG/s'] and 'AVG/s = COUNT / duration' in s2.stdout,
       'stats: the column says it is an average, the duration line over what', s2.stdout)
    j1, j2 = os.path.join(tmp, '1.json'), os.path.join(tmp, '2.json')
    e1, e2 = run(cli, 'export', '-o', j1, events_file, trace), run(cli, 'export', '-o', j2, trace)
    ok(e2.returncode == 0 and open(j1).read() == open(j2).read(), '`export TRACE` writes the same JSON', e2.stderr)
    # A name declared again under a later ID (a group unloaded and registered again): the same
    # declaration is one event whose records come under both IDs; a different one is refused, named.
    def redeclared(decl, args):
        name = b'demo_stop'
        path = os.path.join(tmp, 'again-%d.trace' % len(args))
        ts = max(struct.unpack_from(_order(data) + 'Q', data, off + 16)[0] for off in event_offsets(data)) + 1
        o = _order(data)  # records added in the trace's own byte order
        extra = (struct.pack(o + 'QQI', 0, 100, len(name)) + name
                 + struct.pack(o + 'QQI', 0, 0xFFFFFFFE00000000 + 100, len(decl)) + decl
                 + struct.pack(o + 'QQQII', 1, 100, ts, 24 + len(args), 7) + args)
        open(path, 'wb').write(data + extra)
        return path, run(cli, 'print', path)
    path, a = redeclared(b'demo_stop(void) "all jobs done"', b'')
    ok(a.returncode == 0 and a.stdout.count('demo_stop ') == 2 and a.stdout.endswith(' pid=7 \n'),
       'a name declared again, the same way, under a later ID: both IDs decode as that event', a.stderr)
    path, a = redeclared(b'demo_stop(int code) "code %d"', struct.pack(_order(data) + 'Q', 42))
    ok(a.returncode == 1 and "event 'demo_stop' is declared twice, differently" in a.stderr and path in a.stderr
       and a.stdout.count('demo_stop ') == 1,
       '... declared differently: the records before it, then an error naming the event and the file', a.stderr)
    # A flight-recorder snapshot (taken at exit: the trigger is the last event) reads on its own too.
    snapdir = os.path.join(tmp, 'flight')
    os.mkdir(snapdir)
    r = run(demo, '--workers', '2', '--jobs', '50', cwd=snapdir,
            env=dict(os.environ, SIMPLETRACE='enable=*,flight=1M,flight-trigger=demo_stop'))
    snaps = sorted(os.listdir(snapdir))
    snap = os.path.join(snapdir, snaps[0]) if snaps else None
    ok(r.returncode == 0 and len(snaps) == 1, 'flight-trigger on the last event: one snapshot (%s)' % snaps, r.stderr)
    if snap:
        p1, p2 = run(cli, 'print', events_file, snap), run(cli, 'print', snap)
        ok(p2.returncode == 0 and p2.stdout == p1.stdout and 'demo_stop' in p2.stdout,
           '`print SNAPSHOT` without trace-events prints what it prints with them', p2.stderr)
    else:
        ok(False, '`print SNAPSHOT` without trace-events (no snapshot)')
    qemu = os.path.join(fixtures, 'create_qcow2.bin')
    q = run(cli, 'print', qemu)
    ok(q.returncode == 1 and q.stdout == '' and 'carries no event declarations' in q.stderr
       and 'give its trace-events files' in q.stderr, 'a QEMU trace alone: says to give its trace-events, exit 1',
       q.stderr)
    te = run(cli, 'print', events_file)
    ok(te.returncode == 2 and 'need the TRACE-FILE' in te.stderr, 'a trace-events file alone: usage error, exit 2',
       te.stderr)
    return done()


if __name__ == '__main__':
    sys.exit(main())
