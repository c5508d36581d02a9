/*
 * Perfetto's protobuf trace format: the one definition of what
 * `simpletrace export --format=perfetto` writes (src/export/perfetto.c).
 * Field numbers and wire types are those of Perfetto's merged schema,
 * protos/perfetto/trace/perfetto_trace.proto (tests decode our files
 * against it with `protoc --decode=perfetto.protos.Trace`). Depends on
 * nothing but <stdint.h>.
 *
 * Protobuf on the wire: a message is a run of fields, each a key
 * varint(field_number << 3 | wire_type) and a value:
 *   wire type 0 (VARINT): a base-128 varint, low groups first, bit 7 set on
 *       all but the last byte. int64 negatives are their two's complement
 *       as uint64, so they take 10 bytes; bool is 0 or 1.
 *   wire type 2 (LEN): varint(byte length) then the bytes: strings (UTF-8)
 *       and nested messages.
 * A file is a Trace message: repeated `packet` fields, so packets can be
 * appended as they are made.
 *
 * The messages and fields we use (type, field number):
 *
 *   Trace            packet TracePacket 1
 *   TracePacket      timestamp uint64 8; timestamp_clock_id uint32 58 (a packet's own clock,
 *                    instead of the sequence's default); trusted_packet_sequence_id uint32 10;
 *                    sequence_flags uint32 13; interned_data InternedData 12;
 *                    trace_packet_defaults TracePacketDefaults 59;
 *                    first_packet_on_sequence bool 87; and one of:
 *                    clock_snapshot ClockSnapshot 6, track_event TrackEvent 11,
 *                    track_descriptor TrackDescriptor 60
 *   TracePacketDefaults  timestamp_clock_id uint32 58;
 *                    track_event_defaults TrackEventDefaults 11
 *   TrackEventDefaults   track_uuid uint64 11
 *   ClockSnapshot    clocks Clock 1 (repeated); primary_trace_clock enum 2
 *   ClockSnapshot.Clock  clock_id uint32 1; timestamp uint64 2; is_incremental bool 3
 *   TrackDescriptor  uuid uint64 1; name string 2; process ProcessDescriptor 3;
 *                    thread ThreadDescriptor 4; parent_uuid uint64 5
 *   ProcessDescriptor    pid int32 1; cmdline string 2 (repeated); process_name string 6
 *   ThreadDescriptor pid int32 1; tid int64 2; thread_name string 5
 *   TrackEvent       debug_annotations DebugAnnotation 4 (repeated); type enum 9;
 *                    name_iid uint64 10; track_uuid uint64 11
 *   DebugAnnotation  name_iid uint64 1; and one of: bool_value bool 2,
 *                    uint_value uint64 3, int_value int64 4, string_value string 6,
 *                    pointer_value uint64 7
 *   InternedData     event_names EventName 2; debug_annotation_names DebugAnnotationName 3
 *   EventName, DebugAnnotationName   iid uint64 1; name string 2
 *
 * Sequences (the schema's rules): packets with the same
 * trusted_packet_sequence_id form a sequence, read in file order. Interned
 * names (iid -> string) and TracePacketDefaults are the sequence's
 * incremental state: its first packet carries SEQ_INCREMENTAL_STATE_CLEARED,
 * every packet relying on that state (all later ones, once defaults are
 * set) carries SEQ_NEEDS_INCREMENTAL_STATE, and a name is defined in
 * InternedData in or before the first packet that uses its iid (iid 0 is
 * invalid). Clocks 64..127 are scoped to their sequence; one declared
 * is_incremental in a ClockSnapshot makes each later packet's timestamp a
 * delta from the previous packet's (the first from the snapshot's value);
 * a packet naming another clock (timestamp_clock_id) neither uses nor moves it.
 *
 * Tracks: a TrackDescriptor with a thread (or process) describes that
 * thread's (process's) track; one with only a name and a parent_uuid is a
 * track of its own under its parent (an async track: a TrackEvent names it
 * in track_uuid, from any sequence, and its slices nest among themselves
 * only, in time order).
 */
