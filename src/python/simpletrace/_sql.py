"""SQL on traces from Python: Python's own sqlite3 with simpletrace's SQLite extension loaded
(libsimpletrace_sqlite.so, src/sql/), so the tables are those of `simpletrace sql`, read from the
files as a query runs.

The extension is looked up next to this file (the build tree's copy), then in the library directory
the module was installed with (_install.LIBDIR), then by the loader's search path.
"""
import os
import sqlite3
import warnings

from . import _install

_EXTENSION = 'libsimpletrace_sqlite.so'
_FIXED = ('records', 'events', 'processes', 'drops', 'spans')


def _extension():
    for d in (os.path.dirname(os.path.abspath(__file__)), _install.LIBDIR):
        path = os.path.join(d, _EXTENSION)
        if os.path.exists(path):
            return path
    return _EXTENSION[:-3]  # dlopen()'s search: LD_LIBRARY_PATH, ld.so.cache


def _quote(text):
    """text as an SQL string literal (a module argument)."""
    return "'" + str(text).replace("'", "''") + "'"


def _paths(value):
    if value is None:
        return []
    return [os.fspath(value)] if isinstance(value, (str, bytes, os.PathLike)) else [os.fspath(v) for v in value]


def sql_connect(traces, events=None, *, pairs=(), no_default_pairs=False, align=None):
    """A sqlite3.Connection (in memory) whose tables read traces: those of `simpletrace sql`.

    records(ts, name, pid, tid, program, host, args), one table per declared event (ts, pid, tid and
    its arguments as typed columns), events, processes, drops and spans (README "SQL"). traces: a path
    or a list of paths (read as one, merged by timestamp); events: trace-events path(s) (None: the
    declarations the traces carry); pairs: the pairing rules of the spans table, "BEGIN:END[=NAME][@ARG]",
    as simpletrace latency --pair; align='realtime': timestamps on the wall clock. The tables are
    temporary ones of this connection: the caller may add its own and query them together. Raises
    sqlite3.OperationalError with the extension's message (a missing file, a bad trace).
    """
    paths = [p.decode() if isinstance(p, bytes) else p for p in _paths(traces)]
    if not paths:
        raise ValueError('simpletrace.sql: no trace given')
    if align not in (None, 'realtime'):
        raise ValueError("simpletrace.sql: align is None or 'realtime', not %r" % (align,))
    args = [_quote(p) for p in paths]
    args += ['events=' + _quote(e.decode() if isinstance(e, bytes) else e) for e in _paths(events)]
    args += ['pair=' + _quote(p) for p in ([pairs] if isinstance(pairs, str) else pairs)]
    if no_default_pairs:
        args.append('no_default_pairs')
    if align:
        args.append('align=realtime')
    conn = sqlite3.connect(':memory:')
    try:
        if not hasattr(conn, 'enable_load_extension'):
            raise RuntimeError('simpletrace.sql: this Python\'s sqlite3 cannot load extensions (built without '
                               'them); Debian\'s /usr/bin/python3 can')
        conn.enable_load_extension(True)
        try:
            conn.load_extension(_extension())
        except sqlite3.OperationalError as e:
            raise sqlite3.OperationalError('simpletrace.sql: cannot load the SQLite extension %s (simpletrace built '
                                           'with -Dsql=disabled, or not installed): %s' % (_EXTENSION, e)) from e
        conn.enable_load_extension(False)

        def create(name, which):
            conn.execute('CREATE VIRTUAL TABLE temp."%s" USING simpletrace(%s)'
                         % (name.replace('"', '""'), ', '.join(args + [which])))
        for name in _FIXED:
            create(name, 'table=' + name)
        taken = set(_FIXED)
        for (name,) in conn.execute("SELECT name FROM temp.events WHERE name != 'Dropped_Event'").fetchall():
            if name.lower() in taken:  # SQL compares table names ignoring case
                warnings.warn('simpletrace.sql: event %s has no table of its own: the name is taken' % name)
                continue
            taken.add(name.lower())
            create(name, 'event=' + _quote(name))
    except BaseException:
        conn.close()
        raise
    return conn


def sql(traces, query, events=None, *, params=(), pairs=(), no_default_pairs=False, align=None, dataframe=False):
    """Runs query (one SQLite statement, with ? or :name params) on traces' tables (sql_connect()).

    Returns the rows as a list of tuples; with dataframe=True, a pandas DataFrame with the query's
    column names. Nothing is imported first: the tables read the files as the query runs.
    """
    conn = sql_connect(traces, events, pairs=pairs, no_default_pairs=no_default_pairs, align=align)
    try:
        cur = conn.execute(query, params)
        rows = cur.fetchall()
        columns = [d[0] for d in cur.description] if cur.description else []
    finally:
        conn.close()
    if not dataframe:
        return rows
    from . import _optional
    return _optional('pandas', 'sql(dataframe=True)').DataFrame(rows, columns=columns)
