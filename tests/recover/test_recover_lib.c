/*
 * Unit tests of recover (src/recover/recover.h) on ring file images made in
 * memory (ring_image.h): each validity rule of crash_format.h with the
 * message it gives (field and byte offset), torn and damaged records, a
 * wrapped ring, the write cut by the death with and without the trace
 * file, pending drops, several processes, missing names, the description
 * and declarations the names file carries, the clock built
 * from the anchors, the merge's order and a failing output. The write cut
 * by the death into a compressed trace (compress=zstd): whole, its frame
 * cut at many points or damaged, against what libzstd's streaming decoder
 * makes of the file (unzstd.h), the zstd command giving a prefix of it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tap.h"
#include "test_util.h"
#include "growbuf.h"
#include "meta_format.h"
#include "recover.h"
#include "ring_image.h"
#include "unzstd.h"
#include "zwrite.h"

#define PID 7u
#define TID 11u
#define RING 4096u
#define REC2 (ST_EVENT_FIXED_SIZE + 16) /* an event with two arguments */

/* --- hooks: messages heard, output kept, a fixed measurement ------------------ */

struct heard {
    enum st__recover_what what;
    char field[32];
    char file[64];
    uint64_t offset, value;
    char text[600];
};

static struct heard msgs[32];
static size_t nmsgs;
static uint8_t *outp;
static size_t outlen;
static int fail_with;    /* the write hook's answer when non-zero */
static unsigned measured; /* measure hook calls */

static void hear(void *ctx, const struct st__recover_msg *m)
{
    struct heard *h = &msgs[nmsgs < 32 ? nmsgs++ : 31];

    (void)ctx;
    *h = (struct heard){.what = m->what, .offset = m->offset, .value = m->value};
    snprintf(h->field, sizeof h->field, "%s", m->field ? m->field : "");
    snprintf(h->file, sizeof h->file, "%s", m->file ? m->file : "");
    snprintf(h->text, sizeof h->text, "%s", m->text);
}

static int put(void *ctx, const void *p, size_t n)
{
    (void)ctx;
    if (fail_with)
        return fail_with;
    outp = realloc(outp, outlen + n);
    memcpy(outp + outlen, p, n);
    outlen += n;
    return 0;
}

/* This machine's rate, as the test has it: 0.25 ns per tick. */
static void measure(void *ctx, struct st__clock_anchor *from, struct st__clock_anchor *to)
{
    (void)ctx;
    measured++;
    *from = (struct st__clock_anchor){500, 900};
    *to = (struct st__clock_anchor){500 + 8000000, 900 + 2000000};
}

static const struct st__recover_hooks hooks = {hear, put, measure, NULL};

/* The first message of a kind, or NULL. */
static const struct heard *heard(enum st__recover_what what)
{
    for (size_t i = 0; i < nmsgs; i++)
        if (msgs[i].what == what)
            return &msgs[i];
    return NULL;
}

/* --- the output, parsed --------------------------------------------------------- */

struct ev {
    uint64_t id, ts;
    uint32_t pid;
    unsigned nargs;
    uint64_t arg[4];
};

struct parsed {
    bool ok; /* a v4 header, then whole records only */
    struct {
        uint64_t id;
        char name[40];
    } map[16];
    size_t nmap;
    struct ev ev[128];
    size_t nev;
    /* Description and declarations (meta_format.h), apart from map[]. */
    char desc[256];     /* "" when none */
    bool desc_first;    /* it came right after the header */
    struct {
        uint32_t event;
        char text[80];
        bool after_mapping; /* right after the mapping of its event */
    } decl[8];
    size_t ndecl;
};

/* Keeps a description or declaration record of n bytes at t; prev: the mapping just before (~0: none). */
static bool parse_meta(struct parsed *p, uint64_t id, const uint8_t *t, uint32_t n, uint64_t prev, bool first)
{
    if (st__meta_is_info(id)) {
        if (n >= sizeof p->desc)
            return false;
        memcpy(p->desc, t, n);
        p->desc[n] = '\0';
        p->desc_first = first;
        return true;
    }
    if (p->ndecl == 8 || n >= sizeof p->decl[0].text)
        return false;
    p->decl[p->ndecl].event = st__meta_decl_event(id);
    memcpy(p->decl[p->ndecl].text, t, n);
    p->decl[p->ndecl].text[n] = '\0';
    p->decl[p->ndecl++].after_mapping = prev == st__meta_decl_event(id);
    return true;
}

static bool parse(struct parsed *p, const uint8_t *d, size_t len)
{
    size_t at = ST_HEADER_SIZE;
    uint64_t prev = ~UINT64_C(0); /* the ID of the mapping just before */

    memset(p, 0, sizeof *p);
    if (len < ST_HEADER_SIZE || st__fmt_get_u64(d) != ST_HEADER_EVENT_ID || st__fmt_get_u64(d + 8) != ST_HEADER_MAGIC ||
        st__fmt_get_u64(d + 16) != 4)
        return false;
    while (at < len) {
        if (len - at >= ST_MAPPING_FIXED_SIZE && st__fmt_get_u64(d + at) == ST_RECORD_TYPE_MAPPING) {
            uint32_t n = st__fmt_get_u32(d + at + 16);
            uint64_t id = st__fmt_get_u64(d + at + 8);
            if (n > len - at - ST_MAPPING_FIXED_SIZE)
                return false;
            if (st__meta_is_info(id) || st__meta_is_decl(id)) {
                if (!parse_meta(p, id, d + at + ST_MAPPING_FIXED_SIZE, n, prev, at == ST_HEADER_SIZE))
                    return false;
                prev = ~UINT64_C(0);
                at += ST_MAPPING_FIXED_SIZE + n;
                continue;
            }
            if (p->nmap == 16 || n >= 40)
                return false;
            prev = id;
            p->map[p->nmap].id = id;
            memcpy(p->map[p->nmap++].name, d + at + ST_MAPPING_FIXED_SIZE, n);
            at += ST_MAPPING_FIXED_SIZE + n;
        } else if (len - at >= ST_EVENT_FIXED_SIZE && st__fmt_get_u64(d + at) == ST_RECORD_TYPE_EVENT) {
            struct ev *e = &p->ev[p->nev];
            prev = ~UINT64_C(0);
            uint64_t size = 8 + (uint64_t)st__fmt_get_u32(d + at + ST_EV_OFF_LENGTH);
            if (size < ST_EVENT_FIXED_SIZE || size > len - at || (size - ST_EVENT_FIXED_SIZE) % 8 ||
                size > ST_EVENT_FIXED_SIZE + 32 || p->nev == 128)
                return false;
            e->id = st__fmt_get_u64(d + at + ST_EV_OFF_ID);
            e->ts = st__fmt_get_u64(d + at + ST_EV_OFF_TIMESTAMP);
            e->pid = st__fmt_get_u32(d + at + ST_EV_OFF_PID);
            e->nargs = (unsigned)(size - ST_EVENT_FIXED_SIZE) / 8;
            for (unsigned i = 0; i < e->nargs; i++)
                e->arg[i] = st__fmt_get_u64(d + at + ST_EV_OFF_PAYLOAD + 8 * i);
            p->nev++;
            at += size;
        } else {
            return false;
        }
    }
    return p->ok = true;
}

/* The name the output maps id to, or NULL. */
static const char *mapped(const struct parsed *p, uint64_t id)
{
    for (size_t i = 0; i < p->nmap; i++)
        if (p->map[i].id == id)
            return p->map[i].name;
    return NULL;
}

/* --- running recover ------------------------------------------------------------- */

static struct parsed out;
static struct st__recover_stats stats;

/* Opens and writes; the first error (open's or write's), the output parsed into out. */
static int recover(const struct st__recover_image *rings, size_t n, long pid, const struct st__recover_image *names,
                   const struct st__recover_trace *trace)
{
    struct st__recover *r;
    int ret;

    nmsgs = 0;
    free(outp);
    outp = NULL;
    outlen = 0;
    memset(&stats, 0, sizeof stats);
    memset(&out, 0, sizeof out);
    ret = st__recover_open(&r, rings, n, pid, trace, &hooks);
    if (ret < 0)
        return ret;
    ret = st__recover_write(r, names, trace, &stats);
    st__recover_free(r);
    if (ret == 0 && !parse(&out, outp, outlen))
        diag("the output does not parse (%zu bytes)", outlen);
    return ret;
}

