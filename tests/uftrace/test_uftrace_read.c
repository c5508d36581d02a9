/*
 * The uftrace.data reader (src/uftrace/uftrace_read.h, for export
 * --functions): a directory made with the writers (uft_data.h) read back
 * call by call, with its times, thread and function names; a program
 * recorded by the real uftrace (Debian's) read back as `uftrace replay`
 * shows it, thread by thread; and damaged directories, each refused with a
 * message naming the file and the line or byte offset.
 *
 * usage: test_uftrace_read UFTRACE PROGRAM (UFTRACE empty: not found at configure time)
 */
#include "tap.h"
#include "test_util.h"
#include "uft_data.h"
#include "uftrace_read.h"

#include <errno.h>
#include <limits.h>

/* One call record as text: "TID E name" or "TID X name". */
struct call_line {
    long tid;
    size_t seq; /* its place in the whole list: the order within a thread is kept */
    char text[160];
};

struct calls {
    struct call_line *v;
    size_t n, cap;
};

static void calls_add(struct calls *c, long tid, char what, const char *name, size_t name_len)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->v = realloc(c->v, c->cap * sizeof *c->v);
    }
    struct call_line *l = &c->v[c->n];
    l->tid = tid;
    l->seq = c->n++;
    snprintf(l->text, sizeof l->text, "%ld %c %.*s", tid, what, (int)name_len, name);
}

static int by_thread(const void *pa, const void *pb)
{
    const struct call_line *a = pa, *b = pb;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    return a->seq < b->seq ? -1 : 1;
}

/* The calls, thread by thread in tid order, each thread's in time order, one per line (malloc'ed). */
static char *calls_text(struct calls *c)
{
    qsort(c->v, c->n, sizeof *c->v, by_thread);
    char *out = malloc(c->n * sizeof c->v[0].text + 1), *p = out;
    *p = '\0';
    for (size_t i = 0; i < c->n; i++)
        p += sprintf(p, "%s\n", c->v[i].text);
    free(c->v);
    memset(c, 0, sizeof *c);
    return out;
}

/* Every ENTRY and EXIT of directory dir as our reader gives them; NULL with err on failure. */
static char *read_calls(const char *dir, char *err, size_t errlen, size_t *nrec)
{
    struct st__uft_data *d;
    struct st__uft_call c;
    struct calls cs = {0};
    int ret;
    *nrec = 0;
    if (st__uft_data_open(&d, dir, err, errlen) < 0)
        return NULL;
    while ((ret = st__uft_data_next(d, &c, err, errlen)) == 1) {
        ++*nrec;
        if (c.type == ST_UFT_REC_ENTRY || c.type == ST_UFT_REC_EXIT) {
            const char *name = st__uft_data_func(d, c.func);
            calls_add(&cs, (long)c.tid, c.type == ST_UFT_REC_ENTRY ? 'E' : 'X', name, strlen(name));
        }
    }
    st__uft_data_close(d);
    char *text = calls_text(&cs);
    if (ret < 0) {
        free(text);
        return NULL;
    }
    return text;
}

/*
 * The calls of `uftrace replay` output: "[ TID] |   name() {" an entry,
 * "name();" an entry and its exit, "}" then the name in a comment an exit;
 * event lines (a comment alone, linux:sched-out) are no calls.
 */
static char *replay_calls(const char *out)
{
    struct calls cs = {0};
    for (const char *line = out; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
        const char *bracket = strchr(line, '['), *bar = strstr(line, "] | "), *eol = strchr(line, '\n');
        if (line[0] == '#' || !bracket || !bar || (eol && bar > eol))
            continue;
        long tid = strtol(bracket + 1, NULL, 10);
        const char *s = bar + 4;
        size_t len = eol ? (size_t)(eol - s) : strlen(s);
        while (len && *s == ' ')
            s++, len--;
        if (len > 5 && !strncmp(s, "} /* ", 5) && !strncmp(s + len - 3, " */", 3))
            calls_add(&cs, tid, 'X', s + 5, len - 8);
        else if (len > 4 && !strncmp(s + len - 4, "() {", 4))
            calls_add(&cs, tid, 'E', s, len - 4);
        else if (len > 3 && !strncmp(s + len - 3, "();", 3)) {
            calls_add(&cs, tid, 'E', s, len - 3);
            calls_add(&cs, tid, 'X', s, len - 3);
        }
    }
    return calls_text(&cs);
}

