#!/usr/bin/env python3
"""Several traces read as one (issue 14): print/stats merge their records by timestamp.

Checked here:
  - the demo traced as 3 processes into one directory: `print DIR` has
    every record of the per-file prints exactly once, in non-decreasing
    timestamp order, each with its process (pid and program "demo", from
    that file's description); per-process counts (print and stats) equal
    each file's count;
  - two files whose event IDs overlap with different events (written here
    by hand, mapping records in another order) decode each record with its
    own file's mapping;
  - a file given twice, also under another name (a hard link), is refused;
  - two QEMU fixtures with their trace-events file merge.

argv: SIMPLETRACE-CLI DEMO FIXTURES-QEMU-DIR
"""
import json
import os
import struct
import sys
import tempfile

from tap import done, ok, run




def json_lines(text):
    return [json.loads(line) for line in text.splitlines()]


def key(rec):
    """A record as the file holds it, whatever the output adds around it."""
    return json.dumps({k: rec[k] for k in ('name', 'id', 'timestamp_ns', 'pid', 'args')}, sort_keys=True)


def merge_by_heads(inputs):
    """The merge the reader promises: the earliest head first, ties in input order; each input taken as it is
    (a multi-threaded writer's file may go back in time where its threads' buffers interleave)."""
    pos = [0] * len(inputs)
    out = []
    while True:
        heads = [(recs[pos[i]]['timestamp_ns'], i) for i, recs in enumerate(inputs) if pos[i] < len(recs)]
        if not heads:
            return out
        _, i = min(heads)
        out.append(inputs[i][pos[i]])
        pos[i] += 1


def demo_processes(cli, demo, tmp):
    d = os.path.join(tmp, 'run')
    os.mkdir(d)
    for i in range(3):
        r = run(demo, '--workers', str(i + 1), '--jobs', str(30 + 10 * i),
                env=dict(os.environ, SIMPLETRACE='enable=*,file=' + os.path.join(d, 'demo%d.trace' % i)))
        ok(r.returncode == 0, 'demo process %d runs traced' % i, r.stderr)
    with open(os.path.join(d, 'notes.txt'), 'w') as f:  # not a trace: a directory operand skips it
        f.write('not a trace\n')
    files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith('.trace'))
    per_file = {}
    for f in files:
        r = run(cli, 'print', '--format=json', f)
        ok(r.returncode == 0, 'print %s alone' % os.path.basename(f), r.stderr)
        per_file[f] = json_lines(r.stdout)
    r = run(cli, 'print', '--format=json', d)
    ok(r.returncode == 0, 'print DIR reads the three traces', r.stderr)
    merged = json_lines(r.stdout)
    want = sorted(key(x) for recs in per_file.values() for x in recs)
    ok(sorted(key(x) for x in merged) == want, 'every record of every file exactly once',
       '%d merged, %d in the files' % (len(merged), len(want)))
    ok([key(x) for x in merged] == [key(x) for x in merge_by_heads([per_file[f] for f in files])],
       'records merged by timestamp (ties in input order), each file in its own order')
    for i, f in enumerate(files):
        mine = [x for x in merged if x['process']['input'] == i]
        pid = per_file[f][0]['pid']  # demo_start, traced by the main thread: the process id
        ok(len(mine) == len(per_file[f]), 'input %d: as many records as its file' % i,
           '%d != %d' % (len(mine), len(per_file[f])))
        ok(all(x['process']['pid'] == pid and x['process']['program'] == 'demo' for x in mine),
           'input %d: process demo[%d] on each record' % (i, pid))
    text = run(cli, 'print', *files)
    ok(text.returncode == 0 and text.stdout.splitlines()[0].split()[1] == 'demo[%d]' % per_file[files[0]][0]['pid'],
       'text lines name the process after the event name', text.stdout[:300] + text.stderr)
    ok(text.stdout == run(cli, 'print', d).stdout, 'the files named one by one read as the directory does')
    r = run(cli, 'stats', '--format=json', d)
    st = json.loads(r.stdout) if r.returncode == 0 else {}
    got = {(p['pid'], p['program']): p['records'] for p in st.get('processes', [])}
    want = {(recs[0]['pid'], 'demo'): len(recs) for recs in per_file.values()}
    ok(got == want, 'stats counts the records of each process', '%s != %s' % (got, want))
    one = run(cli, 'print', files[0])
    ok(one.returncode == 0 and one.stdout.split('\n')[0].split()[1] == '0.000',
       'one trace prints as before (no process field)', one.stdout[:200])
    r = run(cli, 'print', files[0], files[1], files[0])
    ok(r.returncode != 0 and 'given twice' in r.stderr and r.stdout == '', 'a file given twice is refused', r.stderr)
    link = os.path.join(tmp, 'other-name.trace')
    os.link(files[1], link)
    r = run(cli, 'print', files[1], link)
    ok(r.returncode != 0 and 'the same file' in r.stderr and link in r.stderr,
       'one file under two names is refused, naming both', r.stderr)


