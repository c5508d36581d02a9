#!/usr/bin/env python3
"""`print --follow` ends by itself (issue 21, item 2) once every writer is gone
and its file drained, and only then; every wait here has a timeout, so a
follow that hangs fails the test instead of hanging it.

  - a traced program (pipe_stage) running while print --follow reads its
    trace: when the program exits, print exits 0 within a bounded time, its
    output exactly `print` of the finished file's;
  - the same program killed with SIGKILL: print ends, exactly as `print` of
    what the file then holds;
  - a writer killed inside a record (a writer of our own, which stops
    halfway through one): the records before it, then the reader's error
    with its byte offset, exit 1, as `print` of the file says; the same for
    a rotated trace whose writer was gone before print started (its record
    numbers counted across pieces);
  - two traces followed at once: print goes on while one writer runs, and
    ends once both are gone, with every record of both;
  - a trace whose description names another host, and one without a
    description (QEMU's): print keeps waiting, as before, until Ctrl-C;
  - compressed traces (compress=zstd, issue 25), read as their frames
    complete: the traced program exiting and killed, as above (the file
    zstd frames); a writer of our own that writes zstd frames (made by the
    zstd command) one at a time, one of them in two halves: each frame's
    records are printed once it is whole and not before, and, the writer
    killed inside a frame, print ends with the records of the whole frames
    and the error naming the cut frame's compressed byte offset, exit 1, as
    print of the file says; a rotated compressed trace followed while the
    demo writes it: every piece, as print of the finished pieces.

argv: SIMPLETRACE-CLI PIPE-STAGE PIPE-TRACE-EVENTS QEMU-FIXTURES-DIR DEMO
"""
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

from tap import done, ok, run

BOUND = 20  # seconds print may take to notice its writers are gone (it looks every 100 ms)


def wait_for(cond, seconds=30):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return False


