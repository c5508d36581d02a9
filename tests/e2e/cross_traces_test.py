#!/usr/bin/env python3
"""Traces of other machines, read on this one (issue 28).

The portable program (portable/portable.c: every argument kind, two
threads) runs here and, cross-built, under qemu-user-static for aarch64
(little-endian, its counter CNTVCT_EL0 forced: clock=counter) and s390x
(big-endian); each prints what it traced. On this machine:
  - print --format=json of each trace equals, value for value, what its
    program says it traced (a multiset per event; order within a thread);
  - the Python module reads the same values (raw_args, strings as bytes);
  - info names the byte order and the clock: little/big-endian, cntvct
    with CNTFRQ_EL0's frequency on aarch64;
  - each trace and its twin in the other byte order (rewritten here, from
    the format's definition, not by our code) read identically through
    every reader and export: print (text and JSON), stats, info, latency,
    export to Chrome JSON, Perfetto, uftrace, CTF, Parquet and folded
    stacks, byte for byte;
  - merge of the x86-64, aarch64 and s390x traces (both byte orders at
    once) holds every record of each, and info sees three processes.
The cross builds come from ST_CROSS_BUILDS ("TRIPLET=BUILD-DIR ...",
scripts/cross-check.sh sets it); without it the test says so and skips.
Usage: cross_traces_test.py SIMPLETRACE PORTABLE TRACE-EVENTS [PYTHONPATH]
"""
import codecs
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tap as t  # noqa: E402

st, native_prog, events_file = sys.argv[1:4]
pypath = sys.argv[4] if len(sys.argv) > 4 else ''


def latin1_fallback(err):
    """Each byte of an invalid UTF-8 sequence as Latin-1: the rule every output follows (utf8.h)."""
    return ''.join(chr(b) for b in err.object[err.start:err.end]), err.end


codecs.register_error('st_latin1', latin1_fallback)


def parse_events(path):
    """{event: [(type, name)]} of the trace-events file."""
    out = {}
    for line in open(path):
        m = re.match(r'\s*([a-z0-9_]+)\((.*?)\)', line)
        if not m or line.lstrip().startswith('#'):
            continue
        args = []
        if m.group(2).strip() not in ('', 'void'):
            for a in m.group(2).split(','):
                a = a.strip()
                name = re.findall(r'[A-Za-z_][A-Za-z0-9_]*$', a)[0]
                args.append((a[:len(a) - len(name)].strip(), name))
        out[m.group(1)] = args
    return out


EVENTS = parse_events(events_file)
U64 = (1 << 64) - 1


def is_string(ctype):
    return ctype.replace(' ', '') in ('constchar*', 'char*')


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def expected_of(stdout):
    """What the program said it traced: [(event, (values...))], strings as bytes."""
    out = []
    for line in stdout.decode().splitlines():
        d = json.loads(line)
        vals = []
        for (ctype, _), v in zip(EVENTS[d['event']], d['args']):
            if is_string(ctype):
                vals.append(b'' if v is None else v.encode('latin-1'))
            else:
                vals.append(v & U64)
        out.append((d['event'], tuple(vals)))
    return out


def from_json(rec):
    """A print --format=json record as (event, values), typed values back to what the record stores."""
    vals = []
    for (ctype, name) in EVENTS[rec['name']]:
        v = rec['args'][name]
        if is_string(ctype):
            vals.append(v)
        elif isinstance(v, bool):
            vals.append(int(v))
        elif isinstance(v, dict):
            vals.append(v['value'] & U64)
        elif isinstance(v, str):
            vals.append(int(v, 16))
        else:
            vals.append(v & U64)
    return rec['name'], tuple(vals)


def as_json_text(exp):
    """Expected values with strings as print's JSON shows them (UTF-8, invalid bytes as Latin-1)."""
    return [(e, tuple(v.decode('utf-8', 'st_latin1') if isinstance(v, bytes) else v for v in vals)) for e, vals in exp]


def twin(path, out):
    """Rewrites a v4 trace in the other byte order, from trace_format.h's definition."""
    data = open(path, 'rb').read()
    magic = struct.unpack_from('<Q', data, 8)[0]
    src = '<' if magic == 0xf2b177cb0aa429b4 else '>'
    dst = '>' if src == '<' else '<'
    res = bytearray(struct.pack(dst + 'QQQ', *struct.unpack_from(src + 'QQQ', data, 0)))
    names, at = {}, 24
    while at < len(data):
        rtype, rid = struct.unpack_from(src + 'QQ', data, at)
        if rtype == 0:
            (n,) = struct.unpack_from(src + 'I', data, at + 16)
            name = data[at + 20:at + 20 + n]
            names[rid] = name.decode('utf-8', 'replace')
            res += struct.pack(dst + 'QQI', rtype, rid, n) + name
            at += 20 + n
            continue
        ts, length, pid = struct.unpack_from(src + 'QII', data, at + 16)
        res += struct.pack(dst + 'QQQII', rtype, rid, ts, length, pid)
        p, end = at + 32, at + 8 + length
        kinds = ['u64'] if rid == 0xfffffffffffffffe else [
            's' if is_string(c) else 'u64' for c, _ in EVENTS[names[rid]]]
        for k in kinds:
            if k == 'u64':
                res += struct.pack(dst + 'Q', *struct.unpack_from(src + 'Q', data, p))
                p += 8
            else:
                (n,) = struct.unpack_from(src + 'I', data, p)
                res += struct.pack(dst + 'I', n) + data[p + 4:p + 4 + n]
                p += 4 + n
        if p != end:
            raise ValueError('record at %d: %d payload bytes, not %d' % (at, p - at - 32, length - 24))
        at = end
    open(out, 'wb').write(bytes(res))


