/*
 * st_configure(): every item kind, every error message, all-or-nothing,
 * events files (comments, CRLF, indentation, no final newline, bad line,
 * missing), file= (last wins, kept by a later option, unwritable), bufsize,
 * log-prefix, clock, ',,' escapes and ';'-joined options.
 */
#include "rt_test.h"

TEST_EVENT(ev_a, "cfg_a", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_b, "cfg_b", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_c, "cfg_c", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_other, "other_x", "int x", "x %d", "i", 1, 0);
TEST_GROUP(grp_cfg, "cfg", &ev_a, &ev_b, &ev_c, &ev_other)

TEST_EVENT(ev_late1, "late_one", "void", "", "", 0, 0);
TEST_EVENT(ev_late2, "late_two", "void", "", "", 0, 0);
static struct st_event *const late_events[] = {&ev_late1, &ev_late2};
static struct st_group grp_late = {sizeof(struct st_group), "late", late_events, 2, 0};

static struct st_group *const groups[] = {&grp_cfg, &grp_late, NULL};

static char err[1024];

/* Expects config to fail with ret and exactly message msg. */
/*
 * The CPU counter the runtime reads on this architecture (clock=NAME), as
 * the README names it; NULL where it reads none.
 */
#if defined(__x86_64__)
#define COUNTER "tsc"
#define OTHER_COUNTER "cntvct"
#elif defined(__aarch64__)
#define COUNTER "cntvct"
#define OTHER_COUNTER "tsc"
#else
#define COUNTER NULL
#define OTHER_COUNTER "tsc"
#endif

static void fails(const char *config, int ret, const char *msg)
{
    strcpy(err, "(unchanged)");
    is_int(st_configure(config, err, sizeof err), ret, "'%s' fails", config);
    is_str(err, msg, "'%s': message", config);
}

static int state(const char *name)
{
    return st_event_get_state(name);
}

static void test_errors(void)
{
    char path[1200], msg[1400];
    struct st_file_status fs = {.struct_size = sizeof fs};

    is_int(st_configure(NULL, err, sizeof err), -EINVAL, "NULL config -> -EINVAL");
    fails("bogus=1", -EINVAL, "unknown key 'bogus'");
    fails("cfg_a,bogus=1", -EINVAL, "unknown key 'bogus'");
    is_int(state("cfg_a"), ST_EVENT_DISABLED, "all or nothing: cfg_a not enabled by a failing config");
    fails("cfg_a$", -EINVAL, "invalid event pattern 'cfg_a$'");
    fails("enable=", -EINVAL, "invalid event pattern ''");
    fails("-", -EINVAL, "invalid event pattern '-'");
    fails("enable=a b", -EINVAL, "invalid event pattern 'a b'");
    fails("cfg_a,,", -EINVAL, "invalid event pattern 'cfg_a,'");
    fails("events=", -EINVAL, "events=: empty file name");
    fails("file=", -EINVAL, "file=: empty path");
    snprintf(path, sizeof path, "%s", test_path("missing.events"));
    snprintf(msg, sizeof msg, "events=%s", path);
    {
        char want[1400];
        snprintf(want, sizeof want, "events=%s: cannot open: No such file or directory", path);
        fails(msg, -ENOENT, want);
        snprintf(msg, sizeof msg, "events=%s", test_dir);
        snprintf(want, sizeof want, "events=%s: cannot read: Is a directory", test_dir);
        fails(msg, -EISDIR, want);
    }
    fails("bufsize=3000", -EINVAL, "invalid bufsize '3000': want a power of two from 4K to 1G");
    fails("bufsize=2K", -EINVAL, "invalid bufsize '2K': want a power of two from 4K to 1G");
    fails("bufsize=2G", -EINVAL, "invalid bufsize '2G': want a power of two from 4K to 1G");
    fails("bufsize=64x", -EINVAL, "invalid bufsize '64x': want a power of two from 4K to 1G");
    fails("bufsize=", -EINVAL, "invalid bufsize '': want a power of two from 4K to 1G");
    fails("bufsize=99999999999999999999", -EINVAL,
          "invalid bufsize '99999999999999999999': want a power of two from 4K to 1G");
    fails("log-prefix=maybe", -EINVAL, "invalid log-prefix 'maybe': want on or off");
    /* path holds the message wanted. */
    snprintf(path, sizeof path, "invalid clock 'fast': want %s or monotonic", COUNTER ? COUNTER : "counter");
    fails("clock=fast", -EINVAL, path);
    if (COUNTER)
        snprintf(path, sizeof path, "clock=%s: this machine's counter is %s", OTHER_COUNTER, COUNTER);
    else
        snprintf(path, sizeof path, "clock=%s: this machine has no counter the runtime reads (want monotonic)",
                 OTHER_COUNTER);
    snprintf(msg, sizeof msg, "clock=%s", OTHER_COUNTER);
    fails(msg, -ENOTSUP, path);
    fails("cfg_a,file=/nonexistent-st-dir/t", -ENOENT,
          "cannot open trace file '/nonexistent-st-dir/t': No such file or directory");
    snprintf(msg, sizeof msg, "cfg_a,file=%s", test_dir);
    {
        char want[1400];
        snprintf(want, sizeof want, "cannot open trace file '%s': Is a directory", test_dir);
        fails(msg, -EISDIR, want);
    }
    is_int(state("cfg_a"), ST_EVENT_DISABLED, "unwritable file=: nothing applied");
    st_trace_file_status(&fs);
    ok(!fs.enabled, "unwritable file=: file still off");
    snprintf(msg, sizeof msg, "cfg_a,file=%s,bogus=x", test_path("never.trace"));
    fails(msg, -EINVAL, "unknown key 'bogus'");
    ok(!test_exists(test_path("never.trace")), "a failing config creates no file");
    is_int(st_configure("bogus=1", NULL, 0), -EINVAL, "errbuf may be NULL");
}

