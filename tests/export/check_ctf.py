#!/usr/bin/env python3
"""Checks a CTF trace written by `simpletrace export --format=ctf` by reading
it with babeltrace2, and compares it with `simpletrace print --format=json`.

    check_ctf.py cli BABELTRACE2 DIR PRINT_JSON   the babeltrace2 command's text
    check_ctf.py bt2 DIR PRINT_JSON               babeltrace2's Python bindings (run
                                                  by a python3 that has bt2)

Thread by thread (the packet context's tid = print's pid field) and in
order, every event's name, timestamp (clock cycles = print's timestamp_ns)
and fields (names, values; with bt2 also their types: signed or unsigned
integers, an enum for bool, pointers displayed in hex, strings) must equal
print's records; a dropped record is an event Dropped_Event with
num_events_dropped. The losses babeltrace2 reports from the packets'
events_discarded must add up to the dropped records' counts. With bt2: the
wall-clock time of each event (ns from the clock's origin) is its timestamp
plus the one clock's offset, which is print's (wall_time - timestamp_ns) of
one process (several processes' anchors, sampled apart, may differ by
nanoseconds; more than a millisecond fails); the packet context's pid is
one of the processes the environment lists (processK_pid).

Babeltrace 2.0.4 (Debian 12) has one known bug: an empty string field may
be shown with the value of an earlier event's string (the same field of an
earlier event of its class: the reader reuses the field). Exactly that is
allowed (and counted); any other difference fails.

Prints "ok EVENTS KNOWN_BUG DISCARDED" or "error: ..." and exits 1.
"""
import json
import re
import subprocess
import sys
from datetime import datetime, timezone


def fail(msg):
    print("error: " + msg)
    sys.exit(1)


def wall_ns(iso):
    """'2026-11-24T19:36:37.123456789Z' -> ns since the epoch."""
    secs, frac = iso.rstrip('Z').split('.')
    dt = datetime.strptime(secs, '%Y-%m-%dT%H:%M:%S').replace(tzinfo=timezone.utc)
    return int(dt.timestamp()) * 1000000000 + int(frac.ljust(9, '0'))


# --- reading with the babeltrace2 command ------------------------------------------------

LINE = re.compile(r'^\[(\d+)\] \([^)]*\) ([^:]+): \{ (.*?) \}(?:, \{ (.*) \})?$')
CTX = re.compile(r'(\w+) = (\d+)')
VALUE = re.compile(r'\s*(\w+) = ("(?:[^"\\]|\\.)*"|\( "(\w+)" : container = (\d+) \)|0x[0-9a-fA-F]+|-?\d+)\s*(,|$)')
C_ESCAPES = {'n': '\n', 't': '\t', 'r': '\r', 'a': '\a', 'b': '\b', 'f': '\f', 'v': '\v', '\\': '\\', '"': '"'}


