#!/usr/bin/env python3
"""Checks a Perfetto trace written by `simpletrace export --format=perfetto`
against Perfetto's schema and against `simpletrace print --format=json`.

    check_perfetto.py PROTOC PROTO PFTRACE PRINT_JSON|- [EVENT=B:FUNCTION[@ARG]|EVENT=E:FUNCTION[@ARG]|EVENT=I: ...]

Decodes PFTRACE with `PROTOC --decode=perfetto.protos.Trace` and the
schema PROTO (protoc fails on anything that is not a valid Trace), then
checks the schema's rules for sequences:
  - the first packet of a sequence with incremental state has
    SEQ_INCREMENTAL_STATE_CLEARED (and first_packet_on_sequence); every
    later packet of it has SEQ_NEEDS_INCREMENTAL_STATE;
  - every name_iid (event and debug annotation names) is defined by
    InternedData in the same packet or an earlier one of its sequence, and
    never redefined with another name;
  - timestamps on the sequence's incremental clock (a ClockSnapshot clock
    >= 64 with is_incremental, named by TracePacketDefaults) add up from the
    snapshot's value, which equals its MONOTONIC clock's (a packet naming
    MONOTONIC in timestamp_clock_id has its own absolute time and leaves the
    incremental clock alone); REALTIME, when present, is the wall time print
    shows for the thread's first record;
  - every thread's default track is described (ThreadDescriptor pid, tid)
    and belongs to a described process; any other track is under a
    described process: a sequence's default track without a thread is the
    lost-events pseudo-thread, one no sequence defaults to is an async track
    (named; its slices, from any sequence, never overlap: each ends before
    the next begins, and is named after the track);
then compares, thread by thread and in order, every TrackEvent with the
records print lists: a begin record is a TYPE_SLICE_BEGIN named after its
function, an end record a TYPE_SLICE_END (EVENT=B:FUNCTION, EVENT=E:FUNCTION,
EVENT=I: for an instant;
by default X_enter/X_exit, X_begin/X_end, X_start/X_done pair as calls of X
when print shows both names), any other an instant named after
it, a dropped record an instant "dropped" with count; timestamps and every
argument equal, typed (negative integers int_value, pointers
pointer_value, bools bool_value, strings string_value). Slice ends the
exporter adds (unfinished=true) are counted apart; slices must nest.
Events are compared on their sequence's thread, and only keyed ones may be on
another track than the thread's.

Keyed rules (EVENT=B:FUNCTION@ARG, EVENT=E:FUNCTION@ARG: --pair=...@ARG) are
worked out from print's records (keyed_spans.py): each span's begin is a
TYPE_SLICE_BEGIN on an async track of its process, its end a TYPE_SLICE_END
on the same track closing that slice (at the begin's time if recorded
earlier), an end of no open span an instant; a span the exporter ends is
closed on that track by an unfinished=true end on its begin's thread, at the
time the key began again or at the trace's last timestamp.

Prints a listing (TID TS TYPE NAME ARGS) and "ok PACKETS EVENTS UNFINISHED",
or "error: ..." and exits 1. With - for PRINT_JSON, only the schema's rules,
tracks and nesting are checked ("ok PACKETS EVENTS").
"""
import json
import re
import subprocess
import sys
from datetime import datetime, timezone

from keyed_spans import keyed_spans, parse_rule

SEQ_CLEARED, SEQ_NEEDS = 1, 2
PAIR_SUFFIXES = {"_enter": "_exit", "_begin": "_end", "_start": "_done"}


def fail(msg):
    print("error: " + msg)
    sys.exit(1)


# --- protoc's text format ------------------------------------------------------------

TOKEN = re.compile(r'\s*(?:([A-Za-z_][A-Za-z0-9_]*)\s*(:)?\s*(\{|"(?:[^"\\]|\\.)*"|[^\s{}]+)?|(\}))')
ESCAPE = re.compile(rb'\\([0-7]{1,3}|x[0-9a-fA-F]{1,2}|.)')
SIMPLE = {b'n': b'\n', b't': b'\t', b'r': b'\r', b'"': b'"', b"'": b"'", b'\\': b'\\'}


def unescape(text):
    """A protoc text-format string literal's bytes."""
    def one(m):
        e = m.group(1)
        if e[:1].isdigit():
            return bytes([int(e, 8)])
        if e[:1] == b'x':
            return bytes([int(e[1:], 16)])
        return SIMPLE.get(e, e)
    return ESCAPE.sub(one, text.encode('latin-1'))


