#!/usr/bin/env python3
"""The SQLite extension libsimpletrace_sqlite.so, loaded by its real consumers: Debian's sqlite3
shell (.load, then CREATE VIRTUAL TABLE ... USING simpletrace(...)) and Python's sqlite3 module
(Connection.load_extension()). Every table's rows equal what this test computes from `simpletrace
print --format=json`; each bad module argument is refused at CREATE with a message naming it; a
table kept in a database file works again when the file is opened anew.

argv: SIMPLETRACE SQLITE3 EXTENSION
"""
import collections
import json
import os
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tap import done, ok, run  # noqa: E402
import traces  # noqa: E402


def shell(a, *statements, db=':memory:'):
    """Runs the statements in Debian's sqlite3 after .load: (rows of every statement as dicts, the run)."""
    r = run(a.sqlite3, '-bail', '-json', db, '.load ' + a.ext, *statements)
    rows = []
    for chunk in r.stdout.replace(']\n[', ']\x00[').split('\x00'):
        if chunk.strip():
            rows += json.loads(chunk)
    return rows, r


def create(name, *args):
    return 'CREATE VIRTUAL TABLE %s USING simpletrace(%s)' % (name, ', '.join(args))


def quote(text):
    return "'" + text.replace("'", "''") + "'"


def check_shell(a, events, trace, recs):
    src = [quote(trace), 'events=' + quote(events)]
    rows, r = shell(a, create('r', *src), 'SELECT name, count(*) AS n FROM r GROUP BY name')
    ok(r.returncode == 0 and {x['name']: x['n'] for x in rows} == collections.Counter(x['name'] for x in recs),
       'sqlite3: .load, CREATE VIRTUAL TABLE r USING simpletrace(TRACE, events=...): counts per event equal print\'s',
       r.stderr)
    rows, r = shell(a, create('t', *src, 'table=typed'), 'SELECT * FROM t')
    typed = [x for x in recs if x['name'] == 'typed']
    want = [{'ts': x['timestamp_ns'], 'pid': None, 'tid': x['pid'], 'neg': x['args']['neg'],
             'flag': int(x['args']['flag']), 'ptr': int(x['args']['ptr'], 16) - (1 << 64 if int(x['args']['ptr'], 16) >> 63 else 0),
             's': x['args']['s'], 'big': x['args']['big'] if x['args']['big'] < 1 << 63 else float(x['args']['big']),
             'wide': x['args']['wide'], 'c': x['args']['c']['value'], 'byte': x['args']['byte']} for x in typed]
    ok(r.returncode == 0 and rows == want, 'sqlite3: an event\'s table (table=typed): every typed column as print\'s',
       r.stderr + '\n%r\n%r' % (rows[:1], want[:1]))
    ref = traces.keyed_spans(recs, 'req_submit', 'req_complete', 'req')
    rows, r = shell(a, create('s', *src, 'table=spans', 'pair=' + quote(traces.PAIR)), 'SELECT * FROM s')
    ok(r.returncode == 0 and sorted((x['begin_ts'], x['end_ts'], x['key']) for x in rows) == ref and ref,
       'sqlite3: table=spans with pair=: the keyed spans print\'s records make', r.stderr)
    rows, r = shell(a, create('d', *src, 'table=drops'), 'SELECT ts, count FROM d')
    ok(r.returncode == 0 and rows == [{'ts': x['timestamp_ns'], 'count': x['args']['num_events_dropped']}
                                       for x in recs if x['name'] == 'Dropped_Event'],
       'sqlite3: table=drops', r.stderr)
    rows, r = shell(a, create('e', *src, 'table=events'), 'SELECT name FROM e')
    ok(r.returncode == 0 and [x['name'] for x in rows] == traces.NAMES + ['Dropped_Event'], 'sqlite3: table=events',
       r.stderr)
    lo = recs[10]['timestamp_ns']
    rows, r = shell(a, create('r', *src, 'select=' + quote('tick,typed'), "from='5us'"),
                    'SELECT ts, name FROM r WHERE ts >= %d' % lo)
    start = recs[0]['timestamp_ns'] + 5000
    ok(r.returncode == 0 and [(x['ts'], x['name']) for x in rows] ==
       [(x['timestamp_ns'], x['name']) for x in recs if x['name'] in ('tick', 'typed') and
        x['timestamp_ns'] >= max(lo, start)], 'sqlite3: select= and from= filter as --events and --from do', r.stderr)
    rows, r = shell(a, create('t', *src, 'table=typed'), 'SELECT count(*) AS n FROM t',
                    'SELECT simpletrace_reads() AS reads')
    reads = json.loads(rows[1]['reads']) if len(rows) == 2 else {}
    ok(r.returncode == 0 and rows[0] == {'n': len(typed)} and reads.get('scans') == 1 and
       reads.get('records') == len(recs) and reads.get('skipped') == len(recs) - len(typed),
       'sqlite3: simpletrace_reads() counts what the scan read (the other events skipped undecoded)',
       r.stderr + repr(rows))


