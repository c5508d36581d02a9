/*
 * The monitor: a Unix socket through which a running traced program is
 * listed and steered from outside (`simpletrace ctl`), with no code of its
 * own, by its owner only.
 *
 * Where: `monitor=on` serves $XDG_RUNTIME_DIR/simpletrace/<pid>.sock, or
 * /tmp/simpletrace-<uid>/<pid>.sock without XDG_RUNTIME_DIR; `monitor=PATH`
 * serves PATH (not listed by `ctl list`). The directory is created 0700 and
 * refused when it is a symlink, not ours, or open to group or others; the
 * socket is made 0600. A symbolic link at the socket's path is refused
 * too, naming it (never followed, never removed). Whoever gets through is checked again with
 * SO_PEERCRED: only our effective uid and root are answered, anyone else
 * gets one "error: permission denied" line and is disconnected.
 *
 * The protocol is in monitor_proto.h; the commands and their answers in
 * monitor_cmd.c.
 *
 * Bounds, so no client can hurt the program: a line longer than 4096
 * bytes or holding control bytes (binary) is answered with an error and
 * the connection closed; a client that sends no complete command for the
 * timeout (10 s, `monitor-timeout=`) after connecting or after its last
 * answer, or that stops reading an answer for that long, is disconnected;
 * at most 32 clients are served at once, more are refused with a message;
 * writes never raise SIGPIPE; `info trace` is at most 64 MiB.
 *
 * The thread: one per monitor, created with every signal blocked,
 * detached. It polls the listening socket, its clients and a wake pipe;
 * it touches the runtime only through the public API and the drain's view
 * (monitor.h), so it never blocks a tracing thread. Control commands it
 * runs (trace-file on, flush) may wait for the writeout thread; other
 * clients wait meanwhile.
 *
 * Life cycle, as a configuration part (config_part.h): prepare binds the
 * new socket and starts its thread, which waits for one byte on its wake
 * pipe; commit stops the old server and says 'g' to the new one; abort
 * says 'q' (the thread frees it without serving) and removes the socket.
 * Stopping a server = removing its socket file (if it is still the one we
 * bound) and writing 's' to its wake pipe, the only write it gets while
 * serving; the thread then closes its clients and frees itself. At exit
 * an atexit handler does the same, so the socket file disappears with the
 * program. A program killed by a signal leaves its socket behind: `ctl
 * list` and every monitor starting in the same directory (but a fork
 * child's, see monitor_main) remove sockets whose process is gone or that
 * refuse connections. mon_lock guards `cur`
 * (configuration runs under the control lock, taken first).
 *
 * fork(): the child has no monitor thread and must not keep the parent's
 * sockets (a client could hang on a listening socket nobody serves after
 * the parent died): every descriptor the monitor opens is recorded in
 * fd_slots, published after it is opened and cleared before it is closed,
 * so the child's atfork handler can close exactly the inherited ones
 * without a lock. With `monitor=on` the child then serves its own
 * <childpid>.sock at once, from a thread of its own, so that `ctl`
 * reaches the process that does the work: a daemon's fork child, a
 * server's workers (bound in the handler, before the child can drop its
 * privileges: the socket is in the directory of the user it was forked
 * as). A child that exec()s leaves that socket behind, as a killed
 * program does: the next `ctl list` or monitor start removes it. With
 * `monitor=PATH` (the parent's) the child serves nothing unless it
 * configures a monitor itself.
 *
 * Descriptors taken by the program: a daemon closes every descriptor at
 * start-up and its next open() reuses the numbers (fd_ident.h). Each slot
 * keeps the file its descriptor was opened on, and nothing is read from,
 * written to, shut down or closed through a number that names another
 * file now. The thread wakes at least every MON_CHECK_MS and checks its
 * descriptors and its socket file (a tmp cleaner may remove it in a
 * long run, or the directory with the user's session): what is missing
 * is made again, the socket at the same path (once the program has
 * reopened 0, 1 and 2: MON_RENEW_DELAY_MS); what cannot be is said
 * once, naming the process, its user and the socket, and tried again at
 * each check (not when another process serves the path now). A word for
 * the thread is kept in the server (word) besides the byte on its wake
 * pipe, so it is heard even when the pipe was taken.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <simpletrace/api.h>

#include "config_part.h"
#include "control.h"
#include "diag.h"
#include "fd_ident.h"
#include "monitor.h"
#include "no_follow.h"
#include "thread_start.h"
#include "who.h"

#define SUN_PATH_MAX ((int)sizeof(((struct sockaddr_un *)0)->sun_path))

/* Longest the thread sleeps without checking its descriptors and socket file. */
#define MON_CHECK_MS 1000

/*
 * A descriptor found gone is made again MON_RENEW_DELAY_MS later, once 0,
 * 1 and 2 are open (a program that closed everything reopens them right
 * after; a pipe or socket made meanwhile would take those numbers for a
 * moment), or at the latest after MON_RENEW_TRIES delays (it runs without).
 */
#define MON_RENEW_DELAY_MS 100
#define MON_RENEW_TRIES 10

/* True when descriptors 0, 1 and 2 are all open. */
static bool std_fds_open(void)
{
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0)
            return false;
    return true;
}

