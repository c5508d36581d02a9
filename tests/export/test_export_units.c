/*
 * Unit tests of the exporter's pairing rules (src/export/pairs.c). (The
 * uftrace.data writers it shares with the function tracer: tests/uftrace/.)
 */
#include "tap.h"

#include "export_internal.h"
#include "meta_format.h"
#include "trace_format.h"


/* --- pairing --------------------------------------------------------------------- */

static const char catalog_text[] = "a_enter(void) \"\"\n"
                                   "a_exit(void) \"\"\n"
                                   "b_begin(void) \"\"\n"
                                   "b_end(void) \"\"\n"
                                   "job_start(int w) \"w %d\"\n"
                                   "job_done(int w) \"w %d\"\n"
                                   "demo_start(void) \"\"\n"
                                   "x_enter(void) \"\"\n"
                                   "lock_acquire(void) \"\"\n"
                                   "lock_release(void) \"\"\n"
                                   "c_exit(void) \"\"\n"
                                   "a_begin(void) \"\"\n"
                                   "req_submit(uint64_t req, int size) \"\"\n"
                                   "req_complete(int status, uint64_t req) \"\"\n"
                                   "req_nokey(int size) \"\"\n";

static struct st_catalog *cat;

/* "B:name", "E:name" or "I" for event ev of catalog c under pairing p. */
static const char *role_in(const struct st_catalog *c, const struct st__ex_pairs *p, const char *ev)
{
    static char buf[128];
    const struct st_event_info *e = st_catalog_find(c, ev);
    if (!e)
        return "no such event";
    if (p->role[e->index] == ST__EX_INSTANT)
        return "I";
    static const char roles[] = "IBEbe"; /* keyed: lowercase, with the key's argument index */
    if (p->role[e->index] >= ST__EX_KEYED_BEGIN)
        snprintf(buf, sizeof buf, "%c:%s@%u", roles[p->role[e->index]], p->names[p->func[e->index]],
                 p->key_arg[e->index]);
    else
        snprintf(buf, sizeof buf, "%c:%s", roles[p->role[e->index]], p->names[p->func[e->index]]);
    return buf;
}

static const char *role_of(const struct st__ex_pairs *p, const char *ev)
{
    return role_in(cat, p, ev);
}

static int build(struct st__ex_pairs *p, const char *const *rules, size_t n, bool no_defaults, char *unused)
{
    char err[256] = "";
    int ret = st__ex_pairs_build(p, cat, rules, n, no_defaults, err, sizeof err);
    if (ret)
        diag("build: %s", err);
    const char *u = st__ex_pairs_unused(p);
    snprintf(unused, 128, "%s", u ? u : "");
    return ret;
}

static void test_default_pairs(void)
{
    struct st__ex_pairs p;
    char unused[128];
    is_int(build(&p, NULL, 0, false, unused), 0, "pairs: the built-in rules resolve");
    is_str(role_of(&p, "a_enter"), "B:a", "pairs: X_enter begins X");
    is_str(role_of(&p, "a_exit"), "E:a", "pairs: X_exit ends X");
    is_str(role_of(&p, "b_begin"), "B:b", "pairs: X_begin begins X");
    is_str(role_of(&p, "b_end"), "E:b", "pairs: X_end ends X");
    is_str(role_of(&p, "job_start"), "B:job", "pairs: X_start begins X");
    is_str(role_of(&p, "job_done"), "E:job", "pairs: X_done ends X");
    is_str(role_of(&p, "demo_start"), "I", "pairs: demo_start without demo_done stays an instant");
    is_str(role_of(&p, "x_enter"), "I", "pairs: x_enter without x_exit stays an instant");
    is_str(role_of(&p, "c_exit"), "I", "pairs: an end without its begin declared stays an instant");
    is_str(role_of(&p, "a_begin"), "I", "pairs: a_begin (no a_end) stays an instant though function a exists");
    is_str(role_of(&p, "lock_acquire"), "I", "pairs: no built-in rule for acquire/release");
    is_int(p.nfuncs, 3, "pairs: three functions");
    is_int(p.role[st_catalog_count(cat)], ST__EX_INSTANT, "pairs: Dropped_Event is never paired");
    st__ex_pairs_free(&p);
}

