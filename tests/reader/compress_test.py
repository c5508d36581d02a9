#!/usr/bin/env python3
"""Compressed traces read everywhere (issue 25), checked against an independent writer.

The seekable file here is made without our writer: the demo's plain trace
cut at record boundaries into chunks, each compressed by the zstd command,
then the time index and zstd's seek table appended as
src/format/zstd_seek_format.h and zstd's seekable format describe them.

Checked here:
  - print of the seekable file, of a one-frame .zst made by `zstd`, of
    either through standard input and a pipe: the same text as print of
    the plain trace; stats and info too, info naming the frame count
    and the ratio; `zstd -d` of the demo's own compress=zstd trace is a v4
    file the strict decoder (v4_decode.py, what QEMU's simpletrace.py
    knows) reads whole;
  - --from/--to on the seekable file: what print shows equals print of
    the plain trace with the same window, and stats says fewer frames
    were decompressed than the file has (counted), the rest skipped;
  - cut at random points: exit 1, every record of the frames before the
    cut printed (the output is a prefix of the full print), the message
    names the frame and its compressed byte offset;
  - a damaged byte inside a frame: the frame and its offset named, the
    records of the frames before it printed;
  - a seek table that lies (frames adding up to another size): read from
    the start all the same, info says why the table is not used;
  - the summary our writer puts before the time index, parsed here as
    zstd_seek_format.h describes it: each event ID's count is what the
    zstd -d output holds; info answers from it: the same text as info of
    the zstd -d output (the compressed lines aside), decompressing exactly
    the frames holding mapping records and the first and last timestamps
    (found here in the time index), also for a trace in rotated pieces
    against its pieces decompressed; with the summary cut out of the
    trailer (a file without one, as before it existed), info reads every
    frame and answers the same.

argv: SIMPLETRACE-CLI DEMO TRACE-EVENTS
"""
import difflib
import os
import random
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from tap import done, ok, run  # noqa: E402
from v4_decode import parse_events, records  # noqa: E402

cli, demo, events_file = sys.argv[1:4]
tmp = tempfile.mkdtemp(prefix='st-compress-')


def path(name):
    return os.path.join(tmp, name)


def byte_order(data):
    """The trace's byte order, '<' or '>' (the writer's own: the header's magic says which)."""
    return '<' if struct.unpack_from('<Q', data, 8)[0] == 0xf2b177cb0aa429b4 else '>'


def record_spans(data):
    """[(offset, size, type, id, ts)] of every record after the header."""
    out, off, bo = [], 24, byte_order(data)
    while off < len(data):
        rtype, eid = struct.unpack_from(bo + 'QQ', data, off)
        if rtype == 0:
            size = 20 + struct.unpack_from(bo + 'I', data, off + 16)[0]
            out.append((off, size, 0, eid, None))
        else:
            ts, length = struct.unpack_from(bo + 'QI', data, off + 16)
            size = 8 + length
            out.append((off, size, 1, eid, ts))
        off += size
    return out


def zstd_frame(chunk):
    return subprocess.run(['zstd', '-q', '-c', '-3'], input=chunk, stdout=subprocess.PIPE, check=True).stdout


