#!/usr/bin/env python3
"""Exports of traces whose declarations arrive during the run: the catalog
grows while the exporter reads (reader.h, "Catalogs that grow").

Checked here, in the four formats, each read by its real consumer:
  - a v4 file built by hand whose events are declared one by one between
    records (as `simpletrace merge` writes them): a_begin's first records
    come before a_end is declared, so they are instants and the first
    a_end is an end without a begin; the next a_begin/a_end is a call, a
    pair declared later (b_start/b_done, under a --pair rule naming it)
    nests inside it, a later event brings new argument names (Perfetto's
    interned annotations) to a thread that already has a sequence, and a
    --pair rule that pairs nothing is reported at the end while the one
    that paired late is not;
  - `simpletrace merge` of two different programs' traces (the pipe_stage
    pipeline of tests/e2e/pipe and export_app): the second program's
    events are declared in the middle of the file. CTF against `print
    --format=json` with babeltrace2 and python3-bt2, Perfetto against it
    with protoc (every event, typed arguments), Chrome and uftrace event by
    event.

argv: SIMPLETRACE PIPE-STAGE EXPORT-APP UFTRACE PYTHON3 BT2-PYTHON3 PROTOC PROTO BABELTRACE2
      CHECK-PERFETTO CHECK-CTF CHECK-CHROME
"""
import collections
import json
import os
import struct
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from tap import done, ok, run  # noqa: E402
from consumers import consumers  # noqa: E402

DECL_BASE = 0xFFFFFFFE00000000
DROPPED_ID = 0xFFFFFFFFFFFFFFFE
NUM = lambda v: struct.pack('<Q', v)  # noqa: E731
STR = lambda s: struct.pack('<I', len(s)) + s  # noqa: E731


def declare(i, name, decl):
    """A mapping record for ID i and its declaration record."""
    return (struct.pack('<QQI', 0, i, len(name)) + name.encode() +
            struct.pack('<QQI', 0, DECL_BASE + i, len(decl)) + decl.encode())


def event(i, ts, tid, payload=b''):
    return struct.pack('<QQQII', 1, i, ts, 24 + len(payload), tid) + payload


def late_trace(path):
    b = struct.pack('<QQQ', 0xFFFFFFFFFFFFFFFF, 0xF2B177CB0AA429B4, 4)
    b += declare(0, 'a_begin', 'a_begin(uint64_t n) "n %" PRIu64')
    b += event(0, 1000, 100, NUM(1))
    b += event(0, 1100, 200, NUM(1))
    b += declare(1, 'a_end', 'a_end(uint64_t n, const char *why) "n %" PRIu64 " %s"')
    b += event(1, 2000, 100, NUM(1) + STR(b'first'))
    b += event(0, 3000, 100, NUM(2))
    b += declare(2, 'b_start', 'b_start(int k) "k %d"') + declare(3, 'b_done', 'b_done(int k) "k %d"')
    b += event(2, 3500, 100, NUM(7))
    b += declare(4, 'mid_note', 'mid_note(const char *text, bool flag) "%s %d"')
    b += event(4, 3600, 100, STR(b'x') + NUM(1))
    b += event(3, 3700, 100, NUM(7))
    b += event(1, 4000, 100, NUM(2) + STR(b'second'))
    b += event(4, 4100, 200, STR(b'y') + NUM(0))
    b += event(1, 4200, 200, NUM(1) + STR(b'other'))
    b += struct.pack('<QQQII', 1, DROPPED_ID, 4300, 32, 100) + NUM(3)
    with open(path, 'wb') as f:
        f.write(b)