class Stage:
    """pipe_stage N traced into path, fed lines by the test through a pipe.

    writer=thread: the writeout thread writes what the program traces within 100 ms, as
    print --follow of a live program expects; by default a program tracing on one thread
    writes at its drain points (README "Who writes the trace file"), and this one, idle
    between lines, would hold its few records until exit."""

    def __init__(self, stage, path, n, extra=''):
        env = dict(os.environ, SIMPLETRACE='enable=*,writer=thread,file=%s%s' % (path, extra))
        self.p = subprocess.Popen([stage, str(n)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env)
        self.path = path

    def feed(self, *lines):
        for line in lines:
            self.p.stdin.write(b'%s\n' % line.encode())
            self.p.stdin.flush()
            time.sleep(0.05)

    def finish(self):
        self.p.stdin.close()
        return self.p.wait(timeout=30)


def follow(cli, *args):
    return subprocess.Popen([cli, 'print', '--follow'] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def ended(live, seconds=BOUND):
    """(returncode, stdout, stderr) once live ends by itself, or None (killed) when it did not in time."""
    try:
        out, err = live.communicate(timeout=seconds)
        return live.returncode, out, err
    except subprocess.TimeoutExpired:
        live.kill()
        live.communicate()
        return None


def started(path):
    """The writer has written its header and description (a description record follows the header)."""
    return os.path.exists(path) and os.path.getsize(path) > 64


def zstd_magic(path):
    with open(path, 'rb') as f:
        return f.read(4) == b'\x28\xb5\x2f\xfd'


def program_exits(cli, stage, events, tmp, extra=''):
    path = os.path.join(tmp, 'exit.trace' + ('.zst' if extra else ''))
    s = Stage(stage, path, 1, extra)
    s.feed('a', 'b')
    ok(wait_for(lambda: started(path)), 'the traced program has started its trace')
    live = follow(cli, events, path)
    s.feed('c', 'd', 'e')
    t0 = time.monotonic()
    rc = s.finish()
    got = ended(live)
    took = time.monotonic() - t0
    want = run(cli, 'print', events, path)
    ok(rc == 0 and got is not None, 'the program exits: print --follow ends by itself (%.1f s)' % took,
       'still waiting after %d s' % BOUND)
    if got:
        ok(got[0] == 0 and got[1] == want.stdout and got[2] == '' and want.stdout.count('line_begin') == 5 and
           zstd_magic(path) == bool(extra), 'exit 0, every record: the output of print of the finished file%s' %
           (' (zstd frames)' if extra else ''), 'rc %s\n%s\n---\n%s\n%s' % (got[0], got[1], want.stdout, got[2]))


def program_killed(cli, stage, events, tmp, extra=''):
    path = os.path.join(tmp, 'killed.trace' + ('.zst' if extra else ''))
    s = Stage(stage, path, 1, extra)
    s.feed('a', 'b', 'c')
    ok(wait_for(lambda: started(path)), 'the traced program has started its trace')
    live = follow(cli, events, path)
    wait_for(lambda: run(cli, 'print', events, path).stdout.count('line_end') == 3, 5)
    s.p.kill()
    s.p.wait(timeout=30)
    got = ended(live)
    want = run(cli, 'print', events, path)
    ok(got is not None, 'the program killed (SIGKILL): print --follow ends by itself', 'still waiting')
    if got:
        ok(got == (want.returncode, want.stdout, want.stderr) and 'line_end' in got[1] and
           zstd_magic(path) == bool(extra), 'exactly what print of the file says (exit %d%s)' %
           (want.returncode, ', zstd frames' if extra else ''),
           '%s\n---\n%s' % (got, (want.returncode, want.stdout, want.stderr)))


INFO_ID = 0xFFFFFFFFFFFFFF00
DECL_BASE = 0xFFFFFFFE00000000
DECL = b'ev(uint64_t x) "x %" PRIu64'


def head(pid, host):
    """A v4 header, a description naming pid on host, and the declaration and mapping of ev (ID 0)."""
    info = ('simpletrace=1\npid=%d\nprogram=writer\nhost=%s\n' % (pid, host)).encode()
    b = struct.pack('<QQQ', 0xFFFFFFFFFFFFFFFF, 0xF2B177CB0AA429B4, 4)
    b += struct.pack('<QQI', 0, INFO_ID, len(info)) + info
    b += struct.pack('<QQI', 0, DECL_BASE, len(DECL)) + DECL + struct.pack('<QQI', 0, 0, 2) + b'ev'
    return b


def ev(ts, x):
    return struct.pack('<QQQII', 1, 0, ts, 32, 77) + struct.pack('<Q', x)


# A writer of our own: its description, two records, then half of a third, then it waits to be killed.
WRITER = r'''
import os, socket, struct, sys, time
sys.path.insert(0, sys.argv[2])
from follow_end_test import head, ev
with open(sys.argv[1], 'wb', buffering=0) as f:
    f.write(head(os.getpid(), socket.gethostname().replace('/', '_')))
    f.write(ev(1000, 1))
    time.sleep(0.3)
    f.write(ev(2000, 2))
    f.write(ev(3000, 3)[:20])
    print('cut', flush=True)
    time.sleep(600)
'''


def killed_inside_a_record(cli, tmp):
    path = os.path.join(tmp, 'cut.trace')
    events = os.path.join(tmp, 'cut-events')
    with open(events, 'wb') as f:  # given: a plain print then reads the records before the cut
        f.write(DECL + b'\n')
    w = subprocess.Popen([sys.executable, '-c', WRITER, path, os.path.dirname(os.path.abspath(__file__))],
                         stdout=subprocess.PIPE, text=True)
    ok(wait_for(lambda: started(path)), 'our writer has started its trace')
    live = follow(cli, events, path)
    ok(w.stdout.readline() == 'cut\n', 'our writer stopped inside its third record')
    time.sleep(0.3)
    ok(live.poll() is None, 'print --follow waits while the writer runs, even inside a record')
    w.kill()
    w.wait(timeout=30)
    w.stdout.close()
    got = ended(live)
    want = run(cli, 'print', events, path)
    ok(got is not None, 'the writer killed inside a record: print --follow ends by itself', 'still waiting')
    if got:
        ok(got[0] == 1 and got[1].count('ev ') == 2 and 'byte offset' in got[2] and 'ends inside' in got[2]
           and got == (want.returncode, want.stdout, want.stderr),
           'the two records, then the reader\'s error with its byte offset, exit 1, as print says',
           '%s\n---\n%s' % (got, (want.returncode, want.stdout, want.stderr)))


# A writer of our own, compressed: zstd frames made by the zstd command, written one at a time as the test says go.
ZWRITER = r'''
import os, socket, subprocess, sys, time
sys.path.insert(0, sys.argv[2])
from follow_end_test import head, ev
z = lambda b: subprocess.run(['zstd', '-q', '-c'], input=b, stdout=subprocess.PIPE, check=True).stdout
frames = [z(head(os.getpid(), socket.gethostname().replace('/', '_')) + ev(1000, 1)),
          z(ev(2000, 2) + ev(2500, 22)), z(ev(3000, 3))]
half = len(frames[1]) // 2
steps = [('one', frames[0]), ('half', frames[1][:half]), ('two', frames[1][half:]),
         ('cut', frames[2][:len(frames[2]) // 2])]
with open(sys.argv[1], 'wb', buffering=0) as f:
    for word, data in steps:
        f.write(data)
        print(word, flush=True)
        sys.stdin.readline()
    time.sleep(600)
'''


class Lines:
    """What a running print --follow has printed so far (read without blocking)."""

    def __init__(self, live):
        self.live, self.text = live, ''

    def wait(self, cond, seconds=10):
        end = time.monotonic() + seconds
        while not cond(self.text) and time.monotonic() < end:
            ready, _, _ = select.select([self.live.stdout], [], [], 0.05)
            if ready:
                chunk = os.read(self.live.stdout.fileno(), 65536).decode()
                if not chunk:
                    break
                self.text += chunk
        return cond(self.text)


def compressed_frames(cli, tmp):
    path = os.path.join(tmp, 'frames.trace.zst')
    events = os.path.join(tmp, 'frames-events')
    with open(events, 'wb') as f:
        f.write(DECL + b'\n')
    w = subprocess.Popen([sys.executable, '-c', ZWRITER, path, os.path.dirname(os.path.abspath(__file__))],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    step = lambda want: w.stdout.readline() == want + '\n'
    go = lambda: (w.stdin.write('go\n'), w.stdin.flush())
    ok(step('one') and zstd_magic(path), 'our writer wrote its first zstd frame')
    live = follow(cli, events, path)
    seen = Lines(live)
    ok(seen.wait(lambda t: 'x=0x1' in t), 'print --follow prints the first frame\'s record', seen.text)
    go()
    ok(step('half'), 'our writer wrote half of its second frame')
    time.sleep(0.5)
    ok(live.poll() is None and not seen.wait(lambda t: 'x=0x2' in t, 0.5),
       'half a frame: print --follow waits, prints none of its records yet', seen.text)
    go()
    ok(step('two'), 'our writer wrote the rest of it')
    ok(seen.wait(lambda t: 'x=0x2' in t and 'x=0x16' in t), 'the frame whole: both its records printed', seen.text)
    go()
    ok(step('cut'), 'our writer stopped inside its third frame')
    time.sleep(0.3)
    ok(live.poll() is None, 'print --follow waits while the writer runs, even inside a frame')
    w.kill()
    w.wait(timeout=30)
    w.stdout.close()
    w.stdin.close()
    got = ended(live)
    want = run(cli, 'print', events, path)
    if got:
        got = (got[0], seen.text + got[1], got[2])
    ok(got is not None and got[0] == 1 and got[1].count('ev ') == 3 and 'inside zstd frame 2' in got[2] and
       'compressed byte' in got[2] and got == (want.returncode, want.stdout, want.stderr),
       'the writer killed inside a frame: print --follow ends with the records of the whole frames and the '
       'error naming the cut frame and its compressed byte offset, exit 1, as print says',
       '%s\n---\n%s' % (got, (want.returncode, want.stdout, want.stderr)))


def compressed_rotated(cli, demo, tmp):
    base = os.path.join(tmp, 'zrot.trace')
    env = dict(os.environ, SIMPLETRACE='enable=*,compress=zstd,rotate=64K,bufsize=8M,file=' + base)
    p = subprocess.Popen([demo, '--workers', '2', '--jobs', '20000'], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    ok(wait_for(lambda: started(base)), 'the demo writes a rotated compressed trace')
    live = follow(cli, base)
    rc = p.wait(timeout=120)
    got = ended(live, 60)
    want = run(cli, 'print', base)
    pieces = [f for f in os.listdir(tmp) if f.startswith('zrot.trace')]
    same = got is not None and got[1] == want.stdout
    first = next((k for k, (a, b) in enumerate(zip(got[1].splitlines(), want.stdout.splitlines())) if a != b), None) \
        if got and not same else None
    ok(rc == 0 and got is not None and got == (0, want.stdout, '') and len(pieces) >= 3 and
       all(zstd_magic(os.path.join(tmp, f)) for f in pieces),
       'followed while written: every one of its %d compressed pieces, as print of the finished pieces' % len(pieces),
       'demo %s; follow %s; stderr %r; %d lines followed, %d printed; first difference at line %s: %r vs %r' %
       (rc, got and got[0], got and got[2][:500], got[1].count('\n') if got else -1, want.stdout.count('\n'), first,
        got[1].splitlines()[first] if first is not None else '', want.stdout.splitlines()[first] if first is not None
        else ''))


def gone_before_start(cli, tmp):
    """A rotated trace whose writer was gone before print started, its last piece cut inside a record."""
    dead = subprocess.Popen(['true'])
    dead.wait()
    base = os.path.join(tmp, 'rot.trace')
    events = os.path.join(tmp, 'rot-events')
    with open(events, 'wb') as f:
        f.write(DECL + b'\n')
    me = socket.gethostname().replace('/', '_')
    pieces = [head(dead.pid, me) + ev(1000, 1) + ev(2000, 2),
              head(dead.pid, me) + ev(3000, 3) + ev(4000, 4) + ev(5000, 5)[:30]]
    for k, data in enumerate(pieces):
        path = base + ('.%d' % k if k else '')
        with open(path, 'wb') as f:
            f.write(data)
        os.utime(path, (1000000 + k, 1000000 + k))  # the pieces in the order they were written
    got = ended(follow(cli, events, base))
    want = run(cli, 'print', events, base)
    ok(got is not None and got[0] == 1 and got[1].count('ev ') == 4 and 'rot.trace.1: byte offset' in got[2]
       and got == (want.returncode, want.stdout, want.stderr),
       'a rotated trace of a finished writer, its last piece cut: print --follow ends as print does '
       '(record numbers across pieces)', '%s\n---\n%s' % (got, (want.returncode, want.stdout, want.stderr)))


def two_traces(cli, stage, events, tmp):
    a, b = os.path.join(tmp, 'two-a.trace'), os.path.join(tmp, 'two-b.trace')
    sa, sb = Stage(stage, a, 1), Stage(stage, b, 2)
    sa.feed('a1')
    sb.feed('b1')
    ok(wait_for(lambda: started(a) and started(b)), 'two traced programs have started their traces')
    live = follow(cli, events, a, b)
    sa.feed('a2', 'a3')
    sa.finish()
    time.sleep(1.5)
    ok(live.poll() is None, 'one writer gone, the other running: print --follow goes on')
    sb.feed('b2')
    sb.finish()
    got = ended(live)
    want = run(cli, 'print', events, a, b)
    ok(got is not None, 'both writers gone: print --follow ends by itself', 'still waiting')
    if got:
        # Followed, records are merged as they arrive (a waiting input holds no other back), so the order, and
        # with it the delta column, may differ from the sorted merge of the finished files: the records may not.
        records = lambda text: sorted(' '.join(l.split(' ')[:2] + l.split(' ')[3:]) for l in text.splitlines())
        ok(got[0] == 0 and records(got[1]) == records(want.stdout) and want.stdout.count('line_begin') == 5,
           'exit 0 with every record of both, as print of the two files (in the order they arrived)',
           '%s\n---\n%s' % (got, want.stdout))


def keeps_waiting(cli, what, args):
    live = follow(cli, *args)
    time.sleep(1.5)
    waiting = live.poll() is None
    live.send_signal(signal.SIGINT)
    got = ended(live, 30)
    ok(waiting and got is not None and got[0] == 0 and got[2] == '',
       '%s: print --follow keeps waiting (until Ctrl-C), says nothing new' % what, got)


def main():
    cli, stage, events, fixtures, demo = sys.argv[1:6]
    with tempfile.TemporaryDirectory() as tmp:
        program_exits(cli, stage, events, tmp)
        program_killed(cli, stage, events, tmp)
        program_exits(cli, stage, events, tmp, ',compress=zstd')
        program_killed(cli, stage, events, tmp, ',compress=zstd')
        compressed_frames(cli, tmp)
        compressed_rotated(cli, demo, tmp)
        killed_inside_a_record(cli, tmp)
        gone_before_start(cli, tmp)
        two_traces(cli, stage, events, tmp)
        dead = subprocess.Popen(['true'])
        dead.wait()
        other = os.path.join(tmp, 'other-host.trace')
        with open(other, 'wb') as f:  # a process that is not running, on a host that is not ours
            f.write(head(dead.pid, socket.gethostname() + '-elsewhere') + ev(1000, 1))
        keeps_waiting(cli, 'a trace from another host', [other])
        qemu = os.path.join(tmp, 'qemu.bin')
        shutil.copy(os.path.join(fixtures, 'check_qcow2.bin'), qemu)
        keeps_waiting(cli, 'a trace without a description (QEMU\'s)',
                      [os.path.join(fixtures, 'trace-events-all'), qemu])
    return done()


if __name__ == '__main__':
    sys.exit(main())
