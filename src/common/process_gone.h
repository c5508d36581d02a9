/*
 * Whether a process of this host has ended, for the commands that act on
 * what a process left behind (print --follow ends when its writer is gone;
 * recover removes the ring files of a process that no longer runs).
 */
#ifndef ST_COMMON_PROCESS_GONE_H
#define ST_COMMON_PROCESS_GONE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * True when no process has the id pid (kill(pid, 0): ESRCH) or the one that
 * has it is a zombie: exited, its files closed and its memory gone, waiting
 * for its parent's wait(), which kill() still finds. A process killed a
 * moment ago is one until reaped, and a daemon stays one under an init that
 * does not reap (a container's). False while it runs, as another user too
 * (EPERM), and when /proc cannot tell.
 */
bool st__process_gone(uint32_t pid);

#endif /* ST_COMMON_PROCESS_GONE_H */
