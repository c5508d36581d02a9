#!/usr/bin/env python3
"""simpletrace latency --functions: "total and self time per function, as `uftrace report` shows them".

funcs_prog runs main and 2 workers, each run_batch() > handle() > parse(), fib() (direct recursion),
is_even()/is_odd() (mutual recursion), with a batch_begin/batch_end event pair inside run_batch; its
events go to a trace, its calls to a uftrace.data directory (libsimpletrace-func, same clock).

What uftrace counts (its utils/report.c, read for this test): Calls is every call; Self time is the sum
over every call of its duration minus the calls made directly inside it; Total time is the sum over the
calls that are not recursive, i.e. whose function is not already on the thread's stack below them, so
a recursion's time is counted once. simpletrace latency's total_ns is the sum of every span's duration
(each call is a span, simpletrace-latency(1)), so the two totals agree for functions never on the stack
twice, and differ by design for recursive ones.

Checked, with only the calls as spans (--no-default-pairs: the events stay instants):
  - against `uftrace report -d DIR` (its printed figures, 3 digits in their unit, so within one unit of
    the last digit): every function it lists with the same calls and self time; the same total for the
    functions never recursive; for the recursive ones (fib, is_even, is_odd) uftrace's total equals the
    outermost calls' time computed from `uftrace dump` (what uftrace means) and latency's the sum of all
    calls (what latency means), which is larger;
  - against the calls of `uftrace dump -d DIR` (ns timestamps, paired per thread here): count, min,
    max, total and self exact, percentiles within 0.4% of nearest rank, the 3 slowest with their begin
    and thread.
With the built-in pairs too, the batch span nests between run_batch and handle: the functions' counts
and totals do not change, run_batch's self time loses the batch's duration, batch's self time is its
duration minus the handle calls in it, and the self times of all spans still sum to the same.

argv: SIMPLETRACE FUNCS_PROG UFTRACE
"""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
sys.path.insert(0, HERE)
from tap import done, ok, run  # noqa: E402
import truth  # noqa: E402

ST, PROG, UFTRACE = sys.argv[1:4]
UNITS = {'ns': 1, 'us': 1000, 'ms': 1000000, 's': 1000000000}
RECURSIVE = ('fib', 'is_even', 'is_odd')


def ns_of(stamp):
    """'1459.757624491' (s.ns, as uftrace dump prints) -> ns, exactly."""
    sec, _, frac = stamp.partition('.')
    return int(sec) * 1000000000 + int(frac.ljust(9, '0')[:9])