/* One connection. */
struct client {
    int fd;                    /* -1 when the slot is free */
    int slot;                  /* its fd_slots entry, or -1 */
    size_t in_len;             /* bytes of in[] holding input not yet run */
    char in[ST_MON_LINE_MAX];  /* the command line being received */
    struct st__growbuf out;     /* answer being sent */
    size_t out_off;            /* bytes of out already sent */
    uint64_t deadline;         /* ms: a command must arrive (or the answer move) by then */
    bool closing;              /* close once out is sent */
};

/* One served socket; owned by its thread once started. */
struct server {
    int lfd, lslot;            /* listening socket */
    int wake[2], wslot[2];     /* stop request: one byte on wake[1] */
    char path[SUN_PATH_MAX];   /* socket file */
    char dir[SUN_PATH_MAX];    /* per-user directory, "" for an explicit path */
    dev_t dev;                 /* the socket file as bound: remove only that one */
    ino_t ino;
    uint64_t accept_pause;     /* ms: out of descriptors, stop accepting until then */
    int word;                  /* atomic: the last word said to the thread ('g', 'q', 's'), 0 before any */
    bool said_lost;            /* the socket could not be made again: said once (the thread's) */
    bool gave_up;              /* another process serves the path now: not tried again (the thread's) */
    bool forked;               /* a fork child's (child_monitor), set before the word 'g' */
    struct server *next_alive; /* the list of servers not freed yet (alive_lock) */
    struct client clients[ST_MON_MAX_CLIENTS];
};

