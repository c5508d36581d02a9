#!/usr/bin/env python3
"""simpletrace compare against the truth (issue 23, "Tests"): runs of spans_prog compared, every figure
checked against what this test computes itself from `simpletrace print --format=json` (truth.py), the
Mann-Whitney U test against this test's own (midranks of the exact durations, tie correction,
continuity correction; compare ranks histogram buckets, 0.4% wide, so z agrees within a tolerance).

  - a run whose durations are 50% longer (--shift-pct=50): every span significant, p50's change_pct
    equal to the truth's (within the percentiles' 0.4% each), near +50%; each run's latency fields
    equal to the truth; events' counts, rates and changes equal to print's;
  - two runs of the same distribution (other seeds, run at the same time so the machine's load is
    shared): no span significant. A busy machine can make one run really slower; then the truth's own
    test says so too, and the pair is run again (3 tries): compare must agree with the truth's test on
    every try, and say "not significant" on one where the truth does;
  - --fail-if: exit 3 with one line per span or event that met a condition, 0 when none does (a
    duration's change that is not significant never counts; a count's needs no test), 2 with the
    place of the mistake for malformed ones; event counts that drop (fewer jobs);
  - text format = JSON (counts, verdicts); a directory as a run; usage errors; a damaged run exits 1.

argv: SIMPLETRACE SPANS_PROG SPANS_EVENTS
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
sys.path.insert(0, HERE)
from tap import done, ok, run  # noqa: E402
import truth  # noqa: E402

ST, PROG, EVENTS = sys.argv[1:4]
KEYED = 'req_submit:req_complete=request@req'
ALPHA = 0.01
COUNT, BASE_US = '--count=300', '--base-us=2000'


def start(path, *args):
    env = dict(os.environ, SIMPLETRACE='enable=*,file=%s,clock=monotonic' % path)
    return subprocess.Popen([PROG] + list(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_all(jobs):
    """Runs spans_prog once per (path, args...) at the same time; True when all exit 0."""
    procs = [start(path, *args) for path, *args in jobs]
    outs = [p.communicate(timeout=180) for p in procs]
    good = all(p.returncode == 0 for p in procs)
    ok(good, 'spans_prog runs: %s' % ', '.join(os.path.basename(j[0]) for j in jobs),
       '\n'.join(o[1] for o in outs))
    return good


def records(trace):
    r = run(ST, 'print', '--format=json', trace)
    if r.returncode != 0:
        ok(False, 'print --format=json ' + trace, r.stderr)
    return [json.loads(line) for line in r.stdout.splitlines()]


class Run:
    """A trace and its truth: spans by (name, group), events' counts, first and last timestamps."""

    def __init__(self, path, by=None):
        self.path = path
        recs = records(path)
        self.spans = truth.spans(recs, truth.declarations(EVENTS), [KEYED], by=by)
        self.counts = {}
        for r in recs:
            self.counts[r['name']] = self.counts.get(r['name'], 0) + 1
        self.first, self.last = recs[0]['timestamp_ns'], recs[-1]['timestamp_ns']
        self.seconds = (self.last - self.first) / 1e9


def compare(*args, fmt='json'):
    return run(ST, 'compare', '--format=' + fmt, '--pair=' + KEYED, *args)


def mwu(a, b):
    """z and two-sided p of the Mann-Whitney U of b against a: midranks, tie and continuity corrections."""
    pooled = sorted([(x, 0) for x in a] + [(y, 1) for y in b])
    n1, n2, n = len(a), len(b), len(a) + len(b)
    rank_b, ties, i = 0.0, 0.0, 0
    while i < n:
        j = i
        while j < n and pooled[j][0] == pooled[i][0]:
            j += 1
        mid = (i + 1 + j) / 2  # ranks i+1 .. j
        rank_b += mid * sum(1 for k in range(i, j) if pooled[k][1] == 1)
        t = j - i
        ties += t ** 3 - t
        i = j
    u = rank_b - n2 * (n2 + 1) / 2
    mean = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    d = max(abs(u - mean) - 0.5, 0)
    z = math.copysign(d / math.sqrt(var), u - mean) if var > 0 else 0.0
    return z, math.erfc(abs(z) / math.sqrt(2))


def pct(base, new):
    return None if base == 0 else (new - base) / base * 100