/* --- the writers' directory, call by call ----------------------------------------- */

static void test_known(const char *tmp)
{
    char dir[4200], err[512] = "";
    snprintf(dir, sizeof dir, "%s/known.data", tmp);
    if (!ok(uft_make_dir(dir) == 0, "known: a directory made with the writers"))
        return;
    struct st__uft_data *d;
    if (!ok(st__uft_data_open(&d, dir, err, sizeof err) == 0, "known: opens (%s)", err))
        return;
    ok(st__uft_data_sessions(d) == 1 && st__uft_data_session(d, 0)->pid == UFT_PID &&
           !strcmp(st__uft_data_session(d, 0)->exename, "/x/app") && !strcmp(st__uft_data_session(d, 0)->sid, UFT_SID),
       "known: one session, pid 4001, /x/app, its sid");
    uint64_t rec[6][2];
    uft_records(rec);
    static const char *const names[6] = {"main", "work", "work", "work", "work", "main"};
    static const unsigned types[6] = {ST_UFT_REC_ENTRY, ST_UFT_REC_ENTRY, ST_UFT_REC_EXIT,
                                      ST_UFT_REC_ENTRY, ST_UFT_REC_EXIT,  ST_UFT_REC_EXIT};
    struct st__uft_call c;
    int i = 0, same = 0, ret;
    while ((ret = st__uft_data_next(d, &c, err, sizeof err)) == 1 && i < 6) {
        same += c.ts == rec[i][0] && c.tid == UFT_PID && c.pid == UFT_PID && c.type == types[i] &&
                !strcmp(st__uft_data_func(d, c.func), names[i]);
        i++;
    }
    ok(ret == 0 && i == 6 && same == 6, "known: the six records in order, times, thread, process and names (%d of 6)",
       same);
    st__uft_data_close(d);
}

/* --- the real uftrace's recording ---------------------------------------------- */

static void test_recorded(const char *tmp, const char *uftrace, const char *prog)
{
    char dir[4200], err[512] = "";
    snprintf(dir, sizeof dir, "%s/rec.data", tmp);
    struct tu_run r;
    char *record[] = {(char *)uftrace, "record", "--no-libcall", "-d", dir, (char *)prog, "4", NULL};
    tu_run(record, tmp, NULL, false, &r);
    if (!ok(r.status == 0, "recorded: uftrace record of the program (two threads)"))
        diag("status %d, err: %s", r.status, r.err);
    tu_run_free(&r);
    char *replay[] = {(char *)uftrace, "replay", "-d", dir, "--no-pager", NULL};
    tu_run(replay, NULL, NULL, false, &r);
    char *want = replay_calls(r.out ? r.out : "");
    size_t nrec;
    char *got = read_calls(dir, err, sizeof err, &nrec);
    ok(r.status == 0 && strstr(want, " E main\n") && strstr(want, " E worker\n") && strstr(want, " E leaf\n"),
       "recorded: uftrace replay shows main, worker, middle and leaf");
    ok(got && !strcmp(got, want), "recorded: our reader gives the calls uftrace replay shows, thread by thread (%zu records)",
       nrec);
    if (!got || strcmp(got, want))
        diag("ours (%s):\n%s\nuftrace replay's:\n%s", err, got ? got : "", want);
    free(want);
    free(got);
    tu_run_free(&r);
}

/* --- damage ------------------------------------------------------------------------- */

/* A copy of the writers' directory as name, then the file file replaced by len bytes of data (NULL: removed). */
static void damaged(const char *tmp, const char *name, const char *file, const void *data, size_t len, char *dir,
                    size_t dirlen)
{
    char path[4400];
    snprintf(dir, dirlen, "%s/%s", tmp, name);
    uft_make_dir(dir);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    unlink(path);
    FILE *f = data ? fopen(path, "wb") : NULL;
    if (f) {
        fwrite(data, 1, len, f);
        fclose(f);
    }
}

