#!/usr/bin/env python3
"""simpletrace.latency() and Reader.latency(): `simpletrace latency` from Python.

  - the dict equals `simpletrace latency --format=json` on the same traces
    (the demo program's: job_start/job_done per worker thread, and a keyed
    rule job_submit:job_done@job from the main thread to the workers), for
    the options and filters Python passes (pairs, no_default_pairs, by,
    slowest, select, tid, from_ns/to_ns, several traces);
  - its figures equal those computed here from `print --format=json`'s
    records (count, min, max, total exact; percentiles by nearest rank
    within the man page's 0.4%; the slowest durations);
  - to_frame(): one row per span, the scalar fields as columns (pandas), and
    without pandas an error naming its Debian package;
  - a damaged trace: TraceError after the records before the damage, its
    figures equal to what the command prints before its message;
  - warnings and errors: a rule pairing nothing, a by= argument no event
    declares, bad rules and options, missing files, undeclared readers.

argv: SIMPLETRACE-CLI DEMO
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
import simpletrace  # noqa: E402
from tap import done, ok, run  # noqa: E402

try:
    import pandas
except ImportError:
    pandas = None

CLI = None


def cli_latency(*args):
    """`simpletrace latency --format=json ARGS`: (exit status, the JSON object or None, stderr)."""
    r = run(CLI, 'latency', '--format=json', *args)
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr


def demo_trace(demo, path, jobs, workers):
    env = dict(os.environ, SIMPLETRACE='enable=*,file=' + path)
    r = subprocess.run([demo, '--jobs', str(jobs), '--workers', str(workers)], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    ok(r.returncode == 0 and os.path.getsize(path) > 0, 'the demo runs traced into %s' % os.path.basename(path),
       r.stderr)


def records(path):
    return [json.loads(x) for x in run(CLI, 'print', '--format=json', path).stdout.splitlines()]


def nearest_rank(sorted_values, q):
    return sorted_values[max(1, math.ceil(q * len(sorted_values))) - 1]


def spans_here(recs):
    """Durations of job_start..job_done per thread (no nesting in the demo) and job_submit..job_done by job."""
    per_thread, submitted = {}, {}
    jobs, queued = [], []
    for r in recs:
        if r['name'] == 'job_start':
            per_thread[r['pid']] = r
        elif r['name'] == 'job_submit':
            submitted[r['args']['job']] = r['timestamp_ns']
        elif r['name'] == 'job_done':
            begin = per_thread.pop(r['pid'])
            jobs.append((r['timestamp_ns'] - begin['timestamp_ns'], begin['args']['worker']))
            queued.append(r['timestamp_ns'] - submitted.pop(r['args']['job']))
    return jobs, queued


def figures_equal(span, durations, what):
    """The span's figures against durations computed here."""
    d = sorted(durations)
    exact = (span['count'], span['min_ns'], span['max_ns'], span['total_ns']) == (len(d), d[0], d[-1], sum(d))
    far = [(name, span[name + '_ns'], nearest_rank(d, q)) for name, q in
           (('p50', .5), ('p90', .9), ('p99', .99), ('p999', .999))
           if abs(span[name + '_ns'] - nearest_rank(d, q)) > 0.004 * nearest_rank(d, q)]
    slow = [s['duration_ns'] for s in span['slowest']] == d[::-1][:len(span['slowest'])]
    ok(exact and not far and slow and span['unfinished'] == span['unmatched_end'] == 0,
       '%s: count, min, max, total, percentiles and slowest equal those of print --format=json\'s records' % what,
       (span, far))


