#!/usr/bin/env python3
"""export --format=parquet (issue 24), read by DuckDB (the npm package @duckdb/node-api on the machine's
Node.js, installed by the test into the build tree: duckdb_node.py), every value compared with what
`simpletrace print --format=json` shows for the same trace:

  - a trace built by hand (every kind of argument: negative, INT64_MIN, u64 max, bool, char, unsigned
    char, pointer, strings with invalid UTF-8, quotes and an empty one, integers cut to their declared
    size; nested calls, keyed spans across threads, begins never ended, a dropped record, a process
    description): records.parquet row by row (ts, name, pid, tid, program, host, args as print's
    JSON), each events/NAME.parquet typed column by column (DuckDB's types checked), spans.parquet
    equal to the spans the test pairs from print's records;
  - a trace of the runtime (export_app: two threads, nested requests and steps): the same, with
    pid, program and host as `simpletrace info` shows them;
  - 300 000 records: several row groups, min/max statistics that filters trust (time ranges counted);
  - 300 events taking turns (dictionary indices 9 bits wide) in a trace without a description (NULLs);
  - --align=realtime: TIMESTAMP columns whose epoch ns are print --align=realtime's timestamp_ns;
  - --partition=host,pid: 64 traces of 4 hosts, exported one by one and gathered into one directory,
    read by DuckDB with hive_partitioning as one dataset (host and pid from the paths), and the 64
    export directories read as one with a glob;
  - a damaged trace: exit 1, the files hold exactly the records print shows before the damage;
  - refused: a bad --partition, --partition with another format, an output directory holding other
    files; an export over an earlier one (subdirectories included) replaces it;
  - pandas (Debian's python3-pandas) reads records.parquet when pyarrow or fastparquet is there.

argv: SIMPLETRACE EXPORT-APP NODE NPM DUCKDB-CACHE-DIR DEBIAN-PYTHON3
"""
import collections
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from tap import done, ok, run  # noqa: E402
import duckdb_node  # noqa: E402

U64 = (1 << 64) - 1
INFO_ID = 0xFFFFFFFFFFFFFF00
DECL_BASE = 0xFFFFFFFE00000000
DROPPED_ID = 0xFFFFFFFFFFFFFFFE
ANCHOR_MONO, ANCHOR_REAL = 1_000_000, 1_700_000_000_123_456_789


class Trace:
    """A v4 little-endian trace built by hand (src/format/trace_format.h, meta_format.h)."""

    def __init__(self, pid=None, program='prog', host='alpha'):
        self.b = struct.pack('<QQQ', U64, 0xF2B177CB0AA429B4, 4)
        self.ids = {}
        self.decl = {}
        if pid is not None:
            info = ('simpletrace=1\npid=%d\nprogram=%s\nhost=%s\nclock=monotonic\nanchor_mono_ns=%d\n'
                    'anchor_real_ns=%d\n' % (pid, program, host, ANCHOR_MONO, ANCHOR_REAL)).encode()
            self.b += struct.pack('<QQI', 0, INFO_ID, len(info)) + info

    def declare(self, text):
        """text: 'name(type a, ...) "fmt"'; returns the event's id. Argument kinds from the types."""
        name = text.split('(')[0]
        eid = len(self.ids)
        self.ids[name] = eid
        args = text[len(name) + 1:text.index(')')]
        self.decl[name] = [] if args.strip() == 'void' else [a.strip() for a in args.split(',')]
        self.b += struct.pack('<QQI', 0, eid, len(name)) + name.encode()
        self.b += struct.pack('<QQI', 0, DECL_BASE + eid, len(text)) + text.encode()

    def record(self, name, ts, tid, *vals):
        payload = b''
        for decl, v in zip(self.decl[name], vals):
            if 'char *' in decl:
                payload += struct.pack('<I', len(v)) + v
            else:
                payload += struct.pack('<Q', v & U64)
        self.b += struct.pack('<QQQII', 1, self.ids[name], ts, 24 + len(payload), tid) + payload

    def dropped(self, ts, tid, count):
        self.b += struct.pack('<QQQII', 1, DROPPED_ID, ts, 32, tid) + struct.pack('<Q', count)

    def save(self, path):
        with open(path, 'wb') as f:
            f.write(self.b)


