/*
 * A compressed trace (compress=zstd): the v4 stream of trace_format.h cut
 * into independent zstd frames, plus skippable frames at the end that let
 * a reader jump (the time index, zstd's seek table) and answer without
 * decompressing (the summary). One definition for the writer (runtime/drain) and the
 * readers. Depends on nothing but the C library.
 *
 *   file        := data_frame+ [[summary] time_index seek_table]
 *   data_frame  := one zstd frame (magic 0xFD2FB528, content size and
 *                  content checksum set) holding whole v4 records: the
 *                  first one begins with the v4 header; decompressed and
 *                  concatenated, the frames are exactly the v4 stream, so
 *                  `zstd -d`, `zstdcat` and any zstd library give a
 *                  plain trace (they skip the skippable frames)
 *   summary     := skippable frame (little-endian), what the whole file holds,
 *                  so that a reader answers for it without decompressing
 *                  (simpletrace info); files written before it was have
 *                  none, and read as before:
 *                  u32 0x184D2A5C              ST_ZSUM_SKIP_MAGIC
 *                  u32 frame_size              bytes that follow
 *                  u32 0x4D535453 ("STSM")     ST_ZSUM_MAGIC
 *                  u32 1                       version
 *                  u32 count                   entries
 *                  u32 entry_size              16 (readers take larger, reading the first 16)
 *                  u64 write_lost_events       the counts of the dropped records of pid
 *                                              ST_PID_WRITE_LOST (trace_format.h): a failed write's
 *                  entry[count], one per event ID with records, in no order:
 *                    u64 id        the ID as the file's mapping records name it
 *                    u64 records   its event records in the file (dropped records not included)
 *                  It is the frame listed just before the time index, when
 *                  that one has decompressed size 0 and begins with these
 *                  magics; anything else there means no summary.
 *   time_index  := skippable frame (little-endian):
 *                  u32 0x184D2A5B              ST_ZTIME_SKIP_MAGIC
 *                  u32 frame_size              bytes that follow
 *                  u32 0x5A545453 ("STTZ")     ST_ZTIME_MAGIC
 *                  u32 1                       version
 *                  u32 count                   entries
 *                  u32 entry_size              40 (readers take larger, reading the first 40)
 *                  entry[count], one per seek-table entry before its own:
 *                    u64 first_ns   smallest timestamp of the frame's event and dropped records
 *                    u64 last_ns    largest (both 0 with ST_ZTIME_NOTIME)
 *                    u32 records    records in the frame (mappings included, the header not)
 *                    u32 events     event records (dropped records excluded)
 *                    u32 dropped_records
 *                    u32 flags      ST_ZTIME_META, ST_ZTIME_NOTIME, ST_ZTIME_NODATA
 *                    u64 dropped_events   sum of the dropped records' counts
 *   seek_table  := zstd's seekable format (contrib/seekable_format in the
 *                  zstd sources), little-endian:
 *                  u32 0x184D2A5E, u32 frame_size,
 *                  entry[n]: u32 compressed_size, u32 decompressed_size,
 *                            u32 checksum (low 32 bits of XXH64 of the
 *                            frame's content: the data frame's own
 *                            content checksum; 0 for skippable frames)
 *                  footer: u32 n, u8 descriptor (0x80: checksums), u32 0x8F92EAB1
 *                  The entries cover every frame before the seek table in
 *                  order (the summary with decompressed size 0), the time
 *                  index last (decompressed size 0), so tools that know the
 *                  seekable format seek in it as in any other.
 *
 * What a reader needs to start at frame k: the header and every mapping,
 * declaration, description and process record before it. The writer does
 * not repeat them (zstd -d must give the same stream as an uncompressed
 * run); instead a frame holding any of them has ST_ZTIME_META, and a
 * reader that skips frames decodes every META frame anyway, filtering its
 * events as usual. The counts let it keep record numbers and counters
 * exactly as a full read has them.
 *
 * Appending (the file turned off and on again): the old summary, time
 * index and seek table stay where they were, as frames of their own
 * (entries with decompressed size 0 and ST_ZTIME_NODATA), and new ones
 * end the file, the new summary counting the whole file.
 *
 * A file cut short (kill -9) has no seek table: it reads from the start,
 * frame after frame, up to the cut. A writer's pass makes whole frames,
 * so every frame before the cut is complete.
 */