def check_same_as_command(a, b):
    """The dict is the command's JSON, for each way of asking."""
    cases = [
        ({}, []),
        ({'by': 'thread', 'slowest': 2}, ['--by=thread', '--slowest=2']),
        ({'by': 'worker'}, ['--by=worker']),
        ({'by': 'process', 'slowest': 0}, ['--by=process', '--slowest=0']),
        ({'pairs': 'job_submit:job_done=queued@job'}, ['--pair=job_submit:job_done=queued@job']),
        ({'pairs': ['job_submit:job_done=queued@job'], 'no_default_pairs': True, 'by': 'job', 'slowest': 1},
         ['--pair=job_submit:job_done=queued@job', '--no-default-pairs', '--by=job', '--slowest=1']),
        ({'select': 'job_*,-job_submit'}, ['--events=job_*,-job_submit']),
    ]
    recs = records(a)  # a window holding the middle half of the records (counted from the first, as --from)
    ts = sorted(r['timestamp_ns'] - recs[0]['timestamp_ns'] for r in recs)
    lo, hi = ts[len(ts) // 4], ts[len(ts) * 3 // 4]
    cases.append(({'from_ns': '%dns' % lo, 'to_ns': hi}, ['--from=%dns' % lo, '--to=%d' % hi]))
    for kw, args in cases:
        status, want, err = cli_latency(*args, a)
        got = simpletrace.latency(a, **kw)
        ok(status == 0 and want and got == want and want['spans'],
           'latency(%s) equals simpletrace latency --format=json %s' % (
               ', '.join('%s=%r' % i for i in kw.items()), ' '.join(args)), (err, got, want))
    tid = recs[-1]['pid']
    status, want, err = cli_latency('--tid=%d' % tid, a)
    ok(status == 0 and simpletrace.latency(a, tid=tid) == want, 'tid= as --tid', err)
    status, want, err = cli_latency(a, b)
    got = simpletrace.latency([a, b])
    ok(status == 0 and got == want and any(' %s %s --from=' % (a, b) in s['print'] for s in got['spans'][0]['slowest']),
       'two traces: as the command reads both, and each slowest span\'s print command names both', (err, got))
    with simpletrace.open(a) as reader:
        first = [next(reader) for _ in range(3)]
        rest = reader.latency(by='thread')
    with simpletrace.open(a) as reader:
        whole = simpletrace.latency(reader, by='thread')
    status, want, err = cli_latency('--by=thread', a)
    ok(whole == want, 'latency() of an open Reader', (whole, want))
    ok(rest['spans'] == want['spans'] and rest['records'] == want['records'] - 3 and
       first[0].name == 'demo_start' and isinstance(rest, simpletrace.Latency),
       'Reader.latency() measures the records not read yet (the first three are no span)', (rest, want))


def check_figures(a):
    recs = records(a)
    jobs, queued = spans_here(recs)
    got = simpletrace.latency(a)
    ok(len(got['spans']) == 1 and got['spans'][0]['name'] == 'job' and got['spans'][0]['group'] is None and
       got['records'] == len(recs) and got['partial'] is False, 'one span "job", no group, every record analysed',
       got)
    figures_equal(got['spans'][0], [d for d, _ in jobs], 'job_start:job_done')
    by = simpletrace.latency(a, by='worker')
    groups = {s['group']: s for s in by['spans']}
    workers = sorted({w for _, w in jobs})
    ok(sorted(groups) == [str(w) for w in workers], 'by="worker": a group per worker', groups)
    for w in workers:
        figures_equal(groups[str(w)], [d for d, x in jobs if x == w], 'by="worker", worker %d' % w)
    keyed = simpletrace.latency(a, pairs=['job_submit:job_done=queued@job'])
    spans = {s['name']: s for s in keyed['spans']}
    figures_equal(spans['queued'], queued, 'job_submit:job_done=queued@job (submitted and done on other threads)')
    ok(all(s['tid'] != s['end_tid'] and isinstance(s['key'], int) for s in spans['queued']['slowest']),
       'the keyed spans began on the main thread, ended on a worker, with their job as key',
       spans['queued']['slowest'])


def check_frame(a, b):
    got = simpletrace.latency([a, b], by='process')  # a group per trace
    if pandas is None:
        ok(True, 'to_frame() # SKIP pandas is not installed (Debian python3-pandas)')
        return
    frame = got.to_frame()
    scalar = [k for k, v in got['spans'][0].items() if not isinstance(v, (list, dict))]
    rows = [{c: (None if pandas.isna(v) else v) for c, v in row.items()} for row in frame.to_dict('records')]
    want = [{c: s[c] for c in scalar} for s in got['spans']]
    ok(len(frame) == len(got['spans']) > 1 and list(frame.columns) == scalar and rows == want and
       str(frame['p99_ns'].dtype) == 'UInt64', 'to_frame(): one row per span, its scalar fields as columns',
       (frame, want))
    empty = simpletrace.latency(a, pairs='demo_start:demo_stop', no_default_pairs=True, select='job_*').to_frame()
    ok(len(empty) == 0 and list(empty.columns) == scalar, 'to_frame() without spans: no row, the same columns',
       empty.columns)


def check_frame_without_pandas(a):
    """pandas absent (a None entry in sys.modules makes its import fail): the error names its Debian package."""
    saved = sys.modules.get('pandas')
    sys.modules['pandas'] = None
    try:
        figures = simpletrace.latency(a)
        ok(figures['spans'], 'latency() needs no pandas')
        raises(ModuleNotFoundError, 'to_frame() without pandas', figures.to_frame, 'python3-pandas')
    finally:
        if saved is None:
            del sys.modules['pandas']
        else:
            sys.modules['pandas'] = saved


def check_damaged(a, tmp):
    cut = os.path.join(tmp, 'cut.trace')
    with open(a, 'rb') as f:
        data = f.read()
    # A cut inside a record (one that fell on a record's end would be a whole, shorter trace): the first point
    # from two thirds on where the command says the trace is damaged.
    for end in range(len(data) * 2 // 3 + 5, len(data)):
        with open(cut, 'wb') as f:
            f.write(data[:end])
        status, want, err = cli_latency(cut)
        if status == 1:
            break
    try:
        simpletrace.latency(cut)
        ok(False, 'a damaged trace raises TraceError')
    except simpletrace.TraceError as e:
        ok(status == 1 and e.figures == want and e.figures['partial'] is True and e.figures['spans'] and
           isinstance(e.figures, simpletrace.Latency) and e.offset > 0 and str(e) in err,
           'a damaged trace: TraceError naming where, its figures those the command prints before its message',
           (status, err, str(e), getattr(e, 'figures', None)))
    head = os.path.join(tmp, 'head.trace')
    with open(head, 'wb') as f:
        f.write(data[:30])
    try:
        simpletrace.latency(head)
        ok(False, 'a trace damaged before its first record raises TraceError')
    except simpletrace.TraceError as e:
        ok(getattr(e, 'figures', None) is None, 'damaged before its first record: TraceError without figures', e)


def raises(exc, what, fn, text=''):
    try:
        fn()
        ok(False, what + ': raises ' + exc.__name__)
    except exc as e:
        ok(text in str(e), '%s: %s' % (what, e))


def check_errors(a, tmp):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        simpletrace.latency(a, pairs='nothing_begin:nothing_end', by='no_such_arg')
    texts = [str(x.message) for x in w]
    ok(len(w) == 2 and "'nothing_begin:nothing_end' pairs no declared events" in texts[0] and
       "no event declares an argument 'no_such_arg'" in texts[1] and w[0].filename == __file__,
       'a rule that pairs nothing and a by= argument no event declares: warnings at the caller', texts)
    raises(ValueError, 'a bad rule', lambda: simpletrace.latency(a, pairs=['job_start']), 'bad pairing rule')
    raises(TypeError, 'a rule that is no str', lambda: simpletrace.latency(a, pairs=[3]))
    raises(ValueError, 'slowest=-1', lambda: simpletrace.latency(a, slowest=-1), 'slowest')
    raises(ValueError, 'by=""', lambda: simpletrace.latency(a, by=''), 'by')
    raises(FileNotFoundError, 'a missing trace', lambda: simpletrace.latency(os.path.join(tmp, 'none.trace')))
    raises(simpletrace.OpenError, 'a missing function trace',
           lambda: simpletrace.latency(a, functions=os.path.join(tmp, 'no-uftrace.data')))
    raises(ValueError, 'a reader delivering undeclared records',
           lambda: simpletrace.open(a, undeclared=True).latency(), 'undeclared')
    reader = simpletrace.open(a)
    reader.close()
    raises(ValueError, 'a closed reader', reader.latency, 'closed')


def check_docs():
    doc = simpletrace.latency.__doc__ + simpletrace.Latency.__doc__
    stubs = open(os.path.join(os.path.dirname(simpletrace.__file__), '__init__.pyi')).read()
    ok(all(w in doc for w in ('pairs', 'no_default_pairs', 'by', 'slowest', 'functions', 'figures', 'to_frame')) and
       'def latency(' in stubs and 'class Latency(' in stubs and 'latency' in simpletrace.__doc__,
       'latency() and Latency are documented, in the docstrings and the type stubs')


def main():
    global CLI
    CLI, demo = sys.argv[1:3]
    with tempfile.TemporaryDirectory() as tmp:
        a, b = os.path.join(tmp, 'a.trace'), os.path.join(tmp, 'b.trace')
        demo_trace(demo, a, 400, 3)
        demo_trace(demo, b, 50, 2)
        check_same_as_command(a, b)
        check_figures(a)
        check_frame(a, b)
        check_frame_without_pandas(a)
        check_damaged(a, tmp)
        check_errors(a, tmp)
        check_docs()
    return done()


if __name__ == '__main__':
    sys.exit(main())
