#!/usr/bin/env python3
"""`simpletrace export --format=folded`: collapsed stacks for flame graphs.

folded_app (folded_app.c) runs traced by both tracers: its events (nested
spans on three threads, one closed early, one never ended) and its function
trace (libsimpletrace-func's uftrace.data). Checked here:
  - the function trace: our folded export of it (`--no-default-pairs`, so
    the events stay instants, which have no stack) holds exactly the stacks
    and self times, in ns, of Debian's `uftrace dump --flame-graph
    --sample-time=1ns -d DIR` on the same uftrace.data. What is only
    presentation and set aside: the order of the lines (uftrace walks its
    call tree in order of first call; we sort). Nothing else is
    normalised: uftrace names no task or program either (its stacks of all
    threads add up), and its count is the self time divided by the sample
    time. uftrace 0.13 cuts a count to as many digits as its stack has
    characters ("main 7991" for 799115 ns, a buffer sized by the names):
    folded_app's main() is not instrumented and its function names are
    long, so no count here is cut;
  - --folded-root: every stack starts with the program, PROGRAM-PID or
    PROGRAM-PID/TID, and without that frame they add up to the lines
    without a root;
  - the spans: the export of the trace alone equals the stacks the test
    computes from `print --format=json` with the documented rules (pairs by
    suffix and --pair, nesting per thread, an end closing the frames above
    its begin at its time, a begin never ended closed at the trace's last
    timestamp, self time = duration - callees' durations), with a --pair
    name holding ';' and '%' written %3B and %25, and a program named with
    ' ', ';' and '%' as a root frame (%20, %3B, %25);
  - a keyed span (--pair=...@ARG, matched across threads) is no frame;
  - every line reads as flamegraph.pl reads it (a stack, blanks, an
    integer: the last run of digits), frames hold no ';' or blank, no stack
    twice, no zero;
  - deep stacks (folded_app 600: three threads recursing 600 deep, 1805
    distinct stacks once each thread's are apart): uftrace's lines again,
    one line per thread and depth with --folded-root=thread (the tables
    grow well past their first size), and --max-depth=100 keeps
    the stacks above 100 frames as they were and the deeper time in the
    100th frame (the total is the same);
  - spans and calls together nest (a function called inside a span is
    under it); `*.folded` chooses the format, `-o -` writes to standard
    output; bad --folded-root values, --folded-root with another format,
    and an output that cannot be created are refused with a message; a
    trace cut inside a record gives the stacks before the cut and exit 1.

argv: SIMPLETRACE FOLDED-APP UFTRACE
"""
import collections
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from tap import done, ok, run  # noqa: E402

PROGRAM = 'folded_app'
IO_NAME = 'disk;read%'             # a --pair name needing escapes (rules refuse blanks) ...
IO_FRAME = 'disk%3Bread%25'        # ... and how a frame writes it
ODD_PROGRAM = 'folded app;2%'      # a program name with a blank too ...
ODD_FRAME = 'folded%20app%3B2%25'  # ... as a root frame
# The pairs of folded-events by the built-in rules (X_enter:X_exit, X_begin:X_end, X_start:X_done name X);
# io_start:io_done is renamed by --pair=io_start:io_done=IO_NAME in the span checks.
BEGIN = {'request_enter': 'request', 'phase_begin': 'phase', 'io_start': 'io', 'batch_begin': 'batch',
         'session_begin': 'session'}
END = {'request_exit': 'request', 'phase_end': 'phase', 'io_done': 'io', 'batch_end': 'batch',
       'session_end': 'session'}
# flamegraph.pl's reading of a line: the stack, blanks, then the count (its regular expression, in words).
FLAMEGRAPH_LINE = re.compile(r'^(.*)\s+?(\d+(?:\.\d*)?)$')
FRAME = re.compile(r'^(?:[^;\s%\x00-\x1f\x7f]|%[0-9A-F]{2})+$')