def check_runs(what, doc, base, new):
    """Each span's latency fields in both runs and each event's figures against the truth."""
    problems = []
    spans = {(s['name'], s['group']): s for s in doc['spans']}
    want = set(base.spans) | set(new.spans)
    if set(spans) != want:
        problems.append('spans %s, truth %s' % (sorted(spans, key=str), sorted(want, key=str)))
    for k, s in spans.items():
        for side, r in (('base', base), ('new', new)):
            fig = r.spans.get(k, truth.Figures())
            problems += ['%s %s: %s' % (k, side, p) for p in truth.problems(s[side], fig)]
    names = set(base.counts) | set(new.counts)
    events = {e['name']: e for e in doc['events']}
    for name in names:
        e = events.get(name)
        b, n = base.counts.get(name, 0), new.counts.get(name, 0)
        if not e:
            problems.append('event %s missing' % name)
            continue
        want_pct = pct(b, n)
        if e['base_count'] != b or e['new_count'] != n or \
                (want_pct is None) != (e['change_pct'] is None) or (want_pct is not None and abs(e['change_pct'] - want_pct) > 1e-3):
            problems.append('event %s: %s -> %s (%s), print %d -> %d' % (name, e['base_count'], e['new_count'],
                                                                       e['change_pct'], b, n))
        for side, r, c in (('base', base, b), ('new', new, n)):
            if abs(e[side + '_rate'] - c / r.seconds) > 1e-4 * max(c / r.seconds, 1):
                problems.append('event %s %s_rate %s, print %s' % (name, side, e[side + '_rate'], c / r.seconds))
    for e in doc['events']:
        if e['name'] not in names and (e['base_count'] or e['new_count']):
            problems.append('event %s counted, print has none' % e['name'])
    ok(not problems, what + ': both runs\' figures and events equal the truth', '\n'.join(problems[:20]))
    return spans


def test_agrees(what, s, base, new, k):
    """compare's z and verdict against this test's Mann-Whitney U of the exact durations."""
    z, p = mwu(base.spans[k].durations(), new.spans[k].durations())
    close = abs(s['z'] - z) <= 0.02 * abs(z) + 0.1
    verdict = s['significant'] == (p < ALPHA) or ALPHA / 3 < p < ALPHA * 3  # a borderline p may fall either side
    ok(close and verdict and s['test'] == 'mann-whitney-u',
       '%s %s: z %.3f p %.3g, the test\'s own z %.3f p %.3g' % (what, k[0], s['z'], s['p_value'], z, p))
    return p


def test_shift(tmp, base, shifted):
    new = Run(shifted)
    r = compare(base.path, shifted)
    ok(r.returncode == 0 and r.stderr == '', 'compare base shifted: exit 0 silently', r.stderr)
    doc = json.loads(r.stdout)
    spans = check_runs('shift', doc, base, new)
    for k in sorted(spans, key=str):
        p = test_agrees('shift', spans[k], base, new, k)
        ok(spans[k]['significant'] and spans[k]['p_value'] < 1e-6 and p < 1e-6,
           'shift %s: significant (p %.3g)' % (k[0], spans[k]['p_value']))
    io = spans[('io', None)]
    b, n = base.spans[('io', None)].durations(), new.spans[('io', None)].durations()
    want = pct(truth.nearest_rank(b, '0.5'), truth.nearest_rank(n, '0.5'))
    got = io['change_pct']['p50']
    # The truth's own change is the drawn +50% and what the machine added to either run: near it.
    ok(abs(got - want) <= 1.5 and 35 <= want <= 75,
       'shift: io p50 change %+.2f%%, the truth\'s %+.2f%% (near +50%%)' % (got, want))
    for q in ('p90', 'p99'):
        want = pct(truth.nearest_rank(b, '0.' + q[1:]), truth.nearest_rank(n, '0.' + q[1:]))
        ok(abs(io['change_pct'][q] - want) <= 1.5, 'shift: io %s change %+.2f%%, the truth\'s %+.2f%%'
           % (q, io['change_pct'][q], want))

    # --fail-if: the spans whose p50 rose by more than 20% per the truth, and nothing else.
    rise = sorted(k[0] for k in spans if pct(truth.nearest_rank(base.spans[k].durations(), '0.5'),
                                             truth.nearest_rank(new.spans[k].durations(), '0.5')) > 20)
    r = compare('--fail-if=p50>+20%', base.path, shifted)
    met = sorted(re.findall(r'^simpletrace compare: --fail-if=p50>\+20% met by span (\S+): p50 ', r.stderr, re.M))
    ok(r.returncode == 3 and met == rise and len(r.stderr.splitlines()) == len(rise),
       'fail-if p50>+20%%: exit 3 (%d), met by %s, the truth %s' % (r.returncode, met, rise), r.stderr)
    for expr in ('io:p50>+90%', 'io:p50<-20%', 'p50<+0%', 'count<-1%'):
        r = compare('--fail-if=' + expr, base.path, shifted)
        ok(r.returncode == 0 and r.stderr == '', 'fail-if %s: not met, exit 0' % expr, r.stderr)
    r = compare('--fail-if=io:p50>+90%', '--fail-if=io:p50>+20%', base.path, shifted)
    ok(r.returncode == 3 and len(r.stderr.splitlines()) == 1 and 'io:p50>+20% met by span io' in r.stderr,
       'two conditions, one met: exit 3, one line', r.stderr)
    r = compare('--fail-if=iox:p50>+1%', base.path, shifted)
    ok(r.returncode == 0 and "no span named 'iox' in either run (did you mean 'io'?)" in r.stderr,
       'fail-if on a name in neither run: a warning with the nearest name', r.stderr)

    # The text format: the same counts and verdicts.
    r = compare(base.path, shifted, fmt='text')
    blocks = re.findall(r'^(\S+): (\d+) -> (\d+) spans .*?; p = (\S+): (SIGNIFICANT|not significant)', r.stdout, re.M)
    got = {(b[0], None): (int(b[1]), int(b[2]), b[4] == 'SIGNIFICANT') for b in blocks}
    want = {k: (s['base']['count'], s['new']['count'], s['significant']) for k, s in spans.items()}
    ok(r.returncode == 0 and got == want and '%d of %d spans changed significantly' % (len(want), len(want)) in r.stdout,
       'text: each span\'s counts and verdict as the JSON', r.stdout[-2000:])


