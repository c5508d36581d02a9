"""DuckDB for the Parquet tests: the npm package @duckdb/node-api on the machine's Node.js, installed by
the test itself into a cache directory of the build tree (never the source tree), once, under a lock."""
import fcntl
import json
import os
import subprocess
import tempfile

PACKAGE = '@duckdb/node-api@1.5.6-r.1'
HERE = os.path.dirname(os.path.abspath(__file__))


def install(npm, cache):
    """Installs PACKAGE under cache unless it is there. Returns '' or what went wrong."""
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, '.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two tests may ask at once
        if os.path.exists(os.path.join(cache, 'node_modules', '@duckdb', 'node-api', 'package.json')):
            return ''
        r = subprocess.run([npm, 'install', '--prefix', cache, '--no-audit', '--no-fund', '--no-save',
                            '--no-package-lock', PACKAGE], capture_output=True, text=True, timeout=600)
        return '' if r.returncode == 0 else 'npm install %s failed:\n%s%s' % (PACKAGE, r.stdout, r.stderr)


def query(node, cache, statements):
    """Runs each SQL statement; a list of {"columns","types","rows"} or {"error"} (None if DuckDB did not run)."""
    with tempfile.NamedTemporaryFile('w', suffix='.json', delete=False) as f:
        json.dump(statements, f)
    try:
        r = subprocess.run([node, os.path.join(HERE, 'duckdb_query.cjs'), cache, f.name], capture_output=True,
                           text=True, timeout=600)
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    return [json.loads(line) for line in r.stdout.splitlines()]