def traced_run(a, tmp, name='app', *args):
    """Runs folded_app ARGS under both tracers; returns (trace file, function trace dir, pid, {tid})."""
    trace, ft = os.path.join(tmp, name + '.trace'), os.path.join(tmp, name + '.ft')
    os.mkdir(ft)
    env = dict(os.environ, SIMPLETRACE='enable=*,file=%s,clock=monotonic' % trace, SIMPLETRACE_FUNC_DIR=ft,
               SIMPLETRACE_FUNC_CLOCK='monotonic')
    r = run(a.app, *args, env=env, cwd=tmp)
    ok(r.returncode == 0 and os.path.exists(trace) and os.listdir(ft),
       ' '.join(('folded_app',) + args) + ' ran under both tracers', r.stdout + r.stderr)
    words = r.stdout.split()
    pid = int(words[1]) if len(words) > 1 else 0
    tids = {int(w) for w, prev in zip(words[1:], words) if prev == 'tid'}
    return trace, ft, pid, tids | {pid}


def parse_folded(text):
    """{stack: count} of folded text; None when a line is not 'stack count' or a stack comes twice."""
    out = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(' ')
        if not stack or not count.isdigit() or stack in out:
            return None
        out[stack] = int(count)
    return out


def export(a, *args):
    return run(a.cli, 'export', '-q', *args)


def folded(a, tmp, name, *args):
    """Our folded export to tmp/name; (its stacks or None, the run)."""
    out = os.path.join(tmp, name)
    r = export(a, '--format=folded', '-o', out, *args)
    text = open(out).read() if r.returncode == 0 and os.path.exists(out) else ''
    return parse_folded(text), r, text


def diff(want, got):
    """The stacks whose counts differ, for a failure's detail."""
    keys = sorted(set(want or {}) | set(got or {}))
    return '\n'.join('%s: want %s got %s' % (k, (want or {}).get(k), (got or {}).get(k)) for k in keys
                     if (want or {}).get(k) != (got or {}).get(k))


def against_uftrace(a, tmp, trace, ft, what):
    """Our stacks of the function trace, compared with uftrace's flame graph of it; returns ours."""
    ours, r, _ = folded(a, tmp, what + '.folded', '--no-default-pairs', '--functions=' + ft, trace)
    ok(r.returncode == 0 and ours, '%s: folded export of the function trace' % what, r.stderr)
    if not a.uftrace:
        return ours
    u = run(a.uftrace, 'dump', '--flame-graph', '--sample-time=1ns', '-d', ft)
    theirs = parse_folded(u.stdout)
    ok(u.returncode == 0 and theirs, '%s: uftrace dump --flame-graph reads the same uftrace.data' % what,
       u.stdout[-800:] + u.stderr)
    ok(ours == theirs and ours, '%s: the same stacks and the same self times (ns) as uftrace\'s flame graph' % what,
       diff(theirs, ours))
    return ours


def check_functions(a, tmp, trace, ft):
    """The function trace of the ordinary run against uftrace; returns our stacks."""
    ours = against_uftrace(a, tmp, trace, ft, 'functions')
    deep = 'folded_worker_thread_body;folded_handle_one_request;folded_parse_request_body;' \
           'folded_compute_checksum_value;folded_recursive_descent'
    ok(ours and ours.get(deep, 0) > 0 and len(ours) >= 15,
       'functions: stacks of every thread, recursion and a function reached through several callers', ours)
    return ours


def check_deep(a, tmp, depth=600, limit=100):
    """Three threads recursing depth deep: uftrace's lines, a line per thread and depth, --max-depth."""
    trace, ft, _, _ = traced_run(a, tmp, 'deep', str(depth))
    plain = against_uftrace(a, tmp, trace, ft, 'deep') or {}
    # main: descent x (depth + 1); each worker: its body, then descent x (depth + 1)
    ok(len(plain) == 2 * (depth + 2) - 1 and max(k.count(';') for k in plain) == depth + 1,
       'deep: every depth of the recursion is a stack of its own (%d lines)' % (2 * (depth + 2) - 1), len(plain))
    got, r, _ = folded(a, tmp, 'deep-thread.folded', '--folded-root=thread', '--no-default-pairs',
                       '--functions=' + ft, trace)
    ok(r.returncode == 0 and got and len(got) == 3 * (depth + 1) + 2 and strip_root(got) == plain,
       'deep: --folded-root=thread keeps the %d stacks of the three threads apart' % (3 * (depth + 1) + 2),
       '%s %d' % (r.stderr, len(got or {})))
    cut, r, _ = folded(a, tmp, 'deep-cut.folded', '--max-depth=%d' % limit, '--no-default-pairs',
                       '--functions=' + ft, trace)
    cut = cut or {}
    shallow = {k: v for k, v in plain.items() if k.count(';') < limit - 1}
    ok(r.returncode == 0 and max(k.count(';') for k in cut) == limit - 1 and
       {k: v for k, v in cut.items() if k.count(';') < limit - 1} == shallow and
       sum(cut.values()) == sum(plain.values()),
       'deep: --max-depth=%d: stacks above it unchanged, the deeper time in the last frame, the same total' % limit,
       r.stderr)