# What each consumer shows of late_trace: thread by thread, in order.
LATE_CHROME = '''100 i a_begin 1.000 {"n":1}
100 i a_end 2.000 {"n":1,"why":"first"}
100 B a 3.000 {"n":2}
100 B bee 3.500 {"k":7}
100 i mid_note 3.600 {"text":"x","flag":true}
100 E bee 3.700 {"k":7}
100 E a 4.000 {"n":2,"why":"second"}
100 i dropped 4.300 {"count":3}
200 i a_begin 1.100 {"n":1}
200 i mid_note 4.100 {"text":"y","flag":false}
200 i a_end 4.200 {"n":1,"why":"other"}'''
LATE_PERFETTO = '''100 1000 INSTANT a_begin n=uint:1
100 2000 INSTANT a_end n=uint:1,why=string:first
100 3000 SLICE_BEGIN a n=uint:2
100 3500 SLICE_BEGIN bee k=int:7
100 3600 INSTANT mid_note text=string:x,flag=bool:True
100 3700 SLICE_END - k=int:7
100 4000 SLICE_END - n=uint:2,why=string:second
100 4300 INSTANT dropped count=uint:3
200 1100 INSTANT a_begin n=uint:1
200 4100 INSTANT mid_note text=string:y,flag=bool:False
200 4200 INSTANT a_end n=uint:1,why=string:other'''
LATE_UFTRACE = '''[100] /* simpletrace:a_begin */
[100] /* simpletrace:a_end */
[100] a() {
[100] bee() {
[100] /* simpletrace:mid_note */
[100] } /* bee */
[100] } /* a */
[200] /* simpletrace:a_begin */
[200] /* simpletrace:mid_note */
[200] /* simpletrace:a_end */'''


def by_thread(lines):
    """Lines 'TID ...' (or '[TID] ...') grouped by thread, in order within each, threads sorted."""
    groups = collections.OrderedDict()
    for line in lines:
        tid = line.split(' ')[0].strip('[]')
        groups.setdefault(int(tid), []).append(line)
    return [line for tid in sorted(groups) for line in groups[tid]]


def uftrace_lines(text):
    """uftrace replay's lines without the duration column and indentation: '[TID] WHAT'."""
    out = []
    for line in text.splitlines():
        if '|' not in line or line.startswith('#'):
            continue
        left, what = line.split('|', 1)
        out.append('[%s] %s' % (left.split('[')[1].split(']')[0].strip(), what.strip()))
    return out


def print_json(a, trace, tmp, name):
    out = os.path.join(tmp, name + '.print.json')
    r = run(a.cli, 'print', '--format=json', trace)
    with open(out, 'w') as f:
        f.write(r.stdout)
    return out, [json.loads(line) for line in r.stdout.splitlines()]


def check_ctf(a, out, printed, what):
    c = run(a.python, a.check_ctf, 'cli', a.babeltrace, out, printed)
    ok(c.returncode == 0, '%s: ctf: babeltrace2 reads every record as print shows it' % what, c.stdout + c.stderr)
    c = run(a.bt2_python, a.check_ctf, 'bt2', out, printed)
    ok(c.returncode == 0, '%s: ctf: python3-bt2 too, fields typed as declared' % what, c.stdout + c.stderr)


