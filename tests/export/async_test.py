#!/usr/bin/env python3
"""Keyed spans (issue 23): a begin and an end matched by an argument's value
(--pair=BEGIN:END[=NAME]@ARG), submitted on one thread and completed on
another, drawn by viewers as async slices.

async_app (traced by the runtime) submits requests on its main thread and
completes them on two workers, several in flight at once; request 100 is
submitted twice before it completes (a key reused), 200 never completes,
300 completes without a submission; jobs are keyed by a string. The spans
are worked out from `print --format=json` alone (keyed_spans.py), then:
  - Chrome JSON (check_chrome.py's structure, then every event): each span
    is a "b" on its begin's thread and an "e" on its end's, of one id no
    other span has, named after the function, each with its record's
    arguments at its record's time; a span the exporter ends is an "e" on
    its begin's thread, "unfinished", at the time its key began again or at
    the trace's end; the end without begin is an instant;
  - Perfetto (protoc with Perfetto's schema, check_perfetto.py with the
    keyed rules: every event against print, each span one slice of an async
    track, slices of a track never overlapping): the async tracks are
    children of the process's track, named after the function, and there
    are as many of a function's as its spans were open at once;
  - a hand-built trace whose threads disagree on time: a key begun again
    at a time its first thread has passed (Perfetto writes that end with an
    absolute MONOTONIC time), an end recorded before its begin (put at the
    begin's time in both formats);
  - uftrace (replay shows every thread as print predicts: keyed events are
    user events, the workers' calls nest) and CTF (babeltrace2 and
    python3-bt2 read every record) still export such a trace;
  - two runs exported together: the same keys in two processes are spans of
    their own process only, each process with its own async tracks;
  - the trace cut in the middle of a record (as kill -9 leaves it): the
    spans open there end, unfinished, at the last record before the cut
    (Chrome on standard output stays valid JSON).

argv: SIMPLETRACE ASYNC-APP UFTRACE PYTHON3 BT2-PYTHON3 PROTOC PROTO BABELTRACE2 CHECK-PERFETTO CHECK-CTF
      CHECK-CHROME
"""
import collections
import decimal
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
sys.path.insert(0, HERE)
from tap import done, ok, run  # noqa: E402
from consumers import consumers  # noqa: E402
from grow_test import check_ctf, declare, event, uftrace_lines  # noqa: E402
from keyed_spans import keyed_spans, parse_rule  # noqa: E402

PAIRS = ['--pair=req_submit:req_complete=request@req', '--pair=job_queued:job_finished@job']
ROLES = ['req_submit=B:request@req', 'req_complete=E:request@req', 'job_queued=B:job@job', 'job_finished=E:job@job']


def ns(ts):
    """Chrome's microseconds (three decimals, exact) as ns."""
    return int(decimal.Decimal(ts) * 1000)


def print_json(a, traces, tmp, name):
    out = os.path.join(tmp, name + '.print.json')
    r = run(a.cli, 'print', '--format=json', *traces)
    with open(out, 'w') as f:
        f.write(r.stdout)
    return out, [json.loads(line) for line in r.stdout.splitlines()]


def summary_counts(stderr):
    """The export summary's unmatched counts: (ends without a begin, never ended, keys reused)."""
    def count(what):
        m = re.search(r'(\d+) %s' % what, stderr)
        return int(m.group(1)) if m else 0
    return count('ends? without a begin'), count('begins? never ended'), count('keyed spans? ended by its key')


def chrome_spans(events):
    """Chrome's b/e events as {id: (b, e)}, a list of ids used twice, and the other events."""
    by_id, twice, rest = {}, [], []
    for ev in events:
        if ev['ph'] not in 'be':
            rest.append(ev)
            continue
        pair = by_id.setdefault(ev['id'], [None, None])
        slot = 0 if ev['ph'] == 'b' else 1
        if pair[slot] is not None:
            twice.append(ev['id'])
        pair[slot] = ev
    return by_id, twice, rest


def pid_of(rec, pid):
    """The process of one of print's records: named when print reads several, else pid."""
    return (rec.get('process') or {}).get('pid', pid)