cross = dict(kv.split('=', 1) for kv in os.environ.get('ST_CROSS_BUILDS', '').split() if '=' in kv)
if not cross:
    print('1..0 # SKIP no cross builds given (ST_CROSS_BUILDS="TRIPLET=DIR ..."; scripts/cross-check.sh runs this test)')
    sys.exit(0)


def diag(text):
    for line in text.splitlines()[-20:]:
        print('# ' + line)

tmp = tempfile.mkdtemp(prefix='st-cross-')
try:
    targets = [('x86_64', None, native_prog, '')]
    for triplet, build in sorted(cross.items()):
        cpu = triplet.split('-')[0]
        prog = os.path.join(build, 'tests', 'e2e', 'portable')
        # aarch64: the generic timer forced (qemu-user's host kernel uses another clocksource).
        targets.append((cpu, 'qemu-%s-static' % cpu, prog, ',clock=counter' if cpu == 'aarch64' else ''))
    traces, expected = {}, {}
    for cpu, qemu, prog, clock in targets:
        trace = os.path.join(tmp, cpu + '.trace')
        env = dict(os.environ, SIMPLETRACE='enable=*,file=%s%s' % (trace, clock))
        r = run(([qemu] if qemu else []) + [prog, '150'], env=env)
        if not t.ok(r.returncode == 0 and os.path.exists(trace),
                    '%s: the portable program runs%s and writes its trace' % (cpu, ' under ' + qemu if qemu else '')):
            diag(r.stderr.decode(errors='replace')[-2000:])
            continue
        traces[cpu], expected[cpu] = trace, expected_of(r.stdout)

    for cpu, trace in traces.items():
        exp = expected[cpu]
        r = run([st, 'print', '--format=json', trace])
        recs = [json.loads(line) for line in r.stdout.decode().splitlines()] if r.returncode == 0 else []
        got = [from_json(x) for x in recs]
        t.ok(r.returncode == 0 and sorted(got, key=repr) == sorted(as_json_text(exp), key=repr),
             '%s: print --format=json reads every record, value for value, as the program traced it (%d records)'
             % (cpu, len(got)))
        by_tid = {}
        for x in recs:
            by_tid.setdefault(x['pid'], []).append(x)
        t.ok(len(by_tid) == 2 and all([a['timestamp_ns'] for a in v] == sorted(a['timestamp_ns'] for a in v)
                                      for v in by_tid.values()),
             '%s: two threads, timestamps in order within each' % cpu)
        # Each thread prints what it traced in its own order; values are seeded, so a thread's are its own.
        said = [v for e, v in as_json_text(exp) if e == 'pt_mixed']
        main = next((x['pid'] for x in recs if x['name'] == 'pt_start'), None)
        got_main = [from_json(x)[1] for x in by_tid.get(main, []) if x['name'] == 'pt_mixed']
        mine = set(got_main)
        t.ok(len(got_main) == 150 and got_main == [v for v in said if v in mine],
             '%s: the main thread\'s records in the order it traced them' % cpu)

        info = run([st, 'info', '--format=json', trace])
        d = json.loads(info.stdout.decode()) if info.returncode == 0 else {}
        d = d[0] if isinstance(d, list) and d else d
        order = 'big-endian' if cpu == 's390x' else 'little-endian'
        text = run([st, 'info', trace]).stdout.decode()
        t.ok(json.dumps(d).count('"byte_order": "%s"' % order) == 1 and order in text,
             '%s: info says %s' % (cpu, order))
        clock = re.search(r'^clock:\s*(.*)$', text, re.M)
        clock = clock.group(1) if clock else ''
        if cpu == 'aarch64':
            t.ok(re.fullmatch(r'cntvct \(62500000 Hz\)', clock) is not None,
                 'aarch64: info names the clock: %r (CNTVCT_EL0 at qemu\'s CNTFRQ_EL0, 62.5 MHz)' % clock)
        elif cpu == 's390x':
            t.ok(clock == 'monotonic', 's390x: info names the clock: %r (no counter: clock_gettime)' % clock)
        else:
            t.ok(clock == 'monotonic' or clock.startswith('tsc ('), 'x86_64: info names the clock: %r' % clock)

        if pypath:
            code = ('import sys, simpletrace\n'
                    'with simpletrace.open(sys.argv[1]) as tr:\n'
                    '    for rec in tr:\n'
                    '        print(repr((rec.name, tuple(rec.raw_args))))\n')
            py = run(['/usr/bin/python3', '-c', code, trace], env=dict(os.environ, PYTHONPATH=pypath))
            import ast
            pyrecs = [ast.literal_eval(line) for line in py.stdout.decode().splitlines()] if py.returncode == 0 else []
            t.ok(sorted(pyrecs, key=repr) == sorted(exp, key=repr),
                 '%s: the Python module reads the same values (raw_args; strings as bytes)' % cpu)
            if py.returncode:
                diag(py.stderr.decode(errors='replace')[-1500:])

        # The twin in the other byte order: every reader and export, byte for byte.
        tw = os.path.join(tmp, cpu + '.twin')
        twin(trace, tw)
        t.ok(run([st, 'info', '--format=json', tw]).stdout.decode().count('big-endian' if order == 'little-endian'
                                                                           else 'little-endian') == 1,
             '%s: the twin is in the other byte order' % cpu)

        def outputs(path, tag):
            res = {}
            for name, args in [('print', ['print']), ('json', ['print', '--format=json']), ('stats', ['stats']),
                               ('stats-json', ['stats', '--format=json']), ('latency', ['latency', '--pair=pt_start:pt_end']),
                               ('info', ['info'])]:
                r = run([st] + args + [path])
                res[name] = (r.returncode, r.stdout.replace(path.encode(), b'TRACE'))
            for fmt, out in [('chrome', 'out.json'), ('perfetto', 'out.pftrace'), ('uftrace', 'out.data'),
                             ('ctf', 'out.ctf'), ('parquet', 'out.parquet'), ('folded', 'out.folded')]:
                o = os.path.join(tmp, '%s-%s-%s' % (cpu, tag, out))
                r = run([st, 'export', '--format=' + fmt, '-o', o, path])
                files = {}
                if os.path.isdir(o):
                    for root, _, fs in os.walk(o):
                        for f in fs:
                            files[os.path.relpath(os.path.join(root, f), o)] = open(os.path.join(root, f), 'rb').read()
                elif os.path.exists(o):
                    files[''] = open(o, 'rb').read()
                # What changes from one export to the next whatever the input: CTF's trace uuid (in the metadata
                # and in every packet header), uftrace's session id.
                for m in re.finditer(rb'uuid = "([0-9a-f-]{36})"', files.get('metadata', b'')):
                    raw = bytes.fromhex(m.group(1).decode().replace('-', ''))
                    files = {k: v.replace(raw, b'U' * 16) for k, v in files.items()}
                files = {re.sub(r'sid-[0-9a-f]+', 'sid-X', k):
                         re.sub(rb'(uuid = "|sid=|sid-)[0-9a-f-]+', rb'\1X', v.replace(path.encode(), b'TRACE')
                                .replace(o.encode(), b'OUT').replace(os.path.basename(path).encode(), b'TRACE'))
                         for k, v in files.items()}
                res['export ' + fmt] = (r.returncode, files)
            return res

        a, b = outputs(trace, 'orig'), outputs(tw, 'twin')
        for name in a:
            ra, rb = a[name], b[name]
            if name == 'info':  # the byte order is the one line that differs
                strip = re.compile(rb'^format:.*$', re.M)
                ra = (ra[0], strip.sub(b'', ra[1]))
                rb = (rb[0], strip.sub(b'', rb[1]))
            t.ok(ra[0] == 0 and ra == rb, '%s: %s of the trace and of its twin in the other byte order are identical'
                 % (cpu, name))
            if ra != rb or ra[0]:
                diag('exit %s / %s' % (ra[0], rb[0]))

    if len(traces) == len(targets):
        merged = os.path.join(tmp, 'all.trace')
        r = run([st, 'merge', '-o', merged] + [traces[c] for c, _, _, _ in targets])
        recs = [json.loads(line) for line in run([st, 'print', '--format=json', merged]).stdout.decode().splitlines()]
        want = sum((as_json_text(expected[c]) for c, _, _, _ in targets), [])
        t.ok(r.returncode == 0 and sorted(map(from_json, recs), key=repr) == sorted(want, key=repr),
             'merge of the %s traces (both byte orders) holds every record of each, value for value (%d)'
             % (', '.join(c for c, _, _, _ in targets), len(recs)))
        d = run([st, 'info', '--format=json', merged]).stdout.decode()
        t.ok(len(re.findall(r'"program":\s*"portable"', d)) >= len(targets),
             'info of the merged file lists its %d processes' % len(targets))
finally:
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(t.done())
