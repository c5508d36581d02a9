#!/usr/bin/env python3
"""simpletrace latency on bad input: nothing lost without a word.

  - usage errors exit 2 with a message naming what is wrong and print nothing on stdout: bad --pair
    rules (no ':', a '*' on one side, two ':', a bad @ARG), bad --by, --slowest=-1 (and not a number,
    over 10000, empty), an unknown --format, --functions with --align, an unknown option, no trace;
  - a trace cut inside a record (its header, its payload) exits 1 with print's message naming the
    file and the byte offset of the cut record (found here by walking the v4 layout), and still prints
    the figures of the records before it (JSON with "partial": true, equal to the truth computed from
    print's records of the same cut file; text with the table and a line saying so); a trace cut
    inside its header exits 1, naming byte offset 0, with nothing on stdout; a missing file exits 1;
  - warnings, exit 0: --by=ARG that no event declares (every span in group ""), a --pair that pairs
    nothing (each such rule named, a keyed one whose ARG one side lacks with that reason), and their
    figures are those without the option.

argv: SIMPLETRACE SPANS_PROG SPANS_EVENTS
"""
import json
import os
import struct
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


def record_offsets(data):
    """Byte offsets of the records of a v4 file after its 24-byte header: a mapping record (type 0) is
    20 bytes and its name; any other record 8 bytes and the length stored at its byte 24."""
    o = '<' if struct.unpack_from('<Q', data, 8)[0] == 0xF2B177CB0AA429B4 else '>'  # the writer's byte order
    off = 24
    while off < len(data):
        rtype, = struct.unpack_from(o + 'Q', data, off)
        yield off, rtype
        off += 20 + struct.unpack_from(o + 'I', data, off + 16)[0] if rtype == 0 else \
            8 + struct.unpack_from(o + 'I', data, off + 24)[0]


def figures(doc):
    return {(s['name'], s['group']): {k: v for k, v in s.items() if k not in ('slowest',)} for s in doc['spans']}