def strip_root(stacks):
    """{stack without its first frame: summed count}."""
    out = collections.Counter()
    for k, v in stacks.items():
        out[k.split(';', 1)[1] if ';' in k else ''] += v
    return dict(out)


def check_roots(a, tmp, trace, ft, pid, tids, plain):
    """--folded-root=program|process|thread on the function trace."""
    want = {'program': {PROGRAM}, 'process': {'%s-%d' % (PROGRAM, pid)},
            'thread': {'%s-%d/%d' % (PROGRAM, pid, t) for t in tids}}
    for root, labels in want.items():
        got, r, _ = folded(a, tmp, 'root-%s.folded' % root, '--folded-root=' + root, '--no-default-pairs',
                           '--functions=' + ft, trace)
        firsts = {k.split(';')[0] for k in got or {}}
        ok(r.returncode == 0 and got and firsts == labels and strip_root(got) == plain,
           '--folded-root=%s: every stack starts with %s, and without it they add up to the plain lines' %
           (root, sorted(labels)[0] if root != 'thread' else 'PROGRAM-PID/TID of its thread'),
           '%s %s\n%s' % (r.stderr, sorted(firsts), diff(plain, strip_root(got or {}))))


def escape(name):
    """A name as a frame, by the documented rule (the names here are ASCII)."""
    return ''.join('%%%02X' % ord(c) if c in '; %' or ord(c) < 0x20 or ord(c) == 0x7f else c for c in name)


def expected_spans(recs, pid, root):
    """The folded stacks of the records' spans, computed from print's records by the documented rules."""
    begin = dict(BEGIN, io_start=IO_NAME)
    end = dict(END, io_done=IO_NAME)
    last = max(x['timestamp_ns'] for x in recs)
    stacks = collections.defaultdict(list)  # tid -> [[name, begin_ts, callees_ns]]
    out = collections.Counter()

    def close(tid, ts):
        st = stacks[tid]
        name, t0, callees = st.pop()
        dur = ts - t0
        path = [f[0] for f in st] + [name]
        if root:
            path.insert(0, '%s-%d/%d' % (PROGRAM, pid, tid))
        out[';'.join(escape(p) for p in path)] += dur - callees
        if st:
            st[-1][2] += dur

    for x in recs:
        tid, ts, name = x['pid'], x['timestamp_ns'], x['name']
        if name in begin:
            stacks[tid].append([begin[name], ts, 0])
        elif name in end:
            names = [f[0] for f in stacks[tid]]
            if end[name] in names:  # else an end without a begin: an instant
                depth = len(names) - 1 - names[::-1].index(end[name])
                while len(stacks[tid]) > depth:  # those above first ("closed early"), then its own
                    close(tid, ts)
    for tid in list(stacks):
        while stacks[tid]:  # never ended: closed where the trace ends
            close(tid, last)
    return {k: v for k, v in out.items() if v}