/* One image of r under name. */
static struct st__recover_image img(const struct ri *r, const char *name)
{
    return (struct st__recover_image){name, r->data, r->len};
}

/* A ring of PID/TID with records ft seq 0..n-1 (two arguments: TID, seq) at ns 100, 200, ... */
static void ring_of(struct ri *r, uint32_t pid, uint32_t tid, unsigned n, uint64_t start)
{
    ri_init(r, pid, tid, RING, start);
    for (unsigned i = 0; i < n; i++)
        ri_event(r, 0, 100 * (i + 1), tid, (uint64_t[]){tid, i}, 2);
    ri_finish(r);
}

/* Whether out holds records seq from..to-1 of tid, in order (and nothing else). */
static bool seqs(uint32_t tid, unsigned from, unsigned to)
{
    if (!out.ok || out.nev != to - from)
        return false;
    for (unsigned i = from; i < to; i++) {
        const struct ev *e = &out.ev[i - from];
        if (e->id != 0 || e->pid != tid || e->nargs != 2 || e->arg[0] != tid || e->arg[1] != i)
            return false;
    }
    return true;
}

static struct rbuf names_buf;

/* names_buf: ID 0 is ft_ev. */
static struct st__recover_image names_ft(void)
{
    names_buf.len = 0;
    rb_mapping(&names_buf, 0, "ft_ev");
    return (struct st__recover_image){"d/st-7.names", names_buf.data, names_buf.len};
}

/* --- the cases ----------------------------------------------------------------------- */

static void test_whole(void)
{
    struct ri r;
    struct st__recover_image i, nm = names_ft();
    struct st__recover *rec;

    ring_of(&r, PID, TID, 3, 0);
    i = img(&r, "d/st-7-11.ring");
    is_int(recover(&i, 1, -1, &nm, NULL), 0, "whole ring: recovered");
    is_int(nmsgs, 0, "whole ring: nothing to say");
    ok(seqs(TID, 0, 3), "whole ring: its three records, in order");
    ok(out.nev == 3 && out.ev[0].ts == 100 && out.ev[1].ts == 200 && out.ev[2].ts == 300,
       "whole ring: ns timestamps kept as they are");
    ok(out.nmap == 1 && out.map[0].id == 0 && !strcmp(out.map[0].name, "ft_ev"), "whole ring: the names file's mapping");
    ok(stats.pid == PID && stats.threads == 1 && stats.events == 3 && stats.drops == 0,
       "whole ring: stats pid %u, %zu threads, %llu events, %llu drops", stats.pid, stats.threads,
       (unsigned long long)stats.events, (unsigned long long)stats.drops);
    if (ok(st__recover_open(&rec, &i, 1, -1, NULL, &hooks) == 0, "open again")) {
        is_str(st__recover_first_name(rec), "d/st-7-11.ring", "first_name: the first ring kept");
        is_int(st__recover_pid(rec), PID, "pid: the ring's process");
        st__recover_free(rec);
    }
    ri_free(&r);
}

/* One damaged field: where it is, what is stored there, what the message says. */
struct damage {
    const char *field;
    size_t off;
    unsigned width;
    uint64_t value;
    const char *why;
};

static void test_header_rules(void)
{
    static const struct damage cases[] = {
        {"version", 8, 4, 2, "version is not this program's version"},
        {"hdr_size", 12, 4, 512, "hdr_size is not the header size"},
        {"ring_size", 32, 8, 12345, "ring_size is not a power of two >= 4096"},
        {"ring_size", 32, 8, 2048, "ring_size is not a power of two >= 4096"},
        {"ring_size", 32, 8, 0, "ring_size is not a power of two >= 4096"},
        {"ring_off", 24, 8, ST_CRASH_HDR_SIZE + 4, "ring_off does not leave the ring inside the file"},
        {"ring_off", 24, 8, RI_RING_OFF + RING + 8, "ring_off does not leave the ring inside the file"},
        {"ring_off", 24, 8, RI_RING_OFF + 8, "ring_off does not leave the ring inside the file"},
        {"ring_off", 24, 8, UINT64_MAX - 3, "ring_off does not leave the ring inside the file"},
        {"head_off", 40, 8, 8, "head_off is not between header and ring"},
        {"head_off", 40, 8, RI_RING_OFF - 4, "head_off is not between header and ring"},
        {"tail_off", 48, 8, ST_CRASH_HDR_SIZE - 1, "tail_off is not between header and ring"},
        {"tail_off", 48, 8, UINT64_MAX, "tail_off is not between header and ring"},
        {"pending_off", 56, 8, RI_RING_OFF, "pending_off is not between header and ring"},
        {"clock_tsc", 64, 4, 2, "clock_tsc is neither 0 nor 1"},
    };
    char want[300];

    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const struct damage *c = &cases[k];
        struct ri r;
        struct st__recover_image i;
        uint8_t v[8];
        ring_of(&r, PID, TID, 2, 0);
        if (c->width == 4)
            st__fmt_put_u32(v, (uint32_t)c->value);
        else
            st__fmt_put_u64(v, c->value);
        memcpy(r.data + c->off, v, c->width);
        i = img(&r, "d/st-7-11.ring");
        is_int(recover(&i, 1, -1, NULL, NULL), -ENOENT, "%s = %llu: the only ring is left out", c->field,
               (unsigned long long)c->value);
        ok(nmsgs == 1 && msgs[0].what == ST_RECOVER_BAD_HEADER && !strcmp(msgs[0].field, c->field) &&
               msgs[0].offset == c->off && msgs[0].value == c->value && !strcmp(msgs[0].file, "d/st-7-11.ring"),
           "%s = %llu: reported as that field at byte %zu", c->field, (unsigned long long)c->value, c->off);
        snprintf(want, sizeof want, "d/st-7-11.ring: damaged header: byte %zu: %s (%llu); file left out", c->off,
                 c->why, (unsigned long long)c->value);
        is_str(nmsgs ? msgs[0].text : "", want, "%s = %llu: the message", c->field, (unsigned long long)c->value);
        ri_free(&r);
    }
}

static void test_damaged_next_to_whole(void)
{
    struct ri a, b;
    struct st__recover_image i[2];

    ring_of(&a, PID, 12, 2, 0);
    a.h.version = 9;
    ri_finish(&a);
    ring_of(&b, PID, TID, 3, 0);
    i[0] = img(&a, "d/st-7-12.ring");
    i[1] = img(&b, "d/st-7-11.ring");
    is_int(recover(i, 2, -1, NULL, NULL), 0, "damaged + whole: the whole one recovers");
    ok(seqs(TID, 0, 3) && stats.threads == 1, "damaged + whole: only the whole one's records");
    ok(heard(ST_RECOVER_BAD_HEADER) && !strcmp(heard(ST_RECOVER_BAD_HEADER)->file, "d/st-7-12.ring"),
       "damaged + whole: the damaged one is named");
    ri_free(&a);
    ri_free(&b);
}

static void test_magic(void)
{
    struct ri r;
    struct st__recover_image i;
    uint64_t m = UINT64_C(0x1122334455667788);

    ring_of(&r, PID, TID, 1, 0);
    memcpy(r.data, &m, 8);
    i = img(&r, "d/st-7-11.ring");
    is_int(recover(&i, 1, -1, NULL, NULL), -ENOENT, "bad magic: left out");
    ok(nmsgs == 1 && msgs[0].what == ST_RECOVER_NOT_RING && msgs[0].offset == 0 && msgs[0].value == m,
       "bad magic: not a ring file, byte 0, the magic");
    is_str(nmsgs ? msgs[0].text : "", "d/st-7-11.ring: not a ring file (byte 0: magic 0x1122334455667788)",
           "bad magic: the message");
    /* A file of a big-endian machine: every field swapped, the magic first. */
    m = __builtin_bswap64(ST_CRASH_MAGIC);
    memcpy(r.data, &m, 8);
    is_int(recover(&i, 1, -1, NULL, NULL), -ENOENT, "other byte order: left out");
    ok(nmsgs == 1 && strstr(msgs[0].text, "other byte order"), "other byte order: said so (%s)",
       nmsgs ? msgs[0].text : "");
    ri_free(&r);
}

