/*
 * uftrace.data: the one definition of the files we write for the real
 * `uftrace` (Debian's 0.13 and newer), shared by the function tracer
 * (src/functrace/) and the exporter (src/export/). Depends on nothing but
 * <stdint.h>. The full reader-side story, with what breaks uftrace, is
 * /work/shared/spec/uftrace-format.md; this is what we rely on.
 *
 * A directory holds, for one or more processes (sessions):
 *
 *   info            40-byte header (below) + text sections, one per bit
 *                   of info_mask, strictly in bit order (uftrace_write.h)
 *   task.txt        "SESS timestamp=S.NNNNNNNNN pid=P sid=SID exename="PATH""
 *                   then one "TASK timestamp=S.NNNNNNNNN tid=T pid=P" per
 *                   thread; SESS time <= TASK time <= the thread's first record
 *   sid-SID.map     /proc/PID/maps lines (all six fields), with a [stack]
 *                   line: without it uftrace finds no user symbol at all
 *   BASE.sym        symbols of the mapped file whose basename is BASE:
 *                   "%016x T name" lines, addresses relative to the file's
 *                   first map line, sorted, each run ended by a
 *                   "%016x ? __func_end" or, last, "? __sym_end" line
 *   events.txt      "EVENT: ID PROVIDER:NAME" for user events (FEAT_EVENT)
 *   TID.dat         the thread's records, no header (below)
 *
 * A record (`TID.dat` is a plain sequence of them), host byte order (the
 * `info` header says which), 16 bytes:
 *
 *   record := u64 time      nanoseconds; one clock for every file and
 *                           task.txt; non-decreasing within a file
 *             u64 data      bit  0-1   type: 0 ENTRY, 1 EXIT, 2 LOST, 3 EVENT
 *                           bit  2     more: a payload follows (never set by us)
 *                           bit  3-5   magic, always 5 (0b101)
 *                           bit  6-15  depth (the low 10 bits of it)
 *                           bit 16-63  addr (the low 48 bits of it)
 *
 *   ENTRY / EXIT: addr = the function's start address; depth = nesting,
 *     0 for the outermost frame; an EXIT carries its ENTRY's depth.
 *   LOST: addr = the number of records dropped just before it; uftrace
 *     prints `LOST n records` and restarts its stack from the next record.
 *   EVENT: addr = event id; ids from ST_UFT_EVENT_ID_USER up are named by
 *     events.txt. A user event cannot carry data: `more` on an event id
 *     uftrace does not know is fatal for it.
 *
 * Example (uftrace 0.13's own recording): bytes
 *   a7 4a bb 90 33 00 00 00  28 00 71 52 c5 53 c0 55
 * = time 0x3390bb4aa7, data 0x55c053c552710028: ENTRY, depth 0,
 *   addr 0x55c053c55271.
 *
 * uftrace checks the magic of every record (a wrong one drops the rest of
 * the file), builds nesting from the ENTRY/EXIT order, not from depth, and
 * uses depth only to start a task's stack and to resync after LOST.
 *
 * Everything here is usable from the function tracer's hooks: inline,
 * no_instrument_function, no call out.
 */
#ifndef ST_UFTRACE_FORMAT_H
#define ST_UFTRACE_FORMAT_H

#include <stdint.h>

/* --- records (TID.dat) ---------------------------------------------------- */

#define ST_UFT_REC_SIZE   16u
#define ST_UFT_REC_ENTRY  0u
#define ST_UFT_REC_EXIT   1u
#define ST_UFT_REC_LOST   2u
#define ST_UFT_REC_EVENT  3u
#define ST_UFT_REC_MAGIC  5u
#define ST_UFT_DEPTH_MASK UINT64_C(0x3ff)
#define ST_UFT_ADDR_MASK  UINT64_C(0xffffffffffff)

/* First id of user events (named in events.txt as PROVIDER:NAME). */
#define ST_UFT_EVENT_ID_USER 1000000u

/* The data word of a record (the `more` bit is always 0). */
static inline __attribute__((no_instrument_function, always_inline)) uint64_t
st__uft_rec_data(unsigned type, uint64_t depth, uint64_t addr)
{
    return (uint64_t)(type & 3u) | (uint64_t)ST_UFT_REC_MAGIC << 3 |
           (depth & ST_UFT_DEPTH_MASK) << 6 | (addr & ST_UFT_ADDR_MASK) << 16;
}