def check_spans(a, tmp, trace, pid):
    """The spans of the trace alone, against print's records."""
    p = run(a.cli, 'print', '--format=json', trace)
    recs = [json.loads(line) for line in p.stdout.splitlines()]
    ok(p.returncode == 0 and recs, 'spans: print --format=json reads the trace', p.stderr)
    pair = '--pair=io_start:io_done=' + IO_NAME
    r = export(a, '--format=folded', '-o', '-', pair, trace)
    got = parse_folded(r.stdout)
    want = expected_spans(recs, pid, False)
    ok(r.returncode == 0 and got == want and got,
       'spans: -o - writes the stacks and self times computed from print\'s records', r.stderr + diff(want, got))
    ok(got and got.get('batch;phase', 0) > 0 and got.get('session', 0) > 0 and
       any(k.startswith('session;request;' + IO_FRAME) for k in got),
       'spans: a frame closed early (batch;phase), one never ended (session) and the escaped --pair name are there',
       sorted(got or {}))
    s = export(a, '--format=folded', '-o', '-', '--folded-root=thread', pair, trace)
    r2 = run(a.cli, 'export', '--format=folded', '-o', os.path.join(tmp, 'summary.folded'), pair, trace)
    ok(s.returncode == 0 and parse_folded(s.stdout) == expected_spans(recs, pid, True),
       'spans: --folded-root=thread puts PROGRAM-PID/TID first, the same times under it',
       s.stderr + diff(expected_spans(recs, pid, True), parse_folded(s.stdout)))
    k = run(a.cli, 'export', '--format=folded', '-o', '-', '--pair=io_start:io_done@n', trace)
    keyed = parse_folded(k.stdout) or {}
    ok(k.returncode == 0 and keyed and not any('io' in st.split(';') for st in keyed) and
       sum(keyed.values()) == sum(want.values()) and 'left out: instant events' in k.stderr,
       'spans: a keyed span (@ARG) is no frame (no thread stack holds it); the time stays with its thread\'s frames',
       k.stderr + '\n'.join(sorted(keyed)))
    ok(r2.returncode == 0 and '1 begin never ended' in r2.stderr and '2 calls closed early' in r2.stderr and
       'left out: instant events' in r2.stderr, 'spans: the summary counts what the engine closed', r2.stderr)
    return [r.stdout, s.stdout]


def check_syntax(texts):
    """Each line as flamegraph.pl reads it: STACK COUNT, frames without ';' or blanks, no stack twice."""
    bad, seen = [], set()
    for text in texts:
        seen_here = set()
        for line in text.splitlines():
            m = FLAMEGRAPH_LINE.match(line)
            stack, _, count = line.rpartition(' ')
            if (not m or m.group(1) != stack or m.group(2) != count or not count.isdigit() or int(count) == 0 or
                    count != str(int(count)) or stack in seen_here or
                    not all(FRAME.match(f) for f in stack.split(';'))):
                bad.append(line)
            seen_here.add(stack)
            seen.update(stack.split(';'))
    ok(texts and all(texts) and not bad,
       'syntax: every line is STACK COUNT as flamegraph.pl splits it, frames hold no \';\' or blank, no stack twice',
       '\n'.join(bad[:10]))
    decoded = {re.sub('%([0-9A-F]{2})', lambda m: chr(int(m.group(1), 16)), f) for f in seen}
    ok(IO_NAME in decoded and ODD_PROGRAM in decoded, 'syntax: decoding %%XX gives the names back (%s, %s)' %
       (IO_NAME, ODD_PROGRAM), sorted(decoded))


def check_odd_program(a, tmp):
    """folded_app run under a name holding ' ', ';' and '%': its root frame escapes them."""
    odd = os.path.join(tmp, ODD_PROGRAM)
    shutil.copy(a.app, odd)
    trace = os.path.join(tmp, 'odd.trace')
    env = dict(os.environ, SIMPLETRACE='enable=*,file=' + trace, SIMPLETRACE_FUNC='off')
    r = run(odd, env=env, cwd=tmp)
    s = export(a, '--format=folded', '-o', '-', '--folded-root=program', trace)
    got = parse_folded(s.stdout) or {}
    ok(r.returncode == 0 and s.returncode == 0 and got and {k.split(';')[0] for k in got} == {ODD_FRAME},
       'syntax: a program named "%s" is the root frame %s' % (ODD_PROGRAM, ODD_FRAME), r.stderr + s.stderr +
       s.stdout[:500])
    return s.stdout


