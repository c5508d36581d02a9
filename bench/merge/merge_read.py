#!/usr/bin/env python3
"""bench/merge: several traces read as one (issue 14, "Measure").

For K = 2, 8 and 64 inputs of N records each, writes K v4 files whose
timestamps interleave (by default file i holds every K-th record of one
timeline, the worst case for a merge: every record comes from another
input than the one before; --burst B gives each file runs of B records
in a row instead, as processes that trace in bursts do) and one file of
the same K*N records, then times `simpletrace stats` and `simpletrace
print >/dev/null` on the K files and on the one file, best of R runs, and
reports records/s, the ratio many/one (time of the K files over time of
the one file: the issue's target is within 1.5x) and the peak RSS of
each. Then K files of N/S records each, whose peak RSS should match the
N-record one (the merge streams; smaller rather than larger so that the
disk holds at most the 2*K*N records of the main run). Figures and ratios
only; it never fails on a figure.

The files are written here, not traced: exact sizes and interleaving, in a
fraction of the time. Each is what the runtime writes: the header, a
description (pid, program, host, clock anchors), a mapping and a
declaration per event, then event records cycling job_submit (a string
argument), job_start and job_done, 56 bytes on average.

Usage: merge_read.py --simpletrace EXE [--records N] [--inputs 2,8,64]
                     [--runs R] [--scale S] [--burst B] [--dir DIR]
"""
import argparse
import array
import os
import struct
import subprocess
import sys
import tempfile
import time

HEADER = struct.pack('<QQQ', 0xFFFFFFFFFFFFFFFF, 0xF2B177CB0AA429B4, 4)
META_INFO = 0xFFFFFFFFFFFFFF00
META_DECL = 0xFFFFFFFE00000000
EVENTS = [  # id, trace-events line
    (0, 'job_submit(uint64_t job, const char *name, size_t size) "job %" PRIu64 " name %s size %zu"'),
    (1, 'job_start(int worker, uint64_t job) "worker %d job %" PRIu64'),
    (2, 'job_done(int worker, uint64_t job, int64_t result, bool ok) "worker %d job %" PRIu64 " result %" PRId64 " ok %d"'),
]
T0 = 1_000_000_000_000  # first timestamp, ns
STEP = 100              # ns between records of the merged timeline
CYCLE = 3               # records in one cycle: submit, start, done
# One cycle as u64 words: (type, id, ts, length | pid << 32, payload...).
# job_submit: job, u32 4 + "name", size; job_start: worker, job;
# job_done: worker, job, result, ok. Offsets of the timestamp and job words:
TS_WORDS = (2, 9, 15)
JOB_WORDS = (4, 12, 18)
WORDS = 21


def mapping(eid, name):
    b = name.encode()
    return struct.pack('<QQI', 0, eid, len(b)) + b