/* Fields of a data word, for readers and tests. */
static inline __attribute__((no_instrument_function)) unsigned st__uft_rec_type(uint64_t data)
{
    return (unsigned)(data & 3u);
}
static inline __attribute__((no_instrument_function)) unsigned st__uft_rec_more(uint64_t data)
{
    return (unsigned)(data >> 2 & 1u);
}
static inline __attribute__((no_instrument_function)) unsigned st__uft_rec_magic(uint64_t data)
{
    return (unsigned)(data >> 3 & 7u);
}
static inline __attribute__((no_instrument_function)) unsigned st__uft_rec_depth(uint64_t data)
{
    return (unsigned)(data >> 6 & ST_UFT_DEPTH_MASK);
}
static inline __attribute__((no_instrument_function)) uint64_t st__uft_rec_addr(uint64_t data)
{
    return data >> 16;
}

/* --- the `info` header ------------------------------------------------------ */

/*
 * info := header text-section*
 *
 *   off  size  field        value we write
 *     0     8  magic        "Ftrace!\0"
 *     8     4  version      4 (uftrace reads 3..4 only)
 *    12     2  header_size  40
 *    14     1  endian       1 little, 2 big (ELFDATA2LSB/MSB)
 *    15     1  class        2 for 64-bit, 1 for 32-bit
 *    16     8  feat_mask    ST_UFT_FEAT_* (TASK_SESSION is mandatory: without
 *                           it report, graph and dump --chrome crash)
 *    24     8  info_mask    ST_UFT_INFO_*: which text sections follow
 *    32     2  max_stack    deepest depth shown (used with FEAT_MAX_STACK)
 *    34     6  unused       0
 */
#define ST_UFT_INFO_MAGIC       "Ftrace!"
#define ST_UFT_INFO_VERSION     4u
#define ST_UFT_INFO_HEADER_SIZE 40u

#define ST_UFT_FEAT_PLTHOOK      (UINT64_C(1) << 0)
#define ST_UFT_FEAT_TASK_SESSION (UINT64_C(1) << 1)
#define ST_UFT_FEAT_SYM_REL_ADDR (UINT64_C(1) << 5)
#define ST_UFT_FEAT_MAX_STACK    (UINT64_C(1) << 6)
#define ST_UFT_FEAT_EVENT        (UINT64_C(1) << 7) /* read events.txt */

#define ST_UFT_INFO_EXE_NAME     (UINT64_C(1) << 0)
#define ST_UFT_INFO_EXE_BUILD_ID (UINT64_C(1) << 1)
#define ST_UFT_INFO_EXIT_STATUS  (UINT64_C(1) << 2)
#define ST_UFT_INFO_CMDLINE      (UINT64_C(1) << 3)
#define ST_UFT_INFO_CPUINFO      (UINT64_C(1) << 4)
#define ST_UFT_INFO_MEMINFO      (UINT64_C(1) << 5)
#define ST_UFT_INFO_OSINFO       (UINT64_C(1) << 6)
#define ST_UFT_INFO_TASKINFO     (UINT64_C(1) << 7)
#define ST_UFT_INFO_USAGEINFO    (UINT64_C(1) << 8)
#define ST_UFT_INFO_LOADINFO     (UINT64_C(1) << 9)
#define ST_UFT_INFO_RECORD_DATE  (UINT64_C(1) << 11)
#define ST_UFT_INFO_PATTERN_TYPE (UINT64_C(1) << 12)
#define ST_UFT_INFO_VERSION_TEXT (UINT64_C(1) << 13)

/* uftrace 0.13 reads each events.txt name into a 512-byte buffer with an
 * unbounded sscanf("%s") (a longer one overruns it: replay, report and dump
 * crash); .sym names fare little better in dump --chrome. So no name we write
 * is longer: a longer one is cut, ending in ST_UFT_NAME_CUT. */
#define ST_UFT_NAME_MAX 511u
#define ST_UFT_NAME_CUT "..."

/* uftrace reads most info lines with a 4096-byte fgets(): a longer line
 * breaks the whole file, so the command line is cut well before that. */
#define ST_UFT_CMDLINE_MAX 3000u

#endif /* ST_UFTRACE_FORMAT_H */
