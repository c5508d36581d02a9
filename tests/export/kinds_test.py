#!/usr/bin/env python3
"""An argument's kind, decided once (issue 22, item 2): `const bool` and
`bool const` are bools in every output, as `bool` is, whichever kind of
catalog the reader uses.

A v4 file built by hand holds records of
    kinds(bool b, const bool cb, bool const bk, char c, const char cc, unsigned char uc, char unsigned cu,
          int8_t i8)
twice: once with mapping records only, read with a trace-events file (a
catalog of files), once carrying its declarations, read without one (a
catalog that grows). For each:
  - `print --format=json` writes b, cb and bk as true/false and the chars
    as {"value":N,"char":"C"}, whatever the order of their words;
  - the Chrome export (read by check_chrome.py) has true/false for them;
  - the Perfetto export, decoded by protoc with Perfetto's schema, has a
    bool_value for each and equals print (check_perfetto.py);
  - the CTF export, read by babeltrace2 and by python3-bt2, has the bool
    enumeration for each and equals print, types checked (check_ctf.py).

argv: SIMPLETRACE PYTHON3 BT2-PYTHON3 PROTOC PROTO BABELTRACE2 CHECK-PERFETTO CHECK-CTF CHECK-CHROME
"""
import json
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from tap import done, ok, run  # noqa: E402
from consumers import consumers  # noqa: E402

DECL = ('kinds(bool b, const bool cb, bool const bk, char c, const char cc, unsigned char uc, char unsigned cu, '
        'int8_t i8) "b %d cb %d bk %d c %c cc %c uc %u cu %u i8 %d"')
DECL_BASE = 0xFFFFFFFE00000000
BOOLS = ('b', 'cb', 'bk')
# (b, cb, bk, c, cc, uc, cu, i8) of each record, as the runtime stores them (bool 0/1, char sign-extended)
VALUES = [(1, 1, 1, ord('A'), ord('z'), 0xff, ord('u'), -3), (0, 0, 0, 0x0a, ord(' '), ord('q'), 0x7f, 5)]


def trace(declared):
    """The v4 file: its mapping, its declaration when declared, two records on thread 77."""
    b = struct.pack('<QQQ', 0xFFFFFFFFFFFFFFFF, 0xF2B177CB0AA429B4, 4)
    b += struct.pack('<QQI', 0, 0, 5) + b'kinds'
    if declared:
        b += struct.pack('<QQI', 0, DECL_BASE, len(DECL)) + DECL.encode()
    for i, vals in enumerate(VALUES):
        payload = b''.join(struct.pack('<Q', v & 0xFFFFFFFFFFFFFFFF) for v in vals)
        b += struct.pack('<QQQII', 1, 0, 1000 * (i + 1), 24 + len(payload), 77) + payload
    return b


def check(a, tmp, what, inputs):
    printed = os.path.join(tmp, what + '.print.json')
    r = run(a.cli, 'print', '--format=json', *inputs)
    with open(printed, 'w') as f:
        f.write(r.stdout)
    recs = [json.loads(line) for line in r.stdout.splitlines()]
    args = [x['args'] for x in recs]
    ok(r.returncode == 0 and len(args) == 2 and
       all(x[k] is bool(v[i]) for x, v in zip(args, VALUES) for i, k in enumerate(BOOLS)) and
       args[0]['c'] == {'value': 65, 'char': 'A'} and args[0]['cc'] == {'value': 122, 'char': 'z'} and
       args[0]['uc'] == {'value': 255, 'char': None} and args[0]['cu'] == {'value': 117, 'char': 'u'} and
       args[1]['cu'] == {'value': 127, 'char': None} and args[0]['i8'] == -3,
       '%s: print --format=json: bool, const bool and bool const are true/false, chars (char unsigned too) '
       '{"value","char"}' % what,
       r.stdout + r.stderr)

    out = os.path.join(tmp, what + '.json')
    r = run(a.cli, 'export', '-q', '-o', out, *inputs)
    c = run(a.python, a.check_chrome, out)
    got = [json.loads(line.split(' ', 4)[4]) for line in c.stdout.splitlines()[:-1] if ' kinds ' in line]
    ok(r.returncode == 0 and c.returncode == 0 and len(got) == 2 and
       all(g[k] is bool(v[i]) for g, v in zip(got, VALUES) for i, k in enumerate(BOOLS)),
       '%s: chrome: bool, const bool and bool const are true/false' % what, r.stderr + c.stdout + c.stderr)

    out = os.path.join(tmp, what + '.pftrace')
    r = run(a.cli, 'export', '-q', '--format=perfetto', '-o', out, *inputs)
    c = run(a.python, a.check_perfetto, a.protoc, a.proto, out, printed)
    ok(r.returncode == 0 and c.returncode == 0 and 'b=bool:True,cb=bool:True,bk=bool:True,' in c.stdout and
       'b=bool:False,cb=bool:False,bk=bool:False,' in c.stdout,
       '%s: perfetto: protoc decodes bool_value for all three, every argument equal to print' % what,
       r.stderr + c.stdout + c.stderr)

    out = os.path.join(tmp, what + '.ctf')
    r = run(a.cli, 'export', '-q', '--format=ctf', '-o', out, *inputs)
    meta = open(os.path.join(out, 'metadata')).read() if r.returncode == 0 else ''
    ok(r.returncode == 0 and all('\t\tbool_t _%s;\n' % k in meta for k in BOOLS),
       '%s: ctf: the three are bool_t fields' % what, r.stderr + meta[-1200:])
    c = run(a.python, a.check_ctf, 'cli', a.babeltrace, out, printed)
    ok(c.returncode == 0, '%s: ctf: babeltrace2 reads every record as print shows it' % what, c.stdout + c.stderr)
    c = run(a.bt2_python, a.check_ctf, 'bt2', out, printed)
    ok(c.returncode == 0, '%s: ctf: python3-bt2 too, the three typed as the bool enumeration' % what,
       c.stdout + c.stderr)


def main():
    a = consumers(('cli',))
    if a is None:
        return done()
    with tempfile.TemporaryDirectory() as tmp:
        events, plain, declared = (os.path.join(tmp, n) for n in ('trace-events', 'plain.trace', 'declared.trace'))
        with open(events, 'w') as f:
            f.write(DECL + '\n')
        with open(plain, 'wb') as f:
            f.write(trace(False))
        with open(declared, 'wb') as f:
            f.write(trace(True))
        check(a, tmp, 'trace-events', [events, plain])
        check(a, tmp, 'declared', [declared])
    return done()


if __name__ == '__main__':
    sys.exit(main())
