/*
 * `simpletrace ctl` against a running traced program, end to end: list,
 * every command with its exact output (text and JSON), the effect of
 * toggling events on the trace file, trace-file off/on (append), flush,
 * set, info trace decoded like `simpletrace print`, info stats, exit
 * statuses, and the socket gone when the program exits.
 *
 * argv: TARGET SIMPLETRACE-CLI TRACE-EVENTS
 */
#include "mon_util.h"

static const char *events_file;
static char pidstr[32];

/* `simpletrace print EVENTS FILE` output (malloc'ed). */
static char *print_file(const char *file)
{
    struct tu_run r = MON_CTL("print", events_file, file);
    if (r.status != 0)
        diag("print %s: %s", file, r.err);
    free(r.err);
    return r.out;
}

static size_t count_lines(const char *text, const char *prefix)
{
    size_t n = 0, pl = strlen(prefix);
    for (const char *p = text; p && *p;) {
        if (!strncmp(p, prefix, pl))
            n++;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return n;
}

static void test_list(struct mon_target *t)
{
    char want[1200];
    struct tu_run r = MON_CTL("ctl", "list");

    is_int(r.status, 0, "ctl list: exit 0");
    snprintf(want, sizeof want, "PID      PROGRAM          STATE            SOCKET\n%-8ld mon_target       alive            %s\n",
             (long)t->pid, mon_sock(t->pid));
    is_str(r.out, want, "ctl list: the target, alive, with its socket");
    tu_run_free(&r);

    r = MON_CTL("ctl", "list", "--json");
    snprintf(want, sizeof want,
             "{\"dir\":\"%s\",\"processes\":[{\"pid\":%ld,\"program\":\"mon_target\",\"socket\":\"%s\","
             "\"alive\":true,\"removed\":false}]}\n",
             mon_sockdir, (long)t->pid, mon_sock(t->pid));
    is_str(r.out, want, "ctl list --json");
    tu_run_free(&r);

    struct stat st;
    ok(stat(mon_sockdir, &st) == 0 && (st.st_mode & 07777) == 0700, "socket directory is mode 0700");
    ok(stat(mon_sock(t->pid), &st) == 0 && S_ISSOCK(st.st_mode) && (st.st_mode & 0777) == 0600,
       "socket is mode 0600");
}

static void test_help_and_errors(void)
{
    struct tu_run r = MON_CTL("ctl", pidstr, "help");

    is_int(r.status, 0, "help: exit 0");
    ok(strstr(r.out, "info trace-events [PATTERN]") && strstr(r.out, "trace-event PATTERN on|off") &&
           strstr(r.out, "trace-file set PATH") && strstr(r.out, "info trace ") && strstr(r.out, "info stats"),
       "help lists every command");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "bogus", "command");
    is_int(r.status, 1, "unknown command: exit 1");
    is_str(r.err, "simpletrace ctl: unknown command \"bogus\" (try \"help\")\n", "unknown command: message");
    is_str(r.out, "", "unknown command: nothing on stdout");
    tu_run_free(&r);

    r = MON_CTL("ctl", "--json", pidstr, "info", "bogus");
    is_int(r.status, 1, "unknown info: exit 1");
    is_str(r.out, "{\"error\":\"unknown command \\\"info bogus\\\" (try \\\"help\\\")\"}\n", "--json error on stdout");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "trace-event", "mon_tick");
    is_int(r.status, 1, "trace-event without on|off: exit 1");
    is_str(r.err, "simpletrace ctl: usage: trace-event PATTERN on|off\n", "trace-event usage message");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "trace-event", "mon$", "on");
    is_str(r.err, "simpletrace ctl: invalid event pattern \"mon$\": want a name with * and ? wildcards\n",
           "invalid pattern message");
    tu_run_free(&r);

    r = MON_CTL("ctl");
    is_int(r.status, 2, "ctl alone: usage error 2");
    tu_run_free(&r);
    r = MON_CTL("ctl", "--bogus", pidstr, "help");
    is_int(r.status, 2, "unknown option: usage error 2");
    tu_run_free(&r);
    r = MON_CTL("ctl", "abc", "help");
    is_int(r.status, 2, "bad target: usage error 2");
    tu_run_free(&r);
    r = MON_CTL("ctl", pidstr);
    is_int(r.status, 2, "no command: usage error 2");
    tu_run_free(&r);
    r = MON_CTL("ctl", "4000000", "help");
    is_int(r.status, 1, "no such process: exit 1");
    ok(strstr(r.err, "cannot reach") && strstr(r.err, "4000000.sock"), "no such process: message names the socket");
    tu_run_free(&r);
    r = MON_CTL("ctl", "--help");
    is_int(r.status, 0, "--help: exit 0");
    ok(strstr(r.out, "usage: simpletrace ctl list") != NULL, "--help prints usage");
    tu_run_free(&r);
}

