/*
 * Recover's parts (recover.h is the API): rings.c checks ring files
 * (header, records, the write cut by the death), names.c reads the names
 * file, recover.c keeps one process, builds the clock and writes the trace.
 */
#ifndef ST_RECOVER_RECOVER_INTERNAL_H
#define ST_RECOVER_RECOVER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crash_format.h"
#include "growbuf.h"
#include "recover.h"

/* One ring file that passed its header's checks. */
struct st__rv_ring {
    struct st__recover_image img; /* the caller's bytes */
    struct st__crash_hdr h;        /* a copy of the header; zero but pid and tid when unborn */
    bool unborn;                  /* no header yet: no records, never read */
    bool anchor_ok;               /* b_raw/b_ns were not being changed: usable */
    const uint8_t *ring;          /* img.data + ring_off */
    uint64_t mask;                /* ring_size - 1 */
    uint64_t head, tail, pending; /* read through the header's offsets */
    uint64_t end;                 /* [tail, end) are whole, valid records; end <= head */
};

/* The state st__recover_open() leaves for st__recover_write(). */
struct st__recover {
    struct st__recover_hooks hooks;
    struct st__rv_ring *rings; /* n of them, all of process pid, in the caller's order */
    size_t n;
    uint32_t pid;
};

/* The event IDs the names file maps, sorted by ID, the last mapping of an ID winning. */
struct st__rv_name {
    uint64_t id;
    size_t off;   /* of the name's bytes in the names image */
    uint32_t len;
    size_t seq;   /* file order, to keep the last mapping of an ID */
};

struct st__rv_names {
    const uint8_t *data; /* the names image */
    struct st__rv_name *v;
    size_t n;
};

/* Formats "FILE: ..." (text without the prefix when file is NULL) and hands it to the message hook. */
void st__rv_say(const struct st__recover_hooks *hk, enum st__recover_what what, const char *file,
                const char *field, uint64_t offset, uint64_t value, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* Checks img's header; true when it is kept (into *r, possibly unborn), false when left out (said why). */
bool st__rv_ring_check(const struct st__recover_image *img, struct st__rv_ring *r, const struct st__recover_hooks *hk);

/* Checks a kept ring's anchors, in-flight note and records, setting r->end (said what is wrong). */
void st__rv_ring_scan(struct st__rv_ring *r, const struct st__recover_hooks *hk);

/* Size of the valid record at ring position pos of r, ending at or before end; 0 when none is there. */
uint64_t st__rv_record_size(const struct st__rv_ring *r, uint64_t pos, uint64_t end, const char **why);

/* Copies n bytes from ring position pos of r, wrapping at the ring's end. */
void st__rv_ring_copy(const struct st__rv_ring *r, uint64_t pos, void *dst, size_t n);

/*
 * The trace file's v4 bytes where the in-flight notes look: the file
 * itself, or, when it is compressed (compress=zstd), the stretch of its
 * stream the notes name, decompressed (the notes' offsets are the v4
 * stream's).
 */
struct st__rv_stream {
    const uint8_t *data;    /* v4 bytes from stream offset base */
    uint64_t base, len;
    struct st__growbuf dec; /* compressed: the bytes decompressed (data points into it) */
};

/*
 * The stream of trace (NULL: none given) for r's in-flight notes; a
 * compressed file cut or damaged inside that stretch is said, with where
 * reading stopped. 0 or -ENOMEM.
 */
int st__rv_stream_open(struct st__rv_stream *s, const struct st__recover *r, const struct st__recover_trace *trace);
void st__rv_stream_free(struct st__rv_stream *s);

/*
 * Settles the write() the death cut (if any) against trace (may be NULL)
 * and its stream: *tail moves past the records that reached the file,
 * *pending gains the write's dropped count unless it arrived too.
 */
void st__rv_inflight(const struct st__rv_ring *r, const struct st__recover_trace *trace,
                     const struct st__rv_stream *s, const struct st__recover_hooks *hk, uint64_t *tail,
                     uint64_t *pending);

/* Reads the names image (NULL: none) into nm. 0 or -ENOMEM; a torn end is said, not an error. */
int st__rv_names_load(struct st__rv_names *nm, const struct st__recover_image *img, const struct st__recover_hooks *hk);

/* The mapping of id, or NULL. */
const struct st__rv_name *st__rv_names_find(const struct st__rv_names *nm, uint64_t id);

/* Frees nm's table. */
void st__rv_names_free(struct st__rv_names *nm);

#endif /* ST_RECOVER_RECOVER_INTERNAL_H */