DECL_BASE = 0xFFFFFFFE00000000
INFO_ID = 0xFFFFFFFFFFFFFF00


def v4_trace(path, mappings, events, decls=None, pid=None, program='p'):
    """A v4 file: header, [description], mapping records (id, name) [each with its declaration
    from decls: name -> trace-events line], event records (id, ts, pid, payload)."""
    b = struct.pack('<QQQ', 0xFFFFFFFFFFFFFFFF, 0xF2B177CB0AA429B4, 4)
    if pid is not None:
        info = ('simpletrace=1\npid=%d\nprogram=%s\n' % (pid, program)).encode()
        b += struct.pack('<QQI', 0, INFO_ID, len(info)) + info
    for i, name in mappings:
        b += struct.pack('<QQI', 0, i, len(name)) + name.encode()
        if decls:
            b += struct.pack('<QQI', 0, DECL_BASE + i, len(decls[name])) + decls[name].encode()
    for i, ts, pid, payload in events:
        b += struct.pack('<QQQII', 1, i, ts, 24 + len(payload), pid) + payload
    with open(path, 'wb') as f:
        f.write(b)


def overlapping_ids(cli, tmp):
    events = os.path.join(tmp, 'two-events')
    with open(events, 'w') as f:
        f.write('ev_num(uint64_t x) "x %" PRIu64\nev_str(const char *s) "s %s"\n')
    num = lambda v: struct.pack('<Q', v)
    strg = lambda s: struct.pack('<I', len(s)) + s
    a, b = os.path.join(tmp, 'a.trace'), os.path.join(tmp, 'b.trace')
    # ID 0 is ev_num in a and ev_str in b, and the other way round for ID 1.
    v4_trace(a, [(0, 'ev_num'), (1, 'ev_str')], [(0, 100, 7, num(1)), (1, 300, 7, strg(b'from a'))])
    v4_trace(b, [(0, 'ev_str'), (1, 'ev_num')], [(0, 200, 8, strg(b'from b')), (1, 300, 8, num(2))])
    r = run(cli, 'print', '--format=json', events, a, b)
    ok(r.returncode == 0, 'two files whose IDs overlap read together', r.stderr)
    got = [(x['timestamp_ns'], x['name'], x['pid'], x['args']) for x in json_lines(r.stdout)] if r.returncode == 0 else []
    want = [(100, 'ev_num', 7, {'x': 1}), (200, 'ev_str', 8, {'s': 'from b'}),
            (300, 'ev_str', 7, {'s': 'from a'}), (300, 'ev_num', 8, {'x': 2})]
    ok(got == want, 'each ID decoded with its own file\'s mapping; a tie in input order', '%s' % got)
    r = run(cli, 'print', '--format=json', events, b, a)
    got = [(x['timestamp_ns'], x['pid']) for x in json_lines(r.stdout)] if r.returncode == 0 else []
    ok(got[2:] == [(300, 8), (300, 7)], 'the tie follows the order the inputs are given', '%s' % got)


