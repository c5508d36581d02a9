#!/usr/bin/env python3
"""`simpletrace sql` (issue 24): every answer equals what this test computes from `simpletrace print
--format=json` of the same traces (or, for the schema, from the trace-events text it wrote):
counts per event, time ranges (pushed into the reader, and not), a join of two event tables on a
key, spans (keyed across threads; nested on the runtime's traces), a group by process over several
traces, typed columns (negative, bool, pointer, string, u64 2^64-1), records.args; the output
formats read back by their consumers (json, csv); statements from standard input; SQLite's messages
for malformed SQL, unknown tables and columns (exit 1); a damaged trace (exit 1, rows before it).

argv: SIMPLETRACE EXPORT-APP
"""
import collections
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import done, ok, run  # noqa: E402
import traces  # noqa: E402

U64 = (1 << 64) - 1


def sql(a, *argv):
    return traces.sql_json(run, a.cli, *argv)


def expect_value(printed, column):
    """The SQL value print's JSON value stands for (sql.h's rules)."""
    if isinstance(printed, bool):
        return int(printed)
    if isinstance(printed, dict):  # a char
        return printed['value']
    if isinstance(printed, str) and printed.startswith('0x') and column == 'ptr':
        v = int(printed, 16)
        return v - (1 << 64) if v >= 1 << 63 else v
    if isinstance(printed, int) and printed > (1 << 63) - 1:
        return float(printed)
    return printed


def check_counts(a, inputs, recs, what):
    want = collections.Counter(r['name'] for r in recs)
    for q, how in (('SELECT name, count(*) AS n FROM records GROUP BY name', 'counted in one pass'),
                   ('SELECT name, count(*) AS n FROM records GROUP BY name ORDER BY n DESC, name', 'ordered'),
                   ('SELECT name, count(*) AS n, max(ts) FROM records GROUP BY name', 'sorted by SQLite'),
                   ('SELECT name, count(*) AS n FROM records WHERE ts >= 0 GROUP BY name', 'with a bound')):
        rows, r = sql(a, *inputs, '-e', q)
        got = {row['name']: row['n'] for row in rows}
        ok(r.returncode == 0 and got == want, '%s: counts per event equal print\'s (%s)' % (what, how),
           r.stderr + '\n%r\n%r' % (got, want))
    rows, r = sql(a, *inputs, '-e', 'SELECT DISTINCT name FROM records')
    ok(r.returncode == 0 and sorted(x['name'] for x in rows) == sorted(want), '%s: DISTINCT name' % what, r.stderr)