def kinds_trace(path):
    """Every kind of argument, calls nested and keyed, begins never ended, a dropped record."""
    t = Trace(pid=4242, program='kinds', host='alpha')
    t.declare('note(const char *msg, uint64_t big, int64_t neg, bool flag, void *ptr, char c, unsigned char uc, '
              'int8_t i8, uint16_t u16, int ts) "%s"')
    t.declare('job_begin(int id) "job %d"')
    t.declare('job_end(int id) "job %d"')
    t.declare('req_submit(uint64_t req) "req %" PRIu64')
    t.declare('req_complete(uint64_t req, int status) "req %" PRIu64 " %d"')
    t.declare('step_start(void) "step"')
    t.declare('step_done(void) "done"')
    ts = ANCHOR_MONO + 1000
    notes = [(b'caf\xc3\xa9 \xff "q" \\ \x01', U64, -(1 << 63), 1, 0xDEADBEEF, ord('A'), 0xFF, 0x1FF, 0x10001, -7),
             (b'', 0, -1, 0, 0, 0x0A, ord('z'), 0x7F, 0xFFFF, 0),
             (b'x' * 600, 1 << 53, (1 << 63) - 1, 1, U64, -3, 0x80, -128, 65535, 1 << 40)]
    t.record('job_begin', ts, 11, 1)
    t.record('req_submit', ts + 10, 11, 500)
    t.record('job_begin', ts + 20, 11, 2)
    for i, n in enumerate(notes):
        t.record('note', ts + 30 + i, 11 + i % 2, *n)
    t.record('job_end', ts + 40, 11, 2)
    t.record('req_submit', ts + 45, 11, 501)       # never completed
    t.record('req_complete', ts + 50, 12, 500, -2)  # on another thread
    t.dropped(ts + 55, 12, 9)
    t.record('step_start', ts + 60, 12)             # never done
    t.record('job_end', ts + 70, 11, 1)
    t.record('req_complete', ts + 80, 12, 999, 0)   # ends nothing: an instant
    t.save(path)