static void test_info_events(void)
{
    struct tu_run r = MON_CTL("ctl", pidstr, "info", "trace-events");

    is_int(r.status, 0, "info trace-events: exit 0");
    is_str(r.out,
           "mon_tick : state 1\nmon_msg : state 1\nmon_work : state 0\nmon_never : state 0 (unavailable)\n"
           "mon_quit : state 0\n",
           "info trace-events: registration order, QEMU's state 0|1, unavailable marked");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "info", "trace-events", "mon_?i*");
    is_str(r.out, "mon_tick : state 1\n", "info trace-events with a ? glob");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "info", "trace-events", "zzz*");
    is_int(r.status, 0, "a glob matching nothing: exit 0");
    is_str(r.out, "", "a glob matching nothing: empty");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "info", "trace-events", "no_such_event");
    is_int(r.status, 1, "unknown name: exit 1");
    is_str(r.err, "simpletrace ctl: unknown event \"no_such_event\"\n", "unknown name: QEMU's message");
    tu_run_free(&r);

    r = MON_CTL("ctl", "--json", pidstr, "info", "trace-events", "mon_n*");
    is_str(r.out, "{\"events\":[{\"name\":\"mon_never\",\"group\":\"mon\",\"id\":3,\"state\":\"unavailable\"}]}\n",
           "info trace-events --json");
    tu_run_free(&r);
}

static void test_toggle(struct mon_target *t)
{
    struct tu_run r;
    char *text;

    r = MON_CTL("ctl", pidstr, "trace-event", "mon_work", "on");
    is_int(r.status, 0, "trace-event mon_work on: exit 0");
    is_str(r.out, "enabled event \"mon_work\"\n", "trace-event on: says what it did");
    tu_run_free(&r);
    mon_do(t, "threads 3 100");

    r = MON_CTL("ctl", pidstr, "trace-event", "mon_w*", "off");
    is_int(r.status, 0, "trace-event mon_w* off: exit 0");
    is_str(r.out, "disabled 1 event matching \"mon_w*\"\n", "trace-event GLOB off: how many it disabled");
    tu_run_free(&r);
    mon_do(t, "threads 2 50");

    r = MON_CTL("ctl", pidstr, "trace-file", "flush");
    is_int(r.status, 0, "trace-file flush: exit 0");
    ok(r.out && !strncmp(r.out, "flushed: every record traced so far is in \"", 43) &&
           strstr(r.out, "t.bin\"\n"), "flush: says the records are in the file: %s", r.out ? r.out : "");
    tu_run_free(&r);
    text = print_file("t.bin");
    is_int(count_lines(text, "mon_work "), 300, "only the mon_work records traced while it was on reach the file");
    free(text);

    r = MON_CTL("ctl", pidstr, "trace-event", "mon_never", "on");
    is_int(r.status, 1, "enabling a compiled-out event: exit 1");
    is_str(r.err, "simpletrace ctl: event \"mon_never\" is unavailable (compiled out)\n", "compiled-out: message");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "trace-event", "mon_never", "off");
    is_int(r.status, 0, "disabling a compiled-out event: it is off, exit 0");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "trace-event", "mon_*", "on");
    is_int(r.status, 0, "a glob with a compiled-out match: the rest is enabled, exit 0");
    is_str(r.out, "event \"mon_never\" is unavailable (compiled out)\nenabled 4 events matching \"mon_*\"\n",
           "... and the unavailable one is named, and the number enabled");
    tu_run_free(&r);
    r = MON_CTL("ctl", pidstr, "info", "trace-events");
    is_str(r.out,
           "mon_tick : state 1\nmon_msg : state 1\nmon_work : state 1\nmon_never : state 0 (unavailable)\n"
           "mon_quit : state 1\n",
           "every available event is now enabled");
    tu_run_free(&r);

    r = MON_CTL("ctl", "--json", pidstr, "trace-event", "mon_*", "off");
    is_str(r.out,
           "{\"pattern\":\"mon_*\",\"enable\":false,\"matched\":5,\"unavailable\":[\"mon_never\"],\"written\":true}\n",
           "trace-event --json");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "trace-event", "zzz*", "on");
    is_int(r.status, 0, "a glob matching nothing: exit 0");
    is_str(r.out, "no event matches \"zzz*\"\n", "... and says so");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "trace-event", "zzz", "on");
    is_int(r.status, 1, "an unknown name: exit 1");
    is_str(r.err, "simpletrace ctl: unknown event \"zzz\"\n", "unknown name: message");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "trace-event", "mon_tick", "maybe");
    is_str(r.err, "simpletrace ctl: unexpected argument \"maybe\": want on or off\n", "on|off checked");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "trace-event", "mon_tick", "on");
    tu_run_free(&r);
    r = MON_CTL("ctl", pidstr, "trace-event", "mon_msg", "on");
    tu_run_free(&r);
}

