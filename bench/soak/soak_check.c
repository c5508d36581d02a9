/*
 * soak_check: verifies the trace of one soak run (bench/soak/run.sh).
 *
 *   soak_check [--toggles-off N] EVENTS PROGRAM-OUTPUT
 *
 * EVENTS is soak-events; PROGRAM-OUTPUT what soak printed (soak.c: its
 * config line names the trace file FILE and the rotation size, its last
 * lines the per-thread calls and the final st_stats). Reads every piece,
 * FILE, FILE.1, FILE.2, ... in order, with the reader library, and prints
 * one PASS/FAIL (or SKIP) line per check, then a `soak-check` line of
 * figures. Exit status 0 when every check passed, 1 when one failed, 2 for
 * usage or unreadable input. N is the number of `trace-event soak_note off`
 * commands run.sh got an answer to.
 *
 * Sequence numbers are per thread and decide the event (soak.h), so a gap
 * before a record says what was not recorded: always-on calls can only be
 * missing because they were dropped, soak_note calls because they were
 * dropped or the event was off. A run of missing notes (between two note
 * records) holding OFF_MIN_ALWAYS consecutive always-on calls, all of them
 * recorded, is counted as one interval with soak_note off.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <simpletrace/reader.h>

#include "soak.h"

/*
 * Consecutive always-on calls, all recorded, with every note call among
 * them missing, that prove soak_note was off. Drops alone do not fake
 * that: a buffer that is nearly full does drop the larger notes while
 * smaller ticks still fit, but never for this long without dropping an
 * always-on record too (16 was seen to be too few at full speed).
 */
#define OFF_MIN_ALWAYS 64u

/* What soak printed about one of its threads. */
struct thread_exp {
    bool seen;
    uint32_t tid;
    uint64_t calls, notes;
};

/* Everything soak printed. */
struct expect {
    bool have_config, have_stats;
    unsigned threads;
    uint64_t rotate; /* bytes, 0: no rotation */
    char file[4096];
    struct thread_exp t[SOAK_MAX_THREADS];
    uint64_t produced, written, dropped, dropped_reported, bytes_written, pending;
    int64_t flush;
};

/* What the trace showed of one thread so far. */
struct thread_state {
    uint64_t last_seq, last_ts;
    uint64_t present[3];                   /* records by enum soak_kind */
    uint64_t missing_always, missing_notes; /* sequence numbers without a record */
    uint64_t drops;                        /* counts of its dropped records */
    uint64_t run_missing;                  /* notes missing since the last note record */
    uint64_t run_clean;                    /* always-on records since then, none missing */
    bool run_off;                          /* the run held OFF_MIN_ALWAYS of them in a row */
    uint64_t off_intervals;
};

enum check_id {
    C_PIECES, C_DECODE, C_MAPPINGS, C_SIZE, C_THREAD, C_SEQ, C_PAYLOAD, C_TIME, C_WRITTEN, C_DROPPED,
    C_PRODUCED, C_BYTES, C_ACCOUNT, C_TOGGLE, C_PIECE_COUNT, C_COUNT
};

static const char *const check_name[C_COUNT] = {
    [C_PIECES] = "pieces FILE, FILE.1, ... contiguous, none stray",
    [C_DECODE] = "every piece decodes strictly to its end",
    [C_MAPPINGS] = "every piece maps every soak event",
    [C_SIZE] = "every piece <= rotate size",
    [C_THREAD] = "records carry a known thread and its tid",
    [C_SEQ] = "per thread, sequence numbers strictly increase across pieces",
    [C_PAYLOAD] = "event and arguments match the sequence number",
    [C_TIME] = "per thread, timestamps never go back across pieces",
    [C_WRITTEN] = "event records == stats.written",
    [C_DROPPED] = "sum of dropped counts == stats.dropped_reported == stats.dropped",
    [C_PRODUCED] = "produced == written + dropped, nothing pending, flush ok",
    [C_BYTES] = "sum of piece sizes == stats.bytes_written",
    [C_ACCOUNT] = "per thread, missing always-on <= drops <= missing always-on + notes",
    [C_TOGGLE] = "soak_note toggling took effect",
    [C_PIECE_COUNT] = "pieces ~ bytes_written / rotate size",
};

