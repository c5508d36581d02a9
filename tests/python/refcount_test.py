#!/usr/bin/env python3
"""Reference counts and memory over a million records: every way of reading
gives back what it took.

Each way (Records with their values, QEMU's tuples, Analyzer2 methods and
catchall, the deprecated Analyzer's three arities and catchall(event, rec),
an own _process_event, latency(), compare(), numpy columns) reads the same 1M-record trace under
tracemalloc: afterwards the memory Python holds is what it was before (a
leaked object per record would be 28 MB or more; the allowance is 256 KiB),
the peak stays small (the records are not kept), the reference counts of
the Event objects, analyzers and their methods are unchanged, and with
a debug interpreter sys.gettotalrefcount() too.

argv: [RECORDS]
"""
import gc
import os
import resource
import sys
import tempfile
import tracemalloc
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simpletrace  # noqa: E402
import tracegen  # noqa: E402
from tap import done, ok  # noqa: E402

ALLOWED_GROWTH = 256 << 10
ALLOWED_PEAK = 16 << 20


class Methods(simpletrace.Analyzer2):
    def __init__(self):
        self.n = 0

    def lock_acquire(self, mutex, file, line, **kwargs):
        self.n += 1

    def io_submit(self, offset, nbytes, write, *, timestamp_ns, pid, **kwargs):
        self.n += 1

    def catchall(self, *args, event, event_id, timestamp_ns, pid, **kwargs):
        self.n += 1


class Legacy(simpletrace.Analyzer):
    def __init__(self):
        self.n = 0

    def lock_acquire(self, mutex, file, line):
        self.n += 1

    def lock_release(self, timestamp, mutex, file, line):
        self.n += 1

    def io_submit(self, timestamp, pid, offset, nbytes, write):
        self.n += 1

    def catchall(self, event, rec):
        self.n += 1


class Own(simpletrace.Analyzer2):
    def __init__(self):
        self.n = 0

    def _process_event(self, rec_args, *, event, event_id, timestamp_ns, pid):
        self.n += len(rec_args) >= 0


def refcounts(objects):
    return [sys.getrefcount(o) for o in objects]


def measure(what, fn, watched, peak_limit=ALLOWED_PEAK):
    """Runs fn() under tracemalloc; checks memory and reference counts after it."""
    gc.collect()
    before = refcounts(watched)
    total = getattr(sys, 'gettotalrefcount', lambda: 0)()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    n = fn()
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    after = refcounts(watched)
    total = getattr(sys, 'gettotalrefcount', lambda: 0)() - total
    ok(current - base < ALLOWED_GROWTH and peak - base < peak_limit and before == after and abs(total) < 1000,
       '%s: %d records; Python memory %+d bytes after, peak %+d; reference counts unchanged'
       % (what, n, current - base, peak - base),
       'refcounts before %s after %s; total refcount %+d' % (before, after, total))


def main():
    records = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
    with tempfile.TemporaryDirectory() as tmp:
        ev, tr = os.path.join(tmp, 'ev'), os.path.join(tmp, 'trace')
        tracegen.write(ev, tr, records)
        with open(ev) as f:
            events = simpletrace.read_events(f, ev)
        methods, legacy, own = Methods(), Legacy(), Own()
        # (Event names are not watched: CPython's attribute cache holds the names getattr() looked up.)
        watched = events + [simpletrace.Dropped_Event, methods, legacy, own, Methods.lock_acquire, Methods.catchall,
                            Legacy.lock_release, Legacy.catchall, Own._process_event]

        def records_way():
            n = 0
            for rec in simpletrace.open(tr, events):
                n += 1
                touched = (rec.args, rec.raw_args, rec.name, rec.event, rec.pid, rec.timestamp_ns)
                if n % 16 == 0:
                    touched = (rec.asdict(), rec[0] if len(rec) else None, repr(rec))
                del touched
            return n

        def tuples_way():
            with open(tr, 'rb') as f:
                simpletrace.read_trace_header(f)
                return sum(1 for _ in simpletrace.read_trace_records(events, f, True))

        def analyzer_way(analyzer):
            def run():
                analyzer.n = 0
                with warnings.catch_warnings():
                    warnings.simplefilter('ignore', DeprecationWarning)
                    simpletrace.process(events, tr, analyzer)
                return analyzer.n
            return run

        def columns_way():
            reader = simpletrace.open(tr, events)
            cols = reader.columns()
            n = sum(len(t['timestamp_ns']) for t in cols.values())
            del cols, reader
            return n

        def latency_way():
            figures = simpletrace.latency(tr, events, pairs=['lock_acquire:lock_release=held@mutex'], by='thread')
            ok(figures['spans'] and figures['spans'][0]['name'] == 'held', 'latency(): the keyed spans measured')
            return figures['records']

        def compare_way():
            figures = simpletrace.compare(tr, tr, events, pairs=['lock_acquire:lock_release=held@mutex'],
                                          fail_if=['held:p99>+1%', 'count<-1%'])
            ok(figures['spans'] and not figures.met, 'compare(): one trace against itself, no condition met')
            return figures['base']['records'] + figures['new']['records']

        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        measure('Records', records_way, watched)
        measure("QEMU's tuples (read_trace_records)", tuples_way, watched)
        measure('Analyzer2 methods and catchall', analyzer_way(methods), watched)
        measure('Analyzer (deprecated): three arities and catchall(event, rec)', analyzer_way(legacy), watched)
        measure('an own _process_event', analyzer_way(own), watched)
        measure('latency()', latency_way, watched)
        measure('compare()', compare_way, watched)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss
        if 'asan' in os.environ.get('LD_PRELOAD', ''):
            ok(True, 'peak RSS while streaming # SKIP under AddressSanitizer, whose quarantine keeps freed memory')
        else:
            ok(grown < 64 << 10, 'peak RSS grew by %d KiB while streaming 8 x %d records' % (grown, records))
        try:
            import numpy  # noqa: F401
            measure('numpy columns, dropped after use', columns_way, watched, peak_limit=1 << 40)
        except ImportError:
            ok(True, 'numpy columns # SKIP numpy is not installed (Debian python3-numpy)')
    return done()


if __name__ == '__main__':
    sys.exit(main())