static pthread_mutex_t mon_lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * Held by a monitor thread whenever it works (between two polls: commands,
 * directory scans, messages all allocate), and by fork() from prepare to
 * parent/child, so that no child is made while the thread is inside the
 * allocator: sanitizers' allocators are not fork-safe, and a fork child's
 * own monitor allocates at once (the writer's pass_lock does the same).
 */
static pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
static struct server *cur;           /* the server running now (mon_lock) */
static struct server *forked_away;   /* fork child: the parent's current server (its directory is the child's too) */
/*
 * Every server not freed yet, the stopped ones whose threads are ending
 * included: a fork child has none of those threads, so their servers are
 * reachable from here alone (leak checkers would call them lost).
 */
static pthread_mutex_t alive_lock = PTHREAD_MUTEX_INITIALIZER;
static struct server *alive;
static bool hooks_done;              /* atexit and atfork registered (mon_lock) */
static long timeout_ms = ST_MON_TIMEOUT_MS_DEFAULT; /* atomic */

/* --- descriptors a fork child must close ------------------------------------------- */

#define FD_SLOTS (4 * (ST_MON_MAX_CLIENTS + 8))
static struct {
    int fd1;                 /* fd + 1; 0 free, -1 being filled; atomic */
    struct st__fd_ident id;  /* the file fd was opened on, written before fd1 is published */
} fd_slots[FD_SLOTS];

/* Records fd and its file; returns its slot, or -1 if all are taken (the caller gives fd up). */
static int fd_track(int fd)
{
    struct st__fd_ident id;

    st__fd_ident_get(fd, &id);
    for (int i = 0; i < FD_SLOTS; i++) {
        int zero = 0;
        if (__atomic_compare_exchange_n(&fd_slots[i].fd1, &zero, -1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            fd_slots[i].id = id;
            __atomic_store_n(&fd_slots[i].fd1, fd + 1, __ATOMIC_RELEASE);
            return i;
        }
    }
    return -1;
}

/* True when fd, recorded in slot, is still the file it was opened on (not closed by the program, nor reused). */
static bool fd_ours(int slot, int fd)
{
    return fd >= 0 && slot >= 0 && st__fd_is(fd, &fd_slots[slot].id);
}

/*
 * Forgets then closes fd (in that order: a fork in between leaves the
 * child a harmless copy); not closed when the program has taken its number
 * (slot -1: a descriptor never recorded, just opened, is ours).
 */
static void fd_close(int slot, int fd)
{
    bool ours = slot < 0 ? fd >= 0 : fd_ours(slot, fd);

    if (slot >= 0)
        __atomic_store_n(&fd_slots[slot].fd1, 0, __ATOMIC_RELEASE);
    if (ours)
        close(fd);
}

static void child_monitor(const struct server *parent);

static void mon_fork_prepare(void)
{
    pthread_mutex_lock(&work_lock);
}

static void mon_fork_parent(void)
{
    pthread_mutex_unlock(&work_lock);
}

static void mon_fork_child(void)
{
    pthread_mutex_init(&work_lock, NULL);
    for (int i = 0; i < FD_SLOTS; i++) {
        int v = __atomic_exchange_n(&fd_slots[i].fd1, 0, __ATOMIC_ACQUIRE);
        if (v > 0 && st__fd_is(v - 1, &fd_slots[i].id))
            close(v - 1);
    }
    /* The parent's thread is not here: its server is nothing to stop at exit (alive keeps it reachable). */
    forked_away = cur;
    cur = NULL;
    pthread_mutex_init(&mon_lock, NULL);
    pthread_mutex_init(&alive_lock, NULL);
    if (forked_away && forked_away->dir[0])
        child_monitor(forked_away); /* monitor=on: the child serves <childpid>.sock */
}

/* --- helpers -------------------------------------------------------------------------- */

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static long get_timeout(void)
{
    return __atomic_load_n(&timeout_ms, __ATOMIC_RELAXED);
}

/* Sends what it can without blocking or SIGPIPE; bytes sent, or -1 when the peer is gone. */
static ssize_t send_some(int fd, const void *p, size_t n)
{
    ssize_t r;

    do
        r = send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    return r;
}

/* One line to a client we are about to drop; best effort. */
static void refuse(int fd, int slot, const char *line)
{
    (void)send_some(fd, line, strlen(line));
    shutdown(fd, SHUT_RDWR);
    fd_close(slot, fd);
}

/* True when nobody accepts connections at path (left by a dead process). */
static bool socket_stale(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    bool stale;

    if (fd < 0)
        return false;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    stale = connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 && (errno == ECONNREFUSED || errno == ENOENT);
    close(fd);
    return stale;
}

/* Removes path if it is still the socket file we bound. */
static void unlink_ours(const char *path, dev_t dev, ino_t ino)
{
    struct stat st;

    if (path[0] && lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == dev && st.st_ino == ino)
        unlink(path);
}

/* Removes the sockets of dead processes from our directory (never our own). */
static void remove_stale(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    if (!d)
        return;
    while ((e = readdir(d))) {
        char path[PATH_MAX], *end;
        long pid = strtol(e->d_name, &end, 10);
        struct stat st;
        if (end == e->d_name || strcmp(end, ".sock") != 0 || pid <= 0 || pid == (long)getpid())
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
            continue;
        if ((kill((pid_t)pid, 0) < 0 && errno == ESRCH) || socket_stale(path))
            unlink(path);
    }
    closedir(d);
}

/* --- clients ----------------------------------------------------------------------------- */

static void client_close(struct client *c)
{
    if (fd_ours(c->slot, c->fd))
        shutdown(c->fd, SHUT_RDWR); /* the peer sees the end even if a fork child holds a copy */
    fd_close(c->slot, c->fd);
    st__growbuf_free(&c->out);
    c->fd = -1;
    c->slot = -1;
    c->in_len = 0;
    c->out_off = 0;
    c->closing = false;
}

/* True when c's descriptor is still its connection; else c is dropped, its number left to the program. */
static bool client_ours(struct client *c)
{
    if (c->fd < 0)
        return false;
    if (fd_ours(c->slot, c->fd))
        return true;
    client_close(c);
    return false;
}

/* Queues an error line and closes the connection once it is sent. */
static void client_fail(struct client *c, const char *line)
{
    st__growbuf_free(&c->out);
    st__growbuf_put(&c->out, line, strlen(line));
    c->out_off = 0;
    c->in_len = 0;
    c->closing = true;
    c->deadline = now_ms() + (uint64_t)get_timeout();
}

/* Sends queued output; false when the client is gone (and closed). */
static bool client_flush(struct client *c)
{
    if (!client_ours(c))
        return false;
    while (c->out_off < c->out.len) {
        ssize_t n = send_some(c->fd, (const char *)c->out.data + c->out_off, c->out.len - c->out_off);
        if (n < 0) {
            client_close(c); /* disconnected before reading its answer */
            return false;
        }
        if (n == 0)
            return true; /* full: wait for POLLOUT */
        c->out_off += (size_t)n;
        c->deadline = now_ms() + (uint64_t)get_timeout();
    }
    st__growbuf_free(&c->out);
    c->out_off = 0;
    if (c->closing) {
        client_close(c);
        return false;
    }
    return true;
}

/* Runs the complete lines received, one answer at a time. */
static void client_run(struct client *c)
{
    while (c->fd >= 0 && !c->closing && c->out.len == 0) {
        char *nl = memchr(c->in, '\n', c->in_len);
        size_t used;
        if (!nl) {
            if (c->in_len == sizeof c->in)
                client_fail(c, "error: line too long (limit 4096 bytes with the newline)\n");
            else
                return;
        } else {
            *nl = '\0';
            used = (size_t)(nl - c->in) + 1;
            st__mon_execute(c->in, &c->out);
            memmove(c->in, c->in + used, c->in_len - used);
            c->in_len -= used;
            c->out_off = 0;
            c->deadline = now_ms() + (uint64_t)get_timeout();
        }
        if (!client_flush(c))
            return;
    }
}

/* True for bytes a command line never holds. */
static bool is_binary(unsigned char ch)
{
    return (ch < 0x20 && ch != '\t' && ch != '\r' && ch != '\n') || ch == 0x7f;
}

static void client_read(struct client *c)
{
    ssize_t n;

    if (c->in_len == sizeof c->in || !client_ours(c)) /* a full line is waiting for its turn, or c is gone */
        return;
    do
        n = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    if (n <= 0) {
        /* End of input (maybe mid-command) or reset: nothing more to answer. */
        client_close(c);
        return;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (is_binary((unsigned char)c->in[c->in_len + (size_t)i])) {
            client_fail(c, "error: binary data in command (control bytes are not allowed)\n");
            client_flush(c);
            return;
        }
    }
    c->in_len += (size_t)n;
    client_run(c);
}

static void accept_clients(struct server *s)
{
    for (int k = 0; k < 64; k++) {
        struct ucred cred;
        socklen_t len = sizeof cred;
        struct client *c = NULL;
        char line[128];
        int fd = st__fd_keep(accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)), slot;

        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                s->accept_pause = now_ms() + 100; /* else poll reports the backlog forever */
            return;
        }
        slot = fd_track(fd);
        if (slot < 0) {
            snprintf(line, sizeof line, "error: too many clients (limit %d); try again later\n", ST_MON_MAX_CLIENTS);
            refuse(fd, slot, line);
            continue;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
            (cred.uid != geteuid() && cred.uid != 0)) {
            snprintf(line, sizeof line, "error: permission denied: uid %ld does not own this process\n",
                     len == sizeof cred ? (long)cred.uid : -1L);
            refuse(fd, slot, line);
            continue;
        }
        for (int i = 0; i < ST_MON_MAX_CLIENTS && !c; i++)
            if (s->clients[i].fd < 0)
                c = &s->clients[i];
        if (!c) {
            snprintf(line, sizeof line, "error: too many clients (limit %d); try again later\n", ST_MON_MAX_CLIENTS);
            refuse(fd, slot, line);
            continue;
        }
        c->fd = fd;
        c->slot = slot;
        c->in_len = 0;
        c->out_off = 0;
        c->closing = false;
        c->deadline = now_ms() + (uint64_t)get_timeout();
    }
}

