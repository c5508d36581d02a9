/*
 * print, stats and export on the ordinary mistakes that used to pass
 * without a word or with a misleading one (issue 12, "Nothing silent"):
 *   - the operands swapped (a trace where the trace-events files go, and
 *     the reverse): one message that says so and what to type;
 *   - a trace-events file declaring fewer or more arguments than the
 *     records carry: an error naming the byte offset, record and event,
 *     never a line printed without the arguments;
 *   - a rotated trace named by its first piece: every piece is read, and a
 *     FILE that rotate-keep removed is not "no such file"; pieces older
 *     than FILE (an earlier run's) are not taken for its continuation;
 *   - --pid on a trace that does not record its process: an error pointing
 *     at --tid, the filter by the pid field.
 * Each command runs in the test's directory with relative names, so the
 * messages compare exactly.
 *
 * usage: test_silent_cli SIMPLETRACE_EXE
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "rd_util.h"
#include "rot_util.h"
#include "tap.h"

static const char *exe;
static char dir[1024];

static const char *const cmds[] = {"print", "stats", "export"};

/* Runs `simpletrace CMD [-o x.json] ARGS...` in dir (export writes Chrome JSON to x.json). */
static void run_cmd(struct tu_run *res, const char *cmd, ...)
{
    char *argv[24] = {(char *)exe, (char *)cmd};
    int n = 2;
    if (!strcmp(cmd, "export")) {
        argv[n++] = "-q";
        argv[n++] = "-o";
        argv[n++] = "x.json";
    }
    va_list ap;
    va_start(ap, cmd);
    while (n < 23 && (argv[n] = va_arg(ap, char *)) != NULL)
        n++;
    va_end(ap);
    argv[n] = NULL;
    unlink("x.json");
    if (rd_run(argv, NULL, res) != 0)
        memset(res, 0, sizeof *res);
}

