#!/usr/bin/env python3
"""simpletrace info, print --time, and conflicts with given trace-events files.

The demo program is traced (one file, then rotate=64K pieces); checked:
  - `info TRACE`: each fact against what is known of the run (pid, program,
    host from gethostname(), format, embedded declarations), the counts
    against `stats --format=json`, every declared event listed in
    declaration order with its count (0 included), the first record's wall
    time within a minute of the run; `--json` says the same;
  - a rotated trace lists its pieces, and counts them all;
  - a QEMU trace: "not recorded" for the description, counts without
    trace-events files (equal to those with them), exit 0;
  - a truncated trace: the byte offset on stderr, exit 1;
  - `print --time`: the default and delta byte-identical, elapsed equal to
    the old relative, wall times equal to the anchor's arithmetic; a QEMU
    trace under --time=wall is an error naming it; JSON's wall_time;
  - trace-events files that differ from the trace's declarations: each
    conflict once on stderr (a renamed event; different arguments of the
    same sizes), exit 0 as the records still decode, also across rotated
    pieces (each repeats its declarations).

argv: SIMPLETRACE-CLI DEMO TRACE-EVENTS FIXTURES-DIR
"""
import calendar
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))  # tap.py, v4_decode.py
from tap import done, ok, run  # noqa: E402




def declared_names(path):
    """Event names of a trace-events file, in declaration order."""
    names = []
    for line in open(path, encoding='utf-8'):
        line = line.strip()
        if line and not line.startswith('#'):
            names.append(line.replace('disable ', '', 1).split('(', 1)[0].strip())
    return names


def facts(text):
    """The "key: value" lines of info's text output, before the event table."""
    out = {}
    for line in text.splitlines():
        if line.startswith(('declared events:', 'undeclared events:')):
            break
        key, _, value = line.partition(':')
        out[key] = value.strip()
    return out


