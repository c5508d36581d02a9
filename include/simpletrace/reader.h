/*
 * simpletrace reader: decodes QEMU "simple" backend trace files (format
 * versions 0, 2, 3 and 4, either byte order) with the trace-events files
 * that declare their events, and prints or analyses the records.
 *
 * Four objects, each created and freed by the caller:
 *   st_catalog    parsed trace-events files (immutable once loaded; share it)
 *   st_reader     one trace file being read, record by record (borrows a catalog)
 *   st_formatter  turns records into simpletrace.py text or JSON lines
 *   st_analyzer   (a plain struct) per-event callbacks run over a reader
 *
 * Streaming: a reader holds one fixed-size read buffer (1 MiB by default)
 * whatever the size of the trace; it never seeks, so pipes work.
 *
 * Errors: functions return 0 (or 1 for "a record is ready") or a negative
 * errno value (st_strerror() gives its text). Errors in a trace file also
 * fill a struct st_reader_error with the byte offset and record number of
 * what is wrong. The library never prints, exits or aborts.
 *
 * Growing structures (api.h): every structure the caller allocates or fills
 * in (st_reader_options, st_reader_error, st_reader_counters,
 * st_reader_piece, st_formatter_options, st_analyzer, st_analyzer_handler)
 * starts with `uint32_t struct_size`, which the caller sets to sizeof the
 * structure it was compiled with:
 *
 *     struct st_reader_options o = {.struct_size = sizeof o, .events = "job_*"};
 *
 *   - a struct_size smaller than this release's layout (the first one with
 *     struct_size) is -EINVAL, with a message where the function has an
 *     error channel (st_reader_error);
 *   - the library reads and writes only fields that lie within struct_size:
 *     fields a newer library adds are zero/absent for an older program;
 *     fields a newer program knows and this library does not are ignored
 *     when read, and zeroed when the library fills the structure in;
 *   - arrays (st_reader_piece, st_analyzer_handler) are walked with the
 *     first element's struct_size as the stride;
 *   - a NULL options pointer means defaults, where it did before.
 * Structures the library allocates and hands out by pointer (st_record,
 * st_event_info) grow at their end and have no size field. st_arg_info and
 * st_value are arrays programs index: they are frozen and never change.
 *
 * Record numbers: the header is record 0; mapping, event and dropped
 * records are numbered 1, 2, ... in file order.
 *
 * Processes and threads: a record's pid field holds what its writer put
 * there: simpletrace's runtime the thread id (the main thread's equals the
 * process id), QEMU its process id. No format version records which
 * process wrote a trace, so filter_tid selects by the field as it is, and
 * filter_pid (a process) fails with -EOPNOTSUPP when the header is read
 * rather than guess; st_record.pid is the field.
 *
 * Declarations must match the records: a v2/v3/v4 event record's payload
 * is exactly the arguments its trace-events declaration lists (integers
 * and pointers 8 bytes, strings 4 + length); a record holding more or
 * fewer bytes is -EBADMSG naming the event, not decoded in part. Records a
 * filter skips are not decoded, and not checked.
 *
 * Decisions where simpletrace.py gives no answer:
 *   - v0/v2/v3 files: IDs index the trace-events files (disabled events
 *     count), like --no-header. v0 records have no pid: has_pid is false and
 *     text lines leave the pid field out (as the v0-era reader printed);
 *     JSON says "pid":null. v0 had no strings: char * arguments are pointers.
 *     v2's pid word was "reserved" and is shown as it is.
 *   - Byte order comes from the magic: a byte-swapped magic means the file
 *     is decoded by swapping every field.
 *   - The dropped-event ID always means Dropped_Event(uint64_t
 *     num_events_dropped); a mapping record for that ID is ignored.
 *   - A mapping to a name the catalog lacks is an error only when an event
 *     record uses that ID; an event of the catalog absent from the file is fine.
 *   - Filters: the delta column is measured from the previous record
 *     written, so filtered output reads naturally; without filters that is
 *     simpletrace.py's "previous record". Filtered-out records are skipped
 *     by their length without decoding their arguments.
 *   - JSON strings: valid UTF-8 is kept, each byte of an invalid sequence
 *     becomes \u00XX (its Latin-1 reading), so every line is valid JSON.
 *   - JSON values follow the declared type, the stored u64 cut to the
 *     declared size first: signed integers (int, long, int64_t, ssize_t,
 *     ...) as negative numbers where negative, unsigned ones (unsigned,
 *     size_t, uint64_t, ...) as numbers, bool (const too) as true/false,
 *     char (plain, signed or unsigned; st_catalog_arg_encoding() says
 *     which arguments are bools and chars) as {"value":N,"char":"C"} with
 *     "char":null unless N is printable ASCII (0x20-0x7e), pointers as "0x..." strings
 *     (lowercase hex), strings as JSON strings. Every integer is written
 *     in exact decimal, whatever its size (2^64-1 and INT64_MIN included):
 *     JSON text has no precision limit; parsers that read numbers as
 *     doubles (JavaScript's JSON.parse) lose digits beyond 2^53, Python's
 *     json does not. "wall_time":"2026-11-24T19:36:37.123456789Z" (UTC)
 *     follows "pid" when the formatter has a clock anchor
 *     (st_formatter_set_anchor()). The object's keys may grow: readers
 *     must ignore keys they do not know.
 *   - ST_OUTPUT_LOG writes what the log backend writes on stderr for the
 *     record (with log-prefix=off): "NAME " and the format's printf
 *     rendering (this C library's printf: widths, flags, precision, PRI
 *     macros, %p, %c, %%), "NAME" alone for an event without a format,
 *     lines over PIPE_BUF bytes cut to end in "...\n". The trace cannot
 *     give back everything the program passed: a NULL string was recorded
 *     as "" (the log backend prints "(null)"), strings beyond the
 *     recorded 512 bytes are cut, and %p of a string prints the string
 *     (the trace holds its bytes, not its address). v0 traces hold no
 *     strings: their %s prints the pointer as %p would. A width or
 *     precision is taken as at most 65536 (a '*' argument of 2^31-1 would
 *     cost printf seconds per record; the line is cut long before).
 */
