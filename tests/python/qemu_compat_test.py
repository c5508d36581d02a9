#!/usr/bin/env python3
"""Analysis scripts written for QEMU's scripts/simpletrace.py, run unchanged on
this module: their output on the real QEMU traces of ../shared/fixtures/qemu/
is what they print under QEMU's simpletrace.py (recorded in expected/, one
file per script and trace). Also `python3 -m simpletrace` against the text
QEMU's simpletrace.py printed for each trace (NAME.expected.txt beside it).

The scripts (scripts/): count_events.py (Analyzer2 through run(), per event
and pid, dropped events), mutex_latency.py (Analyzer2, pairing lock records
into wait and hold times), legacy_arity.py (the deprecated Analyzer's arity
rule and catchall(event, rec)), process_files.py (process() with open files,
a list of events and read_header=False, read_trace_records(), the
context-manager protocol).

    qemu_compat_test.py FIXTURES-DIR                  TAP; PYTHONPATH finds this module
    qemu_compat_test.py FIXTURES-DIR --regenerate QEMU-SCRIPTS-DIR
        rewrites expected/ from QEMU's simpletrace.py in QEMU-SCRIPTS-DIR
        (a QEMU source tree's scripts/, with tracetool/)
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from tap import done, ok  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, 'expected')
EVERY_TRACE = ['count_events', 'mutex_latency', 'legacy_arity']
SOME_TRACES = {'process_files': ['create_qcow2', 'bench_small_drops', 'events_file_convert', 'no_events_info']}
HEADERLESS = [('count_events', 'create_qcow2'), ('count_events', 'bench_small_drops')]


def cases(fixtures):
    """(script, trace name, argv after the script) of every expected output."""
    traces = sorted(f[:-4] for f in os.listdir(fixtures) if f.endswith('.bin'))
    out = [(s, t, False) for s in EVERY_TRACE for t in traces]
    out += [(s, t, False) for s, ts in SOME_TRACES.items() for t in ts]
    return out + [(s, t, True) for s, t in HEADERLESS]


def run_script(script, fixtures, trace, headerless, tmp, pythonpath):
    """The script's stdout and stderr (and exit status) on one trace."""
    path = os.path.join(fixtures, trace + '.bin')
    args = [os.path.join(fixtures, 'trace-events-all'), path]
    if headerless:  # the trace without its 24-byte header, read with --no-header
        path = os.path.join(tmp, trace + '.noheader')
        with open(os.path.join(fixtures, trace + '.bin'), 'rb') as src, open(path, 'wb') as dst:
            dst.write(src.read()[24:])
        args = ['--no-header', args[0], path]
    env = dict(os.environ, PYTHONPATH=pythonpath) if pythonpath else dict(os.environ)
    r = subprocess.run([sys.executable, os.path.join(HERE, 'scripts', script + '.py')] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp)
    return r.stdout.decode(errors='replace'), r.stderr.decode(errors='replace'), r.returncode


def expected_name(script, trace, headerless):
    return os.path.join(EXPECTED, '%s.%s%s.txt' % (script, trace, '.noheader' if headerless else ''))


def regenerate(fixtures, qemu_scripts):
    os.makedirs(EXPECTED, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for script, trace, headerless in cases(fixtures):
            out, err, status = run_script(script, fixtures, trace, headerless, tmp, os.path.abspath(qemu_scripts))
            if status != 0 or err:
                sys.exit('%s on %s under QEMU simpletrace.py: exit %d\n%s' % (script, trace, status, err))
            with open(expected_name(script, trace, headerless), 'w') as f:
                f.write(out)
    return 0


def main():
    fixtures = sys.argv[1]
    if sys.argv[2:3] == ['--regenerate']:
        return regenerate(fixtures, sys.argv[3])
    with tempfile.TemporaryDirectory() as tmp:
        for script, trace, headerless in cases(fixtures):
            with open(expected_name(script, trace, headerless)) as f:
                want = f.read()
            out, err, status = run_script(script, fixtures, trace, headerless, tmp, None)
            diff = [line for pair in zip(want.splitlines(), out.splitlines()) if pair[0] != pair[1]
                    for line in ('- ' + pair[0], '+ ' + pair[1])]
            ok(out == want and status == 0 and not err,
               '%s%s on %s prints what it prints under QEMU\'s simpletrace.py'
               % (script, ' --no-header' if headerless else '', trace),
               err or '\n'.join(diff[:10]) or 'lines: %d, expected %d' % (len(out.splitlines()), len(want.splitlines()))
               )
        for f in sorted(os.listdir(fixtures)):
            if not f.endswith('.bin'):
                continue
            with open(os.path.join(fixtures, f[:-4] + '.expected.txt'), 'rb') as e:
                want = e.read()
            r = subprocess.run([sys.executable, '-m', 'simpletrace', os.path.join(fixtures, 'trace-events-all'),
                                os.path.join(fixtures, f)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            ok(r.stdout == want and r.returncode == 0 and not r.stderr,
               'python3 -m simpletrace prints what simpletrace.py prints for %s' % f, r.stderr.decode()[-500:])
        data = open(os.path.join(fixtures, 'create_qcow2.bin'), 'rb').read()
        headerless = os.path.join(tmp, 'create.noheader')
        with open(headerless, 'wb') as h:
            h.write(data[24:])
        r = subprocess.run([sys.executable, '-m', 'simpletrace', '--no-header',
                            os.path.join(fixtures, 'trace-events-all'), headerless], stdout=subprocess.PIPE)
        ok(r.stdout == open(os.path.join(fixtures, 'create_qcow2.expected.txt'), 'rb').read(),
           'python3 -m simpletrace --no-header reads the trace without its header (its mapping records name the IDs)')
        r = subprocess.run([sys.executable, '-m', 'simpletrace', 'only-one-operand-and-another', 'x', 'y'],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        ok(r.returncode == 1 and r.stderr.startswith(b'usage: ') and b'[--no-header] <trace-events> <trace-file>'
           in r.stderr, 'python3 -m simpletrace with three operands: usage, exit 1', r.stderr)
        r = subprocess.run([sys.executable, '-m', 'simpletrace', '--help'], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        ok(r.returncode == 0 and r.stdout.startswith(b'usage: python3 -m simpletrace ') and b'--no-header' in r.stdout
           and not r.stderr, 'python3 -m simpletrace --help: usage on stdout, exit 0', r.stdout + r.stderr)
        for args in (['missing.trace'], [os.path.join(fixtures, 'trace-events-all'), 'missing.trace'],
                     ['missing-events', os.path.join(fixtures, 'create_qcow2.bin')]):
            r = subprocess.run([sys.executable, '-m', 'simpletrace'] + args, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=tmp)
            missing = args[0] if args[0].startswith('missing') else args[1]
            ok(r.returncode == 1 and r.stderr == b'python3 -m simpletrace: %s: No such file or directory\n'
               % missing.encode() and not r.stdout,
               'python3 -m simpletrace %s: one line naming the missing file, exit 1' % ' '.join(os.path.basename(a)
                                                                                            for a in args), r.stderr)
    return done()


if __name__ == '__main__':
    sys.exit(main())