static void test_user_pairs(void)
{
    struct st__ex_pairs p;
    char unused[128];
    const char *exact[] = {"lock_acquire:lock_release"};
    build(&p, exact, 1, false, unused);
    is_str(role_of(&p, "lock_acquire"), "B:lock", "pairs: exact names: the common prefix names the function");
    is_str(role_of(&p, "lock_release"), "E:lock", "pairs: exact names: the end gets the same function");
    is_str(unused, "", "pairs: a rule that paired something is not reported");
    st__ex_pairs_free(&p);

    const char *named[] = {"*_acquire:*_release=m_*", "x_enter:c_exit=weird"};
    build(&p, named, 2, false, unused);
    is_str(role_of(&p, "lock_acquire"), "B:m_lock", "pairs: NAME with '*' takes the captured part");
    is_str(role_of(&p, "c_exit"), "E:weird", "pairs: NAME names an exact pair");
    st__ex_pairs_free(&p);

    /* A caller's rule comes first and claims both events. */
    const char *first[] = {"a_enter:b_end"};
    build(&p, first, 1, false, unused);
    is_str(role_of(&p, "a_enter"), "B:a_enter", "pairs: no common prefix: named after the begin event");
    is_str(role_of(&p, "b_end"), "E:a_enter", "pairs: the caller's rule takes b_end");
    is_str(role_of(&p, "a_exit"), "I", "pairs: a_exit lost its partner: instant");
    is_str(role_of(&p, "b_begin"), "I", "pairs: b_begin lost its partner: instant");
    st__ex_pairs_free(&p);

    const char *none[] = {"q_*:r_*", "lock_*:lock_*"};
    build(&p, none, 2, true, unused);
    is_str(unused, "q_*:r_*", "pairs: the first rule pairing nothing is reported");
    is_str(role_of(&p, "a_enter"), "I", "pairs: without the built-in rules nothing pairs");
    is_int(p.nfuncs, 0, "pairs: no functions");
    st__ex_pairs_free(&p);
}

/* --- pairing a catalog that grows ------------------------------------------------- */

/* Appends a mapping of id to name and its declaration decl at p; returns the new end. */
static uint8_t *put_declared(uint8_t *p, uint32_t id, const char *name, const char *decl)
{
    p += st__fmt_put_mapping(p, id, name, (uint32_t)strlen(name));
    return p + st__fmt_put_mapping(p, ST_META_DECL_ID(id), decl, (uint32_t)strlen(decl));
}

static uint8_t *put_event(uint8_t *p, uint32_t id, uint64_t ts)
{
    st__fmt_put_event_header(p, id, ts, 0, 7);
    return p + ST_EVENT_FIXED_SIZE;
}

static void test_growing_pairs(void)
{
    static uint8_t buf[4096];
    uint8_t *p = buf + st__fmt_put_header(buf);
    p = put_declared(p, 0, "a_begin", "a_begin(void)");
    p = put_declared(p, 1, "lock_take", "lock_take(void)");
    p = put_event(p, 0, 10);
    p = put_declared(p, 2, "a_end", "a_end(void)");
    p = put_declared(p, 3, "lock_give", "lock_give(void)");
    p = put_event(p, 2, 20);
    p = put_declared(p, 4, "Dropped_Event_begin", "Dropped_Event_begin(void)");
    p = put_event(p, 4, 30);
    struct st_reader *r = NULL;
    struct st_reader_error e = {.struct_size = sizeof e};
    const struct st_record *rec;
    struct st__ex_pairs pr;
    char err[256] = "";
    const char *rules[] = {"lock_take:lock_give", "never:seen", "Dropped_Event_begin:Dropped_Event"};
    if (!ok(st_reader_open_memory(&r, buf, (size_t)(p - buf), "grow", NULL, NULL, &e) == 0, "grow: reader opens"))
        return;
    const struct st_catalog *c = st_reader_catalog(r);
    is_int(st_reader_next(r, &rec), 1, "grow: first record");
    is_int(st__ex_pairs_build(&pr, c, rules, 3, false, err, sizeof err), 0, "grow: rules resolve at open");
    is_str(role_in(c, &pr, "a_begin"), "I", "grow: a_begin is an instant while a_end is not declared");
    is_int(pr.n, 3, "grow: the table covers the catalog: Dropped_Event and two events");
    is_int(st_reader_next(r, &rec), 1, "grow: second record");
    is_int(st__ex_pairs_grow(&pr, c), 0, "grow: the new events resolve");
    is_str(role_in(c, &pr, "a_begin"), "B:a", "grow: an old begin finds its end declared later");
    is_str(role_in(c, &pr, "a_end"), "E:a", "grow: ... which ends it");
    is_str(role_in(c, &pr, "lock_take"), "B:lock", "grow: a caller's exact rule pairs an old event with a new one");
    is_int(pr.nfuncs, 2, "grow: functions appended");
    is_int(st_reader_next(r, &rec), 1, "grow: third record");
    is_int(st__ex_pairs_grow(&pr, c), 0, "grow: again");
    is_str(role_in(c, &pr, "Dropped_Event_begin"), "I", "grow: Dropped_Event (index 0 here) is never a partner");
    is_int(pr.role[st_catalog_dropped(c)->index], ST__EX_INSTANT, "grow: Dropped_Event stays an instant");
    is_str(st__ex_pairs_unused(&pr), "never:seen", "grow: the unused rule is known at the end, not at open");
    st__ex_pairs_free(&pr);
    st_reader_close(r);
}