static void test_head_tail(void)
{
    struct ri r;
    struct st__recover_image i;

    ring_of(&r, PID, TID, 2, 0);
    r.tail = 100;
    r.head = 50;
    ri_finish(&r);
    i = img(&r, "d/st-7-11.ring");
    is_int(recover(&i, 1, -1, NULL, NULL), -ENOENT, "head < tail: left out");
    ok(nmsgs == 1 && msgs[0].what == ST_RECOVER_BAD_HEAD_TAIL && msgs[0].offset == RI_HEAD_OFF &&
           msgs[0].value == 50, "head < tail: reported with head's offset and value");
    is_str(nmsgs ? msgs[0].text : "", "d/st-7-11.ring: head 50 (byte 4096) and tail 100 (byte 4104) do not fit "
           "a ring of 4096 bytes", "head < tail: the message");
    r.tail = 0;
    r.head = RING + 48;
    ri_finish(&r);
    is_int(recover(&i, 1, -1, NULL, NULL), -ENOENT, "head - tail > ring_size: left out");
    ok(nmsgs == 1 && msgs[0].what == ST_RECOVER_BAD_HEAD_TAIL, "head - tail > ring_size: reported");
    ri_free(&r);

    /* A full ring (head - tail == ring_size) is valid: 64 records of 64 bytes. */
    ri_init(&r, PID, TID, RING, 5 * RING + 256);
    for (unsigned s = 0; s < 64; s++)
        ri_event(&r, 0, 10 + s, TID, (uint64_t[]){TID, s, 0, 0}, 4);
    ri_finish(&r);
    i = img(&r, "d/st-7-11.ring");
    is_int(recover(&i, 1, -1, NULL, NULL), 0, "full ring: recovered");
    ok(out.nev == 64 && out.ev[0].arg[1] == 0 && out.ev[63].arg[1] == 63 && nmsgs == 0,
       "full ring: all 64 records (%zu)", out.nev);
    ri_free(&r);
}

static void test_unborn(void)
{
    struct ri r;
    uint8_t zeros[RI_RING_OFF + RING];
    struct st__recover_image i[3], nm = names_ft();

    memset(zeros, 0, sizeof zeros);
    i[0] = (struct st__recover_image){"d/st-7-12.ring", zeros, 100};          /* not yet sized */
    i[1] = (struct st__recover_image){"d/st-7-13.ring", zeros, sizeof zeros}; /* magic not yet stored */
    is_int(recover(i, 2, -1, &nm, NULL), 0, "only files with no header yet: recovered");
    ok(out.ok && out.nev == 0 && out.nmap == 1 && stats.threads == 2 && stats.pid == PID,
       "only files with no header yet: an empty trace of pid %u, %zu threads", stats.pid, stats.threads);
    ok(nmsgs == 2 && msgs[0].what == ST_RECOVER_UNBORN && msgs[1].what == ST_RECOVER_UNBORN &&
           !strcmp(msgs[1].file, "d/st-7-13.ring"), "only files with no header yet: each said");
    is_str(nmsgs ? msgs[0].text : "", "d/st-7-12.ring: no header yet (the program died creating it): no records in it",
           "no header yet: the message");

    ring_of(&r, PID, TID, 3, 0);
    i[2] = img(&r, "d/st-7-11.ring");
    is_int(recover(i + 1, 2, -1, &nm, NULL), 0, "no header yet + whole: recovered");
    ok(seqs(TID, 0, 3) && stats.threads == 2, "no header yet + whole: the whole one's records, 2 threads");

    i[0].name = "d/st-7-12.ringx";
    is_int(recover(i, 1, -1, &nm, NULL), -ENOENT, "no header, name not st-PID-TID.ring: nothing to recover");
    ok(nmsgs == 1 && msgs[0].what == ST_RECOVER_NOT_RING && strstr(msgs[0].text, "not named st-PID-TID.ring"),
       "no header, bad name: said so");
    i[0].name = "d/st-99999999999-1.ring";
    is_int(recover(i, 1, -1, &nm, NULL), -ENOENT, "no header, pid beyond 32 bits: not a ring file name");
    i[0].name = "st-8-1.ring";
    is_int(recover(i, 1, -1, &nm, NULL), 0, "no header, a bare st-PID-TID.ring name: taken");
    is_int(stats.pid, 8, "no header: the pid from the name");
    ri_free(&r);
}

/* A ring whose third record is damaged by set(): the first two recover, the message names position 2 * REC2. */
static void torn_case(const char *what, size_t at, unsigned width, uint64_t value, uint64_t head_cut, const char *why)
{
    struct ri r;
    struct st__recover_image i;
    char want[300];
    uint8_t v[8];
    uint64_t pos = 2 * REC2 + 3 * RING;

    ring_of(&r, PID, TID, 4, 3 * RING);
    if (head_cut)
        r.head = pos + head_cut;
    ri_finish(&r);
    if (width) {
        if (width == 4)
            st__fmt_put_u32(v, (uint32_t)value);
        else
            st__fmt_put_u64(v, value);
        memcpy(r.data + RI_RING_OFF + 2 * REC2 + at, v, width);
    }
    i = img(&r, "d/st-7-11.ring");
    is_int(recover(&i, 1, -1, NULL, NULL), 0, "%s: recovered", what);
    ok(seqs(TID, 0, 2), "%s: the records before it", what);
    ok(nmsgs == 1 && msgs[0].what == ST_RECOVER_BAD_RECORD && msgs[0].value == pos &&
           msgs[0].offset == RI_RING_OFF + 2 * REC2, "%s: the ring stops at position %llu (byte %u)", what,
       (unsigned long long)pos, RI_RING_OFF + 2 * REC2);
    snprintf(want, sizeof want, "d/st-7-11.ring: ring position %llu (byte %u) does not hold a record; %llu bytes "
             "left out (%s)", (unsigned long long)pos, RI_RING_OFF + 2 * REC2,
             (unsigned long long)(r.head - pos), why);
    is_str(nmsgs ? msgs[0].text : "", want, "%s: the message", what);
    ri_free(&r);
}

static void test_torn(void)
{
    torn_case("a record cut by head", 0, 0, 0, REC2 - 8, "record runs past head");
    torn_case("fewer than 32 bytes before head", 0, 0, 0, 20, "fewer bytes left than a record's fixed part");
    torn_case("type 0", ST_EV_OFF_TYPE, 8, 0, 0, "type is not 1");
    torn_case("type 2", ST_EV_OFF_TYPE, 8, 2, 0, "type is not 1");
    torn_case("length 20", ST_EV_OFF_LENGTH, 4, 20, 0, "length shorter than the fixed part");
    torn_case("length 1 MB", ST_EV_OFF_LENGTH, 4, 1u << 20, 0, "length beyond the largest record");
    torn_case("length past head", ST_EV_OFF_LENGTH, 4, 24 + 16 + 2 * REC2 + 8, 0, "record runs past head");
}

static void test_wrapped(void)
{
    struct ri r;
    struct st__recover_image i;
    uint64_t start = 7 * RING + RING - 100; /* free-running counters, the fourth record's header across the end */
    bool args_ok = true;

    ri_init(&r, PID, TID, RING, start);
    for (unsigned s = 0; s < 10; s++)
        ri_event(&r, 0, 1000 + s, TID, (uint64_t[]){TID, s}, 2);
    ri_finish(&r);
    i = img(&r, "d/st-7-11.ring");
    is_int(recover(&i, 1, -1, NULL, NULL), 0, "wrapped ring: recovered");
    ok(seqs(TID, 0, 10) && nmsgs == 0, "wrapped ring: all ten records, whole, in order (%zu)", out.nev);
    for (unsigned s = 0; s < out.nev; s++)
        args_ok &= out.ev[s].ts == 1000 + s;
    ok(args_ok, "wrapped ring: timestamps of records across the end");
    ri_free(&r);
}

