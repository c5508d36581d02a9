#!/usr/bin/env python3
"""The README's "A fleet's traces" queries, run as they are (issue 24): the SQL blocks marked
`<!-- test: sql -->` (tests/e2e/readme_blocks.awk) run with DuckDB (duckdb_node.py) in a directory holding
fleet/, the exports of four hosts' traces (two processes each, events like the tutorial's: jobs and cache
lookups) made with --partition=host,pid and gathered side by side as the README says. Every statement
runs; the answers of each are compared with what the test computes from `print --format=json`.

argv: SOURCE-DIR SIMPLETRACE NODE NPM DUCKDB-CACHE-DIR
"""
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from tap import done, ok, run  # noqa: E402
import duckdb_node  # noqa: E402
from parquet_test import Trace  # noqa: E402

HOSTS = ('db-1', 'web-1', 'web-2', 'web-3')


def host_traces(tmp, h, host):
    """Two processes of host: jobs of varied length on two threads, cache lookups hitting or not."""
    paths = []
    for k in range(2):
        pid = 300 + 10 * k + h  # web-2 and db-1 ... share no pid, but the same pids recur across runs
        t = Trace(pid=pid, program='app', host=host)
        t.declare('job_start(int worker, int job) "worker %d job %d"')
        t.declare('job_done(int worker, int job) "worker %d job %d"')
        t.declare('cache_lookup(const char *key, bool hit) "%s %d"')
        ts = 1_000_000 * (h + 1)
        for j in range(6):
            tid = pid + 1 + j % 2
            t.record('job_start', ts, tid, j % 2, j)
            for i in range(3):
                key = b'key-%d' % ((j + i + h) % 4)
                t.record('cache_lookup', ts + 10 + i, tid, key, (i + j + k) % 3 != 0)
            ts += 1000 * (1 + (j * 7 + h * 3 + k) % 11) + (h * 2 + k) * 6 + j  # no two jobs last as long
            t.record('job_done', ts, tid, j % 2, j)
            ts += 17
        path = os.path.join(tmp, '%s-%d.trace' % (host, k))
        t.save(path)
        paths.append(path)
    return paths


def statements(src, tmp):
    blocks = os.path.join(tmp, 'blocks')
    os.makedirs(blocks)
    r = subprocess.run(['awk', '-v', 'dir=' + blocks, '-f', os.path.join(src, 'tests', 'e2e', 'readme_blocks.awk'),
                        os.path.join(src, 'README.md')], capture_output=True, text=True)
    index = open(os.path.join(blocks, 'index')).read().split('\n') if r.returncode == 0 else []
    sql = [line.split()[0] for line in index if len(line.split()) >= 2 and line.split()[1] == 'sql']
    text = '\n'.join(open(os.path.join(blocks, b)).read() for b in sql)
    text = '\n'.join(line for line in text.splitlines() if not line.lstrip().startswith('--'))
    return [s.strip() for s in text.split(';') if s.strip()], r.stderr


def expected(recs_by_proc):
    """What each of the README's five statements answers, from print's records."""
    counts = collections.Counter()
    jobs, durs, lookups, misses = [], collections.defaultdict(list), collections.defaultdict(list), collections.Counter()
    for (host, pid), recs in recs_by_proc.items():
        open_job = {}
        for r in recs:
            counts[(host, pid, r['name'])] += 1
            if r['name'] == 'job_start':
                open_job[r['pid']] = r['timestamp_ns']
            elif r['name'] == 'job_done':
                b = open_job.pop(r['pid'])
                jobs.append((host, pid, r['pid'], b, r['timestamp_ns'] - b))
                durs[('job', host)].append(r['timestamp_ns'] - b)
            elif r['name'] == 'cache_lookup':
                lookups[host].append(r['args']['hit'])
                if not r['args']['hit']:
                    misses[(host, pid, r['args']['key'])] += 1
    q1 = sorted([h, p, n, c] for (h, p, n), c in counts.items())
    q2 = [[h, p, t, b, d / 1e6] for h, p, t, b, d in sorted(jobs, key=lambda j: -j[4])[:5]]
    q3 = sorted([n, h, len(d), statistics.median(d)] for (n, h), d in durs.items())
    q4 = sorted([h, len(v), sum(v) / len(v)] for h, v in lookups.items())
    q5 = sorted(([h, p, k, c] for (h, p, k), c in misses.items()), key=lambda x: (-x[3], x[0], x[1], x[2]))[:10]
    return [q1, q2, q3, q4, q5]


def num(v):
    try:
        f = float(v)
        return int(f) if f == int(f) and not isinstance(v, float) else f
    except (TypeError, ValueError):
        return v


def main():
    src, cli, node, npm, cache = (sys.argv[1:6] + [''] * 5)[:5]
    if not ok(node and npm, 'node and npm are installed (scripts/deps.sh check installs them)'):
        return done()
    err = duckdb_node.install(npm, cache)
    if not ok(not err, 'DuckDB (%s) installed for the test' % duckdb_node.PACKAGE, err):
        return done()
    with tempfile.TemporaryDirectory() as tmp:
        sql, awk_err = statements(src, tmp)
        ok(len(sql) == 5, "README's sql blocks: five statements", awk_err + '\n'.join(sql))
        fleet = os.path.join(tmp, 'fleet')
        recs_by_proc, failed = {}, []
        for h, host in enumerate(HOSTS):
            traces = host_traces(tmp, h, host)
            for path in traces:
                recs = [json.loads(line) for line in run(cli, 'print', '--format=json', path).stdout.splitlines()]
                recs_by_proc[(host, int(path.endswith('-1.trace')) * 10 + 300 + h)] = recs
            out = os.path.join(tmp, host + '.parquet')  # each host's export, as the README runs it
            r = run(cli, 'export', '-q', '--format=parquet', '--partition=host,pid', '-o', out, *traces)
            failed += [r.stderr] if r.returncode else []
            shutil.copytree(out, fleet, dirs_exist_ok=True)  # rsync -a HOST.parquet/ fleet/
        ok(not failed and sorted(os.listdir(fleet)) == ['host=' + h for h in HOSTS],
           'four hosts exported with --partition=host,pid and gathered into fleet/', '%s' % failed)
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            res = duckdb_node.query(node, cache, sql)
        finally:
            os.chdir(cwd)
    want = expected(recs_by_proc)
    for i, (stmt, r, w) in enumerate(zip(sql, res, want)):
        got = [[num(v) for v in row] for row in r.get('rows', [])]
        if i == 2:  # medians of an even count are averages: compare as numbers
            got = [[a, b, c, float(d)] for a, b, c, d, _ in got]
            w = [[a, b, c, float(d)] for a, b, c, d in w]
        if i == 3:
            got = [[a, b, round(float(c), 9)] for a, b, c in got]
            w = [[a, b, round(c, 9)] for a, b, c in w]
        ok('error' not in r and got == w and got, 'README statement %d runs and answers what print says: %s'
           % (i + 1, ' '.join(stmt.split())[:70]), '%s\n%s\n%s' % (r.get('error', ''), got[:4], w[:4]))
    return done()


if __name__ == '__main__':
    sys.exit(main())