def write_trace(path, pid, first, count, every, burst=1):
    """A v4 file at path with records first, first + every, ... (count of them) of the merged timeline;
    with burst B (a multiple of CYCLE), runs of B records in a row: first*B.., then every*B further on."""
    desc = ''.join('%s=%s\n' % kv for kv in [
        ('simpletrace', '1'), ('version', 'bench'), ('pid', pid), ('program', 'bench-merge'),
        ('host', 'bench'), ('clock', 'monotonic'), ('anchor_mono_ns', T0), ('anchor_real_ns', T0)])
    head = [HEADER, mapping(META_INFO, desc)]
    for eid, line in EVENTS:
        head += [mapping(eid, line.split('(')[0]), mapping(META_DECL + eid, line)]
    tid = pid
    name = struct.unpack('<Q', struct.pack('<I', 4) + b'name')[0]
    cycle = [1, 0, 0, (24 + 24) | tid << 32, 0, name, 4096,
             1, 1, 0, (24 + 16) | tid << 32, 1, 0,
             1, 2, 0, (24 + 32) | tid << 32, 1, 0, 0, 1]
    assert len(cycle) == WORDS
    cycles = -(-count // CYCLE)
    words = array.array('Q', cycle) * cycles
    for k in range(CYCLE):
        words[JOB_WORDS[k]::WORDS] = array.array('Q', range(0, cycles))
        if burst == 1:  # record r = cycle * CYCLE + k of this file is record first + r * every of the timeline
            start = first + k * every
            words[TS_WORDS[k]::WORDS] = array.array(
                'Q', range(T0 + start * STEP, T0 + (start + cycles * CYCLE * every) * STEP, CYCLE * every * STEP))
            continue
        runs = burst // CYCLE  # cycles in one run
        for p in range(runs):
            # cycle q = b * runs + p, record r = q * CYCLE + k of this file is record
            # (b * every + first) * burst + p * CYCLE + k of the timeline, b = 0, 1, ...
            start = first * burst + p * CYCLE + k
            n = len(range(p, cycles, runs))
            words[TS_WORDS[k] + p * WORDS::runs * WORDS] = array.array(
                'Q', range(T0 + start * STEP, T0 + (start + n * every * burst) * STEP, every * burst * STEP))
    if sys.byteorder != 'little':
        words.byteswap()  # little-endian throughout, as the header and description are
    data = words.tobytes()
    if count % CYCLE:  # cut the last cycle: record sizes 56, 48, 64 bytes
        data = data[:len(data) - [0, 112, 64][count % CYCLE]]
    with open(path, 'wb') as f:
        f.write(b''.join(head))
        f.write(data)


def make_inputs(d, tag, k, n, burst):
    """K files of n records each, interleaved; their paths."""
    paths = []
    for i in range(k):
        p = os.path.join(d, '%s-%02d.trace' % (tag, i))
        write_trace(p, 10000 + i, i, n, k, burst)
        paths.append(p)
    return paths


TIME = '/usr/bin/time'


def run(argv):
    """Wall seconds and peak RSS (KiB) of one run of argv, stdout discarded.

    The RSS comes from /usr/bin/time where there is one: a child forked from
    this script keeps the script's own peak in its ru_maxrss across exec."""
    with tempfile.NamedTemporaryFile('r') as rss_file:
        timed = [TIME, '-f', '%M', '-o', rss_file.name] + argv if os.access(TIME, os.X_OK) else argv
        t = time.perf_counter()
        with open(os.devnull, 'wb') as null:
            p = subprocess.Popen(timed, stdout=null)
            _, status, ru = os.wait4(p.pid, 0)
        w = time.perf_counter() - t
        if status != 0:
            raise RuntimeError('%s failed (status %d)' % (' '.join(argv[:3]), status))
        return w, int(rss_file.read().split()[-1]) if timed is not argv else ru.ru_maxrss


def best(contenders, runs):
    """{name: (best wall, peak RSS)} over runs, the contenders in turn so that load touches all alike."""
    out = {}
    for _ in range(runs):
        for name, argv in contenders:
            w, rss = run(argv)
            bw, brss = out.get(name, (w, rss))
            out[name] = (min(w, bw), max(rss, brss))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--simpletrace', required=True)
    ap.add_argument('--records', type=int, default=1000000, help='records per input')
    ap.add_argument('--inputs', default='2,8,64', help='input counts, comma-separated')
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--scale', type=int, default=4, help='the second RSS figure: inputs of --records / S records')
    ap.add_argument('--burst', type=int, default=1, help='records in a row from one input (a multiple of 3); 1: round robin')
    ap.add_argument('--dir', default=None)
    o = ap.parse_args()
    exe, n = o.simpletrace, o.records
    if o.burst != 1 and o.burst % CYCLE:
        ap.error('--burst must be 1 or a multiple of %d' % CYCLE)
    rows = []
    t_all = time.perf_counter()
    for k in [int(x) for x in o.inputs.split(',')]:
        with tempfile.TemporaryDirectory(dir=o.dir, prefix='bench-merge-') as d:
            t = time.perf_counter()
            many = make_inputs(d, 'in', k, n, o.burst)
            one = os.path.join(d, 'one.trace')
            write_trace(one, 9999, 0, k * n, 1)
            gen = time.perf_counter() - t
            r = best([('stats many', [exe, 'stats'] + many), ('stats one', [exe, 'stats', one]),
                      ('print many', [exe, 'print'] + many), ('print one', [exe, 'print', one])], o.runs)
            mb = (sum(os.path.getsize(p) for p in many)) / 1e6
        with tempfile.TemporaryDirectory(dir=o.dir, prefix='bench-merge-') as d:
            t = time.perf_counter()
            small = make_inputs(d, 'small', k, n // o.scale, o.burst)
            gen += time.perf_counter() - t
            _, rss_small = run([exe, 'stats'] + small)
        rows.append((k, k * n, mb, r, rss_small))
        print('%d inputs x %d records (%.0f MB; files written in %.1f s) measured' % (k, n, mb, gen), file=sys.stderr, flush=True)

    print('simpletrace stats / print >/dev/null: K inputs of %d records each (56 bytes per record) vs one file of'
          ' the same K*%d records; best of %d runs; M rec/s = million records per second;' % (n, n, o.runs))
    print('many/one = time of the K files / time of the one file (issue 14: within 1.5x); RSS = peak, MB\n')
    print('%6s %10s | %8s %8s %8s | %8s %8s %8s | %8s %8s %8s %8s' % (
        'inputs', 'records', 'stats', 'stats', 'many/', 'print', 'print', 'many/', 'RSS', 'RSS', 'RSS', 'RSS'))
    print('%6s %10s | %8s %8s %8s | %8s %8s %8s | %8s %8s %8s %8s' % (
        '', '', 'many', 'one', 'one', 'many', 'one', 'one', 'many', 'one', 'print', '1/%d' % o.scale))
    print('%6s %10s | %8s %8s %8s | %8s %8s %8s | %8s %8s %8s %8s' % (
        '', '', 'Mrec/s', 'Mrec/s', '', 'Mrec/s', 'Mrec/s', '', 'stats', 'stats', 'many', 'stats'))
    for k, total, mb, r, rss_small in rows:
        sm, so, pm, po = (r[x][0] for x in ('stats many', 'stats one', 'print many', 'print one'))
        print('%6d %10d | %8.2f %8.2f %7.2fx | %8.2f %8.2f %7.2fx | %8.1f %8.1f %8.1f %8.1f' % (
            k, total, total / sm / 1e6, total / so / 1e6, sm / so, total / pm / 1e6, total / po / 1e6, pm / po,
            r['stats many'][1] / 1024, r['stats one'][1] / 1024, r['print many'][1] / 1024, rss_small / 1024))
    print('\n(RSS 1/%d stats: K inputs of %d records each; %s; total %.1f s)' % (
        o.scale, n // o.scale, 'round robin' if o.burst == 1 else 'runs of %d records' % o.burst,
        time.perf_counter() - t_all))


if __name__ == '__main__':
    main()