#ifndef SIMPLETRACE_READER_H
#define SIMPLETRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <simpletrace/api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most arguments an event may declare (QEMU's limit). */
#define ST_READER_MAX_ARGS 10

/* Name under which dropped-event records are reported (as simpletrace.py). */
#define ST_DROPPED_EVENT_NAME "Dropped_Event"

/* --- the event catalogue (trace-events files) --------------------------- */

struct st_catalog;

/* How an argument value is stored and shown. */
enum st_value_kind {
    ST_VALUE_INTEGER, /* u64; sign-extended if the declared type is signed */
    ST_VALUE_POINTER, /* u64 address */
    ST_VALUE_STRING,  /* bytes + length (not NUL-terminated) */
};

/*
 * What an argument's value means (added in 0.2; st_catalog_arg_encoding()):
 * its kind, with bool and char told apart among the integers, decided once
 * from the declared type's words (`const bool` and `bool const` are
 * bools). Every reader of this library types values by it.
 */
enum st_arg_encoding {
    ST_ARG_ENCODING_INTEGER, /* a number: size and is_signed in st_arg_info */
    ST_ARG_ENCODING_BOOL,    /* bool, const or not: 0 is false, anything else true */
    ST_ARG_ENCODING_CHAR,    /* char, signed char, unsigned char: a number that is also a character */
    ST_ARG_ENCODING_POINTER, /* an address (ST_VALUE_POINTER) */
    ST_ARG_ENCODING_STRING,  /* bytes (ST_VALUE_STRING): const char *, char * */
};

/* One declared argument. Frozen: records index arrays of it (ev->args[i]). */
struct st_arg_info {
    const char *name;        /* as declared */
    const char *type;        /* C type as declared, e.g. "const char *" */
    enum st_value_kind kind; /* how v2+ records store it (v0 stores everything as u64) */
    bool is_signed;          /* a signed integer type: the u64 is sign-extended */
    unsigned size;           /* integer size in bytes (LP64); 8 for pointers */
};

/* One declared event. Owned by its catalog; grows at its end. */
struct st_event_info {
    const char *name;              /* NUL-terminated */
    size_t name_len;
    unsigned index;                /* position across the trace-events files, and
                                      st_catalog_count() for Dropped_Event; in a catalog
                                      read from a trace: 0 for Dropped_Event, k for the
                                      k-th event declared (see "Catalogs that grow") */
    unsigned nargs;
    const struct st_arg_info *args;
    bool disabled;                 /* declared with the `disable` property */
    const char *format;            /* the format as declared: C string literals and PRI macros
                                      (`"x %" PRIu64`), NULL without one; Dropped_Event's is
                                      "num_events_dropped %" PRIu64 */
};

/*
 * Parses the trace-events files paths[0..npaths-1] (in that order: their
 * concatenation gives the --no-header IDs) into a new catalog in *out.
 * Returns 0, -EINVAL (syntax or duplicate name; errbuf says FILE:LINE:
 * what), -EMEDIUMTYPE (a file is binary, e.g. a trace given in its place:
 * errbuf says "FILE is a trace file, not a trace-events file"; or a
 * directory, e.g. dir='s directory of traces: "DIR is a directory, not a
 * trace-events file") or another -errno (I/O, memory). Free with
 * st_catalog_free().
 */
ST_API int st_catalog_load(struct st_catalog **out, const char *const *paths, size_t npaths, char *errbuf,
                           size_t errlen);

/* Same as st_catalog_load() for one trace-events text in memory (name is for messages). */
ST_API int st_catalog_load_buffer(struct st_catalog **out, const char *name, const char *text, size_t len,
                                  char *errbuf, size_t errlen);

/* Frees a catalog (NULL is fine). Readers using it must be closed first. */
ST_API void st_catalog_free(struct st_catalog *cat);

/*
 * Catalogs that grow. A reader opened without a catalog (cat NULL) reads
 * the declarations the trace carries as they arrive, in the same pass as
 * its records (a pipe is read once), into a catalog of its own,
 * st_reader_catalog(). Such a catalog grows while the reader reads: a
 * declaration comes before the first record of its event, so an event a
 * record points to is always there, but st_catalog_count() may be larger
 * after a st_reader_next() than before it. Nothing ever moves: an event
 * keeps its index and its address until the reader is closed, and
 * Dropped_Event is index 0 (declared events 1..count). Code that keeps a
 * table per event index sizes it st_catalog_count() + 1 and grows it when
 * a record's event->index is beyond it; code that lists the declared
 * events takes the indexes 0..count and skips st_catalog_dropped(), which
 * is right for both kinds of catalog. The open functions read the head of
 * such a trace (its header and the mapping records before the first
 * event record) before they return, so a trace that declares its events
 * first, as simpletrace's writer does, has its whole catalog from the
 * start.
 */

/* Number of declared events (it grows with the trace in a catalog read from one). */
ST_API size_t st_catalog_count(const struct st_catalog *cat);

/*
 * The event at index (0..count: Dropped_Event included, at index count in a
 * catalog of trace-events files, 0 in one read from a trace); NULL beyond.
 */
ST_API const struct st_event_info *st_catalog_event(const struct st_catalog *cat, size_t index);