/*
 * The write cut by the death: 6 records of TID, the write covering the
 * first 4 and a dropped record of 5, to the trace file (dev 3, ino 77)
 * from byte 24.
 */
static void inflight_ring(struct ri *r)
{
    ring_of(r, PID, TID, 6, 0);
    r->h.inflight_seq = 5;
    r->h.inflight_end = 4 * REC2;
    r->h.inflight_drop = 5;
    r->h.inflight_off = ST_HEADER_SIZE;
    r->h.inflight_len = 4 * REC2 + 40 + 2 * REC2;
    r->h.file_dev = 3;
    r->h.file_ino = 77;
    ri_finish(r);
}

/* A trace file: header, then records seq 0..n-1 of TID, with one of thread 12 and a mapping between. */
static struct st__recover_trace trace_of(struct rbuf *b, unsigned n, bool dropped, uint64_t ino)
{
    b->len = 0;
    rb_header(b);
    for (unsigned s = 0; s < n; s++) {
        rb_event(b, 0, 100 * (s + 1), TID, (uint64_t[]){TID, s}, 2);
        if (s == 0) {
            rb_event(b, 0, 150, 12, (uint64_t[]){12, 0}, 2);
            rb_mapping(b, 3, "ev_new");
        }
    }
    if (dropped)
        rb_dropped(b, 450, TID, 5);
    return (struct st__recover_trace){{"app.trace", b->data, b->len}, 3, ino};
}

/* The dropped count out holds. */
static uint64_t out_drops(void)
{
    uint64_t n = 0;

    for (size_t k = 0; k < out.nev; k++)
        if (out.ev[k].id == ST_DROPPED_EVENT_ID)
            n += out.ev[k].arg[0];
    return n;
}

/* The number of event records (not dropped) out holds. */
static size_t out_events(void)
{
    size_t n = 0;

    for (size_t k = 0; k < out.nev; k++)
        n += out.ev[k].id != ST_DROPPED_EVENT_ID;
    return n;
}

static void test_inflight(void)
{
    static struct rbuf tb;
    struct ri r;
    struct st__recover_image i;
    struct st__recover_trace t;
    const struct heard *h;

    inflight_ring(&r);
    i = img(&r, "d/st-7-11.ring");
    is_int(recover(&i, 1, -1, NULL, NULL), 0, "in flight, no trace file: recovered");
    h = heard(ST_RECOVER_INFLIGHT_KEPT);
    ok(h && h->value == 4, "in flight, no trace file: the write's 4 records are said to be kept");
    is_str(h ? h->text : "", "d/st-7-11.ring: the writeout thread was writing 4 of its records when the program "
           "died; without --trace they are kept and may also end the trace file", "in flight, no trace file: message");
    ok(out_events() == 6 && out.ev[0].arg[1] == 0 && out_drops() == 5, "in flight, no trace file: all 6 kept, "
       "the write's 5 drops counted (%zu, %llu)", out_events(), (unsigned long long)out_drops());

    t = trace_of(&tb, 2, false, 77);
    is_int(recover(&i, 1, -1, NULL, &t), 0, "in flight, 2 records reached the file: recovered");
    h = heard(ST_RECOVER_INFLIGHT_DONE);
    ok(h && h->value == 2 && strstr(h->text, "2 of the 4 records"), "in flight, 2 reached: said (%s)",
       h ? h->text : "");
    ok(out_events() == 4 && out.ev[0].arg[1] == 2 && out_drops() == 5,
       "in flight, 2 reached: seq 2..5 recovered, its dropped record did not arrive: 5 drops");

    t = trace_of(&tb, 4, false, 77);
    is_int(recover(&i, 1, -1, NULL, &t), 0, "in flight, its 4 records arrived, not its dropped record: recovered");
    ok(out_events() == 2 && out.ev[0].arg[1] == 4 && out_drops() == 5,
       "in flight, its records arrived, not its dropped record: seq 4, 5 and the 5 drops");

    t = trace_of(&tb, 4, true, 77);
    is_int(recover(&i, 1, -1, NULL, &t), 0, "in flight, all arrived: recovered");
    ok(out_events() == 2 && out.ev[0].arg[1] == 4 && out_drops() == 0,
       "in flight, all arrived with its dropped record: seq 4, 5 only, no drops again");

    tb.len -= 40 + REC2 + 10; /* the file ends inside the third record of TID */
    t.img.len = tb.len;
    is_int(recover(&i, 1, -1, NULL, &t), 0, "in flight, the file cut mid-record: recovered");
    ok(out_events() == 4 && out.ev[0].arg[1] == 2 && out_drops() == 5,
       "in flight, the file cut mid-record: whole records only count as arrived");

    t = trace_of(&tb, 4, true, 78);
    is_int(recover(&i, 1, -1, NULL, &t), 0, "in flight, another file given: recovered");
    h = heard(ST_RECOVER_INFLIGHT_OTHER);
    is_str(h ? h->text : "", "d/st-7-11.ring: --trace app.trace is not the file that was being written; records kept",
           "in flight, another file: the message");
    ok(out_events() == 6 && out_drops() == 5, "in flight, another file: everything kept");
    t.ino = 0;
    is_int(recover(&i, 1, -1, NULL, &t), 0, "in flight, unreadable file (ino 0): recovered");
    ok(heard(ST_RECOVER_INFLIGHT_OTHER) && out_events() == 6, "in flight, unreadable file: not that file");

    r.h.inflight_off = 1u << 20; /* beyond the file: nothing of it arrived */
    ri_finish(&r);
    t = trace_of(&tb, 4, true, 77);
    is_int(recover(&i, 1, -1, NULL, &t), 0, "in flight, offset past the file's end: recovered");
    ok(out_events() == 6 && out_drops() == 5, "in flight, offset past the file's end: nothing arrived");

    r.h.inflight_end = 7 * REC2;
    ri_finish(&r);
    is_int(recover(&i, 1, -1, NULL, &t), 0, "inflight_end past head: recovered");
    h = heard(ST_RECOVER_INFLIGHT_BAD);
    ok(h && !strcmp(h->field, "inflight_end") && h->offset == 120 && h->value == 7 * REC2,
       "inflight_end past head: reported as field inflight_end, byte 120");
    ok(out_events() == 6 && out_drops() == 0, "inflight_end past head: the note is ignored");

    r.h.inflight_end = 4 * REC2;
    r.h.inflight_seq = 6;
    ri_finish(&r);
    is_int(recover(&i, 1, -1, NULL, &t), 0, "no write in flight (even inflight_seq): recovered");
    ok(nmsgs == 0 && out_events() == 6 && out_drops() == 0, "no write in flight: nothing settled");
    ri_free(&r);
}

/* --- the cut write, compressed ---------------------------------------------------- */

#define ZN 6000 /* records of TID in the ring */
#define ZW 5000 /* those the cut write covers (240 KB: frames of several blocks) */

/* Whole records of v4 bytes p[0..len): TID's events, and whether TID's dropped record is among them. */
static void count_tid(const uint8_t *p, size_t len, uint64_t *events, bool *dropped)
{
    size_t at = 0;

    *events = 0;
    *dropped = false;
    while (len - at >= ST_EVENT_FIXED_SIZE && st__fmt_get_u64(p + at) == ST_RECORD_TYPE_EVENT) {
        size_t size = 8 + st__fmt_get_u32(p + at + ST_EV_OFF_LENGTH);
        if (size > len - at)
            break;
        if (st__fmt_get_u32(p + at + ST_EV_OFF_PID) == TID) {
            if (st__fmt_get_u64(p + at + ST_EV_OFF_ID) == ST_DROPPED_EVENT_ID)
                *dropped = true;
            else
                ++*events;
        }
        at += size;
    }
}

