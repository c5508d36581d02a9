"""TAP for the Python end-to-end tests: ok() per check, done() for the plan and the exit status."""
import subprocess

_count = 0
_failed = 0


def ok(cond, what, detail=''):
    """One check: 'ok N - what', or 'not ok' with up to 20 lines of detail as comments."""
    global _count, _failed
    _count += 1
    print(('ok' if cond else 'not ok') + ' %d - %s' % (_count, what), flush=True)  # seen even if killed
    if not cond:
        _failed += 1
        for line in str(detail).splitlines()[:20]:
            print('#   ' + line)
    return cond


def done():
    """Prints the plan; the exit status: 1 when a check failed."""
    print('1..%d' % _count)
    return 1 if _failed else 0


def run(*argv, **kw):
    """Runs argv, its output captured as text; a command still running after 240 s (a hang) raises."""
    kw.setdefault('timeout', 240)
    return subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
