/*
 * How fuzz_recover.c cuts one input into the files recover reads, for the
 * target and for the seed generator (tests/recover/make_recover_corpus.c):
 *
 *   byte 0      flags, FZ_* below
 *   bytes 1-2   length of the names file (little-endian), when FZ_NAMES
 *   bytes 3-4   length of the trace file, when FZ_TRACE
 *   bytes 5-6   length of a second ring file, when FZ_RING2
 *   byte 7      unused
 *   then        names file | trace file | ring file 1 (the rest) | ring file 2
 *
 * Lengths beyond what the input holds are cut to it. Every image is copied
 * into its own allocation, so that a read past one's end is caught.
 */
#ifndef ST_TEST_FUZZ_RECOVER_INPUT_H
#define ST_TEST_FUZZ_RECOVER_INPUT_H

#define FZ_PREFIX 8u

#define FZ_NAMES 0x01u      /* a names file */
#define FZ_TRACE 0x02u      /* a trace file (--trace) */
#define FZ_TRACE_SAME 0x04u /* whose dev/ino are ring 1's file_dev/file_ino (else 1 and 2) */
#define FZ_RING2 0x08u      /* a second ring file */
#define FZ_RING2_PID 0x10u  /* named after another process than ring 1 (st-4000002-12.ring) */
#define FZ_ASK_PID 0x20u    /* recover the process in ring 2's header (--pid) */
#define FZ_BAD_NAME 0x40u   /* ring 1 is not named st-PID-TID.ring */

#define FZ_PID 4000001u /* the pid of the ring files' names */

#endif /* ST_TEST_FUZZ_RECOVER_INPUT_H */