/* The recovered trace's event records: how many, the first's seq, the dropped count (own walk: many records). */
static void out_summary(uint64_t *events, uint64_t *first, uint64_t *drops)
{
    size_t at = ST_HEADER_SIZE;

    *events = *drops = 0;
    *first = UINT64_MAX;
    while (outp && outlen - at >= ST_MAPPING_FIXED_SIZE) {
        if (st__fmt_get_u64(outp + at) == ST_RECORD_TYPE_MAPPING) {
            at += st__fmt_mapping_size(st__fmt_get_u32(outp + at + 16));
            continue;
        }
        if (st__fmt_get_u64(outp + at + ST_EV_OFF_ID) == ST_DROPPED_EVENT_ID)
            *drops += st__fmt_get_u64(outp + at + ST_EV_OFF_PAYLOAD);
        else if ((*events)++ == 0)
            *first = st__fmt_get_u64(outp + at + ST_EV_OFF_PAYLOAD + 8);
        at += 8 + st__fmt_get_u32(outp + at + ST_EV_OFF_LENGTH);
    }
}

/* What `zstd -dc` writes of the file data[0..len): its bytes into *dec (malloc'ed), its exit status. */
static int zstd_dc(const uint8_t *data, size_t len, uint8_t **dec, size_t *declen)
{
    char path[512];
    int fd = tu_tmpfile(path, sizeof path, "rv-zst"), st;
    struct tu_run r;

    if (fd < 0 || write(fd, data, len) != (ssize_t)len)
        return -1;
    close(fd);
    char *argv[] = {"zstd", "-q", "-d", "-c", path, NULL};
    tu_run(argv, NULL, NULL, false, &r);
    unlink(path);
    st = r.status;
    *dec = (uint8_t *)r.out;
    *declen = r.out_len;
    r.out = NULL;
    tu_run_free(&r);
    return st;
}

/*
 * A process writing compress=zstd: its trace file is frame 0 (header, a
 * mapping, thread 12's records) then frame 1, the write cut by the death:
 * TID's seq 0..ZW-1 with thread 12's records among them, then TID's
 * dropped record of 5. The ring holds TID's seq 0..ZN-1 from its tail.
 */
static void test_inflight_compressed(void)
{
    struct st__growbuf v4 = {0}, file = {0};
    struct st__zw zw = {.level = 3};
    struct st__recover_trace t;
    struct st__recover_image i;
    struct ri r;
    uint8_t rec[ST_EVENT_FIXED_SIZE + 16];
    uint64_t off, events, first, drops;
    ssize_t n0, n1;
    bool partial = false;

    ri_init(&r, PID, TID, 1u << 19, 0);
    for (unsigned k = 0; k < ZN; k++)
        ri_event(&r, 0, 100 * (k + 1), TID, (uint64_t[]){TID, k}, 2);
    st__growbuf_commit(&v4, st__fmt_put_header(st__growbuf_room(&v4, ST_HEADER_SIZE)));
    st__growbuf_commit(&v4, st__fmt_put_mapping(st__growbuf_room(&v4, 40), 0, "ft_ev", 5));
    for (unsigned k = 0; k < 300; k++) {
        st__fmt_put_event_header(rec, 0, 10 + k, 16, 12);
        st__fmt_put_u64(rec + ST_EV_OFF_PAYLOAD, 12);
        st__fmt_put_u64(rec + ST_EV_OFF_PAYLOAD + 8, k);
        st__growbuf_put(&v4, rec, sizeof rec);
    }
    off = v4.len;
    for (unsigned k = 0; k < ZW; k++) {
        st__fmt_put_event_header(rec, 0, 100 * (k + 1), 16, TID);
        st__fmt_put_u64(rec + ST_EV_OFF_PAYLOAD, TID);
        st__fmt_put_u64(rec + ST_EV_OFF_PAYLOAD + 8, k);
        st__growbuf_put(&v4, rec, sizeof rec);
        if (k % 100 == 0) {
            st__fmt_put_event_header(rec, 0, 100 * (k + 1), 16, 12);
            st__growbuf_put(&v4, rec, sizeof rec);
        }
    }
    st__growbuf_commit(&v4, st__fmt_put_dropped(st__growbuf_room(&v4, 40), 100 * ZW, TID, 5));
    r.h.inflight_seq = 5;
    r.h.inflight_end = (uint64_t)ZW * REC2;
    r.h.inflight_drop = 5;
    r.h.inflight_off = off;
    r.h.inflight_len = v4.len - off;
    r.h.file_dev = 3;
    r.h.file_ino = 77;
    ri_finish(&r);
    i = img(&r, "d/st-7-11.ring");
    n0 = st__zw_compress(&zw, v4.data, (size_t)off, 1);
    st__growbuf_put(&file, zw.out, (size_t)n0);
    n1 = st__zw_compress(&zw, v4.data + off, (size_t)(v4.len - off), 0);
    st__growbuf_put(&file, zw.out, (size_t)n1);
    ok(n0 > 0 && n1 > 0 && !file.failed, "a compressed trace: frame 0 (%zd bytes), the cut write's frame 1 (%zd)", n0,
       n1);

    t = (struct st__recover_trace){{"app.trace.zst", file.data, file.len}, 3, 77};
    is_int(recover(&i, 1, -1, NULL, &t), 0, "compressed, the write's frame whole: recovered");
    out_summary(&events, &first, &drops);
    ok(heard(ST_RECOVER_INFLIGHT_DONE) && heard(ST_RECOVER_INFLIGHT_DONE)->value == ZW && !heard(ST_RECOVER_TRACE_CUT),
       "... the %u records of the write found in its decompressed stream, left out", ZW);
    ok(events == ZN - ZW && first == ZW && drops == 0, "... seq %u..%u recovered, its dropped record arrived "
       "(%llu from %llu, %llu drops)", ZW, ZN - 1, (unsigned long long)events, (unsigned long long)first,
       (unsigned long long)drops);

    /* The file cut (kill -9 inside the write): what the decoder makes of it arrived, the rest is recovered. */
    size_t c1 = (size_t)n0, cuts[] = {c1, c1 + 3, c1 + 9, c1 + (size_t)n1 / 3, c1 + (size_t)n1 / 2,
                                      c1 + (size_t)n1 * 4 / 5, c1 + (size_t)n1 - 2};
    for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) {
        uint8_t *dec = NULL, *cli = NULL;
        size_t declen = 0, clilen = 0;
        uint64_t arrived = 0;
        bool drop_arrived = false;
        int st = unzstd_all(file.data, cuts[k], &dec, &declen), cst = zstd_dc(file.data, cuts[k], &cli, &clilen);
        if (declen > off)
            count_tid(dec + off, declen - off, &arrived, &drop_arrived);
        ok(clilen <= declen && !memcmp(cli, dec, clilen) && (cst != 0) == (st != 0),
           "cut at compressed byte %zu: zstd -dc gives %zu bytes, libzstd fed all of it %zu", cuts[k], clilen, declen);
        free(dec);
        free(cli);
        t.img.len = cuts[k];
        is_int(recover(&i, 1, -1, NULL, &t), 0, "compressed, cut at compressed byte %zu: recovered", cuts[k]);
        out_summary(&events, &first, &drops);
        const struct heard *h = heard(ST_RECOVER_TRACE_CUT);
        ok(events == ZN - arrived && (arrived == ZN || first == arrived) && drops == (drop_arrived ? 0u : 5u),
           "... the %llu records the decoder gives of the cut frame arrived, the rest recovered: %llu from seq "
           "%llu, %llu drops", (unsigned long long)arrived, (unsigned long long)events, (unsigned long long)first,
           (unsigned long long)drops);
        if (cuts[k] == c1)
            ok(!h && st == 0, "... cut at the frame's start: nothing of it arrived, no cut to speak of");
        else
            ok(h && h->offset == c1 && h->value == cuts[k] && st == 1 && strstr(h->text, "inside zstd frame 1") &&
                   strstr(h->text, "app.trace.zst: "),
               "... the cut frame, its compressed byte offset %zu and where reading stopped named: %s", c1,
               h ? h->text : "(nothing said)");
        partial |= arrived > 0 && arrived < ZW;
        if (cuts[k] == c1 + (size_t)n1 - 2)
            ok(arrived == ZW && drop_arrived && drops == 0,
               "... cut inside the checksum: every block whole, every record of the write arrived");
    }
    ok(partial, "a cut frame's whole blocks give some of its records, not all and not none");

    /* Frame 1 damaged: what decompressed before the damage arrived; the frame and its offset named. */
    file.data[c1 + (size_t)n1 * 9 / 10] ^= 0x55; /* in its second block: the first one's records arrived */
    {
        uint8_t *dec = NULL;
        size_t declen = 0;
        uint64_t arrived = 0;
        bool drop_arrived = false;
        int st = unzstd_all(file.data, file.len, &dec, &declen);
        if (declen > off)
            count_tid(dec + off, declen - off, &arrived, &drop_arrived);
        free(dec);
        t.img.len = file.len;
        is_int(recover(&i, 1, -1, NULL, &t), 0, "compressed, the write's frame damaged: recovered");
        out_summary(&events, &first, &drops);
        const struct heard *h = heard(ST_RECOVER_TRACE_DAMAGED);
        ok(st == -1 && h && h->offset == c1 && strstr(h->text, "zstd frame 1 at compressed byte"),
           "... the damaged frame and its compressed byte offset named: %s", h ? h->text : "(nothing said)");
        ok(arrived > 0 && events == ZN - arrived && drops == (drop_arrived ? 0u : 5u),
           "... what the decoder gives before the damage (%llu records) arrived, the rest recovered (%llu)",
           (unsigned long long)arrived, (unsigned long long)events);
    }
    st__zw_free(&zw);
    st__growbuf_free(&file);
    st__growbuf_free(&v4);
    ri_free(&r);
}