#ifndef ST_FORMAT_ZSTD_SEEK_FORMAT_H
#define ST_FORMAT_ZSTD_SEEK_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define ST_ZSTD_FRAME_MAGIC     UINT32_C(0xFD2FB528) /* a zstd frame, as the file's first 4 bytes (LE) */
#define ST_ZSTD_SKIP_MAGIC_BASE UINT32_C(0x184D2A50) /* skippable frames: 0x184D2A50..5F */
#define ST_ZSEEK_SKIP_MAGIC     UINT32_C(0x184D2A5E)
#define ST_ZSEEK_FOOTER_MAGIC   UINT32_C(0x8F92EAB1)
#define ST_ZSEEK_FOOTER_SIZE    9u
#define ST_ZSEEK_CHECKSUMS      0x80u /* descriptor: entries have a checksum */
#define ST_ZSEEK_RESERVED       0x7cu /* descriptor bits a reader must find 0 */
#define ST_ZSEEK_ENTRY_SIZE     12u   /* with checksums; 8 without */
#define ST_ZSKIP_HEADER_SIZE    8u    /* magic, frame_size */

#define ST_ZTIME_SKIP_MAGIC UINT32_C(0x184D2A5B)
#define ST_ZTIME_MAGIC      UINT32_C(0x5A545453)
#define ST_ZTIME_VERSION    1u
#define ST_ZTIME_HEAD_SIZE  16u /* magic, version, count, entry_size */
#define ST_ZTIME_ENTRY_SIZE 40u

#define ST_ZTIME_META   0x1u /* the header, or a mapping record of any kind: read it to start later */
#define ST_ZTIME_NOTIME 0x2u /* no event or dropped record: first_ns and last_ns mean nothing */
#define ST_ZTIME_NODATA 0x4u /* a skippable frame (an earlier index): no trace bytes */

#define ST_ZSUM_SKIP_MAGIC UINT32_C(0x184D2A5C)
#define ST_ZSUM_MAGIC      UINT32_C(0x4D535453)
#define ST_ZSUM_VERSION    1u
#define ST_ZSUM_HEAD_SIZE  24u /* magic, version, count, entry_size, write_lost_events */
#define ST_ZSUM_ENTRY_SIZE 16u

/* Most frames a reader accepts in a seek table (zstd's own limit). */
#define ST_ZSEEK_MAX_FRAMES UINT32_C(0x8000000)

/* What the time index says of one frame. */
struct st__ztime_entry {
    uint64_t first_ns, last_ns;
    uint32_t records, events, dropped_records, flags;
    uint64_t dropped_events;
};

static inline void st__zle_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}
static inline void st__zle_put64(uint8_t *p, uint64_t v)
{
    st__zle_put32(p, (uint32_t)v);
    st__zle_put32(p + 4, (uint32_t)(v >> 32));
}
static inline uint32_t st__zle_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t st__zle_get64(const uint8_t *p)
{
    return st__zle_get32(p) | (uint64_t)st__zle_get32(p + 4) << 32;
}

/* Whether a 4-byte little-endian magic m starts a skippable frame. */
static inline int st__zskip_magic(uint32_t m)
{
    return (m & UINT32_C(0xFFFFFFF0)) == ST_ZSTD_SKIP_MAGIC_BASE;
}

/* Writes time-index entry e at p (ST_ZTIME_ENTRY_SIZE bytes). */
static inline void st__ztime_put(uint8_t *p, const struct st__ztime_entry *e)
{
    st__zle_put64(p, e->first_ns);
    st__zle_put64(p + 8, e->last_ns);
    st__zle_put32(p + 16, e->records);
    st__zle_put32(p + 20, e->events);
    st__zle_put32(p + 24, e->dropped_records);
    st__zle_put32(p + 28, e->flags);
    st__zle_put64(p + 32, e->dropped_events);
}

/* Reads the time-index entry at p (ST_ZTIME_ENTRY_SIZE bytes). */
static inline void st__ztime_get(const uint8_t *p, struct st__ztime_entry *e)
{
    e->first_ns = st__zle_get64(p);
    e->last_ns = st__zle_get64(p + 8);
    e->records = st__zle_get32(p + 16);
    e->events = st__zle_get32(p + 20);
    e->dropped_records = st__zle_get32(p + 24);
    e->flags = st__zle_get32(p + 28);
    e->dropped_events = st__zle_get64(p + 32);
}

/* Size of the summary frame for count entries. */
static inline uint64_t st__zsum_frame_size(uint32_t count)
{
    return ST_ZSKIP_HEADER_SIZE + ST_ZSUM_HEAD_SIZE + (uint64_t)count * ST_ZSUM_ENTRY_SIZE;
}

/* Size of the time-index frame for count entries, and of the seek-table frame for n entries. */
static inline uint64_t st__ztime_frame_size(uint32_t count)
{
    return ST_ZSKIP_HEADER_SIZE + ST_ZTIME_HEAD_SIZE + (uint64_t)count * ST_ZTIME_ENTRY_SIZE;
}
static inline uint64_t st__zseek_frame_size(uint32_t n)
{
    return ST_ZSKIP_HEADER_SIZE + (uint64_t)n * ST_ZSEEK_ENTRY_SIZE + ST_ZSEEK_FOOTER_SIZE;
}

#endif /* ST_FORMAT_ZSTD_SEEK_FORMAT_H */
