#!/usr/bin/env python3
"""The dependency rule (README "Architecture"), file by file: every
`#include "x.h"` in src/ names a header of the file's own part or of a part
that part may use; a few parts may use only some headers of another (the
drain only the rings' consumer API of core's ring headers), or not some
(reached through a public API instead), and a module's internal header
only its own part. Private header names are unique across src/ (they are
included by bare name) and never shadow a system header. TAP output.

Usage: check_includes.py SRC_DIR
"""
import os
import re
import sys

# part -> the parts it may include from (its own folder always).
ALLOWED = {
    'format': set(),
    'common': set(),
    'zseek': {'format', 'common'},
    'events': {'format', 'common'},
    'gen': {'events', 'format', 'common'},
    'runtime/core': {'format', 'common'},
    'runtime/backends': {'runtime/core', 'common'},
    'runtime/drain': {'runtime/core', 'zseek', 'format', 'common'},
    'runtime/control': {'runtime/drain', 'runtime/backends', 'runtime/core', 'format', 'common'},
    'runtime/monitor': {'runtime/control', 'runtime/drain', 'runtime/core', 'format', 'common'},
    'reader': {'events', 'format', 'common'},
    'recover': {'runtime/drain', 'zseek', 'format', 'common'},
    'uftrace': {'format', 'common'},
    'functrace': {'uftrace', 'format', 'common'},
    'export': {'uftrace', 'format', 'common'},
    'analysis': {'export', 'format', 'common'},
    'sql': {'export', 'format', 'common'},
    'cli': {'gen', 'events', 'export', 'analysis', 'recover', 'zseek', 'format', 'common', 'sql'},
    'python': {'analysis', 'common'},
}
# (part, used part) -> the only headers of the used part it may include.
ONLY = {
    ('runtime/backends', 'runtime/core'): {'config_part.h'},
    # The drain reaches the rings through their consumer API only (ring_consumer.h):
    # not struct st_ring and the list (ring_internal.h), nor the ring files (ring_file.h).
    ('runtime/drain', 'runtime/core'): {'ring_consumer.h', 'ring.h', 'registry.h', 'timestamp.h', 'describe.h',
                                        'config_part.h', 'config_core.h'},
    ('runtime/monitor', 'runtime/core'): {'config_part.h'},
    ('runtime/monitor', 'runtime/control'): {'control.h'},
    ('runtime/monitor', 'runtime/drain'): {'drain.h'},
    ('runtime/monitor', 'format'): {'monitor_proto.h'},
    ('recover', 'runtime/drain'): {'merge.h'},
    ('python', 'common'): {'growbuf.h'},
    # The module's answers (latency(), compare()) run analysis's functions, through its one header.
    ('python', 'analysis'): {'analysis.h'},
}
# (part, used part) -> headers of the used part it may not include: it goes through a public API instead.
NOT = {
    ('cli', 'format'): {'piece_format.h'},  # piece names: st_rotated_piece_name(), st_rotated_piece_number()
}
# header -> the one part whose files may include it, whatever ALLOWED says (a
# module's internals; the build also refuses ring_internal.h outside core/).
OWN = {
    'ring_internal.h': 'runtime/core',
}
SYSTEM_DIRS = ['/usr/include', '/usr/include/x86_64-linux-gnu', '/usr/local/include']
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def part_of(path, src):
    rel = os.path.relpath(path, src).split(os.sep)
    if rel[0] == 'runtime' and len(rel) > 2:
        return 'runtime/' + rel[1]
    return rel[0]


def main():
    src = sys.argv[1]
    headers = {}  # name -> [part, ...]
    files = []
    for root, _, names in os.walk(src):
        for name in sorted(names):
            path = os.path.join(root, name)
            if name.endswith('.h'):
                headers.setdefault(name, []).append(part_of(path, src))
            if name.endswith(('.c', '.h')):
                files.append(path)
    n = failed = 0

    def check(cond, what):
        nonlocal n, failed
        n += 1
        print(('ok' if cond else 'not ok') + ' %d - %s' % (n, what))
        failed += not cond

    for name, parts in sorted(headers.items()):
        if len(parts) > 1:
            check(False, '%s is the name of a header in %s: names must be unique' % (name, ', '.join(parts)))
        shadow = [d for d in SYSTEM_DIRS if os.path.exists(os.path.join(d, name))]
        if shadow:
            check(False, '%s shadows %s' % (name, shadow[0]))
    check(not any(p not in ALLOWED for ps in headers.values() for p in ps), 'every part is in the rule')
    for path in sorted(files):
        part = part_of(path, src)
        bad = []
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            owner = headers.get(os.path.basename(inc), ['?'])[0]
            if '/' in inc:
                bad.append('"%s" (private headers are included by bare name)' % inc)
            elif owner == '?':
                continue  # generated or a test's own
            elif inc in OWN and part != OWN[inc]:
                bad.append('"%s" (internal to %s)' % (inc, OWN[inc]))
            elif owner != part and owner not in ALLOWED.get(part, set()):
                bad.append('"%s" of %s' % (inc, owner))
            elif (part, owner) in ONLY and inc not in ONLY[(part, owner)]:
                bad.append('"%s" of %s (only %s)' % (inc, owner, ', '.join(sorted(ONLY[(part, owner)]))))
            elif inc in NOT.get((part, owner), set()):
                bad.append('"%s" of %s (through the public API)' % (inc, owner))
        check(not bad, '%s includes only what %s may use%s' %
              (os.path.relpath(path, src), part, (': ' + '; '.join(bad)) if bad else ''))
    print('1..%d' % n)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
