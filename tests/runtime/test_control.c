/*
 * Event control: globs, '-', unavailable events, rules replayed on groups
 * registered later (and their deduplication), IDs, foreach order,
 * get_state, group registration errors, st_strerror.
 */
#include "rt_test.h"

TEST_EVENT(ev_one, "alpha_one", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_two, "alpha_two", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_beta, "beta", "void", "", "", 0, 0);
TEST_EVENT(ev_off, "alpha_off", "int x", "x %d", "i", 1, ST_EVENT_COMPILED_OUT);
TEST_GROUP(grp_ctl, "ctl", &ev_one, &ev_two, &ev_beta, &ev_off)

/* Groups registered by hand later, as a dlopen'ed module would. */
TEST_EVENT(ev_late, "alpha_late", "int x", "x %d", "i", 1, 0);
TEST_EVENT(ev_gamma, "gamma", "void", "", "", 0, 0);
static struct st_event *const late_events[] = {&ev_late, &ev_gamma};
static struct st_group grp_late = {sizeof(struct st_group), "late", late_events, 2, 0};

TEST_EVENT(ev_x, "alpha_x", "void", "", "", 0, 0);
static struct st_event *const late2_events[] = {&ev_x};
static struct st_group grp_late2 = {sizeof(struct st_group), "late2", late2_events, 1, 0};

TEST_EVENT(ev_y, "alpha_y", "void", "", "", 0, 0);
TEST_EVENT(ev_delta, "delta", "void", "", "", 0, 0);
static struct st_event *const late3_events[] = {&ev_y, &ev_delta};
static struct st_group grp_late3 = {sizeof(struct st_group), "late3", late3_events, 2, 0};

TEST_EVENT(ev_z, "alpha_z", "void", "", "", 0, 0);
static struct st_event *const late4_events[] = {&ev_z};
static struct st_group grp_late4 = {sizeof(struct st_group), "late4", late4_events, 1, 0};

struct seen {
    char names[16][32];
    char groups[16][16];
    uint32_t ids[16];
    int states[16];
    int n;
};

static int collect(const struct st_registered_event *info, void *opaque)
{
    struct seen *s = opaque;
    if (s->n < 16) {
        snprintf(s->names[s->n], sizeof s->names[0], "%s", info->name);
        snprintf(s->groups[s->n], sizeof s->groups[0], "%s", info->group);
        s->ids[s->n] = info->id;
        s->states[s->n] = (int)info->state;
    }
    s->n++;
    /* The visitor may call back into the runtime: no lock is held. */
    return st_event_get_state(info->name) == (int)info->state ? 0 : -100;
}

static int stop_at_two(const struct st_registered_event *info, void *opaque)
{
    (void)info;
    return ++*(int *)opaque == 2 ? 42 : 0;
}

static void test_glob(void)
{
    ok(st_glob_match("*", ""), "glob: * matches empty");
    ok(st_glob_match("a*b", "ab"), "glob: a*b matches ab");
    ok(st_glob_match("a*b*c", "aXXbYYc"), "glob: a*b*c");
    ok(!st_glob_match("a*b", "abc"), "glob: whole name, a*b does not match abc");
    ok(st_glob_match("*a", "bbba"), "glob: *a matches bbba");
    ok(st_glob_match("a?c", "abc"), "glob: ? matches one char");
    ok(!st_glob_match("?", ""), "glob: ? needs a char");
    ok(!st_glob_match("a??", "ab"), "glob: a?? does not match ab");
    ok(!st_glob_match("A*", "abc"), "glob: case-sensitive");
    ok(st_glob_match("**x*", "yyxz"), "glob: repeated stars");
    ok(st_glob_match("alpha_one", "alpha_one") && !st_glob_match("alpha_one", "alpha_on"), "glob: literal");
    ok(!st_glob_match(NULL, "a") && !st_glob_match("a", NULL), "glob: NULL never matches");
    ok(st_glob_match("*_*_*", "a_b_c") && !st_glob_match("*_*_*", "a_b"), "glob: backtracking");
}