/* The built-in Dropped_Event of cat (added in 0.2). */
ST_API const struct st_event_info *st_catalog_dropped(const struct st_catalog *cat);

/* The event named name (NUL-terminated; "Dropped_Event" included), or NULL. */
ST_API const struct st_event_info *st_catalog_find(const struct st_catalog *cat, const char *name);

/*
 * Number of warnings loading the catalog gave (since 0.2): an event whose
 * format does not fit its arguments (`ev(int x) "no conversion"`) is read,
 * as QEMU's simpletrace.py reads it, with one warning; its format is never
 * used (ST_OUTPUT_LOG shows its arguments instead), and `simpletrace gen`
 * refuses it. 0 for a catalog without any.
 */
ST_API size_t st_catalog_warning_count(const struct st_catalog *cat);

/*
 * Warning i (0 <= i < st_catalog_warning_count()), in declaration order, as
 * one line "FILE:LINE: warning: ..." without '\n', owned by cat; NULL when i
 * is out of range.
 */
ST_API const char *st_catalog_warning(const struct st_catalog *cat, size_t i);

/* Index of the argument called name in ev, or -ENOENT. */
ST_API int st_event_arg_index(const struct st_event_info *ev, const char *name);

/*
 * The enum st_arg_encoding of argument i of cat's event ev (added in 0.2),
 * or -EINVAL when ev is not cat's or i >= ev->nargs.
 */
ST_API int st_catalog_arg_encoding(const struct st_catalog *cat, const struct st_event_info *ev, unsigned i);

/*
 * An integer argument's value as its declaration holds it (added in 0.2):
 * the stored u64 cut to a->size bytes, then sign- or zero-extended as
 * a->is_signed says (a writer may store a 32-bit int sign-extended or
 * not); pointers, strings and 8-byte integers come back unchanged.
 */
static inline uint64_t st_arg_value(const struct st_arg_info *a, uint64_t stored)
{
    if (a->kind != ST_VALUE_INTEGER || a->size == 0 || a->size >= 8)
        return stored;
    unsigned bits = 8 * a->size;
    uint64_t v = stored & ((UINT64_C(1) << bits) - 1);
    if (a->is_signed && (v >> (bits - 1)))
        v |= ~UINT64_C(0) << bits;
    return v;
}

/* --- reading a trace ----------------------------------------------------- */

struct st_reader;

enum st_reader_flags {
    ST_READER_NO_HEADER = 1u << 0, /* v4 records without header: IDs index the catalog */
    ST_READER_FOLLOW = 1u << 1,    /* at EOF (even inside a record) st_reader_next() returns
                                      -EAGAIN instead of ending; call it again later */
    ST_READER_ROTATED = 1u << 2,   /* st_reader_open() only: path names a trace written in
                                      pieces (rotate=), read as one (see "traces in pieces") */
    ST_READER_UNDECLARED = 1u << 3, /* deliver the records of events the catalog does not declare
                                       (or no mapping names) instead of failing, undecoded:
                                       rec->event NULL, rec->name the mapped name or NULL,
                                       nargs 0; an event filter never selects them. For
                                       looking at a trace whose declarations are missing */
    ST_READER_ALIGN_REALTIME = 1u << 4, /* added in 0.2: every timestamp moved to wall-clock time by its
                                           trace's clock anchors (see "Aligning clocks") */
    ST_READER_SUMMARY = 1u << 5,   /* added in 0.2: a compressed piece whose seek table has a summary
                                      (compress=zstd writes one) is decompressed only where its
                                      summary and time index cannot answer: the frames holding
                                      mapping records, its first and its last timestamp; the others
                                      are skipped, their records counted (as filtered). For
                                      answers about a whole trace (simpletrace info): see
                                      st_reader_summary_counts(). No effect with filters set */
};

/*
 * Conflicts: when a trace carries declarations (meta_format.h) and the
 * catalog declares events (given trace-events files), each declaration is
 * compared with the catalog's event of the same name as it is read; the
 * catalog wins. A conflict is an event the trace declares and the catalog
 * does not (renamed or removed), or one whose arguments (types, names,
 * number) differ. conflict is called once per event name with a message
 * "event 'NAME': ..." (the first 256 names; later ones are not reported).
 * Records that do not fit the catalog's declaration stay an error.
 */
typedef void (*st_conflict_fn)(const char *message, void *opaque);

/* Opening options: NULL, or 0 in a field, means its default (no filter). */
struct st_reader_options {
    uint32_t struct_size;   /* sizeof(struct st_reader_options) as the caller was compiled */
    unsigned flags;         /* enum st_reader_flags */
    size_t buffer_size;     /* read buffer bytes, 0 = 1 MiB; also the largest record accepted */
    const char *events;     /* event filter: comma-separated globs (* ?), "-glob" excludes;
                               applied left to right, last match wins; NULL = all */
    bool filter_tid;        /* deliver only records whose pid field is tid (see "Processes and threads"); */
    uint32_t tid;           /*   this was filter_pid/pid before release 0.2, at the same offset */
    bool filter_from;       /* deliver only records at or after from_ns ... */
    int64_t from_ns;        /* ... nanoseconds after the first record's timestamp */
    bool filter_to;         /* deliver only records at or before to_ns */
    int64_t to_ns;
    bool filter_pid;        /* deliver only records of process pid: -EOPNOTSUPP when the trace */
    uint32_t pid;           /*   does not say which process wrote it (no format does yet) */
    st_conflict_fn conflict; /* called for each conflict (above); NULL: not reported */
    void *conflict_opaque;  /* passed to conflict */
    /* Added in 0.2 (see "Aligning clocks"): */
    const int64_t *offsets_ns; /* NULL, or nanoseconds added to the timestamps of each trace: ... */
    size_t noffsets;           /* ... 1 for one trace, st_reader_open_many()'s n (offsets_ns[i] for input i) */
};

