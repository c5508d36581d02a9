/*
 * How a message names the process that says it. A server's workers share
 * one stderr and may run as other users than the one that started them:
 * a line about a file one of them could not write must say which process
 * (pid and program) and, where permissions decide, which user it was.
 */
#ifndef ST_COMMON_WHO_H
#define ST_COMMON_WHO_H

#include <stdbool.h>
#include <stddef.h>

/*
 * "process 1234 (server)", or with with_user "process 1234 (server), user
 * nobody (uid 65534)" (the effective user; its name from /etc/passwd, read
 * directly so that a fork child of a threaded program may ask: "uid 65534"
 * alone when it is not there), into buf.
 */
void st__who(char *buf, size_t len, bool with_user);

/* The name of user uid from /etc/passwd into buf; false (buf "") when it is not there. */
bool st__user_name(long uid, char *buf, size_t len);

#endif /* ST_COMMON_WHO_H */