def late(a, tmp):
    trace = os.path.join(tmp, 'late.trace')
    late_trace(trace)
    printed, recs = print_json(a, trace, tmp, 'late')
    ok(len(recs) == 11, 'late: print reads the hand-built file (11 records)', len(recs))
    rules = ['--pair=never_a:never_b', '--pair=b_start:b_done=bee']
    out = os.path.join(tmp, 'late.json')
    r = run(a.cli, 'export', '-o', out, *rules, trace)
    ok(r.returncode == 0 and '--pair=never_a:never_b pairs no declared events' in r.stderr and 'b_start:b_done' not in r.stderr
       and '2 calls of 2 functions' in r.stderr and '2 ends without a begin' in r.stderr,
       'late: chrome export; the rule that paired late is not reported unused, the one that paired nothing is',
       r.stderr)
    c = run(a.python, a.check_chrome, out)
    body = [l for l in c.stdout.splitlines()[:-1] if ' M ' not in l]
    ok(c.returncode == 0 and by_thread(body) == LATE_CHROME.splitlines(),
       'late: chrome: an instant until the end is declared, a call after, the late pair nested in it',
       c.stdout + c.stderr)

    out = os.path.join(tmp, 'late.pftrace')
    r = run(a.cli, 'export', '-q', '--format=perfetto', '-o', out, *rules, trace)
    c = run(a.python, a.check_perfetto, a.protoc, a.proto, out, '-')
    ok(r.returncode == 0 and c.returncode == 0 and by_thread(c.stdout.splitlines()[:-1]) == LATE_PERFETTO.splitlines(),
       'late: perfetto: protoc decodes it, every name interned before use on each sequence (thread 200 '
       'learns names declared after it began), the same events', r.stderr + c.stdout[-1500:] + c.stderr)

    out = os.path.join(tmp, 'late.ctf')
    r = run(a.cli, 'export', '-q', '--format=ctf', '-o', out, *rules, trace)
    ok(r.returncode == 0, 'late: ctf export', r.stderr)
    check_ctf(a, out, printed, 'late')
    meta = open(os.path.join(out, 'metadata')).read() if r.returncode == 0 else ''
    ok('name = "Dropped_Event";\n\tid = 0;' in meta and 'name = "mid_note";\n\tid = 5;' in meta,
       'late: ctf: class ids are catalog indices (Dropped_Event 0, the k-th declared event k)', meta[-800:])

    out = os.path.join(tmp, 'late.data')
    r = run(a.cli, 'export', '-q', '--format=uftrace', '-o', out, *rules, trace)
    u = run(a.uftrace, 'replay', '-d', out, '--event-full')
    ok(r.returncode == 0 and u.returncode == 0 and by_thread(uftrace_lines(u.stdout)) == LATE_UFTRACE.splitlines(),
       'late: uftrace replays the same calls and events', r.stderr + u.stdout + u.stderr)
    events = open(os.path.join(out, 'events.txt')).read() if r.returncode == 0 else ''
    ok(sorted(events.splitlines()) == ['EVENT: 1000001 simpletrace:a_begin', 'EVENT: 1000002 simpletrace:a_end',
                                       'EVENT: 1000005 simpletrace:mid_note'],
       'late: uftrace: events.txt lists the events used, by catalog index, Dropped_Event never', events)


def _order(data):
    """'<' or '>': the byte order of the machine that wrote the trace (from its header's magic)."""
    return '<' if struct.unpack_from('<Q', data, 8)[0] == 0xF2B177CB0AA429B4 else '>'


def declarations_after_first_event(path):
    """Declaration records that come after the first event record of a v4 file."""
    data = open(path, 'rb').read()
    o = _order(data)
    off, seen_event, late_decls = 24, False, 0
    while off < len(data):
        rtype, eid = struct.unpack_from(o + 'QQ', data, off)
        if rtype == 0:
            late_decls += seen_event and eid >> 32 == DECL_BASE >> 32
            off += 20 + struct.unpack_from(o + 'I', data, off + 16)[0]
        else:
            seen_event = True
            off += 8 + struct.unpack_from(o + 'I', data, off + 24)[0]
    return late_decls


def declare_late(src, dst):
    """A copy of the v4 file src whose events are each mapped and declared right before their first record (as
    a writer does for a group loaded late), not at the head: their declarations then arrive between records."""
    data = open(src, 'rb').read()
    o = _order(data)
    head, body, held, off = bytearray(data[:24]), bytearray(), {}, 24
    while off < len(data):
        rtype, eid = struct.unpack_from(o + 'QQ', data, off)
        size = 20 + struct.unpack_from(o + 'I', data, off + 16)[0] if rtype == 0 else \
            8 + struct.unpack_from(o + 'I', data, off + 24)[0]
        rec = data[off:off + size]
        if rtype == 0 and eid >> 32 < 0xFFFFFFFD:
            held[eid] = rec  # an event's mapping: it goes before its first record
        elif rtype == 0 and eid >> 32 == DECL_BASE >> 32:
            held[eid] = rec
        else:
            if rtype != 0 and eid in held:
                body += held.pop(eid) + held.pop(DECL_BASE + eid, b'')
            (head if rtype == 0 and not body else body).extend(rec)
        off += size
    open(dst, 'wb').write(bytes(head + body))