/* Disconnects clients past their deadline; returns ms until the next one (-1 none). */
static int expire(struct server *s)
{
    uint64_t now = now_ms(), next = UINT64_MAX;
    char line[96];

    for (int i = 0; i < ST_MON_MAX_CLIENTS; i++) {
        struct client *c = &s->clients[i];
        if (!client_ours(c))
            continue;
        if (c->deadline <= now && c->out.len == 0 && !c->closing) {
            /* A command may have arrived while we were not scheduled: it counts. */
            client_read(c);
            if (c->fd < 0)
                continue;
        }
        if (c->deadline <= now) {
            if (c->out.len == 0) {
                snprintf(line, sizeof line, "error: timeout: no command within %ld ms\n", get_timeout());
                (void)send_some(c->fd, line, strlen(line)); /* best effort */
            }
            client_close(c); /* silent, or not reading its answer */
            continue;
        }
        if (c->deadline < next)
            next = c->deadline;
    }
    if (s->accept_pause > now && s->accept_pause < next)
        next = s->accept_pause;
    if (next == UINT64_MAX)
        return -1;
    return next - now > INT_MAX ? INT_MAX : (int)(next - now);
}

static int dir_check(const char *dir, char *err, size_t errlen);
static int bind_path(const char *path, int *fdp, char *err, size_t errlen);

/* A wake pipe, non-blocking, its ends numbered 3 or more (st__fd_keep). 0, or -1 with errno. */
static int pipe_kept(int p[2])
{
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    p[0] = st__fd_keep(p[0]);
    p[1] = st__fd_keep(p[1]);
    if (p[0] >= 0 && p[1] >= 0)
        return 0;
    if (p[0] >= 0)
        close(p[0]);
    if (p[1] >= 0)
        close(p[1]);
    return -1;
}

/* The word said to s's thread (server_say), 0 before any. */
static int heard(struct server *s)
{
    return __atomic_load_n(&s->word, __ATOMIC_ACQUIRE);
}

/* Empties s's wake pipe, if it is still ours: the word itself is in s->word. */
static void drain_wake(struct server *s)
{
    char buf[16];

    if (fd_ours(s->wslot[0], s->wake[0]))
        while (read(s->wake[0], buf, sizeof buf) > 0 || errno == EINTR)
            ;
}

/*
 * False when the file at s's path is gone or is another one now; true when
 * it is the socket s bound, and when it cannot be looked at (a worker that
 * dropped its privileges may not search the directory it was forked in:
 * its socket there still serves).
 */
static bool socket_ours(const struct server *s)
{
    struct stat st;

    if (lstat(s->path, &st) != 0)
        return errno != ENOENT && errno != ENOTDIR;
    return S_ISSOCK(st.st_mode) && st.st_dev == s->dev && st.st_ino == s->ino;
}

/* True when s's descriptors and socket file are all still there, its own. */
static bool server_whole(struct server *s)
{
    return fd_ours(s->wslot[0], s->wake[0]) && fd_ours(s->wslot[1], s->wake[1]) && fd_ours(s->lslot, s->lfd) &&
           socket_ours(s);
}

/* A new wake pipe for s (mon_lock held: server_say reads wake[1]); the lost one's numbers are the program's. */
static void renew_wake(struct server *s)
{
    int p[2];

    fd_close(s->wslot[0], s->wake[0]);
    fd_close(s->wslot[1], s->wake[1]);
    s->wake[0] = s->wake[1] = s->wslot[0] = s->wslot[1] = -1;
    if (pipe_kept(p) < 0)
        return; /* words are still heard at each check */
    s->wake[0] = p[0];
    s->wake[1] = p[1];
    s->wslot[0] = fd_track(p[0]);
    s->wslot[1] = fd_track(p[1]);
}

/* Binds s's path again (its directory made again when it went); 0, or -errno with a message. */
static int renew_socket(struct server *s, char *err, size_t errlen)
{
    struct stat st;
    int fd, r;

    if (!fd_ours(s->lslot, s->lfd)) {
        fd_close(s->lslot, s->lfd); /* forgotten: the number is the program's now */
        s->lfd = s->lslot = -1;
    }
    if (s->dir[0] && (r = dir_check(s->dir, err, errlen)) < 0)
        return r;
    unlink_ours(s->path, s->dev, s->ino); /* our old socket file, if the descriptor alone went */
    if ((r = bind_path(s->path, &fd, err, errlen)) < 0)
        return r;
    fd_close(s->lslot, s->lfd); /* the old socket, whose file went */
    s->lfd = fd;
    s->lslot = fd_track(fd);
    if (lstat(s->path, &st) == 0) {
        s->dev = st.st_dev;
        s->ino = st.st_ino;
    }
    return 0;
}