static void test_pending(void)
{
    struct ri r;
    struct st__recover_image i;
    const struct ev *e;

    ring_of(&r, PID, TID, 3, 0);
    r.pending = 42;
    ri_finish(&r);
    i = img(&r, "d/st-7-11.ring");
    is_int(recover(&i, 1, -1, NULL, NULL), 0, "pending drops: recovered");
    e = out.nev == 4 ? &out.ev[3] : NULL;
    ok(e && e->id == ST_DROPPED_EVENT_ID && e->arg[0] == 42 && e->pid == TID && e->ts == 300,
       "pending drops: a dropped record of 42 of thread %u at its last record's time, after its records", TID);
    ok(stats.drops == 42 && stats.events == 3, "pending drops: counted in stats");
    ri_free(&r);

    ri_init(&r, PID, TID, RING, 0);
    ri_event(&r, 0, 100, TID, (uint64_t[]){TID, 0}, 2);
    ri_dropped(&r, 150, TID, 9);
    ri_event(&r, 0, 200, TID, (uint64_t[]){TID, 1}, 2);
    r.tail = r.head; /* all written out, only the pending count is left */
    r.pending = 4;
    r.h.b_ns = 777;
    ri_finish(&r);
    i = img(&r, "d/st-7-11.ring");
    is_int(recover(&i, 1, -1, NULL, NULL), 0, "pending drops, ring written out: recovered");
    ok(out.nev == 1 && out.ev[0].ts == 777 && out.ev[0].arg[0] == 4,
       "pending drops, no record left: stamped with the latest anchor's time");
    r.tail = 0;
    ri_finish(&r);
    is_int(recover(&i, 1, -1, NULL, NULL), 0, "dropped record in the ring: recovered");
    ok(stats.drops == 13 && stats.events == 2 && out_drops() == 13, "dropped record in the ring: 9 + 4 pending");
    ri_free(&r);
}

static void test_several(void)
{
    struct ri a, b, c;
    struct st__recover_image i[4];
    uint8_t zeros[64] = {0};

    ring_of(&a, PID, TID, 3, 0);
    ring_of(&b, 8, 21, 2, 0);
    ring_of(&c, PID, 12, 1, 0);
    i[0] = (struct st__recover_image){"d/st-9-1.ring", zeros, sizeof zeros};
    i[1] = img(&a, "d/st-7-11.ring");
    i[2] = img(&b, "d/st-8-21.ring");
    i[3] = img(&c, "d/st-7-12.ring");
    is_int(recover(i, 4, -1, NULL, NULL), 0, "several processes: recovered");
    ok(stats.pid == PID && stats.threads == 2 && stats.events == 4,
       "several processes started at once: the first with a header's (pid %u, %zu threads)", stats.pid,
       stats.threads);
    ok(heard(ST_RECOVER_OTHER_PIDS) && heard(ST_RECOVER_OTHER_PIDS)->value == PID, "several processes: said");
    is_str(heard(ST_RECOVER_OTHER_PIDS) ? heard(ST_RECOVER_OTHER_PIDS)->text : "",
           "ring files of several processes: recovering pid 7, the one started last (other pids: 9, 8; choose with "
           "--pid, or --trace its trace file)",
           "several processes: the message names the others and the way to choose");
    is_int(recover(i, 4, 8, NULL, NULL), 0, "--pid 8: recovered");
    ok(stats.pid == 8 && stats.threads == 1 && seqs(21, 0, 2), "--pid 8: that process's ring only");
    is_str(heard(ST_RECOVER_OTHER_PIDS) ? heard(ST_RECOVER_OTHER_PIDS)->text : "",
           "recovering pid 8 as asked; the ring files of other processes are left as they are (pids 9, 7)",
           "--pid 8: the others named, no advice to use --pid");

    /* A later crash: process 8 started after 7. */
    b.h.a_ns = 5000;
    ri_finish(&b);
    is_int(recover(i, 4, -1, NULL, NULL), 0, "8 started last: recovered");
    ok(stats.pid == 8 && heard(ST_RECOVER_OTHER_PIDS) && heard(ST_RECOVER_OTHER_PIDS)->value == 8,
       "8 started last: it is recovered, and said");

    /* --trace chooses the process whose ring headers name the file, even an earlier one. */
    a.h.file_dev = c.h.file_dev = 3, a.h.file_ino = c.h.file_ino = 33;
    b.h.file_dev = 3, b.h.file_ino = 44;
    ri_finish(&a);
    ri_finish(&b);
    ri_finish(&c);
    static const uint8_t nothing[1];
    struct st__recover_trace t1 = {{"crash1.trace", nothing, 0}, 3, 33}, t2 = {{"crash2.trace", nothing, 0}, 3, 44},
                             t3 = {{"other.trace", nothing, 0}, 3, 55};
    is_int(recover(i, 4, -1, NULL, &t1), 0, "--trace crash1.trace: recovered");
    ok(stats.pid == PID && stats.threads == 2, "--trace crash1.trace: the earlier process, whose file it is");
    is_str(heard(ST_RECOVER_OTHER_PIDS) ? heard(ST_RECOVER_OTHER_PIDS)->text : "",
           "ring files of several processes: recovering pid 7, whose ring files name crash1.trace as their trace file "
           "(other pids: 9, 8)",
           "--trace crash1.trace: says which and why");
    is_int(recover(i, 4, -1, NULL, &t2), 0, "--trace crash2.trace: recovered");
    ok(stats.pid == 8, "--trace crash2.trace: the later process");
    is_int(recover(i, 4, -1, NULL, &t3), 0, "--trace other.trace (named by no ring): recovered");
    ok(stats.pid == 8 && heard(ST_RECOVER_TRACE_UNNAMED) && heard(ST_RECOVER_TRACE_UNNAMED)->value == 8,
       "--trace other.trace: the one started last, and said");
    is_str(heard(ST_RECOVER_TRACE_UNNAMED) ? heard(ST_RECOVER_TRACE_UNNAMED)->text : "",
           "other.trace: no ring file names it as its trace file: recovering pid 8, the one started last "
           "(other pids: 9, 7; choose with --pid)",
           "--trace other.trace: the message");
    /* Named by no ring, but its name holds a pid of the rings (trace-%p, dir='s PROGRAM-PID.trace): that one. */
    struct st__recover_trace t4 = {{"out/app-7.trace", nothing, 0}, 3, 66}, t5 = {{"run8/app-7.trace", nothing, 0}, 3, 66},
                             t6 = {{"app-7-8.trace", nothing, 0}, 3, 66};
    is_int(recover(i, 4, -1, NULL, &t4), 0, "--trace app-7.trace (named by no ring): recovered");
    ok(stats.pid == PID, "--trace app-7.trace: pid 7, which its name holds, not 8 started last");
    is_str(heard(ST_RECOVER_TRACE_UNNAMED) ? heard(ST_RECOVER_TRACE_UNNAMED)->text : "",
           "out/app-7.trace: no ring file names it as its trace file: recovering pid 7, which its name holds "
           "(other pids: 9, 8)",
           "--trace app-7.trace: says why");
    is_int(recover(i, 4, -1, NULL, &t5), 0, "--trace run8/app-7.trace: recovered");
    ok(stats.pid == PID, "--trace run8/app-7.trace: the base name only (pid 7)");
    is_int(recover(i, 4, -1, NULL, &t6), 0, "--trace app-7-8.trace: recovered");
    ok(stats.pid == 8 && heard(ST_RECOVER_TRACE_UNNAMED) &&
           strstr(heard(ST_RECOVER_TRACE_UNNAMED)->text, "the one started last"),
       "--trace app-7-8.trace: two pids in the name: no guess, the one started last");
    /* Two processes named the same file (deleted and made again, the inode reused): the later one. */
    b.h.file_ino = 33;
    ri_finish(&b);
    is_int(recover(i, 4, -1, NULL, &t1), 0, "two processes name crash1.trace: recovered");
    is_str(stats.pid == 8 && heard(ST_RECOVER_OTHER_PIDS) ? heard(ST_RECOVER_OTHER_PIDS)->text : "",
           "ring files of several processes name crash1.trace as their trace file: recovering pid 8, the one started "
           "last (also: pids 7; choose with --pid)",
           "two processes name crash1.trace: the later one, and both said");
    is_int(recover(i, 4, 9, NULL, NULL), 0, "--pid 9: its ring with no header yet");
    ok(stats.pid == 9 && stats.threads == 1 && out.nev == 0, "--pid 9: an empty trace");
    is_int(recover(i, 4, 10, NULL, NULL), -ENOENT, "--pid 10: no ring of it");
    is_int(recover(i + 1, 1, -1, NULL, NULL), 0, "one process: recovered");
    ok(!heard(ST_RECOVER_OTHER_PIDS), "one process: nothing said about others");
    is_int(recover(NULL, 0, -1, NULL, NULL), -ENOENT, "no ring file at all: -ENOENT");
    ri_free(&a);
    ri_free(&b);
    ri_free(&c);
}

