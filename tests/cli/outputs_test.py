#!/usr/bin/env python3
"""What the commands that write files never overwrite (issue 21, items 3 and 4).

Checked here:
  - an output that is one of the command's inputs is refused before
    anything is written, for gen (-o vs a trace-events file or --binary),
    export (-o vs the trace, a piece of it, a trace-events file, the
    --functions directory; a uftrace or CTF directory holding the trace),
    merge (-o vs a trace, a trace of a directory given, a piece, a
    trace-events file) and recover (-o vs --trace, a ring file, the names
    file): named by the same path, by another path to the same file
    (`./x`, `d/../d/x`) and by a hard link; each time the exit status is
    the command's usage error (2), the message names the output and the
    input, and every input keeps its bytes (a directory: every file);
  - the same commands with an output elsewhere still work;
  - a symbolic link given as the output of export, merge, gen or recover is
    replaced by the file written, with one notice naming the link and its
    target: its target keeps its bytes.

argv: SIMPLETRACE-CLI DEMO TRACE-EVENTS PIPE-STAGE
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))  # tap.py, v4_decode.py
from tap import done, ok, run  # noqa: E402

PRECIOUS = b"a link's target, not to be touched\n"


def snapshot(paths):
    """{path: bytes} of every file among paths, directories walked."""
    out = {}
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                for f in files:
                    q = os.path.join(root, f)
                    out[q] = open(q, 'rb').read()
        else:
            out[p] = open(p, 'rb').read()
    return out


def refused(what, argv, out, inp, keep, cwd):
    """argv must exit 2 naming out and inp, every file of keep unchanged, and nothing new beside them."""
    before = snapshot(keep)
    listing = sorted(os.listdir(cwd))
    r = run(*argv, cwd=cwd)
    first = r.stderr.splitlines()[0] if r.stderr else ''
    ok(r.returncode == 2 and ("'%s'" % out) in first and ("'%s'" % inp) in first and 'refusing' in first,
       '%s: exit 2, the message names the output %s and the input %s' % (what, out, inp),
       'exit %d\n%s' % (r.returncode, r.stderr))
    ok(snapshot(keep) == before and sorted(os.listdir(cwd)) == listing,
       '%s: the inputs keep their bytes, nothing was written' % what)


def replaced(what, argv, link, target, cwd):
    """argv, whose output is the symbolic link link, replaces the link; its target keeps its bytes."""
    r = run(*argv, cwd=cwd)
    p = os.path.join(cwd, link)
    ok(r.returncode == 0, '%s: exit 0' % what, r.stderr)
    notes = [line for line in r.stderr.splitlines() if 'symbolic link' in line]
    ok(len(notes) == 1 and ("'%s'" % link) in notes[0] and ("'%s'" % target) in notes[0] and 'replaced' in notes[0],
       '%s: one notice names the link and its target' % what, r.stderr)
    ok(not os.path.islink(p) and os.path.isfile(p) and os.path.getsize(p) > 0,
       '%s: the link was replaced by the file written' % what)
    ok(open(os.path.join(cwd, target), 'rb').read() == PRECIOUS, "%s: the link's target keeps its bytes" % what)


def plant(cwd, link, target):
    with open(os.path.join(cwd, target), 'wb') as f:
        f.write(PRECIOUS)
    os.symlink(target, os.path.join(cwd, link))


def traces(demo, tmp):
    """app.trace (one file) and rot.trace, rot.trace.1, ... (rotate=64K) in tmp."""
    r = run(demo, '--workers', '2', '--jobs', '200', cwd=tmp,
            env=dict(os.environ, SIMPLETRACE='enable=*,file=app.trace'))
    ok(r.returncode == 0 and os.path.getsize(os.path.join(tmp, 'app.trace')) > 0, 'demo traced app.trace', r.stderr)
    r = run(demo, '--workers', '2', '--jobs', '1500', cwd=tmp,
            env=dict(os.environ, SIMPLETRACE='enable=*,rotate=64K,file=rot.trace'))
    ok(r.returncode == 0 and os.path.exists(os.path.join(tmp, 'rot.trace.2')), 'demo traced rot.trace in pieces',
       r.stderr)


def gen(cli, events, tmp):
    d = os.path.join(tmp, 'gen')
    os.mkdir(d)
    shutil.copy(events, os.path.join(d, 'trace-events'))
    os.link(os.path.join(d, 'trace-events'), os.path.join(d, 'te-link'))
    shutil.copy(events, os.path.join(d, 'app'))  # stands for the traced program
    keep = [os.path.join(d, 'trace-events'), os.path.join(d, 'app')]
    refused('gen, same path', [cli, 'gen', '--format=c', '-o', 'trace-events', 'trace-events'],
            'trace-events', 'trace-events', keep, d)
    refused('gen, ./ path', [cli, 'gen', '--format=h', '-o', './trace-events', 'trace-events'],
            './trace-events', 'trace-events', keep, d)
    refused('gen, hard link', [cli, 'gen', '--format=c', '-o', 'te-link', 'trace-events'],
            'te-link', 'trace-events', keep, d)
    refused('gen, the second input', [cli, 'gen', '--format=c', '-otrace-events', 'te-link', 'trace-events'],
            'trace-events', 'te-link', keep, d)
    refused('gen, --binary', [cli, 'gen', '--format=stp', '--binary=app', '-o', 'app', 'trace-events'],
            'app', 'app', keep, d)
    r = run(cli, 'gen', '--format=c', '-o', 'trace.c', 'trace-events', cwd=d)
    ok(r.returncode == 0 and os.path.getsize(os.path.join(d, 'trace.c')) > 0, 'gen to another file works', r.stderr)
    plant(d, 'link.h', 'h.target')
    replaced('gen -o LINK', [cli, 'gen', '--format=h', '-o', 'link.h', 'trace-events'], 'link.h', 'h.target', d)


def export(cli, events, tmp):
    d = tmp
    os.link(os.path.join(d, 'app.trace'), os.path.join(d, 'hard.trace'))
    shutil.copy(events, os.path.join(d, 'trace-events'))
    keep = [os.path.join(d, x) for x in ('app.trace', 'rot.trace', 'rot.trace.1', 'rot.trace.2', 'trace-events')]
    refused('export, same path', [cli, 'export', '--format=chrome', '-o', 'app.trace', 'app.trace'],
            'app.trace', 'app.trace', keep, d)
    refused('export, ./ path (uftrace directory over the trace)', [cli, 'export', '-o', './app.trace', 'app.trace'],
            './app.trace', 'app.trace', keep, d)
    refused('export, hard link', [cli, 'export', '--format=perfetto', '-o', 'hard.trace', 'app.trace'],
            'hard.trace', 'app.trace', keep, d)
    refused('export, trace-events', [cli, 'export', '--format=chrome', '-o', 'trace-events', 'trace-events',
                                     'app.trace'], 'trace-events', 'trace-events', keep, d)
    refused('export, a rotated piece', [cli, 'export', '--format=chrome', '-o', 'rot.trace.1', 'rot.trace'],
            'rot.trace.1', 'rot.trace', keep, d)
    os.mkdir(os.path.join(d, 'xd'))
    shutil.copy(os.path.join(d, 'app.trace'), os.path.join(d, 'xd', 'in.trace'))
    for fmt in ('uftrace', 'ctf'):
        refused('export, a %s directory holding the trace' % fmt,
                [cli, 'export', '--format=' + fmt, '-o', 'xd', 'xd/in.trace'], 'xd', 'xd/in.trace',
                keep + [os.path.join(d, 'xd')], d)
    r = run(cli, 'export', '--format=uftrace', '-o', 'fn.data', 'app.trace', cwd=d)
    ok(r.returncode == 0, 'export to uftrace.data works', r.stderr)
    refused('export, --functions directory', [cli, 'export', '--format=uftrace', '--functions', 'fn.data',
                                              '-o', 'fn.data/../fn.data', 'app.trace'],
            'fn.data/../fn.data', 'fn.data', keep + [os.path.join(d, 'fn.data')], d)
    r = run(cli, 'export', '--format=chrome', '-o', 'app.json', 'app.trace', cwd=d)
    ok(r.returncode == 0 and os.path.getsize(os.path.join(d, 'app.json')) > 0, 'export to another file works',
       r.stderr)
    plant(d, 'link.json', 'json.target')
    replaced('export -o LINK', [cli, 'export', '--format=chrome', '-o', 'link.json', 'app.trace'],
             'link.json', 'json.target', d)


def merge(cli, tmp):
    d = tmp
    os.mkdir(os.path.join(d, 'md'))
    shutil.copy(os.path.join(d, 'app.trace'), os.path.join(d, 'md', 'a.trace'))
    os.link(os.path.join(d, 'rot.trace.1'), os.path.join(d, 'piece-link'))
    keep = [os.path.join(d, x) for x in ('app.trace', 'rot.trace', 'rot.trace.1', 'rot.trace.2', 'trace-events',
                                         'md')]
    refused('merge, same path', [cli, 'merge', '-o', 'app.trace', 'app.trace'], 'app.trace', 'app.trace', keep, d)
    refused('merge, ./ path', [cli, 'merge', '-o', './app.trace', 'rot.trace', 'app.trace'],
            './app.trace', 'app.trace', keep, d)
    refused('merge, hard link', [cli, 'merge', '-o', 'hard.trace', 'app.trace'], 'hard.trace', 'app.trace', keep, d)
    refused('merge, a trace of a directory given', [cli, 'merge', '-o', 'md/../md/a.trace', 'md'],
            'md/../md/a.trace', 'md/a.trace', keep, d)
    refused('merge, a rotated piece', [cli, 'merge', '-o', 'rot.trace.2', 'app.trace', 'rot.trace'],
            'rot.trace.2', 'rot.trace', keep, d)
    refused('merge, a hard link to a rotated piece', [cli, 'merge', '-o', 'piece-link', 'rot.trace'],
            'piece-link', 'rot.trace', keep, d)
    refused('merge, trace-events', [cli, 'merge', '-o', 'trace-events', 'trace-events', 'app.trace'],
            'trace-events', 'trace-events', keep, d)
    r = run(cli, 'merge', '-o', 'm.trace', 'app.trace', 'rot.trace', cwd=d)
    ok(r.returncode == 0 and os.path.getsize(os.path.join(d, 'm.trace')) > 0, 'merge to another file works', r.stderr)
    plant(d, 'link.trace', 'trace.target')
    replaced('merge -o LINK', [cli, 'merge', '-o', 'link.trace', 'app.trace'], 'link.trace', 'trace.target', d)


def crashed(stage, d):
    """Runs PIPE-STAGE with crash=d/cr and file=d/crashed.trace and kills it once its ring file is there."""
    env = dict(os.environ, SIMPLETRACE='enable=*,file=crashed.trace,crash=cr')
    p = subprocess.Popen([stage, '1'], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, cwd=d, env=env)
    p.stdin.write(b'one\ntwo\n')
    p.stdin.flush()
    cr = os.path.join(d, 'cr')
    for _ in range(2000):
        if os.path.isdir(cr) and any(n.endswith('.names') for n in os.listdir(cr)) and \
                any(n.endswith('.ring') for n in os.listdir(cr)):
            break
        time.sleep(0.01)
    time.sleep(0.2)
    p.send_signal(signal.SIGKILL)
    p.wait()
    rings = sorted(n for n in os.listdir(cr) if n.endswith('.ring'))
    names = sorted(n for n in os.listdir(cr) if n.endswith('.names'))
    ok(p.returncode == -signal.SIGKILL and rings and names, 'a program killed left its ring and names files',
       os.listdir(cr))
    return rings[0], names[0]


def recover(cli, stage, tmp):
    d = os.path.join(tmp, 'rec')
    os.mkdir(d)
    ring, names = crashed(stage, d)
    os.link(os.path.join(d, 'crashed.trace'), os.path.join(d, 'hard.trace'))
    keep = [os.path.join(d, 'crashed.trace'), os.path.join(d, 'cr')]
    refused('recover, the ring file', [cli, 'recover', 'cr', '-o', 'cr/' + ring], 'cr/' + ring, 'cr/' + ring, keep, d)
    refused('recover, the ring file by another path', [cli, 'recover', 'cr', '-o', './cr/../cr/' + ring],
            './cr/../cr/' + ring, 'cr/' + ring, keep, d)
    refused('recover, the names file', [cli, 'recover', 'cr', '-o', 'cr/' + names], 'cr/' + names, 'cr/' + names,
            keep, d)
    refused('recover, the --trace file', [cli, 'recover', '--trace', 'crashed.trace', 'cr', '-o', 'crashed.trace'],
            'crashed.trace', 'crashed.trace', keep, d)
    refused('recover, a hard link to the --trace file',
            [cli, 'recover', '--trace', 'crashed.trace', 'cr', '-o', 'hard.trace'], 'hard.trace', 'crashed.trace',
            keep, d)
    plant(d, 'link.trace', 'rec.target')
    replaced('recover -o LINK', [cli, 'recover', '--keep', '--trace', 'crashed.trace', 'cr', '-o', 'link.trace'],
             'link.trace', 'rec.target', d)
    r = run(cli, 'recover', '--trace', 'crashed.trace', 'cr', '-o', 'recovered.trace', cwd=d)
    ok(r.returncode == 0 and os.path.exists(os.path.join(d, 'recovered.trace')), 'recover to another file works',
       r.stderr)


def main():
    cli, demo, events, stage = (os.path.abspath(a) for a in sys.argv[1:5])  # the commands run elsewhere
    tmp = tempfile.mkdtemp(prefix='st-outputs-')
    try:
        traces(demo, tmp)
        gen(cli, events, tmp)
        export(cli, events, tmp)
        merge(cli, tmp)
        recover(cli, stage, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return done()


if __name__ == '__main__':
    sys.exit(main())
