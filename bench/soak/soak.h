/*
 * What the soak program (soak.c) traces and the checker (soak_check.c)
 * expects, in one place: call number `seq` (1, 2, ... per thread) of a
 * thread decides the event and every argument, so the checker can verify
 * each record's payload and tell what a missing sequence number was (a
 * drop, or soak_note while it was off).
 */
#ifndef SOAK_H
#define SOAK_H

#include <stdint.h>

enum soak_kind { SOAK_TICK, SOAK_NOTE, SOAK_BURST };

/* Of every 8 calls: 5 ticks (always on), 2 notes (toggled), 1 burst (always on). */
#define SOAK_PERIOD 8u
#define SOAK_NOTE_R1 5u
#define SOAK_NOTE_R2 6u
#define SOAK_BURST_R 7u

/* The most threads the program runs (and the checker tracks). */
#define SOAK_MAX_THREADS 64u

/* Longest note text; lengths 0..SOAK_NOTE_MAX make record sizes vary. */
#define SOAK_NOTE_MAX 96u

static inline enum soak_kind soak_kind(uint64_t seq)
{
    uint64_t r = seq % SOAK_PERIOD;
    if (r == SOAK_NOTE_R1 || r == SOAK_NOTE_R2)
        return SOAK_NOTE;
    return r == SOAK_BURST_R ? SOAK_BURST : SOAK_TICK;
}

/* Length of the note text of call seq (a multiplicative hash: no pattern in the sizes). */
static inline uint32_t soak_note_len(uint64_t seq)
{
    return (uint32_t)((seq * 2654435761u >> 7) % (SOAK_NOTE_MAX + 1));
}

/* Byte i of that text: letters shifted by seq, so a misplaced string shows. */
static inline char soak_note_char(uint64_t seq, uint32_t i)
{
    return (char)('a' + (seq + i) % 26);
}

/* Argument i (0..3) of soak_burst for call seq of thread t. */
static inline uint64_t soak_burst_arg(uint64_t seq, uint32_t t, unsigned i)
{
    uint64_t x = seq * 0x9e3779b97f4a7c15u ^ ((uint64_t)t << 56);
    return i & 1 ? ~x + i : x + i;
}

/* Numbers n in [0, x] with n % SOAK_PERIOD == r. */
static inline uint64_t soak_count_upto(uint64_t x, uint64_t r)
{
    return x >= r ? (x - r) / SOAK_PERIOD + 1 : 0;
}

/* Numbers in [lo, hi] (lo >= 1) with n % SOAK_PERIOD == r. */
static inline uint64_t soak_count_range(uint64_t lo, uint64_t hi, uint64_t r)
{
    if (hi < lo)
        return 0;
    return soak_count_upto(hi, r) - soak_count_upto(lo - 1, r);
}

/* Calls in [lo, hi] that were soak_note. */
static inline uint64_t soak_notes_in(uint64_t lo, uint64_t hi)
{
    return soak_count_range(lo, hi, SOAK_NOTE_R1) + soak_count_range(lo, hi, SOAK_NOTE_R2);
}

#endif /* SOAK_H */