def two_programs(a, tmp):
    d = os.path.join(tmp, 'pipe')
    env = dict(os.environ, SIMPLETRACE='enable=*,dir=%s,clock=monotonic' % d)
    r = subprocess.run(['sh', '-c', 'seq 1 5 | "%s" 1 >/dev/null' % a.stage], env=env, stderr=subprocess.PIPE,
                       text=True)
    ok(r.returncode == 0, 'two programs: pipe_stage ran traced', r.stderr)
    app = os.path.join(tmp, 'app.trace')
    r = run(a.app, env=dict(os.environ, SIMPLETRACE='enable=*,file=%s,clock=monotonic' % app))
    ok(r.returncode == 0, 'two programs: export_app ran traced', r.stderr)
    merged, one = os.path.join(tmp, 'two-merged.trace'), os.path.join(tmp, 'two.trace')
    r = run(a.cli, 'merge', '-o', merged, d, app)
    if r.returncode == 0:  # merge declares every event first: moved before each first record, they grow the catalog
        declare_late(merged, one)
    ok(r.returncode == 0 and declarations_after_first_event(merged) == 0 and declarations_after_first_event(one) >= 6,
       'two programs: merged into one file (declarations first), moved to arrive between its records',
       r.stderr + str(declarations_after_first_event(one) if r.returncode == 0 else ''))
    printed, recs = print_json(a, one, tmp, 'two')
    progs = {x['process']['program'] for x in recs}
    ok(progs == {'pipe_stage', 'export_app'}, 'two programs: print shows both', progs)
    names = sorted({x['name'] for x in recs if x['name'] != 'Dropped_Event'})

    out = os.path.join(tmp, 'two.ctf')
    r = run(a.cli, 'export', '-q', '--format=ctf', '-o', out, one)
    ok(r.returncode == 0, 'two programs: ctf export', r.stderr)
    check_ctf(a, out, printed, 'two programs')

    out = os.path.join(tmp, 'two.pftrace')
    r = run(a.cli, 'export', '-q', '--format=perfetto', '--no-default-pairs', '-o', out, one)
    c = run(a.python, a.check_perfetto, a.protoc, a.proto, out, printed, *['%s=I:' % n for n in names])
    ok(r.returncode == 0 and c.returncode == 0 and c.stdout.splitlines()[-1].startswith('ok '),
       'two programs: perfetto (no pairs): every record of every thread equals print, arguments typed',
       r.stderr + c.stdout[-800:] + c.stderr)
    r = run(a.cli, 'export', '-q', '--format=perfetto', '-o', out, one)
    c = run(a.python, a.check_perfetto, a.protoc, a.proto, out, '-')
    listed = c.stdout.splitlines()[:-1]
    begins = sum(' SLICE_BEGIN ' in l for l in listed)
    ok(r.returncode == 0 and c.returncode == 0 and begins > 0 and
       len(listed) - sum(' SLICE_END - unfinished' in l for l in listed) == len(recs),
       'two programs: perfetto (pairs): sequences, interning and nesting check out, one event per record '
       '(%d slices)' % begins, r.stderr + c.stdout[-800:] + c.stderr)

    out = os.path.join(tmp, 'two.json')
    r = run(a.cli, 'export', '-q', '--no-default-pairs', '-o', out, one)
    c = run(a.python, a.check_chrome, out)
    got = collections.Counter((int(l.split(' ')[0]), l.split(' ')[2], l.split(' ')[3])
                              for l in c.stdout.splitlines()[:-1] if ' M ' not in l)
    want = collections.Counter((x['pid'], 'dropped' if x['name'] == 'Dropped_Event' else x['name'],
                                '%d.%03d' % divmod(x['timestamp_ns'], 1000)) for x in recs)
    ok(r.returncode == 0 and c.returncode == 0 and got == want,
       'two programs: chrome (no pairs): an instant per record, named and timed as print shows it',
       r.stderr + c.stdout[-800:] + str(list((got - want).items())[:5]) + str(list((want - got).items())[:5]))

    out = os.path.join(tmp, 'two.data')
    r = run(a.cli, 'export', '-q', '--format=uftrace', '--no-default-pairs', '-o', out, one)
    u = run(a.uftrace, 'replay', '-d', out, '--event-full')
    got = collections.Counter(l.split('simpletrace:')[1].split(' ')[0] for l in uftrace_lines(u.stdout)
                              if 'simpletrace:' in l)
    want = collections.Counter(x['name'] for x in recs if x['name'] != 'Dropped_Event')
    ok(r.returncode == 0 and u.returncode == 0 and got == want,
       'two programs: uftrace (no pairs) replays an event per record of both programs',
       r.stderr + u.stderr + str(got - want) + str(want - got))


