#!/usr/bin/env python3
"""bench/meta: what a trace saying about itself costs (issue 13, "Measure").

For each program (the demo, and a generated one with 900 events of varied
signatures), traces a run into a file and reports:
  - the bytes of the description and of the declarations (record headers
    included), beside the header and mapping records every v4 file has;
  - their share of that file, and of a one-second trace at 10k, 100k and
    1M records/s (from the file's mean record size) and at the program's
    own flat-out rate;
then times `simpletrace print` on the same records with and without the
embedded records (a copy with them stripped), and without trace-events
(the declarations give the catalog), best of R runs, side by side.
Figures and ratios only; it never fails on a figure.

Usage: meta_size.py --simpletrace EXE --demo DEMO --demo-events FILE
                    --prog PROG --prog-events FILE [--records N]
                    [--reader-records M] [--runs R] [--dir DIR]
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile
import time

META_INFO = 0xFFFFFFFFFFFFFF00
META_DECL_HI = 0xFFFFFFFE


def is_meta(eid):
    return eid == META_INFO or eid >> 32 == META_DECL_HI


def scan(path, strip_to=None):
    """Sizes of what the little-endian v4 file at path holds; with strip_to, writes it there without meta records."""
    with open(path, 'rb') as f:
        data = f.read()
    s = dict(header=24, desc=0, decls=0, ndecls=0, mappings=0, nmappings=0, events=0, nevents=0, total=len(data))
    out = [data[:24]] if strip_to else None
    at = 24
    while at + 20 <= len(data):
        rtype, eid = struct.unpack_from('<QQ', data, at)
        if rtype == 0:
            size = 20 + struct.unpack_from('<I', data, at + 16)[0]
            if eid == META_INFO:
                s['desc'] += size
            elif is_meta(eid):
                s['decls'] += size
                s['ndecls'] += 1
            else:
                s['mappings'] += size
                s['nmappings'] += 1
        else:
            size = 8 + struct.unpack_from('<I', data, at + 24)[0]
            s['events'] += size
            s['nevents'] += 1
        if out is not None and not (rtype == 0 and is_meta(eid)):
            out.append(data[at:at + size])
        at += size
    if strip_to:
        with open(strip_to, 'wb') as f:
            f.write(b''.join(out))
    return s


def traced_run(argv, trace):
    """Runs argv tracing every event into trace (no drops: a big buffer); its wall seconds."""
    env = dict(os.environ, SIMPLETRACE='enable=*,file=%s,bufsize=64M' % trace)
    t = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def pct(part, whole):
    return 100.0 * part / whole if whole else 0.0


def report_size(label, s, secs):
    meta = s['desc'] + s['decls']
    base = s['header'] + s['mappings']
    mean = s['events'] / s['nevents'] if s['nevents'] else 0
    print('%s: %d events declared, %d records in %.3f s (%.1f MB, %.1f bytes per record)' %
          (label, s['nmappings'], s['nevents'], secs, s['total'] / 1e6, mean))
    print('  description      %7d bytes' % s['desc'])
    print('  declarations     %7d bytes (%d, %.1f bytes each)' %
          (s['decls'], s['ndecls'], s['decls'] / s['ndecls'] if s['ndecls'] else 0))
    print('  together         %7d bytes = %.2fx the header and mapping records (%d bytes)' %
          (meta, meta / base if base else 0, base))
    print('  share of this file: %.4f%%' % pct(meta, s['total']))
    rates = [('10k records/s', 1e4), ('100k records/s', 1e5), ('1M records/s', 1e6)]
    if secs > 0 and s['nevents']:
        rates.append(('flat out, %.2f M records/s' % (s['nevents'] / secs / 1e6), s['nevents'] / secs))
    for name, rate in rates:
        second = base + meta + rate * mean
        print('  share of a one-second trace at %-28s %.4f%% (of %.1f MB)' % (name + ':', pct(meta, second), second / 1e6))


def timed(argv):
    """Wall and CPU seconds of one run of argv, stdout discarded."""
    t = time.perf_counter()
    with open(os.devnull, 'wb') as null:
        p = subprocess.Popen(argv, stdout=null)
        _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise RuntimeError('%s failed (status %d)' % (' '.join(argv), status))
    return time.perf_counter() - t, ru.ru_utime + ru.ru_stime


def report_speed(exe, events, full, stripped, records, runs):
    contenders = [('with the records', [exe, 'print', events, full]),
                  ('stripped of them', [exe, 'print', events, stripped]),
                  ('no trace-events', [exe, 'print', full])]
    best = {}
    for _ in range(runs):  # in turn, so that the machine's load touches all alike
        for name, argv in contenders:
            w, c = timed(argv)
            bw, bc = best.get(name, (w, c))
            best[name] = (min(w, bw), min(c, bc))
    print('simpletrace print, %d records, best of %d:' % (records, runs))
    for name, _ in contenders:
        w, c = best[name]
        print('  %-18s %7.3f s  %6.2f M records/s  (CPU %.3f s)' % (name, w, records / w / 1e6, c))
    w0, c0 = best['stripped of them']
    for name in ('with the records', 'no trace-events'):
        w, c = best[name]
        print('  ratio: %s runs at %.3fx the speed of the stripped file (wall), %.3fx (CPU)' % (name, w0 / w, c0 / c))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--simpletrace', required=True)
    ap.add_argument('--demo', required=True)
    ap.add_argument('--demo-events', required=True)
    ap.add_argument('--prog', required=True)
    ap.add_argument('--prog-events', required=True)
    ap.add_argument('--records', type=int, default=100000, help='records of the 900-event trace for sizes')
    ap.add_argument('--reader-records', type=int, default=5000000, help='records of the trace timed')
    ap.add_argument('--jobs', type=int, default=20000, help="the demo's jobs")
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--dir', default=None)
    o = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=o.dir, prefix='bench-meta-') as d:
        demo = os.path.join(d, 'demo.trace')
        secs = traced_run([o.demo, '--workers', '2', '--jobs', str(o.jobs)], demo)
        report_size('demo (examples/demo, %d jobs)' % o.jobs, scan(demo), secs)
        print()
        prog = os.path.join(d, 'prog.trace')
        secs = traced_run([o.prog, '--records', str(o.records)], prog)
        report_size('900-event program (bench/meta)', scan(prog), secs)
        print()
        big, stripped = os.path.join(d, 'big.trace'), os.path.join(d, 'big-stripped.trace')
        traced_run([o.prog, '--records', str(o.reader_records)], big)
        s = scan(big, stripped)
        report_speed(o.simpletrace, o.prog_events, big, stripped, s['nevents'], o.runs)
    return 0


if __name__ == '__main__':
    sys.exit(main())