/*
 * Aligning clocks. A trace's timestamps are its writer's CLOCK_MONOTONIC:
 * traces of one host share that clock, traces of several hosts do not
 * (each counts from its own boot). With ST_READER_ALIGN_REALTIME every
 * timestamp t becomes its wall-clock time, anchor_real_ns + (t -
 * anchor_mono_ns), from the description in force (each rotated piece and
 * each process of a merged file carries its own), so that traces of
 * several hosts share one timeline; a trace without anchors (QEMU's,
 * simpletrace's before 0.2) is -ENODATA at its first record. The traces
 * then agree as well as their hosts' CLOCK_REALTIME did when each anchor
 * was taken: NTP keeps hosts within about a millisecond of each other on
 * a LAN (tens of milliseconds across the internet), PTP within
 * microseconds; each anchor pairs the two clocks to within ~100 ns, and a
 * clock step (NTP's, or by hand) after it is not seen. offsets_ns[i] is
 * added after that: the correction, stated by hand, of a host whose clock
 * was off (or, without the flag, a shift on the monotonic timeline). The
 * timestamps moved are the ones delivered: the merge order, the origin,
 * from_ns/to_ns, and the anchors st_reader_description() gives (both
 * equal with the flag: the timestamps are wall-clock time; an offset
 * moves the wall-clock time with them). A timestamp moved beyond
 * 0..2^64-1 is -ERANGE. noffsets other than 0, 1 (one trace) or n
 * (st_reader_open_many()) is -EINVAL.
 */

/* One argument value of a record. Frozen: records hold an array of them. */
struct st_value {
    enum st_value_kind kind; /* as stored in this record (v0: never STRING) */
    uint64_t u64;            /* integer or pointer value; the length for strings */
    const char *str;         /* string bytes, valid until the next st_reader_next(); NULL otherwise */
    uint32_t len;            /* string length in bytes */
};

/* A decoded event or dropped record. Owned by the reader, valid until its next call; grows at its end. */
struct st_record {
    const struct st_event_info *event; /* the declaration (or the built-in Dropped_Event); NULL for an
                                          undeclared event (ST_READER_UNDECLARED) */
    const char *name;                  /* event->name; undeclared: the mapped name, or NULL */
    uint64_t id;                       /* numeric event ID as stored in the file */
    uint64_t timestamp_ns;             /* writer's clock (CLOCK_MONOTONIC in QEMU) */
    uint32_t pid;                      /* writer's pid (0 when has_pid is false) */
    bool has_pid;                      /* false in v0 files, which have no pid field */
    bool dropped;                      /* a dropped-event record ... */
    uint64_t dropped_count;            /* ... standing for this many lost events */
    uint64_t number;                   /* record number (header = 0, mappings counted) */
    uint64_t offset;                   /* byte offset of the record in the file */
    unsigned nargs;                    /* event->nargs */
    struct st_value args[ST_READER_MAX_ARGS];
    /* Added in 0.2 (st_reader_open_many): */
    unsigned input;                    /* index of the input that holds the record (0 for one trace) */
    uint32_t process_pid;              /* the writing process, from its trace's description (or, in a
                                          file simpletrace merge wrote, its process record); 0 unknown */
    const char *process_program;       /* its program name (NUL-terminated), "" when not recorded */
};

/*
 * What went wrong, and where: filled in by the open functions (the caller's,
 * struct_size set by the caller), and the reader's own from st_reader_error()
 * (struct_size the library's).
 */
struct st_reader_error {
    uint32_t struct_size; /* sizeof(struct st_reader_error) as its owner was compiled */
    int code;             /* negative errno, 0 if no error */
    uint64_t offset;      /* byte offset of the record (or header) at fault */
    uint64_t record;      /* its record number */
    char message[384];    /* what is wrong, without the location */
};

/* Counters over everything read so far, filtered-out records included. */
struct st_reader_counters {
    uint32_t struct_size;    /* sizeof(struct st_reader_counters) as the caller was compiled */
    uint64_t records;        /* records after the header (mappings included) */
    uint64_t mappings;       /* mapping records */
    uint64_t events;         /* event records (dropped records excluded) */
    uint64_t dropped_records;
    uint64_t dropped_events; /* sum of their counts */
    uint64_t filtered;       /* event and dropped records the filter skipped */
    uint64_t bytes;          /* bytes consumed, headers included (of every piece) */
};

/*
 * Opens the trace file at path ("-" = standard input) for reading with the
 * events of cat, which must outlive the reader; cat NULL: with the
 * declarations the trace carries, as they arrive ("Catalogs that grow":
 * the head of the trace is read now; an error there comes from the first
 * st_reader_next()). opts may be NULL. Otherwise nothing is read yet. Returns 0 with *out set, -EINVAL (bad options, a struct_size
 * too small: err says which), -ENOMEM or -errno of open(); err (may be
 * NULL; its struct_size set by the caller) gets the message. An err whose
 * struct_size is too small is -EINVAL with nothing written to it.
 * With ST_READER_ROTATED, path's pieces (st_rotated_find()) are read as one
 * trace: -ENOENT when there is none, -EINVAL for "-".
 */
ST_API int st_reader_open(struct st_reader **out, const char *path, const struct st_catalog *cat,
                          const struct st_reader_options *opts, struct st_reader_error *err);

