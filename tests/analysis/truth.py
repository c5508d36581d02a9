"""The spans of a trace computed from `simpletrace print --format=json`, independently of src/analysis:
the truth the latency (and compare) tests hold `simpletrace latency` to.

The rules are those simpletrace-latency(1) and src/export/export.h state, written again here from
their text: pairing rules BEGIN:END[=NAME][@ARG] tried in order (the caller's, then *_enter:*_exit,
*_begin:*_end, *_start:*_done), an event pairing with a declared partner not yet paired; spans nest
per thread (an end closes its function's innermost open frame, the frames above it are closed with it
and count as unfinished, an end whose function is not open is an end without begin); a keyed rule
matches begin and end by the value of ARG across the threads of one process (a key beginning again
while open: the older one counts as key_reused); frames and keys still open at the end are
unfinished. Self time is a span's duration minus the time of the frames nested directly in it (those
closed early count up to their closing). Quantiles by nearest rank: the value of rank ceil(q*n).
"""
import collections
import fractions
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
import v4_decode  # noqa: E402

BUILTIN = ('*_enter:*_exit', '*_begin:*_end', '*_start:*_done')
QUANTILES = (('p50', '0.5'), ('p90', '0.9'), ('p99', '0.99'), ('p999', '0.999'))


def declarations(path):
    """{event name: [argument names]} of a trace-events file, in file order."""
    return {n: [a for _, a in args] for n, args in v4_decode.parse_events(path).items() if n != 'Dropped_Event'}


def _side(text):
    pre, star, suf = text.partition('*')
    return pre, suf, bool(star)


def _match(side, name):
    pre, suf, star = side
    if not star:
        return '' if name == pre else None
    if len(name) >= len(pre) + len(suf) and name.startswith(pre) and name.endswith(suf):
        return name[len(pre):len(name) - len(suf)]
    return None


def roles(decl, pairs=(), default_pairs=True):
    """{event: ('begin'|'end', span name, key argument or None)} for the declared events decl."""
    role = {}
    for text in list(pairs) + (list(BUILTIN) if default_pairs else []):
        rule, _, key = text.partition('@')
        rule, _, name = rule.partition('=')
        b, e = rule.split(':')
        bs, es = _side(b), _side(e)
        for ev in decl:
            cap = _match(bs, ev)
            if ev in role or cap is None:
                continue
            partner = es[0] + cap + es[1] if es[2] else es[0]
            if partner == ev or partner not in decl or partner in role:
                continue
            if key and (key not in decl[ev] or key not in decl[partner]):
                continue
            if name:
                fname = name.replace('*', cap, 1)
            elif bs[2]:
                fname = cap or ev
            else:
                n = 0
                while n < min(len(ev), len(partner)) and ev[n] == partner[n]:
                    n += 1
                while n and ev[n - 1] in '_-.:':
                    n -= 1
                fname = ev[:n] if n else ev
            role[ev] = ('begin', fname, key or None)
            role[partner] = ('end', fname, key or None)
    return role


class Figures:
    """One span name in one group: what the truth says of it."""

    def __init__(self):
        self.spans = []  # dicts: begin_ns, duration_ns, pid, tid, end_tid, key, self_ns
        self.unfinished = 0
        self.unmatched_end = 0
        self.key_reused = 0

    def durations(self):
        return sorted(s['duration_ns'] for s in self.spans)


def process_of(rec, default_pid):
    """The process a record belongs to: print's "process" object when several are read, else default_pid."""
    p = rec.get('process')
    return p['pid'] if p else default_pid


def _value_text(v):
    if isinstance(v, bool):
        return 'true' if v else 'false'
    return str(v)