def test_same(tmp, base_args):
    """Two runs of one distribution (seeds differ); tried again while the machine made one really differ."""
    for attempt in range(3):
        a, b = os.path.join(tmp, 'same-a.trace'), os.path.join(tmp, 'same-b.trace')
        if not run_all([(a, COUNT, BASE_US, '--seed=11'), (b, COUNT, BASE_US, '--seed=16')]):
            return
        ra, rb = Run(a), Run(b)
        r = compare('--fail-if=p50>+1%', '--fail-if=p99>+1%', '--fail-if=mean<-1%', a, b)
        doc = json.loads(r.stdout)
        spans = check_runs('same (try %d)' % (attempt + 1), doc, ra, rb)
        truth_same = all(test_agrees('same (try %d)' % (attempt + 1), spans[k], ra, rb, k) >= ALPHA for k in spans)
        if truth_same:
            sig = [k[0] for k, s in spans.items() if s['significant']]
            ok(not sig and r.returncode == 0 and r.stderr == '',
               'same distribution: no span significant, duration conditions not met (exit %d)' % r.returncode,
               '%s\n%s' % (sig, r.stderr))
            # A count needs no test: unchanged counts are above -1%, every span and event says so.
            r = compare('--fail-if=count>-1%', a, b)
            ok(r.returncode == 3 and len(r.stderr.splitlines()) == len(doc['spans']) + len(doc['events']),
               'count>-1%% on unchanged counts: met by every span and event (%d lines)' % len(r.stderr.splitlines()))
            return
        print('# the runs really differ (a busy machine?): trying again')
    ok(False, 'same distribution: the runs differed in 3 tries by this test\'s own measure (machine too busy)')


def test_counts(tmp, base):
    fewer = os.path.join(tmp, 'fewer.trace')
    if not run_all([(fewer, '--count=240', '--base-us=300', '--seed=14')]):
        return
    new = Run(fewer)
    r = compare(base.path, fewer)
    doc = json.loads(r.stdout)
    check_runs('fewer jobs', doc, base, new)
    drop = pct(base.counts['job_enter'], new.counts['job_enter'])
    for expr, status in (('job_enter:count<-15%', 3), ('job_enter:count<-25%', 0), ('job_enter:count>+0%', 0)):
        r = compare('--fail-if=' + expr, base.path, fewer)
        ok(r.returncode == status, 'fail-if %s (job_enter %+.1f%%): exit %d' % (expr, drop, status), r.stderr)
    r = compare('--fail-if=job_enter:count<-15%', base.path, fewer)
    ok('met by event job_enter: count %d -> %d (%+.1f%%)' % (base.counts['job_enter'], new.counts['job_enter'], drop)
       in r.stderr, 'the line names the event, both counts and the change', r.stderr)
    want = sorted(n for n in set(base.counts) | set(new.counts) if pct(base.counts.get(n, 0), new.counts.get(n, 0)) is not None
                  and pct(base.counts.get(n, 0), new.counts.get(n, 0)) < -5)
    r = compare('--fail-if=count<-5%', base.path, fewer)
    met = sorted(re.findall(r'met by event (\S+):', r.stderr))
    ok(r.returncode == 3 and met == want, 'count<-5%%: the events that dropped: %s, print %s' % (met, want), r.stderr)