/*
 * Makes again what s lost (server_whole): its wake pipe, its listening
 * socket at the same path. What cannot be made is said once, naming the
 * process, its user and the socket, and tried again at the next check;
 * not when another process serves the path now. Under mon_lock, so that
 * a word said meanwhile goes to the pipe being read, and a server told to
 * stop makes nothing again.
 */
static void server_renew(struct server *s)
{
    char err[512], who[320];
    int r;

    pthread_mutex_lock(&mon_lock);
    if (heard(s) != 's') {
        if (!fd_ours(s->wslot[0], s->wake[0]) || !fd_ours(s->wslot[1], s->wake[1]))
            renew_wake(s);
        if (!s->gave_up && (!fd_ours(s->lslot, s->lfd) || !socket_ours(s))) {
            if ((r = renew_socket(s, err, sizeof err)) == 0) {
                s->said_lost = false;
            } else {
                s->gave_up = r == -EADDRINUSE;
                if (!s->said_lost) {
                    st__who(who, sizeof who, true);
                    st__diag("simpletrace", "%s: %s; simpletrace ctl cannot reach this process%s", who, err,
                             s->gave_up ? "" : " until the socket can be made again");
                }
                s->said_lost = true;
            }
        }
    }
    pthread_mutex_unlock(&mon_lock);
}

/* Serves until the word 's' (stop); work_lock held but while polling. */
static void serve(struct server *s)
{
    struct pollfd pfd[2 + ST_MON_MAX_CLIENTS];
    int who[2 + ST_MON_MAX_CLIENTS];

    pthread_mutex_lock(&work_lock);
    for (;;) {
        int n = 0, tmo = expire(s), r;
        bool listening = s->accept_pause <= now_ms();

        if (tmo < 0 || tmo > MON_CHECK_MS)
            tmo = MON_CHECK_MS; /* the descriptors and the socket file are checked at least this often */
        pfd[n] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
        who[n++] = -1;
        pfd[n] = (struct pollfd){.fd = listening ? s->lfd : -1, .events = POLLIN};
        who[n++] = -1;
        for (int i = 0; i < ST_MON_MAX_CLIENTS; i++) {
            struct client *c = &s->clients[i];
            if (c->fd < 0)
                continue;
            pfd[n] = (struct pollfd){.fd = c->fd, .events = c->out.len ? POLLOUT : POLLIN};
            who[n++] = i;
        }
        pthread_mutex_unlock(&work_lock);
        r = poll(pfd, (nfds_t)n, tmo);
        pthread_mutex_lock(&work_lock);
        if (r < 0) {
            if (errno != EINTR) {
                struct timespec ts = {0, 10000000}; /* ENOMEM: breathe, retry */
                nanosleep(&ts, NULL);
            }
            continue;
        }
        if (pfd[0].revents)
            drain_wake(s);
        if (heard(s) == 's') {
            pthread_mutex_unlock(&work_lock);
            return;
        }
        if (!server_whole(s)) {
            /* The program closed some of our descriptors, or the socket file went: nothing polled is trusted. */
            struct timespec later = {0, MON_RENEW_DELAY_MS * 1000000L};
            pthread_mutex_unlock(&work_lock);
            for (int i = 0; i < MON_RENEW_TRIES && (i == 0 || !std_fds_open()) && heard(s) != 's'; i++)
                nanosleep(&later, NULL);
            pthread_mutex_lock(&work_lock);
            if (heard(s) != 's')
                server_renew(s);
            continue;
        }
        /* Clients first: those that hung up free their slots for the new ones. */
        for (int k = 2; k < n; k++) {
            struct client *c = &s->clients[who[k]];
            if (!pfd[k].revents || c->fd != pfd[k].fd)
                continue;
            if (c->out.len) {
                if (pfd[k].revents & (POLLOUT | POLLERR | POLLHUP)) {
                    if (client_flush(c))
                        client_run(c); /* lines that came in meanwhile */
                }
            } else {
                client_read(c);
            }
        }
        if (pfd[1].revents & POLLIN)
            accept_clients(s);
    }
}

/* s joins the list of servers alive. */
static void alive_add(struct server *s)
{
    pthread_mutex_lock(&alive_lock);
    s->next_alive = alive;
    alive = s;
    pthread_mutex_unlock(&alive_lock);
}

/* s leaves it, before it is freed. */
static void alive_remove(struct server *s)
{
    pthread_mutex_lock(&alive_lock);
    for (struct server **p = &alive; *p; p = &(*p)->next_alive) {
        if (*p == s) {
            *p = s->next_alive;
            break;
        }
    }
    pthread_mutex_unlock(&alive_lock);
}

static void server_free(struct server *s)
{
    alive_remove(s);
    for (int i = 0; i < ST_MON_MAX_CLIENTS; i++)
        if (s->clients[i].fd >= 0)
            client_close(&s->clients[i]);
    fd_close(s->lslot, s->lfd);
    fd_close(s->wslot[0], s->wake[0]);
    fd_close(s->wslot[1], s->wake[1]);
    free(s);
}

/* Waits for the word of the configuration that started the thread: 'g' serves, anything else ends it. */
static bool wait_go(struct server *s)
{
    while (!heard(s)) {
        struct pollfd p = {.fd = s->wake[0], .events = POLLIN};
        if (poll(&p, 1, MON_CHECK_MS) > 0)
            drain_wake(s);
    }
    return heard(s) == 'g';
}

