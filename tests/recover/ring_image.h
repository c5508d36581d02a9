/*
 * Ring file images in memory, as the runtime lays them out (crash_format.h),
 * for recover's unit tests and the fuzz seed generator: a header page, 64
 * bytes with the head, tail and pending words (the runtime gives them a
 * page; a small image makes a small fuzz seed), then the ring. Records are
 * appended at head and wrap at the ring's end; ri_finish() writes the
 * header and the words, so a test may damage any of them after it.
 */
#ifndef ST_TEST_RING_IMAGE_H
#define ST_TEST_RING_IMAGE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crash_format.h"
#include "trace_format.h"

#define RI_RING_OFF 4160u /* header page, then 64 bytes for head, tail and pending */
#define RI_HEAD_OFF 4096u
#define RI_TAIL_OFF 4104u
#define RI_PENDING_OFF 4112u

/* A ring file being built; h's fields are what ri_finish() writes. */
struct ri {
    uint8_t *data;
    size_t len;
    struct st__crash_hdr h;
    uint64_t head, tail, pending;
};

/* A fresh image of pid/tid with an empty ring of ring_size bytes at position start; ns timestamps. */
static inline void ri_init(struct ri *r, uint32_t pid, uint32_t tid, uint64_t ring_size, uint64_t start)
{
    memset(r, 0, sizeof *r);
    r->len = RI_RING_OFF + ring_size;
    r->data = calloc(1, r->len);
    r->h = (struct st__crash_hdr){.magic = ST_CRASH_MAGIC, .version = ST_CRASH_VERSION,
                                 .hdr_size = ST_CRASH_HDR_SIZE, .pid = pid, .tid = tid,
                                 .ring_off = RI_RING_OFF, .ring_size = ring_size, .head_off = RI_HEAD_OFF,
                                 .tail_off = RI_TAIL_OFF, .pending_off = RI_PENDING_OFF};
    r->head = r->tail = start;
}

/* Copies n bytes to ring position pos, wrapping. */
static inline void ri_put(struct ri *r, uint64_t pos, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        r->data[RI_RING_OFF + ((pos + i) & (r->h.ring_size - 1))] = ((const uint8_t *)p)[i];
}

/* Appends an event record (nargs u64 arguments) at head; returns its position. */
static inline uint64_t ri_event(struct ri *r, uint64_t id, uint64_t ts, uint32_t pid, const uint64_t *args,
                                unsigned nargs)
{
    uint8_t rec[ST_EVENT_FIXED_SIZE + 8 * 16];
    uint64_t pos = r->head;

    st__fmt_put_event_header(rec, id, ts, 8 * nargs, pid);
    for (unsigned i = 0; i < nargs; i++)
        st__fmt_put_u64(rec + ST_EV_OFF_PAYLOAD + 8 * i, args[i]);
    ri_put(r, pos, rec, ST_EVENT_FIXED_SIZE + 8 * nargs);
    r->head += ST_EVENT_FIXED_SIZE + 8 * nargs;
    return pos;
}

/* Appends a dropped record at head; returns its position. */
static inline uint64_t ri_dropped(struct ri *r, uint64_t ts, uint32_t pid, uint64_t count)
{
    uint8_t rec[ST_EVENT_FIXED_SIZE + 8];
    uint64_t pos = r->head;

    ri_put(r, pos, rec, st__fmt_put_dropped(rec, ts, pid, count));
    r->head += sizeof rec;
    return pos;
}

/* Writes the header and the head, tail and pending words into the image. */
static inline void ri_finish(struct ri *r)
{
    memcpy(r->data, &r->h, sizeof r->h);
    memcpy(r->data + r->h.head_off, &r->head, 8);
    memcpy(r->data + r->h.tail_off, &r->tail, 8);
    memcpy(r->data + r->h.pending_off, &r->pending, 8);
}

static inline void ri_free(struct ri *r)
{
    free(r->data);
    r->data = NULL;
}

/* A byte buffer for names files and trace files. */
struct rbuf {
    uint8_t data[1 << 16];
    size_t len;
};

static inline void rb_mapping(struct rbuf *b, uint64_t id, const char *name)
{
    b->len += st__fmt_put_mapping(b->data + b->len, id, name, (uint32_t)strlen(name));
}

static inline void rb_header(struct rbuf *b)
{
    b->len += st__fmt_put_header(b->data + b->len);
}

/* Appends an event record with nargs u64 arguments. */
static inline void rb_event(struct rbuf *b, uint64_t id, uint64_t ts, uint32_t pid, const uint64_t *args,
                            unsigned nargs)
{
    st__fmt_put_event_header(b->data + b->len, id, ts, 8 * nargs, pid);
    for (unsigned i = 0; i < nargs; i++)
        st__fmt_put_u64(b->data + b->len + ST_EV_OFF_PAYLOAD + 8 * i, args[i]);
    b->len += ST_EVENT_FIXED_SIZE + 8 * nargs;
}

static inline void rb_dropped(struct rbuf *b, uint64_t ts, uint32_t pid, uint64_t count)
{
    b->len += st__fmt_put_dropped(b->data + b->len, ts, pid, count);
}

#endif /* ST_TEST_RING_IMAGE_H */
