#!/usr/bin/env python3
"""export --format=parquet: the encodings the writer chooses (src/format/parquet_format.h), read back by DuckDB
(@duckdb/node-api, duckdb_node.py) and compared with `simpletrace print --format=json` value by value:

  - DELTA_BINARY_PACKED integers: values that wrap both ways (0 and u64 max in turn, INT64_MIN next to
    INT64_MAX), runs of one value (miniblocks of width 0), timestamps that go back, a row group of
    exactly 128 Ki rows then a last row group of one row, an event file of one row (the header alone),
    a column with no value in its row group (a trace without a description: pid all NULL);
  - min/max statistics of such columns, trusted by filters (counts against print's);
  - strings coded by a dictionary that gives up half way through a row group (over 1 MiB of distinct
    values): a dictionary page, a data page of indices, then a PLAIN data page, with invalid UTF-8,
    empty strings and NULLs (spans.parquet's key, NULL for nested calls) on both sides of the switch;
  - print's args object rendered by the export's worker for every row (records.parquet), coded by a
    dictionary of the values read (deltas), which gives up past its size for the rest of the row group
    (strings: mostly new values of 100 bytes);
  - on one CPU (taskset) the export writes without its worker thread: the same bytes;
  - a row group the worker cannot write (RLIMIT_FSIZE): one message naming the file, exit 1.

argv: SIMPLETRACE NODE NPM DUCKDB-CACHE-DIR
"""
import os
import resource
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from tap import done, ok, run  # noqa: E402
import duckdb_node  # noqa: E402
from parquet_test import (U64, Duck, Trace, check_events, check_records, check_spans, declared_events,  # noqa: E402
                          printed)

GROUP_ROWS = 128 * 1024


class BigTrace(Trace):
    """Trace, its records gathered in a list (joined once): hundreds of thousands of them."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.parts = []

    def record(self, name, ts, tid, *vals):
        head, self.b = self.b, b''
        super().record(name, ts, tid, *vals)
        self.parts.append(self.b)
        self.b = head

    def save(self, path):
        self.b += b''.join(self.parts)
        self.parts = []
        super().save(path)


def meta(duck, path):
    """Per column chunk: (row group, column, rows, encodings, null count, min, max) from DuckDB's view of the footer."""
    res, = duck.q("SELECT row_group_id, path_in_schema, row_group_num_rows, encodings, stats_null_count, "
                  "stats_min_value, stats_max_value FROM parquet_metadata('%s') ORDER BY row_group_id, column_id" % path)
    return res.get('rows', []), res.get('error', '')


