#!/usr/bin/env python3
"""A filter that selects nothing says so, naming what there is (issue 21, "say what was lost").

print, stats, export and merge of the demo's trace with --events globs that
match no event (with the nearest names), a --tid and a --pid no record has
(with the ones there are) and a --from after the last record: each one line
on stderr, the exit status unchanged; a filter that selects something says
nothing.

argv: SIMPLETRACE-CLI DEMO
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from tap import done, ok, run  # noqa: E402


def told(r):
    """r without export's summary line ("wrote FILE ..."), which is not about filters."""
    r.stderr = ''.join(line for line in r.stderr.splitlines(True) if not line.startswith('simpletrace export: wrote'))
    return r


def main():
    cli, demo = (os.path.abspath(a) for a in sys.argv[1:3])
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, 'demo.trace')
        r = run(demo, '--workers', '2', '--jobs', '50', env=dict(os.environ, SIMPLETRACE='enable=*,file=' + trace))
        text = run(cli, 'print', trace).stdout
        tids = sorted({line.split(' pid=')[1].split()[0] for line in text.splitlines()})
        worker = next(line.split(' pid=')[1].split()[0] for line in text.splitlines() if line.startswith('job_start'))
        ok(r.returncode == 0 and len(tids) >= 2, 'the demo traced (threads %s)' % tids, r.stderr)
        out = lambda cmd: [cmd, '-o', os.path.join(tmp, 'out.' + cmd)] if cmd in ('export', 'merge') else [cmd]
        for cmd in ('print', 'stats', 'export', 'merge'):
            r = told(run(cli, *out(cmd), '--events=job_strat,demo_*', trace))
            ok(r.returncode == 0 and r.stderr.count('\n') == 1 and "'job_strat' matches no event" in r.stderr and
               "'job_start'" in r.stderr, cmd + ' --events=job_strat: no event matches, the nearest named', r.stderr)
            r = told(run(cli, *out(cmd), '--tid=1', trace))
            ok(r.returncode == 0 and r.stderr.count('\n') == 1 and 'no record has thread id 1' in r.stderr and
               all(t in r.stderr for t in tids), cmd + ' --tid=1: no record has it, the trace\'s named', r.stderr)
            r = told(run(cli, *out(cmd), '--pid=1', trace))
            ok(r.returncode == 0 and r.stderr.count('\n') == 1 and 'no record of process 1' in r.stderr and
               'demo[%s]' % tids[0] in r.stderr, cmd + ' --pid=1: the process there is named', r.stderr)
            r = told(run(cli, *out(cmd), '--from=100s', trace))
            ok(r.returncode == 0 and r.stderr.count('\n') == 1 and 'after the last record' in r.stderr,
               cmd + ' --from after the last record says so', r.stderr)
            r = told(run(cli, *out(cmd), '--events=job_*,-job_done', '--tid=' + worker, trace))
            ok(r.returncode == 0 and r.stderr == '', cmd + ': filters that select records say nothing', r.stderr)
            r = told(run(cli, *out(cmd), '--events=demo_start', '--tid=' + worker, trace))  # the main thread's event
            ok(r.returncode == 0 and r.stderr.count('\n') == 1 and 'has records, but none the other filters select'
               in r.stderr, cmd + ': a thread whose records the other filters exclude: said so', r.stderr)
        r = run(cli, 'print', '--events=-job_*', trace)
        ok(r.returncode == 0 and r.stderr == '' and r.stdout, 'an excluding glob alone is no glob that must match',
           r.stderr)
    return done()


if __name__ == '__main__':
    sys.exit(main())
