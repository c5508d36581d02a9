"""A strict reader of simpletrace v4 files that knows what QEMU's scripts/simpletrace.py knows.

Record types 0 (mapping: stored by ID, its name decoded as strict UTF-8)
and 1 (event) only; each event decoded by its trace-events declaration,
its payload exactly the declared arguments; text as simpletrace.py prints
it. Shared by the end-to-end tests that check a file our tools write is
read by QEMU's reader as they read it themselves.
"""
import struct

HEADER_ID = 0xFFFFFFFFFFFFFFFF
MAGIC = 0xF2B177CB0AA429B4
DROPPED_ID = 0xFFFFFFFFFFFFFFFE


def is_string(arg_type):
    """A string argument as QEMU's reader tells one: a char pointer, one star."""
    t = arg_type.strip()
    return t.startswith(('const char*', 'char*', 'const char *', 'char *')) and t.count('*') == 1


def parse_events(path):
    """name -> [(type, name)] from a trace-events file (the subset the tests use)."""
    events = {}
    for line in open(path, encoding='utf-8'):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        if line.startswith('disable '):
            line = line[len('disable '):]
        name, rest = line.split('(', 1)
        args = rest[:rest.index(')')].strip()
        decl = []
        if args != 'void':
            for a in args.split(','):
                a = a.strip()
                cut = max(a.rfind(' '), a.rfind('*'))
                decl.append((a[:cut + 1].strip(), a[cut + 1:]))
        events[name.strip()] = decl
    events['Dropped_Event'] = [('uint64_t', 'num_events_dropped')]
    return events


def records(events, data):
    """(name, timestamp, pid, [(arg name, int or bytes)]) of each event record; ValueError etc. when bad."""
    # QEMU's reader takes the host's byte order: here, that of the machine that wrote the file (a
    # trace of a big-endian machine, read under qemu-user or copied here, is its native order there).
    o = next((o for o in '<>' if struct.unpack_from(o + 'QQQ', data, 0) == (HEADER_ID, MAGIC, 4)), None)
    if o is None:
        raise ValueError('not a v4 header')
    names = {}
    off = 24
    while off < len(data):
        rtype, = struct.unpack_from(o + 'Q', data, off)
        if rtype == 0:
            eid, length = struct.unpack_from(o + 'QI', data, off + 8)
            names[eid] = data[off + 20:off + 20 + length].decode('utf-8')  # strict, as it does
            off += 20 + length
            continue
        if rtype != 1:
            raise ValueError('record type %d at %d' % (rtype, off))
        eid, ts, length, pid = struct.unpack_from(o + 'QQII', data, off + 8)
        name = 'Dropped_Event' if eid == DROPPED_ID else names[eid]
        at, args = off + 32, []
        for atype, aname in events[name]:
            if is_string(atype):
                slen, = struct.unpack_from(o + 'I', data, at)
                args.append((aname, data[at + 4:at + 4 + slen]))
                at += 4 + slen
            else:
                args.append((aname, struct.unpack_from(o + 'Q', data, at)[0]))
                at += 8
        if at != off + 8 + length:
            raise ValueError('record at %d: %d payload bytes, the declaration of %s takes %d'
                             % (off, length - 24, name, at - off - 32))
        yield name, ts, pid, args
        off += 8 + length


def qemu_like_text(events, data):
    """What QEMU's reader prints for a v4 file."""
    out, last = [], None
    for name, ts, pid, args in records(events, data):
        fields = ['%s=%r' % (a, v) if isinstance(v, bytes) else '%s=0x%x' % (a, v) for a, v in args]
        last = ts if last is None else last
        out.append('%s %0.3f pid=%d %s\n' % (name, (ts - last) / 1000.0, pid, ' '.join(fields)))
        last = ts
    return ''.join(out)