/* --- several traces as one ------------------------------------------------
 *
 * st_reader_open_many() reads several traces (one per process, say) as one
 * stream of records merged by timestamp:
 *   - each input is read by a reader of its own (its own mapping IDs,
 *     format version and byte order: the same event ID in two inputs may
 *     mean two events); every input decodes with the one catalog;
 *   - records come in non-decreasing timestamp order; equal timestamps
 *     come in input order, and within an input in file order, so the
 *     output is the same every time. Inputs are taken as they are: a
 *     file whose own timestamps go back stays out of order where it does;
 *   - rec->input, rec->process_pid and rec->process_program say which input
 *     and process a record comes from; st_reader_input() gives the reader of
 *     input i (its name, description and counters);
 *   - the record returned stays valid until the next call: its input is
 *     read further only then;
 *   - filters apply to every record as in one trace; --from/--to count
 *     from the origin, the earliest first record of all inputs;
 *     filter_pid selects the inputs whose description names that process;
 *   - counters sum over the inputs; st_reader_name(), st_reader_version(),
 *     st_reader_byte_swapped() and st_reader_description() are those of
 *     the input of the last record returned (or of the error);
 *   - an error in an input is the merged reader's error: its offset and
 *     record number are the input's, st_reader_format_error() names the input;
 *   - a copy of a trace given beside it (two inputs whose descriptions name
 *     the same process, host and clock anchors, which every file takes
 *     anew) is -EINVAL at the first st_reader_next(), naming both;
 *   - ST_READER_FOLLOW (since 0.2): each input waits at its end; records
 *     are merged as they arrive: an input waiting for its writer holds no
 *     other back, and -EAGAIN comes only when every input still going
 *     waits (a record an idle process writes later may be older than
 *     records already returned). The inputs are those given at open.
 * Memory: one read buffer per input, of buffer_size bytes when given, else
 * 1 MiB for up to 8 inputs and less for more (at least 256 KiB each).
 */

/*
 * Opens the n traces at paths[0..n-1] as one reader (above) into *out.
 * With ST_READER_ROTATED each path is read with its pieces, as
 * st_reader_open() does. cat NULL: one catalog that grows with the
 * declarations every input carries, as they arrive ("Catalogs that
 * grow"; owned by the reader: st_reader_catalog()); an event one input
 * declares with other arguments than an earlier declaration is -EBADMSG
 * at that record, and a record of an event no input declared is -ENOENT
 * (unless ST_READER_UNDECLARED). The head of each input is read now.
 * Returns 0, or in err (its message names the file):
 *   -EINVAL   no inputs, "-" among them, bad options, or
 *             one file given twice (same device and inode, pieces included)
 *   -ENOMEM or -errno (open(), stat())
 * The paths are copied. st_reader_close() closes every input.
 */
ST_API int st_reader_open_many(struct st_reader **out, const char *const *paths, size_t n,
                               const struct st_catalog *cat, const struct st_reader_options *opts,
                               struct st_reader_error *err);

/* Number of inputs: n for st_reader_open_many(), 1 for every other reader. */
ST_API size_t st_reader_input_count(const struct st_reader *r);

/*
 * The reader of input i (owned by r; r itself for a one-trace reader, and
 * i 0), for st_reader_name(), st_reader_description(),
 * st_reader_get_counters(); NULL when i is out of range. Never read from it.
 */
ST_API const struct st_reader *st_reader_input(const struct st_reader *r, size_t i);

/*
 * The process input i belongs to, as the lowest input number of that
 * process: inputs whose descriptions name the same pid and host are one
 * process (a rotated piece, a recovered tail); an input without a
 * description is a process of its own, and gives i. Known once the first
 * record was asked for (st_reader_next() reads every input's description).
 */
ST_API size_t st_reader_input_process(const struct st_reader *r, size_t i);

/*
 * The declarations a trace carries (simpletrace writes them into every file
 * it makes since 0.2), as a catalog in *out: path is read as st_reader_open()
 * reads it with opts (ST_READER_ROTATED: every piece; NULL: defaults; the
 * filters are ignored). The whole trace is read: a reader opened without a
 * catalog needs none of this (it reads the declarations with the records).
 * Returns 0; -ENODATA when the trace carries none (a QEMU trace or an older
 * simpletrace's: errbuf says to give its trace-events files); or the error
 * reading the trace (errbuf: FILE: byte offset, record: what) when it
 * comes before any declaration: the declarations before damage are the
 * catalog, since each comes before its event's records.
 */
ST_API int st_catalog_load_trace(struct st_catalog **out, const char *path, const struct st_reader_options *opts,
                                 char *errbuf, size_t errlen);

/*
 * Same as st_reader_open() on an open stream (a pipe is fine; never seeks).
 * name is used in messages. The reader reads f with fread() and does not
 * close it. ST_READER_ROTATED is -EINVAL here and in st_reader_open_memory().
 */
ST_API int st_reader_open_stream(struct st_reader **out, FILE *f, const char *name, const struct st_catalog *cat,
                                 const struct st_reader_options *opts, struct st_reader_error *err);

/*
 * Same as st_reader_open() on size bytes at data, which must stay valid
 * and unchanged until st_reader_close(). No copy is made.
 */
ST_API int st_reader_open_memory(struct st_reader **out, const void *data, size_t size, const char *name,
                                 const struct st_catalog *cat, const struct st_reader_options *opts,
                                 struct st_reader_error *err);