static void test_trace_file(struct mon_target *t)
{
    char want[1200], *text, *raw_text, on[900], off[900];
    long long size_before;
    struct tu_run r;

    /* The target configured file=t.bin in test_dir: names are absolute from then on. */
    snprintf(on, sizeof on, "Trace file \"%s\" on.\n", test_path("t.bin"));
    snprintf(off, sizeof off, "Trace file \"%s\" off.\n", test_path("t.bin"));

    r = MON_CTL("ctl", pidstr, "trace-file");
    is_int(r.status, 0, "trace-file: exit 0");
    is_str(r.out, on, "trace-file status: QEMU's line");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "trace-file", "off");
    is_str(r.out, off, "trace-file off: new status");
    tu_run_free(&r);
    size_before = test_file_size(test_path("t.bin"));

    r = MON_CTL("ctl", pidstr, "trace-file", "flush");
    is_int(r.status, 1, "flush while off: exit 1");
    is_str(r.err, "simpletrace ctl: the trace file is off\n", "flush while off: message");
    tu_run_free(&r);

    /* Records traced while the file is off stay in memory: info trace shows them. */
    mon_do(t, "emit 3");
    r = MON_CTL("ctl", "--raw", pidstr, "info", "trace");
    is_int(r.status, 0, "info trace --raw: exit 0");
    {
        FILE *f = fopen(test_path("snap.bin"), "wb");
        fwrite(r.out, 1, r.out_len, f);
        fclose(f);
    }
    tu_run_free(&r);
    raw_text = print_file("snap.bin");
    is_int(count_lines(raw_text, "mon_tick "), 3, "the snapshot holds the 3 mon_tick records");
    is_int(count_lines(raw_text, "mon_msg "), 3, "... and the 3 mon_msg records");
    ok(strstr(raw_text, "text=b'hello 2'") != NULL, "... with their arguments");
    {
        char arg[300];
        snprintf(arg, sizeof arg, "--trace-events=%s", events_file);
        r = MON_CTL("ctl", arg, pidstr, "info", "trace");
    }
    is_int(r.status, 0, "info trace: exit 0");
    is_str(r.out, raw_text, "info trace prints exactly what simpletrace print prints for the snapshot");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "info", "trace");
    is_int(r.status, 0, "info trace without --trace-events: exit 0");
    is_str(r.out, raw_text, "... decodes arguments with the declarations the program sends");
    ok(r.err && !strstr(r.err, "arguments not shown"), "... and needs no note about missing files");
    tu_run_free(&r);
    free(raw_text);

    r = MON_CTL("ctl", "--json", "--trace-events", events_file, pidstr, "info", "trace");
    ok(r.status == 0 && count_lines(r.out, "{\"name\":\"mon_msg\"") == 3 && strstr(r.out, "\"text\":\"hello 1\""),
       "info trace --json: one object per record");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "info", "stats");
    snprintf(want, sizeof want, "trace file: \"%s\" off\n", test_path("t.bin"));
    ok(strstr(r.out, "records in buffers: 6\n") && strstr(r.out, want) &&
           strstr(r.out, "records dropped: 0 (0 reported in the trace file)\n") &&
           strstr(r.out, "threads tracing: 1\n") && strstr(r.out, "buffer use: "),
       "info stats: pending records, file state, drops, threads");
    tu_run_free(&r);
    r = MON_CTL("ctl", "--json", pidstr, "info", "stats");
    ok(strstr(r.out, "\"pending\":6,") && strstr(r.out, "\"file_enabled\":false}") && r.out[0] == '{',
       "info stats --json");
    tu_run_free(&r);

    /* on again: appends (we differ from QEMU, which truncates), then the 6 records arrive. */
    r = MON_CTL("ctl", pidstr, "trace-file", "on");
    is_str(r.out, on, "trace-file on: status");
    tu_run_free(&r);
    r = MON_CTL("ctl", pidstr, "trace-file", "flush");
    tu_run_free(&r);
    ok(test_file_size(test_path("t.bin")) > size_before, "trace-file on appends to the file");
    text = print_file("t.bin");
    is_int(count_lines(text, "mon_work "), 300, "records written before off are kept");
    is_int(count_lines(text, "mon_tick "), 3, "records traced while off reach the file");
    free(text);

    r = MON_CTL("ctl", pidstr, "trace-file", "bogus");
    is_int(r.status, 1, "trace-file bogus: exit 1");
    is_str(r.err, "simpletrace ctl: unexpected argument \"bogus\" (usage: trace-file [on|off|flush|set PATH])\n",
           "trace-file bogus: message");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "trace-file", "set");
    is_str(r.err, "simpletrace ctl: usage: trace-file set PATH\n", "trace-file set without PATH: an error");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "trace-file", "set", "/nonexistent-st-dir/x.bin");
    is_int(r.status, 1, "set to an unwritable path: exit 1");
    is_str(r.err, "simpletrace ctl: cannot open trace file \"/nonexistent-st-dir/x.bin\": No such file or directory\n",
           "... message");
    tu_run_free(&r);
    r = MON_CTL("ctl", pidstr, "trace-file");
    is_str(r.out, on, "... and the old file is kept");
    tu_run_free(&r);

    r = MON_CTL("ctl", pidstr, "trace-file", "set", "/nonexistent-st-dir/x-%q.bin");
    is_int(r.status, 1, "set with an unknown placeholder: exit 1");
    is_str(r.err,
           "simpletrace ctl: invalid file \"/nonexistent-st-dir/x-%q.bin\": unknown placeholder %q (valid: %p pid, "
           "%e program name, %h host name, %t start time, %% a literal %)\n",
           "... message names the placeholder and the valid ones");
    tu_run_free(&r);
    r = MON_CTL("ctl", pidstr, "trace-file");
    is_str(r.out, on, "... and the old file is kept");
    tu_run_free(&r);
    r = MON_CTL("ctl", pidstr, "trace-file", "set", test_path("t-%p.bin"));
    snprintf(want, sizeof want, "Trace file \"%st-%s.bin\" on.\n", test_path(""), pidstr);
    is_str(r.out, want, "trace-file set t-%%p.bin: the reply names the expanded file");
    tu_run_free(&r);

    /* A relative PATH means the client's directory, not the program's. */
    {
        char sub[800];
        snprintf(sub, sizeof sub, "%s", test_path("sub"));
        mkdir(sub, 0700);
        r = mon_ctl_in(sub, (const char *const[]){"ctl", pidstr, "trace-file", "set", "my trace.bin", NULL});
        snprintf(want, sizeof want, "Trace file \"%s/my trace.bin\" on.\n", sub);
        is_str(r.out, want, "trace-file set: relative to the client's directory, blanks kept");
        tu_run_free(&r);
        mon_do(t, "emit 2");
        r = MON_CTL("ctl", "--json", pidstr, "trace-file", "flush");
        is_str(r.out, "{}\n", "flush --json");
        tu_run_free(&r);
        text = print_file("sub/my trace.bin");
        is_int(count_lines(text, "mon_tick "), 2, "the new file gets the new records");
        free(text);
        r = MON_CTL("ctl", "--json", pidstr, "trace-file");
        snprintf(want, sizeof want, "{\"path\":\"%s/my trace.bin\",\"enabled\":true,\"error\":null}\n", sub);
        is_str(r.out, want, "trace-file --json");
        tu_run_free(&r);
    }
}