def big_trace(path, n):
    """n records of 7 events on 5 threads: several row groups."""
    t = Trace(pid=77, program='big', host='beta')
    names = []
    for k in range(7):
        names.append('ev%d' % k)
        t.declare('ev%d(uint64_t x, int64_t y) "x"' % k)
    parts = []
    for i in range(n):
        name = names[(i * 7) // 3 % 7]
        eid = t.ids[name]
        parts.append(struct.pack('<QQQII', 1, eid, 5000 + i * 3, 40, 100 + i % 5) +
                     struct.pack('<QQ', i * 2654435761 & U64, (-i) & U64))
    t.b += b''.join(parts)
    t.save(path)


def fleet_trace(path, host, pid, base):
    t = Trace(pid=pid, program='svc', host=host)
    t.declare('ev(uint64_t x) "x %" PRIu64')
    t.declare('work_enter(int n) "n %d"')
    t.declare('work_exit(int n) "n %d"')
    for i in range(3):
        t.record('work_enter', base + 100 * i, pid, i)
        t.record('ev', base + 100 * i + 10, pid, pid * 10 + i)
        t.record('work_exit', base + 100 * i + 50, pid, i)
    t.save(path)


# --- what print says --------------------------------------------------------------------------------------

def printed(cli, *args):
    r = run(cli, 'print', '--format=json', *args)
    return [json.loads(line) for line in r.stdout.splitlines()], r


def canon_print(v):
    """A print --format=json argument value as a plain value: chars their number, pointers their address."""
    if isinstance(v, dict):
        return v['value']
    if isinstance(v, str) and v.startswith('0x'):
        return int(v, 16)
    return v


def canon_duck(v, typ):
    if v is None:
        return None
    if typ in ('BIGINT', 'UBIGINT'):
        return int(v)
    return v


def declared_events(cli, trace):
    """The events a trace declares, as `simpletrace info` lists them."""
    lines = run(cli, 'info', trace).stdout.splitlines()
    at = lines.index('declared events:') if 'declared events:' in lines else len(lines)
    return {line.split()[1] for line in lines[at + 2:] if len(line.split()) == 2}


def pair_spans(recs, last_ts, pid, keyed, declared):
    """Spans as the export pairs them: X_begin/X_end, X_start/X_done, X_enter/X_exit nested per thread when
    both are declared; keyed (begin, end, arg): matched by the key's value in the process, on any thread."""
    ends = {'_begin': '_end', '_start': '_done', '_enter': '_exit'}
    stacks = collections.defaultdict(list)
    open_keys = {}
    spans = []
    for r in recs:
        name, ts, tid = r['name'], r['timestamp_ns'], r['pid']
        if keyed and name == keyed[0]:
            k = r['args'][keyed[2]]
            if k in open_keys:
                b = open_keys.pop(k)
                spans.append((b[0], b[1], ts, ts - b[1], pid, b[2], str(k), True))
            open_keys[k] = ('req', ts, tid)
            continue
        if keyed and name == keyed[1]:
            k = r['args'][keyed[2]]
            if k in open_keys:
                b = open_keys.pop(k)
                spans.append((b[0], b[1], ts, ts - b[1], pid, b[2], str(k), False))
            continue
        for b, e in ends.items():
            if name.endswith(b) and name[:-len(b)] + e in declared:
                stacks[tid].append((name[:-len(b)], ts))
            elif name.endswith(e) and name[:-len(e)] + b in declared:
                f = name[:-len(e)]
                st = stacks[tid]
                if any(x[0] == f for x in st):
                    while st[-1][0] != f:
                        x = st.pop()
                        spans.append((x[0], x[1], ts, ts - x[1], pid, tid, None, True))
                    x = st.pop()
                    spans.append((x[0], x[1], ts, ts - x[1], pid, tid, None, False))
    for tid, st in stacks.items():
        for x in st:
            spans.append((x[0], x[1], last_ts, last_ts - x[1], pid, tid, None, True))
    for k, b in open_keys.items():
        spans.append((b[0], b[1], last_ts, last_ts - b[1], pid, b[2], str(k), True))
    return sorted(spans, key=repr)


# --- checks -----------------------------------------------------------------------------------------------

class Duck:
    def __init__(self, node, cache):
        self.node, self.cache = node, cache

    def q(self, *sql):
        try:
            return duckdb_node.query(self.node, self.cache, list(sql))
        except RuntimeError as e:
            return [{'error': str(e)}] * len(sql)


def check_records(duck, out, recs, pid, program, host, what):
    """records.parquet equals print's records, in order."""
    res, = duck.q("SELECT ts, name, pid, tid, program, host, args FROM '%s/records.parquet'" % out)
    rows = res.get('rows', [])
    want = [(r['timestamp_ns'], r['name'], pid, r['pid'], program, host, r['args']) for r in recs]
    got = [(int(r[0]), r[1], None if r[2] is None else int(r[2]), None if r[3] is None else int(r[3]),
            r[4], r[5], json.loads(r[6])) for r in rows]
    bad = [(g, w) for g, w in zip(got, want) if g != w]
    ok(res.get('types') == ['BIGINT', 'VARCHAR', 'BIGINT', 'BIGINT', 'VARCHAR', 'VARCHAR', 'VARCHAR'] and
       len(got) == len(want) and not bad,
       '%s: records.parquet: %d rows equal to print --format=json (ts, name, pid, tid, program, host, args)'
       % (what, len(want)), '%s %d/%d %s' % (res.get('types') or res.get('error'), len(got), len(want), bad[:2]))


def check_events(duck, out, recs, what, want_types=None):
    """events/NAME.parquet, every typed value equal to print's argument."""
    names = sorted({r['name'] for r in recs})
    files = sorted(os.listdir(os.path.join(out, 'events')))
    ok(files == [n + '.parquet' for n in names], '%s: one events/NAME.parquet per event with records' % what,
       '%s vs %s' % (files, names))
    res = duck.q(*["SELECT * FROM '%s/events/%s.parquet'" % (out, n) for n in names])
    for n, r in zip(names, res):
        mine = [x for x in recs if x['name'] == n]
        cols, types = r.get('columns', []), r.get('types', [])
        argn = list(mine[0]['args']) if mine else []
        want = [[x['timestamp_ns'], x['pid']] + [canon_print(v) for v in x['args'].values()] for x in mine]
        got = [[canon_duck(v, t) for v, t in zip(row, types)] for row in r.get('rows', [])]
        got = [[g[0]] + g[2:] for g in got]  # pid (the process) is checked in records.parquet
        named = cols[3:] == [('arg_' + a if a in ('ts', 'pid', 'tid', 'host') else a) for a in argn]
        ok(named and got == want, '%s: events/%s.parquet: %d rows, every typed value equal to print' % (what, n, len(want)),
           '%s %s\n%s\n%s' % (r.get('error', ''), cols, got[:2], want[:2]))
        if want_types and n in want_types:
            ok(dict(zip(cols, types)) == want_types[n], '%s: events/%s.parquet: typed as declared' % (what, n),
               '%s' % dict(zip(cols, types)))


def check_spans(duck, out, recs, pid, keyed, what, declared):
    last = max(r['timestamp_ns'] for r in recs)
    want = pair_spans(recs, last, pid, keyed, declared)
    res, = duck.q("SELECT name, begin_ts, end_ts, dur, pid, tid, key, unfinished FROM '%s/spans.parquet'" % out)
    got = sorted([(r[0], int(r[1]), int(r[2]), int(r[3]), None if r[4] is None else int(r[4]), int(r[5]), r[6], r[7])
                  for r in res.get('rows', [])], key=repr)
    ok(got == want and len(want) > 0, '%s: spans.parquet: the %d spans paired from print\'s records' % (what, len(want)),
       '%s\n%s\n%s' % (res.get('error', ''), got, want))


def kinds(a, duck, tmp):
    trace = os.path.join(tmp, 'kinds.trace')
    kinds_trace(trace)
    recs, _ = printed(a.cli, trace)
    out = os.path.join(tmp, 'kinds.pq')
    pair = '--pair=req_submit:req_complete@req'
    r = run(a.cli, 'export', '--format=parquet', pair, '-o', out, trace)
    ok(r.returncode == 0 and len(recs) == 13, 'kinds: export --format=parquet', r.stderr)
    check_records(duck, out, recs, 4242, 'kinds', 'alpha', 'kinds')
    note = {'ts': 'BIGINT', 'pid': 'BIGINT', 'tid': 'BIGINT', 'msg': 'VARCHAR', 'big': 'UBIGINT', 'neg': 'BIGINT',
            'flag': 'BOOLEAN', 'ptr': 'UBIGINT', 'c': 'BIGINT', 'uc': 'UBIGINT', 'i8': 'BIGINT', 'u16': 'UBIGINT',
            'arg_ts': 'BIGINT'}
    check_events(duck, out, recs, 'kinds', {'note': note})
    edge = [x['args'] for x in recs if x['name'] == 'note']
    ok(edge[0]['big'] == U64 and edge[0]['neg'] == -(1 << 63) and edge[0]['i8'] == -1 and edge[0]['u16'] == 1 and
       edge[2]['c'] == {'value': -3, 'char': None} and edge[0]['msg'].startswith('café \u00ff'),
       'kinds: the trace has u64 max, INT64_MIN, cut integers, a negative char, invalid UTF-8', '%s' % edge[:1])
    check_spans(duck, out, recs, 4242, ('req_submit', 'req_complete', 'req'), 'kinds', declared_events(a.cli, trace))
    res = duck.q("SELECT key_value_metadata FROM parquet_file_metadata('%s/records.parquet')" % out,
                 "SELECT decode(key), decode(value) FROM parquet_kv_metadata('%s/spans.parquet')" % out)
    ok(any('simpletrace.ts' in str(row) and 'CLOCK_MONOTONIC' in str(row) for row in res[1].get('rows', [])),
       'kinds: the files say what ts means (key-value metadata simpletrace.ts)', '%s' % res)
    return trace, recs, pair


def realtime(a, duck, tmp, trace, pair):
    recs, _ = printed(a.cli, '--align=realtime', trace)
    out = os.path.join(tmp, 'real.pq')
    r = run(a.cli, 'export', '--format=parquet', '--align=realtime', pair, '-o', out, trace)
    res = duck.q("SELECT epoch_ns(ts), typeof(ts) FROM '%s/records.parquet'" % out,
                 "SELECT epoch_ns(begin_ts), epoch_ns(end_ts), typeof(begin_ts) FROM '%s/spans.parquet'" % out,
                 "SELECT epoch_ns(ts), typeof(ts) FROM '%s/events/note.parquet'" % out)
    got = [int(x[0]) for x in res[0].get('rows', [])]
    types = {x[1] for x in res[0].get('rows', [])} | {x[2] for x in res[1].get('rows', [])}
    ok(r.returncode == 0 and got == [x['timestamp_ns'] for x in recs] and got[0] > 1_700_000_000 * 10**9 and
       types == {'TIMESTAMP_NS'},
       '--align=realtime: ts a TIMESTAMP (ns) whose epoch ns are print --align=realtime\'s',
       '%s %s %s' % (r.stderr, res, [x['timestamp_ns'] for x in recs]))


def runtime_trace(a, duck, tmp):
    trace = os.path.join(tmp, 'app.trace')
    env = dict(os.environ, SIMPLETRACE='enable=*,file=' + trace)
    p = subprocess.run([a.app], env=env, capture_output=True, text=True, timeout=120)
    info = run(a.cli, 'info', trace).stdout
    field = {k.strip(): v.strip() for k, _, v in (line.partition(':') for line in info.splitlines())}
    recs, _ = printed(a.cli, trace)
    out = os.path.join(tmp, 'app.pq')
    r = run(a.cli, 'export', '--format=parquet', '-o', out, trace)
    ok(p.returncode == 0 and r.returncode == 0 and len(recs) > 20, 'runtime trace: exported', p.stderr + r.stderr)
    check_records(duck, out, recs, int(field.get('pid', 0)), field.get('program'), field.get('host'), 'runtime trace')
    check_events(duck, out, recs, 'runtime trace')
    check_spans(duck, out, recs, int(field.get('pid', 0)), None, 'runtime trace', declared_events(a.cli, trace))


def big(a, duck, tmp):
    trace = os.path.join(tmp, 'big.trace')
    n = 300_000
    big_trace(trace, n)
    out = os.path.join(tmp, 'big.pq')
    r = run(a.cli, 'export', '--format=parquet', '-o', out, trace)
    recs, _ = printed(a.cli, trace)
    lo, hi = recs[n // 3]['timestamp_ns'], recs[n // 3 + 1000]['timestamp_ns']
    res = duck.q("SELECT count(DISTINCT row_group_id) FROM parquet_metadata('%s/records.parquet')" % out,
                 "SELECT count(*), sum(ts), sum(tid) FROM '%s/records.parquet'" % out,
                 "SELECT count(*) FROM '%s/records.parquet' WHERE ts BETWEEN %d AND %d" % (out, lo, hi),
                 "SELECT name, count(*), sum(x), sum(y) FROM '%s/records.parquet' r JOIN "
                 "(SELECT ts, x, y FROM read_parquet('%s/events/*.parquet')) e USING (ts) GROUP BY name ORDER BY name"
                 % (out, out),
                 "SELECT count(*) FROM '%s/events/ev3.parquet' WHERE ts > %d" % (out, hi))
    groups = int(res[0]['rows'][0][0]) if 'rows' in res[0] else 0
    ok(r.returncode == 0 and groups >= 2, 'big: %d records in %d row groups' % (n, groups), r.stderr + str(res[0]))
    total = res[1].get('rows', [[0, 0, 0]])[0]
    ok([int(x) for x in total] == [n, sum(x['timestamp_ns'] for x in recs), sum(x['pid'] for x in recs)],
       'big: every row there (count, sums of ts and tid)', '%s' % res[1])
    ok(int(res[2].get('rows', [[0]])[0][0]) == 1001, 'big: a time range filter (statistics) counts what print has',
       '%s' % res[2])
    want = collections.defaultdict(lambda: [0, 0, 0])
    for x in recs:
        w = want[x['name']]
        w[0] += 1
        w[1] += x['args']['x']
        w[2] += x['args']['y']
    got = {row[0]: [int(v) for v in row[1:]] for row in res[3].get('rows', [])}
    ok(got == {k: v for k, v in want.items()}, 'big: typed columns joined with records agree with print, per event',
       '%s %s' % (res[3].get('error', ''), got))
    ok(int(res[4].get('rows', [[0]])[0][0]) == sum(1 for x in recs if x['name'] == 'ev3' and x['timestamp_ns'] > hi),
       'big: a filter on one event\'s file', '%s' % res[4])


def many_names(a, duck, tmp):
    """300 events taking turns, some in runs: dictionary indices 9 bits wide, RLE and bit-packed runs mixed."""
    t = Trace()
    for k in range(300):
        t.declare('e%03d(int x) "x %%d"' % k)
    ts = 100
    order = [k % 300 for k in range(1000)] + [7] * 50 + [k * 37 % 300 for k in range(523)] + [299] * 9
    for i, k in enumerate(order):
        t.record('e%03d' % k, ts + i, 1 + i % 3, i)
    trace, out = os.path.join(tmp, 'names.trace'), os.path.join(tmp, 'names.pq')
    t.save(trace)
    r = run(a.cli, 'export', '-q', '--format=parquet', '-o', out, trace)
    res, = duck.q("SELECT name, tid, pid, program, host FROM '%s/records.parquet'" % out)
    got = [tuple(x) for x in res.get('rows', [])]
    want = [('e%03d' % k, str(1 + i % 3), None, None, None) for i, k in enumerate(order)]
    ok(r.returncode == 0 and got == want, 'many names: %d rows of 300 events (9-bit dictionary indices), and a trace '
       'without a description: pid, program, host NULL' % len(want), '%s %s' % (r.stderr, res.get('error', got[:3])))


def fleet(a, duck, tmp):
    """64 traces of 4 hosts, each exported partitioned, gathered into one dataset."""
    exports = os.path.join(tmp, 'exports')
    os.makedirs(exports)
    want = {}
    failed = []
    for i in range(64):
        host, pid = 'host-%d' % (i % 4), 1000 + i // 4 * 7 + (i % 4)  # pids shared across hosts too
        if i % 4 == 3:
            pid = 1000 + i // 4 * 7  # the same pid as host-0's process: host tells them apart
        trace = os.path.join(tmp, 'fleet-%d.trace' % i)
        fleet_trace(trace, host, pid, 10_000 * i)
        recs, _ = printed(a.cli, trace)
        want[(host, pid)] = recs
        out = os.path.join(exports, 'e%02d' % i)
        r = run(a.cli, 'export', '-q', '--format=parquet', '--partition=host,pid', '-o', out, trace)
        if r.returncode != 0 or not os.path.exists(os.path.join(out, 'host=%s' % host, 'pid=%d' % pid,
                                                                'records.parquet')):
            failed.append(r.stderr)
    ok(not failed, 'fleet: 64 traces exported with --partition=host,pid into host=H/pid=P/', '%s' % failed[:2])
    for e in os.listdir(exports):  # gathered: every export's partitions side by side in one tree
        shutil.copytree(os.path.join(exports, e), os.path.join(tmp, 'one'), dirs_exist_ok=True)
    one = os.path.join(tmp, 'one')
    res = duck.q(
        "SELECT host, pid, count(*), sum(ts) FROM read_parquet('%s/**/records.parquet', hive_partitioning = true) "
        "GROUP BY ALL ORDER BY ALL" % one,
        "SELECT host, pid, name, count(*), sum(dur) FROM read_parquet('%s/**/spans.parquet', hive_partitioning = true) "
        "GROUP BY ALL ORDER BY ALL" % one,
        "SELECT host, pid, sum(x) FROM read_parquet('%s/**/events/ev.parquet', hive_partitioning = true) "
        "GROUP BY ALL ORDER BY ALL" % one,
        "SELECT count(*), count(DISTINCT (host, pid)) FROM read_parquet('%s/*/**/records.parquet', "
        "hive_partitioning = true)" % exports,
        "DESCRIBE SELECT * FROM read_parquet('%s/**/records.parquet', hive_partitioning = true)" % one)
    exp = sorted([[h, p, len(r), sum(x['timestamp_ns'] for x in r)] for (h, p), r in want.items()])
    got = [[row[0], int(row[1]), int(row[2]), int(row[3])] for row in res[0].get('rows', [])]
    ok(got == exp and len(got) == 64, 'fleet: one dataset: records per host and pid (from the paths) equal print\'s',
       '%s\n%s\n%s' % (res[0].get('error', ''), got[:3], exp[:3]))
    exp = sorted([[h, p, 'work', 3, 150] for (h, p) in want])
    got = [[row[0], int(row[1]), row[2], int(row[3]), int(row[4])] for row in res[1].get('rows', [])]
    ok(got == exp, 'fleet: spans per host and pid', '%s %s' % (res[1].get('error', ''), got[:3]))
    exp = sorted([[h, p, sum(x['args']['x'] for x in r if x['name'] == 'ev')] for (h, p), r in want.items()])
    got = [[row[0], int(row[1]), int(row[2])] for row in res[2].get('rows', [])]
    ok(got == exp, 'fleet: a typed event table across the dataset', '%s %s' % (res[2].get('error', ''), got[:3]))
    ok(res[3].get('rows') == [[str(64 * 9), '64']], 'fleet: the 64 export directories read as one with a glob',
       '%s' % res[3])
    cols = {row[0]: row[1] for row in res[4].get('rows', [])}
    ok(cols.get('host') == 'VARCHAR' and cols.get('pid') == 'BIGINT' and list(cols).count('pid') == 1,
       'fleet: host and pid come from the partition (left out of the files)', '%s' % cols)


def damaged(a, duck, tmp, trace, pair):
    data = open(trace, 'rb').read()
    cut = os.path.join(tmp, 'cut.trace')
    with open(cut, 'wb') as f:
        f.write(data[:len(data) - 30])  # inside the last record
    recs, p = printed(a.cli, cut)
    out = os.path.join(tmp, 'cut.pq')
    r = run(a.cli, 'export', '--format=parquet', pair, '-o', out, cut)
    ok(r.returncode == 1 and p.returncode == 1 and 'holds the records before that point' in r.stderr and
       len(recs) == 12, 'damaged: exit 1, the output holds the records before the damage', r.stderr)
    check_records(duck, out, recs, 4242, 'kinds', 'alpha', 'damaged')
    check_events(duck, out, recs, 'damaged')


def refused(a, tmp, trace):
    r = run(a.cli, 'export', '--format=parquet', '--partition=host,tid', '-o', os.path.join(tmp, 'x'), trace)
    ok(r.returncode == 2 and "bad --partition 'host,tid'" in r.stderr, 'a bad --partition is a usage error',
       r.stderr)
    r = run(a.cli, 'export', '--format=ctf', '--partition=pid', '-o', os.path.join(tmp, 'x'), trace)
    ok(r.returncode == 2 and '--partition is for parquet only' in r.stderr, '--partition with ctf is refused',
       r.stderr)
    other = os.path.join(tmp, 'other')
    os.makedirs(os.path.join(other, 'events'))
    open(os.path.join(other, 'events', 'notes.txt'), 'w').close()
    r = run(a.cli, 'export', '--format=parquet', '-o', other, trace)
    ok(r.returncode == 1 and "holds 'notes.txt'" in r.stderr and os.path.exists(os.path.join(other, 'events',
                                                                                                'notes.txt')),
       'a directory holding another file (in events/) is not replaced', r.stderr)
    again = os.path.join(tmp, 'again')
    r1 = run(a.cli, 'export', '-q', '--format=parquet', '--partition=host,pid', '-o', again, trace)
    r2 = run(a.cli, 'export', '-q', '--format=parquet', '-o', again, trace)
    left = sorted(os.listdir(again)) if os.path.isdir(again) else []
    ok(r1.returncode == 0 and r2.returncode == 0 and left == ['events', 'records.parquet', 'spans.parquet'],
       'an export over an earlier one replaces it, its partition directories included', r1.stderr + r2.stderr +
       str(left))
    ok(not [n for n in os.listdir(tmp) if '.tmp-' in n], 'no temporary directory left', str(os.listdir(tmp)))


def pandas(a, out):
    have = subprocess.run([a.debian_python, '-c', 'import pandas; import importlib.util as u; '
                           'print(u.find_spec("pyarrow") is not None or u.find_spec("fastparquet") is not None)'],
                          capture_output=True, text=True) if a.debian_python else None
    if not have or have.stdout.strip() != 'True':
        ok(True, 'pandas reads records.parquet # SKIP pandas with pyarrow or fastparquet is not installed '
           '(Debian 12 packages neither engine)')
        return
    r = subprocess.run([a.debian_python, '-c', 'import pandas, sys; f = pandas.read_parquet(sys.argv[1]); '
                        'print(len(f), list(f.columns))', os.path.join(out, 'records.parquet')],
                       capture_output=True, text=True)
    ok(r.returncode == 0 and 'args' in r.stdout, 'pandas reads records.parquet', r.stdout + r.stderr)


class Args:
    pass


def main():
    a = Args()
    a.cli, a.app, a.node, a.npm, a.cache, a.debian_python = (sys.argv[1:7] + [''] * 6)[:6]
    if not ok(a.node and a.npm, 'node and npm are installed (scripts/deps.sh check installs them)'):
        return done()
    err = duckdb_node.install(a.npm, a.cache)
    if not ok(not err, 'DuckDB (%s) installed for the test' % duckdb_node.PACKAGE, err):
        return done()
    duck = Duck(a.node, a.cache)
    with tempfile.TemporaryDirectory() as tmp:
        trace, recs, pair = kinds(a, duck, tmp)
        realtime(a, duck, tmp, trace, pair)
        runtime_trace(a, duck, tmp)
        big(a, duck, tmp)
        many_names(a, duck, tmp)
        fleet(a, duck, tmp)
        damaged(a, duck, tmp, trace, pair)
        refused(a, tmp, trace)
        pandas(a, os.path.join(tmp, 'kinds.pq'))
    return done()


if __name__ == '__main__':
    sys.exit(main())
