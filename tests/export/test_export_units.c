/*
 * Unit tests of the exporter's pairing rules (src/export/pairs.c) and of
 * the shared uftrace.data writers (src/uftrace/) that the exporter and the
 * function tracer both use: exact bytes and lines.
 */
#include "tap.h"

#include "export_internal.h"
#include "meta_format.h"
#include "trace_format.h"
#include "uftrace_write.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* --- the shared uftrace writers ---------------------------------------------------- */

/* What fn writes into a memory stream, NUL-terminated, and its length. */
#define CAPTURE(buf, len, code)                                      \
    do {                                                             \
        FILE *out = open_memstream(&(buf), &(len));                  \
        code;                                                        \
        fclose(out);                                                 \
    } while (0)

static void test_info(void)
{
    char *buf = NULL;
    size_t len = 0;
    int tids[] = {4001, 4002};
    struct st__uft_info info = {.exename = "/x/prog", .cmdline = "run \"a\\b\"\n", .tids = tids, .ntids = 2,
                                .version = "v1", .max_stack = 77};
    int ret;
    CAPTURE(buf, len, ret = st__uft_info_write(out, &info));
    is_int(ret, 0, "info: written");
    ok(len > 40 && memcmp(buf, "Ftrace!\0", 8) == 0, "info: magic with its NUL");
    uint32_t version;
    uint16_t hsize, max_stack;
    uint64_t feat, mask;
    memcpy(&version, buf + 8, 4);
    memcpy(&hsize, buf + 12, 2);
    memcpy(&feat, buf + 16, 8);
    memcpy(&mask, buf + 24, 8);
    memcpy(&max_stack, buf + 32, 2);
    ok(version == 4 && hsize == 40 && buf[14] == (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 1 : 2) && buf[15] == 2,
       "info: version 4, 40-byte header, this machine's byte order (1 LE, 2 BE), 64-bit");
    is_u64(feat, ST_UFT_FEAT_TASK_SESSION, "info: TASK_SESSION always (without it uftrace crashes)");
    is_u64(mask, ST_UFT_INFO_EXE_NAME | ST_UFT_INFO_EXE_BUILD_ID | ST_UFT_INFO_CMDLINE | ST_UFT_INFO_TASKINFO |
                     ST_UFT_INFO_VERSION_TEXT,
           "info: the mask names exactly the sections written");
    is_int(max_stack, 77, "info: max_stack");
    is_str(buf + 40,
           "exename:/x/prog\n"
           "build_id:0000000000000000000000000000000000000000\n"
           "cmdline:run \\\"a\\\\b\\\"\\n\n"
           "taskinfo:lines=2\ntaskinfo:nr_tid=2\ntaskinfo:tids=4001,4002\n"
           "uftrace_version:v1\n",
           "info: sections in bit order; the command line JSON-escaped on one line");
    free(buf);
}

static void test_lines(void)
{
    char *buf = NULL;
    size_t len = 0;
    CAPTURE(buf, len, {
        st__uft_task_sess(out, UINT64_C(100000000005), 4001, "0123456789abcdef", "/x/p");
        st__uft_task_task(out, UINT64_C(100500000000), 4002, 4001);
    });
    is_str(buf,
           "SESS timestamp=100.000000005 pid=4001 sid=0123456789abcdef exename=\"/x/p\"\n"
           "TASK timestamp=100.500000000 tid=4002 pid=4001\n",
           "task.txt: SESS and TASK lines, nine fraction digits");
    free(buf);
    buf = NULL;
    CAPTURE(buf, len, {
        st__uft_map_line(out, 0x400000, 0x402000, "r-xp", "/x/p");
        st__uft_map_stack(out);
        st__uft_event_line(out, 1000002, "simpletrace", "job_submit");
    });
    is_str(buf,
           "00400000-00402000 r-xp 00000000 00:00 0 /x/p\n"
           "7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0 [stack]\n"
           "EVENT: 1000002 simpletrace:job_submit\n",
           "map lines with all six fields and the [stack] line; an events.txt line");
    free(buf);
    buf = NULL;
    CAPTURE(buf, len, {
        struct st__uft_symw w = {0};
        st__uft_sym_add(&w, out, 0x1000, 0x10, "a");
        st__uft_sym_add(&w, out, 0x1010, 0x10, "b");
        st__uft_sym_add(&w, out, 0x1100, 0x8, "c");
        st__uft_sym_finish(&w, out);
    });
    is_str(buf,
           "0000000000001000 T a\n"
           "0000000000001010 T b\n"
           "0000000000001020 ? __func_end\n"
           "0000000000001100 T c\n"
           "0000000000001108 ? __sym_end\n",
           ".sym: adjacent functions share a boundary, a gap gets __func_end, the last __sym_end");
    free(buf);
    buf = NULL;
    CAPTURE(buf, len, {
        struct st__uft_symw w = {0};
        st__uft_sym_finish(&w, out);
    });
    is_str(buf, "", ".sym: no function, no end marker");
    free(buf);
    uint64_t d = st__uft_rec_data(ST_UFT_REC_EVENT, 2, ST_UFT_EVENT_ID_USER + 5);
    ok(st__uft_rec_type(d) == ST_UFT_REC_EVENT && st__uft_rec_depth(d) == 2 &&
           st__uft_rec_addr(d) == 1000005 && st__uft_rec_magic(d) == 5,
       "record: an EVENT record carries its id in addr");
}

static void test_dir(void)
{
    ok(st__uft_is_data_file("info") && st__uft_is_data_file("4001.dat") && st__uft_is_data_file("a b.sym") &&
           st__uft_is_data_file("sid-0.map") && st__uft_is_data_file(".st-12-info.tmp") &&
           st__uft_is_data_file("events.txt"),
       "dir: uftrace's file names count as data");
    ok(!st__uft_is_data_file("notes.txt") && !st__uft_is_data_file("x.dat") && !st__uft_is_data_file(".hidden"),
       "dir: other names do not");
    char dir[] = "/tmp/st-export-units-XXXXXX";
    if (!ok(mkdtemp(dir) != NULL, "dir: scratch directory"))
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    is_int(st__uft_put_file(fd, "info", "abc", 3), 0, "dir: put_file writes a whole file");
    struct stat st;
    char path[256];
    snprintf(path, sizeof path, "%s/info", dir);
    ok(stat(path, &st) == 0 && st.st_size == 3, "dir: ... under its name, complete");
    char bad[64] = "";
    is_int(st__uft_dir_check(fd, bad, sizeof bad), 0, "dir: only data: check passes");
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    close(open(path, O_WRONLY | O_CREAT, 0644));
    is_int(st__uft_dir_check(fd, bad, sizeof bad), -EEXIST, "dir: another file: -EEXIST");
    is_str(bad, "notes.txt", "dir: ... naming it");
    is_int(st__uft_dir_clear(fd, bad, sizeof bad), 0, "dir: clear removes the data files");
    snprintf(path, sizeof path, "%s/info", dir);
    ok(stat(path, &st) != 0, "dir: info is gone");
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    ok(stat(path, &st) == 0, "dir: notes.txt is still there");
    unlink(path);
    close(fd);
    rmdir(dir);
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
    test_info();
    test_lines();
    test_dir();
    st_catalog_free(cat);
    return done_testing();
}