#define UNWRITTEN                                                                                          \
    "The trace file is off: these records stay in memory (info trace shows them) and are written nowhere " \
    "until trace-file on.\n"

/*
 * monitor=on alone, then events enabled through the monitor (issue 12): the
 * reply says the records go nowhere until trace-file on; after it, they
 * reach the file. A run that never turns the file on says so at exit.
 */
/* Starts exe with monitor=on alone (a fresh target.err); its pid in pid. */
static int start_monitor_only(struct mon_target *t, const char *exe, char *pid, size_t len)
{
    unlink(test_path("target.err"));
    if (mon_start(t, exe, "monitor=on") < 0)
        return -1;
    snprintf(pid, len, "%ld", (long)t->pid);
    return mon_wait_path(mon_sock(t->pid), 1, 2000) ? 0 : -1;
}

static void test_monitor_only(const char *exe)
{
    struct mon_target t;
    struct tu_run r;
    char pid[32], file[64], *text, *err;
    int status;

    if (!ok(start_monitor_only(&t, exe, pid, sizeof pid) == 0, "monitor=on alone: the program serves"))
        return;
    r = MON_CTL("ctl", pid, "trace-event", "mon_tick", "on");
    ok(r.status == 0 && r.out && !strcmp(r.out, "enabled event \"mon_tick\"\n" UNWRITTEN),
       "trace-event on with the file off: the reply says so: %s",
       r.out);
    tu_run_free(&r);
    r = MON_CTL("ctl", "--json", pid, "trace-event", "mon_tick", "on");
    ok(r.status == 0 && r.out && strstr(r.out, "\"written\":false}"), "... and --json says written false: %s", r.out);
    tu_run_free(&r);
    r = MON_CTL("ctl", pid, "trace-event", "mon_tick", "off");
    is_str(r.out, "disabled event \"mon_tick\"\n", "trace-event off: says so, nothing more");
    tu_run_free(&r);
    r = MON_CTL("ctl", pid, "trace-event", "mon_tick", "on");
    tu_run_free(&r);
    mon_do(&t, "emit 4");
    r = MON_CTL("ctl", pid, "info", "trace");
    is_int(count_lines(r.out, "mon_tick "), 4, "info trace shows the 4 records held in memory");
    tu_run_free(&r);
    r = MON_CTL("ctl", pid, "trace-file", "on");
    is_int(r.status, 0, "trace-file on: exit 0");
    tu_run_free(&r);
    r = MON_CTL("ctl", pid, "trace-event", "mon_msg", "on");
    is_str(r.out, "enabled event \"mon_msg\"\n", "with the file on, trace-event on says what it did, nothing more");
    tu_run_free(&r);
    r = MON_CTL("ctl", pid, "trace-event", "mon_*", "on");
    is_str(r.out, "event \"mon_never\" is unavailable (compiled out)\nenabled 4 events matching \"mon_*\"\n",
           "trace-event GLOB on: the compiled-out event named, the number enabled");
    tu_run_free(&r);
    r = MON_CTL("ctl", pid, "trace-file", "flush");
    tu_run_free(&r);
    snprintf(file, sizeof file, "trace-%s", pid);
    text = print_file(file);
    is_int(count_lines(text, "mon_tick "), 4, "after trace-file on, the records held in memory are in the file");
    free(text);
    status = mon_quit(&t);
    err = tu_slurp(test_path("target.err"), NULL);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 && err && !strstr(err, "written nowhere"),
       "the file was on: nothing said at exit: %s", err ? err : "");
    free(err);

    if (!ok(start_monitor_only(&t, exe, pid, sizeof pid) == 0, "monitor=on alone, again"))
        return;
    r = MON_CTL("ctl", pid, "trace-event", "mon_tick", "on");
    tu_run_free(&r);
    mon_do(&t, "emit 3");
    status = mon_quit(&t);
    err = tu_slurp(test_path("target.err"), NULL);
    is_str(err,
           "simpletrace: 3 records were traced and written nowhere: the trace file was never on (file=PATH, or "
           "trace-file on through the monitor)\n",
           "the file never on: said once at exit, with the count");
    free(err);
}