/*
 * Reads the next event or dropped record that passes the filter (reading
 * the header first on the first call). Returns 1 with *rec set, 0 at the
 * end of the trace, -EAGAIN (follow mode only) when no complete record is
 * there yet, or a negative errno with st_reader_error() filled:
 *   -EBADMSG          bad magic (a text file: "begins with text"), malformed
 *                     record, a payload its declaration does not take exactly
 *   -EOPNOTSUPP       filter_pid, and the trace does not record its process
 *   -EPROTONOSUPPORT  unknown format version
 *   -ENOENT           event ID with no mapping, or a name not in the catalog (a
 *                     trace read without a catalog that does not declare it)
 *   -ENODATA          the file is empty, or ends inside the header or a record;
 *                     ST_READER_ALIGN_REALTIME and the trace has no clock anchors
 *   -EINVAL           read without a catalog: a declaration that does not parse,
 *                     or another of the same name with other arguments (-EBADMSG)
 *   -ERANGE           a timestamp moved (Aligning clocks) beyond 0..2^64-1
 *   -E2BIG            a record longer than the read buffer, too many IDs
 *   -errno            read error, -ENOMEM
 * Errors are sticky: later calls return the same code.
 */
ST_API int st_reader_next(struct st_reader *r, const struct st_record **rec);

/* The last error (code 0 when there was none). Valid until st_reader_close(). */
ST_API const struct st_reader_error *st_reader_error(const struct st_reader *r);

/* Writes "NAME: byte offset N, record M: message" for the last error into buf; returns strlen. */
ST_API size_t st_reader_format_error(const struct st_reader *r, char *buf, size_t len);

/* Format version of the file (0, 2, 3, 4), or -EAGAIN before the header was read. */
ST_API int st_reader_version(const struct st_reader *r);

/* True when the file was written in the other byte order (and is decoded by swapping). */
ST_API bool st_reader_byte_swapped(const struct st_reader *r);

/* Timestamp of the first event or dropped record into *ts: 0, or -ENODATA if none was read yet. */
ST_API int st_reader_origin(const struct st_reader *r, uint64_t *ts);

/*
 * Copies the counters into *c, whose struct_size the caller sets: 0, or
 * -EINVAL (struct_size too small; *c untouched).
 */
ST_API int st_reader_get_counters(const struct st_reader *r, struct st_reader_counters *c);

/*
 * A compressed trace: zstd frames, as compress=zstd writes
 * them or the zstd command makes them; readers take them everywhere,
 * recognised by their first bytes. Grows at its end.
 */
struct st_reader_compression {
    uint32_t struct_size;        /* sizeof(struct st_reader_compression) as the caller was compiled */
    bool compressed;             /* a piece read so far (or the one being read) is zstd frames */
    bool seekable;               /* it ends in a seek table with a time index: frames can be skipped */
    uint64_t frames;             /* data frames: the seek table's count, else those met so far */
    uint64_t frames_read;        /* frames decompressed so far (skippable ones included) */
    uint64_t frames_skipped;     /* frames the filters (--from/--to, --pid) let the reader jump over */
    uint64_t compressed_bytes;   /* the files' sizes (or the compressed bytes read from a pipe) */
    uint64_t decompressed_bytes; /* the v4 stream's size from the seek table, else decompressed so far */
    char index_problem[160];     /* why a seek table present is not used ("" when none) */
    uint64_t frames_ahead;       /* of frames_read: decompressed ahead, by the reader's second thread */
    bool summarized;             /* every piece read so far is compressed with a summary in its seek
                                    table: st_reader_summary_counts() counts all of them */
    uint64_t write_lost_events;  /* summarized: the counts of their dropped records of pid 0xfffffffe
                                    (ST_PID_WRITE_LOST: a failed write's) */
};

/*
 * What the compressed pieces of r (the inputs' sums, for several) were,
 * into *c whose struct_size the caller sets: 0, or -EINVAL (NULL, or
 * struct_size too small). compressed false: nothing compressed was read.
 */
ST_API int st_reader_get_compression(const struct st_reader *r, struct st_reader_compression *c);

/*
 * An event's event records in summaries: event is the catalog's (NULL when
 * the catalog does not declare it: name is then its mapped name, or NULL
 * with only its id).
 */
typedef void (*st_reader_count_fn)(void *opaque, const struct st_event_info *event, const char *name, uint64_t id,
                                   uint64_t count);

/*
 * Calls fn once per event with the event records the summaries of the
 * compressed pieces read so far count (the whole of each piece, whatever
 * was decompressed), the same event's pieces added up; several traces: per
 * input in turn. With st_reader_get_compression()'s summarized set, these
 * are the counts a full read gives. 0, or -EINVAL (NULL r or fn).
 */
ST_API int st_reader_summary_counts(const struct st_reader *r, st_reader_count_fn fn, void *opaque);

/* Distinct thread ids st_reader_seen keeps. */
#define ST_READER_SEEN_TIDS 32

/*
 * What the records the filters skipped were (added in 0.2): for saying why
 * a filter selected nothing ("no record has thread 5; the trace's: ...",
 * "--from is after the last record"). Grows at its end.
 */
struct st_reader_seen {
    uint32_t struct_size;    /* sizeof(struct st_reader_seen) as the caller was compiled */
    bool have_last;          /* a record was skipped: last_ns is set */
    uint64_t last_ns;        /* the latest timestamp of the skipped records (moved as delivered ones are) */
    size_t ntids;            /* distinct pid fields (thread ids) of the skipped records, the first ... */
    uint32_t tids[ST_READER_SEEN_TIDS]; /* ... ST_READER_SEEN_TIDS in the order met (v2+ records: v0 has none) */
};

/*
 * Copies what the filters skipped so far into *s, whose struct_size the
 * caller sets (every input's, for several): 0, or -EINVAL (struct_size
 * too small; *s untouched).
 */
ST_API int st_reader_get_seen(const struct st_reader *r, struct st_reader_seen *s);

/* The catalog the reader decodes with. */
ST_API const struct st_catalog *st_reader_catalog(const struct st_reader *r);

/*
 * The name given at open (the path, or "-"); for a trace in pieces, the
 * piece being read.
 */
ST_API const char *st_reader_name(const struct st_reader *r);