def pseudo_threads(a, tmp):
    """Dropped records no thread wrote get named tracks: events no thread could record (pid 0xffffffff) and
    records lost because writing the trace file failed (pid 0xfffffffe, a full disk): in Chrome's and Perfetto's
    output as their consumers read them, never as threads 4294967295 and 4294967294."""
    path = os.path.join(tmp, 'lost.trace')
    b = struct.pack('<QQQ', 0xFFFFFFFFFFFFFFFF, 0xF2B177CB0AA429B4, 4)
    b += declare(0, 'tick', 'tick(uint64_t n) "n %" PRIu64')
    b += event(0, 1000, 100, NUM(1))
    b += struct.pack('<QQQII', 1, DROPPED_ID, 1100, 32, 0xFFFFFFFF) + NUM(2)
    b += struct.pack('<QQQII', 1, DROPPED_ID, 1200, 32, 0xFFFFFFFE) + NUM(5)
    b += event(0, 1300, 100, NUM(2))
    with open(path, 'wb') as f:
        f.write(b)
    out = os.path.join(tmp, 'lost.json')
    r = run(a.cli, 'export', '-q', '-o', out, path)
    c = run(a.python, a.check_chrome, out)
    names = {}
    if r.returncode == 0:
        for e in json.load(open(out))['traceEvents']:
            if e.get('ph') == 'M' and e.get('name') == 'thread_name':
                names[e['tid']] = e['args']['name']
    ok(r.returncode == 0 and c.returncode == 0 and names.get(0xFFFFFFFE) ==
       'lost records (writing the trace file failed)' and names.get(0xFFFFFFFF) ==
       'lost events (no thread could record them)' and names.get(100) == 'thread 100',
       'pseudo-threads: Chrome names the tracks of the drops no thread wrote', r.stderr + c.stdout[-400:] + str(names))
    out = os.path.join(tmp, 'lost.pftrace')
    r = run(a.cli, 'export', '-q', '--format=perfetto', '-o', out, path)
    c = run(a.python, a.check_perfetto, a.protoc, a.proto, out, '-')
    data = open(out, 'rb').read() if r.returncode == 0 else b''
    ok(r.returncode == 0 and c.returncode == 0 and b'lost records (writing the trace file failed)' in data and
       b'lost events (no thread could record them)' in data,
       'pseudo-threads: Perfetto names their tracks (protoc decodes it with the schema)', r.stderr + c.stdout[-400:])
    s = run(a.cli, 'stats', path)
    ok(s.returncode == 0 and re.search(r'write-lost\s+5 ', s.stdout) is not None,
       'pseudo-threads: stats counts the 5 records the failed write lost apart', s.stdout)


def main():
    a = consumers(('cli', 'stage', 'app', 'uftrace'))
    if a is None:
        return done()
    with tempfile.TemporaryDirectory() as tmp:
        late(a, tmp)
        two_programs(a, tmp)
        pseudo_threads(a, tmp)
    return done()


if __name__ == '__main__':
    sys.exit(main())