struct verdict {
    bool ran;
    uint64_t failures;
    char first[512];
};

/* One check run. */
struct run {
    const struct st_catalog *cat;
    const struct st_event_info *ev[3]; /* by enum soak_kind */
    struct expect e;
    struct thread_state ts[SOAK_MAX_THREADS];
    struct verdict v[C_COUNT];
    uint64_t toggles_off; /* UINT64_MAX: not given */
    uint64_t pieces, bytes, events, drop_records, drop_count;
    uint64_t min_fill, max_piece; /* smallest piece but the last, largest piece */
};

static void ran(struct run *r, enum check_id id)
{
    r->v[id].ran = true;
}

/* Counts a failure of check id; the first one's message is kept. */
static void fail(struct run *r, enum check_id id, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(struct run *r, enum check_id id, const char *fmt, ...)
{
    struct verdict *v = &r->v[id];
    v->ran = true;
    if (v->failures++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->first, sizeof v->first, fmt, ap);
        va_end(ap);
    }
}

/* --- what soak printed ------------------------------------------------------------------------ */

/* The number after " key=" in line into *v: true if there is one. */
static bool field_u64(const char *line, const char *key, uint64_t *v)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    if (!p)
        return false;
    char *end;
    errno = 0;
    *v = strtoull(p + strlen(pat), &end, 10);
    return errno == 0 && end != p + strlen(pat);
}

static bool parse_config(const char *line, struct expect *e)
{
    uint64_t threads;
    const char *f = strstr(line, " file=");
    if (!field_u64(line, "threads", &threads) || !field_u64(line, "rotate", &e->rotate) || !f || threads < 1 ||
        threads > SOAK_MAX_THREADS)
        return false;
    e->threads = (unsigned)threads;
    snprintf(e->file, sizeof e->file, "%s", f + strlen(" file="));
    e->file[strcspn(e->file, "\n")] = '\0';
    return e->have_config = true;
}

static bool parse_thread(const char *line, struct expect *e)
{
    uint64_t index, tid;
    if (!field_u64(line, "index", &index) || index >= SOAK_MAX_THREADS || !field_u64(line, "tid", &tid))
        return false;
    struct thread_exp *t = &e->t[index];
    t->tid = (uint32_t)tid;
    return t->seen = field_u64(line, "calls", &t->calls) && field_u64(line, "notes", &t->notes);
}

static bool parse_stats(const char *line, struct expect *e)
{
    const char *f = strstr(line, " flush=");
    e->flush = f ? strtoll(f + strlen(" flush="), NULL, 10) : -1;
    return e->have_stats = f && field_u64(line, "produced", &e->produced) && field_u64(line, "written", &e->written) &&
                           field_u64(line, "dropped", &e->dropped) &&
                           field_u64(line, "dropped_reported", &e->dropped_reported) &&
                           field_u64(line, "bytes_written", &e->bytes_written) &&
                           field_u64(line, "pending", &e->pending);
}

/* Reads soak's output at path into *e: 0, or -errno / -EINVAL after a message. */
static int read_expect(const char *path, struct expect *e)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int err = errno;
        fprintf(stderr, "soak_check: %s: %s\n", path, strerror(err));
        return -err;
    }
    char line[8192];
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        if (strncmp(line, "soak-config ", 12) == 0)
            ok = parse_config(line + 11, e);
        else if (strncmp(line, "soak-thread ", 12) == 0)
            ok = parse_thread(line + 11, e);
        else if (strncmp(line, "soak-stats ", 11) == 0)
            ok = parse_stats(line + 10, e);
    }
    fclose(f);
    for (unsigned t = 0; ok && e->have_config && t < e->threads; t++)
        ok = e->t[t].seen;
    if (!ok || !e->have_config || !e->have_stats) {
        fprintf(stderr, "soak_check: %s: no complete soak-config, soak-thread and soak-stats lines\n", path);
        return -EINVAL;
    }
    return 0;
}

/* --- the pieces ------------------------------------------------------------------------------- */

