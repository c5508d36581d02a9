#!/usr/bin/env python3
"""bench/analysis: `simpletrace latency` against `simpletrace stats` (issue 23, "Measure").

  (a) the merge benchmark's inputs (bench/merge's generator: K files of N
      records interleaved by timestamp, job_submit/job_start/job_done, one
      thread each; by default 64 x 1M = 64M records): `stats` and
      `latency` (the built-in *_start:*_done pairs) on the K files;
  (b) one trace of R records (default 10M) with K keys open at once
      (default 1M): a thread submits K requests (req_submit, a keyed begin),
      another completes them in a scrambled order (req_complete), again
      until R records; `stats` and `latency --pair=req_submit:req_complete@req`;
  (c) `simpletrace compare` on two traces of (b)'s kind, the second's
      requests slower: measured when the command exists in the build, else
      skipped with a line saying so.

For each: records/s (best of --runs) by wall time and by CPU time (user +
system, which a loaded machine changes less), the ratio latency/stats of
speeds (issue 23's target: latency at least half as fast as stats, a ratio
of 0.5 or more) and the peak RSS of each. The files are written here, not
traced (exact sizes in a fraction of the time). Figures and ratios only;
it never fails on a figure.

Usage: latency_bench.py --simpletrace EXE [--records N] [--inputs K] [--keyed-records R] [--keys K]
                        [--runs R] [--dir DIR] [--only a,b,c]
"""
import argparse
import array
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'merge'))
import merge_read  # noqa: E402  (the merge benchmark's generator and timer)

KEYED_EVENTS = [(0, 'req_submit(uint64_t req) "req %" PRIu64'),
                (1, 'req_complete(uint64_t req) "req %" PRIu64')]
KEYED_PAIR = '--pair=req_submit:req_complete=req@req'
PID, SUBMIT_TID, COMPLETE_TID = 20000, 20001, 20002
STEP = 100     # ns between records
WORDS = 5      # a record as u64 words: type, id, timestamp, length | tid << 32, req
SCRAMBLE = 1_000_003  # a prime: the completions come in the order i * SCRAMBLE mod K


def keyed_head(pid):
    desc = ''.join('%s=%s\n' % kv for kv in [
        ('simpletrace', '1'), ('version', 'bench'), ('pid', pid), ('program', 'bench-analysis'),
        ('host', 'bench'), ('clock', 'monotonic'), ('anchor_mono_ns', merge_read.T0),
        ('anchor_real_ns', merge_read.T0)])
    head = [merge_read.HEADER, merge_read.mapping(merge_read.META_INFO, desc)]
    for eid, line in KEYED_EVENTS:
        head += [merge_read.mapping(eid, line.split('(')[0]), merge_read.mapping(merge_read.META_DECL + eid, line)]
    return b''.join(head)


def records_of(eid, tid, ts_first, step, keys):
    """len(keys) records of event eid on thread tid, timestamps ts_first, ts_first + step, ..."""
    words = array.array('Q', [1, eid, 0, (24 + 8) | tid << 32, 0]) * len(keys)
    words[2::WORDS] = array.array('Q', range(ts_first, ts_first + len(keys) * step, step))
    words[4::WORDS] = keys
    return words


