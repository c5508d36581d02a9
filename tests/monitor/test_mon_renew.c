/*
 * A program that runs for weeks outlives files around it: a tmp cleaner
 * (systemd-tmpfiles ages /tmp) removes its socket, the end of a login
 * session removes $XDG_RUNTIME_DIR's simpletrace directory. The monitor
 * thread checks its socket file at least every second and makes it again,
 * at the same path (its directory too, 0700): `ctl` reaches the program
 * again within a few seconds, and nothing is said. A path taken by a file
 * that is not ours is never removed: one message names the process, its
 * user and the socket, and the file stays.
 */
#include "mon_util.h"

TEST_EVENT(ev_a, "rn_a", "int x", "x %d", "i", 1, 0);
TEST_GROUP(grp_rn, "rn", &ev_a)

/* Asks until the socket answers (up to ms); true when it did. */
static int answers(const char *sock, long ms)
{
    for (long waited = 0;; waited += 100) {
        char *a = mon_ask(sock, "info trace-events rn_a\n");
        int good = a && !strcmp(a, "rn_a : state 0\nok\n");
        free(a);
        if (good)
            return 1;
        if (waited >= ms)
            return 0;
        mon_sleep_ms(100);
    }
}

int main(void)
{
    char sock[800], err[512] = "", path[800], want[200], *text;
    struct stat st;
    int fd, saved;

    mon_setup();
    snprintf(sock, sizeof sock, "%s", mon_sock(getpid()));
    is_int(st_configure("monitor=on", err, sizeof err), 0, "monitor=on");
    ok(answers(sock, 2000), "it serves");

    unlink(sock); /* a tmp cleaner */
    ok(answers(sock, 5000), "its socket removed: made again at the same path, and it answers");
    ok(lstat(sock, &st) == 0 && (st.st_mode & 0777) == 0600, "... mode 0600");

    unlink(sock); /* the session ends: the directory goes */
    rmdir(mon_sockdir);
    ok(answers(sock, 5000), "its directory removed: both made again, and it answers");
    ok(lstat(mon_sockdir, &st) == 0 && (st.st_mode & 0777) == 0700, "... the directory 0700");

    /* A file not ours at the path: left alone, said once (stderr caught meanwhile). */
    fflush(stderr);
    saved = dup(2);
    fd = open(test_path("stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    unlink(sock);
    fd = open(sock, O_WRONLY | O_CREAT, 0600);
    close(fd);
    mon_sleep_ms(2500);
    dup2(saved, 2);
    close(saved);
    ok(lstat(sock, &st) == 0 && S_ISREG(st.st_mode), "a regular file at the path is never removed");
    text = tu_slurp(test_path("stderr"), NULL);
    snprintf(want, sizeof want, "simpletrace: process %ld (test_mon_renew), user ", (long)getpid());
    ok(text && !strncmp(text, want, strlen(want)) && strstr(text, sock) && strstr(text, "exists and is not a socket") &&
           strchr(text, '\n') && !strchr(text, '\n')[1],
       "... one message names the process, its user and the socket: %s", text ? text : "");
    free(text);
    snprintf(path, sizeof path, "%s", sock);
    unlink(path);
    ok(answers(sock, 5000), "once it is gone, the socket is made again");
    is_int(st_configure("monitor=off", NULL, 0), 0, "monitor=off");
    ok(!test_exists(sock), "... removes it");
    return done_testing();
}