def parse_text(text):
    """protoc's text output as nested dicts: key -> list of values (dicts, ints, strings as bytes, enum names)."""
    root, stack, pos = {}, [], 0
    cur = root
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip() == "":
                break
            fail("cannot parse protoc output near %r" % text[pos:pos + 60])
        pos = m.end()
        key, colon, value, close = m.groups()
        if close:
            cur = stack.pop()
        elif value == '{':
            child = {}
            cur.setdefault(key, []).append(child)
            stack.append(cur)
            cur = child
        else:
            if value.startswith('"'):
                v = unescape(value[1:-1])
            elif re.fullmatch(r'-?\d+', value):
                v = int(value)
            else:
                v = value  # an enum name, true/false
            cur.setdefault(key, []).append(v)
    if stack:
        fail("unbalanced protoc output")
    return root


def one(msg, key, default=None):
    v = msg.get(key)
    return v[0] if v else default


# --- the trace ------------------------------------------------------------------------

class Sequence:
    def __init__(self):
        self.cleared = False
        self.defaults = None
        self.names, self.anames = {}, {}
        self.clock_id, self.clock = None, None
        self.monotonic = None
        self.realtime = None
        self.npackets = 0


def intern(table, entries, what, seq_id):
    for e in entries:
        iid, name = one(e, 'iid'), one(e, 'name')
        if not iid:
            fail("sequence %d: %s with iid 0" % (seq_id, what))
        if iid in table and table[iid] != name:
            fail("sequence %d: %s iid %d redefined (%r, then %r)" % (seq_id, what, iid, table[iid], name))
        table[iid] = name


def annotation_value(a):
    for key, kind in (('int_value', 'int'), ('uint_value', 'uint'), ('bool_value', 'bool'),
                      ('pointer_value', 'pointer'), ('string_value', 'string')):
        if key in a:
            v = a[key][0]
            if kind == 'bool':
                v = v == 'true'
            elif kind == 'string':
                v = v.decode('utf-8')  # the exporter writes valid UTF-8 only
            return kind, v
    fail("debug annotation without a value: %r" % a)