def write_keyed(path, records, nkeys, slow=1, pid=PID):
    """A trace of records records: rounds of nkeys req_submit on one thread, then their req_complete on another
    in a scrambled order (so nkeys keys are open at once); slow multiplies the time between completions; pid:
    the process the trace describes."""
    keys = array.array('Q', range(0x7f0000000000, 0x7f0000000000 + nkeys * 64, 64))  # pointer-like keys
    scrambled = array.array('Q', (keys[i * SCRAMBLE % nkeys] for i in range(nkeys)))
    ts, left = merge_read.T0, records - records % 2
    with open(path, 'wb') as f:
        f.write(keyed_head(pid))
        while left:
            n = min(nkeys, left // 2)
            ends = scrambled if n == nkeys else keys[n - 1::-1]  # a short last round: its keys in reverse
            for eid, tid, ks, step in ((0, SUBMIT_TID, keys[:n], STEP), (1, COMPLETE_TID, ends, STEP * slow)):
                words = records_of(eid, tid, ts, step, ks)
                if sys.byteorder != 'little':
                    words.byteswap()  # little-endian throughout, as the header and description are
                f.write(words.tobytes())
                ts += n * step
            left -= 2 * n


def run(argv):
    """(wall seconds, CPU seconds, peak RSS KiB) of one run of argv, stdout discarded: bench/merge's timer, with
    the CPU time (user + system) wait4() gives, which a loaded machine changes less than the wall time."""
    with tempfile.NamedTemporaryFile('r') as rss_file:
        timed = [merge_read.TIME, '-f', '%M', '-o', rss_file.name] + argv
        t = time.perf_counter()
        with open(os.devnull, 'wb') as null:
            p = subprocess.Popen(timed, stdout=null)
            _, status, ru = os.wait4(p.pid, 0)
        w = time.perf_counter() - t
        if status != 0:
            raise RuntimeError('%s failed (status %d)' % (' '.join(argv[:3]), status))
        return w, ru.ru_utime + ru.ru_stime, int(rss_file.read().split()[-1])


def best(contenders, runs):
    """{name: (best wall, best CPU, peak RSS)} over runs, the contenders in turn so that load touches all alike."""
    out = {}
    for _ in range(runs):
        for name, argv in contenders:
            w, cpu, rss = run(argv)
            bw, bcpu, brss = out.get(name, (w, cpu, rss))
            out[name] = (min(w, bw), min(cpu, bcpu), max(rss, brss))
    return out


def measure(name, contenders, runs, records):
    return name, records, best(contenders, runs)


def speed_rows(rows):
    head = ('input', 'records', 'stats', 'latency', 'latency/', 'stats', 'latency', 'latency/', 'RSS', 'RSS')
    print('%-42s %10s | %7s %7s %8s | %7s %7s %8s | %7s %7s' % head)
    print('%-42s %10s | %7s %7s %8s | %7s %7s %8s | %7s %7s' % (
        '', '', 'Mrec/s', 'Mrec/s', 'stats', 'Mrec/s', 'Mrec/s', 'stats', 'stats', 'latency'))
    print('%-42s %10s | %24s | %24s |' % ('', '', 'wall time', 'CPU time'))
    for name, records, r in rows:
        s, lat = r['stats'], r['latency']
        print('%-42s %10d | %7.2f %7.2f %7.2fx | %7.2f %7.2f %7.2fx | %7.1f %7.1f' % (
            name, records, records / s[0] / 1e6, records / lat[0] / 1e6, s[0] / lat[0],
            records / s[1] / 1e6, records / lat[1] / 1e6, s[1] / lat[1], s[2] / 1024, lat[2] / 1024))


def has_compare(exe):
    return subprocess.run([exe, 'compare', '--help'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--simpletrace', required=True)
    ap.add_argument('--records', type=int, default=1000000, help='(a): records per input')
    ap.add_argument('--inputs', type=int, default=64, help='(a): inputs')
    ap.add_argument('--keyed-records', type=int, default=10000000, help='(b), (c): records of a trace')
    ap.add_argument('--keys', type=int, default=1000000, help='(b), (c): keys open at once')
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--dir', default=None)
    ap.add_argument('--only', default='a,b,c', help='which parts to run')
    o = ap.parse_args()
    exe, parts = o.simpletrace, o.only.split(',')
    rows, lines = [], []
    t_all = time.perf_counter()
    load = os.getloadavg()
    if 'a' in parts:
        with tempfile.TemporaryDirectory(dir=o.dir, prefix='bench-analysis-') as d:
            t = time.perf_counter()
            many = merge_read.make_inputs(d, 'in', o.inputs, o.records, 1)
            print('(a) %d inputs x %d records written in %.1f s' % (o.inputs, o.records, time.perf_counter() - t),
                  file=sys.stderr, flush=True)
            rows.append(measure('(a) merge inputs, %d files, *_start:*_done' % o.inputs,
                                [('stats', [exe, 'stats'] + many), ('latency', [exe, 'latency'] + many)],
                                o.runs, o.inputs * o.records))
    if 'b' in parts or 'c' in parts:
        with tempfile.TemporaryDirectory(dir=o.dir, prefix='bench-analysis-') as d:
            base, new = os.path.join(d, 'base.trace'), os.path.join(d, 'new.trace')
            t = time.perf_counter()
            write_keyed(base, o.keyed_records, o.keys)
            print('(b) %d records, %d keys open at once, written in %.1f s' % (
                o.keyed_records, o.keys, time.perf_counter() - t), file=sys.stderr, flush=True)
            if 'b' in parts:
                rows.append(measure('(b) %dK keys open at once, keyed --pair' % (o.keys // 1000),
                                    [('stats', [exe, 'stats', base]), ('latency', [exe, 'latency', KEYED_PAIR, base])],
                                    o.runs, o.keyed_records))
            if 'c' in parts and not has_compare(exe):
                lines.append('(c) compare: skipped: `simpletrace compare` is not in this build')
            elif 'c' in parts:
                write_keyed(new, o.keyed_records, o.keys, slow=2, pid=PID + 10)  # another run: another process
                r = best([('compare', [exe, 'compare', KEYED_PAIR, base, new]),
                                     ('latency', [exe, 'latency', KEYED_PAIR, base, new])], o.runs)
                n = 2 * o.keyed_records
                lines.append('(c) compare %s BASE NEW, two traces of %d records: %.2f Mrec/s by wall time (%.1f s), '
                             '%.2f by CPU time, peak RSS %.1f MB; latency on both read as one: %.2f / %.2f Mrec/s' % (
                                 KEYED_PAIR, o.keyed_records, n / r['compare'][0] / 1e6, r['compare'][0],
                                 n / r['compare'][1] / 1e6, r['compare'][2] / 1024, n / r['latency'][0] / 1e6,
                                 n / r['latency'][1] / 1e6))
    print('simpletrace stats and latency (output to /dev/null), best of %d runs; Mrec/s = million records per '
          'second,' % o.runs)
    print('by wall time and by CPU time (user + system); latency/stats = stats\' time / latency\'s (issue 23\'s '
          'target: 0.5x or more); RSS = peak, MB\n')
    speed_rows(rows)
    for line in lines:
        print(line)
    print('\n(load average %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end, %d CPUs; total %.1f s)' % (
        *load, *os.getloadavg(), os.cpu_count() or 0, time.perf_counter() - t_all))


if __name__ == '__main__':
    main()
