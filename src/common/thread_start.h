/*
 * Starting one of our own threads (writeout, monitor, flight recorder,
 * function tracer's writer, the reader's decompress-ahead), one definition. The thread takes no signal
 * (they are the program's business), and the call returns only once the
 * thread runs its function: a thread still starting up (its C library or
 * sanitizer runtime allocating) when the program forks could leave the
 * child an allocator lock held by no thread of its own.
 */
#ifndef ST_COMMON_THREAD_START_H
#define ST_COMMON_THREAD_START_H

#include <pthread.h>

/* Starts fn(arg) in *thread (attr may be NULL), every signal blocked, named name (may be NULL); returns once fn runs. 0 or -errno. */
int st__thread_start(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg,
                     const char *name);

#endif
