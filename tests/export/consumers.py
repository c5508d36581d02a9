"""The real consumers the export tests check formats with, from the arguments meson passes (ex_checks)."""
import sys

from tap import ok

CHECKS = ('python', 'bt2_python', 'protoc', 'proto', 'babeltrace', 'check_perfetto', 'check_ctf', 'check_chrome')
PACKAGES = {'uftrace': 'uftrace', 'python': 'python3', 'bt2_python': 'python3-bt2', 'protoc': 'protoc',
            'babeltrace': 'babeltrace2'}


class Tools:
    """One attribute per argument: the names given first, then CHECKS."""


def consumers(first):
    """sys.argv[1:] named after first, then CHECKS; None after a failed check when a tool is missing."""
    t = Tools()
    for name, value in zip(first + CHECKS, sys.argv[1:]):
        setattr(t, name, value)
    missing = [pkg for name, pkg in PACKAGES.items() if name in first + CHECKS and not getattr(t, name, '')]
    return t if ok(not missing, 'tools installed (CI installs them)', 'missing %s' % missing) else None
