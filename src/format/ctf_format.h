/*
 * CTF 1.8 (Common Trace Format): the one definition of the trace
 * `simpletrace export --format=ctf` writes (src/export/ctf.c) for
 * babeltrace2 and Trace Compass. Depends on nothing but <stdint.h>.
 *
 * A trace is a directory:
 *   metadata          the TSDL text below: types, the trace, the clock,
 *                     the stream class, then one `event` block per event
 *   stream-PID-TID    one binary data stream per thread: packets, back to
 *                     back, in the byte order the metadata names (ours:
 *                     the writer's)
 *
 * Every integer is byte-aligned (align = 8), so nothing is ever padded.
 * A packet (sizes in bits in the header, as CTF counts them):
 *
 *   offset  size  field                  (packet.header, the trace's)
 *        0     4  magic                  0xC1FC1FC1
 *        4    16  uuid                   the trace's uuid, as in the metadata
 *       20     4  stream_id              0: our one stream class
 *       24     8  stream_instance_id     the thread's index (order of first record)
 *                                        (packet.context, the stream class's)
 *       32     8  timestamp_begin        ns on clock "monotonic": first event's
 *       40     8  timestamp_end          ... and last event's time
 *       48     8  content_size           bits of header + context + events
 *       56     8  packet_size            the same: packets carry no padding
 *       64     8  packet_seq_num         0, 1, 2, ... per stream
 *       72     8  events_discarded       events the thread lost so far (dropped
 *                                        records' counts): babeltrace2 reports
 *                                        each increase between two packets
 *       80     4  pid                    the process
 *       84     4  tid                    the thread
 *       88        events follow
 *
 *   event := uint32 id          the event class: catalog index (Dropped_Event's own
 *                               index: 0 in a catalog read from the trace, count in
 *                               one of trace-events files); function_entry and
 *                               function_exit (export --functions) take the two
 *                               highest ids, beyond any index a catalog reaches
 *            uint64 timestamp   ns on clock "monotonic"
 *            fields             in declaration order, each named _NAME (readers
 *                               strip one leading underscore: TSDL keywords stay
 *                               usable as names):
 *              signed integers    int64_t
 *              unsigned integers  uint64_t
 *              bool               bool_t, an enum of uint8: "false" 0, "true" 1
 *              pointers           pointer_t, uint64 shown in hex
 *              strings            string: UTF-8, NUL-terminated
 *
 * The clock: freq 1 GHz (ns), CLOCK_MONOTONIC as recorded; offset_s and
 * offset place its zero on the wall clock, from the trace's clock anchor
 * (anchor_real - anchor_mono), so readers show wall-clock times; without an
 * anchor the offset is 0 and times read as seconds since boot.
 */
#ifndef ST_CTF_FORMAT_H
#define ST_CTF_FORMAT_H

#include <stdint.h>

#define ST_CTF_MAGIC UINT32_C(0xC1FC1FC1)
#define ST_CTF_UUID_BYTES 16

/* Byte offsets in a packet (above). */
enum {
    ST_CTF_PKT_MAGIC = 0,
    ST_CTF_PKT_UUID = 4,
    ST_CTF_PKT_STREAM_ID = 20,
    ST_CTF_PKT_STREAM_INSTANCE = 24,
    ST_CTF_PKT_TS_BEGIN = 32,
    ST_CTF_PKT_TS_END = 40,
    ST_CTF_PKT_CONTENT_SIZE = 48,
    ST_CTF_PKT_PACKET_SIZE = 56,
    ST_CTF_PKT_SEQ_NUM = 64,
    ST_CTF_PKT_DISCARDED = 72,
    ST_CTF_PKT_PID = 80,
    ST_CTF_PKT_TID = 84,
    ST_CTF_PKT_HEADER_BYTES = 88, /* header + context: the first event starts here */
};

/* The event class ids of function_entry and function_exit: far above every catalog index (the reader
 * refuses declaration ids over 2^20), so that a catalog growing during the export never meets them. */
#define ST_CTF_ID_FUNCTION_ENTRY UINT32_C(0xfffffffe)
#define ST_CTF_ID_FUNCTION_EXIT UINT32_C(0xffffffff)

/* Bytes of an event header (id, timestamp). */
#define ST_CTF_EVENT_HEADER_BYTES 12

/* The metadata's first line: readers recognise a text metadata file by it. */
#define ST_CTF_METADATA_SIGNATURE "/* CTF 1.8 */\n"

/* The metadata's types, declared before the trace block. */
#define ST_CTF_METADATA_TYPES \
    "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n" \
    "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n" \
    "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n" \
    "typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n" \
    "typealias integer { size = 64; align = 8; signed = false; base = 16; } := pointer_t;\n" \
    "typealias enum : uint8_t { \"false\" = 0, \"true\" = 1 } := bool_t;\n"

/* The trace block's packet header (the layout above); %s: the uuid, %s: "le" or "be". */
#define ST_CTF_METADATA_TRACE \
    "trace {\n" \
    "\tmajor = 1;\n" \
    "\tminor = 8;\n" \
    "\tuuid = \"%s\";\n" \
    "\tbyte_order = %s;\n" \
    "\tpacket.header := struct {\n" \
    "\t\tuint32_t magic;\n" \
    "\t\tuint8_t uuid[16];\n" \
    "\t\tuint32_t stream_id;\n" \
    "\t\tuint64_t stream_instance_id;\n" \
    "\t};\n" \
    "};\n"

/* The clock; %s: its description, %lld: offset_s, %llu: offset (ns). */
#define ST_CTF_METADATA_CLOCK \
    "clock {\n" \
    "\tname = \"monotonic\";\n" \
    "\tdescription = \"%s\";\n" \
    "\tfreq = 1000000000;\n" \
    "\tprecision = 1;\n" \
    "\toffset_s = %lld;\n" \
    "\toffset = %llu;\n" \
    "\tabsolute = FALSE;\n" \
    "};\n" \
    "typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } " \
    ":= uint64_clock_monotonic_t;\n"

/* The one stream class: the packet context and event header above. */
#define ST_CTF_METADATA_STREAM \
    "stream {\n" \
    "\tid = 0;\n" \
    "\tpacket.context := struct {\n" \
    "\t\tuint64_clock_monotonic_t timestamp_begin;\n" \
    "\t\tuint64_clock_monotonic_t timestamp_end;\n" \
    "\t\tuint64_t content_size;\n" \
    "\t\tuint64_t packet_size;\n" \
    "\t\tuint64_t packet_seq_num;\n" \
    "\t\tuint64_t events_discarded;\n" \
    "\t\tuint32_t pid;\n" \
    "\t\tuint32_t tid;\n" \
    "\t};\n" \
    "\tevent.header := struct {\n" \
    "\t\tuint32_t id;\n" \
    "\t\tuint64_clock_monotonic_t timestamp;\n" \
    "\t};\n" \
    "};\n"

#endif /* ST_CTF_FORMAT_H */
