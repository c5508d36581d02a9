/*
 * A 0-byte trace: what a program leaves that died after opening its trace
 * file and before its first write. The CLI must call it an empty trace
 * (not take it for a trace-events file, nor blame a cut header), and
 * `simpletrace recover --trace EMPTY DIR` must still find that program's
 * rings, even when DIR also holds those of a program started later.
 *
 * The programs: two children with crash=DIR, each with its own trace file,
 * trace a few records and kill themselves (SIGKILL) before the writer's
 * first pass could write them (100 ms); the second starts after the first.
 * The first one's trace is then cut to 0 bytes, as a death between the
 * file's creation and its first write leaves it (same file, no byte): the
 * header the writer writes when the file is configured would otherwise be
 * there, and only timing could stop it.
 *
 * argv: SIMPLETRACE-CLI
 */
#include <time.h>

#include "fault_test.h"

static const char *cli;

/* Traces n records from the main thread, then dies at once. */
static void child(const char *dir, const char *trace, unsigned n)
{
    char cfg[2400], err[256];
    uint64_t dummy = 0;

    snprintf(cfg, sizeof cfg, "ft_*,crash=%s,file=%s", dir, trace);
    if (st_configure(cfg, err, sizeof err) != 0) {
        fprintf(stderr, "child: %s\n", err);
        _exit(90);
    }
    for (unsigned i = 0; i < n; i++)
        ft_trace(0, i, &dummy);
    kill(getpid(), SIGKILL);
    _exit(91);
}

static pid_t spawn(const char *dir, const char *trace, unsigned n)
{
    int status;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0)
        child(dir, trace, n);
    waitpid(pid, &status, 0);
    ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child %ld traced %u records and was killed", (long)pid,
       n);
    return pid;
}

/* `CLI ARGS...` (NULL-terminated): its exit status; stdout then stderr into *out (malloc'd). */
static int run(char **out, ...)
{
    char *argv[16] = {(char *)cli};
    struct tu_run r;
    int n = 1;
    va_list ap;

    va_start(ap, out);
    while (n < 15 && (argv[n] = va_arg(ap, char *)) != NULL)
        n++;
    va_end(ap);
    argv[n] = NULL;
    tu_run(argv, NULL, NULL, false, &r);
    int status = r.status;
    if ((*out = malloc(r.out_len + r.err_len + 1))) {
        memcpy(*out, r.out, r.out_len);
        memcpy(*out + r.out_len, r.err, r.err_len + 1);
    }
    tu_run_free(&r);
    return status;
}

/* print, stats and info on the empty trace: one clear message, exit 1. */
static void readers_say_empty(const char *empty, const char *events)
{
    static const char *const cmds[] = {"print", "stats", "info"};
    char *out;
    int st;

    for (size_t i = 0; i < 3; i++) {
        st = run(&out, cmds[i], empty, NULL);
        is_int(st, 1, "%s EMPTY: exit 1", cmds[i]);
        ok(strstr(out, "empty trace (0 bytes): the program wrote nothing") != NULL,
           "%s EMPTY: says it is an empty trace", cmds[i]);
        ok(!strstr(out, "trace-events") && !strstr(out, "24-byte header") && !strstr(out, "TRACE-EVENTS"),
           "%s EMPTY: not taken for trace-events, no cut header, no trace-events advice", cmds[i]);
        if (strchr(out, '\n') != strrchr(out, '\n') && !ok(0, "%s EMPTY: one line", cmds[i]))
            diag("%s", out);
        free(out);
    }
    st = run(&out, "print", events, empty, NULL);
    is_int(st, 1, "print EVENTS EMPTY: exit 1");
    ok(strstr(out, "empty trace (0 bytes)") != NULL, "print EVENTS EMPTY: says it is an empty trace");
    free(out);
}

/* Event records (seq in args) of a trace `print` reads; -1 on failure. */
static long print_count(const char *trace)
{
    char *out;
    long n = 0;

    if (run(&out, "print", trace, NULL) != 0) {
        diag("print %s: %s", trace, out);
        free(out);
        return -1;
    }
    for (const char *p = out; (p = strstr(p, "ft_ev ")); p++)
        n++;
    free(out);
    return n;
}

int main(int argc, char **argv)
{
    char dir[900], a_trace[900], b_trace[900], events[900], pidtext[32], want[200];
    const char *out_a = NULL;
    struct timespec gap = {0, 20000000};
    pid_t a, b;
    char *out;
    int st;

    cli = argc > 1 ? argv[1] : NULL;
    if (!cli) {
        printf("1..0 # SKIP needs the simpletrace command as argument\n");
        return 0;
    }
    test_tmpdir();
    snprintf(dir, sizeof dir, "%s", test_path("crash"));
    snprintf(a_trace, sizeof a_trace, "%s", test_path("a.trace"));
    snprintf(b_trace, sizeof b_trace, "%s", test_path("b.trace"));
    snprintf(events, sizeof events, "%s", test_path("ft.trace-events"));
    test_write_file(events, FT_EVENTS_TEXT);

    a = spawn(dir, a_trace, 100);
    nanosleep(&gap, NULL); /* b starts later: without --trace recover would take b */
    b = spawn(dir, b_trace, 50);
    ok(truncate(a_trace, 0) == 0 && test_file_size(a_trace) == 0, "a's trace cut to 0 bytes, as a death before its "
       "first write leaves it");

    readers_say_empty(a_trace, events);

    out_a = test_path("a-recovered.trace");
    st = run(&out, "recover", "--keep", "--trace", a_trace, dir, "-o", out_a, NULL);
    is_int(st, 0, "recover --trace EMPTY DIR: exit 0");
    snprintf(pidtext, sizeof pidtext, "%ld", (long)a);
    snprintf(want, sizeof want, "recovering pid %ld", (long)b);
    ok(!strstr(out, "no ring file names it") && !strstr(out, want),
       "recover --trace EMPTY: the rings name the empty file: no guess, not the process started last");
    if (strstr(out, "no ring file names it") || strstr(out, want))
        diag("recover said: %s", out);
    free(out);
    is_int((int)print_count(out_a), 100, "the recovered trace holds the 100 records of the program that wrote EMPTY");
    st = run(&out, "info", out_a, NULL);
    snprintf(want, sizeof want, "pid:              %ld", (long)a);
    ok(st == 0 && strstr(out, want) != NULL, "... and names its pid (%ld)", (long)a);
    free(out);

    /* The other trace still chooses its own process. */
    st = run(&out, "recover", "--trace", b_trace, dir, "-o", test_path("b-recovered.trace"), NULL);
    is_int(st, 0, "recover --trace B DIR: exit 0");
    free(out);
    is_int((int)print_count(test_path("b-recovered.trace")), 50, "B's trace gets B's 50 records");
    (void)pidtext;
    return done_testing();
}