def main():
    decl = truth.declarations(EVENTS)
    tmp = tempfile.TemporaryDirectory(prefix='st-latency-errors-')
    trace = os.path.join(tmp.name, 'a.trace')
    env = dict(os.environ, SIMPLETRACE='enable=*,file=%s,clock=monotonic' % trace)
    r = subprocess.run([PROG, '--seed=5', '--count=60'], env=env, stdout=subprocess.PIPE, text=True, timeout=120)
    ok(r.returncode == 0, 'spans_prog ran')

    # Usage errors.
    usage = [
        (['--pair=abc'], "bad pairing rule 'abc'"),
        (['--pair=a*:b'], "bad pairing rule 'a*:b'"),
        (['--pair=a:b:c'], "more than one ':'"),
        (['--pair=a:b@1x'], 'ARG of @ARG'),
        (['--pair=a:b@'], 'ARG of @ARG'),
        (['--by=a,b'], "bad --by 'a,b'"),
        (['--by='], "bad --by ''"),
        (['--by=x y'], "bad --by 'x y'"),
        (['--slowest=-1'], "bad --slowest '-1'"),
        (['--slowest=abc'], "bad --slowest 'abc'"),
        (['--slowest=10001'], "bad --slowest '10001'"),
        (['--slowest='], "bad --slowest ''"),
        (['--format=xml'], "unknown format 'xml'"),
        (['--functions=' + tmp.name, '--align=realtime'], '--functions'),
        (['--nosuch'], "unknown option '--nosuch'"),
    ]
    for opts, want in usage:
        r = run(ST, 'latency', *(opts + [trace]))
        ok(r.returncode == 2 and want in r.stderr and r.stdout == '', '%s: exit 2, "%s"' % (' '.join(opts), want),
           'exit %d\n%s%s' % (r.returncode, r.stderr, r.stdout[:200]))
    r = run(ST, 'latency')
    ok(r.returncode == 2 and 'TRACE' in r.stderr and r.stdout == '', 'no trace: exit 2', r.stderr)
    missing = os.path.join(tmp.name, 'missing.trace')
    r = run(ST, 'latency', missing)
    ok(r.returncode == 1 and missing in r.stderr and r.stdout == '', 'a missing trace: exit 1 naming it', r.stderr)

    # A trace cut inside a record.
    data = open(trace, 'rb').read()
    events = [off for off, rtype in record_offsets(data) if rtype == 1]
    middle = events[len(events) // 2]
    for cut, where in ((middle + 10, 'its header'), (middle + 36, 'its payload')):
        cut_path = os.path.join(tmp.name, 'cut.trace')
        with open(cut_path, 'wb') as f:
            f.write(data[:cut])
        p = run(ST, 'print', '--format=json', cut_path)
        recs = [json.loads(line) for line in p.stdout.splitlines()]
        ok(p.returncode == 1 and len(recs) > 10, 'print of the trace cut inside %s: exit 1, %d records before'
           % (where, len(recs)), p.stderr)
        r = run(ST, 'latency', '--format=json', '--pair=' + KEYED, cut_path)
        msg = '%s: byte offset %d' % (cut_path, middle)
        ok(r.returncode == 1 and msg in r.stderr and 'the figures above are of the records before that point'
           in r.stderr, 'cut inside %s: exit 1, "%s"' % (where, msg), 'exit %d\n%s' % (r.returncode, r.stderr))
        try:
            doc = json.loads(r.stdout)
        except ValueError as e:
            doc = None
            ok(False, 'cut inside %s: the JSON of what came before' % where, '%s\n%s' % (e, r.stdout[:300]))
        if doc:
            tr = truth.spans(recs, decl, [KEYED], default_pid=recs[0]['pid'])
            spans = {(s['name'], s['group']): s for s in doc['spans']}
            bad = ['%s: %s' % (k, truth.problems(s, tr[k])) for k, s in spans.items()
                   if k in tr and truth.problems(s, tr[k])]
            ok(doc['partial'] is True and doc['records'] == len(recs) and set(spans) == set(tr) and not bad,
               'cut inside %s: "partial", and the figures of the %d records before the cut equal the truth'
               % (where, len(recs)), '%s %s\n%s' % (doc['partial'], doc['records'], '\n'.join(bad)))
            ok(sum(s['unfinished'] for s in doc['spans']) > 0,
               'cut inside %s: the spans open at the cut count as unfinished' % where)
        r = run(ST, 'latency', '--pair=' + KEYED, cut_path)
        ok(r.returncode == 1 and r.stdout.startswith('span ') and msg in r.stderr,
           'cut inside %s: the text table of what came before, exit 1' % where, r.stderr)

    # A trace cut inside its header: nothing to show.
    head = os.path.join(tmp.name, 'head.trace')
    with open(head, 'wb') as f:
        f.write(data[:10])
    r = run(ST, 'latency', '--format=json', head)
    ok(r.returncode == 1 and '%s: byte offset 0' % head in r.stderr and r.stdout == '',
       'a trace cut inside its header: exit 1, byte offset 0, nothing on stdout', r.stderr + r.stdout)

    # Warnings.
    base = run(ST, 'latency', '--format=json', '--pair=' + KEYED, trace)
    ok(base.returncode == 0 and base.stderr == '', 'the whole trace: exit 0, no warning', base.stderr)
    base_fig = figures(json.loads(base.stdout))
    r = run(ST, 'latency', '--format=json', '--pair=' + KEYED, '--by=nosuch', trace)
    doc = json.loads(r.stdout) if r.returncode == 0 else {'spans': []}
    ok(r.returncode == 0 and "warning: --by=nosuch: no event declares an argument 'nosuch'" in r.stderr,
       '--by=nosuch: exit 0 with a warning', r.stderr)
    regrouped = {(n, None): dict(f, group=None) for (n, g), f in figures(doc).items()}
    ok(all(s['group'] == '' for s in doc['spans']) and regrouped == base_fig,
       '--by=nosuch: every span in group "", the figures without --by', [s['group'] for s in doc['spans']])

    r = run(ST, 'latency', '--format=json', '--pair=never_a:never_b', '--pair=' + KEYED,
            '--pair=req_submit:req_complete=byk@kind', '--pair=other_*:other_*_done', trace)
    lines = [l for l in r.stderr.splitlines() if 'warning' in l]
    want = ['simpletrace latency: warning: --pair=never_a:never_b pairs no declared events',
            'simpletrace latency: warning: --pair=req_submit:req_complete=byk@kind pairs no declared events '
            "(both must declare the key's argument)",
            'simpletrace latency: warning: --pair=other_*:other_*_done pairs no declared events']
    ok(r.returncode == 0 and lines == want, 'three --pair rules pairing nothing: one warning each, exit 0',
       r.stderr)
    ok(r.returncode == 0 and figures(json.loads(r.stdout)) == base_fig,
       'rules pairing nothing change no figure')
    return done()


if __name__ == '__main__':
    sys.exit(main())
