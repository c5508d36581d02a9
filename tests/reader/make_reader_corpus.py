#!/usr/bin/env python3
"""Writes the seed corpus of the reader fuzz target (tests/fuzz/corpus/reader/).

Each seed is a small trace for the catalogue in tests/fuzz/fuzz_reader.c,
built here from the format descriptions in src/format/ (trace_format.h,
meta_format.h for the self-describing seeds meta_*), so the
seeds are ours (nothing is copied from the shared fixtures). Run it from
anywhere; it rewrites the directory's *.bin files.
"""
import os
import struct
import sys

HDR_ID = 0xFFFFFFFFFFFFFFFF
MAGIC = 0xF2B177CB0AA429B4
DROPPED = 0xFFFFFFFFFFFFFFFE
META_INFO = 0xFFFFFFFFFFFFFF00   # src/format/meta_format.h: the description
META_DECL = 0xFFFFFFFE00000000   # + event ID: its declaration
META_PROC = 0xFFFFFFFD00000000   # + process number: a process of a merged file


def header(version=4, bo='<'):
    return struct.pack(bo + 'QQQ', HDR_ID, MAGIC, version)


def mapping(eid, name, bo='<'):
    n = name.encode()
    return struct.pack(bo + 'QQI', 0, eid, len(n)) + n


def u64(v, bo='<'):
    return struct.pack(bo + 'Q', v & 0xFFFFFFFFFFFFFFFF)


def s(text, bo='<'):
    b = text if isinstance(text, bytes) else text.encode()
    return struct.pack(bo + 'I', len(b)) + b


def event(eid, ts, payload=b'', pid=4242, rectype=1, bo='<', length=None):
    if length is None:
        length = 24 + len(payload)
    return struct.pack(bo + 'QQQII', rectype, eid, ts, length, pid) + payload


def v2_event(eid, ts, payload=b'', pid=0, bo='<'):
    return struct.pack(bo + 'QQII', eid, ts, 24 + len(payload), pid) + payload


NAMES = ['ev_noargs', 'ev_int', 'ev_str', 'ev_ptr', 'ev_off', 'ev_two_str', 'ev_ten',
         'qemu_mutex_lock', 'qemu_mutex_locked', 'qemu_mutex_unlock']


def all_mappings(bo='<', base=10):
    return b''.join(mapping(base + i, n, bo) for i, n in enumerate(NAMES))


def basic(bo='<'):
    m = all_mappings(bo)
    recs = [
        event(10, 1000, b'', bo=bo),
        event(11, 1500, u64(-5, bo) + u64(2**64 - 1, bo), bo=bo),
        event(12, 2000, s('hello', bo) + u64(7, bo), bo=bo),
        event(12, 2100, s(b"it's \"q\"\t\n\xff", bo) + u64(1, bo), bo=bo),
        event(13, 2200, u64(0x7f0012345678, bo) + s('second', bo), bo=bo),
        event(15, 2300, s('', bo) + s('b', bo), bo=bo),
        event(16, 2400, b''.join(u64(i, bo) for i in range(10)), bo=bo),
        event(DROPPED, 2500, u64(1234, bo), bo=bo),
        event(17, 2000, u64(0x55aa, bo) + s('../util/qemu-thread-posix.c', bo) + u64(88, bo), bo=bo),
        event(18, 2600, u64(0x55aa, bo) + s('../util/qemu-thread-posix.c', bo) + u64(88, bo), bo=bo),
        event(19, 2700, u64(0x55aa, bo) + s('../util/qemu-thread-posix.c', bo) + u64(90, bo), bo=bo),
    ]
    return header(4, bo) + m + b''.join(recs)


def meta(eid, text, bo='<', length=None):
    """A description or declaration record (a mapping with a reserved ID); length overrides the real one."""
    b = text.encode()
    return struct.pack(bo + 'QQI', 0, eid, len(b) if length is None else length) + b


DESCRIPTION = ('simpletrace=1\nversion=0.3.0\npid=4242\nprogram=fuzzed\nexe=/usr/bin/fuzzed\n'
               'cmdline=fuzzed\\x20-x a\\x5cb\nhost=h\nclock=tsc\ntsc_hz=3000000000\n'
               'anchor_mono_ns=1000\nanchor_real_ns=1700000000000000000\n')

