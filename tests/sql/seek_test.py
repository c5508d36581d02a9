#!/usr/bin/env python3
"""Time ranges in SQL read only what they need (issue 24): a ts bound on records, an event's table or drops
becomes the reader's --from/--to, so that in a compressed trace with a seek table the frames outside the range
are jumped over, and in a plain trace the records outside are skipped by their length without decoding.

The traces: sql_frames_app writes 40 flushes of 500 records (with compress=zstd, a zstd frame each, at least,
and a time index). What each statement's scans read comes from simpletrace_reads() (the connection's totals: frames
decompressed and jumped over, records skipped undecoded); every answer is compared with what
`simpletrace print --format=json` shows, and with the same query whose bound SQLite keeps to itself (`+ts`:
an expression, never handed to the table), which reads everything.

Also: a trace from standard input ('-') is refused with one message saying why, by the module too.

argv: SIMPLETRACE SQL-FRAMES-APP FRAMES-EVENTS
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from tap import done, ok, run  # noqa: E402

FRAMES, RECORDS = 40, 500


def write_trace(app, path, compress):
    cfg = 'enable=*,file=%s%s' % (path, ',compress=zstd' if compress else '')
    r = subprocess.run([app, str(FRAMES), str(RECORDS)], env=dict(os.environ, SIMPLETRACE=cfg), capture_output=True,
                       text=True, timeout=120)
    return r


def query(cli, trace, sql):
    """Rows of sql (JSON lines), then what its scans read (simpletrace_reads()), in one connection."""
    r = run(cli, 'sql', '--format=json', trace, '-e', sql, '-e', 'SELECT simpletrace_reads() AS reads')
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    reads = json.loads(lines[-1]['reads']) if lines and 'reads' in lines[-1] else {}
    return [list(x.values()) for x in lines[:-1]], reads, r


def printed(cli, trace):
    r = run(cli, 'print', '--format=json', trace)
    return [json.loads(x) for x in r.stdout.splitlines()]


def check_range(cli, trace, recs, what, compressed, frames):
    ticks = [x for x in recs if x['name'] == 'frame_tick']
    marks = [x['timestamp_ns'] for x in recs if x['name'] == 'frame_mark']
    lo, hi = marks[18] + 1, marks[21]  # the records of frames 19, 20, 21 (and 21's mark)
    want = [[x['timestamp_ns'], x['args']['frame'], x['args']['k'], x['args']['what']] for x in ticks
            if lo <= x['timestamp_ns'] <= hi]
    sql = 'SELECT ts, frame, k, what FROM frame_tick WHERE %sts BETWEEN %d AND %d'
    rows, reads, r = query(cli, trace, sql % ('', lo, hi))
    full, full_reads, r2 = query(cli, trace, sql % ('+', lo, hi))
    ok(r.returncode == 0 and r2.returncode == 0 and rows == want and full == want and len(want) == 3 * RECORDS,
       '%s: ts BETWEEN on an event\'s table: the rows print shows, as the query SQLite filters alone' % what,
       '%s %s %d %d %d' % (r.stderr, r2.stderr, len(rows), len(full), len(want)))
    if compressed:
        ok(reads.get('frames') == frames and 0 < reads.get('frames_read', 0) <= 10 and
           reads.get('frames_skipped', 0) >= frames - 10 and full_reads.get('frames_skipped') == 0 and
           full_reads.get('frames_read', 0) >= frames,
           '%s: the frames outside the range are jumped over (a full scan decompresses every one)' % what,
           '%s %s' % (reads, full_reads))
    else:
        ok(reads.get('frames') == 0 and reads.get('skipped') == len(recs) - len(want) and
           full_reads.get('skipped') == len(recs) - len(ticks),
           '%s: the records outside the range are skipped undecoded (a full scan decodes every one of its event)'
           % what, '%s %s' % (reads, full_reads))
    # one bound at a time, on records: from only, to only, and one timestamp
    for cond, keep in (('ts > %d' % hi, lambda t: t > hi), ('ts <= %d' % lo, lambda t: t <= lo),
                       ('ts = %d' % ticks[7777]['timestamp_ns'], lambda t: t == ticks[7777]['timestamp_ns'])):
        rows, reads, r = query(cli, trace, 'SELECT count(*), sum(ts % 1000) FROM records WHERE ' + cond)
        full, _, _ = query(cli, trace, 'SELECT count(*), sum(ts % 1000) FROM records WHERE +' + cond)
        sel = [x['timestamp_ns'] for x in recs if keep(x['timestamp_ns'])]
        fewer = reads.get('frames_skipped', 0) > 0 if compressed else reads.get('skipped', 0) > 0
        ok(r.returncode == 0 and rows == full == [[len(sel), sum(t % 1000 for t in sel) if sel else None]] and fewer,
           '%s: records WHERE %s: print\'s count, less read than a full scan' % (what, cond.split()[1]),
           '%s %s %s %s' % (r.stderr, rows, full, reads))
    # bounds that come from another table as the query runs: one scan of frame_tick around each mark
    width = min(b - a for a, b in zip(marks, marks[1:]))
    rows, reads, r = query(cli, trace, 'SELECT m.frame, count(*) FROM frame_mark m JOIN frame_tick t '
                                       'ON t.ts > m.ts - %d AND t.ts <= m.ts WHERE m.frame IN (5, 30) '
                                       'GROUP BY m.frame' % width)
    want = [[f, sum(1 for x in ticks if marks[f] - width < x['timestamp_ns'] <= marks[f])] for f in (5, 30)]
    ok(r.returncode == 0 and rows == want and want[0][1] > 0 and
       (reads.get('frames_skipped', 0) > 0 if compressed else reads.get('skipped', 0) > 0),
       '%s: a join whose ts bounds come from the outer table reads around each of its rows' % what,
       '%s %s %s %s' % (r.stderr, rows, want, reads))


def check_stdin(cli, trace, events):
    with open(trace, 'rb') as f:
        r = subprocess.run([cli, 'sql', '-', '-e', 'SELECT count(*) FROM records'], stdin=f, capture_output=True,
                           text=True, timeout=60)
    ok(r.returncode == 2 and 'standard input' in r.stderr.splitlines()[0] and
       'reads the trace anew' in r.stderr.splitlines()[0], 'sql -: refused (exit 2), the message says why (each scan '
       'reads anew)', r.stderr)
    with open(trace, 'rb') as f:
        r = subprocess.run([cli, 'sql', trace, '-e', "CREATE VIRTUAL TABLE t USING simpletrace('-', events='%s')"
                            % events, '-e', 'SELECT 42'], stdin=f, capture_output=True, text=True, timeout=60)
    ok(r.returncode == 1 and "standard input ('-') cannot be read" in r.stderr and 'anew' in r.stderr and
       '42' not in r.stdout, 'the module refuses a trace from standard input too, saying why', r.stderr)


def main():
    cli, app, events = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as tmp:
        for compressed in (True, False):
            what = 'compressed' if compressed else 'plain'
            trace = os.path.join(tmp, what + '.trace')
            r = write_trace(app, trace, compressed)
            info = run(cli, 'info', trace).stdout
            m = re.search(r'zstd, (\d+) frames', info)
            frames = int(m.group(1)) if m else 0  # one a flush, and any the writer made on its own between
            ok(r.returncode == 0 and (not compressed or frames >= FRAMES and 'seekable' in info),
               '%s: a trace of %d flushes written' % (what, FRAMES), r.stderr + info)
            recs = printed(cli, trace)
            check_range(cli, trace, recs, what, compressed, frames)
        check_stdin(cli, os.path.join(tmp, 'plain.trace'), events)
    return done()


if __name__ == '__main__':
    sys.exit(main())
