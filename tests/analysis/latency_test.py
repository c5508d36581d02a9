#!/usr/bin/env python3
"""simpletrace latency against the truth (issue 23, "Tests"): the figures of spans_prog's traces equal
those this test computes itself from `simpletrace print --format=json` of the same traces (truth.py).

Two runs of spans_prog (different seeds, counts and base durations) run at the same time, so their
records interleave and their request keys (both count from 1) collide across processes. Read alone
(one process) and together (two), with --pair=req_submit:req_complete=request@req:
  - the truth itself agrees with what the programs say they did (keys reused, ends without begin,
    stages closed by their job's end, spans open at exit);
  - JSON: per span name count, min, max, total and self time exact, mean the rounded total/count,
    p50/p90/p99/p99.9 within 0.4% of the nearest-rank value (the man page's bound), unfinished,
    unmatched_end and key_reused equal; the histogram's bands are consecutive powers of two from the
    minimum's to the maximum's, hold each duration in its band and sum to count; records, first and
    last timestamps and per-event counts equal print's;
  - the slowest spans (default 5, --slowest=0, 3 and 10000: all of them) are the truth's largest
    durations in order, with begin, pid, tid, end_tid and key; the print command of each, run, shows
    exactly the records whose timestamps lie in the span's window;
  - --by=thread, --by=process, --by=kind (req_submit's argument: other spans in group "") and
    --by=stage (an unmatched stage_end grouped by its own argument): the same figures per group;
  - the text format shows the same figures as the JSON (to the digits it prints): the table, the
    "not measured" line, the histogram bands and the slowest spans.

argv: SIMPLETRACE SPANS_PROG SPANS_EVENTS
"""
import json
import os
import re
import shlex
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
UNITS = {'ns': 1, 'us': 1000, 'ms': 1000000, 's': 1000000000}


