/*
 * The compressed outputs of merge and recover: how the user asks
 * (--compress=zstd[:LEVEL]|off; an output named *.zst is compressed at
 * the default level unless --compress says otherwise) and the sink their
 * bytes go through, plain or as zstd frames with a time index and seek
 * table, the layout compress=zstd writes (src/zseek's writer).
 */
#ifndef ST_CLI_OUT_COMPRESS_H
#define ST_CLI_OUT_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>

#include "zwrite.h"

/* --compress's words for usage messages. */
#define CLI_COMPRESS_WANT "want zstd, zstd:LEVEL (zstd's levels: 1 to 22, negative ones faster) or off"

/*
 * The level out is written at: opt is --compress's value (NULL: not given);
 * without one, a name ending in ".zst" means zstd. 0 with *level (0:
 * plain), or -EINVAL (a bad value).
 */
int cli_compress_level(const char *opt, const char *out, int *level);

/* Where an output's bytes go: the descriptor, directly or through the compressor. */
struct cli_sink {
    int fd;
    bool z;             /* compressed */
    struct st__zout zo; /* z: the compressor */
};

/* Starts a sink on fd: plain when level is 0. The compressor keeps a pointer into s: s stays where it is until freed. */
void cli_sink_init(struct cli_sink *s, int fd, int level);

/* Writes the next n bytes of the v4 stream. 0 or -errno. */
int cli_sink_write(struct cli_sink *s, const void *p, size_t n);

/* Ends the stream (compressed: the last frames, then the tables). 0 or -errno. */
int cli_sink_finish(struct cli_sink *s);

/* Frees what the sink holds (the descriptor stays its owner's). */
void cli_sink_free(struct cli_sink *s);

#endif