static void piece_path(const struct expect *e, uint64_t i, char *buf, size_t len)
{
    if (i == 0)
        snprintf(buf, len, "%s", e->file);
    else
        snprintf(buf, len, "%s.%" PRIu64, e->file, i);
}

/* Number of the piece name "BASE.N" in name, or 0 when name is not one. */
static uint64_t piece_number(const char *base, const char *name)
{
    size_t n = strlen(base);
    if (strncmp(name, base, n) != 0 || name[n] != '.' || name[n + 1] < '1' || name[n + 1] > '9')
        return 0;
    char *end;
    uint64_t v = strtoull(name + n + 1, &end, 10);
    return *end ? 0 : v;
}

/* Counts the contiguous pieces into r->pieces; a numbered piece after a gap is a failure. */
static void list_pieces(struct run *r)
{
    char path[4200], dir[4096], base[4096];
    struct stat st;
    ran(r, C_PIECES);
    for (r->pieces = 0;; r->pieces++) {
        piece_path(&r->e, r->pieces, path, sizeof path);
        if (stat(path, &st) != 0)
            break;
    }
    if (r->pieces == 0)
        fail(r, C_PIECES, "%s: %s", r->e.file, strerror(errno));
    snprintf(dir, sizeof dir, "%s", r->e.file);
    snprintf(base, sizeof base, "%s", r->e.file);
    DIR *d = opendir(dirname(dir));
    if (!d) {
        fail(r, C_PIECES, "%s: %s", dir, strerror(errno));
        return;
    }
    const char *b = basename(base);
    for (struct dirent *de; (de = readdir(d));) {
        uint64_t n = piece_number(b, de->d_name);
        if (n >= r->pieces)
            fail(r, C_PIECES, "%s: piece %" PRIu64 " after the gap at piece %" PRIu64, de->d_name, n, r->pieces);
    }
    closedir(d);
}

/* --- records ---------------------------------------------------------------------------------- */

/* Ends a run of missing notes: an interval with soak_note off if it held a clean stretch. */
static void close_run(struct thread_state *s)
{
    if (s->run_off)
        s->off_intervals++;
    s->run_missing = s->run_clean = 0;
    s->run_off = false;
}

/* Accounts sequence numbers lo..hi of a thread, which have no record. */
static void account_gap(struct thread_state *s, uint64_t lo, uint64_t hi)
{
    if (hi < lo)
        return;
    uint64_t notes = soak_notes_in(lo, hi);
    s->missing_notes += notes;
    s->missing_always += hi - lo + 1 - notes;
    s->run_missing += notes;
    if (hi - lo + 1 > notes) /* an always-on call dropped: the stretch is not clean */
        s->run_clean = 0;
}

static int kind_of(const struct run *r, const struct st_event_info *ev)
{
    for (int k = 0; k < 3; k++)
        if (r->ev[k] == ev)
            return k;
    return -1;
}

/* Whether the arguments after (thread, seq) are what soak.h says call seq of thread t traced. */
static bool payload_ok(const struct st_record *rec, enum soak_kind kind, uint32_t t, uint64_t seq)
{
    if (kind == SOAK_NOTE) {
        const struct st_value *v = &rec->args[2];
        if (v->kind != ST_VALUE_STRING || v->len != soak_note_len(seq))
            return false;
        for (uint32_t i = 0; i < v->len; i++)
            if (v->str[i] != soak_note_char(seq, i))
                return false;
    } else if (kind == SOAK_BURST) {
        for (unsigned i = 0; i < 4; i++)
            if (rec->args[2 + i].u64 != soak_burst_arg(seq, t, i))
                return false;
    }
    return true;
}

static void on_dropped(struct run *r, const struct st_record *rec, const char *piece)
{
    r->drop_records++;
    r->drop_count += rec->dropped_count;
    for (unsigned t = 0; t < r->e.threads; t++)
        if (r->e.t[t].tid == rec->pid) {
            r->ts[t].drops += rec->dropped_count;
            return;
        }
    fail(r, C_THREAD, "%s: byte offset %" PRIu64 ": dropped record of unknown tid %" PRIu32, piece, rec->offset,
         rec->pid);
}

