/*
 * The traced program of bench/meta: 900 generated events (gen_events.py)
 * of varied signatures, traced round-robin in a scrambled order.
 *
 *   SIMPLETRACE='enable=*,file=F' bench_meta_prog [--records N]
 *
 * Writes N records (default 100000, a busy second of a traced QEMU) and
 * flushes every 64 Ki records so that none is dropped; the size of F is
 * then the size of N records with what the file says about itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simpletrace/simpletrace.h>

extern const unsigned bench_meta_events;
void bench_meta_emit(unsigned k, uint64_t i, void *p, const char *s);

int main(int argc, char **argv)
{
    uint64_t records = 100000;
    static int object;

    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--records") && a + 1 < argc) {
            records = strtoull(argv[++a], NULL, 10);
        } else {
            fprintf(stderr, "usage: bench_meta_prog [--records N]\n");
            return 2;
        }
    }
    for (uint64_t i = 0; i < records; i++) {
        /* 389 is prime to 900: every event in turn, neighbours apart. */
        bench_meta_emit((unsigned)((i * 389) % bench_meta_events), i, &object, "virtio-blk0");
        if (i % 65536 == 65535)
            st_trace_file_flush();
    }
    return 0;
}
