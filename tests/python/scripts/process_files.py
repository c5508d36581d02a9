#!/usr/bin/env python3
"""process() with open files (left open), a list of events and read_header=False
on the trace without its header; read_trace_header/read_trace_records; the
context-manager protocol, and end() not called when the analysis raised.

usage: process_files.py TRACE-EVENTS TRACE
"""
import io
import os
import sys
import tempfile

import simpletrace


class Summary(simpletrace.Analyzer2):
    def __init__(self, title):
        self.title = title
        self.records = 0
        self.total = 0   # sum of the integer arguments, as simpletrace.py gives them (unsigned 64-bit)
        self.strings = set()

    def begin(self):
        print(self.title, 'begin')

    def catchall(self, *args, event, event_id, timestamp_ns, pid, **kwargs):
        self.records += 1
        for (type_, _), value in zip(event.args, args):
            if simpletrace.is_string(type_):
                self.strings.add(value)
            else:
                self.total += value

    def end(self):
        print(self.title, 'end: %d records, integers sum to %d, strings %r'
              % (self.records, self.total, sorted(self.strings)[:8]))


class Failing(simpletrace.Analyzer2):
    def __init__(self):
        self.ended = False
        self.seen = 0

    def catchall(self, *args, **kwargs):
        self.seen += 1
        if self.seen == 3:
            raise KeyError('third record')

    def end(self):
        self.ended = True


def main(events_path, trace_path):
    with open(events_path) as events_fobj, open(trace_path, 'rb') as log:
        simpletrace.process(events_fobj, log, Summary('open files'))
        print('log left open:', not log.closed, 'at its end:', log.tell() == os.path.getsize(trace_path))

    with open(events_path) as f:
        events = simpletrace.read_events(f, events_path)
    with open(trace_path, 'rb') as f:
        data = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        headerless = os.path.join(tmp, 'headerless')
        with open(headerless, 'wb') as f:
            f.write(data[24:])
        with open(headerless, 'rb') as log:
            simpletrace.process(events, log, Summary('no header'), read_header=False)

    with open(trace_path, 'rb') as log:
        simpletrace.read_trace_header(log)
        names = {}
        for event, event_id, timestamp_ns, pid, *args in simpletrace.read_trace_records(events, log, True):
            names[event.name, event_id, len(args)] = names.get((event.name, event_id, len(args)), 0) + 1
    print('read_trace_records:', sorted(names.items())[:12], len(names))

    analyzer = Summary('with')
    with analyzer:
        print('inside the with block')

    failing = Failing()
    try:
        simpletrace.process(events_path, io.BytesIO(data), failing)
    except KeyError as e:
        print('raised', repr(e), 'after', failing.seen, 'records; end() called:', failing.ended)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