static void test_names(void)
{
    struct ri r;
    struct st__recover_image i, nm;
    struct rbuf *b = &names_buf;
    size_t first;

    ri_init(&r, PID, TID, RING, 0);
    ri_event(&r, 5, 100, TID, NULL, 0);
    ri_event(&r, 0, 200, TID, NULL, 0);
    ri_event(&r, 5, 300, TID, NULL, 0);
    ri_event(&r, UINT64_C(1) << 40, 400, TID, NULL, 0);
    ri_dropped(&r, 500, TID, 2);
    ri_finish(&r);
    i = img(&r, "d/st-7-11.ring");
    is_int(recover(&i, 1, -1, NULL, NULL), 0, "no names file: recovered");
    ok(out.nmap == 3 && out.map[0].id == 0 && out.map[1].id == 5 && out.map[2].id == UINT64_C(1) << 40,
       "no names file: one mapping per ID used, by ID (%zu)", out.nmap);
    is_str(mapped(&out, 5), "st_unknown_5", "no names file: ID 5 is st_unknown_5");
    is_str(mapped(&out, UINT64_C(1) << 40), "st_unknown_1099511627776", "no names file: a large ID too");

    nm = names_ft();
    is_int(recover(&i, 1, -1, &nm, NULL), 0, "names with ID 0 only: recovered");
    ok(out.nmap == 3 && mapped(&out, 0) && !strcmp(mapped(&out, 0), "ft_ev") && mapped(&out, 5) &&
           !strcmp(mapped(&out, 5), "st_unknown_5"),
       "names with ID 0 only: ft_ev, and st_unknown_ID for the others");

    b->len = 0;
    rb_mapping(b, 5, "old_name");
    rb_mapping(b, 0, "ev_zero");
    rb_mapping(b, 5, "new_name");
    first = b->len;
    rb_mapping(b, UINT64_C(1) << 40, "cut_short");
    b->len -= 3; /* the death cut the last mapping */
    nm.len = b->len;
    is_int(recover(&i, 1, -1, &nm, NULL), 0, "names file cut: recovered");
    ok(out.nmap == 3 && out.map[0].id == 0 && out.map[1].id == 5, "names file cut: mappings by ID");
    is_str(mapped(&out, 5), "new_name", "names file: a later mapping of an ID replaces the earlier");
    is_str(mapped(&out, UINT64_C(1) << 40), "st_unknown_1099511627776", "names file cut: its last ID unknown");
    ok(heard(ST_RECOVER_NAMES_TORN) && heard(ST_RECOVER_NAMES_TORN)->offset == first,
       "names file cut: said, at byte %zu", first);
    ri_free(&r);
}

/*
 * The description and declarations of the names file (meta_format.h) go
 * into the trace: the description right after the header, each declaration
 * right after its event's mapping; a declaration of an ID not mapped is
 * left out; a malformed description, or none, gives the pid and clock the
 * ring headers know; a ring record with a reserved ID is not a record.
 */
static void test_meta(void)
{
    static const char desc[] = "simpletrace=1\npid=7\nprogram=crashy\nhost=h\\x20x\n";
    struct rbuf *b = &names_buf;
    struct st__recover_image i, nm;
    struct ri r;

    ring_of(&r, PID, TID, 3, 0);
    i = img(&r, "d/st-7-11.ring");
    b->len = 0;
    rb_mapping(b, ST_META_INFO_ID, desc);
    rb_mapping(b, 0, "ft_ev");
    rb_mapping(b, ST_META_DECL_ID(0), "ft_ev(int thread, int seq) \"t %d s %d\"");
    rb_mapping(b, ST_META_DECL_ID(3), "ft_gone(void) \"\""); /* its mapping torn away: dropped */
    nm = (struct st__recover_image){"d/st-7.names", b->data, b->len};
    is_int(recover(&i, 1, -1, &nm, NULL), 0, "meta: recovered");
    ok(out.ok && !strcmp(out.desc, desc) && out.desc_first, "meta: the names file's description, right after the header");
    ok(out.nmap == 1 && out.ndecl == 1 && out.decl[0].event == 0 && out.decl[0].after_mapping &&
           !strcmp(out.decl[0].text, "ft_ev(int thread, int seq) \"t %d s %d\""),
       "meta: ft_ev's declaration right after its mapping, none for an ID not mapped (%zu)", out.ndecl);
    ok(seqs(TID, 0, 3), "meta: the records as without it");

    b->len = 0;
    rb_mapping(b, ST_META_INFO_ID, "simpletrace=1\nhost=bad\\q\n"); /* a reader would refuse this escape */
    rb_mapping(b, 0, "ft_ev");
    nm.len = b->len;
    is_int(recover(&i, 1, -1, &nm, NULL), 0, "meta: malformed description: recovered");
    is_str(out.desc, "simpletrace=1\npid=7\nclock=monotonic\n", "meta: malformed description: the headers' pid and clock instead");

    is_int(recover(&i, 1, -1, NULL, NULL), 0, "meta: no names file: recovered");
    ok(out.desc_first && !strcmp(out.desc, "simpletrace=1\npid=7\nclock=monotonic\n") && out.ndecl == 0,
       "meta: no names file: a description of pid and clock, no declaration: %s", out.desc);
    ri_free(&r);

    ri_init(&r, PID, TID, RING, 0);
    ri_event(&r, 0, 100, TID, (uint64_t[]){TID, 0}, 2);
    ri_event(&r, ST_META_DECL_ID(0), 200, TID, NULL, 0);
    ri_event(&r, 0, 300, TID, (uint64_t[]){TID, 1}, 2);
    ri_finish(&r);
    i = img(&r, "d/st-7-11.ring");
    is_int(recover(&i, 1, -1, NULL, NULL), 0, "meta: a record with a declaration's ID: recovered");
    ok(out.nev == 1 && heard(ST_RECOVER_BAD_RECORD) && heard(ST_RECOVER_BAD_RECORD)->value == REC2,
       "meta: ... up to it: it is no record (%zu records)", out.nev);
    ri_free(&r);
}