static bool write_text(const char *path, const char *text)
{
    return rot_write_file(path, text, strlen(text));
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static const char *str(const char *s)
{
    return s ? s : "(null)";
}

/* --- the operands swapped ------------------------------------------------------------- */

static void test_swapped(void)
{
    for (size_t i = 0; i < 3; i++) {
        struct tu_run r;
        char want[512];
        run_cmd(&r, cmds[i], "t.trace", "trace-events", NULL);
        snprintf(want, sizeof want,
                 "simpletrace %s: t.trace is a trace file (format version 4), not a trace-events file: the "
                 "trace-events files come first (simpletrace %s TRACE-EVENTS... TRACE-FILE)\n",
                 cmds[i], cmds[i]);
        ok(r.status == 1 && r.out_len == 0 && r.err && !strcmp(r.err, want) && !exists("x.json"),
           "%s TRACE TRACE-EVENTS: exit 1, nothing written, %s", cmds[i], str(r.err));
        tu_run_free(&r);

        run_cmd(&r, cmds[i], "trace-events", "trace-events", NULL);
        snprintf(want, sizeof want, "the trace file comes last (simpletrace %s TRACE-EVENTS... TRACE-FILE)\n", cmds[i]);
        ok(r.status == 1 && r.err &&
               strstr(r.err, "trace-events: byte offset 0, record 0: not a trace file: it begins with text "
                             "(\"ev_a(int seq) \"seq %\"), as a trace-events file does: ") &&
               strstr(r.err, want) && !exists("x.json"),
           "%s TRACE-EVENTS TRACE-EVENTS: exit 1, %s", cmds[i], str(r.err));
        tu_run_free(&r);
    }
    /* Any binary file, not only a trace: the byte that shows it. */
    static const char junk[] = "ev_a(int seq)\n\0\1\2";
    ok(rot_write_file("junk", junk, sizeof junk), "a file of text then NUL bytes");
    struct tu_run r;
    run_cmd(&r, "print", "junk", "t.trace", NULL);
    ok(r.status == 1 && r.err &&
           !strcmp(r.err, "simpletrace print: junk is not a text file (byte offset 14 holds 0x00), not a trace-events "
                          "file: the trace-events files come first (simpletrace print TRACE-EVENTS... TRACE-FILE)\n"),
       "binary trace-events file: %s", str(r.err));
    tu_run_free(&r);
    /*
     * A directory of traces (dir=) where the trace-events go, before an
     * operand that is no trace (`simpletrace sql traces "SELECT ..."`, -e
     * forgotten): said so, not "Input/output error".
     */
    size_t tlen = 0;
    char *tdata = tu_slurp("t.trace", &tlen);
    ok(mkdir("traces.d", 0700) == 0 && tdata && rot_write_file("traces.d/a.trace", tdata, tlen),
       "a directory holding a trace");
    free(tdata);
    for (size_t i = 0; i < 3; i++) {
        char want[512];
        run_cmd(&r, cmds[i], "traces.d", "missing.trace", NULL);
        snprintf(want, sizeof want,
                 "simpletrace %s: traces.d is a directory, not a trace-events file: the trace-events files come "
                 "first (simpletrace %s TRACE-EVENTS... TRACE-FILE)\n", cmds[i], cmds[i]);
        ok(r.status == 1 && r.err && !strcmp(r.err, want) && !exists("x.json"), "%s DIR TRACE: exit 1, %s", cmds[i],
           str(r.err));
        tu_run_free(&r);
    }
    /* A text trace that is not trace-events either: no advice about the order. */
    write_text("notes.txt", "hello, this is not a trace at all\n");
    run_cmd(&r, "print", "trace-events", "notes.txt", NULL);
    ok(r.status == 1 && r.err && strstr(r.err, "not a trace file: it begins with text") &&
           !strstr(r.err, "comes last"),
       "a text file that parses as nothing: no order hint: %s", str(r.err));
    tu_run_free(&r);
}

/* --- declarations that do not match the records ----------------------------------------------- */

/*
 * Runs cmd on t.trace with trace-events text decl; the message must end
 * with want, and print must not have printed a line of the bad event
 * (bad_event), only the good records before it.
 */
static void check_mismatch(const char *cmd, const char *decl, const char *bad_event, const char *want,
                           const char *label)
{
    struct tu_run r;
    write_text("other-events", decl);
    run_cmd(&r, cmd, "other-events", "t.trace", NULL);
    size_t n = r.err ? strlen(r.err) : 0, m = strlen(want);
    bool no_line = strcmp(cmd, "print") || (r.out && !strstr(r.out, bad_event));
    ok(r.status == 1 && no_line && n >= m && !strcmp(r.err + n - m, want) && !exists("x.json"),
       "%s, %s: exit 1, %s", cmd, label, str(r.err));
    tu_run_free(&r);
}

static void test_mismatch(const struct tbuf *p)
{
    /* Piece 0: mappings ev_a = 0, ev_s = 1 (records 1, 2), then seq 0 (ev_s, record 3), seq 1 (ev_a, record 4). */
    char want[512];
    snprintf(want, sizeof want,
             "t.trace: byte offset %zu, record 4: event ev_a: 8 bytes are left after the last declared argument "
             "(8 payload bytes for 0 declared arguments): the trace-events files do not match the trace\n",
             p->rec_off[1]);
    for (size_t i = 0; i < 3; i++)
        check_mismatch(cmds[i], "ev_a(void) \"\"\nev_s(int seq, const char *s) \"seq=%d s=%s\"\n", "ev_a", want, "ev_a declared with no argument");
    snprintf(want, sizeof want,
             "t.trace: byte offset %zu, record 4: event ev_a: argument 'extra' (number 2) lies past the end of the "
             "record (8 payload bytes for 2 declared arguments): the trace-events files do not match the trace\n",
             p->rec_off[1]);
    check_mismatch("print", "ev_a(int seq, int extra) \"seq=%d extra=%d\"\nev_s(int seq, const char *s) \"seq=%d s=%s\"\n", "ev_a", want,
                   "ev_a declared with an argument more");
    snprintf(want, sizeof want,
             "t.trace: byte offset %zu, record 3: event ev_s: 6 bytes are left after the last declared argument "
             "(14 payload bytes for 1 declared argument): the trace-events files do not match the trace\n",
             p->rec_off[0]);
    check_mismatch("print", "ev_a(int seq) \"seq=%d\"\nev_s(int seq) \"seq=%d\"\n", "ev_s", want, "ev_s without its string");
    snprintf(want, sizeof want,
             "t.trace: byte offset %zu, record 3: event ev_s: argument 't' (number 3) lies past the end of the "
             "record (14 payload bytes for 3 declared arguments): the trace-events files do not match the trace\n",
             p->rec_off[0]);
    check_mismatch("print", "ev_a(int seq) \"seq=%d\"\nev_s(int seq, const char *s, const char *t) \"seq=%d s=%s t=%s\"\n", "ev_s", want,
                   "ev_s with a second string");
    snprintf(want, sizeof want,
             "t.trace: byte offset %zu, record 3: event ev_s: argument 's' (number 2) lies past the end of the "
             "record (14 payload bytes for 2 declared arguments): the trace-events files do not match the trace\n",
             p->rec_off[0]);
    check_mismatch("print", "ev_a(int seq) \"seq=%d\"\nev_s(int seq, uint64_t s) \"seq=%d s=%lu\"\n", "ev_s", want,
                   "ev_s's string declared as an integer");
    /* seq 1 read as a string: its first 4 bytes are the length, 1 (the low half of the integer) on a
     * little-endian machine, then 3 bytes too many; 0 (the high half) on a big-endian one, then 4. */
    snprintf(want, sizeof want,
             "t.trace: byte offset %zu, record 4: event ev_a: %d bytes are left after the last declared argument "
             "(8 payload bytes for 1 declared argument): the trace-events files do not match the trace\n",
             p->rec_off[1], __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 3 : 4);
    check_mismatch("print", "ev_a(const char *seq) \"seq=%s\"\nev_s(int seq, const char *s) \"seq=%d s=%s\"\n", "ev_a", want,
                   "ev_a's integer declared as a string");

    /* The declarations that match print every record, exit 0. */
    struct tu_run r;
    run_cmd(&r, "print", "trace-events", "t.trace", NULL);
    ok(r.status == 0 && r.err_len == 0 && r.out && strstr(r.out, "ev_s 1.500 pid=101 seq=0x3 s=b's3'\n"),
       "matching declarations: printed, exit 0");
    tu_run_free(&r);
}

/* --- a rotated trace named by its first piece -------------------------------------------------- */

/* Sets path's modification time to sec seconds after the epoch. */
static bool set_mtime(const char *path, time_t sec)
{
    struct timespec ts[2] = {{sec, 0}, {sec, 0}};
    return utimensat(AT_FDCWD, path, ts, 0) == 0;
}

static void test_rotated(const struct tbuf *p)
{
    mkdir("gap", 0700);
    ok(rot_write("gap/r.trace", p, 2, ROT_N), "pieces 2 and 3 only: rotate-keep removed r.trace and r.trace.1");
    for (size_t i = 0; i < 2; i++) {
        struct tu_run a, b;
        run_cmd(&a, cmds[i], "trace-events", "gap/r.trace", NULL);
        run_cmd(&b, cmds[i], "--rotated", "trace-events", "gap/r.trace", NULL);
        char want[512];
        snprintf(want, sizeof want,
                 "simpletrace %s: gap/r.trace is gone (rotate-keep removed it): reading its 2 remaining pieces "
                 "gap/r.trace.2 to gap/r.trace.3 as one trace\n",
                 cmds[i]);
        ok(a.status == 0 && a.out && b.out && a.out_len > 0 && !strcmp(a.out, b.out) && a.err && !strcmp(a.err, want) &&
               b.err_len == 0,
           "%s FILE, FILE gone: what --rotated prints, and says so: %s", cmds[i], str(a.err));
        tu_run_free(&a);
        tu_run_free(&b);
    }
    struct tu_run r;
    run_cmd(&r, "export", "trace-events", "gap/r.trace", NULL);
    ok(r.status == 0 && exists("x.json") && r.err && strstr(r.err, "gap/r.trace is gone"), "export FILE, FILE gone: %s",
       str(r.err));
    tu_run_free(&r);

    /* Pieces older than FILE were left by an earlier run: FILE alone, and what to type for the rest. */
    mkdir("stale", 0700);
    ok(rot_write("stale/s.trace", p, 0, 2) && set_mtime("stale/s.trace.1", 1000000) &&
           set_mtime("stale/s.trace", 2000000),
       "s.trace newer than its s.trace.1");
    run_cmd(&r, "stats", "--format=json", "trace-events", "stale/s.trace", NULL);
    ok(r.status == 0 && r.out && strstr(r.out, "\"events\":10,") && r.err &&
           !strcmp(r.err, "simpletrace stats: stale/s.trace has pieces up to stale/s.trace.1 that are older than it "
                          "(left by an earlier run): reading stale/s.trace alone; --rotated reads them all\n"),
       "older pieces: FILE alone, and what to type: %s", str(r.err));
    tu_run_free(&r);

    /* With every piece there, in order: all of them, without a word. */
    mkdir("all", 0700);
    ok(rot_write("all/a.trace", p, 0, ROT_N), "4 pieces");
    run_cmd(&r, "stats", "--format=json", "trace-events", "all/a.trace", NULL);
    ok(r.status == 0 && r.out && strstr(r.out, "\"events\":39,") && r.err_len == 0,
       "FILE with pieces: 39 events and a drop of all 4 pieces, nothing on stderr");
    tu_run_free(&r);
}

/* --- --pid and --tid ------------------------------------------------------------------------------ */

static void test_pid(void)
{
    struct tu_run r;
    run_cmd(&r, "print", "--tid=100", "trace-events", "t.trace", NULL);
    ok(r.status == 0 && r.out && strstr(r.out, "pid=100") && !strstr(r.out, "pid=101"),
       "print --tid=100: the records whose pid field is 100");
    tu_run_free(&r);
    for (size_t i = 0; i < 3; i++) {
        run_cmd(&r, cmds[i], "--pid=100", "trace-events", "t.trace", NULL);
        ok(r.status == 1 && r.err &&
               strstr(r.err, "t.trace: byte offset 0, record 0: cannot select the records of process 100: this trace "
                             "(format version 4) does not record which process wrote it") &&
               strstr(r.err, "; --tid=100 selects the records whose pid field is 100\n") &&
               (strcmp(cmds[i], "print") || r.out_len == 0) && !exists("x.json"),
           "%s --pid=100: exit 1, says it cannot tell, points at --tid: %s", cmds[i], str(r.err));
        tu_run_free(&r);
    }
    run_cmd(&r, "print", "--tid=x", "trace-events", "t.trace", NULL);
    ok(r.status == 2 && r.err && strstr(r.err, "bad thread id 'x'"), "--tid=x: usage error");
    tu_run_free(&r);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SIMPLETRACE_EXE\n", argv[0]);
        return 2;
    }
    exe = argv[1];
    if (!rot_tmpdir(dir, sizeof dir, "silent") || chdir(dir) != 0) {
        ok(0, "a temporary directory");
        return done_testing();
    }
    struct tbuf p[ROT_N];
    rot_build(p);
    ok(write_text("trace-events", rot_events_text) && rot_write_file("t.trace", p[0].d, p[0].n),
       "trace-events and t.trace (one piece: 10 records of threads 100 and 101)");
    test_swapped();
    test_mismatch(&p[0]);
    test_rotated(p);
    test_pid();
    rot_free(p);
    if (chdir("/") == 0 && tap__failed == 0)
        rot_rmtree(dir);
    return done_testing();
}
