/*
 * A directory the runtime writes files into (crash=DIR, dir=DIR): made
 * when missing, so that a configuration can name a directory of its own,
 * and checked, so that an unusable one is a configuration error instead
 * of files that silently fail to appear later.
 */
#ifndef ST_COMMON_DIR_READY_H
#define ST_COMMON_DIR_READY_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Modes of what the runtime creates: owner only, whatever the umask (a
 * server may set umask(0) before it starts tracing: its traces, crash
 * rings and sockets must not become writable by anyone). What exists
 * already keeps its mode: making it beforehand is how to ask for another.
 */
#define ST__OWNER_FILE_MODE 0600
#define ST__OWNER_DIR_MODE 0700

/*
 * Makes dir ready: a writable directory, created (mode 0700, the last
 * component only, as a file is created) when missing; *created tells
 * whether this call made it (the caller removes it on abort). 0 ("" is
 * no directory, and ready), or -ENAMETOOLONG, -ENOTDIR, -EACCES, -ENOENT
 * ... with the message "KEY=DIR: reason" in err.
 */
int st__dir_ready(const char *key, const char *dir, bool *created, char *err, size_t errlen);

#endif /* ST_COMMON_DIR_READY_H */
