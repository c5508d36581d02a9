#!/usr/bin/env python3
"""Records per event and pid, and the events dropped: an Analyzer2 run by run().

usage: count_events.py [--no-header] TRACE-EVENTS TRACE
"""
import simpletrace


class EventCounter(simpletrace.Analyzer2):
    def __init__(self):
        self.counts = {}
        self.dropped = 0
        self.span = None

    def begin(self):
        print('begin')

    def _count(self, name, pid):
        self.counts[name, pid] = self.counts.get((name, pid), 0) + 1

    def Dropped_Event(self, num_events_dropped, *, event, event_id, pid, **kwargs):
        self.dropped += num_events_dropped
        self._count('%s (event_id %s)' % (event.name, event_id), pid)

    def catchall(self, *args, event, event_id, timestamp_ns, pid, **kwargs):
        if event_id != event.name or len(args) != len(event.args):
            print('unexpected record', event.name, event_id, args)
        first = self.span[0] if self.span else timestamp_ns
        self.span = (first, timestamp_ns)
        self._count(event.name, pid)

    def end(self):
        for (name, pid), n in sorted(self.counts.items()):
            print('%-40s pid=%d %d' % (name, pid, n))
        print('events dropped:', self.dropped)
        print('first to last record: %s ns' % (self.span[1] - self.span[0] if self.span else None))


if __name__ == '__main__':
    simpletrace.run(EventCounter())
