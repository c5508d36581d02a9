/*
 * Files the runtime writes are opened with O_NOFOLLOW: a symbolic link
 * planted at the name (file=, a rotated piece, dir=, crash=DIR, a
 * snapshot) would otherwise make it overwrite the link's target. O_NOFOLLOW
 * fails with ELOOP, which also means a loop further up the path; this tells
 * the two apart, so the message can say what happened. Header-only, C
 * library only.
 */
#ifndef ST_COMMON_NO_FOLLOW_H
#define ST_COMMON_NO_FOLLOW_H

#include <errno.h>
#include <stdbool.h>
#include <sys/stat.h>

/* What the messages say of a refused link, after its name. */
#define ST__NO_FOLLOW_WHY "is a symbolic link, not followed"

/* True when an O_NOFOLLOW open of path failed with err (-errno) because path is a symbolic link. */
#if defined(__GNUC__)
__attribute__((no_instrument_function))
#endif
static inline bool st__link_refused(const char *path, int err)
{
    struct stat st;
    int saved = errno;
    bool link = err == -ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode);

    errno = saved;
    return link;
}

#endif /* ST_COMMON_NO_FOLLOW_H */