def check_chrome_spans(doc, recs, spans, roles, pid):
    """'' when Chrome's async events are the spans, else what differs (pid: the process of records print does
    not name one of)."""
    by_id, twice, rest = chrome_spans(doc['traceEvents'])
    if twice or len(by_id) != len(spans):
        return 'ids used twice %s; %d ids for %d spans' % (twice, len(by_id), len(spans))
    begins = {(ev[0]['tid'], ns(ev[0]['ts']), json.dumps(ev[0]['args'])): ev for ev in by_id.values() if ev[0]}
    for span in spans:
        b = recs[span.begin]
        got = begins.get((b['pid'], b['timestamp_ns'], json.dumps(b['args'])))
        if not got or got[0]['name'] != span.func or got[0]['pid'] != pid_of(b, pid) or not got[1]:
            return 'span of %s: b %s' % (b, got)
        e = got[1]
        if span.end is not None:
            want = recs[span.end]
            want = (want['pid'], max(want['timestamp_ns'], b['timestamp_ns']), want['args'])
        else:
            want = (b['pid'], span.closed_at, {'unfinished': True})
        if (e['tid'], ns(e['ts']), e['args']) != want or e['name'] != span.func or e['pid'] != pid_of(b, pid):
            return 'span of %s: e %s, want %s' % (b, e, want)
    instants = {(ev['tid'], ns(ev['ts']), ev['name'], json.dumps(ev['args'])) for ev in rest if ev['ph'] == 'i'}
    for i, (role, _) in roles.items():
        r = recs[i]
        if role == 'instant' and (r['pid'], r['timestamp_ns'], r['name'], json.dumps(r['args'])) not in instants:
            return 'the end without begin %s is no instant' % r
    calls = [ev for ev in rest if ev['ph'] in 'BE' and ev['name'] in {s.func for s in spans}]
    return 'keyed spans as B/E calls: %s' % calls[:3] if calls else ''


def decode(a, pftrace):
    """The packets of a Perfetto file, through check_perfetto.py's reader (protoc with the schema)."""
    import check_perfetto
    include = os.path.dirname(a.proto)
    with open(pftrace, 'rb') as f:
        r = subprocess.run([a.protoc, '--decode=perfetto.protos.Trace', '-I', include, a.proto], stdin=f,
                           capture_output=True)
    return check_perfetto.parse_text(r.stdout.decode('latin-1')).get('packet', [])


def most_open(spans, recs, pid):
    """Per function and process, the most spans open at once (one ending when another begins counts as open:
    the exporter never puts two slices touching at one time on one track, which a reader could take in either
    order)."""
    marks = collections.defaultdict(list)
    for s in spans:
        end = recs[s.end]['timestamp_ns'] if s.end is not None else s.closed_at
        marks[s.func, pid_of(recs[s.begin], pid)] += [(recs[s.begin]['timestamp_ns'], 1), (end, -1)]
    out = {}
    for func, m in marks.items():
        level = peak = 0
        for _, d in sorted(m, key=lambda x: (x[0], -x[1])):
            level += d
            peak = max(peak, level)
        out[func] = peak
    return out


def traced_run(a, trace):
    """Runs async_app traced into trace: its pid, or None."""
    r = run(a.app, env=dict(os.environ, SIMPLETRACE='enable=*,file=' + trace))
    m = re.search(r'^pid (\d+)', r.stdout, re.M)
    ok(r.returncode == 0 and m and os.path.exists(trace), 'async_app runs traced', r.stdout + r.stderr)
    return int(m.group(1)) if m else None


def perfetto_tracks(a, pftrace):
    """The async tracks of a Perfetto file: {(name, pid of the parent process): count}."""
    packets = decode(a, pftrace)
    procs = {d['uuid'][0]: d['process'][0]['pid'][0] for p in packets for d in p.get('track_descriptor', [])
             if 'process' in d}
    return collections.Counter((d['name'][0].decode(), procs.get(d['parent_uuid'][0]))
                               for p in packets for d in p.get('track_descriptor', [])
                               if 'name' in d and 'parent_uuid' in d)


