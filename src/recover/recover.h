/*
 * Recover: rebuilds a v4 trace from the crash ring files of a process that
 * died (layout, invariants and validity rules: crash_format.h). It reads
 * files that are damaged by design, so it works on images the caller mapped
 * or read (and a fuzz target feeds it memory); it never prints, exits or
 * aborts: what it has to say goes to the caller's message hook, errors are
 * negative errno values. `simpletrace recover` is its front end.
 *
 * Two steps, because the names file belongs to one process and which one
 * is only known once the ring headers were read:
 *
 *   st__recover_open()   checks every ring file's header (a file that
 *                        breaks a rule is reported by field and byte offset
 *                        and left out), keeps the rings of one process and
 *                        checks their records: a ring stops at the first
 *                        bytes in [tail, head) that are not a record;
 *                        which process (DIR may hold several crashes'):
 *                        the one asked for (--pid), else the one whose
 *                        ring headers name the trace file (--trace: its
 *                        file_dev/file_ino), else the one started last (the
 *                        latest start-up anchor); when others were there,
 *                        a message names them and says why this one;
 *   st__recover_write()  with that process's names file and, optionally,
 *                        its trace file: settles the write() the death cut
 *                        (records that reached the trace file are left
 *                        out; a compressed trace, compress=zstd, is
 *                        decompressed where the cut write went, a last
 *                        frame cut short giving what its whole blocks
 *                        hold, as zstd -d gives it), converts timestamps with a clock built from
 *                        the headers' anchors, and writes header, mappings
 *                        (st_unknown_ID for IDs the names file lacks), the
 *                        records of all threads merged by time (merge.h)
 *                        and a dropped record per thread with drops it had
 *                        not reported.
 *
 * Images are borrowed: they must stay valid and unchanged until
 * st__recover_free(). Nothing here depends on the runtime.
 */
#ifndef ST_RECOVER_RECOVER_H
#define ST_RECOVER_RECOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"

/* A file's bytes as the caller mapped or read them. */
struct st__recover_image {
    const char *name;    /* what messages call it (its path), never NULL; a ring file's ends in st-PID-TID.ring */
    const uint8_t *data; /* NULL only when len is 0 */
    size_t len;
};

/*
 * The trace file the process was writing (`--trace`), with its identity:
 * an in-flight write's bytes are looked for in it only when dev and ino
 * are the ring header's file_dev and file_ino (ino 0: the file could not
 * be read, it is never that file).
 */
struct st__recover_trace {
    struct st__recover_image img;
    uint64_t dev, ino;
};

/* What a message is about; `value` and `offset` of struct st__recover_msg mean what each says. */
enum st__recover_what {
    ST_RECOVER_UNBORN,        /* no header yet (died creating it): kept as a thread with no record */
    ST_RECOVER_NOT_RING,      /* not a ring file: offset 0, value the magic; or no header and a name
                                 that is not st-PID-TID.ring (value 0); left out */
    ST_RECOVER_BAD_HEADER,    /* field breaks a rule: offset of the field, value its value; left out */
    ST_RECOVER_BAD_HEAD_TAIL, /* head and tail do not fit the ring: offset of head, value head; left out */
    ST_RECOVER_BAD_RECORD,    /* ring position value (file byte offset) holds no record: the rest is left out */
    ST_RECOVER_ANCHOR_TORN,   /* anchor_seq (offset) odd, value it: this file's latest anchor is not used */
    ST_RECOVER_INFLIGHT_BAD,  /* inflight_end (offset) value is not in [tail, head]: the note is ignored */
    ST_RECOVER_INFLIGHT_KEPT, /* a write of value records was cut, no trace file given: they are kept */
    ST_RECOVER_INFLIGHT_OTHER,/* the trace file given is not the one being written: records kept */
    ST_RECOVER_INFLIGHT_DONE, /* value of the cut write's records reached the trace file: left out */
    ST_RECOVER_NAMES_TORN,    /* the names file holds no mapping from byte offset on: later names unknown */
    ST_RECOVER_OTHER_PIDS,    /* ring files of several processes: value is the pid recovered */
    ST_RECOVER_TRACE_UNNAMED, /* no ring file names the trace file given: value is the pid recovered */
    ST_RECOVER_TRACE_CUT,     /* the compressed trace ends inside the zstd frame at compressed byte offset,
                                 in the stretch a cut write covers: value is where reading stopped (the
                                 file's size); what that frame decompresses to up to there is what arrived */
    ST_RECOVER_TRACE_DAMAGED, /* the zstd frame at compressed byte offset, in that stretch, does not
                                 decompress: value is where reading stopped; nothing after it arrived */
};

