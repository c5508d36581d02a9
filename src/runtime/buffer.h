/*
 * Per-thread ring buffers: the producer side lives in buffer.c (the hot
 * path), the consumer side in writer.c. The design and its invariants are
 * described at the top of buffer.c.
 */
#ifndef ST_RUNTIME_BUFFER_H
#define ST_RUNTIME_BUFFER_H

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/format.h"

/* Room for the largest event record plus the dropped record before it. */
#define ST_SCRATCH_SIZE (ST_MAX_EVENT_RECORD + ST_EVENT_FIXED_SIZE + 8)

struct st_buf {
    /* Producer's lines: written only by the owning thread (and, with atomic
     * adds, by a signal handler on that thread); the hottest fields first. */
    alignas(64) uint64_t head; /* bytes published; release-stored at commit */
    uint64_t next_head;        /* head once the record being written commits */
    uint64_t tail_cache;       /* last tail seen; reloaded only when full */
    uint8_t *ring;             /* size bytes */
    uint64_t mask;             /* size - 1 */
    uint64_t size;             /* ring bytes, a power of two */
    uint64_t straddle_at;      /* start of a record built in scratch, or UINT64_MAX */
    uint64_t pending_drop;     /* drops not yet reported in a dropped record (atomic) */
    uint64_t committed;        /* event records committed (relaxed stores) */
    uint64_t dropped;          /* all drops of this thread (atomic add) */
    uint32_t busy;             /* a record is being written: nesting guard */
    uint32_t tid;              /* gettid() of the owner, the records' pid field */
    uint32_t kick_shift;       /* log2(size / 4): kick the writer every quarter */
    uint32_t exited;           /* owner thread ended (release-stored) */

    /* Consumer's line: written only by the writeout thread. */
    alignas(64) uint64_t tail; /* bytes consumed; release-stored */
    uint64_t consumed;         /* event records taken out (relaxed stores) */
    uint64_t last_ns;          /* last timestamp written: keeps them monotone */
    struct st_buf *next;       /* list of all buffers, under buf_lock */

    alignas(64) uint8_t scratch[ST_SCRATCH_SIZE]; /* records that straddle the ring's end */
};

/* Creates the thread-exit key. Called by st__init. */
void st__buf_init(void);

/* Every buffer, newest first; walk and change it with st__buf_lock held. */
extern struct st_buf *st__bufs;
void st__buf_lock(void);
void st__buf_unlock(void);

/* Frees a buffer already unlinked from the list (writer, buf_lock not needed). */
void st__buf_free(struct st_buf *b);

/* Marks the calling thread as one that never traces (the writeout thread). */
void st__buf_thread_notrace(void);

/*
 * Selects the clock mode; -EBUSY once any buffer was ever created (raw
 * values of two kinds would mix), -ENOTSUP for a TSC the machine lacks.
 */
int st__buf_select_clock(bool tsc);

/* Fork child: forget every buffer (they hold the parent's records). */
void st__buf_fork_child(void);

/* Events lost because a thread could not get a buffer (malloc failed). */
uint64_t st__buf_orphan_drops(void);

/* Counters of buffers already freed; under buf_lock. */
struct st_buf_totals {
    uint64_t committed, dropped, consumed;
};
extern struct st_buf_totals st__buf_retired;

#endif /* ST_RUNTIME_BUFFER_H */
