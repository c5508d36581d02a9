/*
 * A compressed trace's v4 bytes by offset, for code that holds the whole
 * file in memory and wants a few bytes of its stream (recover: the bytes a
 * write cut by a death put in the trace file). Frames before the range are
 * passed over by their headers' content sizes, undecompressed; a file that
 * ends inside a frame (a writer killed while writing it) gives what that
 * frame's whole blocks decompress to, as any streaming zstd reader does,
 * and says where reading stopped. Streams are as zstd_seek_format.h says:
 * zstd frames put end to end, skippable frames giving nothing.
 */
#ifndef ST_ZSEEK_ZRANGE_H
#define ST_ZSEEK_ZRANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "growbuf.h"

/* How st__zrange_read() ended. */
enum st__zrange_stop {
    ST_ZRANGE_DONE,    /* the range was read (or the stream ended cleanly before its end) */
    ST_ZRANGE_CUT,     /* the file ends inside a frame */
    ST_ZRANGE_DAMAGED, /* a frame does not decompress, or bytes there are no frame */
};

/* Where reading stopped, when it stopped early. */
struct st__zrange_end {
    enum st__zrange_stop stop;
    uint64_t frame;      /* the frame reading stopped in: its number from 0 (skippable ones counted) */
    uint64_t frame_off;  /* its compressed offset */
    uint64_t stop_off;   /* the compressed offset reading stopped at (CUT: the file's size) */
    uint64_t dend;       /* v4 offset reached: the stream's bytes before that point */
    const char *why;     /* DAMAGED: libzstd's words, or what the bytes are not; else "" */
};

/* Whether data[0..size) starts with a zstd frame or a skippable frame (a compressed trace). */
bool st__zrange_is_zstd(const uint8_t *data, size_t size);

/*
 * Appends the v4 bytes [off, off + len) of the compressed trace
 * data[0..size) to out: fewer when the stream ends, is cut or is damaged
 * first (*end says how it ended). 0 or -ENOMEM.
 */
int st__zrange_read(const uint8_t *data, size_t size, uint64_t off, uint64_t len, struct st__growbuf *out,
                    struct st__zrange_end *end);

#endif /* ST_ZSEEK_ZRANGE_H */