def check_args(a, events, trace):
    src = [quote(trace), 'events=' + quote(events)]
    bad = [
        ((quote(trace), 'events=' + quote(events), 'colour=red'), "unknown argument 'colour='"),
        ((quote(trace) + " 'more'",), 'text after the closing quote'),
        (('events=' + quote(events),), 'no trace given'),
        (tuple(src) + ('table=nosuch',), "no table 'nosuch'"),
        (tuple(src) + ('tid=-1',), "bad tid '-1'"),
        (tuple(src) + ("pid='12x'",), "bad pid '12x'"),
        (tuple(src) + ('from=soon',), "bad from 'soon'"),
        (tuple(src) + ('align=utc',), "bad align 'utc'"),
        (tuple(src) + ("pair='nocolon'",), 'nocolon'),
        (tuple(src) + ('table=records', 'table=spans'), 'table= given twice'),
        ((quote(trace + '.missing'), 'events=' + quote(events)), 'No such file or directory'),
        ((quote(trace), 'events=' + quote(events + '.missing')), 'No such file or directory'),
        ((quote(trace),), 'carries no event declarations'),
        ((quote(events), 'events=' + quote(events)), 'begins with text'),
    ]
    for args, msg in bad:
        rows, r = shell(a, create('x', *args), 'SELECT 42 AS n')
        ok(r.returncode != 0 and 'simpletrace: ' in r.stderr and msg in r.stderr and not rows,
           'sqlite3: simpletrace(%s) is refused at CREATE: %s' % (', '.join(args)[-60:], msg), r.stdout + r.stderr)


def check_file_db(a, tmp, events, trace, recs):
    db = os.path.join(tmp, 'kept.db')
    rows, r = shell(a, create('r', quote(trace), 'events=' + quote(events)), 'SELECT count(*) AS n FROM r', db=db)
    rows2, r2 = shell(a, 'SELECT count(*) AS n FROM r', db=db)
    ok(r.returncode == 0 and r2.returncode == 0 and rows == rows2 == [{'n': len(recs)}],
       'sqlite3: a table kept in a database file reads the trace again when the file is opened anew',
       r.stderr + r2.stderr)


def check_python(a, events, trace, recs):
    conn = sqlite3.connect(':memory:')
    try:
        conn.enable_load_extension(True)
        conn.load_extension(a.ext)
        conn.execute(create('r', quote(trace), 'events=' + quote(events)))
        got = dict(conn.execute('SELECT name, count(*) FROM r GROUP BY name').fetchall())
        ok(got == collections.Counter(x['name'] for x in recs),
           "Python's sqlite3: load_extension(), CREATE VIRTUAL TABLE: counts per event equal print's", repr(got))
        got = [json.loads(x) for (x,) in conn.execute('SELECT args FROM r')]
        ok(got == [x['args'] for x in recs], "Python's sqlite3: records.args equal print's", repr(got[:2]))
        try:
            conn.execute(create('bad', quote(trace), 'colour=red'))
            ok(False, "Python's sqlite3: a bad argument raises")
        except sqlite3.OperationalError as e:
            ok("unknown argument 'colour='" in str(e), "Python's sqlite3: a bad argument raises OperationalError naming it",
               str(e))
    finally:
        conn.close()


def main():
    if len(sys.argv) != 4:
        print('usage: extension_test.py SIMPLETRACE SQLITE3 EXTENSION', file=sys.stderr)
        return 2

    class A:
        cli, sqlite3, ext = sys.argv[1:4]
    a = A()
    if not ok(bool(a.sqlite3), "Debian's sqlite3 shell is installed (apt-get install sqlite3; CI installs it)"):
        return done()
    with tempfile.TemporaryDirectory() as tmp:
        events, trace = os.path.join(tmp, "typed events"), os.path.join(tmp, "it's typed.bin")
        data, _ = traces.typed_trace()
        with open(events, 'w') as f:
            f.write(traces.EVENTS)
        with open(trace, 'wb') as f:
            f.write(data)
        recs, p = traces.print_json(run, a.cli, events, trace)
        ok(p.returncode == 0 and recs, 'print reads the typed trace', p.stderr)
        check_shell(a, events, trace, recs)
        check_args(a, events, trace)
        check_file_db(a, tmp, events, trace, recs)
        check_python(a, events, trace, recs)
    return done()


if __name__ == '__main__':
    sys.exit(main())