def seekable(data, chunk_bytes):
    """The plain trace as independent frames of whole records plus the time index and seek table; and the frames' (offset, size, first record index)."""
    spans = record_spans(data)
    chunks, cur, start = [], [], 0
    for i, sp in enumerate(spans):
        cur.append(sp)
        if sum(s[1] for s in cur) >= chunk_bytes:
            chunks.append(cur)
            cur = []
    if cur:
        chunks.append(cur)
    out, entries, times, frames = b'', [], [], []
    for k, ch in enumerate(chunks):
        lo = 0 if k == 0 else ch[0][0]
        hi = ch[-1][0] + ch[-1][1]
        frame = zstd_frame(data[lo:hi])
        frames.append((len(out), len(frame)))
        out += frame
        ts = [s[4] for s in ch if s[2] == 1]
        drop = [s for s in ch if s[2] == 1 and s[3] == 0xFFFFFFFFFFFFFFFE]
        meta = k == 0 or any(s[2] == 0 for s in ch)
        flags = (1 if meta else 0) | (0 if ts else 2)
        dropped_events = sum(struct.unpack_from(byte_order(data) + 'Q', data, s[0] + 32)[0] for s in drop)
        times.append(struct.pack('<QQIIIIQ', min(ts) if ts else 0, max(ts) if ts else 0, len(ch),
                                 len(ts) - len(drop), len(drop), flags, dropped_events))
        entries.append(struct.pack('<III', len(frame), hi - lo, struct.unpack('<I', frame[-4:])[0]))
    body = struct.pack('<IIII', 0x5A545453, 1, len(times), 40) + b''.join(times)
    tindex = struct.pack('<II', 0x184D2A5B, len(body)) + body
    out += tindex
    entries.append(struct.pack('<III', len(tindex), 0, 0))
    seek_body = b''.join(entries) + struct.pack('<IBI', len(entries), 0x80, 0x8F92EAB1)
    out += struct.pack('<II', 0x184D2A5E, len(seek_body)) + seek_body
    return out, frames


def cli_run(*args, **kw):
    return run(cli, *args, **kw)


# The demo, plain and with compress=zstd.
plain = path('demo.trace')
env = dict(os.environ, SIMPLETRACE='enable=*,bufsize=16M,file=' + plain)
r = run(demo, '--workers', '2', '--jobs', '4000', env=env)
ok(r.returncode == 0, 'the demo ran (plain trace)', r.stderr)
own = path('own.trace.zst')
env['SIMPLETRACE'] = 'enable=*,bufsize=16M,compress=zstd,file=' + own
r = run(demo, '--workers', '2', '--jobs', '4000', env=env)
ok(r.returncode == 0, 'the demo ran (compress=zstd)', r.stderr)
with open(own, 'rb') as f:
    own_bytes = f.read()
