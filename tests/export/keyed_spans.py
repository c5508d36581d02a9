"""What keyed pairing rules (--pair=BEGIN:END[=NAME]@ARG) make of `simpletrace print --format=json`'s
records, worked out from the records alone, for the checkers of the exports (check_perfetto.py,
async_test.py). The rule as the export documents it (src/export/README.md, "Keyed spans"): records in
print's order; a begin opens a span of its function keyed by (process, function, ARG's value); an end
closes the open span of the same key, whatever its thread, else it is an instant ("end without begin");
a begin whose key is open ends the older span at its own time ("key reused"); spans still open end at
the trace's last timestamp ("never ended").
"""

MASK64 = (1 << 64) - 1


def parse_rule(text):
    """'EVENT=B:FUNCTION@ARG' or 'EVENT=E:FUNCTION@ARG' -> (EVENT, 'B' or 'E', FUNCTION, ARG); None if not keyed."""
    event, role = text.split('=', 1)
    if '@' not in role:
        return None
    func, arg = role[2:].rsplit('@', 1)
    return event, role[0], func, arg


def key_value(v):
    """A key as the export compares it: an integer's 64 bits (signed or not), a char's value, else the text."""
    if isinstance(v, dict):
        v = v['value']
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v & MASK64
    if isinstance(v, str) and v.startswith('0x'):
        return int(v, 16)
    return v


class Span:
    """One keyed span: its begin record (index), and how it ended."""

    def __init__(self, func, begin):
        self.func, self.begin = func, begin
        self.end = None        # the index of its end record, when one ended it
        self.closed_at = None  # else the time the export ends it (unfinished) ...
        self.why = None        # ... 'reused' or 'never'


def keyed_spans(recs, rules):
    """(spans, roles): the spans in order of their begins, and per record index ('begin', span),
    ('end', span) or ('instant', None) for the records of keyed rules (rules: parse_rule()'s tuples)."""
    by_event = {event: (role, func, arg) for event, role, func, arg in rules}
    spans, roles, open_ = [], {}, {}
    last = max((r['timestamp_ns'] for r in recs), default=0)
    for i, rec in enumerate(recs):
        if rec['name'] not in by_event:
            continue
        role, func, arg = by_event[rec['name']]
        key = ((rec.get('process') or {}).get('pid'), func, key_value(rec['args'][arg]))
        if role == 'B':
            if key in open_:
                old = open_.pop(key)
                old.closed_at, old.why = rec['timestamp_ns'], 'reused'
            span = Span(func, i)
            spans.append(span)
            open_[key] = span
            roles[i] = ('begin', span)
        elif key in open_:
            span = open_.pop(key)
            span.end = i
            roles[i] = ('end', span)
        else:
            roles[i] = ('instant', None)
    for span in open_.values():
        span.closed_at, span.why = last, 'never'
    return spans, roles