def check_ranges(a, inputs, recs, what):
    ts = [r['timestamp_ns'] for r in recs]
    lo, hi = ts[len(ts) // 5], ts[len(ts) * 3 // 4]
    ref = [(r['timestamp_ns'], r['name']) for r in recs if lo <= r['timestamp_ns'] < hi]
    cases = [('ts >= %d AND ts < %d' % (lo, hi), 'integers'),
             ('ts BETWEEN %.1f AND %.1f' % (lo - 0.5, hi - 0.5), 'reals'),
             ('+ts >= %d AND +ts < %d' % (lo, hi), 'not pushed (+ts)'),
             ('ts > %d - 1 AND ts <= %d - 1 AND ts < 1e30' % (lo, hi), 'expressions, a huge bound')]
    for cond, how in cases:
        rows, r = sql(a, *inputs, '-e', 'SELECT ts, name FROM records WHERE %s' % cond)
        got = [(x['ts'], x['name']) for x in rows]
        ok(r.returncode == 0 and sorted(got) == sorted(ref) and ref, '%s: a time range (%s) equals print\'s' % (what, how),
           r.stderr + '\n%r\n%r' % (got[:5], ref[:5]))
    for cond in ('ts = %d' % ts[3], 'ts < 0', 'ts > 1e19', 'ts >= %d AND ts < %d' % (hi, lo), "ts > 'x'"):
        rows, r = sql(a, *inputs, '-e', 'SELECT ts, name FROM records WHERE %s' % cond)
        base, _ = sql(a, *inputs, '-e', 'SELECT ts, name FROM records WHERE %s' % cond.replace('ts', '+ts'))
        ok(r.returncode == 0 and rows == base, '%s: WHERE %s: as SQLite alone finds it (%d rows)' % (what, cond, len(rows)),
           r.stderr + '\n%r\n%r' % (rows[:3], base[:3]))


def check_typed(a, inputs, recs):
    for name in ('typed', 'req_submit', 'req_complete', 'tick'):
        mine = [r for r in recs if r['name'] == name]
        rows, r = sql(a, *inputs, '-e', 'SELECT * FROM %s' % name)
        good = r.returncode == 0 and len(rows) == len(mine) and mine
        bad = []
        for row, rec in zip(rows, mine):
            want = {'ts': rec['timestamp_ns'], 'pid': None, 'tid': rec['pid']}
            want.update({k: expect_value(v, k) for k, v in rec['args'].items()})
            if row != want:
                bad.append((row, want))
        ok(good and not bad, '%s: every column typed as print types it (%d rows)' % (name, len(rows)),
           r.stderr + '\n%r' % bad[:2])
    rows, _ = sql(a, *inputs, '-e', 'SELECT neg, flag, ptr, big, wide, printf(\'0x%x\', ptr) AS hex, typeof(big) AS t '
                                    'FROM typed WHERE big = 18446744073709551615')
    ok(len(rows) == 1 and rows[0]['neg'] == -5 and rows[0]['flag'] == 1 and rows[0]['hex'] == '0xffff800012345678' and
       rows[0]['big'] == float(U64) and rows[0]['t'] == 'real' and rows[0]['wide'] == -(1 << 63),
       'typed: big = 18446744073709551615 finds u64-max (a REAL); negative int, bool 1, printf(0x%x, ptr) as print',
       repr(rows))
    rows, r = sql(a, *inputs, '-e', 'SELECT count(*) AS n FROM typed WHERE flag AND neg < 0 AND s LIKE \'%quoted%\'')
    ok(r.returncode == 0 and rows == [{'n': sum(1 for x in recs if x['name'] == 'typed' and x['args']['flag'] and
                                                 x['args']['neg'] < 0 and 'quoted' in x['args']['s'])}],
       'typed: a filter on bool, negative and string columns', r.stderr + repr(rows))
    rows, r = sql(a, *inputs, '-e', 'SELECT name, args FROM records')
    got = [(x['name'], json.loads(x['args'])) for x in rows]
    ok(r.returncode == 0 and got == [(x['name'], x['args']) for x in recs],
       'records.args is the JSON object print writes, for every record', r.stderr)
    rows, r = sql(a, *inputs, '-e', "SELECT json_extract(args, '$.s') AS s FROM records WHERE name = 'typed'")
    ok([x['s'] for x in rows] == [x['args']['s'] for x in recs if x['name'] == 'typed'],
       "json_extract(args, '$.s') gives print's strings", repr(rows))


def check_join(a, inputs, recs):
    subs = [r for r in recs if r['name'] == 'req_submit']
    comps = [r for r in recs if r['name'] == 'req_complete']
    ref = sorted((s['args']['req'], s['timestamp_ns'], c['timestamp_ns'], c['args']['status'])
                 for s in subs for c in comps if s['args']['req'] == c['args']['req'])
    rows, r = sql(a, *inputs, '-e', 'SELECT s.req AS req, s.ts AS s_ts, c.ts AS c_ts, c.status AS status '
                                    'FROM req_submit s JOIN req_complete c ON s.req = c.req')
    got = sorted((x['req'], x['s_ts'], x['c_ts'], x['status']) for x in rows)
    ok(r.returncode == 0 and got == ref and len(ref) == 21, 'a join of two event tables on a key equals print\'s',
       r.stderr + '\n%r\n%r' % (got[:3], ref[:3]))


def check_index(a, inputs):
    """A join's inner table is read once into an index (plan "K"): the rows SQLite finds joining copies of the
    tables in its own storage (the same affinities: '4096' = 4096 on a numeric column, not on a TEXT one)."""
    joins = [
        ('FROM req_submit s JOIN req_complete c ON s.req = c.req', 's.req, s.ts, c.ts'),
        ('FROM req_complete c JOIN req_submit s ON c.req = s.req', 's.req, s.ts, c.ts'),
        ('FROM records r JOIN tick t ON t.ts = r.ts', 'r.name, t.ts, t.tid'),
        ("FROM records r JOIN typed t ON t.c = json_extract(r.args, '$.c.value')", 'r.ts, t.ts, t.c'),
        ("FROM (SELECT '4096' AS k UNION ALL SELECT 4097.0 UNION ALL SELECT NULL UNION ALL SELECT x'00') v "
         'JOIN req_submit s ON s.req = v.k', 's.req, v.k'),
        ("FROM (SELECT 'hello' AS k UNION ALL SELECT 5 UNION ALL SELECT '') v JOIN typed t ON t.s = v.k", 't.ts, v.k'),
        ('FROM tick a JOIN tick b ON a.tid = b.tid AND b.ts > a.ts', 'a.ts, b.ts'),
        ("FROM records r JOIN spans s ON s.key = json_extract(r.args, '$.req') AND r.name = 'req_complete'",
         's.begin_ts, r.ts'),
    ]
    for join, cols in joins:
        q = 'SELECT %s %s' % (cols, join)
        plan, r = sql(a, '--pair=' + traces.PAIR, *inputs, '-e', 'EXPLAIN QUERY PLAN ' + q)
        rows, r2 = sql(a, '--pair=' + traces.PAIR, *inputs, '-e', q)
        # the same on plain copies of the tables (SQLite's own tables, the same column affinities)
        tables = sorted(set(re.findall(r'(?:FROM|JOIN) (\w+) \w', join)))
        copies = ''.join('CREATE TEMP TABLE ref_%s AS SELECT * FROM %s; ' % (t, t) for t in tables)
        ref = re.sub(r'(FROM|JOIN) (%s) ' % '|'.join(tables), r'\1 ref_\2 ', q)
        loop, r3 = sql(a, '--pair=' + traces.PAIR, *inputs, '-e', copies + ref)
        key = lambda x: json.dumps(x, sort_keys=True)  # noqa: E731
        ok(r.returncode == r2.returncode == r3.returncode == 0 and any(':K' in x['detail'] for x in plan) and
           sorted(rows, key=key) == sorted(loop, key=key) and (rows or 'v.k' in cols),
           'a join looks up an index (%s): %d rows, as SQLite finds them in its own tables' % (join[:60], len(rows)),
           r.stderr + r2.stderr + r3.stderr + repr(plan) + '\n%r\n%r' % (rows[:3], loop[:3]))


def check_keyed_spans(a, inputs, recs):
    ref = traces.keyed_spans(recs, 'req_submit', 'req_complete', 'req')
    rows, r = sql(a, '--pair=' + traces.PAIR, *inputs, '-e', 'SELECT * FROM spans')
    got = sorted((x['begin_ts'], x['end_ts'], x['key']) for x in rows)
    ok(r.returncode == 0 and got == ref and len(ref) == 20 and
       all(x['name'] == 'request' and x['dur'] == x['end_ts'] - x['begin_ts'] and x['tid'] == 100 and
           x['end_tid'] == 101 and x['pid'] is None for x in rows),
       'spans of a keyed rule (begun on one thread, ended on another) equal print\'s pairs', r.stderr + repr(rows[:2]))
    lat = run(a.cli, 'latency', '--format=json', '--pair=' + traces.PAIR, *inputs)
    counts = {s['name']: s['count'] for s in json.loads(lat.stdout)['spans']} if lat.returncode == 0 else {}
    ok(counts.get('request') == len(rows), 'as many spans as simpletrace latency measures', lat.stderr)
    cut = ref[len(ref) // 2][1]
    rows, r = sql(a, '--pair=' + traces.PAIR, *inputs, '-e', 'SELECT begin_ts, end_ts FROM spans WHERE end_ts <= %d' % cut)
    ok(r.returncode == 0 and sorted((x['begin_ts'], x['end_ts']) for x in rows) ==
       [(b, e) for b, e, _ in ref if e <= cut], 'spans ending by a time (pushed into the reader) equal print\'s',
       r.stderr)
    rows, r = sql(a, '--pair=' + traces.PAIR, *inputs, '-e', 'SELECT key FROM spans LIMIT 3')
    ok(r.returncode == 0 and len(rows) == 3, 'LIMIT stops the spans early', r.stderr)
    q = ("CREATE VIRTUAL TABLE temp.s2 USING simpletrace('%s', events='%s', table=spans, pair='%s');"
         "SELECT begin_ts, end_ts, key FROM s2" % (inputs[1], inputs[0], traces.PAIR))
    rows, r = sql(a, *inputs, '-e', q)
    ok(r.returncode == 0 and sorted((x['begin_ts'], x['end_ts'], x['key']) for x in rows) == ref,
       'the module makes a spans table of other rules (CREATE VIRTUAL TABLE ... USING simpletrace)', r.stderr)


def check_many_spans(a, tmp):
    """Spans by the thousand: handed over in batches from the engine's thread, stopped early by LIMIT."""
    events, trace = os.path.join(tmp, 'many-events'), os.path.join(tmp, 'many.bin')
    with open(events, 'w') as f:
        f.write(traces.MANY_EVENTS)
    with open(trace, 'wb') as f:
        f.write(traces.many_spans_trace(30000))
    recs, _ = traces.print_json(run, a.cli, events, trace)
    ref = traces.nested_spans(recs, {'work_begin': ('work_end', 'work')})
    rows, r = sql(a, events, trace, '-e', 'SELECT name, begin_ts, end_ts, tid FROM spans')
    ok(r.returncode == 0 and sorted((x['name'], x['begin_ts'], x['end_ts'], x['tid']) for x in rows) == ref and
       len(ref) == 30000, '30000 spans, every one as print\'s records make them', r.stderr)
    rows, r = sql(a, events, trace, '-e', 'SELECT begin_ts FROM spans LIMIT 5', '-e',
                  'SELECT count(*) AS n FROM (SELECT * FROM spans LIMIT 10000)', '-e',
                  'SELECT a.dur AS d FROM spans a JOIN spans b ON b.begin_ts = a.begin_ts LIMIT 3')
    ok(r.returncode == 0 and len(rows) == 5 + 1 + 3 and rows[5] == {'n': 10000},
       'LIMIT stops the spans\' engine (its thread) at any point, a join of spans with spans', r.stderr + repr(rows))


def check_drops_events(a, inputs, recs):
    drops = [r for r in recs if r['name'] == 'Dropped_Event']
    rows, r = sql(a, *inputs, '-e', 'SELECT * FROM drops')
    ok(r.returncode == 0 and rows == [{'ts': d['timestamp_ns'], 'tid': d['pid'], 'count': d['args']['num_events_dropped'],
                                        'pid': None} for d in drops] and drops,
       'drops: the dropped-events records print shows', r.stderr + repr(rows))
    rows, r = sql(a, *inputs, '-e', 'SELECT name, id, args, format FROM events')
    declared = [line for line in traces.EVENTS.replace('\\\n', '').splitlines() if line and not line.startswith('#')]
    want = []
    for i, line in enumerate(declared):
        name, rest = line.split('(', 1)
        params = rest.split(')', 1)[0]
        args = [] if params == 'void' else [p.strip().rsplit(' ', 1) for p in params.split(',')]
        want.append({'name': name, 'id': i, 'args': [{'name': n.lstrip('*'), 'type': t + (' *' if n.startswith('*') else '')}
                                                     for t, n in args],
                     'format': line.split(')', 1)[1].strip()})
    got = [dict(x, args=json.loads(x['args'])) for x in rows]
    ok(r.returncode == 0 and got[:len(want)] == want and got[-1]['name'] == 'Dropped_Event',
       'events: the declared events, their arguments and formats as the trace-events text says', r.stderr +
       '\n%r\n%r' % (got[:2], want[:2]))


def check_pushdown(a, inputs, recs):
    names = collections.Counter(r['name'] for r in recs)
    for cond, want in (("name IN ('tick', 'typed')", names['tick'] + names['typed']),
                       ("name = 'tick' AND name = 'typed'", 0), ("name = 'ti*'", 0), ("name = 'tick'", names['tick']),
                       ("name = 'TICK' COLLATE NOCASE", names['tick']), ("name IN ('tick') AND name IN ('tick', 'x')",
                                                                          names['tick'])):
        rows, r = sql(a, *inputs, '-e', 'SELECT count(*) AS n FROM records WHERE %s' % cond)
        ok(r.returncode == 0 and rows == [{'n': want}], 'WHERE %s: %d records' % (cond, want), r.stderr + repr(rows))
    rows, r = sql(a, '--events=tick,typed', *inputs, '-e',
                  "SELECT (SELECT count(*) FROM records WHERE name = 'req_submit') AS a, (SELECT count(*) FROM req_submit) "
                  "AS b, (SELECT count(*) FROM records) AS c, (SELECT count(*) FROM tick) AS d")
    ok(r.returncode == 0 and rows == [{'a': 0, 'b': 0, 'c': names['tick'] + names['typed'], 'd': names['tick']}],
       '--events applies to every table, with the names a query asks for', r.stderr + repr(rows))
    sel, _ = traces.print_json(run, a.cli, '--from=5us', '--to=20us', *inputs)
    rows, r = sql(a, '--from=5us', '--to=20us', *inputs, '-e', 'SELECT ts FROM records WHERE ts >= %d' %
                  sel[len(sel) // 2]['timestamp_ns'])
    ok(r.returncode == 0 and [x['ts'] for x in rows] == [x['timestamp_ns'] for x in sel[len(sel) // 2:]] and sel,
       '--from/--to and a ts bound together: their intersection', r.stderr)


def check_formats(a, inputs):
    q = "SELECT 'typed' AS name, ts, NULL AS none_, 1.5 AS half, x'00ff' AS blob, s FROM typed"
    rows, r = sql(a, *inputs, '-e', q)
    c = run(a.cli, 'sql', '--format=csv', *inputs, '-e', q)
    table = list(csv.reader(io.StringIO(c.stdout, newline='')))
    want = [['name', 'ts', 'none_', 'half', 'blob', 's']] + [
        [x['name'], str(x['ts']), '', '1.5', '00ff', x['s']] for x in rows]
    ok(c.returncode == 0 and table == want, 'csv: read back by Python\'s csv module, equal to the json rows (NULL empty, '
       'blobs hex, quotes and line breaks quoted)', c.stdout[:400] + c.stderr)
    ok(rows and rows[0]['none_'] is None and rows[0]['half'] == 1.5 and rows[0]['blob'] == '00ff',
       'json: NULL is null, REAL a number, a blob hex', repr(rows[:1]))
    t = run(a.cli, 'sql', *inputs, '-e', 'SELECT name, count(*) AS n FROM records GROUP BY name')
    lines = t.stdout.splitlines()
    ok(t.returncode == 0 and lines[0].split() == ['name', 'n'] and set(lines[1]) <= {'-', ' '} and
       len(lines) == 2 + 5 and len({len(line) for line in lines[1:]}) == 1,
       'table: a header, a rule, one aligned line per row', t.stdout)
    c = subprocess.run([a.cli, 'sql', '--format=csv', *inputs, '-e', 'SELECT * FROM tick WHERE 0'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=240)
    ok(c.returncode == 0 and c.stdout == b'ts,pid,tid\r\n', 'csv: a header even without rows, lines end in CRLF',
       repr(c.stdout))


def check_stdin(a, inputs, recs):
    r = run(a.cli, 'sql', '--format=json', *inputs, input="SELECT 1 AS one;\n-- a comment; still\nSELECT count(*) AS n\n"
            "  FROM tick; SELECT 'a;b' AS s\n")
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    ok(r.returncode == 0 and rows == [{'one': 1}, {'n': sum(x['name'] == 'tick' for x in recs)}, {'s': 'a;b'}],
       'statements from standard input, one per ;, the last without one', r.stdout + r.stderr)
    r = run(a.cli, 'sql', *inputs, input="SELECT 1;\nSELECT nosuchcol\n FROM tick;\nSELECT 2;\n")
    ok(r.returncode == 1 and 'no such column: nosuchcol' in r.stderr and 'standard input, line 2' in r.stderr and
       '2' not in r.stdout.split('\n', 3)[-1], 'standard input: an error names its line and stops (exit 1)',
       r.stdout + r.stderr)


def check_interactive(a, inputs):
    """On a terminal: a prompt, a continuation prompt, and an error that does not end the session."""
    import pty
    import select
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(a.cli, [a.cli, 'sql', '--format=csv', *inputs])
    os.write(fd, b"SELECT count(*) AS n\n FROM tick;\nSELECT nosuchcol FROM tick;\nSELECT 7 AS seven;\n")
    os.write(fd, b"\x04")  # end of input
    out = b''
    while True:
        ready, _, _ = select.select([fd], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    text = out.decode(errors='replace')
    ok(os.WEXITSTATUS(status) == 1 and 'sql> ' in text and '...> ' in text and 'no such column: nosuchcol' in text and
       'seven\r\n7' in text.replace('\r\r', '\r'),
       'a terminal: prompts, an error reported and the session goes on (exit 1 at its end)', text[-600:])


def check_errors(a, inputs):
    for q, msg, where in (('SELEC * FROM records', 'near "SELEC": syntax error', 'line 1, column 1'),
                          ('SELECT * FROM nosuch', 'no such table: nosuch', None),
                          ('SELECT a.nope FROM records a', 'no such column: a.nope', 'column 8'),
                          ('SELECT * FROM records WHERE', 'incomplete input', None),
                          ("CREATE VIRTUAL TABLE t USING simpletrace('%s', events='%s', table=nosuch)" %
                           (inputs[1], inputs[0]), "no table 'nosuch'", None)):
        r = run(a.cli, 'sql', *inputs, '-e', q, '-e', 'SELECT 42')
        ok(r.returncode == 1 and msg in r.stderr and (where is None or where in r.stderr) and '42' not in r.stdout,
           '%r: SQLite\'s message, where it points, exit 1, nothing after' % q, r.stdout + r.stderr)
    r = run(a.cli, 'sql', inputs[0], '-', '-e', 'SELECT 1')
    ok(r.returncode == 2 and 'standard input' in r.stderr, 'a trace from standard input is refused (exit 2)', r.stderr)
    r = run(a.cli, 'sql', '--format=xml', *inputs, '-e', 'SELECT 1')
    ok(r.returncode == 2 and "unknown format 'xml'" in r.stderr, 'an unknown --format (exit 2)', r.stderr)
    r = run(a.cli, 'sql', '--pair=nocolon', *inputs, '-e', 'SELECT 1')
    ok(r.returncode == 2, 'a bad --pair (exit 2)', r.stderr)


def check_damaged(a, tmp, events, data):
    cut = os.path.join(tmp, 'cut.bin')
    with open(cut, 'wb') as f:
        f.write(data[:len(data) * 2 // 3 + 5])
    recs, p = traces.print_json(run, a.cli, events, cut)
    rows, r = sql(a, events, cut, '-e', 'SELECT ts, name FROM records')
    ok(p.returncode == 1 and r.returncode == 1 and 'byte offset' in r.stderr and
       [(x['ts'], x['name']) for x in rows] == [(x['timestamp_ns'], x['name']) for x in recs] and recs,
       'a damaged trace: the records before the damage, then where it is (exit 1)', r.stderr)
    rows, r = sql(a, '--pair=' + traces.PAIR, events, cut, '-e', 'SELECT count(*) AS n FROM spans')
    ok(r.returncode == 1 and 'byte offset' in r.stderr, 'a damaged trace: the spans table says so too (exit 1)',
       r.stderr)


def check_clash(a, tmp):
    events, trace = os.path.join(tmp, 'clash-events'), os.path.join(tmp, 'clash.bin')
    with open(events, 'w') as f:
        f.write('drops(int n) "n %d"\nRecords(int n) "n %d"\nok_event(int ts, int TS_arg) "%d %d"\n')
    import struct
    b = struct.pack('<QQQ', 0xffffffffffffffff, 0xf2b177cb0aa429b4, 4)
    for i, n in enumerate(('drops', 'Records', 'ok_event')):
        b += struct.pack('<QQI', 0, i, len(n)) + n.encode()
    b += traces.record(0, 10, 5, traces.u64(3)) + traces.record(2, 20, 5, traces.u64(-1) + traces.u64(2))
    with open(trace, 'wb') as f:
        f.write(b)
    rows, r = sql(a, events, trace, '-e', 'SELECT count(*) AS n FROM drops', '-e', 'SELECT * FROM ok_event')
    ok(r.returncode == 0 and rows == [{'n': 0}, {'ts': 20, 'pid': None, 'tid': 5, 'ts_arg': -1, 'TS_arg_arg': 2}] and
       'event drops has no table of its own' in r.stderr and 'event Records has no table' in r.stderr,
       'events named like a fixed table get none (a warning); arguments named like a column get _arg',
       r.stdout + r.stderr)
    q = "CREATE VIRTUAL TABLE temp.d USING simpletrace('%s', events='%s', event=drops); SELECT n FROM d" % (trace, events)
    rows, r = sql(a, events, trace, '-e', q)
    ok(r.returncode == 0 and rows == [{'n': 3}], 'the module makes its table (event=drops)', r.stderr)


def check_processes(a, tmp):
    paths, pids = [], []
    for k in range(3):
        p = os.path.join(tmp, 'app%d.trace' % k)
        r = run(a.app, env=dict(os.environ, SIMPLETRACE='enable=*,file=%s' % p))
        paths.append(p)
        pids.append(int(r.stdout.split()[1]) if r.returncode == 0 else -1)
    recs, p = traces.print_json(run, a.cli, *paths)
    want = collections.Counter((x['process']['pid'], x['process']['program']) for x in recs)
    rows, r = sql(a, *paths, '-e', 'SELECT pid, program, count(*) AS n FROM records GROUP BY pid, program')
    got = {(x['pid'], x['program']): x['n'] for x in rows}
    ok(p.returncode == 0 and r.returncode == 0 and got == want and sorted(pid for pid, _ in got) == sorted(pids),
       'a group by process over three traces equals print\'s', r.stderr + '\n%r\n%r' % (got, want))
    hosts = [json.loads(run(a.cli, 'info', '--format=json', x).stdout)['host'] for x in paths]
    rows, r = sql(a, *paths, '-e', 'SELECT pid, program, host, trace FROM processes')
    ok(r.returncode == 0 and [(x['pid'], x['program'], x['host'], x['trace']) for x in rows] ==
       [(pid, 'export_app', h, path) for pid, h, path in zip(pids, hosts, paths)],
       'processes: one row per trace, as its description (and info) says', r.stderr + repr(rows))
    rows, r = sql(a, *paths, '-e', 'SELECT DISTINCT host FROM records')
    ok(r.returncode == 0 and [x['host'] for x in rows] == sorted(set(hosts)), 'records.host', r.stderr)
    ref = traces.nested_spans(recs, {'request_enter': ('request_exit', 'request'), 'step_begin': ('step_end', 'step')})
    rows, r = sql(a, *paths, '-e', 'SELECT name, begin_ts, end_ts, tid, pid FROM spans')
    got = sorted((x['name'], x['begin_ts'], x['end_ts'], x['tid']) for x in rows)
    ok(r.returncode == 0 and got == ref and len(ref) == 3 * (5 + 14) and all(x['pid'] in pids for x in rows),
       'spans of nested begin/end events (the built-in rules) equal print\'s, per thread of each process',
       r.stderr + '\n%r\n%r' % (got[:3], ref[:3]))
    rows, r = sql(a, '--align=realtime', *paths, '-e', 'SELECT min(ts) AS t FROM records')
    wall, _ = traces.print_json(run, a.cli, '--align=realtime', *paths)
    ok(r.returncode == 0 and rows == [{'t': min(x['timestamp_ns'] for x in wall)}] and rows[0]['t'] > 10**18,
       '--align=realtime: ts on the wall clock, as print\'s', r.stderr)


def main():
    if len(sys.argv) != 3:
        print('usage: cli_test.py SIMPLETRACE EXPORT-APP', file=sys.stderr)
        return 2

    class A:
        cli, app = sys.argv[1], sys.argv[2]
    a = A()
    with tempfile.TemporaryDirectory() as tmp:
        events, trace = os.path.join(tmp, 'typed-events'), os.path.join(tmp, 'typed.bin')
        data, _ = traces.typed_trace()
        with open(events, 'w') as f:
            f.write(traces.EVENTS)
        with open(trace, 'wb') as f:
            f.write(data)
        inputs = [events, trace]
        recs, p = traces.print_json(run, a.cli, *inputs)
        ok(p.returncode == 0 and len(recs) > 80, 'print reads the typed trace', p.stderr)
        check_counts(a, inputs, recs, 'typed trace')
        check_ranges(a, inputs, recs, 'typed trace')
        check_typed(a, inputs, recs)
        check_join(a, inputs, recs)
        check_index(a, inputs)
        check_keyed_spans(a, inputs, recs)
        check_drops_events(a, inputs, recs)
        check_many_spans(a, tmp)
        check_pushdown(a, inputs, recs)
        check_formats(a, inputs)
        check_stdin(a, inputs, recs)
        check_interactive(a, inputs)
        check_errors(a, inputs)
        check_damaged(a, tmp, events, data)
        check_clash(a, tmp)
        check_processes(a, tmp)
    return done()


if __name__ == '__main__':
    sys.exit(main())
