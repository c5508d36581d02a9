#!/usr/bin/env python3
"""The include checker refuses what it is there to refuse: a copy of src/
with one forbidden include added at a time must fail check_includes.py
with a line naming it, and the unchanged copy must pass (so the failures
are the additions'). The ring's boundary first: the drain may reach the
rings only through ring_consumer.h. TAP output.

Usage: test_boundaries.py CHECKER SRC_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

# (file under src/, header added, what the checker's line must say)
CASES = [
    ('runtime/drain/writer.c', 'ring_internal.h', 'internal to runtime/core'),
    ('runtime/drain/snapshot.c', 'ring_file.h', '(only '),
    ('runtime/control/init.c', 'ring_internal.h', 'internal to runtime/core'),
    ('runtime/monitor/monitor.c', 'ring_consumer.h', '(only config_part.h)'),
    # The compressed traces' writer sits below its users: the runtime's drain is not one of its parts.
    ('zseek/zwrite.c', 'drain.h', 'of runtime/drain'),
]


def run(checker, src):
    p = subprocess.run([sys.executable, checker, src], capture_output=True, text=True)
    return p.returncode, [l for l in p.stdout.splitlines() if l.startswith('not ok')]


def main():
    checker, src = sys.argv[1], sys.argv[2]
    n = failed = 0

    def check(cond, what):
        nonlocal n, failed
        n += 1
        print(('ok' if cond else 'not ok') + ' %d - %s' % (n, what))
        failed += not cond

    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, 'src')
        shutil.copytree(src, copy, ignore=shutil.ignore_patterns('*.py[co]', '__pycache__'))
        rc, bad = run(checker, copy)
        check(rc == 0 and not bad, 'the unchanged tree passes (%s)' % ('; '.join(bad) or 'clean'))
        for path, header, says in CASES:
            target = os.path.join(copy, path)
            with open(target, encoding='utf-8') as f:
                text = f.read()
            with open(target, 'w', encoding='utf-8') as f:
                f.write('#include "%s"\n' % header + text)
            rc, bad = run(checker, copy)
            # the checker's own line, without its "not ok N - " (it would read as this test's)
            named = [l.split(' - ', 1)[1] for l in bad if os.path.basename(path) in l and header in l and says in l]
            check(rc != 0 and len(named) == 1,
                  '%s including %s is refused (%s)' % (path, header, named[0] if named else 'passed' if not bad else
                                                      'other lines: ' + '; '.join(bad)))
            with open(target, 'w', encoding='utf-8') as f:
                f.write(text)
    print('1..%d' % n)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