static void on_event(struct run *r, const struct st_record *rec, const char *piece)
{
    r->events++;
    int kind = kind_of(r, rec->event);
    uint64_t t = rec->args[0].u64, seq = rec->args[1].u64;
    if (kind < 0 || t >= r->e.threads || r->e.t[t].tid != rec->pid) {
        fail(r, C_THREAD, "%s: byte offset %" PRIu64 ": %s of thread %" PRIu64 " pid %" PRIu32, piece, rec->offset,
             rec->name, t, rec->pid);
        return;
    }
    struct thread_state *s = &r->ts[t];
    if (seq <= s->last_seq) {
        fail(r, C_SEQ, "%s: byte offset %" PRIu64 ": thread %" PRIu64 " seq %" PRIu64 " after %" PRIu64, piece,
             rec->offset, t, seq, s->last_seq);
        return;
    }
    if (rec->timestamp_ns < s->last_ts)
        fail(r, C_TIME, "%s: byte offset %" PRIu64 ": thread %" PRIu64 " time %" PRIu64 " after %" PRIu64, piece,
             rec->offset, t, rec->timestamp_ns, s->last_ts);
    if ((int)soak_kind(seq) != kind || !payload_ok(rec, (enum soak_kind)kind, (uint32_t)t, seq))
        fail(r, C_PAYLOAD, "%s: byte offset %" PRIu64 ": %s thread %" PRIu64 " seq %" PRIu64 " is not what was traced",
             piece, rec->offset, rec->name, t, seq);
    account_gap(s, s->last_seq + 1, seq - 1);
    if (kind == SOAK_NOTE)
        close_run(s);
    else if (s->run_missing && ++s->run_clean >= OFF_MIN_ALWAYS)
        s->run_off = true;
    s->present[kind]++;
    s->last_seq = seq;
    s->last_ts = rec->timestamp_ns;
}

/* Reads piece i to its end, feeding every record to the per-thread checks. */
static void check_piece(struct run *r, uint64_t i)
{
    char path[4200];
    struct stat st;
    struct st_reader *rd;
    struct st_reader_error err = {.struct_size = sizeof err};
    const struct st_record *rec;
    int rc;

    piece_path(&r->e, i, path, sizeof path);
    if (stat(path, &st) != 0) {
        fail(r, C_DECODE, "%s: %s", path, strerror(errno));
        return;
    }
    uint64_t size = (uint64_t)st.st_size;
    r->bytes += size;
    if (size > r->max_piece)
        r->max_piece = size;
    if (i + 1 < r->pieces && size < r->min_fill)
        r->min_fill = size;
    if (r->e.rotate && size > r->e.rotate)
        fail(r, C_SIZE, "%s: %" PRIu64 " bytes", path, size);
    if ((rc = st_reader_open(&rd, path, r->cat, NULL, &err)) < 0) {
        fail(r, C_DECODE, "%s: %s", path, err.message);
        return;
    }
    while ((rc = st_reader_next(rd, &rec)) == 1) {
        if (rec->dropped)
            on_dropped(r, rec, path);
        else
            on_event(r, rec, path);
    }
    struct st_reader_counters c = {.struct_size = sizeof c};
    st_reader_get_counters(rd, &c);
    if (rc < 0) {
        char msg[512];
        st_reader_format_error(rd, msg, sizeof msg);
        fail(r, C_DECODE, "%s", msg);
    } else if (c.bytes != size) {
        fail(r, C_DECODE, "%s: decoded %" PRIu64 " of %" PRIu64 " bytes", path, c.bytes, size);
    }
    if (c.mappings < 3)
        fail(r, C_MAPPINGS, "%s: %" PRIu64 " mapping records", path, c.mappings);
    st_reader_close(rd);
}

/* --- the verdicts ----------------------------------------------------------------------------- */

