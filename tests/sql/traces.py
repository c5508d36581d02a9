"""Traces for the SQL tests, written byte by byte with struct (no simpletrace code), and the answers
the tests expect, computed from `simpletrace print --format=json` of them.

The typed trace (v4, mapping records, read with its trace-events file) holds every kind of value:
    typed(int neg, bool flag, void *ptr, const char *s, uint64_t big, int64_t wide, char c, uint8_t byte)
with negative ints (stored zero-extended, as a 32-bit write leaves them), bools 0/1/7, pointers above
2^63, strings with invalid UTF-8, u64 2^64-1, INT64_MIN; requests submitted on one thread and completed
on another (keyed spans), ticks, and a dropped-events record.
"""
import json
import struct

EVENTS = '''\
# the SQL tests' typed trace
typed(int neg, bool flag, void *ptr, const char *s, uint64_t big, int64_t wide, char c, uint8_t byte) \
"neg %d flag %d ptr %p s %s big %" PRIu64 " wide %" PRId64 " c %c byte %u"
req_submit(uint64_t req, int prio) "req %" PRIu64 " prio %d"
req_complete(uint64_t req, int status) "req %" PRIu64 " status %d"
tick(void) "tick"
'''
NAMES = ['typed', 'req_submit', 'req_complete', 'tick']
DROPPED_ID = 0xfffffffffffffffe
U64_MAX = (1 << 64) - 1
PAIR = 'req_submit:req_complete=request@req'


def u64(v):
    return struct.pack('<Q', v & U64_MAX)


def string(s):
    return struct.pack('<I', len(s)) + s


def record(event_id, ts, pid, payload):
    return struct.pack('<QQQII', 1, event_id, ts, 24 + len(payload), pid) + payload


TYPED = [  # (neg, flag, ptr, s, big, wide, c, byte)
    (-5 & 0xffffffff, 1, 0xffff800012345678, b'hello', U64_MAX, -(1 << 63), ord('A'), 255),
    (-1 & 0xffffffff, 0, 0x1000, b'caf\xc3\xa9 \xff\xfe', 5, 42, 0x0a, 0),
    (7, 7, 0, b'', (1 << 63), -1, ord('z'), 7),
    (-2147483648 & 0xffffffff, 1, 0x7fffffffffffffff, b'a,b "quoted"\nline', (1 << 63) - 1, 9, ord(','), 128),
]


def typed_trace():
    """The bytes of the typed trace and the number of records after its header."""
    b = struct.pack('<QQQ', 0xffffffffffffffff, 0xf2b177cb0aa429b4, 4)
    for i, name in enumerate(NAMES):
        b += struct.pack('<QQI', 0, i, len(name)) + name.encode()
    ts = 1000000
    recs = []
    for k, (neg, flag, ptr, s, big, wide, c, byte) in enumerate(TYPED):
        payload = u64(neg) + u64(flag) + u64(ptr) + string(s) + u64(big) + u64(wide) + u64(c) + u64(byte)
        recs.append(record(0, ts, 300 + k % 2, payload))
        ts += 1000
    # requests: submitted on thread 100, completed on 101 (out of order), one completed twice
    for req in range(20):
        recs.append(record(1, ts, 100, u64(0x1000 + req) + u64(req % 3)))
        ts += 500 + 37 * req
        if req % 2:
            recs.append(record(3, ts, 102, b''))
            ts += 10
    for req in reversed(range(20)):
        recs.append(record(2, ts, 101, u64(0x1000 + req) + u64(-req)))
        ts += 250 + 11 * req
    recs.append(record(2, ts, 101, u64(0x1000 + 3) + u64(0)))  # an end without begin: no span
    ts += 100
    recs.append(record(DROPPED_ID, ts, 0xffffffff, u64(17)))
    ts += 100
    for i in range(30):
        recs.append(record(3, ts, 100 + i % 3, b''))
        ts += 1000 + i
    return b + b''.join(recs), len(NAMES) + len(recs)


def print_json(run, cli, *inputs):
    """The records `simpletrace print --format=json` gives: (list of dicts, the run)."""
    r = run(cli, 'print', '--format=json', *inputs)
    return [json.loads(line) for line in r.stdout.splitlines()], r


def sql_json(run, cli, *argv):
    """Rows of `simpletrace sql --format=json ARGV...`: (list of dicts, the run)."""
    r = run(cli, 'sql', '--format=json', *argv)
    rows = []
    for line in r.stdout.splitlines():
        rows.append(json.loads(line))
    return rows, r


def keyed_spans(records, begin, end, key):
    """Spans (begin_ts, end_ts, key) of a keyed rule: an end closes the open begin of its key (per process)."""
    open_, spans = {}, []
    for rec in records:
        proc = (rec.get('process') or {}).get('input', 0)
        if rec['name'] == begin:
            open_[(proc, rec['args'][key])] = rec['timestamp_ns']
        elif rec['name'] == end and (proc, rec['args'][key]) in open_:
            spans.append((open_.pop((proc, rec['args'][key])), rec['timestamp_ns'], rec['args'][key]))
    return sorted(spans)


def nested_spans(records, pairs):
    """Spans (name, begin_ts, end_ts, tid) of begin/end events nested per thread of each process.

    pairs: {begin event: (end event, span name)}; a clean trace (every end closes its thread's top frame)."""
    ends = {e: (b, n) for b, (e, n) in pairs.items()}
    stacks, spans = {}, []
    for rec in records:
        proc = (rec.get('process') or {}).get('input', 0)
        st = stacks.setdefault((proc, rec['pid']), [])
        if rec['name'] in pairs:
            st.append((rec['name'], rec['timestamp_ns']))
        elif rec['name'] in ends:
            b, name = ends[rec['name']]
            assert st and st[-1][0] == b, 'the test trace is not clean at %r' % rec
            spans.append((name, st.pop()[1], rec['timestamp_ns'], rec['pid']))
    return sorted(spans)


MANY_EVENTS = 'work_begin(int n) "n %d"\nwork_end(int n) "n %d"\n'


def many_spans_trace(n):
    """A v4 trace of n spans work_begin/work_end (the built-in *_begin:*_end), nested two deep, on three threads."""
    b = struct.pack('<QQQ', 0xffffffffffffffff, 0xf2b177cb0aa429b4, 4)
    b += struct.pack('<QQI', 0, 0, 10) + b'work_begin' + struct.pack('<QQI', 0, 1, 8) + b'work_end'
    recs, ts = [], 1000
    for i in range(0, n, 2):
        tid = 10 + i % 3
        recs += [record(0, ts, tid, u64(i)), record(0, ts + 5, tid, u64(i + 1)), record(1, ts + 7 + i % 5, tid, u64(i + 1)),
                 record(1, ts + 20, tid, u64(i))]
        ts += 30
    return b + b''.join(recs)