def event_rows(text, title):
    """(count, name) rows of info's table titled title."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.endswith(':') and not line.startswith(' '):
            inside = line == title
            continue
        m = re.match(r'^\s+(\d+)  (.*)$', line)
        if inside and m:
            rows.append((int(m.group(1)), m.group(2)))
    return rows


def wall_seconds(iso):
    """Seconds since the epoch of a 2026-11-24T19:36:37.123456789Z time."""
    m = re.match(r'^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{9})Z$', iso)
    if not m:
        return None
    return calendar.timegm(time.strptime(m.group(1), '%Y-%m-%dT%H:%M:%S')) + int(m.group(2)) / 1e9


def traced_demo(trace, extra=''):
    env = dict(os.environ, SIMPLETRACE='enable=*,file=' + trace + extra)
    p = subprocess.Popen([DEMO, '--workers', '2', '--jobs', '3000'], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    _, err = p.communicate()
    return p.pid, p.returncode, err


def check_info(trace, pid, started):
    r = run(CLI, 'info', trace)
    ok(r.returncode == 0 and r.stderr == '', 'info TRACE: exit 0, nothing on stderr', r.stderr)
    f = facts(r.stdout)
    ok(f.get('pid') == str(pid), 'info: pid %s is the demo\'s %d' % (f.get('pid'), pid))
    ok(f.get('program') == 'demo', 'info: program demo (%s)' % f.get('program'))
    ok(f.get('exe') == os.path.realpath(DEMO), 'info: exe is the demo\'s path (%s)' % f.get('exe'))
    ok(f.get('host') == socket.gethostname(), 'info: host %s is gethostname()' % f.get('host'))
    ok(f.get('format', '').startswith('simpletrace v4, ') and f.get('declarations', '').startswith('embedded'),
       'info: format v4, declarations embedded', r.stdout)
    ok(f.get('clock') in ('tsc', 'monotonic') or f.get('clock', '').startswith('tsc ('), 'info: a clock', f)
    first = f.get('first record', '').split(', ')
    wall = wall_seconds(first[1]) if len(first) == 2 else None
    ok(wall is not None and abs(wall - started) < 60,
       'info: the first record\'s wall time is within a minute of the run (%s)' % f.get('first record'))
    s = json.loads(run(CLI, 'stats', '--format=json', trace).stdout)
    ok(f.get('events') == str(s['events']) and f.get('dropped records') == str(s['dropped_records']) and
       f.get('dropped events') == str(s['dropped_events']) and
       f.get('records', '').startswith('%d (%d mappings)' % (s['records'], s['mappings'])),
       'info: records, events and drops are what stats counts', (f, s))
    rows = event_rows(r.stdout, 'declared events:')
    ok([name.replace(' (disabled)', '') for _, name in rows] == declared_names(EVENTS),
       'info: every declared event, in declaration order (disabled ones too)', rows)
    per_event = {e['name']: e['count'] for e in s['per_event']}
    ok(all(c == per_event.get(name.replace(' (disabled)', ''), 0) for c, name in rows) and
       any(c == 0 for c, _ in rows), 'info: each event\'s count is stats\', zeros listed', rows)
    j = run(CLI, 'info', '--json', trace)
    o = json.loads(j.stdout)
    ok(j.returncode == 0 and o['pid'] == pid and o['host'] == socket.gethostname() and o['program'] == 'demo' and
       o['events'] == s['events'] and o['declarations'] == 'embedded' and
       [(e['count'], e['name']) for e in o['declared_events']] ==
       [(c, name.replace(' (disabled)', '')) for c, name in rows] and
       o['first_wall'] == first[1] and o['duration_ns'] == o['last_ns'] - o['first_ns'],
       'info --json: one object with the same facts', j.stdout[:2000])
    return o


def check_time(trace, o):
    default = run(CLI, 'print', trace)
    delta = run(CLI, 'print', '--time=delta', trace)
    ok(default.stdout == delta.stdout and default.returncode == 0, 'print --time=delta is the default, byte for byte')
    old = run(CLI, 'print', '--timestamps=relative', trace)
    el = run(CLI, 'print', '--time=elapsed', trace)
    ok(old.stdout == el.stdout and el.stdout.split('\n')[0].split()[1] == '0.000',
       'print --time=elapsed is --timestamps=relative (since the first record)')
    ab = run(CLI, 'print', '--time=absolute', trace).stdout.split('\n')[0].split()
    ok(ab[1] == '%d.%03d' % (o['first_ns'] // 1000, o['first_ns'] % 1000),
       'print --time=absolute: the recorded timestamp in us', ab)
    w = run(CLI, 'print', '--time=wall', trace)
    first = w.stdout.split('\n')[0].split()
    ok(w.returncode == 0 and first[1] == o['first_wall'], 'print --time=wall: the first line at info\'s first_wall',
       (first, o['first_wall']))
    js = run(CLI, 'print', '--format=json', trace).stdout.split('\n')[0]
    rec = json.loads(js)
    ok(rec.get('wall_time') == o['first_wall'] and list(rec)[-1] == 'args', 'print --format=json: "wall_time" (args last)',
       js)


def check_conflicts(trace, tmp, label):
    """job_start's first argument re-typed (same size), debug_checksum (never recorded) renamed: two conflicts."""
    text = open(EVENTS, encoding='utf-8').read()
    text = text.replace('job_start(int worker, uint64_t job)', 'job_start(unsigned worker, uint64_t job_id)')
    text = text.replace('disable debug_checksum(', 'disable debug_sum(')
    changed = os.path.join(tmp, 'changed-events')
    open(changed, 'w').write(text)
    r = run(CLI, 'print', changed, trace)
    want = [
        "simpletrace print: %s: event 'job_start': the trace-events files declare (unsigned worker, uint64_t job_id), "
        "the trace (int worker, uint64_t job); using the trace-events files" % trace,
        "simpletrace print: %s: event 'debug_checksum': the trace declares debug_checksum(uint64_t job, uint32_t sum), "
        "the trace-events files do not declare it (renamed or removed?)" % trace,
    ]
    ok(r.returncode == 0 and r.stderr.splitlines() == want,
       '%s: print with changed trace-events: each conflict once on stderr, exit 0' % label, r.stderr)
    ok('job_id=' in r.stdout, '%s: ... and the given trace-events files win' % label)
    same = run(CLI, 'print', EVENTS, trace)
    ok(same.returncode == 0 and same.stderr == '', '%s: the trace\'s own trace-events file: no conflict' % label,
       same.stderr)
    for cmd in (['stats'], ['info']):
        c = run(CLI, *cmd, changed, trace)
        ok(c.returncode == 0 and len(c.stderr.splitlines()) == 2 and "event 'job_start'" in c.stderr,
           '%s: %s reports the same conflicts' % (label, cmd[0]), c.stderr)


