/*
 * The module's arguments (src/sql/args.h), one case per rule: what each
 * accepted form sets, and for each refusal its message (the extension's
 * test sees them through sqlite3; here the forms SQLite's tokenizer never
 * lets through, an unclosed quote or an empty argument, are reached too).
 */
#include <string.h>

#include "args.h"
#include "tap.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int parse(struct st__sql_args *a, const char *const *argv, int argc, char *err, size_t len)
{
    return st__sql_args_parse(a, argc, argv, err, len);
}

static void accepted(void)
{
    struct st__sql_args a;
    char err[512];
    const char *argv[] = {"  'it''s.trace' ", "b.trace", "trace = \"c,d.trace\"", "events='te'", "events=te2",
                          "table=spans", "pair='x_begin:x_end@id'", "pair=a:b", "no_default_pairs", "rotated",
                          "no_header", "select='job_*,-job_x'", "tid=7", "pid = 4294967295", "from='1.5ms'",
                          "to=2", "align=realtime"};
    int ret = parse(&a, argv, N(argv), err, sizeof err);
    ok(ret == 0, "every form is accepted (%s)", ret ? err : "");
    ok(a.ntraces == 3 && !strcmp(a.traces[0], "it's.trace") && !strcmp(a.traces[1], "b.trace") &&
           !strcmp(a.traces[2], "c,d.trace"),
       "traces: quoted (a doubled quote is one), bare, trace=");
    ok(a.nevents_files == 2 && !strcmp(a.events_files[0], "te") && !strcmp(a.events_files[1], "te2"), "events=");
    ok(a.table && !strcmp(a.table, "spans") && !a.event, "table=");
    ok(a.npairs == 2 && !strcmp(a.pairs[0], "x_begin:x_end@id") && a.no_default_pairs, "pair=, no_default_pairs");
    ok((a.rd.flags & ST_READER_ROTATED) && (a.rd.flags & ST_READER_NO_HEADER) && (a.rd.flags & ST_READER_ALIGN_REALTIME),
       "rotated, no_header, align=realtime");
    ok(a.rd.events && !strcmp(a.rd.events, "job_*,-job_x"), "select=");
    ok(a.rd.filter_tid && a.rd.tid == 7 && a.rd.filter_pid && a.rd.pid == 4294967295u, "tid=, pid= (blanks around =)");
    ok(a.rd.filter_from && a.rd.from_ns == 1500000 && a.rd.filter_to && a.rd.to_ns == 2, "from=, to=");
    st__sql_args_free(&a);
    const char *ev[] = {"x.trace", "event=records"};
    ok(parse(&a, ev, N(ev), err, sizeof err) == 0 && a.event && !strcmp(a.event, "records"), "event=");
    st__sql_args_free(&a);
}

static void refused(void)
{
    static const struct {
        const char *argv[3];
        const char *msg;
    } cases[] = {
        {{"'x.trace"}, "its quote is not closed"},
        {{"\"x.trace"}, "its quote is not closed"},
        {{"'x.trace' 'y'"}, "text after the closing quote"},
        {{"x.trace", "table='a'b"}, "text after the closing quote"},
        {{"x.trace", "  "}, "an empty argument"},
        {{"events=te"}, "no trace given"},
        {{"x.trace", "colour=red"}, "unknown argument 'colour='"},
        {{"x.trace", "=x"}, "unknown argument '='"},
        {{"x.trace", "table=a", "table=b"}, "table= given twice"},
        {{"x.trace", "event=a", "event=b"}, "event= given twice"},
        {{"x.trace", "tid=-1"}, "bad tid '-1' (a decimal number)"},
        {{"x.trace", "tid=4294967296"}, "bad tid '4294967296'"},
        {{"x.trace", "pid="}, "bad pid ''"},
        {{"x.trace", "from=soon"}, "bad from 'soon' (a time"},
        {{"x.trace", "to=1h"}, "bad to '1h'"},
        {{"x.trace", "align=utc"}, "bad align 'utc' (realtime)"},
        {{"x.trace", "pair=nocolon"}, "nocolon"},
    };
    for (int i = 0; i < N(cases); i++) {
        struct st__sql_args a;
        char err[512] = "";
        int argc = 0;
        while (argc < 3 && cases[i].argv[argc])
            argc++;
        int ret = parse(&a, cases[i].argv, argc, err, sizeof err);
        ok(ret < 0 && strstr(err, cases[i].msg), "%s%s%s: refused, \"%s\"", cases[i].argv[0], argc > 1 ? ", " : "",
           argc > 1 ? cases[i].argv[argc - 1] : "", err);
        st__sql_args_free(&a);
    }
}

int main(void)
{
    accepted();
    refused();
    return done_testing();
}