static void test_events_files(void)
{
    char cfg[1200], want[1400];

    /* Comments (indented too), CRLF, blank lines, spaces, no final newline. */
    test_write_file(test_path("good.events"),
                    "# a comment\r\n\r\n  cfg_a  \r\n\t# indented comment\ncfg_b\n\n-cfg_b\ncfg_c");
    test_write_file(test_path("bad.events"), "other_x\n# ok\nbad line\n");
    snprintf(cfg, sizeof cfg, "events=%s", test_path("bad.events"));
    snprintf(want, sizeof want, "events=%s: line 3: invalid event pattern 'bad line'", test_path("bad.events"));
    fails(cfg, -EINVAL, want);
    is_int(state("other_x"), ST_EVENT_DISABLED, "bad events file: its good lines not applied");
    ok(!test_exists(test_path("trace.bin")), "no file after a bad events file");

    snprintf(cfg, sizeof cfg, "events=%s,file=%s", test_path("good.events"), test_path("one.trace"));
    is_int(st_configure(cfg, err, sizeof err), 0, "good events file: %s", err);
    is_int(state("cfg_a"), ST_EVENT_ENABLED, "events file: trimmed line enables cfg_a");
    is_int(state("cfg_b"), ST_EVENT_DISABLED, "events file: later -cfg_b disables it");
    is_int(state("cfg_c"), ST_EVENT_ENABLED, "events file: last line without newline keeps its last char");
    is_int(state("other_x"), ST_EVENT_DISABLED, "events file: other events untouched");
}

static void test_file_option(void)
{
    struct st_file_status fs = {.struct_size = sizeof fs};
    struct test_trace t;
    char cfg[2000];

    st_trace_file_status(&fs);
    ok(fs.enabled && !strcmp(fs.path, test_path("one.trace")), "file= names the file and enables it");

    snprintf(cfg, sizeof cfg, "cfg_a,file=%s;cfg_b,file=%s", test_path("x1.trace"), test_path("x2.trace"));
    is_int(st_configure(cfg, err, sizeof err), 0, "two options joined with ';'");
    st_trace_file_status(&fs);
    is_str(fs.path, test_path("x2.trace"), "last file= wins");
    ok(!test_exists(test_path("x1.trace")), "an overridden file= is never created");
    is_int(state("cfg_b"), ST_EVENT_ENABLED, "second option's pattern applied");

    is_int(st_configure("-cfg_b", err, sizeof err), 0, "an option without file=");
    st_trace_file_status(&fs);
    is_str(fs.path, test_path("x2.trace"), "an option without file= keeps the file (unlike QEMU)");
    is_int(state("cfg_b"), ST_EVENT_DISABLED, "-cfg_b applied");

    snprintf(cfg, sizeof cfg, "file=%s", test_path("a,,b"));
    is_int(st_configure(cfg, err, sizeof err), 0, "',,' escapes a comma");
    st_trace_file_status(&fs);
    is_str(fs.path, test_path("a,b"), "file name with a comma");

    test_trace_i(&ev_a, 1);
    test_trace_i(&ev_c, 3);
    test_trace_i(&ev_b, 2); /* disabled */
    is_int(st_trace_file_flush(), 0, "flush");
    ok(test_collect(test_path("a,b"), groups, &t) == 0, "trace decodes");
    ok(t.sum.events == 2 && test_count(&t, "cfg_a") == 1 && test_count(&t, "cfg_c") == 1,
       "enabled events traced, disabled one not");
    ok(t.sum.mappings == 4, "mappings for the 4 registered events");
    test_trace_free(&t);

    /* Rules for names not registered yet are kept for later groups. */
    is_int(st_configure("late_*;-late_two", err, sizeof err), 0, "rules for unknown names are fine");
    is_int(st_group_register(&grp_late), 0, "late group registers");
    is_int(state("late_one"), ST_EVENT_ENABLED, "late_* applied to the late group");
    is_int(state("late_two"), ST_EVENT_DISABLED, "-late_two applied after it");
    is_int(st_configure("cfg_a,,;", err, sizeof err), -EINVAL, "escaped comma ends up in the pattern");
    is_int(st_configure(";;cfg_a;", err, sizeof err), 0, "empty items are ignored");
}

