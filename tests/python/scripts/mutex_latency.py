#!/usr/bin/env python3
"""Mutex wait and hold times, pairing qemu_mutex_lock/locked/unlock records per
mutex and pid: an Analyzer2 given paths through process().

usage: mutex_latency.py TRACE-EVENTS TRACE
"""
import sys

import simpletrace


class MutexLatency(simpletrace.Analyzer2):
    def __init__(self):
        self.waiting = {}   # (mutex, pid) -> timestamp of qemu_mutex_lock
        self.held = {}      # (mutex, pid) -> timestamp of qemu_mutex_locked
        self.wait = {}      # file:line -> [count, total, min, max]
        self.hold = {}
        self.unpaired = 0

    @staticmethod
    def _add(table, where, ns):
        s = table.setdefault(where, [0, 0, ns, ns])
        s[0] += 1
        s[1] += ns
        s[2] = min(s[2], ns)
        s[3] = max(s[3], ns)

    def qemu_mutex_lock(self, mutex, file, line, *, timestamp_ns, pid, **kwargs):
        self.waiting[mutex, pid] = timestamp_ns

    def qemu_mutex_locked(self, mutex, file, line, *, timestamp_ns, pid, **kwargs):
        start = self.waiting.pop((mutex, pid), None)
        if start is not None:
            self._add(self.wait, '%s:%d' % (file.decode(), line), timestamp_ns - start)
        self.held[mutex, pid] = timestamp_ns

    def qemu_mutex_unlock(self, mutex, file, line, *, timestamp_ns, pid, **kwargs):
        start = self.held.pop((mutex, pid), None)
        if start is None:
            self.unpaired += 1
        else:
            self._add(self.hold, '%s:%d' % (file.decode(), line), timestamp_ns - start)

    def end(self):
        for title, table in (('wait', self.wait), ('hold', self.hold)):
            for where, (n, total, lo, hi) in sorted(table.items()):
                print('%s %-50s n=%d total=%d min=%d max=%d avg=%.1f' % (title, where, n, total, lo, hi, total / n))
        print('unlocks without locked:', self.unpaired, 'still waiting:', len(self.waiting),
              'still held:', len(self.held))


if __name__ == '__main__':
    simpletrace.process(sys.argv[1], sys.argv[2], MutexLatency())
