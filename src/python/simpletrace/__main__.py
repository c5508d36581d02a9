"""python3 -m simpletrace [--no-header] [TRACE-EVENTS] TRACE: the text QEMU's simpletrace.py prints.

One line per record: NAME DELTA pid=PID arg=0x... (strings as Python bytes),
DELTA the microseconds since the previous record. Without TRACE-EVENTS, the
declarations the trace carries are used. Exit status 1 with a message for a
trace that cannot be read, after the lines of every earlier record.
"""
import sys

import simpletrace


def main(argv):
    args = argv[1:]
    no_header = args[:1] == ['--no-header']
    args = args[no_header:]
    if len(args) not in (1, 2):
        sys.stderr.write('usage: %s [--no-header] <trace-events> <trace-file>\n\n' % argv[0])
        return 1
    try:
        with simpletrace.open(args[-1], args[0] if len(args) == 2 else None, no_header=no_header) as trace:
            trace.format_text(sys.stdout.buffer)
    except simpletrace.SimpleException as e:
        sys.stdout.flush()
        sys.stderr.write(str(e) + '\n')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
