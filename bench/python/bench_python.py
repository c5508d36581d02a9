#!/usr/bin/env python3
"""bench/python: the Python module against QEMU's scripts/simpletrace.py (issue 15, "Measure").

On one synthetic trace of N records (tests/python/tracegen.py: locks with a
file name, I/O, ticks, signed values; 2.55 arguments per record), with the
same interpreter for both sides, best of R runs, each in a fresh process:

  - an Analyzer2 whose methods only count, through process(): ours vs
    simpletrace.py (the issue's target: at least 7x), and the bare Python
    loop calling such a method with three arguments and the four keyword
    arguments N times, the floor no reader can go below (target: ours
    within 1.3x of it);
  - plain iteration: `for rec in simpletrace.open(...)` (typed Records) and
    our read_trace_records() (QEMU's tuples) vs simpletrace.py's
    read_trace_records() (target: at least 20x);
  - numpy columns of every event (target: at least 10M records/s);
  - `python3 -m simpletrace` to /dev/null vs simpletrace.py's own printing;
  - peak RSS of each, and of the streaming ones again on a trace S times
    larger: flat while streaming.

QEMU's side runs when QEMU_SCRIPTS names a QEMU source tree's scripts/
directory (simpletrace.py and tracetool/). Figures and ratios only.

Usage: bench_python.py --pythonpath DIR [--python EXE] [--records N] [--runs R] [--scale S] [--dir DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'tests', 'python'))
import tracegen  # noqa: E402

# One workload, run in a child: prints {"seconds", "records"}; the parent adds the child's peak RSS.
CHILD = r'''
import json, sys, time
side, work, events, trace = sys.argv[1:5]
import simpletrace

class Counter(simpletrace.Analyzer2):
    def __init__(self):
        self.n = 0
    def lock_acquire(self, mutex, file, line, **kwargs):
        self.n += 1
    def lock_release(self, mutex, file, line, **kwargs):
        self.n += 1
    def io_submit(self, offset, nbytes, write, **kwargs):
        self.n += 1
    def catchall(self, *args, event, event_id, timestamp_ns, pid, **kwargs):
        self.n += 1

def analyzer2():
    c = Counter()
    simpletrace.process(events, trace, c)
    return c.n

def bare():
    c = Counter()
    m = c.lock_acquire
    with open(events) as f:
        e = simpletrace.read_events(f, events)[0]
    for i in range(int(trace)):
        m(i, b'../util/rcu.c', i, event=e, event_id='lock_acquire', timestamp_ns=i, pid=4242)
    return c.n

def iterate():
    n = 0
    for rec in simpletrace.open(trace, events):
        n += 1
    return n

def tuples():
    with open(events) as f:
        evs = simpletrace.read_events(f, events)
    n = 0
    with open(trace, 'rb') as f:
        simpletrace.read_trace_header(f)
        for rec in simpletrace.read_trace_records(evs, f, True):
            n += 1
    return n

def columns():
    cols = simpletrace.open(trace, events).columns()
    return sum(len(t['timestamp_ns']) for t in cols.values())

if work == 'columns':
    import numpy
t = time.perf_counter()
n = globals()[work]()
print(json.dumps({'seconds': time.perf_counter() - t, 'records': n}))
'''


def child(python, pythonpath, side, work, events, trace):
    """Runs one workload: (seconds, records, peak RSS in KiB)."""
    code = ('import os, resource, subprocess, sys\n'
            'r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, text=True)\n'
            'rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n'
            'sys.stdout.write(r.stdout.strip() + " %d" % rss if r.returncode == 0 else "")\n'
            'sys.exit(r.returncode)\n')
    env = dict(os.environ, PYTHONPATH=pythonpath)
    r = subprocess.run([python, '-c', code, python, '-c', CHILD, side, work, events, trace], env=env,
                       stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        return None
    report, rss = r.stdout.rsplit(' ', 1)
    report = json.loads(report)
    return report['seconds'], report['records'], int(rss)


def best(runs, fn):
    results = [fn() for _ in range(runs)]
    if any(r is None for r in results):
        return None
    return min(results)


def print_time(python, pythonpath, argv, runs):
    """Best wall time of `python argv > /dev/null` (startup included)."""
    import time
    env = dict(os.environ, PYTHONPATH=pythonpath)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        r = subprocess.run([python] + argv, env=env, stdout=subprocess.DEVNULL)
        if r.returncode != 0:
            return None
        times.append(time.perf_counter() - t)
    return min(times)


def rate(n, s):
    return '%.2fM/s' % (n / s / 1e6) if s else '-'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--pythonpath', required=True, help='the directory holding the package simpletrace/')
    ap.add_argument('--python', default='/usr/bin/python3')
    ap.add_argument('--records', type=int, default=1000000)
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--scale', type=int, default=2)
    ap.add_argument('--dir')
    a = ap.parse_args()
    qemu = os.environ.get('QEMU_SCRIPTS')
    if qemu and not os.path.exists(os.path.join(qemu, 'simpletrace.py')):
        sys.exit('QEMU_SCRIPTS=%s holds no simpletrace.py' % qemu)
    ours = os.path.abspath(a.pythonpath)
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        events, trace, big = (os.path.join(tmp, n) for n in ('trace-events', 'trace', 'trace-big'))
        tracegen.write(events, trace, a.records)
        version = subprocess.run([a.python, '-c', 'import sys; print(sys.version.split()[0])'],
                                 stdout=subprocess.PIPE, text=True).stdout.strip()
        print('%d records (%.1f MB), %s %s, best of %d runs; QEMU simpletrace.py: %s'
              % (a.records, os.path.getsize(trace) / 1e6, a.python, version, a.runs, qemu or
                 'not run (QEMU_SCRIPTS=DIR names a QEMU scripts/ directory)'))

        def run(side, work, path=trace, arg=None):
            pp = ours if side == 'ours' else qemu
            if pp is None:
                return None
            return best(a.runs, lambda: child(a.python, pp, side, work, events, arg or path))

        res = {(side, w): run(side, w) for side in ('ours', 'qemu') for w in ('analyzer2', 'tuples')}
        res['ours', 'iterate'] = run('ours', 'iterate')
        res['ours', 'columns'] = run('ours', 'columns')
        res['bare'] = run('ours', 'bare', arg=str(a.records))

        print('%-44s %9s %10s %8s %10s' % ('', 'seconds', 'records/s', 'peak RSS', 'vs QEMU'))

        def line(title, r, q=None, note=''):
            if r is None:
                print('%-44s %9s' % (title, 'not run' if qemu is None and title.endswith('simpletrace.py') else
                                     'failed'))
                return
            ratio = '%.1fx' % (q[0] / r[0]) if q else '-'
            print('%-44s %9.3f %10s %6.1fMB %10s  %s' % (title, r[0], rate(r[1], r[0]), r[2] / 1024, ratio, note))

        q = res['qemu', 'analyzer2']
        line('Analyzer2 counting, simpletrace.py', q)
        bare = res['bare']
        ours_a = res['ours', 'analyzer2']
        note = 'target >= 7x; %.2fx the bare call loop (target <= 1.3x)' % (ours_a[0] / bare[0]) \
            if ours_a and bare else ''
        line('Analyzer2 counting, ours', ours_a, q, note)
        line('bare loop: method(3 args, 4 keywords) x N', bare)
        q = res['qemu', 'tuples']
        line('iteration: read_trace_records, simpletrace.py', q)
        line('iteration: read_trace_records (tuples), ours', res['ours', 'tuples'], q)
        line('iteration: open() Records, ours', res['ours', 'iterate'], q, 'target >= 20x')
        line('numpy columns of every event, ours', res['ours', 'columns'], None, 'target >= 10M records/s')

        argv = [events, trace]
        tq = print_time(a.python, qemu, [os.path.join(qemu, 'simpletrace.py')] + argv, a.runs) if qemu else None
        to = print_time(a.python, ours, ['-m', 'simpletrace'] + argv, a.runs)
        print('%-44s %9s %10s %8s %10s' % ('text to /dev/null, simpletrace.py', '%.3f' % tq if tq else '-',
                                            rate(a.records, tq), '', ''))
        print('%-44s %9.3f %10s %8s %10s' % ('text to /dev/null, python3 -m simpletrace', to, rate(a.records, to),
                                              '', '%.1fx' % (tq / to) if tq else '-'))

        # Peak memory while streaming: the same workloads on a trace scale times larger.
        tracegen.write(events, big, a.records * a.scale, seed=2)
        print('peak RSS, %d vs %d records (streaming keeps it flat):' % (a.records, a.records * a.scale))
        for side, work in (('ours', 'analyzer2'), ('ours', 'iterate'), ('ours', 'tuples'), ('qemu', 'analyzer2')):
            small, large = res[side, work], run(side, work, big)
            if small and large:
                print('  %-4s %-10s %6.1f MB  %6.1f MB' % (side, work, small[2] / 1024, large[2] / 1024))


if __name__ == '__main__':
    main()
