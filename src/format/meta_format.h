/*
 * What a simpletrace v4 file says about itself: the declarations of its
 * events and the process, host, clock and version that wrote it. One
 * definition for the writers (runtime, recover) and the reader. Depends on
 * nothing but the C library.
 *
 * The description travels in ordinary v4 mapping records (type 0,
 * trace_format.h) whose IDs no event record ever carries, so that a reader
 * knowing only types 0 and 1 (QEMU's simpletrace.py) stores them by ID like
 * any mapping and never looks them up: it prints exactly what it printed
 * before. Their name bytes are ASCII, hence valid UTF-8, which that reader
 * decodes every name as.
 *
 *   declaration  := mapping with ID ST_META_DECL_ID(event_id)
 *                   (0xfffffffe00000000 + the event's 32-bit ID)
 *                   name: the event's trace-events line, without newline:
 *                   [disable ]NAME(ARGS) "FORMAT"
 *                   (FORMAT with C escapes; a byte outside printable ASCII
 *                   as a three-digit octal escape \ooo)
 *   description  := mapping with ID ST_META_INFO_ID (0xffffffffffffff00)
 *                   name: lines "KEY=VALUE\n", the first "simpletrace=1"
 *                   (the description's version); VALUE escaped below
 *   process      := mapping with ID ST_META_PROC_ID(k)
 *                   (0xfffffffd00000000 + k, k < 2^32: a process of a file
 *                   that holds several, as simpletrace merge writes them)
 *                   name: a description of process k (as above), or
 *                   nothing: process k again, as last described
 *
 * Keys of the description (readers ignore keys they do not know):
 *   simpletrace=1            always first
 *   version=TEXT             simpletrace release that wrote the file
 *   pid=N                    process id of the writer
 *   program=TEXT             program name (the executable's base name)
 *   exe=TEXT                 path of the executable
 *   cmdline=ARG ARG ...      the command line, arguments escaped (spaces too)
 *   host=TEXT                host name
 *   clock=tsc|cntvct         how timestamps were taken: the CPU's counter,
 *         |monotonic         x86-64's TSC or aarch64's CNTVCT_EL0, converted
 *         |realtime          by the writer, or clock_gettime; all three are
 *                            CLOCK_MONOTONIC nanoseconds in the records;
 *                            realtime (the SystemTap simpletrace script):
 *                            CLOCK_REALTIME ns, anchor_mono_ns = anchor_real_ns.
 *                            A reader shows a value it does not know as it is
 *   tsc_hz=N                 the counter's frequency (clock=tsc: measured;
 *                            cntvct: CNTFRQ_EL0); informative, as the records
 *                            are converted already
 *   anchor_mono_ns=N         CLOCK_MONOTONIC and CLOCK_REALTIME, taken
 *   anchor_real_ns=N         together when the file started: wall time of a
 *                            record = anchor_real_ns + (ts - anchor_mono_ns)
 *   source=PATH              (process records) the trace the merge read it from
 *
 * VALUE escaping: printable ASCII (0x21-0x7e) but '\' as is; '\' as "\\";
 * every other byte (space included, so that cmdline splits on spaces) as
 * "\xHH" (two lower-case hex digits).
 *
 * Where: a writer puts the description right after the header, and a
 * declaration right after the mapping record of each event ID (so a file
 * or rotated piece that maps an ID also declares it). A later description
 * or declaration replaces the earlier one, as mappings do.
 *
 * Several processes in one file (simpletrace merge): no description
 * record, but after the header a process record with the description of
 * each process k = 0, 1, ... (an empty one for a process whose trace had
 * none), and an empty process record before each run of event and
 * dropped records of one process: the records that follow a process
 * record, up to the next, were written by process k. A non-empty process
 * record later in the file describes k anew (another piece of its trace,
 * with new clock anchors) and means k too. Event IDs are the file's own,
 * shared by the processes, each mapped and declared once before its
 * first record. A reader that knows only mapping and event records reads
 * such a file as any other.
 */
#ifndef ST_FORMAT_META_FORMAT_H
#define ST_FORMAT_META_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define ST_META_INFO_ID        UINT64_C(0xffffffffffffff00)
#define ST_META_DECL_BASE      UINT64_C(0xfffffffe00000000)
#define ST_META_DECL_ID(id)    (ST_META_DECL_BASE + (uint32_t)(id))
#define ST_META_PROC_BASE      UINT64_C(0xfffffffd00000000)
#define ST_META_PROC_ID(k)     (ST_META_PROC_BASE + (uint32_t)(k))
#define ST_META_VERSION        1
#define ST_META_FIRST_LINE     "simpletrace=1\n"

/* Largest description or declaration a reader accepts (a mapping name is at most ST_MAX_NAME). */
#define ST_META_MAX_LEN        (64u << 10)

/* True when a mapping record with this ID carries a declaration. */
static inline int st__meta_is_decl(uint64_t id)
{
    return (id >> 32) == (ST_META_DECL_BASE >> 32);
}

/* True when a mapping record with this ID is the description. */
static inline int st__meta_is_info(uint64_t id)
{
    return id == ST_META_INFO_ID;
}

/* True when a mapping record with this ID is a process record (several processes in one file). */
static inline int st__meta_is_proc(uint64_t id)
{
    return (id >> 32) == (ST_META_PROC_BASE >> 32);
}

/* The event ID a declaration record declares. */
static inline uint32_t st__meta_decl_event(uint64_t id)
{
    return (uint32_t)id;
}

/* The process number of a process record. */
static inline uint32_t st__meta_proc_number(uint64_t id)
{
    return (uint32_t)id;
}

/* True when byte c goes into a VALUE as itself. */
static inline int st__meta_plain(unsigned char c)
{
    return c > 0x20 && c < 0x7f && c != '\\';
}

/*
 * Escapes len bytes of s as a VALUE into out (room for cap bytes, NUL
 * included); returns the length it needs (without NUL), like snprintf.
 */
static inline size_t st__meta_escape(char *out, size_t cap, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
        size_t k = st__meta_plain(c) ? 1 : c == '\\' ? 2 : 4;
        if (k == 1)
            e[0] = (char)c;
        else if (k == 2)
            e[1] = '\\';
        for (size_t j = 0; j < k; j++, n++)
            if (n + 1 < cap)
                out[n] = e[j];
    }
    if (cap)
        out[n < cap ? n : cap - 1] = '\0';
    return n;
}

static inline int st__meta_hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/*
 * Unescapes the VALUE [s, s + len) in place into out (at least len bytes;
 * out may be s). Returns the length, or -1 for a malformed escape.
 */
static inline long st__meta_unescape(char *out, const char *s, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\') {
            out[n++] = s[i];
        } else if (i + 1 < len && s[i + 1] == '\\') {
            out[n++] = '\\';
            i++;
        } else if (i + 3 < len && s[i + 1] == 'x' && st__meta_hexval(s[i + 2]) >= 0 && st__meta_hexval(s[i + 3]) >= 0) {
            out[n++] = (char)(st__meta_hexval(s[i + 2]) * 16 + st__meta_hexval(s[i + 3]));
            i += 3;
        } else {
            return -1;
        }
    }
    return (long)n;
}

#endif /* ST_FORMAT_META_FORMAT_H */