static void test_initial_state(void)
{
    struct seen s;
    struct st_file_status fs = {.struct_size = sizeof fs};

    memset(&s, 0, sizeof s);
    is_int(st_event_foreach(NULL, collect, &s), 4, "foreach visits the 4 registered events");
    is_str(s.names[0], "alpha_one", "registration order 0");
    is_str(s.names[1], "alpha_two", "registration order 1");
    is_str(s.names[2], "beta", "registration order 2");
    is_str(s.names[3], "alpha_off", "registration order 3");
    is_str(s.groups[0], "ctl", "group name reported");
    ok(s.ids[0] == 0 && s.ids[1] == 1 && s.ids[2] == 2 && s.ids[3] == 3, "IDs sequential from 0");
    ok(ev_one.id == 0 && ev_off.id == 3, "IDs written into the events");
    is_int(grp_ctl.registered, 1, "group marked registered");
    ok(s.states[0] == ST_EVENT_DISABLED && s.states[3] == ST_EVENT_UNAVAILABLE, "states: disabled, unavailable");
    is_int(st_event_get_state("alpha_one"), ST_EVENT_DISABLED, "nothing enabled without configuration");
    is_int(st_event_get_state("alpha_off"), ST_EVENT_UNAVAILABLE, "compiled-out event unavailable");
    is_int(st_event_get_state("nope"), -ENOENT, "get_state unknown -> -ENOENT");
    is_int(st_event_get_state(NULL), -EINVAL, "get_state NULL -> -EINVAL");
    st_trace_file_status(&fs);
    ok(!fs.enabled && fs.error == 0, "trace file off by default");
}

static void test_set_enabled(void)
{
    is_int(st_event_set_enabled("alpha_*", true), 2, "alpha_* enables the 2 available events");
    ok(ev_one.enabled && ev_two.enabled && !ev_off.enabled, "alpha_off stays off");
    is_int(st_event_get_state("alpha_one"), ST_EVENT_ENABLED, "alpha_one enabled");
    is_int(st_event_get_state("alpha_off"), ST_EVENT_UNAVAILABLE, "alpha_off still unavailable");
    is_int(st_event_set_enabled("-alpha_two", true), 1, "'-' inverts: -alpha_two disables");
    is_int(st_event_get_state("alpha_two"), ST_EVENT_DISABLED, "alpha_two disabled");
    is_int(st_event_set_enabled("alpha_two", false), 1, "already in that state still counts");
    is_int(st_event_set_enabled("-alpha_two", false), 1, "'-' with enable=false enables");
    is_int(st_event_get_state("alpha_two"), ST_EVENT_ENABLED, "alpha_two enabled again");
    is_int(st_event_set_enabled("alpha_off", true), -EPERM, "naming a compiled-out event -> -EPERM");
    is_int(st_event_set_enabled("nope", true), -ENOENT, "unknown name -> -ENOENT");
    is_int(st_event_set_enabled("nope*", true), 0, "glob matching nothing -> 0");
    is_int(st_event_set_enabled("", true), -EINVAL, "empty pattern -> -EINVAL");
    is_int(st_event_set_enabled("-", true), -EINVAL, "'-' alone -> -EINVAL");
    is_int(st_event_set_enabled("a b", true), -EINVAL, "space in pattern -> -EINVAL");
    is_int(st_event_set_enabled(NULL, true), -EINVAL, "NULL pattern -> -EINVAL");
    is_int(st_event_set_enabled("*", false), 3, "* disables all 3 available");
    /* Unlike QEMU, a '?' glob sets every match, not only the first. */
    is_int(st_event_set_enabled("alpha_???", true), 2, "alpha_??? sets both available matches");
    ok(ev_one.enabled && ev_two.enabled && !ev_beta.enabled, "? globs enable every match");
    is_int(st_event_set_enabled("be?a", true), 1, "be?a enables beta");
    is_int(st_event_get_state("beta"), ST_EVENT_ENABLED, "beta enabled");
}