static void *monitor_main(void *arg)
{
    struct server *s = arg;

    if (wait_go(s)) {
        pthread_mutex_lock(&work_lock);
        /*
         * Not in a fork child: its parent's monitor swept the same directory
         * when it started, and the child may be a daemon closing every
         * descriptor to reopen 0, 1 and 2 right now: the directory and the
         * probe sockets would take those numbers (runtime-daemonize).
         */
        if (s->dir[0] && !s->forked)
            remove_stale(s->dir);
        pthread_mutex_unlock(&work_lock);
        serve(s);
    }
    pthread_mutex_lock(&work_lock);
    server_free(s);
    pthread_mutex_unlock(&work_lock);
    return NULL;
}

/*
 * A word to s's thread: 'g' go, 'q' quit before serving, 's' stop serving;
 * kept in s, and a byte on its wake pipe (the only writes it gets) wakes
 * it, unless the program took the pipe: then it hears it at its next check.
 * mon_lock held once s serves (server_renew may be making a new pipe).
 */
static void server_say(struct server *s, char word)
{
    __atomic_store_n(&s->word, word, __ATOMIC_RELEASE);
    if (fd_ours(s->wslot[1], s->wake[1]))
        while (write(s->wake[1], &word, 1) < 0 && errno == EINTR)
            ;
}

/* Asks s's thread to stop; mon_lock held, s no longer current. */
static void server_stop(struct server *s)
{
    unlink_ours(s->path, s->dev, s->ino);
    server_say(s, 's');
}

static void mon_atexit(void)
{
    pthread_mutex_lock(&mon_lock);
    if (cur)
        server_stop(cur);
    cur = NULL;
    pthread_mutex_unlock(&mon_lock);
}

/* --- configuration: monitor=on|off|PATH, monitor-timeout=N[s|ms] ------------------------- */

/* What a configuration asks of the monitor, and what its prepare made. */
struct mon_cfg {
    const char *monitor;         /* NULL unchanged, "on", "off", or a socket path */
    long timeout_ms;             /* -1 unchanged */
    int fd;                      /* bound and listening, not served yet, or -1 */
    struct server *fresh;        /* the server made for fd, its thread waiting for the word */
    bool stop;                   /* on commit: stop the running monitor */
    bool keep;                   /* on commit: the running monitor already serves this path */
    char path[SUN_PATH_MAX];     /* socket path */
    char dir[SUN_PATH_MAX];      /* per-user directory it lives in, "" for an explicit path */
};

static int parse_monitor(void *state, const char *value, char *err, size_t errlen)
{
    if (!*value) {
        st__errmsg(err, errlen, "monitor=: want on, off or a socket path");
        return -EINVAL;
    }
    if (strcmp(value, "on") && strcmp(value, "off") && strlen(value) >= (size_t)SUN_PATH_MAX) {
        st__errmsg(err, errlen, "monitor=%.64s...: socket path longer than %d bytes", value, SUN_PATH_MAX - 1);
        return -ENAMETOOLONG;
    }
    ((struct mon_cfg *)state)->monitor = value;
    return 0;
}

static int parse_timeout(void *state, const char *value, char *err, size_t errlen)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(value, &end);
    if (end == value || errno || v < 0 || v != v)
        goto bad;
    if (strcmp(end, "ms") == 0)
        ;
    else if (strcmp(end, "s") == 0 || *end == '\0')
        v *= 1000;
    else
        goto bad;
    if (v < 1 || v > 86400000)
        goto bad;
    ((struct mon_cfg *)state)->timeout_ms = (long)v;
    return 0;
bad:
    st__errmsg(err, errlen, "invalid monitor-timeout '%s': want N, Ns or Nms, from 1ms to 1 day", value);
    return -EINVAL;
}

static void mon_init(void *state)
{
    struct mon_cfg *c = state;

    c->timeout_ms = -1;
    c->fd = -1;
}

/* Creates or checks the per-user directory; 0 or -errno with a message. */
static int user_dir(char *dir, size_t len, char *err, size_t errlen)
{
    int n = st__mon_socket_dir(dir, len, secure_getenv("XDG_RUNTIME_DIR"), (long)geteuid());
    /* Room for "/<pid>.sock" too. */
    if (n < 0 || (size_t)n + 20 >= len) {
        st__errmsg(err, errlen, "monitor: directory name too long for a socket: %s", dir);
        return -ENAMETOOLONG;
    }
    return dir_check(dir, err, errlen);
}

/* Creates the per-user directory dir (0700) when missing, and checks it is ours alone; 0 or -errno with a message. */
static int dir_check(const char *dir, char *err, size_t errlen)
{
    struct stat st;

    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        int e = -errno;
        st__errmsg(err, errlen, "monitor: cannot create %s: %s", dir, st_strerror(e));
        return e;
    }
    if (lstat(dir, &st) < 0) {
        int e = -errno;
        st__errmsg(err, errlen, "monitor: %s: %s", dir, st_strerror(e));
        return e;
    }
    if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
        st__errmsg(err, errlen, "monitor: refusing %s: it is %s", dir,
                   S_ISLNK(st.st_mode) ? "a symbolic link" : "not a directory");
        return -ENOTDIR;
    }
    if (st.st_uid != geteuid()) {
        st__errmsg(err, errlen, "monitor: refusing %s: owned by uid %ld, not %ld", dir, (long)st.st_uid,
                   (long)geteuid());
        return -EPERM;
    }
    if (st.st_mode & 077) {
        st__errmsg(err, errlen, "monitor: refusing %s: mode %04o lets group or others in (want 0700)", dir,
                   (unsigned)(st.st_mode & 07777));
        return -EPERM;
    }
    return 0;
}