def read_trace(packets):
    """Checks the sequences; returns (threads {uuid: desc}, processes {pid: name}, events [(uuid, ts, ev)])."""
    seqs, tracks, processes, events = {}, {}, {}, []
    ts = None
    for n, p in enumerate(packets):
        seq_id = one(p, 'trusted_packet_sequence_id')
        if not seq_id:
            fail("packet %d has no trusted_packet_sequence_id" % n)
        s = seqs.setdefault(seq_id, Sequence())
        flags = one(p, 'sequence_flags', 0)
        if s.npackets == 0 and 'trace_packet_defaults' in p:
            if not flags & SEQ_CLEARED or one(p, 'first_packet_on_sequence') != 'true':
                fail("sequence %d: first packet without SEQ_INCREMENTAL_STATE_CLEARED" % seq_id)
            s.cleared = True
        elif flags & SEQ_CLEARED:
            fail("sequence %d: incremental state cleared again at packet %d" % (seq_id, n))
        elif s.cleared and not flags & SEQ_NEEDS:
            fail("sequence %d: packet %d after the defaults without SEQ_NEEDS_INCREMENTAL_STATE" % (seq_id, n))
        s.npackets += 1
        if 'trace_packet_defaults' in p:
            s.defaults = p['trace_packet_defaults'][0]
        if 'interned_data' in p:
            if not s.cleared:
                fail("sequence %d: interned data without incremental state" % seq_id)
            d = p['interned_data'][0]
            intern(s.names, d.get('event_names', []), 'event name', seq_id)
            intern(s.anames, d.get('debug_annotation_names', []), 'annotation name', seq_id)
        if 'clock_snapshot' in p:
            cs = p['clock_snapshot'][0]
            if one(cs, 'primary_trace_clock') != 'BUILTIN_CLOCK_MONOTONIC':
                fail("sequence %d: the primary trace clock is not MONOTONIC" % seq_id)
            for c in cs['clocks']:
                cid, ts = one(c, 'clock_id'), one(c, 'timestamp')
                if one(c, 'is_incremental') == 'true':
                    if cid < 64:
                        fail("sequence %d: builtin clock %d incremental" % (seq_id, cid))
                    s.clock_id, s.clock = cid, ts
                elif cid == 3:
                    s.monotonic = ts
                elif cid == 1:
                    s.realtime = ts
            if s.clock is None or s.clock != s.monotonic:
                fail("sequence %d: the incremental clock does not start at MONOTONIC's value" % seq_id)
            continue
        if 'track_descriptor' in p:
            td = p['track_descriptor'][0]
            uuid = one(td, 'uuid')
            if uuid in tracks:
                fail("track uuid %d described twice" % uuid)
            if 'process' in td:
                pd = td['process'][0]
                processes[one(pd, 'pid')] = (uuid, one(pd, 'process_name').decode())
            tracks[uuid] = td
        if 'timestamp' in p and one(p, 'timestamp_clock_id') is not None:
            if one(p, 'timestamp_clock_id') != 3:
                fail("sequence %d: packet %d on clock %s, not MONOTONIC" % (seq_id, n, one(p, 'timestamp_clock_id')))
            ts = p['timestamp'][0]  # absolute; the incremental clock stays
        elif 'timestamp' in p:
            clock = one(s.defaults or {}, 'timestamp_clock_id')
            if clock != s.clock_id or s.clock is None:
                fail("sequence %d: timestamp on clock %s, which has no snapshot" % (seq_id, clock))
            s.clock += p['timestamp'][0]
            ts = s.clock
        if 'track_event' in p:
            te = p['track_event'][0]
            if not flags & SEQ_NEEDS:
                fail("sequence %d: track event without SEQ_NEEDS_INCREMENTAL_STATE" % seq_id)
            if 'timestamp' not in p:
                fail("sequence %d: track event without a timestamp" % seq_id)
            home = one(one(s.defaults, 'track_event_defaults', {}), 'track_uuid')
            uuid = one(te, 'track_uuid') or home
            name = None
            if 'name_iid' in te:
                iid = one(te, 'name_iid')
                if iid not in s.names:
                    fail("sequence %d: event name iid %d used before it is defined" % (seq_id, iid))
                name = s.names[iid].decode()
            args = []
            for a in te.get('debug_annotations', []):
                iid = one(a, 'name_iid')
                if iid not in s.anames:
                    fail("sequence %d: annotation name iid %d used before it is defined" % (seq_id, iid))
                args.append((s.anames[iid].decode(),) + annotation_value(a))
            events.append((uuid, ts, one(te, 'type'), name, args, seq_id, home))
    return seqs, tracks, processes, events


# --- print's records -------------------------------------------------------------------

def pairing(names, given):
    """EVENT -> ('B' or 'E', FUNCTION): the given pairs, then the default suffixes whose partner print shows."""
    roles = {}
    for name in names:
        for b, e in PAIR_SUFFIXES.items():
            if name.endswith(b) and name[:-len(b)] + e in names:
                roles[name] = ('B', name[:-len(b)])
                roles[name[:-len(b)] + e] = ('E', name[:-len(b)])
    for arg in given:
        event, role = arg.split('=', 1)
        roles[event] = (role[0], role[2:])
    return roles


def expected(rec, roles):
    """(type, name, args) print's record stands for: args as (name, value) with JSON's values."""
    name, args = rec['name'], list(rec['args'].items())
    if name == 'Dropped_Event':
        return 'TYPE_INSTANT', 'dropped', [('count', args[0][1])]
    role, func = roles.get(name, ('I', name))
    if role == 'I':
        return 'TYPE_INSTANT', name, args
    if role == 'B':
        return 'TYPE_SLICE_BEGIN', func, args
    if role == 'E':
        return 'TYPE_SLICE_END', None, args
    return 'TYPE_INSTANT', name, args


def same_value(kind, got, want):
    if isinstance(want, dict):  # a char: {"value":N,"char":"C"}
        want = want['value']
    if isinstance(want, bool):
        return kind == 'bool' and got == want
    if isinstance(want, int):
        return kind in ('int', 'uint') and got == want and (want >= 0 or kind == 'int')
    if isinstance(want, str) and want.startswith('0x') and kind == 'pointer':
        return got == int(want, 16)
    return kind == 'string' and got == want