/*
 * Who wrote a trace and how its clock relates to wall time, as the trace
 * says (simpletrace writes it since 0.2, right after the header; QEMU's
 * traces have none). Strings are NUL-terminated, "" when not recorded, and
 * valid until the reader moves to another piece or closes.
 */
struct st_trace_description {
    uint32_t struct_size;     /* sizeof(struct st_trace_description), set by the caller (Growing structures) */
    const char *version;      /* simpletrace release that wrote it */
    const char *program;      /* the program's name */
    const char *exe;          /* the executable's path */
    const char *cmdline;      /* the command line, arguments separated by spaces (as the file has it) */
    const char *host;         /* host name */
    const char *clock;        /* "tsc" or "monotonic": how timestamps were taken */
    uint32_t pid;             /* the process id; 0 when not recorded */
    uint64_t tsc_hz;          /* TSC ticks per second (clock "tsc"), 0 when not recorded */
    uint64_t anchor_mono_ns;  /* CLOCK_MONOTONIC and CLOCK_REALTIME at one instant: the wall time */
    uint64_t anchor_real_ns;  /* of timestamp t is anchor_real_ns + (t - anchor_mono_ns); both 0 if unknown */
};

/*
 * Fills *d with the description of the trace (or piece) being read. Call
 * it after st_reader_next() returned a record or 0: the description comes
 * before every record. 0; -ENODATA when the trace has none; -EINVAL (NULL,
 * struct_size too small).
 */
ST_API int st_reader_description(const struct st_reader *r, struct st_trace_description *d);

/*
 * The processes whose records the trace holds, as far as it was read: the
 * processes named by the process records of a file simpletrace merge
 * wrote (each record's is rec->process_pid and process_program; the
 * description in force is that process's), 1 for any other trace; for
 * several inputs, the sum over them. A merge names every input's process
 * right after its header: the count is known once st_reader_next() returned.
 */
ST_API size_t st_reader_process_count(const struct st_reader *r);

/* Closes the file (if the reader opened it) and frees the reader (NULL is fine). */
ST_API void st_reader_close(struct st_reader *r);

/* --- traces in pieces ----------------------------------------------------
 *
 * rotate=SIZE writes a trace as the files FILE, FILE.1, FILE.2, ... (piece
 * 0 is FILE itself), each a complete trace with its own header; with
 * rotate-keep=N only the newest remain, so the lowest number present may be
 * above 0. A reader opened on pieces reads them one after the other as one
 * trace:
 *   - each piece starts with its own header (none with ST_READER_NO_HEADER)
 *     and has its own mapping IDs, format version and byte order;
 *   - record numbers go on across pieces (the first record after a piece's
 *     header follows the last of the piece before); a header is record 0 in
 *     errors. rec->offset, error offsets, st_reader_name(),
 *     st_reader_version() and st_reader_byte_swapped() are the current piece's;
 *   - counters sum over the pieces (every piece repeats its mappings, each
 *     counted); the origin is the first record of the first piece, so
 *     --from/--to and relative times run across pieces as in one file;
 *   - a piece that ends inside its header or a record, or cannot be opened
 *     when its turn comes (removed by rotate-keep meanwhile), is an error
 *     naming it, whether it is the last or not;
 *   - pieces are opened one at a time, when reached;
 *   - ST_READER_FOLLOW waits at the end of the last piece only; a rotated
 *     trace then also goes on into the next piece once the writer creates it
 *     (the writer finishes a piece before it starts the next).
 */

/* One piece of a trace in pieces: a file, or bytes in memory. */
struct st_reader_piece {
    uint32_t struct_size; /* sizeof(struct st_reader_piece) as the caller was compiled (every element) */
    const char *name;  /* the file to read ("-" = standard input); with data, the name for messages */
    const void *data;  /* NULL: read the file name; else size bytes, valid and unchanged until close */
    size_t size;
};

/*
 * Opens pieces[0..npieces-1] as one trace, read in that order; otherwise as
 * st_reader_open(). The array is walked with pieces[0].struct_size as its
 * stride. The array and names are copied, memory pieces are borrowed. The
 * first piece is opened now (a file's open() error is returned), later ones
 * when reached. -EINVAL for no pieces, a struct_size too small or
 * ST_READER_ROTATED.
 */
ST_API int st_reader_open_pieces(struct st_reader **out, const struct st_reader_piece *pieces, size_t npieces,
                                 const struct st_catalog *cat, const struct st_reader_options *opts,
                                 struct st_reader_error *err);

/*
 * Finds the pieces of the rotated trace path (what st_reader_open() with
 * ST_READER_ROTATED reads): *first gets the lowest piece number present (0
 * when path exists, else the smallest N of a file path.N), *count the
 * pieces first, first + 1, ... before the first missing number. 0, -ENOENT
 * (no piece), -EINVAL ("-") or -errno.
 */
ST_API int st_rotated_find(const char *path, uint64_t *first, uint64_t *count);

/*
 * Writes the name of piece k of the rotated trace path into buf (len
 * bytes), as the runtime names it: path itself for 0, else path.k. 0,
 * -ENAMETOOLONG (it does not fit; buf holds it cut short when len > 0) or
 * -EINVAL (path NULL, buf NULL with len > 0).
 */
ST_API int st_rotated_piece_name(char *buf, size_t len, const char *path, uint64_t k);

/*
 * The piece number k >= 1 when name is a piece of some rotated trace BASE,
 * "BASE.k" with k as the runtime writes it (decimal, no leading zero), and
 * BASE's length in *base_len (unless NULL); else 0, *base_len untouched:
 * FILE.0, FILE.007, FILE.x and FILE itself (piece 0) are no piece names.
 */
