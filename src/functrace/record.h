/*
 * The uftrace function-call record: the one definition of a `<tid>.dat`
 * record, used by the hooks that write it and the tests that read it back.
 * Depends on nothing but <stdint.h>.
 *
 * A `<tid>.dat` file is a plain sequence of 16-byte records, no header,
 * little-endian on x86-64 (host byte order; the `info` header says which):
 *
 *   record := u64 time      nanoseconds; the same clock in every file of a
 *                           directory and in task.txt (we write
 *                           CLOCK_MONOTONIC); non-decreasing within a file
 *             u64 data      bit  0-1   type: 0 ENTRY, 1 EXIT, 2 LOST, 3 EVENT
 *                           bit  2     more: a payload follows (never set here)
 *                           bit  3-5   magic, always 5 (0b101)
 *                           bit  6-15  depth (the low 10 bits of it)
 *                           bit 16-63  addr (the low 48 bits of it)
 *
 *   ENTRY / EXIT: addr = the function's start address (`this_fn` of
 *     -finstrument-functions); depth = nesting among the *recorded* frames of
 *     the thread, 0 for the outermost; an EXIT carries its ENTRY's depth.
 *   LOST: addr = the number of records dropped just before it; uftrace
 *     prints `LOST n records` and restarts its stack from the next record.
 *
 * Example (uftrace 0.13's own recording): bytes
 *   a7 4a bb 90 33 00 00 00  28 00 71 52 c5 53 c0 55
 * = time 0x3390bb4aa7, data 0x55c053c552710028: ENTRY, depth 0,
 *   addr 0x55c053c55271.
 *
 * The reader checks the magic of every record (a wrong one drops the rest of
 * the file), builds nesting from the ENTRY/EXIT order, not from depth, and
 * uses depth only to start a task's stack and to resync after LOST.
 */
#ifndef ST_FUNCTRACE_RECORD_H
#define ST_FUNCTRACE_RECORD_H

#include <stdint.h>

#define ST_FT_REC_SIZE   16u
#define ST_FT_REC_ENTRY  0u
#define ST_FT_REC_EXIT   1u
#define ST_FT_REC_LOST   2u
#define ST_FT_REC_EVENT  3u
#define ST_FT_REC_MAGIC  5u
#define ST_FT_DEPTH_MASK UINT64_C(0x3ff)
#define ST_FT_ADDR_MASK  UINT64_C(0xffffffffffff)

/* The data word of a record (the `more` bit is always 0). */
static inline __attribute__((no_instrument_function, always_inline)) uint64_t
st__ft_rec_data(unsigned type, uint64_t depth, uint64_t addr)
{
    return (uint64_t)(type & 3u) | (uint64_t)ST_FT_REC_MAGIC << 3 |
           (depth & ST_FT_DEPTH_MASK) << 6 | (addr & ST_FT_ADDR_MASK) << 16;
}

/* Fields of a data word, for readers and tests. */
static inline __attribute__((no_instrument_function)) unsigned st__ft_rec_type(uint64_t data)
{
    return (unsigned)(data & 3u);
}
static inline __attribute__((no_instrument_function)) unsigned st__ft_rec_more(uint64_t data)
{
    return (unsigned)(data >> 2 & 1u);
}
static inline __attribute__((no_instrument_function)) unsigned st__ft_rec_magic(uint64_t data)
{
    return (unsigned)(data >> 3 & 7u);
}
static inline __attribute__((no_instrument_function)) unsigned st__ft_rec_depth(uint64_t data)
{
    return (unsigned)(data >> 6 & ST_FT_DEPTH_MASK);
}
static inline __attribute__((no_instrument_function)) uint64_t st__ft_rec_addr(uint64_t data)
{
    return data >> 16;
}

#endif /* ST_FUNCTRACE_RECORD_H */