ok(struct.unpack('<I', own_bytes[:4])[0] == 0xFD2FB528, 'compress=zstd wrote a zstd frame first')
dec = subprocess.run(['zstd', '-d', '-c', own], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
ok(dec.returncode == 0, 'zstd -d reads the file (seek table and time index skipped)', dec.stderr)
try:
    n = sum(1 for _ in records(parse_events(events_file), dec.stdout))
    ok(n > 16000, 'the strict decoder reads zstd -d output whole (%d event records)' % n)
except Exception as e:  # noqa: BLE001
    ok(False, 'the strict decoder reads zstd -d output whole', repr(e))
lst = subprocess.run(['zstd', '-l', '-v', own], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
ok(lst.returncode == 0 and 'Skippable Frames: 3' in lst.stdout and 'Check: XXH64' in lst.stdout,
   'zstd -l sees the data frames with checksums and the three skippable frames (summary, time index, seek table)',
   lst.stdout + lst.stderr)
r1 = cli_run('print', own)
with open(path('own.dec'), 'wb') as f:
    f.write(dec.stdout)
r2 = cli_run('print', path('own.dec'))
ok(r1.returncode == 0 and r1.stdout == r2.stdout and r1.stdout, 'print of compress=zstd output = print of its zstd -d')

with open(plain, 'rb') as f:
    data = f.read()
seek, frames = seekable(data, 24 << 10)
sk = path('seek.trace.zst')
with open(sk, 'wb') as f:
    f.write(seek)
one = path('one.zst')
subprocess.run(['zstd', '-q', '-f', plain, '-o', one], check=True)
ok(len(frames) >= 20, 'the independent writer made %d frames' % len(frames))

full = cli_run('print', plain)
ok(full.returncode == 0 and full.stdout, 'print of the plain trace')
for name, p in (('seekable file', sk), ('one-frame .zst of the zstd command', one)):
    r = cli_run('print', p)
    ok(r.returncode == 0 and r.stdout == full.stdout, 'print of the %s = print of the plain trace' % name, r.stderr)
    with open(p, 'rb') as f:
        r = run(cli, 'print', '-', stdin=f)
    ok(r.returncode == 0 and r.stdout == full.stdout, 'the %s on standard input' % name, r.stderr)
    cat = subprocess.Popen(['cat', p], stdout=subprocess.PIPE)
    r = run(cli, 'print', '-', stdin=cat.stdout)
    cat.wait()
    ok(r.returncode == 0 and r.stdout == full.stdout, 'the %s through a pipe' % name, r.stderr)
for cmd in (['stats'], ['info'], ['print', '--format=json']):
    a, b = cli_run(*cmd, plain), cli_run(*cmd, sk)
    strip = lambda t: '\n'.join(l for l in t.replace(sk, 'T').replace(plain, 'T').splitlines()
                                if not l.startswith(('compressed', '"compressed')))
    ok(a.returncode == 0 and b.returncode == 0 and strip(a.stdout) == strip(b.stdout),
       '%s: the same answers for the compressed file' % ' '.join(cmd), b.stderr + b.stdout[:2000])
a, b = cli_run('latency', '--pair', 'job_start:job_done', plain), cli_run('latency', '--pair', 'job_start:job_done', sk)
ok(a.returncode == 0 and a.stdout and a.stdout == b.stdout.replace(sk, plain), 'latency: the same answers', b.stderr)
for fmt in ('chrome', 'perfetto'):
    a = cli_run('export', '--format=' + fmt, '-o', path('a.' + fmt), plain)
    b = cli_run('export', '--format=' + fmt, '-o', path('b.' + fmt), sk)
    ok(a.returncode == 0 and b.returncode == 0 and
       open(path('a.' + fmt), 'rb').read() == open(path('b.' + fmt), 'rb').read().replace(sk.encode(), plain.encode()),
       'export --format=%s: the same file' % fmt, b.stderr)
a = cli_run('merge', '-o', path('m1.trace'), plain, own)
b = cli_run('merge', '-o', path('m2.trace'), sk, path('own.dec'))
ok(a.returncode == 0 and b.returncode == 0 and
   cli_run('print', path('m1.trace')).stdout == cli_run('print', path('m2.trace')).stdout.replace('own.dec', 'own.trace.zst')
   .replace(sk, plain),
   'merge of compressed inputs (recognised as traces by content) = merge of plain ones', a.stderr + b.stderr)
info = cli_run('info', sk).stdout
ok('zstd, %d frames, %d bytes for %d' % (len(frames), len(seek), len(data)) in info and 'seekable' in info,
   'info names the frames, sizes and that it is seekable', info)

# --from/--to: the same records, fewer frames decompressed.
first_ts = next(s[4] for s in record_spans(data) if s[2] == 1)
times = sorted(s[4] - first_ts for s in record_spans(data) if s[2] == 1)
span = times[-1]
for lo, hi in ((0.40, 0.45), (0.0, 0.02), (0.97, 0.999)):  # windows holding 5%, 2% and 3% of the records
    args = ['--from=%dns' % times[int(len(times) * lo)], '--to=%dns' % times[int(len(times) * hi)]]
    a, b = cli_run('print', *args, plain), cli_run('print', *args, sk)
    ok(a.returncode == 0 and b.returncode == 0 and a.stdout == b.stdout and a.stdout,
       'print %s: the same records as from the plain trace' % ' '.join(args),
       b.stderr + ''.join(difflib.unified_diff(a.stdout.splitlines(True), b.stdout.splitlines(True), n=1)))
    st = cli_run('stats', *args, sk)
    line = [l for l in st.stdout.splitlines() if l.startswith('compressed')]
    nums = [int(w) for w in line[0].replace(':', ' ').replace(',', ' ').split() if w.isdigit()] if line else []
    ok(len(nums) == 3 and nums[0] == len(frames) and nums[2] > 0 and nums[1] + nums[2] <= len(frames) + 2
       and nums[1] < len(frames) // 2,
       'stats %s: %s of %d frames decompressed, the rest skipped' % (' '.join(args), nums[1:2], len(frames)),
       st.stdout + st.stderr)
    a, b = cli_run('stats', *args, plain), cli_run('stats', *args, sk)
    keep = lambda t: [l for l in t.replace(sk, 'T').replace(plain, 'T').splitlines() if not l.startswith('compressed')]
    ok(keep(a.stdout) == keep(b.stdout), 'stats %s: the same counts as a full read' % ' '.join(args),
       '\n'.join(keep(b.stdout)))

# Cut at random points: every record before the cut's frame, the place named.
rng = random.Random(25)
lines = full.stdout.splitlines(keepends=True)
trailer = len(seek) - (frames[-1][0] + frames[-1][1])
for cut in sorted(rng.sample(range(1, len(seek) - trailer), 6)):
    with open(path('cut.zst'), 'wb') as f:
        f.write(seek[:cut])
    r = cli_run('print', path('cut.zst'))
    k = max(i for i, (off, size) in enumerate(frames) if off <= cut)
    before = sum(1 for off, size in frames if off + size <= cut)
    got = r.stdout.splitlines(keepends=True)
    # records of the whole frames before the cut (decoded from the plain file)
    whole = 0
    if before:
        end = frames[before - 1][0] + frames[before - 1][1]
        part = subprocess.run(['zstd', '-d', '-c'], input=seek[:end], stdout=subprocess.PIPE).stdout
        with open(path('part'), 'wb') as f:
            f.write(part)
        whole = len(cli_run('print', path('part')).stdout.splitlines())
    ok(r.returncode == 1 and got == lines[:len(got)] and len(got) >= whole and
       ('zstd frame %d' % k) in r.stderr and ('compressed byte %d' % frames[k][0]) in r.stderr,
       'cut at byte %d (frame %d): exit 1, %d records (>= %d of whole frames), frame and offset named'
       % (cut, k, len(got), whole), r.stderr)

# A damaged byte in frame 5.
bad = bytearray(seek)
bad[frames[5][0] + frames[5][1] // 2] ^= 0x5A
with open(path('bad.zst'), 'wb') as f:
    f.write(bad)
r = cli_run('print', path('bad.zst'))
got = r.stdout.splitlines(keepends=True)
part = subprocess.run(['zstd', '-d', '-c'], input=seek[:frames[5][0]], stdout=subprocess.PIPE).stdout
with open(path('part'), 'wb') as f:
    f.write(part)
whole = len(cli_run('print', path('part')).stdout.splitlines())
ok(r.returncode == 1 and got == lines[:len(got)] and len(got) >= whole and
   'damaged zstd frame 5 at compressed byte %d' % frames[5][0] in r.stderr,
   'a damaged frame: named with its offset, the %d records before it printed (%d)' % (whole, len(got)), r.stderr)

# A seek table whose sizes do not add up: read from the start, the reason in info.
lie = bytearray(seek)
seek_start = len(seek) - (8 + 12 * (len(frames) + 1) + 9)
struct.pack_into('<I', lie, seek_start + 8, frames[0][1] + 1)
with open(path('lie.zst'), 'wb') as f:
    f.write(lie)
r = cli_run('print', '--from=%dns' % int(span * 0.5), path('lie.zst'))
a = cli_run('print', '--from=%dns' % int(span * 0.5), plain)
ok(r.returncode == 0 and r.stdout == a.stdout, 'a lying seek table: the file still reads, all of it', r.stderr)
info = cli_run('info', path('lie.zst')).stdout
ok('no seek table' in info and 'seek table:' in info and 'add up' in info, 'info says why the table is not used', info)


# Our writer's summary, and info answering from it.
def trailer(data):
    """The seek-table entries [(csize, dsize)], the time-index entries and the summary {id: count} (None: none)."""
    n, desc, magic = struct.unpack_from('<IBI', data, len(data) - 9)
    esize = 12 if desc & 0x80 else 8
    seek = len(data) - (8 + n * esize + 9)
    ents = [struct.unpack_from('<II', data, seek + 8 + i * esize) for i in range(n)]
    t = seek - ents[-1][0]
    assert struct.unpack_from('<III', data, t)[0] == 0x184D2A5B and struct.unpack_from('<I', data, t + 8)[0] == 0x5A545453
    count, tesize = struct.unpack_from('<II', data, t + 16)
    times = [struct.unpack_from('<QQIIIIQ', data, t + 24 + i * tesize) for i in range(count)]
    summary = None
    if ents[-2][1] == 0:
        s0 = t - ents[-2][0]
        magic, size, magic2, version, scount, sesize, wlost = struct.unpack_from('<IIIIIIQ', data, s0)
        if magic == 0x184D2A5C and magic2 == 0x4D535453 and version == 1:
            summary = {'write_lost': wlost, 'counts': dict(struct.unpack_from('<QQ', data, s0 + 32 + i * sesize)
                                                           for i in range(scount))}
    return ents, times, summary


def v4_counts(plain_bytes):
    """{id: event records}, {id: mapped name} and the write-lost drops of a v4 stream, walked here."""
    counts, names, wlost, bo = {}, {}, 0, byte_order(plain_bytes)
    for off, size, rtype, eid, ts in record_spans(plain_bytes):
        if rtype == 0:
            names[eid] = plain_bytes[off + 20:off + size]
        elif eid == 0xFFFFFFFFFFFFFFFE:
            if struct.unpack_from(bo + 'I', plain_bytes, off + 28)[0] == 0xFFFFFFFE:
                wlost += struct.unpack_from(bo + 'Q', plain_bytes, off + 32)[0]
        else:
            counts[eid] = counts.get(eid, 0) + 1
    return counts, names, wlost


def frames_info_needs(ents, times):
    """The data frames info must decompress: those holding mappings (META), the first and the last timestamp."""
    data = [i for i, (c, d) in enumerate(ents[:-1]) if d and not times[i][5] & 2]
    need = {i for i, (c, d) in enumerate(ents[:-1]) if d and times[i][5] & 1}
    need.add(min(data, key=lambda i: times[i][0]))
    need.add(max(data, key=lambda i: times[i][1]))
    return need, sum(1 for c, d in ents[:-1] if d)


def info_lines(text, *names):
    for nm in names:
        text = text.replace(nm, 'T')
    return [l for l in text.splitlines() if not l.startswith('compressed')]


many = path('many.trace.zst')
env['SIMPLETRACE'] = 'enable=*,bufsize=4M,compress=zstd,file=' + many
r = run(demo, '--workers', '2', '--jobs', '60000', env=env)
ok(r.returncode == 0, 'the demo ran (compress=zstd, 4M buffers: a frame per writer pass)', r.stderr)
mdata = open(many, 'rb').read()
mplain = subprocess.run(['zstd', '-d', '-c', many], stdout=subprocess.PIPE, check=True).stdout
with open(path('many.dec'), 'wb') as f:
    f.write(mplain)
ents, times, summary = trailer(mdata)
counts, names, wlost = v4_counts(mplain)
ok(summary is not None, 'our writer ends the file with a summary before the time index (%d entries)' %
   len(summary['counts'] if summary else {}))
ok(summary and summary['counts'] == counts and summary['write_lost'] == wlost,
   'the summary counts each event ID as zstd -d output holds its records (%d events, write-lost %d)' %
   (sum(counts.values()), wlost), repr(summary)[:300] + ' / ' + repr(counts)[:300])
need, ndata = frames_info_needs(ents, times)
ok(len(need) < ndata, 'frames holding mappings or the first and last timestamps: %d of %d' % (len(need), ndata))
a, b = cli_run('info', path('many.dec')), cli_run('info', many)
ok(a.returncode == 0 and b.returncode == 0 and info_lines(a.stdout, path('many.dec')) == info_lines(b.stdout, many),
   'info of the compressed trace = info of its zstd -d output (counts, first/last, processes)',
   '\n'.join(difflib.unified_diff(info_lines(a.stdout, path('many.dec')), info_lines(b.stdout, many), lineterm='')))
j = cli_run('info', '--format=json', many)
got = int(j.stdout.split('"frames_decompressed":')[1].split(',')[0]) if '"frames_decompressed":' in j.stdout else -1
ok(got == len(need), 'info decompressed exactly those %d frames (%d), answering the rest from the seek tables' %
   (len(need), got), j.stdout[:400])
ok('compressed read:  %d of %d frames decompressed' % (len(need), ndata) in b.stdout,
   'info says it answered from the seek tables', b.stdout)

# The summary left out of the trailer (a file written before it was): every frame read, the same answers.
ssize = ents[-2][0]
tstart = len(mdata) - (8 + len(ents) * 12 + 9) - ents[-1][0]
body = mdata[tstart:len(mdata) - (8 + len(ents) * 12 + 9)]
cnt = struct.unpack_from('<I', body, 16)[0]
tindex = body[:4] + struct.pack('<I', len(body) - 8 - 40) + body[8:16] + struct.pack('<I', cnt - 1) + body[20:-40]
seek_body = b''.join(struct.pack('<III', c, d, 0) for c, d in ents[:-2]) + struct.pack('<III', len(tindex), 0, 0)
seek_body += struct.pack('<IBI', len(ents) - 1, 0x80, 0x8F92EAB1)
old = mdata[:tstart - ssize] + tindex + struct.pack('<II', 0x184D2A5E, len(seek_body)) + seek_body
with open(path('old.trace.zst'), 'wb') as f:
    f.write(old)
dec = subprocess.run(['zstd', '-d', '-c', path('old.trace.zst')], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
ok(dec.returncode == 0 and dec.stdout == mplain, 'without the summary zstd -d reads the same stream', dec.stderr)
c = cli_run('info', path('old.trace.zst'))
ok(c.returncode == 0 and info_lines(c.stdout, path('old.trace.zst')) == info_lines(a.stdout, path('many.dec')) and
   'seekable' in c.stdout and 'compressed read' not in c.stdout,
   'without the summary info reads every frame (still seekable) and answers the same', c.stdout)

# Rotated pieces, each with its summary: info against the pieces decompressed.
os.mkdir(path('rot'))
os.mkdir(path('rotplain'))
env['SIMPLETRACE'] = 'enable=*,bufsize=4M,compress=zstd,rotate=2M,file=' + path('rot/r.trace')
r = run(demo, '--workers', '2', '--jobs', '60000', env=env)
pieces = sorted(os.listdir(path('rot')))
ok(r.returncode == 0 and len(pieces) >= 3, 'the demo wrote %d compressed pieces' % len(pieces), r.stderr)
for pc in pieces:
    subprocess.run(['zstd', '-q', '-d', '-f', path('rot/' + pc), '-o', path('rotplain/' + pc)], check=True)
a, b = cli_run('info', path('rotplain/r.trace')), cli_run('info', path('rot/r.trace'))
j = cli_run('info', '--format=json', path('rot/r.trace')).stdout
fr = [int(j.split('"%s":' % k)[1].split(',')[0]) if '"%s":' % k in j else -1 for k in ('frames', 'frames_decompressed')]
ok(a.returncode == 0 and b.returncode == 0 and
   info_lines(a.stdout, path('rotplain/')) == info_lines(b.stdout, path('rot/')) and 0 < fr[1] < fr[0],
   'info of rotated compressed pieces = info of the pieces decompressed, %d of their %d frames decompressed' %
   (fr[1], fr[0]),
   '\n'.join(difflib.unified_diff(info_lines(a.stdout, path('rotplain/')), info_lines(b.stdout, path('rot/')),
                                  lineterm='')))

subprocess.run(['rm', '-rf', tmp])
sys.exit(done())