/*
 * Binds and listens at path: 0 with the descriptor in *fdp, or -errno with
 * a message. The socket is bound and listening under a name of its own
 * (path.new) before it is renamed to path, so that nobody finds path
 * refusing connections: a monitor starting meanwhile (a parent's, when its
 * fork child's starts at once) or `ctl list` would take it for a dead
 * process's socket and remove it. A stale socket at path (a dead process's,
 * or an earlier owner's of our pid) is replaced; anything else is refused.
 */
static int bind_path(const char *path, int *fdp, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char tmp[SUN_PATH_MAX];
    struct stat st;
    int fd, e;

    if (lstat(path, &st) == 0) {
        /* A planted link gets a message of its own. */
        if (S_ISLNK(st.st_mode)) {
            st__errmsg(err, errlen, "monitor: socket path '%s' " ST__NO_FOLLOW_WHY, path);
            return -ELOOP;
        }
        if (!S_ISSOCK(st.st_mode)) {
            st__errmsg(err, errlen, "monitor: %s exists and is not a socket", path);
            return -EEXIST;
        }
        if (!socket_stale(path)) {
            st__errmsg(err, errlen, "monitor: %s is in use by another process", path);
            return -EADDRINUSE;
        }
    }
    /* Without room for the suffix, path itself (found listening only after listen()). */
    if (snprintf(tmp, sizeof tmp, "%s.new", path) >= (int)sizeof tmp)
        snprintf(tmp, sizeof tmp, "%s", path);
    if (lstat(tmp, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(tmp); /* the stale one, or one left by an earlier owner of our pid killed before renaming */
    fd = st__fd_keep(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)); /* not 0-2 (fd_ident.h) */
    if (fd < 0) {
        e = -errno;
        st__errmsg(err, errlen, "monitor: socket: %s", st_strerror(e));
        return e;
    }
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", tmp);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        e = -errno;
        st__errmsg(err, errlen, "monitor: cannot bind %s: %s", path, st_strerror(e));
        close(fd);
        return e;
    }
    /* The directory keeps others out already; 0600 also covers monitor=PATH. */
    errno = 0;
    if (lstat(tmp, &st) < 0 || !S_ISSOCK(st.st_mode) || chmod(tmp, 0600) < 0 || listen(fd, 64) < 0 ||
        (strcmp(tmp, path) && rename(tmp, path) < 0)) {
        e = errno ? -errno : -EIO;
        st__errmsg(err, errlen, "monitor: cannot listen on %s: %s", path, st_strerror(e));
        unlink(tmp);
        close(fd);
        return e;
    }
    *fdp = fd;
    return 0;
}

/* The socket path monitor=on|PATH names; 0 or -errno with a message. */
static int socket_path(struct mon_cfg *c, char *err, size_t errlen)
{
    int r;

    if (strcmp(c->monitor, "on") == 0) {
        if ((r = user_dir(c->dir, sizeof c->dir, err, errlen)) < 0)
            return r;
        if (snprintf(c->path, sizeof c->path, "%s/%ld" ST_MON_SOCKET_SUFFIX, c->dir, (long)getpid()) >=
            (int)sizeof c->path) {
            st__errmsg(err, errlen, "monitor: directory name too long for a socket: %s", c->dir);
            return -ENAMETOOLONG;
        }
    } else if (c->monitor[0] == '/') {
        snprintf(c->path, sizeof c->path, "%s", c->monitor);
    } else {
        /* Absolute, so the socket is found (and removed at exit) after a chdir. */
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd) || snprintf(c->path, sizeof c->path, "%s/%s", cwd, c->monitor) >= (int)sizeof c->path) {
            st__errmsg(err, errlen, "monitor=%s: socket path too long once made absolute", c->monitor);
            return -ENAMETOOLONG;
        }
    }
    return 0;
}