/* Opening and reading dir to its end: the first error's code, its message in err. */
static int read_all(const char *dir, char *err, size_t errlen)
{
    struct st__uft_data *d;
    struct st__uft_call c;
    int ret;
    err[0] = '\0';
    if ((ret = st__uft_data_open(&d, dir, err, errlen)) < 0)
        return ret;
    while ((ret = st__uft_data_next(d, &c, err, errlen)) == 1)
        ;
    st__uft_data_close(d);
    return ret;
}

static void test_damage(const char *tmp)
{
    char dir[4300], err[512], want[4600];
    uint64_t rec[6][2];
    uft_records(rec);

    damaged(tmp, "no-magic.data", "info", "not uftrace data", 16, dir, sizeof dir);
    snprintf(want, sizeof want, "%s/info: byte offset 0: not a uftrace info file", dir);
    ok(read_all(dir, err, sizeof err) == -EINVAL && strstr(err, want), "damage: info without its magic: %s", err);

    damaged(tmp, "no-tasks.data", "task.txt", NULL, 0, dir, sizeof dir);
    snprintf(want, sizeof want, "%s/task.txt is missing", dir);
    ok(read_all(dir, err, sizeof err) == -ENOENT && !strcmp(err, want), "damage: no task.txt: %s", err);

    static const char tasks[] = "SESS timestamp=1.000000000 pid=4001 sid=" UFT_SID " exename=\"/x/app\"\n"
                                "TASK timestamp=1.000000000 tid=x pid=4001\n";
    damaged(tmp, "bad-task.data", "task.txt", tasks, sizeof tasks - 1, dir, sizeof dir);
    snprintf(want, sizeof want, "%s/task.txt:2: malformed TASK line", dir);
    ok(read_all(dir, err, sizeof err) == -EINVAL && !strcmp(err, want), "damage: a malformed TASK line, named with its line: %s",
       err);

    static const char orphan[] = "TASK timestamp=1.000000000 tid=4001 pid=4001\n";
    damaged(tmp, "orphan.data", "task.txt", orphan, sizeof orphan - 1, dir, sizeof dir);
    ok(read_all(dir, err, sizeof err) == -EINVAL && strstr(err, "task.txt:1: a TASK of a process without a SESS line"),
       "damage: a TASK before its SESS: %s", err);

    damaged(tmp, "cut.data", "4001.dat", rec, sizeof rec - 8, dir, sizeof dir);
    snprintf(want, sizeof want, "%s/4001.dat: byte offset 80: the file ends inside a record (8 of 16 bytes)", dir);
    ok(read_all(dir, err, sizeof err) == -EBADMSG && !strcmp(err, want), "damage: a thread's file cut inside a record: %s",
       err);

    uint64_t bad[6][2];
    memcpy(bad, rec, sizeof bad);
    bad[2][1] = st__uft_rec_data(ST_UFT_REC_EXIT, 1, 0x401040) ^ ((uint64_t)ST_UFT_REC_MAGIC << 3); /* magic 5 -> 0 */
    damaged(tmp, "magic.data", "4001.dat", bad, sizeof bad, dir, sizeof dir);
    snprintf(want, sizeof want, "%s/4001.dat: byte offset 32: bad record magic", dir);
    ok(read_all(dir, err, sizeof err) == -EBADMSG && strstr(err, want), "damage: a record with a bad magic: %s", err);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s UFTRACE PROGRAM\n", argv[0]);
        return 2;
    }
    char *tmp = uft_mkdtemp();
    if (!ok(tmp != NULL, "scratch directory"))
        return done_testing();
    test_known(tmp);
    char prog[4096];
    if (ok(argv[1][0] != '\0', "uftrace was found at configure time (apt-get install uftrace)") &&
        ok(realpath(argv[2], prog) != NULL, "the program to record: %s", argv[2]))
        test_recorded(tmp, argv[1], prog); /* recorded from the scratch directory: its path, whole */
    test_damage(tmp);
    uft_rm_rf(tmp);
    free(tmp);
    return done_testing();
}