def check_together(a, tmp, trace, ft):
    """Spans and calls in one export: a call made inside a span is under it."""
    got, r, text = folded(a, tmp, 'both.folded', '--functions=' + ft, trace)
    inner = 'folded_worker_thread_body;folded_handle_one_request;request;phase;folded_parse_request_body'
    ok(r.returncode == 0 and got and any(k.startswith(inner) for k in got) and
       any(k.startswith('session;folded_handle_one_request;request;') for k in got),
       'together: calls nest inside the spans of their thread (phase > parse, session > main\'s calls)',
       r.stderr + '\n'.join(sorted(got or {})))
    return text


def check_cli(a, tmp, trace):
    """Format by name, stdout, usage errors, an output that cannot be made, a cut trace."""
    out = os.path.join(tmp, 'byname.folded')
    r = export(a, '-o', out, trace)
    s = export(a, '--format=folded', '-o', '-', trace)
    ok(r.returncode == 0 and s.returncode == 0 and open(out).read() == s.stdout and s.stdout,
       'cli: an OUT named *.folded is folded, and equals what -o - writes')
    r = export(a, '--format=folded', '--folded-root=tree', '-o', '-', trace)
    ok(r.returncode == 2 and "unknown --folded-root 'tree' (none, program, process or thread)" in r.stderr,
       'cli: an unknown --folded-root is a usage error naming the choices', r.stderr)
    r = export(a, '--format=chrome', '--folded-root=thread', '-o', '-', trace)
    ok(r.returncode == 2 and '--folded-root is for folded only, not chrome' in r.stderr,
       'cli: --folded-root with another format is a usage error', r.stderr)
    r = export(a, '--format=folded', '-o', '-', '--format=folded2', trace)
    ok(r.returncode == 2 and 'ctf, folded or parquet)' in r.stderr, 'cli: the unknown-format message lists folded', r.stderr)
    r = export(a, '--format=folded', '--no-default-pairs', '-o', '-', trace)
    ok(r.returncode == 0 and r.stdout == '' and 'warning: - holds no stacks: no call was found' in r.stderr,
       'cli: a trace without calls gives no stacks, and a warning says so', r.stderr)
    bad = os.path.join(tmp, 'no-such-dir', 'x.folded')
    r = export(a, '-o', bad, trace)
    ok(r.returncode == 1 and 'cannot create a file next to ' + bad in r.stderr and not os.path.exists(bad),
       'cli: an output that cannot be created: exit 1 with a message', r.stderr)
    data = open(trace, 'rb').read()
    cut = os.path.join(tmp, 'cut.trace')
    with open(cut, 'wb') as f:
        f.write(data[:len(data) - 5])
    out = os.path.join(tmp, 'cut.folded')
    r = export(a, '-o', out, cut)
    whole = parse_folded(s.stdout) or {}
    part = parse_folded(open(out).read()) if os.path.exists(out) else None
    ok(r.returncode == 1 and 'holds the records before that point' in r.stderr and part and
       set(part) <= set(whole),
       'cli: a trace cut inside a record: exit 1, the stacks of what precedes the cut', r.stderr)


class Args:
    pass


def main():
    a = Args()
    a.cli, a.app = (os.path.abspath(p) for p in sys.argv[1:3])  # the app runs in the temporary directory
    a.uftrace = sys.argv[3]
    ok(bool(a.uftrace), 'uftrace installed (Debian package uftrace; CI installs it)')
    with tempfile.TemporaryDirectory() as tmp:
        trace, ft, pid, tids = traced_run(a, tmp)
        plain = check_functions(a, tmp, trace, ft)
        if plain:
            check_roots(a, tmp, trace, ft, pid, tids, plain)
        check_deep(a, tmp)
        texts = check_spans(a, tmp, trace, pid)
        texts.append(check_together(a, tmp, trace, ft))
        texts.append(check_odd_program(a, tmp))
        texts.append(open(os.path.join(tmp, 'functions.folded')).read()
                     if os.path.exists(os.path.join(tmp, 'functions.folded')) else '')
        check_syntax(texts)
        check_cli(a, tmp, trace)
    return done()


if __name__ == '__main__':
    sys.exit(main())
