#!/usr/bin/env python3
"""simpletrace.compare(): `simpletrace compare` from Python.

  - the dict equals `simpletrace compare --format=json` on the same two runs
    of the demo program, for the options and filters Python passes (pairs,
    by, alpha, select), with paths or open Readers as runs; its counts
    equal those of print --format=json's records;
  - fail_if: the conditions met are the lines the command writes (same
    spans and events, same figures), none met exactly when it exits 0;
    a NAME in neither run is a warning;
  - to_frame(): one row per span, both runs' figures, their changes and the
    test as columns (pandas);
  - a damaged run: TraceError after both runs were measured, its figures
    the comparison the command prints before its message;
  - bad conditions and options: ValueError.

argv: SIMPLETRACE-CLI DEMO
"""
import json
import os
import re
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simpletrace  # noqa: E402
import latency_test  # noqa: E402  (its demo runs and helpers)
from latency_test import demo_trace, raises, records  # noqa: E402
from tap import done, ok, run  # noqa: E402

try:
    import pandas
except ImportError:
    pandas = None

CLI = None
MET = re.compile(r'^simpletrace compare: --fail-if=(\S+) met by (span|event) (\S+)(?: in group (\S+))?: (\S+) ')


def cli_compare(*args):
    """`simpletrace compare --format=json ARGS`: (exit status, the JSON object or None, stderr)."""
    r = run(CLI, 'compare', '--format=json', *args)
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr


def check_same_as_command(a, b):
    cases = [
        ({}, []),
        ({'by': 'worker', 'alpha': 0.05}, ['--by=worker', '--alpha=0.05']),
        ({'pairs': 'job_submit:job_done=queued@job', 'no_default_pairs': True},
         ['--pair=job_submit:job_done=queued@job', '--no-default-pairs']),
        ({'select': 'job_*,-job_submit', 'by': 'thread'}, ['--events=job_*,-job_submit', '--by=thread']),
    ]
    for kw, args in cases:
        status, want, err = cli_compare(*args, a, b)
        got = simpletrace.compare(a, b, **kw)
        ok(status == 0 and want and got == want and want['spans'] and got.met == [],
           'compare(%s) equals simpletrace compare --format=json %s' % (
               ', '.join('%s=%r' % i for i in kw.items()), ' '.join(args)), (err, got, want))
    with simpletrace.open(a) as ra, simpletrace.open(b) as rb:
        got = simpletrace.compare(ra, rb)
    ok(got == cli_compare(a, b)[1] and isinstance(got, simpletrace.Comparison), 'open Readers as the runs')
    jobs = [sum(1 for r in records(p) if r['name'] == 'job_done') for p in (a, b)]
    span = got['spans'][0]
    ok(span['name'] == 'job' and [span['base']['count'], span['new']['count']] == jobs and
       got['base']['trace'] == a and got['new']['trace'] == b,
       'the runs\' span counts are their job_done records in print --format=json; each run named by its path',
       (span, jobs))


def met_of_command(stderr):
    """(condition, kind, name, group, field) of each line the command writes for a condition met."""
    return sorted(m.groups() for m in map(MET.match, stderr.splitlines()) if m)


def check_fail_if(a, b):
    for conds in (['count>+10%', 'p99<-100%'], ['job:count<-10%', 'job_start:rate>+0%', 'p50>+1%'],
                  ['job:count>+1000%']):
        status, want, err = cli_compare(*['--fail-if=' + c for c in conds], a, b)
        got = simpletrace.compare(a, b, fail_if=conds)
        mine = sorted((m['condition'], m['kind'], m['name'], m['group'], m['field']) for m in got.met)
        ok(got == want and mine == met_of_command(err) and (status == 3) == bool(got.met) and status in (0, 3),
           'fail_if=%r: the conditions met are the command\'s lines (%d), exit status %d' % (conds, len(mine), status),
           (mine, err))
    got = simpletrace.compare(a, b, fail_if='job:count>+0%')
    spans = {s['name']: s for s in got['spans']}
    m = got.met[0] if got.met else {}
    ok(len(got.met) == 1 and m['base'] == spans['job']['base']['count'] and m['new'] == spans['job']['new']['count']
       and m['kind'] == 'span' and m['p_value'] is None and m['change_pct'] > 0,
       'a condition met: the span\'s figures in both runs and its change', got.met)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        simpletrace.compare(a, b, fail_if=['nothing_here:p99>+10%'])
    ok(len(w) == 1 and 'nothing_here' in str(w[0].message) and w[0].filename == __file__,
       'a condition naming a span in neither run: a warning at the caller', [str(x.message) for x in w])