/* A server for the bound socket c->fd, its thread started and waiting for the word. 0 or -errno. */
static int server_new(struct mon_cfg *c, char *err, size_t errlen)
{
    struct server *s = calloc(1, sizeof *s);
    struct stat st;
    pthread_attr_t attr;
    pthread_t thread;
    int r;

    if (!s) {
        st__errmsg(err, errlen, "monitor: %s", st_strerror(-ENOMEM));
        return -ENOMEM;
    }
    s->lfd = c->fd;
    s->lslot = s->wslot[0] = s->wslot[1] = -1;
    s->wake[0] = s->wake[1] = -1;
    snprintf(s->path, sizeof s->path, "%s", c->path);
    snprintf(s->dir, sizeof s->dir, "%s", c->dir);
    if (lstat(s->path, &st) == 0) {
        s->dev = st.st_dev;
        s->ino = st.st_ino;
    }
    for (int i = 0; i < ST_MON_MAX_CLIENTS; i++) {
        s->clients[i].fd = -1;
        s->clients[i].slot = -1;
    }
    if (pipe_kept(s->wake) < 0) {
        r = -errno;
        st__errmsg(err, errlen, "monitor: cannot make its wake-up pipe: %s", st_strerror(r));
        free(s);
        return r;
    }
    s->lslot = fd_track(s->lfd);
    s->wslot[0] = fd_track(s->wake[0]);
    s->wslot[1] = fd_track(s->wake[1]);
    /* Every descriptor recorded, so that none is taken for the program's (fd_ours). */
    r = s->lslot < 0 || s->wslot[0] < 0 || s->wslot[1] < 0 ? -EMFILE : 0;
    if (r == 0) {
        alive_add(s);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        r = st__thread_start(&thread, &attr, monitor_main, s, "st-monitor");
        pthread_attr_destroy(&attr);
    }
    if (r < 0) {
        st__errmsg(err, errlen, "cannot start the monitor thread: %s", st_strerror(r));
        fd_close(s->wslot[0], s->wake[0]);
        fd_close(s->wslot[1], s->wake[1]);
        if (s->lslot >= 0)
            __atomic_store_n(&fd_slots[s->lslot].fd1, 0, __ATOMIC_RELEASE); /* c->fd stays the caller's */
        alive_remove(s);
        free(s);
        return r;
    }
    c->fresh = s;
    c->fd = -1; /* the server's now */
    return 0;
}

/*
 * A fork child of a process serving monitor=on serves <childpid>.sock in
 * parent's directory (the user it was forked as), at once (mon_fork_child);
 * what fails is said in one line naming the process and its user.
 */
static void child_monitor(const struct server *parent)
{
    struct mon_cfg c = {.fd = -1};
    char err[512], who[320];
    int r;

    snprintf(c.dir, sizeof c.dir, "%s", parent->dir);
    if (snprintf(c.path, sizeof c.path, "%s/%ld" ST_MON_SOCKET_SUFFIX, c.dir, (long)getpid()) >= (int)sizeof c.path) {
        st__errmsg(err, sizeof err, "monitor: directory name too long for a socket: %s", c.dir);
        r = -ENAMETOOLONG;
    } else if ((r = bind_path(c.path, &c.fd, err, sizeof err)) == 0 && (r = server_new(&c, err, sizeof err)) < 0) {
        unlink(c.path);
        close(c.fd);
    }
    if (r < 0) {
        st__who(who, sizeof who, true);
        st__diag("simpletrace", "%s: %s; simpletrace ctl cannot reach this fork child", who, err);
        return;
    }
    cur = c.fresh;
    cur->forked = true;
    server_say(cur, 'g');
}

/* Binds the socket and starts its thread, changing nothing else: a failure is reported before anything is applied. */
static int mon_prepare(void *state, const struct st__cfg_view *view, char *err, size_t errlen)
{
    struct mon_cfg *c = state;
    int r;

    (void)view;
    if (!c->monitor)
        return 0;
    if (strcmp(c->monitor, "off") == 0) {
        c->stop = true;
        return 0;
    }
    if ((r = socket_path(c, err, errlen)) < 0)
        return r;
    pthread_mutex_lock(&mon_lock);
    c->keep = cur && strcmp(cur->path, c->path) == 0;
    if (!hooks_done) {
        atexit(mon_atexit);
        st__finish_hook(mon_atexit); /* st_trace_finish() before _exit() removes the socket too */
        pthread_atfork(mon_fork_prepare, mon_fork_parent, mon_fork_child);
        hooks_done = true;
    }
    pthread_mutex_unlock(&mon_lock);
    if (c->keep)
        return 0;
    if ((r = bind_path(c->path, &c->fd, err, errlen)) < 0)
        return r;
    return server_new(c, err, errlen);
}

/* Stops a monitor serving another socket and starts the prepared one (or just stops: monitor=off). */
static void mon_commit(void *state, const struct st__cfg_view *view)
{
    struct mon_cfg *c = state;

    (void)view;
    if (c->timeout_ms > 0)
        __atomic_store_n(&timeout_ms, c->timeout_ms, __ATOMIC_RELAXED);
    if (!c->monitor || c->keep)
        return;
    pthread_mutex_lock(&mon_lock);
    if (cur)
        server_stop(cur);
    cur = c->fresh;
    if (cur)
        server_say(cur, 'g');
    c->fresh = NULL;
    pthread_mutex_unlock(&mon_lock);
}

static void mon_abort(void *state)
{
    struct mon_cfg *c = state;

    if (c->fresh) {
        unlink(c->path);
        server_say(c->fresh, 'q'); /* its thread closes the socket and frees it */
        c->fresh = NULL;
    } else if (c->fd >= 0) {
        unlink(c->path);
        close(c->fd);
        c->fd = -1;
    }
}

static const struct st__cfg_key mon_keys[] = {
    {"monitor", false, parse_monitor},
    {"monitor-timeout", false, parse_timeout},
};

static const struct st__cfg_part mon_part = {
    .name = "monitor",
    .layer = ST_CFG_MONITOR,
    .keys = mon_keys,
    .nkeys = sizeof mon_keys / sizeof mon_keys[0],
    .state_size = sizeof(struct mon_cfg),
    .init = mon_init,
    .prepare = mon_prepare,
    .commit = mon_commit,
    .abort = mon_abort,
};

/*
 * The monitor's keys join the configuration when the library loads: before
 * any group registers (default-priority constructors) and so before
 * SIMPLETRACE is read.
 */
__attribute__((constructor(101))) static void mon_register(void)
{
    st__cfg_register(&mon_part);
}
