/*
 * The runtime's timestamps: which clock the tracing hot path reads (the
 * CPU's counter, the TSC or CNTVCT_EL0, where clock.h finds it usable, else
 * CLOCK_MONOTONIC; `clock=` chooses) and the conversion of what it stored.
 * "tsc" below is that counter. The mode changes only while no thread ring
 * exists (ring.c), so no ring mixes the two kinds.
 */
#ifndef ST_RUNTIME_TIMESTAMP_H
#define ST_RUNTIME_TIMESTAMP_H

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"

/* Non-zero when the hot path stores counter ticks (relaxed atomics keep readers race-free). */
extern int st__ts_tsc;

/* The raw timestamp a record gets, in the current mode. */
static inline uint64_t st__ts_raw(void)
{
#if ST_CLOCK_HAVE_COUNTER
    if (__builtin_expect(__atomic_load_n(&st__ts_tsc, __ATOMIC_RELAXED), 1))
        return st__clock_ticks();
#endif
    return st__clock_mono_ns();
}

/*
 * The clock the fast path of st__simple_begin() reads without testing the
 * mode: the counter where there is one. A ring created in the other mode sends
 * every event to the slow path, which uses st__ts_raw().
 */
#define ST_TS_FAST_IS_TSC (ST_CLOCK_HAVE_COUNTER != 0)
static inline uint64_t st__ts_raw_fast(void)
{
    return st__clock_ticks();
}

/* Detects a usable counter and takes the start-up anchor. */
void st__ts_init(void);

/* True when this machine has a counter the runtime uses unless told otherwise. */
bool st__ts_tsc_available(void);

/* True when it may use one when told to (st__clock_counter_forcible()). */
bool st__ts_tsc_forcible(void);

/* Current mode: true = counter ticks. */
bool st__ts_is_tsc(void);

/*
 * Switches mode (to the counter only where available or forcible); only
 * while no thread ring exists (ring.c checks).
 */
void st__ts_set_tsc(bool tsc);

/* The counter's frequency for a description: CNTFRQ_EL0, else 0 (measure it). */
uint64_t st__ts_counter_hz(void);

/* The anchor taken at start-up, and one taken now, in the current mode. */
struct st__clock_anchor st__ts_start(void);
struct st__clock_anchor st__ts_sample(void);

/*
 * Brings a converter up to date for records stamped in the current mode:
 * (re)starts it from the start-up anchor when it converts the other kind
 * (or nothing yet), then adds a knot now if the last is 1 ms old.
 */
void st__ts_conv_update(struct st__clock_conv *cv);

/* The same for a view: afterwards a knot lies after raw (st__clock_conv_update_past). */
void st__ts_conv_update_past(struct st__clock_conv *cv, uint64_t raw);

#endif /* ST_RUNTIME_TIMESTAMP_H */