/* Keyed rules pair only events that both declare the key, and record where it is in each. */
static void test_keyed_pairs(void)
{
    struct st__ex_pairs p;
    char unused[128];
    const char *rules[] = {"req_submit:req_complete=request@req", "req_nokey:req_complete@req"};
    is_int(build(&p, rules, 1, true, unused), 0, "keyed: the rule resolves");
    is_str(role_of(&p, "req_submit"), "b:request@0", "keyed: the begin knows its key is argument 0");
    is_str(role_of(&p, "req_complete"), "e:request@1", "keyed: the end knows its key is argument 1");
    st__ex_pairs_free(&p);
    is_int(build(&p, rules + 1, 1, true, unused), 0, "keyed: a rule whose begin lacks the key resolves");
    is_str(role_of(&p, "req_nokey"), "I", "keyed: a begin without the key's argument stays an instant");
    is_str(unused, "req_nokey:req_complete@req", "keyed: the rule is reported as pairing nothing");
    st__ex_pairs_free(&p);
}

/* The keyed spans' table against a plain list: every find agrees, through growth and removals. */
static void test_keyed_table(void)
{
    enum { N = 5000 };
    static bool open[N];
    struct st__ex_process procs[2] = {{.index = 0}, {.index = 1}};
    struct st__ex_keyed k = {0};
    struct st_arg_info arg = {.name = "req", .type = "uint64_t", .kind = ST_VALUE_INTEGER, .size = 8};
    unsigned seed = 7;
    int wrong = 0;
    char text[32];
    for (int step = 0; step < 40000; step++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % N);
        /* Keys i: even ones integers of process i % 2, odd ones strings; the same value in both processes. */
        struct st_value v = {.kind = ST_VALUE_INTEGER, .u64 = (uint64_t)i * 4096u};
        if (i & 1) {
            snprintf(text, sizeof text, "key-%d", i);
            v = (struct st_value){.kind = ST_VALUE_STRING, .str = text, .len = (uint32_t)strlen(text)};
        }
        struct st__ex_process *proc = &procs[(i >> 1) & 1];
        struct st__ex_open *o = st__ex_keyed_find(&k, proc, 3, &v);
        wrong += (o != NULL) != open[i];
        if (o) {
            wrong += o->begin_ts != (uint64_t)i || o->func != 3 || o->proc != proc;
            st__ex_keyed_remove(&k, o);
            open[i] = false;
        } else {
            int ret = st__ex_keyed_get(&k, proc, 3, &v, &arg, &o);
            wrong += ret != 0;
            if (ret == 0)
                o->begin_ts = (uint64_t)i;
            open[i] = true;
        }
        wrong += st__ex_keyed_find(&k, &procs[2 - 1 - ((i >> 1) & 1)], 3, &v) != NULL; /* never the other process's */
    }
    size_t n = 0;
    for (int i = 0; i < N; i++)
        n += open[i];
    is_int(wrong, 0, "keyed table: 40000 begins and ends agree with a plain list (finds, removals, growth)");
    is_int((long)k.n, (long)n, "keyed table: it holds exactly the spans open now (%zu)", n);
    st__ex_keyed_free(&k);
}

static void test_rule_syntax(void)
{
    char err[256];
    is_int(st__export_check_pair("a:b", err, sizeof err), 0, "rules: exact names");
    is_int(st__export_check_pair("*_x:*_y=f_*", err, sizeof err), 0, "rules: patterns and NAME");
    is_int(st__export_check_pair("*_x:*_y=f_*@req", err, sizeof err), 0, "rules: a key after NAME");
    is_int(st__export_check_pair("a:b@_k9", err, sizeof err), 0, "rules: a key after END");
    const char *bad[] = {"ab", ":b", "a:", "a*:b", "a:b*", "**:b*", "a*:b*:c", "a:b=", "a:b=x*", "a b:c",
                         "a*:b*=*x*", "a:b@", "a:b@9x", "a:b@k@l", "a:b@k-l", "a@k:b", "a:b=@k"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        is_int(st__export_check_pair(bad[i], err, sizeof err), -EINVAL, "rules: '%s' is refused (%s)", bad[i], err);
    }
}

int main(void)
{
    char err[256];
    if (st_catalog_load_buffer(&cat, "units", catalog_text, sizeof catalog_text - 1, err, sizeof err) != 0) {
        printf("Bail out! catalog: %s\n", err);
        return 1;
    }
    test_default_pairs();
    test_user_pairs();
    test_rule_syntax();
    test_keyed_pairs();
    test_keyed_table();
    test_growing_pairs();
    st_catalog_free(cat);
    return done_testing();
}