int main(int argc, char **argv)
{
    struct mon_target t;
    char config[1200];
    struct tu_run r;

    if (argc != 4) {
        fprintf(stderr, "usage: %s TARGET SIMPLETRACE TRACE-EVENTS\n", argv[0]);
        return 2;
    }
    mon_cli = argv[2];
    events_file = argv[3];
    mon_setup();
    snprintf(config, sizeof config, "monitor=on,mon_tick,mon_msg,file=t.bin");
    if (mon_start(&t, argv[1], config) < 0)
        return 1;
    snprintf(pidstr, sizeof pidstr, "%ld", (long)t.pid);
    ok(mon_wait_path(mon_sock(t.pid), 1, 2000), "the socket appears in $XDG_RUNTIME_DIR/simpletrace");

    test_list(&t);
    test_help_and_errors();
    test_info_events();
    test_toggle(&t);
    test_trace_file(&t);

    ok(mon_alive(&t), "the program ran unharmed through it all");
    {
        int status = mon_quit(&t);
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the program exits normally");
    }
    ok(!test_exists(mon_sock(t.pid)), "its socket is removed at exit");
    r = MON_CTL("ctl", "list");
    is_str(r.out, "", "ctl list: nothing left");
    ok(strstr(r.err, "no traced process") != NULL, "ctl list says so on stderr");
    tu_run_free(&r);
    test_monitor_only(argv[1]);
    return done_testing();
}