/* One thing recover has to say. Valid during the hook's call only. */
struct st__recover_msg {
    enum st__recover_what what;
    const char *file;   /* the image it is about (NULL for OTHER_PIDS; the trace for TRACE_UNNAMED) */
    const char *field;  /* the header field (BAD_HEADER, ANCHOR_TORN, INFLIGHT_BAD), else NULL */
    uint64_t offset;    /* byte offset in file (see the kinds above) */
    uint64_t value;     /* see the kinds above */
    const char *text;   /* the whole message, one line without newline, "FILE: ..." */
};

/* What the caller provides besides the images. */
struct st__recover_hooks {
    /* Hears every message (may be NULL). */
    void (*msg)(void *ctx, const struct st__recover_msg *m);
    /* Takes the next n bytes of the recovered trace: 0, or a negative errno that stops the write. */
    int (*write)(void *ctx, const void *p, size_t n);
    /*
     * When a file's anchors are under 1 ms apart, measures this machine's
     * tick rate: two samples (raw ticks, ns) some ms apart. NULL: two
     * st__clock_sample()s 20 ms apart (recover then sleeps).
     */
    void (*measure)(void *ctx, struct st__clock_anchor *from, struct st__clock_anchor *to);
    void *ctx;
};

/* What st__recover_write() wrote, for the summary. */
struct st__recover_stats {
    uint32_t pid;     /* the process recovered */
    size_t threads;   /* its ring files (those with no header yet included) */
    uint64_t events;  /* event records written */
    uint64_t drops;   /* sum of the dropped records' counts */
};

struct st__recover;

/*
 * Checks rings[0..n) and keeps the ring files of one process: pid when
 * pid >= 0; else, with trace (may be NULL), the process whose ring headers
 * name that file (the one started last if several do); else the one
 * started last (ties: the first file with a header; no header at all: the
 * first file's, by its name). *out is allocated (st__recover_free() it)
 * and borrows the images, hooks and trace. 0; -ENOENT when no ring file of
 * that process is usable (nothing allocated); -ENOMEM.
 */
int st__recover_open(struct st__recover **out, const struct st__recover_image *rings, size_t n, long pid,
                     const struct st__recover_trace *trace, const struct st__recover_hooks *hooks);

/* The process kept. */
uint32_t st__recover_pid(const struct st__recover *r);

/* The name of its first ring file (its names file, st-PID.names, is normally next to it). */
const char *st__recover_first_name(const struct st__recover *r);

/* How many ring files the process kept has (those with no header yet included). */
size_t st__recover_ring_count(const struct st__recover *r);

/* The name of its ring file i (0 <= i < st__recover_ring_count()): what to remove once recovered. */
const char *st__recover_ring_name(const struct st__recover *r, size_t i);

/*
 * Writes the recovered trace through hooks->write. names: the process's
 * names file (NULL: missing, every ID is st_unknown_ID); trace: its trace
 * file (NULL: not given). Each call writes the whole trace again; *stats
 * (may be NULL) is filled. 0; the write hook's error; -ENOMEM.
 */
int st__recover_write(struct st__recover *r, const struct st__recover_image *names,
                      const struct st__recover_trace *trace, struct st__recover_stats *stats);

/* Frees r (NULL is fine); the images stay the caller's. */
void st__recover_free(struct st__recover *r);

#endif /* ST_RECOVER_RECOVER_H */
