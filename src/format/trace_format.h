/*
 * The simpletrace file format: one definition shared by the writer (runtime)
 * and the reader. Depends on nothing but the C library.
 *
 * All integers are in the byte order of the host that wrote the file, with
 * no padding. A reader detects the writer's byte order from the header
 * magic: it reads ST_HEADER_MAGIC directly or byte-swapped.
 *
 * Version 4 (what the runtime writes; QEMU 2.8 and later):
 *
 *   file     := header (mapping | event)*
 *   header   := u64 0xffffffffffffffff   header event id
 *               u64 0xf2b177cb0aa429b4   magic
 *               u64 4                    version                 24 bytes
 *   mapping  := u64 0                    record type "mapping"
 *               u64 event_id
 *               u32 name_len
 *               name_len bytes           event name, no NUL
 *   event    := u64 type                 1; readers take any type != 0 as an event
 *               u64 event_id             0xfffffffffffffffe = dropped record
 *               u64 timestamp_ns         CLOCK_MONOTONIC nanoseconds
 *               u32 length               24 + payload length (excludes the type)
 *               u32 pid                  the runtime stores the thread id
 *               payload
 *   payload  := arg*                     in declaration order
 *   arg      := u64 value                integers (sign-extended), pointers, bool
 *             | u32 slen, slen bytes     strings; NULL and "" both slen 0;
 *                                        slen <= 512, cut without NUL
 *   dropped  := event with id 0xfffffffffffffffe, length 32, payload u64 count
 *               (pid: the thread that lost the events; 0xffffffff: events of
 *               no thread; 0xfffffffe: records lost because writing the trace
 *               file failed, e.g. a full disk, not to a full buffer)
 *
 * Mapping records may appear anywhere; a later mapping of an ID replaces
 * the earlier one for the records that follow it.
 *
 * Versions 2 and 3: same header with version 2 or 3; each record is
 *   u64 event_id | u64 timestamp_ns | u32 length | u32 pid-or-reserved | payload
 * (no type word, no mappings; IDs index the trace-events file).
 *
 * Version 0: fixed 64-byte records: u64 event_id | u64 timestamp_ns | u64 x1..x6.
 * The header is the first record: id 0xffff..., timestamp = magic, x1 = 0.
 */
#ifndef ST_FORMAT_TRACE_FORMAT_H
#define ST_FORMAT_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ST_HEADER_EVENT_ID   UINT64_C(0xffffffffffffffff)
#define ST_HEADER_MAGIC      UINT64_C(0xf2b177cb0aa429b4)
#define ST_DROPPED_EVENT_ID  UINT64_C(0xfffffffffffffffe)
#define ST_FORMAT_VERSION    4

#define ST_RECORD_TYPE_MAPPING 0
#define ST_RECORD_TYPE_EVENT   1

#define ST_HEADER_SIZE        24u  /* id, magic, version */
#define ST_V0_RECORD_SIZE     64u  /* id, timestamp, 6 args */
#define ST_V0_ARGS            6u
#define ST_MAPPING_FIXED_SIZE 20u  /* type, id, name_len */
#define ST_EVENT_FIXED_SIZE   32u  /* type, id, timestamp, length, pid */
#define ST_V2_FIXED_SIZE      24u  /* id, timestamp, length, pid */
#define ST_LENGTH_BASE        24u  /* what "length" counts besides the payload */
#define ST_DROPPED_LENGTH     32u  /* length field of a dropped record */
#define ST_DROPPED_RECORD_SIZE 40u /* a whole dropped record, type word included */

/*
 * The pid of a dropped record that counts records lost to a failed write of
 * the trace file (ENOSPC, EFBIG, EIO), so readers tell them from the drops
 * of full thread buffers. No thread has this id (Linux's are below 2^22).
 */
#define ST_PID_WRITE_LOST UINT32_C(0xfffffffe)

#define ST_MAX_STRLEN 512u  /* longer strings are cut to this many bytes */
#define ST_MAX_ARGS   10u   /* most arguments an event may declare */
#define ST_MAX_NAME   1024u /* longest event name the tools accept */

/* Largest event record the writer can produce, type word included. */
#define ST_MAX_EVENT_RECORD (ST_EVENT_FIXED_SIZE + ST_MAX_ARGS * (4u + ST_MAX_STRLEN))

/* Byte offsets inside an event record (from its type word). */
enum {
    ST_EV_OFF_TYPE = 0,
    ST_EV_OFF_ID = 8,
    ST_EV_OFF_TIMESTAMP = 16,
    ST_EV_OFF_LENGTH = 24,
    ST_EV_OFF_PID = 28,
    ST_EV_OFF_PAYLOAD = 32,
};