# The catalogue's lines (fuzz_reader.c), as a runtime would declare them: the file needs no trace-events.
DECLS = {
    'ev_noargs': 'ev_noargs(void) "no args"',
    'ev_int': 'ev_int(int x, uint64_t y) "x %d y %" PRIu64',
    'ev_str': 'ev_str(const char *s, int n) "s %s n %d"',
    'ev_ptr': 'ev_ptr(void *p, char *s2) "p %p s2 %s"',
    'ev_off': 'disable ev_off(int a) "a %d"',
    'ev_two_str': 'ev_two_str(const char *a, const char *b) "%s %s"',
    'ev_ten': 'ev_ten(int a1, int a2, int a3, int a4, int a5, int a6, int a7, int a8, int a9, int a10) '
              '"%d %d %d %d %d %d %d %d %d %d"',
    'qemu_mutex_lock': 'qemu_mutex_lock(void *mutex, const char *file, const int line) "waiting on mutex %p (%s:%d)"',
    'qemu_mutex_locked': 'qemu_mutex_locked(void *mutex, const char *file, const int line) "taken mutex %p (%s:%d)"',
    'qemu_mutex_unlock': 'qemu_mutex_unlock(void *mutex, const char *file, const int line) '
                         '"released mutex %p (%s:%d)"',
}


def described(bo='<', base=10):
    """basic() as the runtime writes it: description after the header, a declaration after each mapping."""
    m = b''.join(mapping(base + i, n, bo) + meta(META_DECL + base + i, DECLS[n], bo) for i, n in enumerate(NAMES))
    records = basic(bo)[len(header(4, bo)) + len(all_mappings(bo)):]
    return header(4, bo) + meta(META_INFO, DESCRIPTION, bo) + m + records


