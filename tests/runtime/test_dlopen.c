/*
 * A group registered late by dlopen() while tracing runs: the rules given
 * earlier apply to it, its mapping records appear mid-stream before its
 * first event, dlclose unregisters it, tracing goes on, and loading it again
 * assigns new IDs (never reused) with fresh mappings.
 */
#include <dlfcn.h>

#include "rt_test.h"

TEST_EVENT(ev_main, "main_seq", "int seq", "seq %d", "i", 1, 0);
TEST_EVENT(ev_other, "main_other", "void", "", "", 0, 0);
TEST_GROUP(grp_main, "main", &ev_main, &ev_other)

/* The module's events, for decoding only (never registered from here). */
TEST_EVENT(desc_one, "dl_one", "int x", "x %d", "i", 1, 0);
TEST_EVENT(desc_two, "dl_two", "int x, int y, const char *s", "", "iis", 3, 0);
static struct st_event *const desc_events[] = {&desc_one, &desc_two};
static struct st_group desc_grp = {sizeof(struct st_group), "dlmod", desc_events, 2, 0};

static struct st_group *const groups[] = {&grp_main, &desc_grp, NULL};

typedef unsigned (*trace_fn)(int);

/* Loads the module, traces n pairs, unloads; returns dl_one's ID. */
static unsigned load_and_trace(const char *path, int n)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    trace_fn fn;
    unsigned id;

    if (!ok(h != NULL, "dlopen %s", path)) {
        diag("%s", dlerror());
        return ~0u;
    }
    is_int(st_event_get_state("dl_one"), ST_EVENT_ENABLED, "the earlier rule '*' enabled the module's events");
    *(void **)&fn = dlsym(h, "dlmod_trace");
    id = fn(n);
    st_trace_file_flush();
    is_int(dlclose(h), 0, "dlclose");
    is_int(st_event_get_state("dl_one"), -ENOENT, "module's events gone after dlclose");
    return id;
}

int main(int argc, char **argv)
{
    char cfg[1200];
    struct test_trace t;
    unsigned id1, id2;
    uint64_t seq = 0;
    size_t first_map = 0, first_ev = 0, second_map = 0, second_ev = 0;

    if (argc < 2) {
        printf("1..0 # SKIP no module path given\n");
        return 0;
    }
    test_tmpdir();
    snprintf(cfg, sizeof cfg, "*,file=%s", test_path("dl.trace"));
    is_int(st_configure(cfg, NULL, 0), 0, "configure enable=* before the module loads");
    for (; seq < 10; seq++)
        test_trace_i(&ev_main, seq);
    st_trace_file_flush();
    id1 = load_and_trace(argv[1], 5);
    is_int(id1, 2, "module's first ID follows the main group's");
    for (; seq < 20; seq++)
        test_trace_i(&ev_main, seq);
    st_trace_file_flush();
    id2 = load_and_trace(argv[1], 3);
    is_int(id2, 4, "loading again assigns new IDs, not reused ones");
    for (; seq < 25; seq++)
        test_trace_i(&ev_main, seq);
    st_trace_file_flush();

    if (!ok(test_collect(test_path("dl.trace"), groups, &t) == 0, "trace decodes"))
        return done_testing();
    for (size_t i = 0; i < t.n; i++) {
        const struct test_rec *r = &t.r[i];
        if (r->mapping && r->id == id1 && !first_map)
            first_map = i;
        if (!r->mapping && r->id == id1 && !first_ev)
            first_ev = i;
        if (r->mapping && r->id == id2 && !second_map)
            second_map = i;
        if (!r->mapping && r->id == id2 && !second_ev)
            second_ev = i;
    }
    ok(first_map > 2 && t.r[first_map - 1].id == 0 && !t.r[first_map - 1].mapping,
       "module's mappings come mid-stream, after main_seq records (record %zu)", first_map);
    ok(first_map && first_ev > first_map, "dl_one's mapping precedes its first record");
    ok(!strcmp(t.r[first_map].name, "dl_one") && !strcmp(t.r[first_map + 1].name, "dl_two"),
       "mappings name the module's events");
    ok(second_map > first_ev && second_ev > second_map, "reloaded module: new mappings, then its records");
    is_u64(test_count(&t, "dl_one"), 8, "5 + 3 dl_one records");
    is_u64(test_count(&t, "dl_two"), 8, "5 + 3 dl_two records");
    is_u64(test_count(&t, "main_seq"), 25, "main records before, between and after");
    is_u64(t.sum.mappings, 6, "2 main + 2 + 2 module mappings");
    test_trace_free(&t);
    st_trace_file_set_enabled(false);
    return done_testing();
}
