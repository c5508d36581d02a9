#!/usr/bin/env python3
"""Perfetto and CTF exports of several processes on one timeline, and of a
function trace merged with the events (the pipeline of tests/e2e/pipe).

Checked here:
  - a traced pipeline (three pipe_stage processes, each forking traced
    children), `export --format=perfetto DIR`: check_perfetto.py against
    `print --format=json DIR` (every event of every thread, in its process:
    the ThreadDescriptor's pid and the process's name are print's), one
    process track per process;
  - `export --format=ctf DIR`: check_ctf.py with the babeltrace2 command
    and with python3-bt2 against the same print; the env lists every process
    and each stream's packets carry its process's pid;
  - the pipeline built with -finstrument-functions, its function trace
    merged (--functions): Perfetto slices nest handle_line > line >
    checksum on every stage's thread; CTF has a function_entry and a
    function_exit for every call, next to every record print shows.

argv: SIMPLETRACE PIPE-STAGE PIPE-STAGE-FT PYTHON3 BT2-PYTHON3 PROTOC PROTO BABELTRACE2 CHECK-PERFETTO CHECK-CTF
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from tap import done, ok, run  # noqa: E402

LINES = 20


def pipeline(stage, tmp, name, extra_env=None):
    """Runs `seq | stage 1 | stage 2 | stage 3` traced into tmp/name; returns the directory."""
    d = os.path.join(tmp, name)
    env = dict(os.environ, SIMPLETRACE='enable=*,dir=%s,clock=monotonic' % d, **(extra_env or {}))
    cmd = 'seq 1 %d | "%s" 1 | "%s" 2 | "%s" 3' % (LINES, stage, stage, stage)
    r = subprocess.run(['sh', '-c', cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    ok(r.returncode == 0, '%s: the traced pipeline ran' % name, r.stderr)
    return d


def print_json(a, d, tmp):
    out = os.path.join(tmp, os.path.basename(d) + '.print.json')
    r = run(a.cli, 'print', '--format=json', d)
    with open(out, 'w') as f:
        f.write(r.stdout)
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    return out, recs


def tools_ok(names):
    missing = [n for n, path in names if not path]
    ok(not missing, 'tools installed: %s (CI installs them)' % ', '.join(n for n, _ in names), 'missing %s' % missing)
    return not missing


def perfetto(a, d, tmp, printed, recs):
    out = os.path.join(tmp, os.path.basename(d) + '.pftrace')
    r = run(a.cli, 'export', '--format=perfetto', '-o', out, d)
    ok(r.returncode == 0, 'perfetto: export of a directory of traces', r.stderr)
    if not tools_ok([('protoc', a.protoc), ('python3', a.python)]):
        return
    c = run(a.python, a.check_perfetto, a.protoc, a.proto, out, printed)
    ok(c.returncode == 0 and c.stdout.splitlines()[-1].startswith('ok '),
       'perfetto: protoc decodes it; every event of every thread, in its process, equals print',
       c.stdout[-600:] + c.stderr)
    text = run('/bin/sh', '-c', '"%s" --decode=perfetto.protos.Trace -I "%s" "%s" < "%s"' %
               (a.protoc, os.path.dirname(a.proto), a.proto, out)).stdout
    pids = {x['process']['pid'] for x in recs}
    ok(text.count('process_name: "pipe_stage"') == len(pids) == 9,
       'perfetto: one process track per traced process (%d), named after its program' % len(pids))


def ctf(a, d, tmp, printed, recs):
    out = os.path.join(tmp, os.path.basename(d) + '.ctf')
    r = run(a.cli, 'export', '--format=ctf', '-o', out, d)
    ok(r.returncode == 0, 'ctf: export of a directory of traces', r.stderr)
    if not tools_ok([('babeltrace2', a.babeltrace), ('python3', a.python), ('python3-bt2', a.bt2_python)]):
        return
    c = run(a.python, a.check_ctf, 'cli', a.babeltrace, out, printed)
    ok(c.returncode == 0, 'ctf: babeltrace2 reads every event of every process as print shows it', c.stdout + c.stderr)
    c = run(a.bt2_python, a.check_ctf, 'bt2', out, printed)
    ok(c.returncode == 0, 'ctf: python3-bt2 too, each packet carrying its process\'s pid', c.stdout + c.stderr)
    meta = open(os.path.join(out, 'metadata')).read() if r.returncode == 0 else ''
    pids = sorted({x['process']['pid'] for x in recs})
    listed = sorted(int(l.split('=')[1].strip(' ;')) for l in meta.splitlines() if '_pid = ' in l)
    ok('processes = 9;' in meta and listed == pids, 'ctf: the env lists the 9 processes with their pids',
       '%s != %s' % (listed, pids))


def functions(a, tmp):
    ft = os.path.join(tmp, 'ft.data')
    os.mkdir(ft)
    d = pipeline(a.stage_ft, tmp, 'run-ft', {'SIMPLETRACE_FUNC_DIR': ft, 'SIMPLETRACE_FUNC_JOIN': ft,
                                            'SIMPLETRACE_FUNC_CLOCK': 'monotonic'})
    printed, recs = print_json(a, d, tmp)
    out = os.path.join(tmp, 'ft.pftrace')
    r = run(a.cli, 'export', '--format=perfetto', '-o', out, '--functions=' + ft, d)
    ok(r.returncode == 0 and 'of the function trace' in r.stderr, 'functions: perfetto export with --functions',
       r.stderr)
    slices = collections.Counter()
    if tools_ok([('protoc', a.protoc), ('python3', a.python)]):
        c = run(a.python, a.check_perfetto, a.protoc, a.proto, out, '-')
        ok(c.returncode == 0, 'functions: protoc decodes it; sequences, interning, tracks and nesting check out',
           c.stdout[-600:] + c.stderr)
        parents, stacks = collections.defaultdict(collections.Counter), collections.defaultdict(list)
        for line in c.stdout.splitlines()[:-1]:
            tid, _, typ, name = line.split(' ')[:4]
            st = stacks[tid]
            if typ == 'SLICE_BEGIN':
                slices[name] += 1
                parents[name][st[-1] if st else None] += 1
                st.append(name)
            elif typ == 'SLICE_END':
                st.pop()
        ok(parents['line'].get('handle_line') == 3 * LINES and parents['checksum'].get('line') == 3 * LINES,
           'functions: perfetto slices nest handle_line > line > checksum for every line of every stage',
           '%s %s' % (dict(parents['line']), dict(parents['checksum'])))
    out = os.path.join(tmp, 'ft.ctf')
    r = run(a.cli, 'export', '--format=ctf', '-o', out, '--functions=' + ft, d)
    ok(r.returncode == 0, 'functions: ctf export with --functions', r.stderr)
    if a.babeltrace and r.returncode == 0:
        bt = run(a.babeltrace, out)
        names = collections.Counter(l.split('] ')[1].split(':')[0].split(' ', 1)[1] if ') ' in l else '?'
                                    for l in bt.stdout.splitlines())
        entries = collections.Counter(l.split('function = "')[1].split('"')[0] for l in bt.stdout.splitlines()
                                      if 'function_entry:' in l)
        events = sum(n for k, n in names.items() if not k.startswith('function_'))
        # Perfetto's slices are the event pairs' calls plus the function trace's: the latter are CTF's entries.
        pairs = collections.Counter(x['name'][:-6] for x in recs if x['name'].endswith('_begin'))
        pairs += collections.Counter(x['name'][:-6] for x in recs if x['name'].endswith('_start'))
        ok(bt.returncode == 0 and names['function_entry'] == names['function_exit'] > 0 and
           events == len(recs) and entries + pairs == slices and entries['checksum'] >= 3 * LINES,
           'functions: babeltrace2 reads every record, and a function_entry/exit pair for each call Perfetto shows',
           '%s\n%s + %s != %s' % (names, entries, pairs, slices))


class Args:
    pass


def main():
    a = Args()
    (a.cli, a.stage, a.stage_ft, a.python, a.bt2_python, a.protoc, a.proto, a.babeltrace, a.check_perfetto,
     a.check_ctf) = sys.argv[1:11]
    with tempfile.TemporaryDirectory() as tmp:
        d = pipeline(a.stage, tmp, 'run')
        printed, recs = print_json(a, d, tmp)
        ok(len({x['process']['pid'] for x in recs}) == 9, 'print DIR: nine processes')
        perfetto(a, d, tmp, printed, recs)
        ctf(a, d, tmp, printed, recs)
        functions(a, tmp)
    return done()


if __name__ == '__main__':
    sys.exit(main())