def seeds():
    out = {}
    out['v4_basic'] = basic()
    out['v4_big_endian'] = basic('>')
    out['v4_header_only'] = header()
    out['v4_mid_mapping'] = (header() + mapping(7, 'ev_int') + event(7, 10, u64(1) + u64(2)) +
                             mapping(7, 'ev_noargs') + event(7, 20))
    out['v4_rectype2'] = header() + mapping(1, 'ev_noargs') + event(1, 5, rectype=2)
    out['v4_trailing'] = (header() + mapping(1, 'ev_int') + event(1, 5, u64(1) + u64(2) + u64(3), length=48) +
                          event(1, 6, u64(3) + u64(4)))
    out['v4_truncated'] = basic()[:-5]
    out['v4_unknown_id'] = header() + mapping(1, 'ev_noargs') + event(1, 5) + event(555, 6)
    out['v4_undeclared'] = header() + mapping(1, 'ev_nowhere') + event(1, 5)
    out['v4_string_past_end'] = header() + mapping(1, 'ev_str') + event(1, 5, struct.pack('<I', 400) + b'abc')
    out['v4_short_length'] = header() + mapping(1, 'ev_noargs') + event(1, 5, length=8)
    out['v4_huge_length'] = header() + mapping(1, 'ev_noargs') + event(1, 5, length=0xFFFFFFF0)
    out['v4_long_string'] = header() + mapping(1, 'ev_str') + event(1, 5, s('x' * 512) + u64(5))
    out['v4_bad_magic'] = struct.pack('<QQQ', HDR_ID, 0, 4)
    out['v4_bad_version'] = header(9)
    out['v4_non_monotonic'] = (header() + mapping(1, 'ev_noargs') + event(1, 1000) + event(1, 900, pid=4243) +
                               event(1, 2000))
    out['no_header'] = event(0, 10) + event(1, 20, u64(1) + u64(2)) + event(6, 30, b''.join(u64(i) for i in range(10)))
    out['v0'] = (struct.pack('<8Q', HDR_ID, MAGIC, 0, 0, 0, 0, 0, 0) + struct.pack('<8Q', 1, 10, 1, 2, 0, 0, 0, 0) +
                 struct.pack('<8Q', DROPPED, 0, 77, 0, 0, 0, 0, 0) + struct.pack('<8Q', 2, 30, 0xdead, 3, 0, 0, 0, 0))
    out['v2'] = header(2) + v2_event(1, 10, u64(1) + u64(2)) + v2_event(2, 20, s('v2') + u64(3))
    out['v3'] = header(3) + v2_event(1, 10, u64(1) + u64(2), pid=4242) + v2_event(DROPPED, 20, u64(9), pid=4242)
    out['v3_big_endian'] = header(3, '>') + v2_event(1, 10, u64(1, '>') + u64(2, '>'), pid=4242, bo='>')
    # Rotated traces as `cat FILE FILE.1 ...`: the fuzz target cuts them into pieces at each header.
    out['pieces'] = basic() + header() + all_mappings(base=20) + event(21, 3000, u64(1) + u64(2)) + basic('>')
    out['pieces_cut'] = basic()[:-5] + basic()
    # Typed outputs (JSON by declared type, the log format): edges of each type, and a line past PIPE_BUF.
    out['v4_typed'] = (header() + mapping(1, 'ev_typed') + mapping(2, 'ev_wide') + mapping(3, 'ev_int') +
                       event(1, 10, u64(-128) + u64(1) + u64(ord('A')) + u64(-7) + s('abcdef') + u64(-2**63) +
                             u64(0xffff)) +
                       event(1, 20, u64(0x17f) + u64(0) + u64(10) + u64(2**31 - 1) + s('') + u64(2**63 - 1) +
                             u64(0x10000)) +
                       event(2, 30, u64(-1)) + event(3, 40, u64(-2**31) + u64(2**64 - 1)) +
                       event(DROPPED, 50, u64(3)))
    out['pieces_ids'] = basic() + header() + mapping(1, 'ev_noargs') + event(1, 3000) + event(10, 3100)
    # Self-describing traces (meta_format.h): everything, then each way a description or declaration can be wrong.
    out['meta_all'] = described()
    out['meta_all_big_endian'] = described('>')
    out['meta_pieces'] = described() + described()[:-7] + described('>')
    one = header() + mapping(1, 'ev_int') + meta(META_DECL + 1, DECLS['ev_int'])
    rec = event(1, 10, u64(-3) + u64(7))
    out['meta_desc_bad_escape'] = (header() + meta(META_INFO, 'simpletrace=1\nhost=a\\qb\ncmdline=x\\x4\n') +
                                   one[24:] + rec)
    out['meta_desc_no_first_line'] = header() + meta(META_INFO, 'pid=12\nprogram=p\n') + one[24:] + rec
    out['meta_desc_no_equals'] = header() + meta(META_INFO, 'simpletrace=1\npid\n\n') + one[24:] + rec
    out['meta_desc_cut'] = header() + meta(META_INFO, DESCRIPTION, length=len(DESCRIPTION) + 100)
    out['meta_decl_unparsable'] = (header() + mapping(1, 'ev_int') + meta(META_DECL + 1, 'ev_int(int x, "x %d') +
                                   rec)
    out['meta_decl_conflict'] = (header() + mapping(1, 'ev_int') + meta(META_DECL + 1, 'ev_other(int a) "a %d"') +
                                 rec)
    out['meta_decl_huge'] = header() + mapping(1, 'ev_int') + meta(META_DECL + 1, 'ev_int(int x', length=0xFFFFFFF0)
    out['meta_decl_big_id'] = header() + mapping(1, 'ev_int') + meta(META_DECL + 0xFFFFFFFF, DECLS['ev_int']) + rec
    out['meta_decl_no_mapping'] = header() + meta(META_DECL + 3, DECLS['ev_str']) + rec
    out['meta_decl_many_args'] = (header() + mapping(1, 'ev_int') +
                                  meta(META_DECL + 1, 'ev_int(' + ', '.join('int a%d' % i for i in range(11)) +
                                       ') "x"') + rec)
    # Several processes in one file (simpletrace merge): described processes, switches, a process never
    # described, a later description of the same number, a process number over the limit.
    p0 = 'simpletrace=1\npid=100\nprogram=a\nhost=h\nanchor_mono_ns=1000\nanchor_real_ns=5000\n'
    p1 = 'simpletrace=1\npid=200\nprogram=b\nhost=g\nanchor_mono_ns=9\nanchor_real_ns=4000\n'
    out['meta_processes'] = (header() + meta(META_PROC + 0, p0) + meta(META_PROC + 1, p1) + meta(META_PROC + 2, '') +
                             one[24:] + meta(META_PROC + 0, '') + rec + meta(META_PROC + 1, '') + rec +
                             meta(META_PROC + 2, '') + event(DROPPED, 11, u64(4)) + meta(META_PROC + 0, p1) + rec)
    out['meta_process_bad'] = (header() + meta(META_PROC + 0, p0) + one[24:] + rec + meta(META_PROC + 0x10000, '') +
                               rec + meta(META_PROC + 1, 'pid=1\n') + rec)
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    dest = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, '..', 'fuzz', 'corpus', 'reader')
    os.makedirs(dest, exist_ok=True)
    for name, data in sorted(seeds().items()):
        with open(os.path.join(dest, name + '.bin'), 'wb') as f:
            f.write(data)
    print(f'{len(seeds())} seeds in {dest}')


if __name__ == '__main__':
    main()
