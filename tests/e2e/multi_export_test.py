#!/usr/bin/env python3
"""Several processes on one timeline (issue 14): a traced shell pipeline, exported.

Checked here:
  - three pipe_stage processes in a pipeline, each forking a traced child
    for every 8th line, traced with dir=: `print DIR` holds every record of
    the per-file prints exactly once, in timestamp order, the same twice
    (ties broken the same way), each with its own process (pid and program
    from its file); per-process counts equal each file's;
  - `export --format=chrome DIR`: valid JSON, one process per traced
    process (pid = its pid, process_name its program), its threads under it,
    as many events as records;
  - the run merged into one file by `simpletrace merge` exports the same
    processes, threads and events as the directory;
  - `export --format=uftrace DIR`, read by the real uftrace: a session per
    process, every task listed, each stage's line() calls under stage();
  - the same pipeline built with -finstrument-functions, the function
    tracer's uftrace.data joined by all nine processes: `export
    --functions=DIR` nests the events' calls and the functions' calls on one
    timeline (handle_line > line > checksum), read by the real uftrace and
    parsed as JSON;
  - what uftrace cannot hold (two hosts' processes sharing a pid or a
    thread id) is refused with a message naming both traces, nothing left
    behind; Chrome keeps them apart;
  - a truncated .dat or a missing map in the function trace is named;
  - print --follow over two live traces prints every record of both.

argv: SIMPLETRACE-CLI PIPE-STAGE PIPE-STAGE-FT UFTRACE-OR-EMPTY PIPE-TRACE-EVENTS
"""
import collections
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

from tap import done, ok, run

LINES = 20
CHILDREN_PER_STAGE = LINES // 8


def json_lines(text):
    return [json.loads(line) for line in text.splitlines()]


def key(rec):
    return json.dumps({k: rec[k] for k in ('name', 'id', 'timestamp_ns', 'pid', 'args')}, sort_keys=True)