def app(a, tmp):
    """(the trace, its pid), or None."""
    trace = os.path.join(tmp, 'app.trace')
    pid = traced_run(a, trace)
    if pid is None:
        return None
    printed, recs = print_json(a, [trace], tmp, 'app')
    spans, roles = keyed_spans(recs, [parse_rule(x) for x in ROLES])
    ended = [s for s in spans if s.end is not None]
    why = collections.Counter(s.why for s in spans if s.end is None)
    ends_alone = [i for i, (role, _) in roles.items() if role == 'instant']
    ok(len(spans) == 17 and len(ended) == 15 and why == {'reused': 1, 'never': 1} and len(ends_alone) == 1 and
       all(recs[s.begin]['pid'] == pid != recs[s.end]['pid'] for s in ended),
       'print: 17 spans (14 requests, 1 submitted again before it completed, 1 never completed; 2 jobs), 15 begun '
       'on the main thread and ended on a worker, 1 end without begin', '%d %d %s %d' % (len(spans), len(ended), why,
                                                                                        len(ends_alone)))
    peak = most_open(spans, recs, pid)
    ok(peak.get(('request', pid), 0) >= 2, 'print: requests overlap (%s open at once)' % peak.get(('request', pid)),
       peak)

    out = os.path.join(tmp, 'app.json')
    r = run(a.cli, 'export', '-o', out, *PAIRS, trace)
    counts = summary_counts(r.stderr)
    ok(r.returncode == 0 and counts == (1, 1, 1),
       'chrome: exported; the summary counts 1 end without a begin, 1 never ended, 1 key reused', r.stderr)
    c = run(a.python, a.check_chrome, out)
    ok(c.returncode == 0, 'chrome: valid JSON, B/E nested, every async b closed by an e of its id and name',
       c.stdout[-800:] + c.stderr)
    doc = json.load(open(out), parse_float=decimal.Decimal) if r.returncode == 0 else {'traceEvents': []}
    diff = check_chrome_spans(doc, recs, spans, roles, pid)
    ok(diff == '', 'chrome: each span a b on its begin\'s thread and an e on its end\'s, one id each, their records\' '
       'times and arguments; unfinished e where the key began again and at the end; the lone end an instant', diff)

    out = os.path.join(tmp, 'app.pftrace')
    r = run(a.cli, 'export', '-q', '--format=perfetto', '-o', out, *PAIRS, trace)
    c = run(a.python, a.check_perfetto, a.protoc, a.proto, out, printed, *ROLES)
    last = c.stdout.splitlines()[-1] if c.stdout else ''
    ok(r.returncode == 0 and c.returncode == 0 and last.startswith('ok ') and last.split()[-1] == '2',
       'perfetto: protoc decodes it; every record on its thread\'s sequence as print shows it; each span one slice '
       'of an async track from its begin to its end, never overlapping another on that track; 2 unfinished ends '
       'where the exporter ended spans', r.stderr + c.stdout[-1200:] + c.stderr)
    tracks = perfetto_tracks(a, out) if r.returncode == 0 else {}
    ok(tracks == peak, 'perfetto: async tracks are children of the process\'s track, named after the function, '
       'as many as spans were open at once (%s)' % dict(peak), '%s\n%s' % (tracks, peak))

    data = os.path.join(tmp, 'app.data')
    r = run(a.cli, 'export', '-q', '--format=uftrace', '-o', data, *PAIRS, trace)
    u = run(a.uftrace, 'replay', '-d', data, '--event-full')
    want = []
    for rec in recs:
        name, tid = rec['name'], rec['pid']
        shown = {'serve_begin': 'serve() {', 'serve_end': '} /* serve */'}.get(name, '/* simpletrace:%s */' % name)
        want.append('[%d] %s' % (tid, shown))
    got = uftrace_lines(u.stdout)
    key = lambda line: int(line.split(']')[0][1:])  # noqa: E731
    ok(r.returncode == 0 and u.returncode == 0 and
       sorted(got, key=key) == sorted(want, key=key),
       'uftrace: replay shows every thread as print predicts (keyed events are user events, serve() calls nest)',
       r.stderr + u.stderr + '\n'.join(got[:10]) + '\n--\n' + '\n'.join(want[:10]))

    ctf = os.path.join(tmp, 'app.ctf')
    r = run(a.cli, 'export', '-q', '--format=ctf', '-o', ctf, *PAIRS, trace)
    ok(r.returncode == 0, 'ctf: exported', r.stderr)
    check_ctf(a, ctf, printed, 'app')
    return trace, pid