static void test_own_keys(void)
{
    struct st_file_status fs = {.struct_size = sizeof fs};
    const char *mode;
    char msg[64];

    is_int(st_configure("", err, sizeof err), 0, "empty config is fine");
    is_int(st_configure("bufsize=64K", err, sizeof err), 0, "bufsize=64K");
    is_int(st_configure("bufsize=4096,bufsize=1M,bufsize=1g", err, sizeof err), 0, "bufsize 4096, 1M, 1g");
    is_int(st_configure("log-prefix=on", err, sizeof err), 0, "log-prefix=on");
    is_int(st_configure("log-prefix=off", err, sizeof err), 0, "log-prefix=off");
    st_trace_file_set_enabled(false);
    is_int(st_configure("bufsize=8K,log-prefix=off", err, sizeof err), 0, "own keys only");
    st_trace_file_status(&fs);
    ok(!fs.enabled, "own keys alone do not enable the trace file");

    /* This thread has traced: its raw timestamps fix the clock. */
    mode = st_configure("clock=monotonic", NULL, 0) == 0 ? "monotonic" : "counter";
    if (!strcmp(mode, "monotonic")) {
        /* We were already on the monotonic clock: no usable counter (x86-64: no invariant TSC; aarch64: the
         * kernel's clocksource is not the generic timer, as under qemu-user; elsewhere none). */
        if (!COUNTER)
            fails("clock=counter", -ENOTSUP, "clock=none: this machine has no counter the runtime reads");
        else if (!strcmp(COUNTER, "tsc"))
            fails("clock=tsc", -ENOTSUP, "clock=tsc: this machine has no invariant TSC");
        else /* aarch64's counter may be forced, but not under a running trace */
            fails("clock=cntvct", -EBUSY, "clock=cntvct: cannot change the clock after tracing started");
    } else {
        fails("clock=monotonic", -EBUSY, "clock=monotonic: cannot change the clock after tracing started");
        snprintf(msg, sizeof msg, "clock=%s", COUNTER);
        is_int(st_configure(msg, err, sizeof err), 0, "selecting the current clock is fine");
        is_int(st_configure("clock=counter", err, sizeof err), 0, "  also as clock=counter");
    }
}

/* Before anything traced, the clock can be chosen. Runs in a child. */
static int clock_child(void)
{
    if (st_configure("clock=monotonic", err, sizeof err) != 0)
        return 1;
    if (st_configure("clock=counter", err, sizeof err) != 0 && strcmp(err, "clock=tsc: this machine has no invariant TSC") &&
        strcmp(err, "clock=none: this machine has no counter the runtime reads"))
        return 2;
    return 0;
}

int main(int argc, char **argv)
{
    int status;

    if (argc > 1 && !strcmp(argv[1], "clock-child"))
        return clock_child();
    test_tmpdir();
    test_errors();
    test_events_files();
    test_file_option();
    test_own_keys();
    {
        char *args[] = {argv[0], "clock-child", NULL};
        const char *env[] = {"SIMPLETRACE", NULL};
        status = test_run_self(args, env, NULL, NULL);
        ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "clock can be chosen before tracing starts (%d)",
           status);
    }
    st_trace_file_set_enabled(false);
    return done_testing();
}