def pipeline(stage, tmp, name, extra_env=None):
    """Runs `seq | stage 1 | stage 2 | stage 3` traced into tmp/name; returns the directory."""
    d = os.path.join(tmp, name)
    env = dict(os.environ, SIMPLETRACE='enable=*,dir=%s,clock=monotonic' % d, **(extra_env or {}))
    cmd = 'seq 1 %d | "%s" 1 | "%s" 2 | "%s" 3' % (LINES, stage, stage, stage)
    r = subprocess.run(['sh', '-c', cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                       timeout=120)
    ok(r.returncode == 0 and r.stdout.split() == [str(i) for i in range(1, LINES + 1)],
       '%s: the traced pipeline passes its lines through' % name, r.stderr)
    return d


def merged_print(cli, d):
    files = sorted(os.path.join(d, f) for f in os.listdir(d))
    ok(len(files) == 3 * (1 + CHILDREN_PER_STAGE), 'one trace per process, fork children included, in dir=',
       '\n'.join(files))
    per_file = {}
    for f in files:
        r = run(cli, 'print', '--format=json', f)
        per_file[f] = json_lines(r.stdout) if r.returncode == 0 else []
    r = run(cli, 'print', '--format=json', d)
    ok(r.returncode == 0, 'print DIR reads the whole run', r.stderr)
    merged = json_lines(r.stdout) if r.returncode == 0 else []
    ok(sorted(map(key, merged)) == sorted(key(x) for v in per_file.values() for x in v) and merged,
       'every record of every process exactly once')
    ts = [x['timestamp_ns'] for x in merged]
    ok(all(a <= b for a, b in zip(ts, ts[1:])), 'in timestamp order across processes')
    ok(run(cli, 'print', '--format=json', d).stdout == r.stdout, 'the same order every time (ties broken alike)')
    counts = collections.Counter(x['process']['pid'] for x in merged)
    want = {recs[0]['pid']: len(recs) for recs in per_file.values()}
    ok(counts == want, 'per-process counts equal what each process traced', '%s != %s' % (counts, want))
    ok(all(x['process']['program'] == 'pipe_stage' and x['pid'] == x['process']['pid'] for x in merged),
       'each record names its process: program pipe_stage, pid its own (single-threaded processes)')
    children = [p for p, recs in want.items() if recs == 1]
    ok(len(children) == 3 * CHILDREN_PER_STAGE, 'the fork children are processes of their own, one record each',
       '%s' % want)
    return merged


def chrome_export(cli, d, tmp, merged):
    out = os.path.join(tmp, 'run.json')
    r = run(cli, 'export', '-o', out, d)
    ok(r.returncode == 0, 'export --format=chrome of a directory of traces', r.stderr)
    try:
        doc = json.load(open(out))
    except (OSError, ValueError) as e:
        ok(False, 'the Chrome export parses as JSON', e)
        return
    evs = doc['traceEvents']
    pids = {x['process']['pid'] for x in merged}
    procs = {e['pid']: e['args']['name'] for e in evs if e['name'] == 'process_name'}
    ok(set(procs) == pids and set(procs.values()) == {'pipe_stage'},
       'one Chrome process per traced process, named after its program', '%s' % procs)
    threads = {(e['pid'], e['tid']) for e in evs if e['name'] == 'thread_name'}
    ok(threads == {(x['process']['pid'], x['pid']) for x in merged}, 'each thread under its own process')
    body = [e for e in evs if e['ph'] != 'M']
    ok(len(body) == len(merged), 'as many events as records', '%d != %d' % (len(body), len(merged)))
    by_rec = collections.Counter((x['process']['pid'], round(x['timestamp_ns'] / 1000, 3)) for x in merged)
    by_ev = collections.Counter((e['pid'], e['ts']) for e in body)
    ok(by_rec == by_ev, 'each event at its record\'s time, in its record\'s process')


def merged_file_export(cli, d, tmp):
    """The run merged into one file (simpletrace merge) exports as the directory does, process by process."""
    one = os.path.join(tmp, 'run.merged')
    r = run(cli, 'merge', '-o', one, d)
    ok(r.returncode == 0, 'simpletrace merge writes the run as one file', r.stderr)
    docs = []
    for src in (d, one):
        out = os.path.join(tmp, 'cmp.json')
        r = run(cli, 'export', '-o', out, src)
        docs.append(json.load(open(out)) if r.returncode == 0 else {'traceEvents': []})
    shape = [sorted((e['pid'], e['tid'], e['name'], e['ph'], e.get('ts', 0)) for e in doc['traceEvents'])
             for doc in docs]
    ok(shape[0] == shape[1] and shape[0],
       'a merged file exports its processes apart, as the traces it was merged from (it declares them first)',
       '%d != %d events' % (len(shape[0]), len(shape[1])))


def uftrace_export(cli, uftrace, d, tmp, merged):
    out = os.path.join(tmp, 'run.data')
    r = run(cli, 'export', '--format=uftrace', '-o', out, d)
    ok(r.returncode == 0, 'export --format=uftrace of a directory of traces', r.stderr)
    pids = sorted({x['process']['pid'] for x in merged})
    sess = [l for l in open(os.path.join(out, 'task.txt')) if l.startswith('SESS')] if r.returncode == 0 else []
    ok(sorted(int(l.split(' pid=')[1].split()[0]) for l in sess) == pids,
       'uftrace layout: a session (SESS line, map) per process', ''.join(sess))
    if not uftrace:
        ok(False, 'the real uftrace is installed (scripts/deps.sh check)')
        return
    info = run(uftrace, 'info', '-d', out)
    ok(info.returncode == 0 and ('number of tasks     : %d' % len(pids)) in info.stdout,
       'uftrace info lists every process\'s task', info.stdout + info.stderr)
    rep = run(uftrace, 'replay', '-d', out)
    ok(rep.returncode == 0, 'uftrace replay reads it', rep.stderr)
    lines = collections.Counter(int(l.split('[')[1].split(']')[0]) for l in rep.stdout.splitlines()
                                if 'line()' in l or 'line();' in l)
    stages = {x['process']['pid'] for x in merged if x['name'] == 'stage_start'}
    ok({p: lines[p] for p in stages} == {p: LINES for p in stages},
       'uftrace shows every stage\'s %d line() calls in its own task' % LINES, '%s' % lines)


def check_nesting(evs):
    """Per (pid, tid): B/E balanced, and what each B is opened under. Returns {name: Counter(parent)}."""
    stacks = collections.defaultdict(list)
    parents = collections.defaultdict(collections.Counter)
    for e in sorted((e for e in evs if e['ph'] in 'BE'), key=lambda e: e['ts']):
        st = stacks[(e['pid'], e['tid'])]
        if e['ph'] == 'B':
            parents[e['name']][st[-1] if st else None] += 1
            st.append(e['name'])
        elif not st or st.pop() != e['name']:
            return None
    return parents if not any(stacks.values()) else None


def functions_and_events(cli, uftrace, stage_ft, tmp):
    ft = os.path.join(tmp, 'ft.data')
    os.mkdir(ft)  # every stage joins it (the tracer's join variable), none clears it
    d = pipeline(stage_ft, tmp, 'run-ft', {'SIMPLETRACE_FUNC_DIR': ft, 'SIMPLETRACE_FUNC_JOIN': ft,
                                            'SIMPLETRACE_FUNC_CLOCK': 'monotonic'})
    out = os.path.join(tmp, 'ft.json')
    r = run(cli, 'export', '-o', out, '--functions=' + ft, d)
    ok(r.returncode == 0 and 'of the function trace' in r.stderr, 'export --functions merges a function trace',
       r.stderr)
    try:
        evs = json.load(open(out))['traceEvents']
    except (OSError, ValueError) as e:
        ok(False, 'the functions + events export parses as JSON', e)
        evs = []
    procs = {e['pid'] for e in evs if e['name'] == 'process_name'}
    ok(len(procs) == 3 * (1 + CHILDREN_PER_STAGE), 'calls and events of nine processes in one file', '%s' % procs)
    parents = check_nesting(evs)
    ok(parents is not None, 'every call of both kinds begins and ends on its thread, nested')
    parents = parents or {}
    ok(parents.get('handle_line') == {'stage': 3 * LINES} and parents.get('line') == {'handle_line': 3 * LINES},
       'event pairs nest in the function that traced them: stage > handle_line > line',
       '%s %s' % (parents.get('handle_line'), parents.get('line')))
    ok(parents.get('checksum', {}).get('line') == 3 * LINES,
       'and the functions called between them nest inside: line > checksum', '%s' % parents.get('checksum'))
    data = os.path.join(tmp, 'ft-out.data')
    r = run(cli, 'export', '--format=uftrace', '-o', data, '--functions=' + ft, d)
    ok(r.returncode == 0, 'the same as uftrace.data', r.stderr)
    if uftrace and r.returncode == 0:
        rep = run(uftrace, 'replay', '-d', data)
        by_tid = collections.defaultdict(list)  # replay interleaves the processes' lines by time: each on its own
        for line in rep.stdout.splitlines():
            m = re.search(r'\[\s*(\d+)\] \|', line)
            if m:
                by_tid[m.group(1)].append(line)
        # A leaf call is one line, `checksum();`, unless another task's line fell between its entry and
        # exit (emulated s390x's slow first call): then `checksum() {` ... `} /* checksum */`.
        nested = sum(1 for text in by_tid.values() for a, b, c in zip(text, text[1:], text[2:])
                     if a.endswith('handle_line() {') and b.endswith('line() {') and
                     (c.endswith('checksum();') or c.endswith('checksum() {')))
        ok(rep.returncode == 0 and nested == 3 * LINES,
           'the real uftrace replays handle_line() { line() { checksum(); for every line of every stage',
           '%d nestings\n%s' % (nested, '\n'.join(rep.stdout.splitlines()[:20]) + rep.stderr))
    r = run(cli, 'export', '-o', os.path.join(tmp, 'bad.json'), '--functions=' + ft, '--align=realtime', d)
    ok(r.returncode == 2 and '--functions' in r.stderr and '--align' in r.stderr,
       '--functions with --align: refused (its calls cannot move with the traces)', r.stderr)
    # Broken function traces are named.
    bad = os.path.join(tmp, 'ft-bad')
    shutil.copytree(ft, bad)
    dat = sorted(f for f in os.listdir(bad) if f.endswith('.dat'))[0]
    with open(os.path.join(bad, dat), 'ab') as f:
        f.write(b'\0' * 5)
    r = run(cli, 'export', '-o', os.path.join(tmp, 'bad.json'), '--functions=' + bad, d)
    ok(r.returncode == 1 and dat in r.stderr and 'byte offset' in r.stderr and 'inside a record' in r.stderr
       and not os.path.exists(os.path.join(tmp, 'bad.json')),
       'a function trace ending inside a record: its file and byte offset, nothing written', r.stderr)
    for f in os.listdir(bad):
        if f.endswith('.map'):
            os.unlink(os.path.join(bad, f))
            break
    r = run(cli, 'export', '-o', os.path.join(tmp, 'bad.json'), '--functions=' + bad, d)
    ok(r.returncode == 1 and '.map is missing' in r.stderr, 'a missing map is named', r.stderr)
    r = run(cli, 'export', '-o', os.path.join(tmp, 'bad.json'), '--functions=' + d, d)
    ok(r.returncode == 1 and 'no uftrace.data directory' in r.stderr, 'a directory of traces is no function trace',
       r.stderr)


def follow_several(cli, stage, events, tmp):
    """print --follow DIR: the records of every trace there when it starts, merged as they arrive."""
    d = os.path.join(tmp, 'live')
    env = dict(os.environ, SIMPLETRACE='enable=*,dir=' + d)
    feeder = subprocess.Popen(['sh', '-c', 'for i in 1 2 3 4 5 6 7; do echo $i; sleep 0.2; done | "%s" 1 | "%s" 2 '
                               '>/dev/null' % (stage, stage)], env=env)
    for _ in range(100):  # both stages have created their files
        if os.path.isdir(d) and len(os.listdir(d)) >= 2:
            break
        time.sleep(0.05)
    files = sorted(os.path.join(d, f) for f in os.listdir(d)) if os.path.isdir(d) else []
    # The trace-events file: declarations a live trace writes later than the start are not read.
    live = subprocess.Popen([cli, 'print', '--follow', '--format=json', events] + files, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    feeder.wait(timeout=120)
    time.sleep(1.5)  # the writers' last records reach the files at exit
    live.send_signal(signal.SIGINT)
    out, err = live.communicate(timeout=30)
    got = json_lines(out) if out else []
    want = json_lines(run(cli, 'print', '--format=json', *files).stdout)
    ok(len(files) == 2 and live.returncode == 0 and sorted(map(key, got)) == sorted(map(key, want)) and got,
       'print --follow of two live traces: every record of both, as they were written',
       '%d of %d records, rc %s: %s' % (len(got), len(want), live.returncode, err))
    for f in files:
        mine = [key(x) for x in got if x['process']['pid'] == int(f.rsplit('-', 1)[1].split('.')[0])]
        ok(mine == [key(x) for x in json_lines(run(cli, 'print', '--format=json', f).stdout)],
           'each live trace in its own order (%s)' % os.path.basename(f))


INFO_ID = 0xFFFFFFFFFFFFFF00
DECL_BASE = 0xFFFFFFFE00000000


def host_trace(path, pid, host, tid, ts):
    """A v4 file of one process on host: description, one declared event, one record."""
    decl = b'ev(uint64_t x) "x %" PRIu64'
    info = ('simpletrace=1\npid=%d\nprogram=prog\nhost=%s\n' % (pid, host)).encode()
    b = struct.pack('<QQQ', 0xFFFFFFFFFFFFFFFF, 0xF2B177CB0AA429B4, 4)
    b += struct.pack('<QQI', 0, INFO_ID, len(info)) + info
    b += struct.pack('<QQI', 0, 0, 2) + b'ev' + struct.pack('<QQI', 0, DECL_BASE, len(decl)) + decl
    b += struct.pack('<QQQII', 1, 0, ts, 32, tid) + struct.pack('<Q', 7)
    with open(path, 'wb') as f:
        f.write(b)


def two_hosts(cli, tmp):
    a, b, c = (os.path.join(tmp, n) for n in ('host-a.trace', 'host-b.trace', 'host-c.trace'))
    host_trace(a, 100, 'alpha', 100, 1000)
    host_trace(b, 100, 'beta', 101, 2000)   # same pid on another host
    host_trace(c, 200, 'beta', 100, 3000)   # another process, with a thread id alpha's process uses
    out = os.path.join(tmp, 'hosts.json')
    r = run(cli, 'export', '-o', out, a, b)
    evs = json.load(open(out))['traceEvents'] if r.returncode == 0 else []
    names = {e['pid']: e['args']['name'] for e in evs if e['name'] == 'process_name'}
    ok(len(names) == 2 and 100 in names and 'process 100' in ''.join(names.values()),
       'chrome: two hosts\' processes with one pid stay two processes, the second saying so', '%s' % names)
    for pair, what in (((a, b), 'process 100'), ((a, c), 'thread 100')):
        out = os.path.join(tmp, 'hosts.data')
        r = run(cli, 'export', '--format=uftrace', '-o', out, *pair)
        ok(r.returncode == 1 and what in r.stderr and pair[0] in r.stderr and pair[1] in r.stderr
           and not os.path.exists(out),
           'uftrace: %s in two traces is refused, naming both, nothing written' % what, r.stderr)


def main():
    cli, stage, stage_ft, uftrace, events = sys.argv[1:6]
    with tempfile.TemporaryDirectory() as tmp:
        d = pipeline(stage, tmp, 'run')
        merged = merged_print(cli, d)
        chrome_export(cli, d, tmp, merged)
        merged_file_export(cli, d, tmp)
        uftrace_export(cli, uftrace, d, tmp, merged)
        functions_and_events(cli, uftrace, stage_ft, tmp)
        two_hosts(cli, tmp)
        follow_several(cli, stage, events, tmp)
    return done()


if __name__ == '__main__':
    sys.exit(main())