def thread_events(tracks, processes, events):
    """Events by thread id (each: ts, type, name, args, sequence, track, event index), a listing
    (TID TS TYPE NAME ARGS [async TRACK]), each thread's pid, the async tracks' slices {track: [(begin, end)]}
    by event index; checks tracks, nesting, and that async slices never overlap."""
    threads, pid_of, async_names = {}, {}, {}
    homes = {e[6] for e in events}
    for uuid, td in tracks.items():
        if 'thread' in td:
            t = td['thread'][0]
            if one(t, 'pid') not in processes:
                fail("thread %d of process %d, which has no descriptor" % (one(t, 'tid'), one(t, 'pid')))
            if one(t, 'tid') in threads.values():
                fail("thread id %d in two processes: this checker keys threads by id" % one(t, 'tid'))
            threads[uuid] = one(t, 'tid')
            pid_of[one(t, 'tid')] = one(t, 'pid')
        elif 'process' not in td:
            parent = one(td, 'parent_uuid')
            if parent not in {u for u, _ in processes.values()}:
                fail("track %d (%s) under no process" % (uuid, one(td, 'name')))
            if uuid in homes:
                threads[uuid] = 0xffffffff  # the lost-events pseudo-thread
            elif not one(td, 'name'):
                fail("async track %d without a name" % uuid)
            else:
                async_names[uuid] = one(td, 'name').decode()
    listing, per_track, unfinished, stacks, slices = [], {}, 0, {}, {}
    for i, (uuid, ts, typ, name, args, seq_id, home) in enumerate(events):
        if home not in threads:
            fail("sequence %d: its default track %s is not a thread's" % (seq_id, home))
        tid = threads[home]
        if uuid != home and uuid not in async_names:
            fail("thread %d: event at %d on track %s, neither its own nor an async track" % (tid, ts, uuid))
        st = stacks.setdefault(uuid, [])
        if uuid in async_names and typ == 'TYPE_SLICE_BEGIN':
            if st:
                fail("async track %d: a slice begins at %d while one is open" % (uuid, ts))
            if name != async_names[uuid]:
                fail("async track %d (%s): slice %s" % (uuid, async_names[uuid], name))
            prev = slices.get(uuid, [])
            if prev and ts <= events[prev[-1][1]][1]:
                fail("async track %d: a slice begins at %d, not after the previous one's end" % (uuid, ts))
            st.append(i)
        elif uuid in async_names and typ == 'TYPE_SLICE_END':
            if not st:
                fail("async track %d: slice end at %d without a slice" % (uuid, ts))
            begin = st.pop()
            if ts < events[begin][1]:
                fail("async track %d: slice ends at %d, before its begin at %d" % (uuid, ts, events[begin][1]))
            slices.setdefault(uuid, []).append((begin, i))
        elif uuid in async_names:
            fail("async track %d: %s event" % (uuid, typ))
        elif typ == 'TYPE_SLICE_BEGIN':
            st.append(name)
        elif typ == 'TYPE_SLICE_END':
            if not st:
                fail("thread %d: slice end at %d without a slice" % (tid, ts))
            st.pop()
        shown = ",".join("%s=%s:%s" % (a, k, v) for a, k, v in args)
        listing.append("%d %d %s %s %s%s" % (tid, ts, typ[5:], name or '-', shown,
                                             " async %d" % uuid if uuid in async_names else ""))
        if typ == 'TYPE_SLICE_END' and args == [('unfinished', 'bool', True)]:
            unfinished += 1
            continue
        per_track.setdefault(tid, []).append((ts, typ, name, args, seq_id, uuid, i))
    for tid, st in stacks.items():
        if st:
            fail("slices %s never end" % st)
    return listing, per_track, unfinished, pid_of, slices


def wall_ns(iso):
    """'2026-11-24T19:36:37.123456789Z' -> ns since the epoch."""
    secs, frac = iso.rstrip('Z').split('.')
    dt = datetime.strptime(secs, '%Y-%m-%dT%H:%M:%S').replace(tzinfo=timezone.utc)
    return int(dt.timestamp()) * 1000000000 + int(frac.ljust(9, '0'))


