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
 * list` and every monitor starting in the same directory remove sockets
 * whose process is gone or that refuse connections. mon_lock guards `cur`
 * (configuration runs under the control lock, taken first).
 *
 * fork(): the child has no monitor thread and must not keep the parent's
 * sockets (a client could hang on a listening socket nobody serves after
 * the parent died): every descriptor the monitor opens is recorded in
 * fd_slots, published after it is opened and cleared before it is closed,
 * so the child's atfork handler can close exactly the inherited ones
 * without a lock. The child serves nothing unless it configures
 * `monitor=on` itself, which then opens <childpid>.sock (an exec'ed
 * program reading SIMPLETRACE does so on its own).
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
#include "monitor.h"
#include "no_follow.h"
#include "thread_start.h"

#define SUN_PATH_MAX ((int)sizeof(((struct sockaddr_un *)0)->sun_path))

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
    struct client clients[ST_MON_MAX_CLIENTS];
};

static pthread_mutex_t mon_lock = PTHREAD_MUTEX_INITIALIZER;
static struct server *cur;           /* the server running now (mon_lock) */
static struct server *forked_away;   /* fork child: the parent's, kept reachable for leak checkers */
static bool hooks_done;              /* atexit and atfork registered (mon_lock) */
static long timeout_ms = ST_MON_TIMEOUT_MS_DEFAULT; /* atomic */

/* --- descriptors a fork child must close ------------------------------------------- */

#define FD_SLOTS (4 * (ST_MON_MAX_CLIENTS + 8))
static int fd_slots[FD_SLOTS]; /* fd + 1, 0 = free; atomic */

/* Records fd; returns its slot, or -1 if all are taken (then a fork child keeps it). */
static int fd_track(int fd)
{
    for (int i = 0; i < FD_SLOTS; i++) {
        int zero = 0;
        if (__atomic_compare_exchange_n(&fd_slots[i], &zero, fd + 1, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
            return i;
    }
    return -1;
}

/* Forgets then closes fd (in that order: a fork in between leaves the child a harmless copy). */
static void fd_close(int slot, int fd)
{
    if (slot >= 0)
        __atomic_store_n(&fd_slots[slot], 0, __ATOMIC_RELEASE);
    if (fd >= 0)
        close(fd);
}

static void mon_fork_child(void)
{
    for (int i = 0; i < FD_SLOTS; i++) {
        int v = __atomic_exchange_n(&fd_slots[i], 0, __ATOMIC_ACQUIRE);
        if (v > 0)
            close(v - 1);
    }
    /* The parent's thread is not here: nothing serves, nothing to stop at exit. */
    forked_away = cur;
    cur = NULL;
    pthread_mutex_init(&mon_lock, NULL);
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
    shutdown(c->fd, SHUT_RDWR); /* the peer sees the end even if a fork child holds a copy */
    fd_close(c->slot, c->fd);
    st__growbuf_free(&c->out);
    c->fd = -1;
    c->slot = -1;
    c->in_len = 0;
    c->out_off = 0;
    c->closing = false;
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

    if (c->in_len == sizeof c->in) /* a full line is waiting for its turn */
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
        int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), slot;

        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                s->accept_pause = now_ms() + 100; /* else poll reports the backlog forever */
            return;
        }
        slot = fd_track(fd);
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
        if (c->fd < 0)
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

/* Serves until a byte arrives on the wake pipe. */
static void serve(struct server *s)
{
    struct pollfd pfd[2 + ST_MON_MAX_CLIENTS];
    int who[2 + ST_MON_MAX_CLIENTS];

    for (;;) {
        int n = 0, tmo = expire(s), r;
        bool listening = s->accept_pause <= now_ms();

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
        r = poll(pfd, (nfds_t)n, tmo);
        if (r < 0) {
            if (errno != EINTR) {
                struct timespec ts = {0, 10000000}; /* ENOMEM: breathe, retry */
                nanosleep(&ts, NULL);
            }
            continue;
        }
        if (pfd[0].revents) {
            char one;
            /* Read it: the stopper's write then happens before our closing the pipe. */
            while (read(s->wake[0], &one, 1) < 0 && errno == EINTR)
                ;
            return;
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

static void server_free(struct server *s)
{
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
    struct pollfd p = {.fd = s->wake[0], .events = POLLIN};
    char word = 0;
    ssize_t r;

    while (poll(&p, 1, -1) < 0 && errno == EINTR)
        ;
    while ((r = read(s->wake[0], &word, 1)) < 0 && errno == EINTR)
        ;
    return r == 1 && word == 'g';
}

static void *monitor_main(void *arg)
{
    struct server *s = arg;

    if (wait_go(s)) {
        if (s->dir[0])
            remove_stale(s->dir);
        serve(s);
    }
    server_free(s);
    return NULL;
}

/* One byte to s's thread: 'g' go, 'q' quit before serving, 's' stop serving (the only writes it gets). */
static void server_say(struct server *s, char word)
{
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
    struct stat st;
    int n = st__mon_socket_dir(dir, len, secure_getenv("XDG_RUNTIME_DIR"), (long)geteuid());
    /* Room for "/<pid>.sock" too. */
    if (n < 0 || (size_t)n + 20 >= len) {
        st__errmsg(err, errlen, "monitor: directory name too long for a socket: %s", dir);
        return -ENAMETOOLONG;
    }
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

/* Binds and listens at p->path, replacing a stale socket; 0 or -errno with a message. */
static int bind_at(struct mon_cfg *p, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    int fd, r, e;

    /* bind() would refuse it too, but as "in use": a planted link gets a message of its own. */
    if (lstat(p->path, &st) == 0 && S_ISLNK(st.st_mode)) {
        st__errmsg(err, errlen, "monitor: socket path '%s' " ST__NO_FOLLOW_WHY, p->path);
        return -ELOOP;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        e = -errno;
        st__errmsg(err, errlen, "monitor: socket: %s", st_strerror(e));
        return e;
    }
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", p->path);
    r = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    if (r < 0 && errno == EADDRINUSE) {
        /* Left by a dead process (a killed run, or our pid reused)? */
        if (lstat(p->path, &st) < 0 || !S_ISSOCK(st.st_mode)) {
            st__errmsg(err, errlen, "monitor: %s exists and is not a socket", p->path);
            close(fd);
            return -EEXIST;
        }
        if (!socket_stale(p->path)) {
            st__errmsg(err, errlen, "monitor: %s is in use by another process", p->path);
            close(fd);
            return -EADDRINUSE;
        }
        unlink(p->path);
        r = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    }
    if (r < 0) {
        e = -errno;
        st__errmsg(err, errlen, "monitor: cannot bind %s: %s", p->path, st_strerror(e));
        close(fd);
        return e;
    }
    /* The directory keeps others out already; 0600 also covers monitor=PATH. */
    errno = 0;
    if (lstat(p->path, &st) < 0 || !S_ISSOCK(st.st_mode) || chmod(p->path, 0600) < 0 || listen(fd, 64) < 0) {
        e = errno ? -errno : -EIO;
        st__errmsg(err, errlen, "monitor: cannot listen on %s: %s", p->path, st_strerror(e));
        unlink(p->path);
        close(fd);
        return e;
    }
    p->fd = fd;
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
    if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        r = -errno;
        st__errmsg(err, errlen, "monitor: cannot make its wake-up pipe: %s", st_strerror(r));
        free(s);
        return r;
    }
    s->lslot = fd_track(s->lfd);
    s->wslot[0] = fd_track(s->wake[0]);
    s->wslot[1] = fd_track(s->wake[1]);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    r = st__thread_start(&thread, &attr, monitor_main, s, "st-monitor");
    pthread_attr_destroy(&attr);
    if (r < 0) {
        st__errmsg(err, errlen, "cannot start the monitor thread: %s", st_strerror(r));
        fd_close(s->wslot[0], s->wake[0]);
        fd_close(s->wslot[1], s->wake[1]);
        if (s->lslot >= 0)
            __atomic_store_n(&fd_slots[s->lslot], 0, __ATOMIC_RELEASE); /* c->fd stays the caller's */
        free(s);
        return r;
    }
    c->fresh = s;
    c->fd = -1; /* the server's now */
    return 0;
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
        pthread_atfork(NULL, NULL, mon_fork_child);
        hooks_done = true;
    }
    pthread_mutex_unlock(&mon_lock);
    if (c->keep)
        return 0;
    if ((r = bind_at(c, err, errlen)) < 0)
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
