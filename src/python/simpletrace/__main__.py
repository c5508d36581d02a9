"""python3 -m simpletrace [--no-header] [TRACE-EVENTS] TRACE: the text QEMU's simpletrace.py prints.

One line per record: NAME DELTA pid=PID arg=0x... (strings as Python bytes),
DELTA the microseconds since the previous record. Without TRACE-EVENTS, the
declarations the trace carries are used. Exit status 1 with a one-line
message for a file that cannot be opened or a trace that cannot be read
(after the lines of every earlier record), or wrong arguments (usage).
"""
import sys

import simpletrace

# simpletrace.py's usage line, which scripts may expect; <trace-events> is optional here.
USAGE = 'usage: python3 -m simpletrace [--no-header] <trace-events> <trace-file>\n'
HELP = USAGE + '''
Prints the records of <trace-file> as QEMU's simpletrace.py does: one line
per record, NAME DELTA pid=PID arg=0x... (strings as Python bytes), DELTA
the microseconds since the previous record.

  <trace-events>  the trace-events file declaring the events; may be left
                  out for traces that carry their declarations (simpletrace's)
  --no-header     the trace has no header (event IDs index the declared events)
  -h, --help      this text
'''


def message(e):
    """One line for an error: an OSError as FILE: what, others as their text."""
    if isinstance(e, OSError) and e.filename is not None:
        return '%s: %s' % (e.filename, e.strerror)
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e).strip().replace('\n', ' ')


def main(argv):
    args = argv[1:]
    if args[:1] in (['-h'], ['--help']):
        sys.stdout.write(HELP)
        return 0
    no_header = args[:1] == ['--no-header']
    args = args[no_header:]
    if len(args) not in (1, 2) or any(a.startswith('-') and a != '-' for a in args):
        sys.stderr.write(USAGE)
        return 1
    try:
        with simpletrace.open(args[-1], args[0] if len(args) == 2 else None, no_header=no_header) as trace:
            trace.format_text(sys.stdout.buffer)
    except simpletrace.SimpleException as e:
        sys.stdout.flush()
        sys.stderr.write('python3 -m simpletrace: %s\n' % message(e))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