def spans(records, decl, pairs=(), default_pairs=True, by=None, default_pid=None):
    """{(span name, group): Figures} of records (print's JSON objects, in print's order). by: None, 'thread',
    'process' or an argument's name; group None without by."""
    role = roles(decl, pairs, default_pairs)
    figs = collections.defaultdict(Figures)
    stacks = collections.defaultdict(list)  # (pid, tid) -> frames [name, group, begin rec, child_ns]
    keyed = collections.defaultdict(dict)   # (pid, span name) -> {key: (group, begin rec)}

    def group(rec):
        if by is None:
            return None
        if by == 'thread':
            return str(rec['pid'])
        if by == 'process':
            return str(process_of(rec, default_pid))
        args = rec.get('args', {})
        return _value_text(args[by]) if by in args else ''

    for rec in records:
        r = role.get(rec['name'])
        if not r:
            continue
        kind, name, key = r
        pid, tid, ts = process_of(rec, default_pid), rec['pid'], rec['timestamp_ns']
        if key:
            open_keys = keyed[(pid, name)]
            k = _value_text(rec['args'][key])
            if kind == 'begin':
                if k in open_keys:
                    figs[(name, open_keys[k][0])].key_reused += 1
                open_keys[k] = (group(rec), rec)
            elif k in open_keys:
                g, b = open_keys.pop(k)
                d = ts - b['timestamp_ns']
                figs[(name, g)].spans.append(dict(begin_ns=b['timestamp_ns'], duration_ns=d, pid=pid, tid=b['pid'],
                                                  end_tid=tid, key=rec['args'][key], self_ns=d))
            else:
                figs[(name, group(rec))].unmatched_end += 1
            continue
        st = stacks[(pid, tid)]
        if kind == 'begin':
            st.append([name, group(rec), rec, 0])
            continue
        at = max((i for i, f in enumerate(st) if f[0] == name), default=None)
        if at is None:
            figs[(name, group(rec))].unmatched_end += 1
            continue
        while len(st) > at:
            fname, g, b, child = st.pop()
            d = ts - b['timestamp_ns']
            if st:
                st[-1][3] += d
            if len(st) == at:
                figs[(fname, g)].spans.append(dict(begin_ns=b['timestamp_ns'], duration_ns=d, pid=pid, tid=tid,
                                                   end_tid=tid, key=None, self_ns=d - child))
            else:
                figs[(fname, g)].unfinished += 1
    for st in stacks.values():
        for fname, g, _, _ in st:
            figs[(fname, g)].unfinished += 1
    for (pid, name), open_keys in keyed.items():
        for g, _ in open_keys.values():
            figs[(name, g)].unfinished += 1
    return dict(figs)


def nearest_rank(sorted_values, q):
    """The value of rank ceil(q * n) (q a decimal string, computed exactly)."""
    n = len(sorted_values)
    rank = max(1, math.ceil(fractions.Fraction(q) * n))
    return sorted_values[min(rank, n) - 1]


def slowest(spans_list, n):
    """The n slowest spans, slowest first (ties: earlier begin first)."""
    return sorted(spans_list, key=lambda s: (-s['duration_ns'], s['begin_ns']))[:n]


def problems(s, fig, self_time=True):
    """What differs between span s of latency's JSON and Figures fig: counts, min, max, total (and self time)
    exact, the mean within 0.5 ns, each percentile within 0.4% of its nearest-rank value (the man page's
    bound). A list of texts, empty when all agree."""
    d = fig.durations()
    out = []
    n = len(d)
    want = dict(count=n, unfinished=fig.unfinished, unmatched_end=fig.unmatched_end, key_reused=fig.key_reused,
                min_ns=d[0] if n else None, max_ns=d[-1] if n else None, total_ns=sum(d))
    if self_time:
        want['self_ns'] = sum(x['self_ns'] for x in fig.spans)
    for k, v in want.items():
        if s.get(k) != v:
            out.append('%s: %s, truth %s' % (k, s.get(k), v))
    if n and abs(s['mean_ns'] - sum(d) / n) > 0.5:
        out.append('mean_ns %s, truth %s' % (s['mean_ns'], sum(d) / n))
    for name, q in QUANTILES:
        exact = nearest_rank(d, q) if n else None
        got = s[name + '_ns']
        if (exact is None) != (got is None) or (n and abs(got - exact) > 0.004 * exact):
            out.append('%s_ns %s, nearest rank %s' % (name, got, exact))
    return out