def test_errors(tmp, base, shifted):
    for expr, where in (('p99>10%', 'character 5'), ('p99', 'character 4'), ('p98>+1%', 'character 1'),
                        ('io:>+1%', 'character 4'), (':p99>+1%', 'character 1'), ('p99>+1', 'character 6'),
                        ('p99>+1%x', 'character 8')):
        r = compare('--fail-if=' + expr, base.path, shifted)
        ok(r.returncode == 2 and "bad --fail-if '%s'" % expr in r.stderr and where in r.stderr and r.stdout == '',
           'malformed --fail-if=%s: exit 2 naming %s' % (expr, where), r.stderr)
    for args, says in ((['--alpha=0', base.path, shifted], 'bad --alpha'),
                       (['--alpha=x', base.path, shifted], 'bad --alpha'),
                       ([base.path], 'need [TRACE-EVENTS...] BASE NEW'),
                       ([base.path, shifted, shifted], 'more than two runs'),
                       (['--functions=' + tmp, base.path, shifted], 'give it twice'),
                       (['--html=' + base.path, base.path, shifted], 'refusing to overwrite'),
                       (['--html=' + shifted, base.path, shifted], 'refusing to overwrite')):
        size = (os.path.getsize(base.path), os.path.getsize(shifted))
        r = compare(*args)
        ok(r.returncode == 2 and says in r.stderr and (os.path.getsize(base.path), os.path.getsize(shifted)) == size,
           'usage error (%s): exit 2' % says, r.stderr)

    # --offset moves the run holding the trace it names (durations unchanged); one naming neither is refused.
    r = compare('--offset=%s=-1ms' % shifted, base.path, shifted)
    plain = json.loads(compare(base.path, shifted).stdout)
    ok(r.returncode == 0 and json.loads(r.stdout)['spans'] == plain['spans'], '--offset=NEW=-1ms: the same spans',
       r.stderr)
    r = compare('--offset=%s=1ms' % os.path.join(tmp, 'nowhere.trace'), base.path, shifted)
    ok(r.returncode == 2 and 'names none of the traces of BASE or NEW' in r.stderr, '--offset naming neither run: '
       'exit 2', r.stderr)

    # A run given as a directory: the same comparison.
    d = os.path.join(tmp, 'base-dir')
    os.mkdir(d)
    shutil.copy(base.path, d)
    a, b = compare(base.path, shifted), compare(d, shifted)
    da, db = json.loads(a.stdout), json.loads(b.stdout)
    ok(b.returncode == 0 and da['spans'] == db['spans'] and da['events'] == db['events'],
       'BASE as a directory holding the trace: the same figures', b.stderr)

    missing = os.path.join(tmp, 'missing.trace')
    r = compare(missing, shifted)
    ok(r.returncode == 1 and missing in r.stderr and r.stdout == '', 'a BASE that is not there: exit 1, named',
       r.stderr)

    # A damaged run: exit 1, the place named, the figures before it still compared.
    with open(shifted, 'rb') as f:
        data = f.read()
    cut = os.path.join(tmp, 'cut.trace')
    with open(cut, 'wb') as f:
        f.write(data[:len(data) * 3 // 5 + 3])
    r = compare('--fail-if=p50>+1%', base.path, cut)
    doc = json.loads(r.stdout) if r.stdout else None
    ok(r.returncode == 1 and 'byte offset' in r.stderr and doc and doc['new']['partial'] and doc['spans']
       and '--fail-if not evaluated' in r.stderr, 'a cut NEW: exit 1, the offset named, partial figures', r.stderr)


def test_by(tmp, base, shifted):
    """--by=kind (an argument of req_submit): groups matched by their text in both runs."""
    rb, rn = Run(base.path, by='kind'), Run(shifted, by='kind')
    r = compare('--by=kind', base.path, shifted)
    doc = json.loads(r.stdout)
    spans = check_runs('--by=kind', doc, rb, rn)
    grouped = [k for k in spans if k[1]]
    ok(grouped and all(spans[k]['base']['count'] and spans[k]['new']['count'] and spans[k]['p_value'] is not None
                       for k in spans if spans[k]['base']['count'] and spans[k]['new']['count']),
       '--by=kind: groups %s in both runs, each tested' % sorted(set(k[1] for k in grouped)))


def main():
    with tempfile.TemporaryDirectory(prefix='st-compare-') as tmp:
        base_path, shifted = os.path.join(tmp, 'base.trace'), os.path.join(tmp, 'shift.trace')
        # At the same time, so the machine's load weighs on both alike.
        if run_all([(base_path, COUNT, BASE_US, '--seed=11'),
                    (shifted, COUNT, BASE_US, '--seed=13', '--shift-pct=50')]):
            base = Run(base_path)
            test_shift(tmp, base, shifted)
            test_same(tmp, None)
            test_counts(tmp, base)
            test_errors(tmp, base, shifted)
            test_by(tmp, base, shifted)
    return done()


sys.exit(main())