static void test_clock(void)
{
    struct ri r, r2;
    struct st__recover_image i[2];

    /* Anchors 2 ms apart at 0.5 ns per tick. */
    ri_init(&r, PID, TID, RING, 0);
    r.h.clock_tsc = 1;
    r.h.a_raw = 1000, r.h.a_ns = 5000;
    r.h.b_raw = 1000 + 4000000, r.h.b_ns = 5000 + 2000000;
    ri_event(&r, 0, 800, TID, NULL, 0);           /* before a */
    ri_event(&r, 0, 1000 + 2000, TID, NULL, 0);   /* between */
    ri_event(&r, 0, 1000 + 4000200, TID, NULL, 0); /* past b */
    ri_finish(&r);
    i[0] = img(&r, "d/st-7-11.ring");
    measured = 0;
    is_int(recover(i, 1, -1, NULL, NULL), 0, "tsc, anchors 2 ms apart: recovered");
    ok(out.nev == 3 && out.ev[0].ts == 4900 && out.ev[1].ts == 6000 && out.ev[2].ts == 5000 + 2000100,
       "tsc: along the line through a and b (%llu %llu %llu)", (unsigned long long)out.ev[0].ts,
       (unsigned long long)out.ev[1].ts, (unsigned long long)out.ev[2].ts);
    is_int(measured, 0, "tsc, anchors far apart: nothing measured");

    /* Another ring of the process with a later anchor: b is the latest of all. */
    ri_init(&r2, PID, 12, RING, 0);
    r2.h = r.h;
    r2.h.tid = 12;
    r2.h.b_raw = 1000 + 8000000, r2.h.b_ns = 5000 + 2000000 + 1000; /* a slower rate: 2.001 ms / 8 M ticks */
    ri_finish(&r2);
    i[1] = img(&r2, "d/st-7-12.ring");
    is_int(recover(i, 2, -1, NULL, NULL), 0, "two rings: recovered");
    ok(out.nev == 3 && out.ev[1].ts == 5000 + 500, "two rings: the latest anchor of any ring is b (%llu)",
       (unsigned long long)out.ev[1].ts);
    ri_free(&r2);

    /* Anchors under 1 ms apart: this machine's rate (the hook: 0.25 ns per tick). */
    r.h.b_raw = 1000 + 1000, r.h.b_ns = 5000 + 500;
    ri_finish(&r);
    measured = 0;
    is_int(recover(i, 1, -1, NULL, NULL), 0, "anchors under 1 ms apart: recovered");
    is_int(measured, 1, "anchors under 1 ms apart: the rate measured once");
    ok(out.nev == 3 && out.ev[1].ts == 5000 + 500, "anchors under 1 ms apart: at the measured rate (%llu)",
       (unsigned long long)out.ev[1].ts);

    /* b torn (anchor_seq odd): not used. */
    r.h.b_raw = 1000 + 4000000, r.h.b_ns = 5000 + 2000000;
    r.h.anchor_seq = 7;
    ri_finish(&r);
    measured = 0;
    is_int(recover(i, 1, -1, NULL, NULL), 0, "anchors being changed: recovered");
    ok(heard(ST_RECOVER_ANCHOR_TORN) && heard(ST_RECOVER_ANCHOR_TORN)->offset == 72 &&
           !strcmp(heard(ST_RECOVER_ANCHOR_TORN)->field, "anchor_seq"), "anchors being changed: said, byte 72");
    ok(measured == 1 && out.nev == 3 && out.ev[1].ts == 5500, "anchors being changed: b left out, rate measured");

    /* b before a in ticks (damage): no line through them, this machine's rate instead. */
    r.h.anchor_seq = 8;
    r.h.b_raw = 10, r.h.b_ns = 5000 + 2000000;
    ri_finish(&r);
    is_int(recover(i, 1, -1, NULL, NULL), 0, "b before a in ticks: recovered");
    ok(out.nev == 3 && out.ev[1].ts == 5000 + 500, "b before a in ticks: measured rate instead");
    ri_free(&r);
}

static void test_merge_order(void)
{
    static const uint64_t ta[] = {10, 30, 30, 50}, tb[] = {20, 30, 40};
    static const struct {
        uint32_t pid;
        uint64_t ts;
    } want[] = {{11, 10}, {12, 20}, {11, 30}, {11, 30}, {12, 30}, {12, 40}, {11, 50}};
    struct ri a, b;
    struct st__recover_image i[2];
    bool order = true;

    ri_init(&a, PID, 11, RING, 0);
    ri_init(&b, PID, 12, RING, 0);
    for (unsigned k = 0; k < 4; k++)
        ri_event(&a, 0, ta[k], 11, (uint64_t[]){11, k}, 2);
    for (unsigned k = 0; k < 3; k++)
        ri_event(&b, 0, tb[k], 12, (uint64_t[]){12, k}, 2);
    ri_finish(&a);
    ri_finish(&b);
    i[0] = img(&a, "d/st-7-11.ring");
    i[1] = img(&b, "d/st-7-12.ring");
    is_int(recover(i, 2, -1, NULL, NULL), 0, "two threads: recovered");
    for (size_t k = 0; k < 7; k++)
        order &= out.nev == 7 && out.ev[k].pid == want[k].pid && out.ev[k].ts == want[k].ts;
    ok(order, "two threads: merged by time, ties to the first ring");

    /* A thread's time never goes back: a record older than the one before is raised to it. */
    ri_free(&a);
    ri_init(&a, PID, 11, RING, 0);
    ri_event(&a, 0, 100, 11, NULL, 0);
    ri_event(&a, 0, 90, 11, NULL, 0);
    ri_event(&a, 0, 110, 11, NULL, 0);
    ri_finish(&a);
    i[0] = img(&a, "d/st-7-11.ring");
    is_int(recover(i, 1, -1, NULL, NULL), 0, "time going back: recovered");
    ok(out.nev == 3 && out.ev[0].ts == 100 && out.ev[1].ts == 100 && out.ev[2].ts == 110,
       "time going back: clamped to the thread's last");
    ri_free(&a);
    ri_free(&b);
}

static void test_output_errors(void)
{
    struct ri r;
    struct st__recover_image i;
    struct st__recover *rec;
    uint8_t *first;
    size_t first_len;

    ring_of(&r, PID, TID, 3, 0);
    i = img(&r, "d/st-7-11.ring");
    fail_with = -ENOSPC;
    is_int(recover(&i, 1, -1, NULL, NULL), -ENOSPC, "a failing write hook: its error");
    fail_with = 0;
    if (!ok(st__recover_open(&rec, &i, 1, -1, NULL, &hooks) == 0, "open for two writes")) {
        ri_free(&r);
        return;
    }
    outlen = 0;
    is_int(st__recover_write(rec, NULL, NULL, NULL), 0, "first write");
    first = outp;
    first_len = outlen;
    outp = NULL;
    outlen = 0;
    is_int(st__recover_write(rec, NULL, NULL, &stats), 0, "second write");
    ok(first_len == outlen && first_len > ST_HEADER_SIZE && !memcmp(first, outp, outlen),
       "each write writes the same whole trace");
    free(first);
    st__recover_free(rec);
    st__recover_free(NULL);
    ri_free(&r);
}

int main(void)
{
    test_whole();
    test_header_rules();
    test_damaged_next_to_whole();
    test_magic();
    test_head_tail();
    test_unborn();
    test_torn();
    test_wrapped();
    test_inflight();
    test_inflight_compressed();
    test_pending();
    test_several();
    test_names();
    test_meta();
    test_clock();
    test_merge_order();
    test_output_errors();
    free(outp);
    return done_testing();
}