#ifndef ST_PERFETTO_FORMAT_H
#define ST_PERFETTO_FORMAT_H

#include <stdint.h>

/* Wire types. */
#define ST_PB_VARINT 0u
#define ST_PB_LEN 2u

/* A field's key: the varint to write before its value. */
#define ST_PB_KEY(field, wire) (((uint32_t)(field) << 3) | (wire))

/* Trace */
#define ST_PF_TRACE_PACKET 1

/* TracePacket */
#define ST_PF_PACKET_CLOCK_SNAPSHOT 6
#define ST_PF_PACKET_TIMESTAMP 8
#define ST_PF_PACKET_SEQUENCE_ID 10
#define ST_PF_PACKET_TRACK_EVENT 11
#define ST_PF_PACKET_INTERNED_DATA 12
#define ST_PF_PACKET_SEQUENCE_FLAGS 13
#define ST_PF_PACKET_TIMESTAMP_CLOCK_ID 58
#define ST_PF_PACKET_DEFAULTS 59
#define ST_PF_PACKET_TRACK_DESCRIPTOR 60
#define ST_PF_PACKET_FIRST_ON_SEQUENCE 87

/* TracePacket.SequenceFlags */
#define ST_PF_SEQ_INCREMENTAL_STATE_CLEARED 1u
#define ST_PF_SEQ_NEEDS_INCREMENTAL_STATE 2u

/* TracePacketDefaults, TrackEventDefaults */
#define ST_PF_DEFAULTS_TIMESTAMP_CLOCK_ID 58
#define ST_PF_DEFAULTS_TRACK_EVENT 11
#define ST_PF_TRACK_EVENT_DEFAULTS_TRACK_UUID 11

/* ClockSnapshot, ClockSnapshot.Clock */
#define ST_PF_CLOCK_SNAPSHOT_CLOCKS 1
#define ST_PF_CLOCK_SNAPSHOT_PRIMARY 2
#define ST_PF_CLOCK_ID 1
#define ST_PF_CLOCK_TIMESTAMP 2
#define ST_PF_CLOCK_IS_INCREMENTAL 3

/* BuiltinClock ids, and the first sequence-scoped one. */
#define ST_PF_CLOCK_REALTIME 1u
#define ST_PF_CLOCK_MONOTONIC 3u
#define ST_PF_CLOCK_FIRST_SEQUENCE_SCOPED 64u

/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
#define ST_PF_TRACK_UUID 1
#define ST_PF_TRACK_NAME 2
#define ST_PF_TRACK_PROCESS 3
#define ST_PF_TRACK_THREAD 4
#define ST_PF_TRACK_PARENT_UUID 5
#define ST_PF_PROCESS_PID 1
#define ST_PF_PROCESS_CMDLINE 2
#define ST_PF_PROCESS_NAME 6
#define ST_PF_THREAD_PID 1
#define ST_PF_THREAD_TID 2
#define ST_PF_THREAD_NAME 5

/* TrackEvent and its Type enum */
#define ST_PF_EVENT_DEBUG_ANNOTATIONS 4
#define ST_PF_EVENT_TYPE 9
#define ST_PF_EVENT_NAME_IID 10
#define ST_PF_EVENT_TRACK_UUID 11
#define ST_PF_TYPE_SLICE_BEGIN 1u
#define ST_PF_TYPE_SLICE_END 2u
#define ST_PF_TYPE_INSTANT 3u

/* DebugAnnotation */
#define ST_PF_ANNOTATION_NAME_IID 1
#define ST_PF_ANNOTATION_BOOL 2
#define ST_PF_ANNOTATION_UINT 3
#define ST_PF_ANNOTATION_INT 4
#define ST_PF_ANNOTATION_STRING 6
#define ST_PF_ANNOTATION_POINTER 7

/* InternedData, EventName, DebugAnnotationName */
#define ST_PF_INTERNED_EVENT_NAMES 2
#define ST_PF_INTERNED_ANNOTATION_NAMES 3
#define ST_PF_INTERNED_IID 1
#define ST_PF_INTERNED_NAME 2

#endif /* ST_PERFETTO_FORMAT_H */