def embedded_union(cli, tmp):
    num = lambda v: struct.pack('<Q', v)
    decls = {'ev_num': 'ev_num(uint64_t x) "x %" PRIu64', 'ev_str': 'ev_str(const char *s) "s %s"'}
    d = os.path.join(tmp, 'many')
    os.mkdir(d)
    for i in range(64):  # inputs with IDs in two orders, each its own process
        maps = [(0, 'ev_num'), (1, 'ev_str')] if i % 2 else [(1, 'ev_num'), (0, 'ev_str')]
        v4_trace(os.path.join(d, 'p%02d.trace' % i), maps,
                 [(maps[0][0], 1000 - i, 5000 + i, num(i)), (maps[0][0], 2000 + i, 5000 + i, num(i))],
                 decls, pid=5000 + i, program='prog%d' % i)
    r = run(cli, 'print', '--format=json', d)
    recs = json_lines(r.stdout) if r.returncode == 0 else []
    ok(r.returncode == 0 and len(recs) == 128, '64 inputs read as one without trace-events files', r.stderr)
    ok(all(x['name'] == 'ev_num' and x['args']['x'] == x['process']['input'] == x['pid'] - 5000 and
           x['process']['program'] == 'prog%d' % x['process']['input'] for x in recs),
       'each record decoded with its input\'s declarations and named after its process')
    ok([x['timestamp_ns'] for x in recs] == sorted(x['timestamp_ns'] for x in recs), '64 inputs in timestamp order')
    r = run(cli, 'print', '--from=63ns', '--to=1063ns', d)  # origin 937: ts 1000 and 2000
    ok(r.returncode == 0 and len(r.stdout.splitlines()) == 2,
       '--from/--to count from the earliest first record of all inputs', r.stdout + r.stderr)
    r = run(cli, 'print', '--pid=5007', d)
    ok(r.returncode == 0 and len(r.stdout.splitlines()) == 2 and 'prog7[5007]' in r.stdout,
       '--pid keeps the process that input describes', r.stdout + r.stderr)
    other = os.path.join(tmp, 'other.trace')
    v4_trace(other, [(0, 'ev_num')], [(0, 1, 9, num(1))], {'ev_num': 'ev_num(int x) "x %d"'}, pid=9)
    first = os.path.join(d, 'p00.trace')
    r = run(cli, 'print', first, other)
    ok(r.returncode == 1 and "'ev_num'" in r.stderr and first in r.stderr and other in r.stderr,
       'one event declared differently in two inputs: an error naming both files', r.stderr)


def qemu_fixtures(cli, fixtures):
    events = os.path.join(fixtures, 'trace-events-all')
    files = [os.path.join(fixtures, f) for f in ('check_qcow2.bin', 'resize_qcow2.bin')]
    lines = []
    for f in files:
        r = run(cli, 'print', '--format=json', events, f)
        lines += json_lines(r.stdout)
    r = run(cli, 'print', '--format=json', events, *files)
    ok(r.returncode == 0, 'two QEMU fixtures merge with their trace-events file', r.stderr)
    merged = json_lines(r.stdout) if r.returncode == 0 else []
    ok(sorted(map(key, merged)) == sorted(map(key, lines)) and len(merged) > 0,
       'the merge holds the records of both fixtures', '%d != %d' % (len(merged), len(lines)))
    ok(all(x['process']['pid'] is None and x['process']['input'] in (0, 1) for x in merged),
       'fixtures without a description: the process is their input')
    r = run(cli, 'print', events, *files)
    first = r.stdout.split('\n')[0].split()
    ok(r.returncode == 0 and first[1] in ('input#0', 'input#1'), 'text names such a process input#N', r.stdout[:200])
    r = run(cli, 'print', *files)
    ok(r.returncode == 1 and 'carries no event declarations' in r.stderr and files[0] in r.stderr,
       'without trace-events files, a QEMU trace is named as lacking declarations', r.stderr)


def main():
    cli, demo, fixtures = (os.path.abspath(a) for a in sys.argv[1:4])
    with tempfile.TemporaryDirectory() as tmp:
        demo_processes(cli, demo, tmp)
        overlapping_ids(cli, tmp)
        embedded_union(cli, tmp)
    qemu_fixtures(cli, fixtures)
    return done()


if __name__ == '__main__':
    sys.exit(main())
