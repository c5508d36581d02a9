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
name); every B is closed; "ts" of non-metadata events is a number with
exactly three decimals. Exits 1 with "error: ..." on the first failure.
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
    stacks = {}
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
        args = json.dumps(ev.get("args", {}), separators=(",", ":"), ensure_ascii=True, default=str)
        print("%s %s %s %s %s" % (tid, ph, ev["name"], ts, args))
    for tid, st in stacks.items():
        if st:
            fail("thread %s ends with open B events %s" % (tid, st))
    print("ok %d" % len(doc["traceEvents"]))


main()
