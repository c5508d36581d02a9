/* Compressed outputs of merge and recover (out_compress.h). */
#include <errno.h>
#include <string.h>

#include "out_compress.h"
#include "write_all.h"

int cli_compress_level(const char *opt, const char *out, int *level)
{
    size_t len = out ? strlen(out) : 0;

    *level = 0;
    if (opt)
        return st__zw_parse(opt, level, NULL) < 0 ? -EINVAL : 0;
    if (len > 4 && !strcmp(out + len - 4, ".zst"))
        *level = ST__ZW_DEFAULT_LEVEL;
    return 0;
}

/* The compressor's writes go to the descriptor. */
static int to_fd(void *ctx, const void *p, size_t n)
{
    return st__write_all(*(int *)ctx, p, n);
}

void cli_sink_init(struct cli_sink *s, int fd, int level)
{
    memset(s, 0, sizeof *s);
    s->fd = fd;
    s->z = level != 0;
    if (s->z)
        st__zout_init(&s->zo, level, to_fd, &s->fd);
}

int cli_sink_write(struct cli_sink *s, const void *p, size_t n)
{
    return s->z ? st__zout_put(&s->zo, p, n) : st__write_all(s->fd, p, n);
}

int cli_sink_finish(struct cli_sink *s)
{
    return s->z ? st__zout_finish(&s->zo) : 0;
}

void cli_sink_free(struct cli_sink *s)
{
    if (s->z)
        st__zout_free(&s->zo);
}