def deltas(duck, cli, tmp):
    """Integers that stress DELTA_BINARY_PACKED, 128 Ki + 1 records: the last row group of records.parquet has one row."""
    t = BigTrace(pid=31337, program='deltas', host='gamma')
    t.declare('v(uint64_t u, int64_t s, int32_t i) "v"')
    t.declare('one(uint64_t u) "one"')
    lo, hi = -(1 << 63), (1 << 63) - 1
    pattern_u = [0, U64, 1, U64 - 1, 1 << 63, (1 << 63) - 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    pattern_s = [lo, hi, -1, 0, 1, lo, lo, hi, hi, -(1 << 40), 1 << 40, 7, 7, 7, 7, -7]
    ts = 10_000_000
    for k in range(GROUP_ROWS):
        # timestamps: forward, equal in runs of 3, back by 3000 ns every 1000 records
        ts += 0 if k % 3 else (5 if k % 1000 else -3000)
        if k < 40_000:
            u, s = pattern_u[k % 16], pattern_s[(k * 7) % 16]
        elif k < 80_000:
            u, s = 42, -42  # one value: miniblocks of width 0
        else:
            u, s = (k * 0x9E3779B97F4A7C15) & U64, ((k * 0x9E3779B97F4A7C15) & U64) - (1 << 63)
        t.record('v', ts, 1000 + (k // 5000) % 3, u, s & U64, -(k % 5))
    t.record('one', ts + 1, 1000, U64)
    trace, out = os.path.join(tmp, 'deltas.trace'), os.path.join(tmp, 'deltas.pq')
    t.save(trace)
    r = run(cli, 'export', '-q', '--format=parquet', '-o', out, trace)
    recs, _ = printed(cli, trace)
    ok(r.returncode == 0 and len(recs) == GROUP_ROWS + 1, 'deltas: exported %d records' % len(recs), r.stderr)
    check_records(duck, out, recs, 31337, 'deltas', 'gamma', 'deltas')
    check_events(duck, out, recs, 'deltas', {'one': {'ts': 'BIGINT', 'pid': 'BIGINT', 'tid': 'BIGINT',
                                                     'u': 'UBIGINT'},
                                             'v': {'ts': 'BIGINT', 'pid': 'BIGINT', 'tid': 'BIGINT', 'u': 'UBIGINT',
                                                   's': 'BIGINT', 'i': 'BIGINT'}})
    rows, err = meta(duck, os.path.join(out, 'records.parquet'))
    groups = sorted({(int(x[0]), int(x[2])) for x in rows})
    ts_enc = {x[3] for x in rows if x[1] == 'ts'}
    ok(groups == [(0, GROUP_ROWS), (1, 1)] and ts_enc == {'RLE, DELTA_BINARY_PACKED'},
       'deltas: records.parquet: a row group of 128 Ki rows, then one of one row; ts DELTA_BINARY_PACKED',
       '%s %s %s' % (err, groups, ts_enc))
    args_enc = [x[3] for x in rows if x[1] == 'args' and int(x[0]) == 0]
    ok(args_enc == ['PLAIN, RLE, RLE_DICTIONARY'],
       'deltas: records.parquet: args (a few values repeated, then new ones) coded by a dictionary',
       '%s %s' % (err, args_enc))
    rows, err = meta(duck, os.path.join(out, 'events', 'v.parquet'))
    groups = sorted({(int(x[0]), int(x[2])) for x in rows})
    ok(groups == [(0, GROUP_ROWS)], 'deltas: events/v.parquet: one full row group (no empty one after it)',
       '%s %s' % (err, groups))
    rows, err = meta(duck, os.path.join(out, 'events', 'one.parquet'))
    got = {x[1]: (str(x[2]), x[5], x[6]) for x in rows}
    ok(got.get('u') == ('1', str(U64), str(U64)),
       'deltas: events/one.parquet: one row, u64 max (min and max statistics alike)', '%s %s' % (err, got))
    vs = [x for x in recs if x['name'] == 'v']
    want = [sum(1 for x in vs if x['args']['u'] == U64), sum(1 for x in vs if x['args']['s'] == -(1 << 63)),
            sum(1 for x in vs if x['args']['s'] > 1 << 62), sum(1 for x in vs if x['timestamp_ns'] < 10_000_000)]
    res = duck.q("SELECT count(*) FILTER (WHERE u = %d), count(*) FILTER (WHERE s = %d), "
                 "count(*) FILTER (WHERE s > %d), count(*) FILTER (WHERE ts < 10000000), "
                 "min(u), max(u), min(s), max(s) FROM '%s/events/v.parquet'" % (U64, -(1 << 63), 1 << 62, out),
                 "SELECT count(*) FROM '%s/events/v.parquet' WHERE u = %d" % (out, U64))
    got = res[0].get('rows', [[None] * 8])[0]
    ok([int(x) for x in got[:4]] == want and [int(x) for x in got[4:]] == [0, U64, -(1 << 63), (1 << 63) - 1] and
       int(res[1].get('rows', [[0]])[0][0]) == want[0],
       'deltas: filters and min/max over wrapping values agree with print', '%s %s %s' % (res, got, want))


def no_values(duck, cli, tmp):
    """A trace without a description: pid is NULL in every row, an INT64 column chunk with no value."""
    t = Trace()
    t.declare('e(int x) "x"')
    for k in range(10):
        t.record('e', 100 + k, 7, k - 5)
    trace, out = os.path.join(tmp, 'novalue.trace'), os.path.join(tmp, 'novalue.pq')
    t.save(trace)
    r = run(cli, 'export', '-q', '--format=parquet', '-o', out, trace)
    recs, _ = printed(cli, trace)
    ok(r.returncode == 0, 'no values: exported', r.stderr)
    check_records(duck, out, recs, None, None, None, 'no values')
    rows, err = meta(duck, os.path.join(out, 'events', 'e.parquet'))
    pid = [(str(x[2]), str(x[4]), x[5]) for x in rows if x[1] == 'pid']
    ok(pid == [('10', '10', None)],
       'no values: events/e.parquet: pid is a chunk of 10 NULLs (no min, no max)', '%s %s' % (err, rows))


def strings(duck, cli, tmp):
    """A string dictionary past 1 MiB within a row group: PLAIN for the rest; NULL keys on both sides."""
    t = BigTrace(pid=5, program='strings', host='delta')
    t.declare('s(const char *name, int k) "s"')
    t.declare('req_begin(const char *key) "b"')
    t.declare('req_end(const char *key) "e"')
    t.declare('op_enter(void) "in"')
    t.declare('op_exit(void) "out"')
    ts = 1000
    for k in range(30_000):
        if k % 3 == 0:
            name = b'same'
        elif k % 3 == 1:
            name = b'distinct-%06d-' % k + b'x' * 90  # 30 000 / 3 * 105 bytes: past 1 MiB at ~10 000 values
        else:
            name = [b'', b'caf\xc3\xa9', b'\xff\xfe bad', b'q"uote\\'][k % 4]
        t.record('s', ts, 9, name, k)
        key = b'request-%06d-' % k + b'k' * 80
        t.record('req_begin', ts + 1, 9, key)
        t.record('op_enter', ts + 2, 9)
        t.record('op_exit', ts + 3, 9)
        t.record('req_end', ts + 4, 10, key)
        ts += 10
    trace, out = os.path.join(tmp, 'strings.trace'), os.path.join(tmp, 'strings.pq')
    t.save(trace)
    pair = '--pair=req_begin:req_end@key'
    r = run(cli, 'export', '-q', '--format=parquet', pair, '-o', out, trace)
    recs, _ = printed(cli, trace)
    ok(r.returncode == 0 and len(recs) == 150_000, 'strings: exported', r.stderr)
    check_events(duck, out, recs, 'strings')
    check_records(duck, out, recs, 5, 'strings', 'delta', 'strings')
    check_spans(duck, out, recs, 5, ('req_begin', 'req_end', 'key'), 'strings', declared_events(cli, trace))
    rows, err = meta(duck, os.path.join(out, 'events', 's.parquet'))
    enc = [x[3] for x in rows if x[1] == 'name']
    ok(enc == ['PLAIN, RLE, RLE_DICTIONARY'], 'strings: events/s.parquet: name has a dictionary, then PLAIN values',
       '%s %s' % (err, enc))
    rows, err = meta(duck, os.path.join(out, 'spans.parquet'))
    key = [(x[3], str(x[4])) for x in rows if x[1] == 'key']
    ok(key == [('PLAIN, RLE, RLE_DICTIONARY', '30000')],
       'strings: spans.parquet: key (30 000 NULLs among 60 000) has a dictionary, then PLAIN values',
       '%s %s' % (err, key))
    one = os.path.join(tmp, 'strings-1cpu.pq')  # on one CPU the caller's thread encodes and writes itself
    r = run('taskset', '-c', '0', cli, 'export', '-q', '--format=parquet', pair, '-o', one, trace)
    same = [open(os.path.join(d, f), 'rb').read() for d in (out, one) for f in ('records.parquet', 'spans.parquet',
                                                                               'events/s.parquet')]
    ok(r.returncode == 0 and same[:3] == same[3:], 'strings: on one CPU (no worker thread) the same files', r.stderr)
    res = duck.q("SELECT count(*) FROM '%s/events/s.parquet' WHERE name = 'same'" % out,
                 "SELECT count(DISTINCT key), count(*) FILTER (WHERE key IS NULL) FROM '%s/spans.parquet'" % out)
    ok(res[0].get('rows') == [['10000']] and res[1].get('rows') == [['30000', '30000']],
       'strings: a filter and a count over both pages of each chunk', '%s' % res)


def write_fails(cli, tmp):
    """A row group the worker cannot write (files limited to 64 KiB): one message naming the file, exit 1."""
    trace, out = os.path.join(tmp, 'strings.trace'), os.path.join(tmp, 'small.pq')

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))

    r = subprocess.run([cli, 'export', '-q', '--format=parquet', '-o', out, trace], capture_output=True, text=True,
                       preexec_fn=limit, timeout=300)
    lines = r.stderr.splitlines()
    ok(r.returncode == 1 and len(lines) == 1 and 'cannot write' in lines[0] and '.parquet' in lines[0] and
       'File too large' in lines[0] and not os.path.exists(out),
       'a file the export cannot write: one message naming it, exit 1, no output directory', r.stderr)
    ok(not [n for n in os.listdir(tmp) if '.tmp-' in n], 'a file the export cannot write: no temporary directory left',
       str(os.listdir(tmp)))


def main():
    cli, node, npm, cache = (sys.argv[1:5] + [''] * 4)[:4]
    if not ok(node and npm, 'node and npm are installed (scripts/deps.sh check installs them)'):
        return done()
    err = duckdb_node.install(npm, cache)
    if not ok(not err, 'DuckDB (%s) installed for the test' % duckdb_node.PACKAGE, err):
        return done()
    duck = Duck(node, cache)
    with tempfile.TemporaryDirectory() as tmp:
        deltas(duck, cli, tmp)
        no_values(duck, cli, tmp)
        strings(duck, cli, tmp)
        write_fails(cli, tmp)
    return done()


if __name__ == '__main__':
    sys.exit(main())
