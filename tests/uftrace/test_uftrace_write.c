/*
 * The uftrace.data writers (src/uftrace/uftrace_write.h) that the function
 * tracer and the exporter share: the info header and sections, task.txt,
 * map, events.txt and .sym lines byte by byte, the data directory's files;
 * then a whole directory made with them (uft_data.h) read by the real
 * uftrace (Debian's): `uftrace replay` nests main's two calls of work with
 * their durations, `uftrace info` names the program, its command line and
 * its task.
 *
 * usage: test_uftrace_write UFTRACE (empty: not found at configure time)
 */
#include "tap.h"
#include "test_util.h"
#include "uft_data.h"

#include <errno.h>
#include <sys/stat.h>

/* --- the writers, byte by byte ------------------------------------------------------ */

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
    char *dir = uft_mkdtemp();
    if (!ok(dir != NULL, "dir: scratch directory"))
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
    free(dir);
}

/* --- the real uftrace reads what they write ------------------------------------------ */

/* How many times needle occurs in s. */
static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static void test_uftrace_reads(const char *uftrace)
{
    if (!ok(uftrace[0] != '\0', "uftrace was found at configure time (apt-get install uftrace)"))
        return;
    char *tmp = uft_mkdtemp(), dir[4200];
    if (!ok(tmp != NULL, "scratch directory"))
        return;
    snprintf(dir, sizeof dir, "%s/uftrace.data", tmp);
    ok(uft_make_dir(dir) == 0, "a uftrace.data directory written with the writers");
    struct tu_run r;
    char *replay[] = {(char *)uftrace, "replay", "-d", dir, "--no-pager", NULL};
    tu_run(replay, NULL, NULL, false, &r);
    ok(r.status == 0 && count(r.out, "[  4001] | main() {") == 1 && count(r.out, "work();") == 2 &&
           count(r.out, "1.000 us [  4001] |   work();") == 2 && count(r.out, "5.000 us [  4001] | } /* main */") == 1,
       "uftrace replay: main() { work(); work(); }, 1 us each, main 5 us, thread 4001");
    if (r.status != 0 || count(r.out, "main() {") != 1)
        diag("status %d, out:\n%s\nerr: %s", r.status, r.out, r.err);
    tu_run_free(&r);
    char *info[] = {(char *)uftrace, "info", "-d", dir, "--no-pager", NULL};
    tu_run(info, NULL, NULL, false, &r);
    ok(r.status == 0 && strstr(r.out, "uftrace-test") && strstr(r.out, "app --run") && strstr(r.out, "4001(app)") &&
           strstr(r.out, "/x/app"),
       "uftrace info: the writer's version, the command line, task 4001(app), the exe image /x/app");
    if (r.status != 0)
        diag("status %d, err: %s", r.status, r.err);
    tu_run_free(&r);
    uft_rm_rf(tmp);
    free(tmp);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s UFTRACE\n", argv[0]);
        return 2;
    }
    test_info();
    test_lines();
    test_dir();
    test_uftrace_reads(argv[1]);
    return done_testing();
}
