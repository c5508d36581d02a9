#!/usr/bin/env python3
"""Checks a Chrome trace-event JSON file and prints it in a normalised form.

    check_chrome.py FILE

Parses FILE strictly (UTF-8, standard JSON, numbers kept exact as Decimal),
checks the structure viewers rely on, and prints one line per event:

    TID PH NAME TS ARGS          (ARGS as compact JSON, keys in file order)

followed by "ok EVENTS" when every check passed. Checks: the top level is
an object with a traceEvents array; every event has name, ph and pid (tid
defaults to pid, as uftrace writes it);
B/E pairs nest per thread (an E closes the innermost open B of the same
name); every B is closed; async b/e events (keyed spans) have a "cat" and an
"id", an e closes the open b of the same process, category and id (on any
thread), of the same name and not later than it, and every b is closed;
"ts" of non-metadata events is a number with exactly three decimals. Exits 1
with "error: ..." on the first failure.
"""
import decimal
import json
import sys


def fail(msg):
    print("error: " + msg)
    sys.exit(1)


def main():
    raw = open(sys.argv[1], "rb").read()
    try:
        text = raw.decode("utf-8")
        doc = json.loads(text, parse_float=decimal.Decimal)
    except (UnicodeDecodeError, ValueError) as e:
        fail("not valid JSON: %s" % e)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("no traceEvents array")
    stacks, spans = {}, {}
    for ev in doc["traceEvents"]:
        for key in ("name", "ph", "pid"):
            if key not in ev:
                fail("event without %s: %r" % (key, ev))
        ph, tid = ev["ph"], ev.get("tid", ev["pid"])  # uftrace leaves tid out when it is the pid
        ts = ev.get("ts", "-")
        if ph != "M" and not (isinstance(ts, decimal.Decimal) and ts.as_tuple().exponent == -3):
            fail("ts %s of %s is not microseconds with three decimals" % (ts, ev["name"]))
        if ph == "B":
            stacks.setdefault(tid, []).append(ev["name"])
        elif ph == "E":
            st = stacks.get(tid, [])
            if not st or st[-1] != ev["name"]:
                fail("E %s on thread %s does not close the innermost B (%s)" % (ev["name"], tid, st))
            st.pop()
        elif ph in ("b", "e"):
            if not isinstance(ev.get("cat"), str) or not isinstance(ev.get("id"), (str, int)):
                fail("async %s %s without cat or id: %r" % (ph, ev["name"], ev))
            key = (ev["pid"], ev["cat"], ev["id"])
            if ph == "b" and key in spans:
                fail("async b %s (id %s) while that id is open" % (ev["name"], ev["id"]))
            if ph == "e" and (key not in spans or spans[key] != (ev["name"], min(spans[key][1], ts))):
                fail("async e %s (id %s) at %s closes no open b of its name before it (%s)" %
                     (ev["name"], ev["id"], ts, spans.get(key)))
            if ph == "b":
                spans[key] = (ev["name"], ts)
            else:
                del spans[key]
        args = json.dumps(ev.get("args", {}), separators=(",", ":"), ensure_ascii=True, default=str)
        print("%s %s %s %s %s" % (tid, ph, ev["name"], ts, args))
    for tid, st in stacks.items():
        if st:
            fail("thread %s ends with open B events %s" % (tid, st))
    if spans:
        fail("async b events never closed: %s" % sorted(spans))
    print("ok %d" % len(doc["traceEvents"]))


main()
