"""Synthetic v4 traces for the Python tests and bench/python: a trace-events
text and a trace of N records of it, written with struct (no simpletrace code).

    tracegen.py TRACE-EVENTS-OUT TRACE-OUT N [SEED]
"""
import random
import struct
import sys

EVENTS = """\
# events of the synthetic traces: pointers, strings, signed and unsigned integers, bool, no arguments
lock_acquire(void *mutex, const char *file, int line) "mutex %p %s:%d"
lock_release(void *mutex, const char *file, int line) "mutex %p %s:%d"
io_submit(uint64_t offset, uint32_t bytes, bool write) "offset 0x%" PRIx64 " bytes %u write %d"
io_complete(uint64_t offset, int ret) "offset 0x%" PRIx64 " ret %d"
tick(void) "tick"
job_delta(int64_t delta, int8_t small, uint16_t port) "delta %" PRId64 " small %d port %u"
"""
NAMES = ['lock_acquire', 'lock_release', 'io_submit', 'io_complete', 'tick', 'job_delta']
FILES = [b'../util/qemu-thread-posix.c', b'../block/io.c', b'../util/rcu.c', b'']


def header():
    return struct.pack('=QQQ', 0xffffffffffffffff, 0xf2b177cb0aa429b4, 4)


def mapping(event_id, name):
    data = name.encode()
    return struct.pack('=QQI', 0, event_id, len(data)) + data


def record(event_id, ts, pid, payload):
    return struct.pack('=QQQII', 1, event_id, ts, 24 + len(payload), pid) + payload


def u64(v):
    return struct.pack('=Q', v & 0xffffffffffffffff)


def string(s):
    return struct.pack('=I', len(s)) + s


def records(n, seed=1):
    """(event index, timestamp, pid, payload) for n records: locks pair up, I/O completes."""
    rnd = random.Random(seed)
    ts = 1000000
    pids = [4242, 4243, 4244]
    for i in range(n):
        ts += rnd.randrange(1, 3000)
        pid = pids[rnd.randrange(3) if i % 5 == 0 else 0]
        k = rnd.randrange(10)
        if k < 4:  # a lock taken and released
            ev = i % 2
            payload = u64(0x55d0c0de0000 + 0x40 * (i % 7)) + string(FILES[i % 4]) + u64(100 + i % 50)
        elif k < 7:
            ev = 2 + (i % 2)
            payload = u64(4096 * (i % 1000))
            payload += u64(4096) + u64(i & 1) if ev == 2 else u64(-5 if i % 11 == 0 else 4096)
        elif k < 8:
            ev, payload = 4, b''
        else:
            ev = 5
            payload = u64(-i) + u64(-(i % 100)) + u64(8000 + i % 100)
        yield ev, ts, pid, payload


def write(events_path, trace_path, n, seed=1):
    with open(events_path, 'w') as f:
        f.write(EVENTS)
    with open(trace_path, 'wb') as f:
        f.write(header())
        for i, name in enumerate(NAMES):
            f.write(mapping(i, name))
        chunk = []
        for ev, ts, pid, payload in records(n, seed):
            chunk.append(record(ev, ts, pid, payload))
            if len(chunk) == 65536:
                f.write(b''.join(chunk))
                chunk = []
        f.write(b''.join(chunk))


if __name__ == '__main__':
    write(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1)
