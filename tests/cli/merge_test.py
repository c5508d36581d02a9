#!/usr/bin/env python3
"""simpletrace merge, --align=realtime/--offset, and info over several traces (issue 14).

Checked here:
  - the demo traced as two processes into one directory (dir=, one with
    drops): `merge -o OUT DIR` writes one file that a strict reader knowing
    only what QEMU's simpletrace.py knows (v4_decode.py) reads, holding
    the records of `print DIR` (names, timestamps, pid fields, arguments,
    dropped records) in the same order; `print OUT` names each record's
    process as `print DIR` does; each event mapped and declared once, a
    process record per process; stats and info OUT count per process as
    for DIR, and `info DIR` gives the totals;
  - a trace written in pieces: one process, described anew by each piece,
    `print OUT` the same JSON (wall times too) as `print TRACE`;
  - two files whose IDs overlap with different events (each also in the
    other): print and merge keep them apart, the merge gives each event
    one ID;
  - two "hosts": files written here with known clock anchors, placed by
    --align=realtime (and --offset) at exact wall-clock times, in print,
    stats and merge; a trace without anchors is refused naming it; the
    demo's trace and a copy rewritten as another host's (timestamps and
    anchor moved back by a known amount) line up record for record;
  - a QEMU fixture merged alone: the strict reader prints what QEMU's own
    simpletrace.py printed for the original (the fixture's oracle);
  - compressed output (issue 25): `merge -o OUT.zst` and --compress=zstd:LEVEL
    write zstd frames that `zstd -d` turns into exactly the plain OUT's
    bytes (the strict reader reads them), with the three skippable frames
    (summary, time index, seek table) `zstd -l` counts; --compress=off writes plain
    whatever the name; a bad --compress is refused naming it, nothing left;
    print --from/--to of a compressed merge of many frames prints what it
    prints of the plain one while stats says frames were skipped, not
    decompressed; a damaged input merged compressed holds the records
    before the damage (`zstd -d`: the plain partial OUT), exit 1 naming the
    byte offset; the compressed OUT cut inside a frame: print gives the
    records before the cut and names the frame's compressed byte offset;
  - errors, each leaving nothing at OUT (an OUT that was there unchanged):
    a file given twice, a copy of a trace, a truncated input (named with
    its byte offset), an OUT in a directory that does not exist or that is
    a directory, no -o, an --offset naming no input.

argv: SIMPLETRACE-CLI DEMO TRACE-EVENTS FIXTURES-QEMU-DIR
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))  # tap.py, v4_decode.py
from tap import done, ok, run  # noqa: E402
from v4_decode import parse_events, qemu_like_text, records  # noqa: E402

DECL_BASE = 0xFFFFFFFE00000000
PROC_BASE = 0xFFFFFFFD00000000
INFO_ID = 0xFFFFFFFFFFFFFF00
R0 = 1_700_000_000_000_000_000  # a wall-clock time, ns


def json_lines(text):
    return [json.loads(line) for line in text.splitlines()]


def _order(data):
    """'<' or '>': the byte order of the machine that wrote the trace (from its header's magic)."""
    return '<' if struct.unpack_from('<Q', data, 8)[0] == 0xF2B177CB0AA429B4 else '>'


def mappings(data):
    """[(id, name bytes)] of every mapping record of a v4 file, in file order."""
    o = _order(data)
    out, off = [], 24
    while off < len(data):
        rtype, eid = struct.unpack_from(o + 'QQ', data, off)
        if rtype == 0:
            length, = struct.unpack_from(o + 'I', data, off + 16)
            out.append((eid, data[off + 20:off + 20 + length]))
            off += 20 + length
        else:
            off += 8 + struct.unpack_from(o + 'I', data, off + 24)[0]
    return out


def description(text):
    return dict(line.split('=', 1) for line in text.decode().splitlines()[1:])


def leftovers(d, keep):
    """Files in d other than keep (a temporary file left behind)."""
    return sorted(set(os.listdir(d)) - set(keep))


def v4_trace(path, maps, events, decls, desc=None):
    """A v4 file: header, [description], mappings (id, name) each with its declaration, events (id, ts, pid, payload)."""
    b = struct.pack('<QQQ', 0xFFFFFFFFFFFFFFFF, 0xF2B177CB0AA429B4, 4)
    if desc is not None:
        info = ('simpletrace=1\n' + ''.join('%s=%s\n' % kv for kv in desc.items())).encode()
        b += struct.pack('<QQI', 0, INFO_ID, len(info)) + info
    for i, name in maps:
        b += struct.pack('<QQI', 0, i, len(name)) + name.encode()
        b += struct.pack('<QQI', 0, DECL_BASE + i, len(decls[name])) + decls[name].encode()
    for i, ts, pid, payload in events:
        b += struct.pack('<QQQII', 1, i, ts, 24 + len(payload), pid) + payload
    with open(path, 'wb') as f:
        f.write(b)


NUM = lambda v: struct.pack('<Q', v)
STR = lambda s: struct.pack('<I', len(s)) + s
DECLS = {'ev_num': 'ev_num(uint64_t x) "x %" PRIu64', 'ev_str': 'ev_str(const char *s) "s %s"'}


def demo_run(cli, demo, events_file, tmp):
    d = os.path.join(tmp, 'run')
    os.mkdir(d)
    for workers, jobs, extra in ((2, 40, ''), (4, 3000, ',bufsize=4K')):
        r = run(demo, '--workers', str(workers), '--jobs', str(jobs),
                env=dict(os.environ, SIMPLETRACE='enable=*,dir=' + d + extra))
        ok(r.returncode == 0, 'demo traced into the directory (%d jobs%s)' % (jobs, extra), r.stderr)
    out = os.path.join(tmp, 'merged.trace')
    r = run(cli, 'merge', '-o', out, d)
    ok(r.returncode == 0 and os.path.exists(out) and r.stderr == '', 'merge -o OUT DIR', r.stderr)
    ok(leftovers(tmp, ['run', 'merged.trace']) == [], 'nothing else left next to OUT', leftovers(tmp, ['run']))
    data = open(out, 'rb').read() if r.returncode == 0 else b''
    events = parse_events(events_file)
    want = json_lines(run(cli, 'print', '--format=json', d).stdout)
    drops = sum(x['name'] == 'Dropped_Event' for x in want)
    ok(drops > 0 and len({x['process']['pid'] for x in want}) == 2, 'the inputs: two processes, one with drops',
       'drops %d' % drops)
    try:
        strict, err = list(records(events, data)), ''
    except (ValueError, KeyError, UnicodeDecodeError, struct.error) as e:
        strict, err = [], repr(e)
    ok(err == '' and len(strict) == len(want), "the strict reader (QEMU's record types only) reads OUT whole",
       '%s: %d records, %d in print DIR' % (err, len(strict), len(want)))
    ok([(n, ts, pid) for n, ts, pid, _ in strict] == [(x['name'], x['timestamp_ns'], x['pid']) for x in want],
       '... the records of `print DIR`: names, timestamps and pid fields, in the same order')
    ok(sum(n == 'Dropped_Event' for n, _, _, _ in strict) == drops, '... dropped records included')
    text = run(cli, 'print', events_file, d).stdout
    no_process = ''.join(' '.join(l.split(' ')[:1] + l.split(' ')[2:]) + '\n' for l in text.splitlines())
    ok(err == '' and qemu_like_text(events, data) == no_process,
       '... its text is `print TRACE-EVENTS DIR`\'s (arguments too) without the process field')
    r = run(cli, 'print', out)
    ok(r.returncode == 0 and r.stdout == run(cli, 'print', d).stdout,
       '`print OUT` prints what `print DIR` prints, each record\'s PROGRAM[PID] included', r.stderr)
    strip = lambda recs: [dict(x, process=dict(x['process'], input=0)) for x in recs]
    ok(strip(json_lines(run(cli, 'print', '--format=json', out).stdout)) == strip(want),
       '`print --format=json OUT` the same objects (the process input aside)')
    maps = mappings(data)
    names = [n for i, n in maps if i >> 32 < 0xFFFFFFFD]
    declared = {n for f in os.listdir(d) for i, n in mappings(open(os.path.join(d, f), 'rb').read())
                if i >> 32 < 0xFFFFFFFD}
    ok(sorted(names) == sorted(declared) and len(declared) > len({x['name'] for x in want}) - 1,
       'one mapping per event the inputs declare (used or not), each once, at the head',
       '%s vs %s' % (names, declared))
    bare = lambda decl: decl[len(b'disable '):] if decl.startswith(b'disable ') else decl
    ok(all(maps[k + 1][0] == DECL_BASE + i and bare(maps[k + 1][1]).startswith(n + b'(')
           for k, (i, n) in enumerate(maps) if i >> 32 < 0xFFFFFFFD), '... each followed by its declaration')
    procs = [(i - PROC_BASE, description(n)) for i, n in maps if i >> 32 == PROC_BASE >> 32 and n]
    ok(sorted(int(p['pid']) for _, p in procs) == sorted({x['process']['pid'] for x in want}) and
       all(p['source'].startswith(d) and p['program'] == 'demo' for _, p in procs),
       'a process record per process, its description and source')
    sd, so = (run(cli, 'stats', '--format=json', x) for x in (d, out))
    procs = lambda r: json.loads(r.stdout).get('processes') if r.returncode == 0 else r.stderr
    ok(procs(so) == procs(sd) and len(procs(sd)) == 2, 'stats OUT counts the records of each process as stats DIR',
       '%s != %s' % (procs(so), procs(sd)))
    r = run(cli, 'info', out)
    ok(r.returncode == 0 and 'processes:        2' in r.stdout and r.stdout.count('demo[') == 2,
       'info OUT: the processes it holds', r.stdout + r.stderr)
    r = run(cli, 'info', '--json', d)
    lines = json_lines(r.stdout) if r.returncode == 0 else []
    total = lines[-1].get('total', {}) if lines else {}
    ok(len(lines) == 3 and total.get('traces') == 2 and len(total.get('processes', [])) == 2 and
       total.get('records') == sum(x['records'] for x in lines[:2]) and
       sum(p['records'] for p in total['processes']) == len(want),
       'info DIR: each trace, then the totals and one entry per process', r.stdout[-600:] + r.stderr)
    return d, out


def rotated(cli, demo, tmp):
    trace = os.path.join(tmp, 'rot.trace')
    r = run(demo, '--workers', '2', '--jobs', '1500',
            env=dict(os.environ, SIMPLETRACE='enable=*,rotate=64K,file=' + trace))
    pieces = [f for f in os.listdir(tmp) if f.startswith('rot.trace.')]
    ok(r.returncode == 0 and len(pieces) >= 2, 'a trace written in pieces (%d)' % len(pieces), r.stderr)
    out = os.path.join(tmp, 'rot.merged')
    r = run(cli, 'merge', '-o', out, trace)
    data = open(out, 'rb').read() if r.returncode == 0 else b''
    procs = [(i, description(n)) for i, n in mappings(data) if i >> 32 == PROC_BASE >> 32 and n]
    ok(r.returncode == 0 and len(procs) == len(pieces) + 1 and {i for i, _ in procs} == {PROC_BASE} and
       len({p['anchor_mono_ns'] for _, p in procs}) == len(procs),
       'merge of a rotated trace: one process, described anew by each piece (its own anchors)', r.stderr)
    want = run(cli, 'print', '--format=json', trace).stdout
    r = run(cli, 'print', '--format=json', out)
    ok(r.returncode == 0 and r.stdout == want and want, '... print OUT is print TRACE, wall times included',
       r.stderr)


def overlapping_ids(cli, tmp):
    events = os.path.join(tmp, 'two-events')
    with open(events, 'w') as f:
        f.write(DECLS['ev_num'] + '\n' + DECLS['ev_str'] + '\n')
    a, b, out = (os.path.join(tmp, n) for n in ('a.trace', 'b.trace', 'ab.trace'))
    # ID 0 is ev_num in a and ev_str in b, the other way round for ID 1; each file uses both.
    v4_trace(a, [(0, 'ev_num'), (1, 'ev_str')], [(0, 100, 7, NUM(1)), (1, 300, 7, STR(b'from a'))], DECLS,
             {'pid': 7, 'program': 'pa'})
    v4_trace(b, [(0, 'ev_str'), (1, 'ev_num')], [(0, 200, 8, STR(b'from b')), (1, 300, 8, NUM(2))], DECLS,
             {'pid': 8, 'program': 'pb'})
    want = [('ev_num', 100, 7, [('x', 1)]), ('ev_str', 200, 8, [('s', b'from b')]),
            ('ev_str', 300, 7, [('s', b'from a')]), ('ev_num', 300, 8, [('x', 2)])]
    r = run(cli, 'print', '--format=json', a, b)
    got = [(x['name'], x['timestamp_ns'], x['pid']) for x in json_lines(r.stdout)] if r.returncode == 0 else []
    ok(got == [w[:3] for w in want], 'overlapping IDs: print keeps each file\'s events apart', r.stderr)
    r = run(cli, 'merge', '-o', out, a, b)
    data = open(out, 'rb').read() if r.returncode == 0 else b''
    ok(r.returncode == 0 and list(records(parse_events(events), data)) == want,
       '... and so does merge: the strict reader decodes each record as its file meant it', r.stderr)
    ids = {n: i for i, n in mappings(data) if i >> 32 < 0xFFFFFFFD}
    ok(sorted(ids) == [b'ev_num', b'ev_str'] and len(set(ids.values())) == 2,
       '... one ID per event for both files: two mappings', '%s' % ids)
    r = run(cli, 'print', out)
    ok(r.returncode == 0 and [l.split()[1] for l in r.stdout.splitlines()] == ['pa[7]', 'pb[8]', 'pa[7]', 'pb[8]'],
       '... and print OUT names each record\'s process', r.stdout + r.stderr)


def two_hosts(cli, tmp):
    a, b, c = (os.path.join(tmp, n) for n in ('host-a.trace', 'host-b.trace', 'no-anchor.trace'))
    # host a: CLOCK_MONOTONIC 1e6 was R0; host b: 9e9 was R0 + 200. Wall times: a 100, 300; b 200, 350 (+ R0).
    v4_trace(a, [(0, 'ev_num')], [(0, 1_000_100, 11, NUM(1)), (0, 1_000_300, 11, NUM(3))], DECLS,
             {'pid': 11, 'program': 'a', 'host': 'a', 'anchor_mono_ns': 1_000_000, 'anchor_real_ns': R0})
    v4_trace(b, [(0, 'ev_num')], [(0, 9_000_000_000, 22, NUM(2)), (0, 9_000_000_150, 22, NUM(4))], DECLS,
             {'pid': 22, 'program': 'b', 'host': 'b', 'anchor_mono_ns': 9_000_000_000,
              'anchor_real_ns': R0 + 200})
    v4_trace(c, [(0, 'ev_num')], [(0, 5, 33, NUM(5))], DECLS, {'pid': 33, 'program': 'c'})

    def order(*argv):
        r = run(cli, 'print', '--format=json', *argv)
        return [(x['args']['x'], x['timestamp_ns']) for x in json_lines(r.stdout)] if r.returncode == 0 else r.stderr

    ok(order(a, b) == [(1, 1_000_100), (3, 1_000_300), (2, 9_000_000_000), (4, 9_000_000_150)],
       'two hosts without --align: each on its own monotonic clock, a before b')
    aligned = [(1, R0 + 100), (2, R0 + 200), (3, R0 + 300), (4, R0 + 350)]
    ok(order('--align=realtime', a, b) == aligned, '--align=realtime: one wall-clock timeline, exact times')
    ok(order('--align=realtime', '--offset=' + b + '=-250ns', a, b) ==
       [(2, R0 - 50), (1, R0 + 100), (4, R0 + 100), (3, R0 + 300)],
       '--offset=TRACE=-250ns moves that trace (a tie in operand order)')
    ok(order('--offset=' + a + '=+8.999s', a, b) ==
       [(2, 9_000_000_000), (1, 9_000_000_100), (4, 9_000_000_150), (3, 9_000_000_300)],
       '--offset without --align moves a trace on the monotonic timeline')
    r = run(cli, 'stats', '--format=json', '--align=realtime', a, b)
    ok(r.returncode == 0 and json.loads(r.stdout).get('duration_ns') == 250, 'stats --align=realtime: the span',
       r.stdout + r.stderr)
    r = run(cli, 'print', '--format=json', '--align=realtime', a, b)
    ok([x.get('wall_time') for x in json_lines(r.stdout)] ==
       ['2023-11-14T22:13:20.000000%03dZ' % t for t in (100, 200, 300, 350)],
       '... JSON wall_time agrees with the aligned timestamps', r.stdout)
    out = os.path.join(tmp, 'hosts.trace')
    r = run(cli, 'merge', '--align=realtime', '-o', out, a, b)
    data = open(out, 'rb').read() if r.returncode == 0 else b''
    got = [(args[0][1], ts) for _, ts, _, args in records({'ev_num': [('uint64_t', 'x')]}, data)]
    ok(got == aligned, 'merge --align=realtime writes the wall-clock timestamps', r.stderr)
    procs = [description(n) for i, n in mappings(data) if i >> 32 == PROC_BASE >> 32 and n]
    ok([(p['host'], p['clock'], p['anchor_mono_ns'] == p['anchor_real_ns']) for p in procs] ==
       [('a', 'realtime', True), ('b', 'realtime', True)], '... its descriptions say so: clock realtime, anchors equal')
    ok(order('--align=realtime', out) == aligned and order(out) == aligned,
       '... and read back, aligned again or not, it stays where it is')
    r = run(cli, 'print', '--align=realtime', a, c)
    ok(r.returncode == 1 and c in r.stderr and 'no clock anchors' in r.stderr and 'byte offset' in r.stderr,
       'a trace without clock anchors under --align=realtime: an error naming it', r.stderr)
    bad = os.path.join(tmp, 'nothing.trace')
    r = run(cli, 'merge', '--align=realtime', '-o', bad, a, c)
    ok(r.returncode == 1 and c in r.stderr and not os.path.exists(bad), '... merge too, nothing written', r.stderr)


def moved_host(path, dest, back_ns):
    """A copy of a runtime trace as another host's: host b, timestamps and the anchor's monotonic back_ns earlier."""
    data = bytearray(open(path, 'rb').read())
    o = _order(data)
    out, off = bytearray(data[:24]), 24
    back_ns = min(back_ns, first_timestamp(data))  # a machine up for less than back_ns: as far back as it goes
    while off < len(data):
        rtype, eid = struct.unpack_from(o + 'QQ', data, off)
        if rtype == 0:
            length, = struct.unpack_from(o + 'I', data, off + 16)
            name = bytes(data[off + 20:off + 20 + length])
            if eid == INFO_ID:
                d = description(name)
                d['host'] = 'b'
                d['anchor_mono_ns'] = str(int(d['anchor_mono_ns']) - back_ns)
                name = ('simpletrace=1\n' + ''.join('%s=%s\n' % kv for kv in d.items())).encode()
            out += struct.pack(o + 'QQI', 0, eid, len(name)) + name
            off += 20 + length
        else:
            length, = struct.unpack_from(o + 'I', data, off + 24)
            rec = bytearray(data[off:off + 8 + length])
            struct.pack_into(o + 'Q', rec, 16, struct.unpack_from(o + 'Q', rec, 16)[0] - back_ns)
            out += rec
            off += 8 + length
    open(dest, 'wb').write(out)


def record_offsets(data):
    """The byte offset of each record of a v4 file, in file order."""
    o = _order(data)
    out, off = [], 24
    while off < len(data):
        out.append(off)
        rtype, = struct.unpack_from(o + 'Q', data, off)
        off += 20 + struct.unpack_from(o + 'I', data, off + 16)[0] if rtype == 0 else \
            8 + struct.unpack_from(o + 'I', data, off + 24)[0]
    return out


def first_timestamp(data):
    """The earliest timestamp of a v4 file's event records."""
    o = _order(data)
    off, first = 24, None
    while off < len(data):
        rtype, = struct.unpack_from(o + 'Q', data, off)
        if rtype == 0:
            off += 20 + struct.unpack_from(o + 'I', data, off + 16)[0]
        else:
            ts, = struct.unpack_from(o + 'Q', data, off + 16)
            first = ts if first is None else min(first, ts)
            off += 8 + struct.unpack_from(o + 'I', data, off + 24)[0]
    return first


def runtime_hosts(cli, d, tmp):
    one = os.path.join(d, sorted(os.listdir(d))[0])
    other = os.path.join(tmp, 'host-b-copy.trace')
    moved_host(one, other, 10**12)  # 1000 s (or boot): far before every record of the original
    n = len(json_lines(run(cli, 'print', '--format=json', one).stdout))
    r = run(cli, 'print', '--format=json', one, other)
    plain = [x['process']['input'] for x in json_lines(r.stdout)] if r.returncode == 0 else []
    ok(plain == [1] * n + [0] * n, 'a runtime trace and its copy as host b: unaligned, the copy comes first', r.stderr)
    r = run(cli, 'print', '--format=json', '--align=realtime', one, other)
    recs = json_lines(r.stdout) if r.returncode == 0 else []
    mine = lambda i: [(x['timestamp_ns'], x['name'], x['args']) for x in recs if x['process']['input'] == i]
    ok(len(recs) == 2 * n and mine(0) == mine(1) and recs[0]['timestamp_ns'] > 10**18,
       'aligned: each record of the copy at the wall-clock time of its original', r.stderr)
    ties = [(x, y) for x, y in zip(recs, recs[1:]) if x['timestamp_ns'] == y['timestamp_ns']]
    ok(len(ties) >= n // 2 and all(x['process']['input'] <= y['process']['input'] for x, y in ties),
       '... the original first at each tie (operand order)', '%d ties of %d records' % (len(ties), n))


def qemu_fixture(cli, fixtures, tmp):
    events_file = os.path.join(fixtures, 'trace-events-all')
    for name in ('bench_small_drops', 'check_qcow2'):
        out = os.path.join(tmp, name + '.merged')
        r = run(cli, 'merge', '-o', out, events_file, os.path.join(fixtures, name + '.bin'))
        try:
            text = qemu_like_text(parse_events(events_file), open(out, 'rb').read()) if r.returncode == 0 else None
        except (ValueError, KeyError, UnicodeDecodeError, struct.error) as e:
            text = repr(e)
        oracle = open(os.path.join(fixtures, name + '.expected.txt')).read()
        ok(text == oracle, 'QEMU fixture %s merged alone: the strict reader prints what simpletrace.py printed for '
           'the original' % name, r.stderr + str(text)[:300])


def errors(cli, d, tmp):
    traces = sorted(os.path.join(d, f) for f in os.listdir(d))
    out = os.path.join(tmp, 'err.trace')
    with open(out, 'w') as f:
        f.write('old')

    def refused(argv, code, words, what):
        before = sorted(os.listdir(tmp))
        r = run(cli, 'merge', *argv)
        ok(r.returncode == code and all(w in r.stderr for w in words) and open(out).read() == 'old' and
           sorted(os.listdir(tmp)) == before, what + ': refused, OUT unchanged, nothing left', r.stderr)

    refused(['-o', out, traces[0], traces[1], traces[0]], 2, ['given twice'], 'a file given twice')
    copy = os.path.join(tmp, 'copy.trace')
    shutil.copy(traces[0], copy)
    refused(['-o', out, traces[0], copy], 1, ['same trace', copy], 'a copy of a trace beside it')
    os.unlink(copy)
    cut = os.path.join(tmp, 'cut.trace')
    data = open(traces[1], 'rb').read()
    open(cut, 'wb').write(data[:len(data) - 5])
    # A damaged input: what comes before the damage is written, then the error with its place, exit 1.
    r = run(cli, 'merge', '-o', out, traces[0], cut)
    got, want = run(cli, 'print', out), run(cli, 'print', traces[0], cut)
    ok(r.returncode == 1 and cut in r.stderr and 'byte offset' in r.stderr and 'holds the records before' in r.stderr
       and want.returncode == 1 and got.returncode == 0 and got.stdout == want.stdout and want.stdout.count('\n') > 10,
       'a truncated input: OUT holds every record before the damage, the error names its byte offset', r.stderr)
    with open(out, 'w') as f:
        f.write('old')
    os.unlink(cut)
    refused(['-o', os.path.join(tmp, 'missing', 'x.trace'), traces[0]], 1, ['cannot create'],
            'OUT in a directory that does not exist')
    os.mkdir(os.path.join(tmp, 'a-dir'))
    refused(['-o', os.path.join(tmp, 'a-dir'), traces[0]], 1, ['a-dir'], 'OUT an existing directory')
    refused([traces[0]], 2, ['need -o OUT'], 'no -o')
    refused(['-o', out, '--offset=' + os.path.join(tmp, 'other.trace') + '=1ms', traces[0]], 2, ['none of the traces'],
            'an --offset naming no input')


def unzstd(path):
    """`zstd -dc path`: (exit status, bytes written)."""
    p = subprocess.run(['zstd', '-q', '-d', '-c', path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return p.returncode, p.stdout


def zstd_frames(path):
    """(data frames, skippable frames) as `zstd -l -v` counts them."""
    out = subprocess.run(['zstd', '-l', '-v', path], capture_output=True, text=True).stdout
    get = lambda what: int(re.search(what + r' Frames: (\d+)', out).group(1)) if what + ' Frames' in out else -1
    return get('Zstandard'), get('Skippable')


def compressed(cli, demo, events_file, d, plain, tmp):
    zd = os.path.join(tmp, 'z')
    os.mkdir(zd)
    out = os.path.join(zd, 'merged.trace.zst')
    r = run(cli, 'merge', '-o', out, d)
    data = open(plain, 'rb').read()
    rc, dec = unzstd(out) if r.returncode == 0 else (-1, b'')
    ok(r.returncode == 0 and rc == 0 and dec == data and open(out, 'rb').read(4) == b'\x28\xb5\x2f\xfd',
       'merge -o OUT.zst: zstd -d gives exactly the bytes of the plain merge (%d bytes from %d)' %
       (len(dec), os.path.getsize(out) if r.returncode == 0 else 0), r.stderr)
    ok(len(list(records(parse_events(events_file), dec))) > 100, '... which the strict reader reads whole')
    ok(zstd_frames(out)[0] >= 1 and zstd_frames(out)[1] == 3, '... zstd -l: data frames and the 3 skippable ones',
       zstd_frames(out))
    ok(leftovers(zd, ['merged.trace.zst']) == [], '... nothing else left next to it')
    other = os.path.join(zd, 'merged-19')
    r = run(cli, 'merge', '--compress=zstd:19', '-o', other, d)
    ok(r.returncode == 0 and unzstd(other) == (0, data), '--compress=zstd:19 on a name without .zst: compressed',
       r.stderr)
    off = os.path.join(zd, 'plain.zst')
    r = run(cli, 'merge', '--compress=off', '-o', off, d)
    ok(r.returncode == 0 and open(off, 'rb').read() == data, '--compress=off: plain, whatever the name', r.stderr)
    r = run(cli, 'merge', '--compress=gzip', '-o', os.path.join(zd, 'bad.zst'), d)
    ok(r.returncode == 2 and "--compress 'gzip'" in r.stderr and 'zstd:LEVEL' in r.stderr and
       not os.path.exists(os.path.join(zd, 'bad.zst')), 'a bad --compress: exit 2, named, nothing written', r.stderr)

    # Many frames: --from/--to reads the frames it needs.
    big = os.path.join(zd, 'big.trace')
    r = run(demo, '--workers', '2', '--jobs', '30000', env=dict(os.environ, SIMPLETRACE='enable=*,bufsize=16M,file=' + big))
    bz, bp = os.path.join(zd, 'big.zst'), os.path.join(zd, 'big.merged')
    r1, r2 = run(cli, 'merge', '-o', bz, big), run(cli, 'merge', '-o', bp, big)
    frames = zstd_frames(bz)[0]
    ok(r.returncode == 0 and r1.returncode == 0 and r2.returncode == 0 and frames >= 5 and
       unzstd(bz) == (0, open(bp, 'rb').read()), 'a merge of %d frames, equal to the plain one once decompressed' % frames,
       r1.stderr + r2.stderr)
    span = json_lines(run(cli, 'print', '--format=json', bp).stdout)
    # The window by records, not by time: a loaded machine can leave the middle of the time range empty.
    t0, n = span[0]['timestamp_ns'], len(span)
    window = ['--from=%dns' % (span[n * 4 // 10]['timestamp_ns'] - t0), '--to=%dns' % (span[n * 6 // 10]['timestamp_ns'] - t0)]
    pz, pp = run(cli, 'print', *window, bz), run(cli, 'print', *window, bp)
    ok(pz.returncode == 0 and pz.stdout == pp.stdout and pp.stdout.count('\n') > 100,
       'print --from/--to of it prints what it prints of the plain merge (%d lines)' % pp.stdout.count('\n'),
       pz.stderr)
    st = run(cli, 'stats', *window, bz).stdout
    m = re.search(r'compressed +zstd, (\d+) frames: (\d+) decompressed, (\d+) skipped', st)
    ok(m and int(m.group(3)) > 0 and int(m.group(2)) < int(m.group(1)),
       '... reading only some of its frames: the seek table let it skip the others', m.group(0) if m else st)
    full = re.search(r'compressed +zstd, (\d+) frames: (\d+) decompressed, (\d+) skipped', run(cli, 'stats', bz).stdout)
    ok(full and full.group(1) == full.group(2) == str(frames) and full.group(3) == '0',
       '... a full read decompresses every data frame, the trailer\'s skippable frames not counted (%d frames)' % frames,
       full.group(0) if full else '')

    # A damaged input: the records before the damage, compressed, exit 1 naming the byte offset. Cut inside a
    # record (10 bytes into its 20-byte or longer header): a cut between two records leaves a shorter whole trace.
    cut = os.path.join(zd, 'cut.trace')
    open(cut, 'wb').write(data[:next(o for o in record_offsets(data) if o >= len(data) * 2 // 3) + 10])
    cz, cp = os.path.join(zd, 'cut-merged.zst'), os.path.join(zd, 'cut-merged')
    r1, r2 = run(cli, 'merge', '-o', cz, cut), run(cli, 'merge', '-o', cp, cut)
    ok(r1.returncode == 1 and 'byte offset' in r1.stderr and 'holds the records before' in r1.stderr and
       r2.returncode == 1 and unzstd(cz) == (0, open(cp, 'rb').read()),
       'a damaged input merged compressed: the records before the damage (zstd -d: the plain partial merge), '
       'the byte offset named', r1.stderr)

    # The compressed OUT cut inside a frame: the records before, the frame's compressed offset named.
    whole = open(bz, 'rb').read()
    short = os.path.join(zd, 'short.zst')
    open(short, 'wb').write(whole[:len(whole) // 2])
    ps, pw = run(cli, 'print', short), run(cli, 'print', bz)
    ok(ps.returncode == 1 and 'compressed byte' in ps.stderr and 'inside zstd frame' in ps.stderr and
       pw.stdout.startswith(ps.stdout) and ps.stdout.count('\n') > 100,
       'OUT.zst cut inside a frame: print gives the records before the cut, names the frame and its compressed '
       'byte offset', ps.stderr)


def main():
    cli, demo, events_file, fixtures = (os.path.abspath(a) for a in sys.argv[1:5])
    with tempfile.TemporaryDirectory() as tmp:
        d, merged = demo_run(cli, demo, events_file, tmp)
        compressed(cli, demo, events_file, d, merged, tmp)
        rotated(cli, demo, tmp)
        overlapping_ids(cli, tmp)
        two_hosts(cli, tmp)
        runtime_hosts(cli, d, tmp)
        qemu_fixture(cli, fixtures, tmp)
        errdir = os.path.join(tmp, 'errors')
        os.mkdir(errdir)
        errors(cli, d, errdir)
    return done()


if __name__ == '__main__':
    sys.exit(main())