/* Closes every thread's stream at its last call, then checks what each thread accounts for. */
static void check_threads(struct run *r)
{
    ran(r, C_SEQ);
    ran(r, C_ACCOUNT);
    for (unsigned t = 0; t < r->e.threads; t++) {
        struct thread_state *s = &r->ts[t];
        const struct thread_exp *x = &r->e.t[t];
        if (s->last_seq > x->calls)
            fail(r, C_SEQ, "thread %u: seq %" PRIu64 " beyond its %" PRIu64 " calls", t, s->last_seq, x->calls);
        account_gap(s, s->last_seq + 1, x->calls);
        close_run(s);
        if (soak_notes_in(1, x->calls) != x->notes)
            fail(r, C_ACCOUNT, "thread %u: %" PRIu64 " note calls, soak says %" PRIu64, t,
                 soak_notes_in(1, x->calls), x->notes);
        if (s->drops < s->missing_always || s->drops > s->missing_always + s->missing_notes)
            fail(r, C_ACCOUNT,
                 "thread %u: %" PRIu64 " dropped, %" PRIu64 " always-on and %" PRIu64 " note calls unrecorded", t,
                 s->drops, s->missing_always, s->missing_notes);
    }
}

static void check_stats(struct run *r)
{
    const struct expect *e = &r->e;
    ran(r, C_WRITTEN);
    ran(r, C_DROPPED);
    ran(r, C_PRODUCED);
    ran(r, C_BYTES);
    if (r->events != e->written)
        fail(r, C_WRITTEN, "%" PRIu64 " event records, written %" PRIu64, r->events, e->written);
    if (r->drop_count != e->dropped_reported || e->dropped != e->dropped_reported)
        fail(r, C_DROPPED, "dropped records count %" PRIu64 ", dropped_reported %" PRIu64 ", dropped %" PRIu64,
             r->drop_count, e->dropped_reported, e->dropped);
    if (e->produced != e->written + e->dropped || e->pending != 0 || e->flush != 0)
        fail(r, C_PRODUCED, "produced %" PRIu64 ", written %" PRIu64 " + dropped %" PRIu64 ", pending %" PRIu64
             ", flush %" PRId64, e->produced, e->written, e->dropped, e->pending, e->flush);
    if (r->bytes != e->bytes_written)
        fail(r, C_BYTES, "%" PRIu64 " bytes in pieces, bytes_written %" PRIu64, r->bytes, e->bytes_written);
}

/*
 * soak_note was recorded for some of its calls and not all, some thread
 * saw an interval with it off, and none saw more intervals than `off`
 * commands were answered. Without drops every thread must also have seen
 * all of them but one (run.sh sends them only while the threads run; the
 * last may land as they stop); with drops an off interval can hide
 * behind them (OFF_MIN_ALWAYS), so that bound holds only for clean runs.
 */
static void check_toggle(struct run *r, uint64_t *min_iv, uint64_t *max_iv)
{
    uint64_t notes = 0, calls = 0, sent = r->toggles_off;
    bool known = sent != UINT64_MAX;
    *min_iv = UINT64_MAX;
    *max_iv = 0;
    ran(r, C_TOGGLE);
    for (unsigned t = 0; t < r->e.threads; t++) {
        uint64_t iv = r->ts[t].off_intervals;
        notes += r->ts[t].present[SOAK_NOTE];
        calls += r->e.t[t].notes;
        *min_iv = iv < *min_iv ? iv : *min_iv;
        *max_iv = iv > *max_iv ? iv : *max_iv;
        bool many = known && iv > sent;
        bool few = known && r->e.dropped == 0 && iv + 1 < sent;
        if (many || few)
            fail(r, C_TOGGLE, "thread %u: %" PRIu64 " intervals with soak_note off, %" PRIu64 " off commands", t, iv,
                 sent);
    }
    if (*max_iv == 0)
        fail(r, C_TOGGLE, "no thread saw an interval with soak_note off");
    if (notes == 0 || notes >= calls)
        fail(r, C_TOGGLE, "%" PRIu64 " soak_note records of %" PRIu64 " calls", notes, calls);
}

/*
 * Pieces hold at most rotate bytes, so there are at least bytes/rotate of
 * them; allow 10% of slack above (pieces end at a whole record, and each
 * repeats the header and mappings).
 */
