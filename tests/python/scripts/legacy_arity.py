#!/usr/bin/env python3
"""The deprecated Analyzer: a method's parameter count picks its arguments
(arguments only; timestamp first; timestamp and pid first), catchall(event,
rec) gets the rest; the DeprecationWarning is seen.

usage: legacy_arity.py TRACE-EVENTS TRACE
"""
import sys
import warnings

import simpletrace


class Legacy(simpletrace.Analyzer):
    def __init__(self):
        self.lines = []
        self.other = {}

    def qemu_mutex_lock(self, mutex, file, line):
        self.lines.append('lock 0x%x %s:%d' % (mutex, file, line))

    def qemu_mutex_locked(self, timestamp, mutex, file, line):
        self.lines.append('locked t=%d 0x%x %s:%d' % (timestamp, mutex, file, line))

    def qemu_mutex_unlock(self, timestamp, pid, mutex, file, line):
        self.lines.append('unlock t=%d pid=%d 0x%x %s:%d' % (timestamp, pid, mutex, file, line))

    def Dropped_Event(self, timestamp, pid, num_events_dropped):
        self.lines.append('dropped t=%d pid=%d n=%d' % (timestamp, pid, num_events_dropped))

    def catchall(self, event, rec):
        name, timestamp, pid = rec[:3]
        self.other[event.name] = self.other.get(event.name, 0) + 1
        if sum(self.other.values()) <= 20:  # the first ones in full
            fields = ['%s=%r' % (n, v) for (_, n), v in zip(event.args, rec[3:])]
            self.lines.append('catchall %s %s t=%d pid=%d %s' % (event.name, name, timestamp, pid, ' '.join(fields)))

    def end(self):
        print('\n'.join(self.lines[:60]))
        print('handled records:', len(self.lines))
        for name, n in sorted(self.other.items()):
            print('catchall %s %d' % (name, n))


if __name__ == '__main__':
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('default')
        simpletrace.process(sys.argv[1], sys.argv[2], Legacy())
    print('DeprecationWarning seen:', any(issubclass(w.category, DeprecationWarning) for w in caught))