static void test_late_groups(void)
{
    struct seen s;
    int n = 0;

    st_event_set_enabled("*", false);
    st_event_set_enabled("alpha_*", true);
    st_event_set_enabled("gamma*", true);
    is_int(st_group_register(&grp_late), 0, "late group registers");
    is_int(ev_late.id, 4, "late IDs continue after the first group");
    is_int(ev_gamma.id, 5, "late IDs sequential");
    is_int(st_event_get_state("alpha_late"), ST_EVENT_ENABLED, "rule alpha_* applied to a late group");
    is_int(st_event_get_state("gamma"), ST_EVENT_ENABLED, "rule gamma* applied to a late group");
    is_int(st_group_register(&grp_late), -EEXIST, "registering twice -> -EEXIST");

    /* A repeated pattern replaces its earlier rule: alpha_* is now off. */
    st_event_set_enabled("alpha_*", false);
    st_event_set_enabled("alpha_one", true);
    is_int(st_group_register(&grp_late2), 0, "late2 registers");
    is_int(st_event_get_state("alpha_x"), ST_EVENT_DISABLED, "latest alpha_* rule (off) wins");
    is_int(st_event_get_state("alpha_one"), ST_EVENT_ENABLED, "alpha_one rule kept");

    st_event_set_enabled("*", true);
    st_event_set_enabled("alpha_*", false);
    is_int(st_group_register(&grp_late3), 0, "late3 registers");
    is_int(st_event_get_state("alpha_y"), ST_EVENT_DISABLED, "alpha_* off after * on");
    is_int(st_event_get_state("delta"), ST_EVENT_ENABLED, "* on applies to delta");
    /* Re-adding * moves it last, so it now overrides alpha_* for new groups. */
    st_event_set_enabled("*", true);
    is_int(st_group_register(&grp_late4), 0, "late4 registers");
    is_int(st_event_get_state("alpha_z"), ST_EVENT_ENABLED, "re-added * rule is now last");

    memset(&s, 0, sizeof s);
    is_int(st_event_foreach("alpha_*", collect, &s), 7, "foreach alpha_* visits 7 events");
    is_str(s.names[3], "alpha_late", "foreach keeps registration order across groups");
    is_str(s.groups[3], "late", "late group's name");
    is_int(st_event_foreach(NULL, stop_at_two, &n), 42, "foreach returns what stopped it");

    st_group_unregister(&grp_late);
    is_int(st_event_get_state("gamma"), -ENOENT, "unregistered events are gone");
    ok(!ev_gamma.enabled, "unregistering disables the events");
    is_int(grp_late.registered, 0, "group marked unregistered");
    memset(&s, 0, sizeof s);
    is_int(st_event_foreach(NULL, collect, &s), 8, "foreach skips the unregistered group");
    is_int(st_group_register(&grp_late), 0, "group registers again");
    ok(ev_late.id == 10 && ev_gamma.id == 11, "IDs are never reused (got %u, %u)", ev_late.id, ev_gamma.id);
    is_int(st_event_get_state("gamma"), ST_EVENT_ENABLED, "rules applied again");
}

static void test_register_errors(void)
{
    static struct st_event bad = {sizeof(struct st_event), 0, 0, NULL, "void", "", "", 0, 0};
    static struct st_event *const bad_events[] = {&bad};
    static struct st_group bad_grp = {sizeof(struct st_group), "bad", bad_events, 1, 0};
    static struct st_group no_name = {sizeof(struct st_group), NULL, NULL, 0, 0};

    is_int(st_group_register(NULL), -EINVAL, "register NULL -> -EINVAL");
    is_int(st_group_register(&bad_grp), -EINVAL, "event without a name -> -EINVAL");
    is_int(st_group_register(&no_name), -EINVAL, "group without a name -> -EINVAL");
    st_group_unregister(NULL);
    ok(1, "unregister NULL is harmless");
}

static void test_strerror(void)
{
    is_str(st_strerror(-ENOENT), "No such file or directory", "st_strerror(-ENOENT)");
    is_str(st_strerror(-EINVAL), "Invalid argument", "st_strerror(-EINVAL)");
    is_str(st_strerror(0), "Success", "st_strerror(0)");
    is_str(st_strerror(-99999), "Unknown error", "st_strerror(unknown)");
}

int main(void)
{
    char name[64];

    test_glob();
    test_initial_state();
    test_set_enabled();
    test_late_groups();
    test_register_errors();
    test_strerror();
    /* Events enabled through the API alone never create a file. */
    test_trace_i(&ev_one, 1);
    snprintf(name, sizeof name, "trace-%ld", (long)getpid());
    ok(!test_exists(name), "no trace file without st_trace_file_set_enabled");
    return done_testing();
}