def check_frame(a, b):
    got = simpletrace.compare(a, b, by='process')
    if pandas is None:
        ok(True, 'to_frame() # SKIP pandas is not installed (Debian python3-pandas)')
        return
    frame = got.to_frame()
    s = got['spans'][0]
    row = frame.iloc[0]
    ok(len(frame) == len(got['spans']) and row['base_p99_ns'] == s['base']['p99_ns'] and
       row['new_count'] == s['new']['count'] and
       (row['change_pct_p50'] == s['change_pct']['p50'] or s['change_pct']['p50'] is None) and
       bool(row['significant']) == s['significant'] and str(frame['base_p99_ns'].dtype) == 'UInt64' and
       str(frame['p_value'].dtype) == 'float64',
       'to_frame(): one row per span, both runs\' figures, their changes and the test', frame.T)
    events = got.to_frame('events')
    ok(list(events['name']) == [e['name'] for e in got['events']] and
       list(events['new_count']) == [e['new_count'] for e in got['events']], 'to_frame("events"): one row per event')


def check_damaged(a, b, tmp):
    cut = os.path.join(tmp, 'cut-new.trace')
    with open(b, 'rb') as f:
        data = f.read()
    # A cut inside a record (one on a record's end would be a whole, shorter trace): the first point from
    # the middle on where the command says NEW is damaged.
    for end in range(len(data) // 2 + 3, len(data)):
        with open(cut, 'wb') as f:
            f.write(data[:end])
        status, want, err = cli_compare('--fail-if=count>+0%', a, cut)
        if status == 1:
            break
    try:
        simpletrace.compare(a, cut, fail_if='count>+0%')
        ok(False, 'a damaged run raises TraceError')
    except simpletrace.TraceError as e:
        ok(status == 1 and e.figures == want and e.figures['new']['partial'] is True and
           isinstance(e.figures, simpletrace.Comparison) and not e.figures.met and str(e) in err,
           'a damaged NEW run: TraceError naming where, its figures the comparison the command prints first',
           (status, err, str(e)))


def check_errors(a, b, tmp):
    raises(ValueError, 'a malformed condition', lambda: simpletrace.compare(a, b, fail_if='p99>10%'), 'p99>10%')
    raises(ValueError, 'alpha=1', lambda: simpletrace.compare(a, b, alpha=1), 'between 0 and 1, not 1')
    raises(ValueError, 'functions= of one run', lambda: simpletrace.compare(a, b, functions=['x']), 'functions')
    raises(ValueError, 'a bad rule', lambda: simpletrace.compare(a, b, pairs='job_start'), 'bad pairing rule')
    raises(FileNotFoundError, 'a missing NEW run', lambda: simpletrace.compare(a, os.path.join(tmp, 'none')))
    reader = simpletrace.open(a)
    raises(ValueError, 'one reader as both runs', lambda: simpletrace.compare(reader, reader), 'one reader')


def main():
    global CLI
    CLI, demo = sys.argv[1:3]
    latency_test.CLI = CLI
    with tempfile.TemporaryDirectory() as tmp:
        a, b = os.path.join(tmp, 'base.trace'), os.path.join(tmp, 'new.trace')
        demo_trace(demo, a, 300, 3)
        demo_trace(demo, b, 500, 3)
        check_same_as_command(a, b)
        check_fail_if(a, b)
        check_frame(a, b)
        check_damaged(a, b, tmp)
        check_errors(a, b, tmp)
    return done()


if __name__ == '__main__':
    sys.exit(main())
