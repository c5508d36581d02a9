#!/usr/bin/env python3
"""simpletrace.sql() and sql_connect() in the Python module: the extension loaded into Python's
sqlite3, the tables of `simpletrace sql` made for every declared event; answers equal what this test
computes from `simpletrace print --format=json`; a DataFrame with pandas; errors raised with the
extension's message.

argv: SIMPLETRACE (PYTHONPATH finds the module in the build tree)
"""
import collections
import os
import sqlite3
import struct
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import done, ok, run  # noqa: E402
import traces  # noqa: E402

import simpletrace  # noqa: E402


def main():
    cli = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        events, trace = os.path.join(tmp, 'typed-events'), os.path.join(tmp, 'typed.bin')
        data, _ = traces.typed_trace()
        with open(events, 'w') as f:
            f.write(traces.EVENTS)
        with open(trace, 'wb') as f:
            f.write(data)
        recs, p = traces.print_json(run, cli, events, trace)
        ok(p.returncode == 0 and recs, 'print reads the typed trace', p.stderr)

        rows = simpletrace.sql(trace, 'SELECT name, count(*) FROM records GROUP BY name', events)
        ok(dict(rows) == collections.Counter(x['name'] for x in recs) and isinstance(rows, list) and
           all(isinstance(x, tuple) for x in rows), 'sql(): counts per event equal print\'s, as a list of tuples',
           repr(rows))
        rows = simpletrace.sql([trace], 'SELECT neg, flag, ptr, s, big FROM typed WHERE ts >= ?', [events],
                               params=(recs[1]['timestamp_ns'],))
        want = [(x['args']['neg'], int(x['args']['flag']),
                 int(x['args']['ptr'], 16) - (1 << 64 if int(x['args']['ptr'], 16) >> 63 else 0), x['args']['s'],
                 x['args']['big'] if x['args']['big'] < 1 << 63 else float(x['args']['big']))
                for x in recs if x['name'] == 'typed' and x['timestamp_ns'] >= recs[1]['timestamp_ns']]
        ok(rows == want and len(want) == 3, 'sql(): an event\'s typed columns, a parameter', repr(rows) + repr(want))
        rows = simpletrace.sql(trace, 'SELECT begin_ts, end_ts, key FROM spans', events, pairs=traces.PAIR)
        ok(sorted(rows) == traces.keyed_spans(recs, 'req_submit', 'req_complete', 'req'),
           'sql(pairs=...): the keyed spans print\'s records make', repr(rows[:2]))
        subs = {x['args']['req']: x['timestamp_ns'] for x in recs if x['name'] == 'req_submit'}
        rows = simpletrace.sql(trace, 'SELECT c.req, c.ts - s.ts FROM req_complete c JOIN req_submit s USING (req) '
                               'ORDER BY c.ts', events)
        ok(rows == [(x['args']['req'], x['timestamp_ns'] - subs[x['args']['req']]) for x in recs
                    if x['name'] == 'req_complete' and x['args']['req'] in subs], 'sql(): a join of two event tables',
           repr(rows[:3]))

        conn = simpletrace.sql_connect(trace, events)
        tables = sorted(n for (n,) in conn.execute("SELECT name FROM temp.sqlite_master WHERE type = 'table'"))
        conn.execute('CREATE TEMP TABLE mine AS SELECT name FROM records WHERE name = ?', ('tick',))
        n = conn.execute('SELECT count(*) FROM mine').fetchone()[0]
        conn.close()
        ok(tables == sorted(['records', 'events', 'processes', 'drops', 'spans'] + traces.NAMES) and
           n == sum(x['name'] == 'tick' for x in recs),
           'sql_connect(): a connection with every table, the caller\'s own beside them', repr(tables))

        try:
            import pandas  # noqa: F401
            frame = simpletrace.sql(trace, 'SELECT name, count(*) AS n FROM records GROUP BY name', events,
                                    dataframe=True)
            ok(list(frame.columns) == ['name', 'n'] and dict(zip(frame['name'], frame['n'])) ==
               collections.Counter(x['name'] for x in recs), 'sql(dataframe=True): a pandas DataFrame', repr(frame))
        except ImportError:
            ok(True, 'sql(dataframe=True) # SKIP pandas is not installed')

        for call, what, msg in (
                (lambda: simpletrace.sql(trace + '.missing', 'SELECT 1', events), 'a missing trace',
                 'No such file or directory'),
                (lambda: simpletrace.sql(trace, 'SELECT 1', events, pairs='nocolon'), 'a bad pairing rule', 'nocolon'),
                (lambda: simpletrace.sql(trace, 'SELECT * FROM nosuch', events), 'an unknown table',
                 'no such table: nosuch'),
                (lambda: simpletrace.sql(trace, 'SELEC 1', events), 'malformed SQL', 'syntax error')):
            try:
                call()
                ok(False, 'sql(): %s raises' % what)
            except sqlite3.OperationalError as e:
                ok(msg in str(e), 'sql(): %s raises sqlite3.OperationalError: %s' % (what, msg), str(e))
        try:
            simpletrace.sql(trace, 'SELECT 1', events, align='utc')
            ok(False, 'sql(align=utc) raises')
        except ValueError as e:
            ok('realtime' in str(e), 'sql(align=utc) raises ValueError', str(e))

        clash_events, clash = os.path.join(tmp, 'clash-events'), os.path.join(tmp, 'clash.bin')
        with open(clash_events, 'w') as f:
            f.write('Spans(int n) "n %d"\ntick(void) "tick"\n')
        with open(clash, 'wb') as f:
            f.write(struct.pack('<QQQ', 0xffffffffffffffff, 0xf2b177cb0aa429b4, 4) +
                    struct.pack('<QQI', 0, 0, 5) + b'Spans' + traces.record(0, 10, 1, traces.u64(7)))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            conn = simpletrace.sql_connect(clash, clash_events, no_default_pairs=True)
            n = conn.execute('SELECT count(*) FROM spans').fetchone()[0]
            conn.close()
        ok(n == 0 and any('event Spans has no table of its own' in str(x.message) for x in w),
           'sql_connect(): an event named like a fixed table gets none, with a warning', repr([str(x.message) for x in w]))
    return done()


if __name__ == '__main__':
    sys.exit(main())