def check_qemu():
    qemu = os.path.join(FIXTURES, 'check_qcow2.bin')
    r = run(CLI, 'info', qemu)
    f = facts(r.stdout)
    ok(r.returncode == 0 and all(f.get(k) == 'not recorded' for k in ('pid', 'program', 'host', 'clock')),
       'QEMU trace: info says "not recorded", exit 0', r.stdout + r.stderr)
    ok(f.get('format') == 'simpletrace v4, little-endian' and f.get('declarations', '').startswith('not embedded'),
       'QEMU trace: format v4, declarations not embedded', f)
    undeclared = event_rows(r.stdout, 'undeclared events:')
    given = run(CLI, 'info', os.path.join(FIXTURES, 'trace-events-all'), qemu)
    declared = event_rows(given.stdout, 'declared events:')
    ok(given.returncode == 0 and len(declared) == 932 and
       sorted(undeclared, key=lambda x: x[1]) == sorted([x for x in declared if x[0]], key=lambda x: x[1]),
       'QEMU trace: counts by mapped name are those with trace-events-all (932 events listed)')
    ok(facts(given.stdout).get('events') == f.get('events') and int(f.get('events', 0)) > 0,
       'QEMU trace: the same event count either way (%s)' % f.get('events'))
    w = run(CLI, 'print', '--time=wall', os.path.join(FIXTURES, 'trace-events-all'), qemu)
    ok(w.returncode == 1 and w.stdout == '' and qemu in w.stderr and 'no clock anchor' in w.stderr,
       'QEMU trace: print --time=wall is an error naming the file, exit 1', w.stderr)
    js = run(CLI, 'print', '--format=json', os.path.join(FIXTURES, 'trace-events-all'), qemu).stdout.split('\n')[0]
    ok('wall_time' not in json.loads(js), 'QEMU trace: JSON lines without wall_time', js)


def main():
    global CLI, DEMO, EVENTS, FIXTURES
    CLI, DEMO, EVENTS, FIXTURES = sys.argv[1:5]
    tmp = tempfile.mkdtemp(prefix='st-info-')
    trace = os.path.join(tmp, 'demo.trace')
    started = time.time()
    pid, rc, err = traced_demo(trace)
    ok(rc == 0, 'the demo runs traced', err)
    o = check_info(trace, pid, started)
    check_time(trace, o)
    check_conflicts(trace, tmp, 'one file')

    rot = os.path.join(tmp, 'rot.trace')
    pid, rc, err = traced_demo(rot, ',rotate=64K')
    pieces = sorted((p for p in os.listdir(tmp) if p.startswith('rot.trace')), key=lambda p: (len(p), p))
    ok(rc == 0 and len(pieces) >= 3, 'the demo writes %d rotated pieces' % len(pieces), err)
    r = run(CLI, 'info', rot)
    f = facts(r.stdout)
    want = '%d: %s' % (len(pieces), ' '.join(os.path.join(tmp, p) for p in pieces))
    ok(r.returncode == 0 and f.get('pieces') == want, 'rotated trace: info lists its pieces', (f.get('pieces'), want))
    s = json.loads(run(CLI, 'stats', '--format=json', rot).stdout)
    ok(f.get('events') == str(s['events']) and f.get('pid') == str(pid), 'rotated trace: counts over every piece')
    check_conflicts(rot, tmp, 'rotated')

    check_qemu()

    data = open(trace, 'rb').read()
    cut = os.path.join(tmp, 'cut.trace')
    open(cut, 'wb').write(data[:len(data) - 5])
    r = run(CLI, 'info', cut)
    m = re.search(r'byte offset (\d+), record \d+: the file ends inside', r.stderr)
    ok(r.returncode == 1 and m and int(m.group(1)) < len(data) - 5 and r.stderr.count('\n') == 1,
       'truncated trace: the byte offset, once, exit 1', r.stderr)
    two = run(CLI, 'info', trace, cut)
    ok(two.returncode == 1 and len(re.findall(r'^trace: ', two.stdout, re.M)) == 2, 'info TRACE TRACE: both described, exit 1 for the bad one')
    return done()


if __name__ == '__main__':
    sys.exit(main())