/* Host-order stores and loads at any alignment. */
static inline void st__fmt_put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline void st__fmt_put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline uint64_t st__fmt_get_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static inline uint32_t st__fmt_get_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/*
 * Whether the len bytes at p start with a trace file's header (its
 * magic in either byte order): 1 with *version set, else 0. What tells a
 * trace from a trace-events file given in its place.
 */
static inline int st__fmt_is_header(const uint8_t *p, size_t len, uint64_t *version)
{
    if (len < ST_HEADER_SIZE || st__fmt_get_u64(p) != ST_HEADER_EVENT_ID)
        return 0;
    uint64_t magic = st__fmt_get_u64(p + 8), v = st__fmt_get_u64(p + 16);
    if (magic != ST_HEADER_MAGIC && __builtin_bswap64(magic) != ST_HEADER_MAGIC)
        return 0;
    *version = magic == ST_HEADER_MAGIC ? v : __builtin_bswap64(v);
    return 1;
}

/* Loads that swap when the file came from a host of the other byte order. */
static inline uint64_t st__fmt_load_u64(const uint8_t *p, int swap)
{
    uint64_t v = st__fmt_get_u64(p);
    return swap ? __builtin_bswap64(v) : v;
}
static inline uint32_t st__fmt_load_u32(const uint8_t *p, int swap)
{
    uint32_t v = st__fmt_get_u32(p);
    return swap ? __builtin_bswap32(v) : v;
}

/* Writes the 24-byte v4 header at p; returns its size. */
static inline size_t st__fmt_put_header(uint8_t *p)
{
    st__fmt_put_u64(p, ST_HEADER_EVENT_ID);
    st__fmt_put_u64(p + 8, ST_HEADER_MAGIC);
    st__fmt_put_u64(p + 16, ST_FORMAT_VERSION);
    return ST_HEADER_SIZE;
}

/* Size of the mapping record for a name of name_len bytes. */
static inline size_t st__fmt_mapping_size(size_t name_len)
{
    return ST_MAPPING_FIXED_SIZE + name_len;
}

/* Writes a mapping record at p (room for st__fmt_mapping_size()); returns its size. */
/*
 * The size the record written in the host's order at p claims (len bytes
 * there), or 0 when fewer bytes than its fixed part are there to tell. Not
 * checked against len: a caller that wants the whole record compares.
 */
static inline size_t st__fmt_record_claim(const uint8_t *p, size_t len)
{
    if (len < ST_MAPPING_FIXED_SIZE)
        return 0;
    if (st__fmt_get_u64(p) == ST_RECORD_TYPE_MAPPING)
        return st__fmt_mapping_size(st__fmt_get_u32(p + 16));
    return len >= ST_EVENT_FIXED_SIZE ? 8 + (size_t)st__fmt_get_u32(p + ST_EV_OFF_LENGTH) : 0;
}

static inline size_t st__fmt_put_mapping(uint8_t *p, uint64_t id, const char *name, uint32_t name_len)
{
    st__fmt_put_u64(p, ST_RECORD_TYPE_MAPPING);
    st__fmt_put_u64(p + 8, id);
    st__fmt_put_u32(p + 16, name_len);
    memcpy(p + ST_MAPPING_FIXED_SIZE, name, name_len);
    return st__fmt_mapping_size(name_len);
}

/* Writes the fixed part of an event record; the payload follows at p + 32. */
static inline void st__fmt_put_event_header(uint8_t *p, uint64_t id, uint64_t timestamp_ns,
                                           uint32_t payload_len, uint32_t pid)
{
    st__fmt_put_u64(p + ST_EV_OFF_TYPE, ST_RECORD_TYPE_EVENT);
    st__fmt_put_u64(p + ST_EV_OFF_ID, id);
    st__fmt_put_u64(p + ST_EV_OFF_TIMESTAMP, timestamp_ns);
    st__fmt_put_u32(p + ST_EV_OFF_LENGTH, ST_LENGTH_BASE + payload_len);
    st__fmt_put_u32(p + ST_EV_OFF_PID, pid);
}

/* Writes a complete 40-byte dropped record; returns its size. */
static inline size_t st__fmt_put_dropped(uint8_t *p, uint64_t timestamp_ns, uint32_t pid, uint64_t count)
{
    st__fmt_put_event_header(p, ST_DROPPED_EVENT_ID, timestamp_ns, 8, pid);
    st__fmt_put_u64(p + ST_EV_OFF_PAYLOAD, count);
    return ST_EVENT_FIXED_SIZE + 8;
}

#endif /* ST_FORMAT_TRACE_FORMAT_H */