def c_unescape(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == '\\' and i + 1 < len(s):
            if s[i + 1] == 'x':
                out.append(chr(int(s[i + 2:i + 4], 16)))
                i += 4
                continue
            out.append(C_ESCAPES.get(s[i + 1], s[i + 1]))
            i += 2
            continue
        out.append(s[i])
        i += 1
    return ''.join(out)


def parse_fields(text):
    fields, pos = [], 0
    while pos < len(text):
        m = VALUE.match(text, pos)
        if not m:
            fail("cannot parse babeltrace2 fields %r" % text[pos:])
        name, raw, label, container = m.group(1), m.group(2), m.group(3), m.group(4)
        if label is not None:
            v = ('bool', label == 'true', int(container))
        elif raw.startswith('"'):
            v = ('string', c_unescape(raw[1:-1]))
        elif raw.startswith('0x'):
            v = ('pointer', int(raw, 16))
        else:
            v = ('int', int(raw))
        fields.append((name, v))
        pos = m.end()
    return fields


def read_cli(babeltrace2, path):
    r = subprocess.run([babeltrace2, '--clock-cycles', path], capture_output=True)
    if r.returncode != 0:
        fail("babeltrace2 failed: %s" % r.stderr.decode(errors='replace')[-800:])
    events = []
    for line in r.stdout.decode('utf-8').splitlines():
        m = LINE.match(line)
        if not m:
            fail("cannot parse babeltrace2 line %r" % line)
        ctx = dict((k, int(v)) for k, v in CTX.findall(m.group(3)))
        events.append({'ts': int(m.group(1)), 'name': m.group(2), 'tid': ctx['tid'], 'pid': ctx['pid'],
                       'fields': parse_fields(m.group(4) or '')})
    discarded = sum(int(n) for n in re.findall(r'Tracer discarded (\d+) events', r.stderr.decode()))
    return events, discarded, None


# --- reading with the Python bindings ------------------------------------------------------

def bt2_value(bt2, f):
    if isinstance(f, bt2._EnumerationFieldConst):
        return ('bool', list(f.labels) == ['true'], int(f))
    if isinstance(f, bt2._StringFieldConst):
        return ('string', str(f))
    if isinstance(f, bt2._IntegerFieldConst):
        if f.cls.preferred_display_base == 16:
            return ('pointer', int(f))
        return ('int' if isinstance(f, bt2._SignedIntegerFieldConst) else 'uint', int(f))
    fail("field of an unexpected class %s" % type(f).__name__)


def read_bt2(path):
    import bt2
    events, discarded, env = [], 0, None
    for m in bt2.TraceCollectionMessageIterator(path):
        if isinstance(m, bt2._DiscardedEventsMessageConst):
            discarded += m.count or 0
        if not isinstance(m, bt2._EventMessageConst):
            continue
        e = m.event
        if env is None:
            env = {k: (str(v) if isinstance(v, bt2._StringValueConst) else int(v))
                   for k, v in e.stream.trace.environment.items()}
        ctx = e.packet.context_field
        events.append({'ts': m.default_clock_snapshot.value, 'wall': m.default_clock_snapshot.ns_from_origin,
                       'name': e.name, 'tid': int(ctx['tid']), 'pid': int(ctx['pid']),
                       'fields': [(k, bt2_value(bt2, v)) for k, v in e.payload_field.items()]})
    return events, discarded, env


# --- comparing ----------------------------------------------------------------------------------

def same(got, want, typed):
    kind = got[0]
    if isinstance(want, dict):  # a char: {"value":N,"char":"C"}
        want = want['value']
    if isinstance(want, bool):
        return kind == 'bool' and got[1] == want and got[2] == int(want)
    if isinstance(want, int):
        if typed and (kind == 'uint') != (want >= 0 and kind != 'int'):
            return False
        return kind in ('int', 'uint') and got[1] == want
    if isinstance(want, str) and want.startswith('0x') and kind == 'pointer':
        return got[1] == int(want, 16)
    return kind == 'string' and got[1] == want


def main():
    mode = sys.argv[1]
    if mode == 'cli':
        events, discarded, env = read_cli(sys.argv[2], sys.argv[3])
        print_json = sys.argv[4]
    else:
        events, discarded, env = read_bt2(sys.argv[2])
        print_json = sys.argv[3]
    recs = [json.loads(line) for line in open(print_json, encoding='utf-8') if line.strip()]
    by_tid, got_tid = {}, {}
    for rec in recs:
        by_tid.setdefault(rec['pid'], []).append(rec)
    for ev in events:
        got_tid.setdefault(ev['tid'], []).append(ev)
    if sorted(by_tid) != sorted(got_tid):
        fail("threads %s, print has %s" % (sorted(got_tid), sorted(by_tid)))
    known_bug, seen, dropped, offsets, print_offsets = 0, {}, 0, set(), set()  # seen: (event, field) -> strings shown
    # Order of the bug's "earlier event": babeltrace2's own order, so walk its events in that order.
    position = {id(ev): i for i, ev in enumerate(events)}
    pairs = []
    for tid, want in by_tid.items():
        got = got_tid[tid]
        if len(got) != len(want):
            fail("thread %d: %d events, print has %d records" % (tid, len(got), len(want)))
        pairs += zip(got, want)
    pairs.sort(key=lambda p: position[id(p[0])])
    pids = [env['process%d_pid' % k] for k in range(env['processes'])] if env is not None else []
    for ev, rec in pairs:
        where = "thread %d, %s at %d" % (ev['tid'], rec['name'], rec['timestamp_ns'])
        if ev['name'] != rec['name'] or ev['ts'] != rec['timestamp_ns']:
            fail("%s: babeltrace2 shows %s at %d" % (where, ev['name'], ev['ts']))
        if 'wall' in ev and 'wall_time' in rec:
            offsets.add(ev['wall'] - ev['ts'])
            print_offsets.add(wall_ns(rec['wall_time']) - rec['timestamp_ns'])
        if env is not None and ev['pid'] not in pids:
            fail("%s: packet context pid %d, none of the trace's processes %s" % (where, ev['pid'], pids))
        want_fields = list(rec['args'].items())
        if [f[0] for f in ev['fields']] != [f[0] for f in want_fields]:
            fail("%s: fields %s, want %s" % (where, [f[0] for f in ev['fields']], [f[0] for f in want_fields]))
        for (name, got), (_, want) in zip(ev['fields'], want_fields):
            if same(got, want, mode == 'bt2'):
                pass
            elif want == '' and got[0] == 'string' and got[1] in seen.get((ev['name'], name), ()):
                known_bug += 1  # babeltrace 2.0.4: an empty string shown with an earlier event's value
            else:
                fail("%s: %s = %r, want %r" % (where, name, got, want))
            if got[0] == 'string':
                seen.setdefault((ev['name'], name), set()).add(got[1])
        if rec['name'] == 'Dropped_Event':
            dropped += rec['args']['num_events_dropped']
    # One clock: every event's wall time is its timestamp plus one offset, the clock anchor of one of the
    # processes; the others' anchors (sampled apart) may differ by a few ns, not more than a millisecond.
    if offsets and (len(offsets) != 1 or not offsets <= print_offsets or
                    max(print_offsets) - min(print_offsets) > 1000000):
        fail("wall-clock offsets %s, print's %s" % (sorted(offsets), sorted(print_offsets)))
    if discarded != dropped:
        fail("babeltrace2 reports %d discarded events, the dropped records count %d" % (discarded, dropped))
    if env is not None and env.get('tracer_name') != 'simpletrace':
        fail("environment %r" % env)
    print("ok %d %d %d" % (len(events), known_bug, discarded))


main()