def main():
    protoc, proto, pftrace, print_json = sys.argv[1:5]
    include = proto.rsplit('/', 1)[0] if '/' in proto else '.'
    with open(pftrace, 'rb') as f:
        r = subprocess.run([protoc, '--decode=perfetto.protos.Trace', '-I', include, proto], stdin=f,
                           capture_output=True)
    if r.returncode != 0:
        fail("protoc cannot decode %s: %s" % (pftrace, r.stderr.decode(errors='replace').strip()))
    packets = parse_text(r.stdout.decode('latin-1')).get('packet', [])
    seqs, tracks, processes, events = read_trace(packets)

    listing, per_track, unfinished, pid_of, slices = thread_events(tracks, processes, events)
    print("\n".join(listing))
    if print_json == '-':  # the schema's rules and the listing only
        print("ok %d %d" % (len(packets), len(events)))
        return
    recs = [json.loads(line) for line in open(print_json, encoding='utf-8') if line.strip()]
    keyed = [parse_rule(a) for a in sys.argv[5:] if parse_rule(a)]
    roles = pairing({rec['name'] for rec in recs}, [a for a in sys.argv[5:] if not parse_rule(a)])
    spans, span_of = keyed_spans(recs, keyed)
    event_of = {}  # record index -> its event's index

    by_tid, first_wall = {}, {}
    for i, rec in enumerate(recs):
        by_tid.setdefault(rec['pid'], []).append((i, rec))
        if 'wall_time' in rec:
            first_wall.setdefault(rec['pid'], rec['wall_time'])
    if sorted(per_track) != sorted(by_tid):
        fail("threads %s, print has %s" % (sorted(per_track), sorted(by_tid)))
    for tid, recs_t in by_tid.items():
        got = per_track[tid]
        if len(got) != len(recs_t):
            fail("thread %d: %d events, print has %d records" % (tid, len(got), len(recs_t)))
        seq = seqs[got[0][4]]
        proc = recs_t[0][1].get('process')  # print names each record's process when there are several
        if proc and (pid_of[tid] != proc['pid'] or processes[proc['pid']][1] != proc['program']):
            fail("thread %d: in process %d %r, print says %r" % (tid, pid_of[tid], processes[pid_of[tid]][1], proc))
        if tid in first_wall and seq.realtime != wall_ns(first_wall[tid]):
            fail("thread %d: REALTIME %s, print's wall time %s" % (tid, seq.realtime, first_wall[tid]))
        for (ts, typ, name, args, _, uuid, ev), (i, rec) in zip(got, recs_t):
            want_typ, want_name, want_args = expected(rec, roles)
            want_ts, on_async = rec['timestamp_ns'], False
            role, span = span_of.get(i, (None, None))
            if role == 'begin':
                want_typ, want_name, on_async = 'TYPE_SLICE_BEGIN', span.func, True
            elif role == 'end':
                want_typ, want_name, on_async = 'TYPE_SLICE_END', None, True
                want_ts = max(want_ts, recs[span.begin]['timestamp_ns'])  # an end recorded before its begin
            elif role == 'instant':
                want_typ, want_name = 'TYPE_INSTANT', rec['name']
            where = "thread %d, %s at %d" % (tid, rec['name'], rec['timestamp_ns'])
            event_of[i] = ev
            if ts != want_ts:
                fail("%s: timestamp %d" % (where, ts))
            if on_async != (uuid != events[ev][6]):
                fail("%s: on track %d, want %s" % (where, uuid, "an async track" if on_async else "its thread's"))
            if typ != want_typ or name != want_name:
                fail("%s: %s %s, want %s %s" % (where, typ, name, want_typ, want_name))
            if [a[0] for a in args] != [a[0] for a in want_args]:
                fail("%s: arguments %s, want %s" % (where, [a[0] for a in args], [a[0] for a in want_args]))
            for (a, kind, v), (_, w) in zip(args, want_args):
                if not same_value(kind, v, w):
                    fail("%s: %s = %s %r, want %r" % (where, a, kind, v, w))
    check_spans(spans, recs, events, slices, event_of)
    print("ok %d %d %d" % (len(packets), len(events), unfinished))


def check_spans(spans, recs, events, slices, event_of):
    """Each keyed span is one slice of one async track: its begin's, closed by its end record's event, or by
    an unfinished end on its begin's thread at the time the exporter ended it."""
    end_of = {b: e for pairs in slices.values() for b, e in pairs}
    for span in spans:
        b = event_of[span.begin]
        where = "%s span begun at %d" % (span.func, recs[span.begin]['timestamp_ns'])
        if b not in end_of:
            fail("%s: its slice never ends" % where)
        e = events[end_of[b]]
        if span.end is not None and end_of[b] != event_of[span.end]:
            fail("%s: its slice is ended by %s at %d, not by its end record" % (where, e[2], e[1]))
        if span.end is None and (e[4] != [('unfinished', 'bool', True)] or e[1] != span.closed_at or
                                 e[6] != events[b][6]):
            fail("%s (%s): its slice ends at %d on sequence %d with %s, want unfinished at %d on its begin's" %
                 (where, span.why, e[1], e[5], e[4], span.closed_at))


if __name__ == '__main__':
    main()