ST_API uint64_t st_rotated_piece_number(const char *name, size_t *base_len);

/* Parses a duration "N", "Nns", "Nus", "Nms" or "Ns" (N may have a fraction) into *ns: 0 or -EINVAL. */
ST_API int st_parse_duration_ns(const char *text, int64_t *ns);

/* --- printing ------------------------------------------------------------ */

enum st_output_format {
    ST_OUTPUT_TEXT, /* simpletrace.py lines: NAME DELTA pid=PID arg=0x... s=b'...' */
    ST_OUTPUT_JSON, /* one JSON object per line, values typed by their declaration (below) */
    ST_OUTPUT_LOG,  /* each record as the log backend prints it: "NAME " + its format, printf'd */
};

/* The time column of text output: microseconds with 3 decimals, or a UTC time. */
enum st_timestamp_mode {
    ST_TIMESTAMP_DELTA,    /* since the previous record written (simpletrace.py) */
    ST_TIMESTAMP_RELATIVE, /* since the origin (st_formatter_set_origin, else the first record written) */
    ST_TIMESTAMP_ABSOLUTE, /* the record's timestamp */
    ST_TIMESTAMP_WALL,     /* wall-clock time from the anchor (st_formatter_set_anchor), UTC ISO 8601
                              with ns: 2026-11-24T19:36:37.123456789Z */
};

/* How a formatter writes; the caller owns it. */
struct st_formatter_options {
    uint32_t struct_size;              /* sizeof(struct st_formatter_options) as the caller was compiled */
    enum st_output_format format;
    enum st_timestamp_mode timestamps; /* text only: JSON always has timestamp_ns (and wall_time with an anchor) */
    FILE *out;                         /* where st_formatter_flush() writes; NULL discards */
    bool show_process;                 /* added in 0.2: name each record's process (several inputs):
                                          text "NAME PROGRAM[PID] DELTA pid=TID ...", "input#N" for an
                                          input without a description; JSON "process":{"input":N,
                                          "pid":P,"program":"..."} (null for what is not recorded) */
};

struct st_formatter;

/*
 * Creates a formatter for records decoded with cat (which must outlive it)
 * into *out. Returns 0, -EINVAL (opts NULL, bad values, a struct_size too
 * small) or -ENOMEM.
 */
ST_API int st_formatter_new(struct st_formatter **out, const struct st_catalog *cat,
                            const struct st_formatter_options *opts);

/* Sets the origin of ST_TIMESTAMP_RELATIVE. */
ST_API void st_formatter_set_origin(struct st_formatter *f, uint64_t timestamp_ns);

/*
 * Sets the clock anchor (st_trace_description's anchor_mono_ns and
 * anchor_real_ns; known once the reader has read the description, hence
 * not an option): the wall time of timestamp t is anchor_real_ns +
 * (t - anchor_mono_ns). With an anchor, JSON lines carry
 * "wall_time":"...Z"; ST_TIMESTAMP_WALL needs one. Call it again when the
 * anchor changes (each piece of a rotated trace has its own).
 */
ST_API void st_formatter_set_anchor(struct st_formatter *f, uint64_t anchor_mono_ns, uint64_t anchor_real_ns);

/*
 * Appends rec as one line to the formatter's buffer, writing the buffer out
 * when it is full. Returns 0, -EINVAL (rec not from this catalog), -ENODATA
 * (text with ST_TIMESTAMP_WALL and no anchor set), -ENOMEM, or the -errno of
 * a failed write (e.g. -EPIPE).
 */
ST_API int st_formatter_write(struct st_formatter *f, const struct st_record *rec);

/* Writes out and fflush()es what is buffered. Returns 0 or -errno. */
ST_API int st_formatter_flush(struct st_formatter *f);

/* The lines buffered and not yet written (for an out of NULL: read, then discard with flush). */
ST_API const char *st_formatter_buffered(const struct st_formatter *f, size_t *len);

/* Frees the formatter without flushing (NULL is fine). */
ST_API void st_formatter_free(struct st_formatter *f);

/* --- analyzers (like simpletrace.py's Analyzer2) ------------------------- */

/* A per-record callback: return 0 to go on, non-zero to stop the run with that value. */
typedef int (*st_record_fn)(const struct st_record *rec, void *opaque);

/* A callback for the records of one event, by name ("Dropped_Event" for dropped records). */
struct st_analyzer_handler {
    uint32_t struct_size; /* sizeof(struct st_analyzer_handler) as the caller was compiled (every element) */
    const char *event;
    st_record_fn fn;
};

/* What to call; every member but struct_size may be NULL/0. The caller owns it. */
struct st_analyzer {
    uint32_t struct_size;                        /* sizeof(struct st_analyzer) as the caller was compiled */
    void *opaque;                                /* passed to every callback */
    int (*begin)(void *opaque);                  /* before the first record; non-zero stops */
    void (*end)(int status, void *opaque);       /* after the run, with what run returns */
    const struct st_analyzer_handler *handlers;  /* per-event callbacks, stride handlers[0].struct_size */
    size_t nhandlers;
    st_record_fn catchall;                       /* records of events without a handler */
};

/*
 * Runs the analyzer over every remaining record of r. Handlers naming no
 * event of the catalog are never called (as in simpletrace.py). Returns 0
 * at the end of the trace, the non-zero value of the callback that stopped
 * the run, -ENOMEM, -EINVAL (a struct_size of a or of the handlers too
 * small: nothing is called), or the reader's error (see st_reader_error());
 * end() is called in every case once begin() was.
 */
ST_API int st_analyzer_run(const struct st_analyzer *a, struct st_reader *r);

#ifdef __cplusplus
}
#endif

#endif /* SIMPLETRACE_READER_H */