def dump_calls(ft):
    """Every call of uftrace dump: {function: [dict(begin_ns, duration_ns, self_ns, tid, recursive)]}."""
    r = run(UFTRACE, 'dump', '-d', ft)
    ok(r.returncode == 0, 'uftrace dump reads the function trace', r.stderr)
    calls = collections.defaultdict(list)
    stacks = collections.defaultdict(list)
    for line in r.stdout.splitlines():
        m = re.match(r'\s*(\d+\.\d+)\s+(\d+): \[(entry|exit )\] (\S+?)\(', line)
        if not m:
            continue
        ts, tid, kind, name = ns_of(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
        st = stacks[tid]
        if kind == 'entry':
            st.append([name, ts, 0])
            continue
        fname, begin, child = st.pop()
        assert fname == name, (fname, name)
        d = ts - begin
        if st:
            st[-1][2] += d
        calls[name].append(dict(begin_ns=begin, duration_ns=d, self_ns=d - child, tid=tid, end_tid=tid, key=None,
                                recursive=any(f[0] == name for f in st)))
    ok(all(not st for st in stacks.values()), 'uftrace dump: every call returned')
    return calls


def report_rows(ft):
    """uftrace report: {function: (total ns, its precision, self ns, its precision, calls)}."""
    r = run(UFTRACE, 'report', '-d', ft)
    ok(r.returncode == 0 and '  Function' in r.stdout, 'uftrace report reads the function trace', r.stderr)
    rows = {}
    for line in r.stdout.splitlines():
        m = re.match(r'\s*([\d.]+) +(\w+) +([\d.]+) +(\w+) +(\d+)  (\S+)$', line)
        if m:
            digits = lambda x: 10 ** -len(x.partition('.')[2])  # noqa: E731
            rows[m.group(6)] = (float(m.group(1)) * UNITS[m.group(2)], UNITS[m.group(2)] * digits(m.group(1)),
                                float(m.group(3)) * UNITS[m.group(4)], UNITS[m.group(4)] * digits(m.group(3)),
                                int(m.group(5)))
    return rows


def latency(*args):
    r = run(ST, 'latency', '--format=json', *args)
    ok(r.returncode == 0, 'latency %s: exit 0' % ' '.join(args[:-1]), r.stderr)
    return {s['name']: s for s in json.loads(r.stdout)['spans']} if r.returncode == 0 else {}


def main():
    if not UFTRACE:
        ok(False, 'uftrace is needed (scripts/deps.sh installs it)')
        return done()
    tmp = tempfile.TemporaryDirectory(prefix='st-latency-functions-')
    trace, ft = os.path.join(tmp.name, 'app.trace'), os.path.join(tmp.name, 'uftrace.data')
    os.mkdir(ft)
    env = dict(os.environ, SIMPLETRACE='enable=*,file=%s,clock=monotonic' % trace, SIMPLETRACE_FUNC_DIR=ft,
               SIMPLETRACE_FUNC_CLOCK='monotonic')
    p = subprocess.run([PROG, '2', '40'], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    ok(p.returncode == 0, 'funcs_prog ran with both tracers', p.stderr)

    calls = dump_calls(ft)
    rows = report_rows(ft)
    recursive = sorted(f for f, cs in calls.items() if any(c['recursive'] for c in cs))
    ok(recursive == sorted(RECURSIVE), 'the recursive functions are %s' % ', '.join(RECURSIVE), recursive)
    ok(set(rows) == set(calls), 'uftrace report and dump list the same functions', '%s\n%s' % (rows, calls.keys()))

    lat = latency('--no-default-pairs', '--slowest=3', '--functions=' + ft, trace)
    ok(set(lat) == set(rows), 'latency --functions: one span per function uftrace reports',
       '%s\n%s' % (sorted(lat), sorted(rows)))

    # Against uftrace report.
    for f, (total, total_prec, self_, self_prec, ncalls) in sorted(rows.items()):
        s = lat.get(f)
        if not s:
            continue
        ok(s['count'] == ncalls and s['unfinished'] == 0 and s['unmatched_end'] == 0,
           '%s: %d calls, as uftrace report' % (f, ncalls), s['count'])
        ok(abs(s['self_ns'] - self_) <= self_prec, '%s: self time as uftrace report (%d ns)' % (f, self_),
           s['self_ns'])
        if f in RECURSIVE:
            outer = sum(c['duration_ns'] for c in calls[f] if not c['recursive'])
            every = sum(c['duration_ns'] for c in calls[f])
            ok(abs(total - outer) <= total_prec and s['total_ns'] == every and every > outer,
               '%s (recursive): uftrace\'s total is its outermost calls\' %d ns, latency\'s all calls\' %d ns'
               % (f, outer, every), 'uftrace %s latency %d' % (total, s['total_ns']))
        else:
            ok(abs(s['total_ns'] - total) <= total_prec, '%s: total time as uftrace report (%d ns)' % (f, total),
               s['total_ns'])

    # Against every call of uftrace dump.
    for f, cs in sorted(calls.items()):
        s = lat.get(f)
        if not s:
            continue
        fig = truth.Figures()
        fig.spans = cs
        problems = truth.problems(s, fig)
        ok(not problems, '%s: every figure equals the calls of uftrace dump' % f, '\n'.join(problems))
        want = [(c['duration_ns'], c['begin_ns'], c['tid']) for c in truth.slowest(cs, 3)]
        got = [(w['duration_ns'], w['begin_ns'], w['tid']) for w in s['slowest']]
        ok(got == want, '%s: the 3 slowest calls, with begin and thread' % f, '%s\n%s' % (got, want))

    # With the events' spans too.
    both = latency('--functions=' + ft, trace)
    r = run(ST, 'print', '--format=json', trace)
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    batches = {}
    for x in recs:
        if x['name'] == 'batch_begin':
            batches[x['pid']] = [x['timestamp_ns'], None]
        elif x['name'] == 'batch_end':
            batches[x['pid']][1] = x['timestamp_ns']
    b = both.get('batch', {})
    durs = sorted(e - s for s, e in batches.values())
    ok(b.get('count') == 3 and b.get('total_ns') == sum(durs) and b.get('min_ns') == durs[0],
       'with the events: 3 batch spans, their durations from print', b)
    ok(all(both[f]['count'] == lat[f]['count'] and both[f]['total_ns'] == lat[f]['total_ns'] for f in lat),
       'with the events: every function\'s count and total unchanged')
    handle_in = sum(c['duration_ns'] for c in calls['handle']
                    if batches[c['tid']][0] <= c['begin_ns'] <= batches[c['tid']][1])
    ok(b.get('self_ns') == sum(durs) - handle_in, 'with the events: batch\'s self time is its duration minus the '
       'handle calls in it', '%s vs %d' % (b.get('self_ns'), sum(durs) - handle_in))
    ok(both['run_batch']['self_ns'] == lat['run_batch']['total_ns'] - sum(durs),
       'with the events: run_batch\'s self time is its total minus the batch in it',
       '%d vs %d' % (both['run_batch']['self_ns'], lat['run_batch']['total_ns'] - sum(durs)))
    ok(sum(s['self_ns'] for s in both.values()) == sum(s['self_ns'] for s in lat.values()),
       'with the events: the self times of all spans sum to the same')
    return done()


if __name__ == '__main__':
    sys.exit(main())