static void check_piece_count(struct run *r)
{
    uint64_t size = r->e.rotate, bytes = r->bytes;
    if (!size)
        return;
    ran(r, C_PIECE_COUNT);
    uint64_t lo = (bytes + size - 1) / size;
    uint64_t hi = (uint64_t)((double)bytes / ((double)size * 0.9)) + 1;
    if (r->pieces < lo || r->pieces > hi)
        fail(r, C_PIECE_COUNT, "%" PRIu64 " pieces for %" PRIu64 " bytes of %" PRIu64 "-byte pieces (expected %" PRIu64
             "..%" PRIu64 ")", r->pieces, bytes, size, lo, hi);
}

/* Prints a line per check; returns how many failed. */
static int print_verdicts(const struct run *r)
{
    int failed = 0;
    for (int i = 0; i < C_COUNT; i++) {
        const struct verdict *v = &r->v[i];
        if (!v->ran)
            printf("SKIP  %s\n", check_name[i]);
        else if (v->failures == 0)
            printf("PASS  %s\n", check_name[i]);
        else {
            failed++;
            printf("FAIL  %s: %" PRIu64 " failure(s), first: %s\n", check_name[i], v->failures, v->first);
        }
    }
    return failed;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Loads the catalog and finds the three soak events in it: 0 or -errno after a message. */
static int load_catalog(const char *events, struct st_catalog **cat, struct run *r)
{
    char err[512];
    int rc = st_catalog_load(cat, &events, 1, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "soak_check: %s\n", err);
        return rc;
    }
    static const char *const names[3] = {[SOAK_TICK] = "soak_tick", [SOAK_NOTE] = "soak_note",
                                         [SOAK_BURST] = "soak_burst"};
    for (int k = 0; k < 3; k++)
        if (!(r->ev[k] = st_catalog_find(*cat, names[k]))) {
            fprintf(stderr, "soak_check: %s: no event %s\n", events, names[k]);
            return -EINVAL;
        }
    r->cat = *cat;
    return 0;
}

int main(int argc, char **argv)
{
    static struct run r;
    struct st_catalog *cat = NULL;
    int a = 1;

    r.toggles_off = UINT64_MAX;
    r.min_fill = UINT64_MAX;
    if (argc > 2 && strcmp(argv[1], "--toggles-off") == 0) {
        r.toggles_off = strtoull(argv[2], NULL, 10);
        a = 3;
    }
    if (argc - a != 2) {
        fprintf(stderr, "usage: soak_check [--toggles-off N] EVENTS PROGRAM-OUTPUT\n");
        return 2;
    }
    if (read_expect(argv[a + 1], &r.e) < 0 || load_catalog(argv[a], &cat, &r) < 0)
        return 2;

    double start = now_s();
    list_pieces(&r);
    ran(&r, C_DECODE);
    ran(&r, C_MAPPINGS);
    ran(&r, C_THREAD);
    ran(&r, C_PAYLOAD);
    ran(&r, C_TIME);
    if (r.e.rotate)
        ran(&r, C_SIZE);
    for (uint64_t i = 0; i < r.pieces; i++)
        check_piece(&r, i);
    check_threads(&r);
    check_stats(&r);
    uint64_t min_iv, max_iv;
    check_toggle(&r, &min_iv, &max_iv);
    check_piece_count(&r);
    double seconds = now_s() - start;

    int failed = print_verdicts(&r);
    uint64_t notes = 0;
    for (unsigned t = 0; t < r.e.threads; t++)
        notes += r.ts[t].present[SOAK_NOTE];
    printf("soak-check pieces=%" PRIu64 " bytes=%" PRIu64 " events=%" PRIu64 " note_records=%" PRIu64
           " drop_records=%" PRIu64 " drop_count=%" PRIu64 " min_fill=%" PRIu64 " max_piece=%" PRIu64
           " off_intervals=%" PRIu64 "..%" PRIu64 " seconds=%.3f failed=%d\n",
           r.pieces, r.bytes, r.events, notes, r.drop_records, r.drop_count,
           r.min_fill == UINT64_MAX ? 0 : r.min_fill, r.max_piece, min_iv, max_iv, seconds, failed);
    st_catalog_free(cat);
    return failed ? 1 : 0;
}