def cut(a, tmp, trace, pid):
    data = open(trace, 'rb').read()
    trace = os.path.join(tmp, 'cut.trace')
    for part in (2, 3, 4, 6, 8):  # a cut where spans are open (how many are depends on the run's timing)
        with open(trace, 'wb') as f:
            f.write(data[:len(data) // part + 7])
        printed, recs = print_json(a, [trace], tmp, 'cut')
        spans, roles = keyed_spans(recs, [parse_rule(x) for x in ROLES])
        never = sum(s.why == 'never' for s in spans)
        if never:
            break
    ok(never > 0, 'cut: print shows %d records before the cut, %d spans open there' % (len(recs), never))

    r = run(a.cli, 'export', '-q', '-o', '-', *PAIRS, trace)
    out = os.path.join(tmp, 'cut.json')
    with open(out, 'w') as f:
        f.write(r.stdout)
    c = run(a.python, a.check_chrome, out)
    doc = json.loads(r.stdout, parse_float=decimal.Decimal) if c.returncode == 0 else {'traceEvents': []}
    diff = check_chrome_spans(doc, recs, spans, roles, pid)
    ok(r.returncode == 1 and c.returncode == 0 and diff == '',
       'cut: chrome on standard output: exit 1, valid JSON, the open spans ended unfinished at the last record',
       r.stderr + c.stdout[-600:] + diff)

    out = os.path.join(tmp, 'cut.pftrace')
    r = run(a.cli, 'export', '-q', '--format=perfetto', '-o', out, *PAIRS, trace)
    c = run(a.python, a.check_perfetto, a.protoc, a.proto, out, printed, *ROLES)
    ok(r.returncode == 1 and c.returncode == 0, 'cut: perfetto: exit 1, the records before the cut, the open spans '
       'ended unfinished at the last record', r.stderr + c.stdout[-600:] + c.stderr)


def skewed_trace(path):
    """Threads 100 and 200 whose records disagree on time: file order is what the export follows."""
    b = struct.pack('<QQQ', 0xFFFFFFFFFFFFFFFF, 0xF2B177CB0AA429B4, 4)
    b += declare(0, 'a_submit', 'a_submit(int k) "k %d"')
    b += declare(1, 'a_complete', 'a_complete(int k) "k %d"')
    b += declare(2, 'note', 'note(int n) "n %d"')
    k = lambda v: struct.pack('<Q', v)  # noqa: E731
    b += event(0, 1000, 100, k(1))  # span 1 begins on 100 ...
    b += event(2, 5000, 100, k(0))  # ... which is at 5000 ...
    b += event(0, 3000, 200, k(1))  # ... when 200 begins key 1 again, at 3000
    b += event(0, 6000, 100, k(2))
    b += event(1, 4000, 200, k(2))  # ends key 2 before it began: at 6000 ...
    b += event(2, 5500, 200, k(0))  # ... which thread 200's next record is behind
    b += event(1, 7000, 200, k(1))
    with open(path, 'wb') as f:
        f.write(b)


def skewed(a, tmp):
    trace = os.path.join(tmp, 'skewed.trace')
    skewed_trace(trace)
    printed, recs = print_json(a, [trace], tmp, 'skewed')
    roles = ['a_submit=B:a@k', 'a_complete=E:a@k']
    spans, _ = keyed_spans(recs, [parse_rule(x) for x in roles])
    ok(len(recs) == 7 and len(spans) == 3, 'skewed: print reads the hand-built trace (7 records, 3 spans)', recs)

    out = os.path.join(tmp, 'skewed.pftrace')
    r = run(a.cli, 'export', '-q', '--format=perfetto', '--pair=a_submit:a_complete@k', '-o', out, trace)
    c = run(a.python, a.check_perfetto, a.protoc, a.proto, out, printed, *roles)
    packets = decode(a, out) if r.returncode == 0 else []
    absolute = [(p['timestamp'][0], p['trusted_packet_sequence_id'][0]) for p in packets if 'timestamp_clock_id' in p]
    last = c.stdout.splitlines()[-1] if c.stdout else ''
    ok(r.returncode == 0 and c.returncode == 0 and last.startswith('ok ') and last.split()[-1] == '1' and
       absolute == [(3000, 2), (5500, 3)],
       'skewed: perfetto: the span ended where its key began again, at 3000 on thread 100\'s sequence (past 3000), '
       'and thread 200\'s record at 5500 after the end it recorded at 4000 was put at its begin\'s 6000: '
       'absolute MONOTONIC times, every record where print has it',
       r.stderr + c.stdout[-1200:] + c.stderr + str(absolute))

    out = os.path.join(tmp, 'skewed.json')
    r = run(a.cli, 'export', '-q', '--pair=a_submit:a_complete@k', '-o', out, trace)
    c = run(a.python, a.check_chrome, out)
    doc = json.load(open(out), parse_float=decimal.Decimal) if r.returncode == 0 else {'traceEvents': []}
    _, roles_of = keyed_spans(recs, [parse_rule(x) for x in roles])
    diff = check_chrome_spans(doc, recs, spans, roles_of, 100)
    ok(r.returncode == 0 and c.returncode == 0 and diff == '',
       'skewed: chrome: the same spans (the early end at its begin\'s time)', r.stderr + c.stdout[-800:] + diff)


def two_runs(a, tmp):
    traces = [os.path.join(tmp, 'run%d.trace' % i) for i in (1, 2)]
    pids = [traced_run(a, t) for t in traces]
    if None in pids:
        return
    printed, recs = print_json(a, traces, tmp, 'runs')
    spans, roles = keyed_spans(recs, [parse_rule(x) for x in ROLES])
    ok(len(spans) == 34 and {pid_of(recs[s.begin], 0) for s in spans} == set(pids),
       'two runs: print shows 17 spans in each process (the same keys in both)', '%d %s' % (len(spans), pids))

    out = os.path.join(tmp, 'runs.json')
    r = run(a.cli, 'export', '-q', '-o', out, *PAIRS, *traces)
    c = run(a.python, a.check_chrome, out)
    doc = json.load(open(out), parse_float=decimal.Decimal) if r.returncode == 0 else {'traceEvents': []}
    diff = check_chrome_spans(doc, recs, spans, roles, None)
    ok(r.returncode == 0 and c.returncode == 0 and diff == '',
       'two runs: chrome: each key\'s spans within its own process', r.stderr + c.stdout[-800:] + diff)

    out = os.path.join(tmp, 'runs.pftrace')
    r = run(a.cli, 'export', '-q', '--format=perfetto', '-o', out, *PAIRS, *traces)
    c = run(a.python, a.check_perfetto, a.protoc, a.proto, out, printed, *ROLES)
    tracks = perfetto_tracks(a, out) if r.returncode == 0 else {}
    peak = most_open(spans, recs, None)
    ok(r.returncode == 0 and c.returncode == 0 and tracks == peak,
       'two runs: perfetto: each key\'s spans within its own process, on async tracks of that process (%s)' %
       dict(peak), r.stderr + c.stdout[-800:] + c.stderr + '\n%s\n%s' % (tracks, peak))


def main():
    a = consumers(('cli', 'app', 'uftrace'))
    if a is None:
        return done()
    with tempfile.TemporaryDirectory() as tmp:
        ran = app(a, tmp)
        if ran:
            cut(a, tmp, *ran)
        skewed(a, tmp)
        two_runs(a, tmp)
    return done()


if __name__ == '__main__':
    sys.exit(main())