def start(path, *args):
    env = dict(os.environ, SIMPLETRACE='enable=*,file=%s,clock=monotonic' % path)
    return subprocess.Popen([PROG] + list(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def facts(out):
    """What spans_prog says it did: {key: int} (worker lines as 'worker K' -> tid)."""
    f = {}
    for line in out.splitlines():
        words = line.split()
        f[' '.join(words[:-1])] = int(words[-1])
    return f


def records(traces):
    r = run(ST, 'print', '--format=json', *traces)
    ok(r.returncode == 0, 'print --format=json %s' % ' '.join(map(os.path.basename, traces)), r.stderr)
    return [json.loads(line) for line in r.stdout.splitlines()]


def latency(traces, *opts, fmt='json'):
    r = run(ST, 'latency', '--format=' + fmt, '--pair=' + KEYED, *(list(opts) + list(traces)))
    if not ok(r.returncode == 0 and r.stderr == '', 'latency %s exits 0 silently' % ' '.join(opts), r.stderr):
        return {'spans': [], 'events': []} if fmt == 'json' else ''
    return json.loads(r.stdout) if fmt == 'json' else r.stdout


def by_key(doc):
    return {(s['name'], s['group']): s for s in doc['spans']}


def check_span(what, s, fig, full=True):
    """Every figure of JSON span s against the truth's Figures fig."""
    problems = truth.problems(s, fig, full)
    ok(not problems, what, '\n'.join(problems))
    return not problems


def check_histogram(what, s, fig):
    d = fig.durations()
    bands, problems = s['histogram'], []
    if not d:
        ok(bands == [], what + ': no bands without spans', bands)
        return
    for i, b in enumerate(bands):
        if b['hi_ns'] != 2 * max(b['lo_ns'], 1) - (b['lo_ns'] == 0) or (i and b['lo_ns'] != bands[i - 1]['hi_ns']):
            problems.append('band %d [%d, %d) is not the next power of two' % (i, b['lo_ns'], b['hi_ns']))
        inside = sum(1 for x in d if b['lo_ns'] <= x < b['hi_ns'])
        if inside != b['count']:
            problems.append('band [%d, %d): %d, truth %d' % (b['lo_ns'], b['hi_ns'], b['count'], inside))
    if not (bands[0]['lo_ns'] <= d[0] < bands[0]['hi_ns'] and bands[-1]['lo_ns'] <= d[-1] < bands[-1]['hi_ns']):
        problems.append('bands run from [%d, ...) to [..., %d), min %d max %d'
                        % (bands[0]['lo_ns'], bands[-1]['hi_ns'], d[0], d[-1]))
    if sum(b['count'] for b in bands) != len(d):
        problems.append('bands sum to %d, count %d' % (sum(b['count'] for b in bands), len(d)))
    ok(not problems, what + ': histogram bands', '\n'.join(problems))


def slow_fields(x):
    return {k: x[k] for k in ('begin_ns', 'duration_ns', 'pid', 'tid', 'end_tid', 'key')}


def check_slowest(what, s, fig, n):
    want = [slow_fields(x) for x in truth.slowest(fig.spans, n)]
    got = [slow_fields(x) for x in s['slowest']]
    ok(got == want, '%s: the %d slowest' % (what, n), 'got  %s\nwant %s' % (got, want))


def check_print_commands(what, s, recs):
    """Each slowest span's print command, run, prints the records of its window and only those."""
    bad = []
    for w in s['slowest']:
        argv = shlex.split(w['print'])
        if argv[:2] != ['simpletrace', 'print']:
            bad.append('not a print command: %s' % w['print'])
            continue
        r = run(ST, 'print', '--format=json', *argv[2:])
        got = [(x['timestamp_ns'], x['name'], x['pid']) for x in map(json.loads, r.stdout.splitlines())]
        lo, hi = w['begin_ns'], w['begin_ns'] + w['duration_ns']
        want = [(x['timestamp_ns'], x['name'], x['pid']) for x in recs if lo <= x['timestamp_ns'] <= hi]
        if r.returncode != 0 or got != want:
            bad.append('%s (exit %d): %d records %s..., want %d %s...' % (w['print'], r.returncode, len(got), got[:2],
                                                                         len(want), want[:2]))
    ok(not bad, what + ': each slowest span\'s print command shows its window', '\n'.join(bad))


# --- the text format ----------------------------------------------------------------------------------

def text_ns(words):
    """'338.843', 'us' -> (ns, the half of the last digit printed)."""
    num, unit = words
    digits = len(num.partition('.')[2])
    return float(num) * UNITS[unit], UNITS[unit] * 0.5 * 10 ** -digits


def close_to(text_words, v, extra=0):
    ns, half = text_ns(text_words)
    return abs(ns - v) <= half + extra + 1e-6 * max(v, 1)


def check_text(what, text, doc):
    """The text report against the JSON of the same run."""
    spans = by_key(doc)
    grouped = any(g is not None for _, g in spans)
    lines = text.splitlines()
    problems = []
    head = lines[0].split()
    if head != ['span'] + (['group'] if grouped else []) + ['count', 'min', 'mean', 'p50', 'p90', 'p99', 'p99.9',
                                                             'max', 'total']:
        problems.append('header: %s' % lines[0])
    # Fixed columns: the name padded to the longest (at least 4), the group to the longest (at least 5).
    name_w = max([4] + [len(n) for n, _ in spans])
    group_w = max([5] + [len(g) for _, g in spans]) if grouped else 0
    rows = {}
    for line in lines[1:1 + len(spans)]:
        name, group = line[:name_w].strip(), line[name_w + 1:name_w + 1 + group_w].strip() if grouped else None
        rows[(name, group)] = line[name_w + 1 + group_w:].split()
    if set(rows) != set(spans):
        problems.append('rows %s, spans %s' % (sorted(rows, key=str), sorted(spans, key=str)))
    for k, rest in rows.items():
        s = spans.get(k)
        if not s:
            continue
        if int(rest[0]) != s['count']:
            problems.append('%s count %s, json %d' % (k, rest[0], s['count']))
        cols, i = ['min_ns', 'mean_ns', 'p50_ns', 'p90_ns', 'p99_ns', 'p999_ns', 'max_ns', 'total_ns'], 1
        for c in cols:
            pair = rest[i:i + 1] if rest[i:i + 1] == ['-'] else rest[i:i + 2]
            i += len(pair)
            if s[c] is None:
                if pair != ['-']:
                    problems.append('%s %s %s, json null' % (k, c, pair))
            elif len(pair) != 2 or not close_to(pair, s[c]):
                problems.append('%s %s %s, json %d' % (k, c, ' '.join(pair), s[c]))
    # Per span: the summary line, histogram lines, slowest lines.
    blocks = text.split('\n\n')[1:]
    seen = 0
    for b in blocks:
        bl = b.splitlines()
        m = re.match(r'(\S+)(?: in group (.*?))?: (\d+) spans?, self time (\S+ \S+)'
                     r'(?:; not measured: (\d+) unfinished, (\d+) ends? without begin, (\d+) keys? reused)?$', bl[0])
        if not m:
            problems.append('summary line: %s' % bl[0])
            continue
        k = (m.group(1), m.group(2) if grouped else None)
        if grouped and k[1] is None:
            k = (k[0], '')
        s = spans.get(k)
        if not s:
            problems.append('a block for %s, not in the JSON' % (k,))
            continue
        seen += 1
        nm = [int(x) for x in m.group(5, 6, 7)] if m.group(5) else [0, 0, 0]
        if int(m.group(3)) != s['count'] or nm != [s['unfinished'], s['unmatched_end'], s['key_reused']] or \
                not close_to(m.group(4).split(), s['self_ns']):
            problems.append('%s: %s; json count %d self %d %d/%d/%d' % (k, bl[0], s['count'], s['self_ns'],
                                                                       s['unfinished'], s['unmatched_end'],
                                                                       s['key_reused']))
        hist = [l for l in bl[1:] if l.lstrip().startswith('[')]
        counts = [int(re.search(r'\)\s+(\d+) \|', l).group(1)) for l in hist]
        if counts != [x['count'] for x in s['histogram']]:
            problems.append('%s histogram %s, json %s' % (k, counts, [x['count'] for x in s['histogram']]))
        slow = [l for l in bl[1:] if ' at +' in l]
        cmds = [l.strip() for l in bl[1:] if l.strip().startswith('simpletrace print')]
        if len(slow) != len(s['slowest']) or cmds != [x['print'] for x in s['slowest']]:
            problems.append('%s: %d slowest lines, %d in json; commands %s' % (k, len(slow), len(s['slowest']), cmds[:1]))
        for l, x in zip(slow, s['slowest']):
            m2 = re.match(r'\s*(\S+ \S+)  at \+\S+ \S+  pid (\d+) tid (\d+)(?: \(ended on tid (\d+)\))?(?: key (.*))?$', l)
            key = x['key'] if x['key'] is None else str(x['key'])
            if not m2 or not close_to(m2.group(1).split(), x['duration_ns']) or int(m2.group(2)) != x['pid'] or \
                    int(m2.group(3)) != x['tid'] or int(m2.group(4) or m2.group(3)) != x['end_tid'] or m2.group(5) != key:
                problems.append('%s slowest line %r, json %s' % (k, l, x))
    if seen != len(spans):
        problems.append('%d span blocks, %d spans' % (seen, len(spans)))
    ok(not problems, what + ': the text shows the JSON\'s figures', '\n'.join(problems[:20]))


# --- the runs ------------------------------------------------------------------------------------------

def main():
    decl = truth.declarations(EVENTS)
    tmp = tempfile.TemporaryDirectory(prefix='st-latency-')
    a, b = os.path.join(tmp.name, 'a.trace'), os.path.join(tmp.name, 'b.trace')
    pa = start(a, '--seed=1', '--count=120')
    pb = start(b, '--seed=2', '--count=60', '--base-us=150', '--workers=3')
    outs = [p.communicate(timeout=120) for p in (pa, pb)]
    for p, (out, err), name in zip((pa, pb), outs, 'ab'):
        ok(p.returncode == 0, 'spans_prog run %s' % name, err)
    fa, fb = facts(outs[0][0]), facts(outs[1][0])

    for traces, progs in (([a], [fa]), ([a, b], [fa, fb])):
        what = '%d process%s' % (len(traces), 'es' if len(traces) > 1 else '')
        recs = records(traces)
        pid = fa['pid'] if len(traces) == 1 else None
        tr = truth.spans(recs, decl, [KEYED], default_pid=pid)

        # The truth agrees with what the programs did.
        s = lambda k: sum(f[k] for f in progs)  # noqa: E731
        expect = {
            ('job', None): (s('jobs'), s('open_job'), 0, 0),
            ('stage', None): (2 * s('jobs') - s('closed_stage'), s('closed_stage') + s('open_stage'),
                              s('unmatched_end_stage'), 0),
            ('io', None): (2 * s('jobs'), s('open_io'), 0, 0),
            ('request', None): (s('requests_completed'), s('open_request'), s('unmatched_end_request'),
                                s('key_reused')),
        }
        got = {k: (len(v.spans), v.unfinished, v.unmatched_end, v.key_reused) for k, v in tr.items()}
        ok(got == expect, '%s: the truth from print holds what spans_prog did' % what,
           'truth %s\nprogram %s' % (got, expect))
        ok(all(x['end_tid'] != x['tid'] for x in tr[('request', None)].spans),
           '%s: every request ended on another thread than it began' % what)

        if len(traces) == 2:
            ts = {q: [x['timestamp_ns'] for x in recs if x['process']['pid'] == f['pid']] for q, f in zip('ab', progs)}
            ok(ts['a'][0] < ts['b'][-1] and ts['b'][0] < ts['a'][-1],
               '2 processes: their records interleave (keys 1, 2 ... open in both at once)',
               {q: (v[0], v[-1]) for q, v in ts.items()})
        doc = latency(traces)
        spans = by_key(doc)
        ok(set(spans) == set(tr), '%s: the span names' % what, '%s vs %s' % (sorted(spans), sorted(tr)))
        for k, fig in sorted(tr.items()):
            if k in spans:
                check_span('%s: %s figures' % (what, k[0]), spans[k], fig)
                check_histogram('%s: %s' % (what, k[0]), spans[k], fig)
                check_slowest('%s: %s' % (what, k[0]), spans[k], fig, 5)
                check_print_commands('%s: %s' % (what, k[0]), spans[k], recs)
        counts = {}
        for x in recs:
            counts[x['name']] = counts.get(x['name'], 0) + 1
        ok({e['name']: e['count'] for e in doc['events'] if e['count']} == counts,
           '%s: per-event counts equal print\'s' % what, '%s\n%s' % (doc['events'], counts))
        ok((doc['records'], doc['first_ns'], doc['last_ns'], doc['partial']) ==
           (len(recs), recs[0]['timestamp_ns'], recs[-1]['timestamp_ns'], False),
           '%s: records, first_ns, last_ns, partial' % what,
           '%s %s %s %s' % (doc['records'], doc['first_ns'], doc['last_ns'], doc['partial']))

        # --slowest: none, 3, all.
        for n in (0, 3, 10000):
            d = by_key(latency(traces, '--slowest=%d' % n))
            ok(set(d) == set(tr), '%s --slowest=%d: the span names' % (what, n), sorted(d))
            for k, fig in sorted(tr.items()):
                if k in d:
                    check_slowest('%s --slowest=%d: %s' % (what, n, k[0]), d[k], fig, n)

        # --by: the same figures per group.
        for by in ('thread', 'process', 'kind', 'stage'):
            tg = truth.spans(recs, decl, [KEYED], by=by, default_pid=pid)
            dd = latency(traces, '--by=' + by)
            d = by_key(dd)
            ok(set(d) == set(tg), '%s --by=%s: the groups' % (what, by),
               'latency %s\ntruth %s' % (sorted(d, key=str), sorted(tg, key=str)))
            bad = [k for k, fig in sorted(tg.items()) if k in d and
                   not check_span('%s --by=%s: %s in group %s' % (what, by, k[0], k[1]), d[k], fig)]
            ok(not bad, '%s --by=%s: every group right' % (what, by), bad)
            if by == 'thread':
                check_text(what + ' --by=thread', latency(traces, '--by=thread', fmt='text'), dd)
            if by == 'kind':
                ok({g for (n, g), f in tg.items() if n == 'request' and f.spans} == {'read', 'write', 'sync'} and
                   {g for n, g in tg if n != 'request'} == {''},
                   '%s --by=kind: requests by kind, the other spans in group ""' % what, sorted(tg, key=str))

        check_text(what, latency(traces, fmt='text'), doc)
    return done()


if __name__ == '__main__':
    sys.exit(main())
