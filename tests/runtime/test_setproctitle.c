/*
 * setproctitle: servers rewrite their argv memory to retitle themselves
 * for ps ("redis-server *:6379", "nginx: worker process") and rename
 * their thread (prctl PR_SET_NAME). A trace file named from the program
 * (%e, dir='s PROGRAM-PID.trace) and the program= each trace describes
 * keep the name the program was started as: in the process itself after
 * it retitled, and in fork children made after that (a snapshot child, a
 * worker), which expand their file names again. Before the fix a child's
 * file was named from the title ("v: worker-4570.trace").
 */
#include <sys/prctl.h>

#include "srv_util.h"

TEST_EVENT(ev_title, "title_ev", "int n", "n %d", "i", 1, 0);
TEST_GROUP(grp_title, "title", &ev_title)

#define PROG "test_rt_setproctitle"

/* Child: retitles itself as setproctitle does, then traces, forks a child that traces, and a %e file= too. */
static int retitle_and_fork(int argc, char **argv)
{
    char *end = argv[argc - 1] + strlen(argv[argc - 1]);
    char cfg[900], file_dir[700];
    size_t room = (size_t)(end - argv[0]);
    pid_t pid;
    int status;

    snprintf(file_dir, sizeof file_dir, "%s", argv[2]); /* the title overwrites the arguments */

    /* The whole argv area is the title's room (environ may follow; not needed here). */
    memset(argv[0], 0, room);
    snprintf(argv[0], room, "srv: worker *:6379 [retitled by the program]");
    prctl(PR_SET_NAME, "retitled");
    CHECK(strcmp(program_invocation_short_name, PROG) != 0); /* what the fix must not read late */
    test_trace_i(&ev_title, 1);
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        test_trace_i(&ev_title, 2);
        exit(0);
    }
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* A name configured after the retitling: %e is still the program's. */
    snprintf(cfg, sizeof cfg, "file=%s/%%e.named.trace", file_dir);
    CHECK(st_configure(cfg, NULL, 0) == 0);
    test_trace_i(&ev_title, 3);
    return 0;
}

/* The file holds one title_ev record n and describes the program by its real name. */
static void check_file(const char *path, uint64_t n, const char *what)
{
    static struct st_group *const groups[] = {&grp_title, NULL};
    struct test_trace t;
    size_t len = 0;
    char *raw = tu_slurp(path, &len);
    int found = 0;

    if (!ok(raw != NULL, "%s: %s exists", what, path)) {
        free(raw);
        return;
    }
    ok(memmem(raw, len, "program=" PROG "\n", strlen("program=" PROG "\n")) != NULL,
       "%s: its description says program=" PROG, what);
    free(raw);
    if (test_collect(path, groups, &t) == 0)
        for (size_t i = 0; i < t.n; i++)
            found += !t.r[i].mapping && !t.r[i].dropped && t.r[i].u[0] == n;
    is_int(found, 1, "%s: its record is there", what);
    test_trace_free(&t);
}

int main(int argc, char **argv)
{
    char dir[700], files[700], env[1600], stderr_path[800], path[1200];
    /* argv[0] with a directory: program_invocation_short_name points into the middle of the title later. */
    char *args[] = {"/nonexistent/bin/" PROG, "child", files, "padding-to-make-room-for-a-longer-title", NULL};
    const char *envs[] = {env, NULL};
    int status, n;
    pid_t pid = 0;
    char *err;

    if (argc > 2 && !strcmp(argv[1], "child"))
        return retitle_and_fork(argc, argv);
    test_tmpdir();
    snprintf(dir, sizeof dir, "%s", test_path("run"));
    snprintf(files, sizeof files, "%s", test_path("files"));
    mkdir(files, 0700);
    snprintf(env, sizeof env, "SIMPLETRACE=enable=title_*,dir=%s", dir);
    snprintf(stderr_path, sizeof stderr_path, "%s", test_path("stderr"));
    status = test_run_self_pid(args, envs, stderr_path, test_dir, &pid);
    err = srv_stderr(stderr_path);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the retitled server and its fork child ran");
    is_str(err, "", "nothing said");
    free(err);

    n = srv_count_files(dir, "", NULL);
    is_int(n, 2, "two trace files in dir=: the server's and its child's");
    is_int(srv_count_files(dir, PROG "-", ".trace"), 2, "both named " PROG "-PID.trace, not from the title");
    snprintf(path, sizeof path, "%s/" PROG "-%ld.trace", dir, (long)pid);
    check_file(path, 1, "the server (retitled before its first event)");
    is_int(srv_count_files(files, PROG ".named.trace", NULL), 1, "file=%%e... configured after retitling");
    snprintf(path, sizeof path, "%s/" PROG ".named.trace", files);
    check_file(path, 3, "file=%e configured after the retitling");
    {
        /* The child's file: the one that is not the server's. */
        struct tu_run r;
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "ls '%s' | grep -v -- '-%ld.trace$'", dir, (long)pid);
        char *ls[] = {"sh", "-c", cmd, NULL};
        tu_run(ls, NULL, NULL, false, &r);
        r.out[strcspn(r.out, "\n")] = '\0';
        snprintf(path, sizeof path, "%s/%s", dir, r.out);
        check_file(path, 2, "the fork child made after the retitling");
        tu_run_free(&r);
    }
    return done_testing();
}
