/*
 * What libzstd's streaming decoder makes of a compressed trace, fed all of
 * it at once: every frame, and of a frame cut short (a writer killed while
 * writing it) whatever its whole blocks hold. The recover tests take this
 * as what reached the file. The zstd command gives the same, except that
 * it decodes a block only once it has read the 3 bytes after it (the next
 * block's header or the checksum), so a cut within those gives one block
 * less there; the tests check it gives a prefix of this. Output is taken
 * a block's worth (ZSTD_DStreamOutSize()) at a time, as the command takes
 * it, so that a damaged block loses only what it would have given.
 */
#ifndef ST_TEST_UNZSTD_H
#define ST_TEST_UNZSTD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

/* Decompresses data[0..len) into *out (malloc'ed, *outlen bytes). 0 clean end, 1 cut inside a frame, -1 damaged. */
static inline int unzstd_all(const uint8_t *data, size_t len, uint8_t **out, size_t *outlen)
{
    ZSTD_DCtx *d = ZSTD_createDCtx();
    ZSTD_inBuffer in = {data, len, 0};
    size_t cap = 1 << 20, ret = 0;
    int status = 0;
    bool ended = true; /* the last frame begun has ended */

    *outlen = 0;
    *out = malloc(cap);
    while (d && *out) {
        if (cap - *outlen < ZSTD_DStreamOutSize()) {
            uint8_t *more = realloc(*out, cap *= 2);
            if (!more)
                break;
            *out = more;
        }
        /* At most a block's worth per call, as the zstd command asks: a damaged block loses only itself. */
        ZSTD_outBuffer ob = {*out + *outlen, ZSTD_DStreamOutSize(), 0};
        size_t before = in.pos;
        ret = ZSTD_decompressStream(d, &ob, &in);
        *outlen += ob.pos;
        if (ZSTD_isError(ret)) {
            status = -1;
            break;
        }
        if (ret == 0)
            ended = true;
        else if (ob.pos || in.pos > before)
            ended = false;
        if (in.pos == in.size && ob.pos < ob.size) {
            status = !ended; /* input gone: cut inside a frame unless the last one ended */
            break;
        }
    }
    ZSTD_freeDCtx(d);
    return status;
}

#endif /* ST_TEST_UNZSTD_H */
