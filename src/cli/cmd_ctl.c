/*
 * simpletrace ctl list [--json]
 * simpletrace ctl [OPTIONS] PID|SOCKET COMMAND...
 *
 * The client of the runtime's monitor (the socket and the protocol are in
 * src/format/monitor_proto.h, which the server uses too): lists the traced
 * processes whose monitor this user can reach, or sends one command to one
 * of them and prints the answer. `info trace` arrives as v4 trace bytes,
 * decoded here with the reader library, so it prints what `simpletrace
 * print` prints.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <simpletrace/reader.h>

#include "commands.h"
#include "help_texts.h"
#include "json_escape.h"
#include "monitor_proto.h"

#define PROG "simpletrace ctl"

/* --help: doc/simpletrace-ctl.1.txt, also the man page. */

struct ctl_opts {
    bool json, raw;
    double timeout_s;
    const char *events[64];
    size_t nevents;
};

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'simpletrace ctl --help'.\n");
    return 2;
}

/* --- where sockets live ------------------------------------------------------ */

static void socket_dir(char *dir, size_t len)
{
    st__mon_socket_dir(dir, len, getenv("XDG_RUNTIME_DIR"), (long)geteuid());
}

/* Connects to path; the fd, or -errno. A full backlog waits up to timeout. */
static int connect_to(const char *path, double timeout_s)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct timeval tv = {(time_t)timeout_s, (suseconds_t)((timeout_s - (double)(time_t)timeout_s) * 1e6)};
    int fd;

    if (strlen(path) >= sizeof sa.sun_path)
        return -ENAMETOOLONG;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

/* --- list ----------------------------------------------------------------------- */

struct proc {
    long pid;
    char name[64];
    char path[256];
    const char *state; /* "alive", "stale (removed)", "stale" */
};

static int proc_cmp(const void *a, const void *b)
{
    const struct proc *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Program name: /proc/PID/comm, else the first word of cmdline, else "?". */
static void program_name(long pid, char *name, size_t len)
{
    char path[64];
    FILE *f;
    size_t n = 0;

    snprintf(name, len, "?");
    snprintf(path, sizeof path, "/proc/%ld/comm", pid);
    if ((f = fopen(path, "re"))) {
        if (fgets(name, (int)len, f))
            n = strcspn(name, "\n");
        fclose(f);
        name[n] = '\0';
        if (n)
            return;
    }
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    if ((f = fopen(path, "re"))) {
        n = fread(name, 1, len - 1, f);
        name[n] = '\0';
        fclose(f);
        if (name[0]) {
            const char *slash = strrchr(name, '/');
            if (slash)
                memmove(name, slash + 1, strlen(slash));
            return;
        }
    }
    snprintf(name, len, "?");
}

static int cmd_list(bool json)
{
    char dir[256];
    struct proc *procs = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    DIR *d;

    socket_dir(dir, sizeof dir);
    d = opendir(dir);
    while (d && (e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        struct proc *p;
        struct stat st;
        int fd;
        if (end == e->d_name || strcmp(end, ST_MON_SOCKET_SUFFIX) != 0 || pid <= 0)
            continue;
        if (n == cap) {
            struct proc *np = realloc(procs, (cap = cap ? cap * 2 : 16) * sizeof *np);
            if (!np) {
                fprintf(stderr, PROG ": out of memory\n");
                closedir(d);
                free(procs);
                return 1;
            }
            procs = np;
        }
        p = &procs[n];
        p->pid = pid;
        if (snprintf(p->path, sizeof p->path, "%s/%s", dir, e->d_name) >= (int)sizeof p->path ||
            lstat(p->path, &st) < 0 || !S_ISSOCK(st.st_mode))
            continue;
        n++;
        /* Alive means someone accepts connections there; a dead pid never does. */
        fd = (kill((pid_t)pid, 0) < 0 && errno == ESRCH) ? -ESRCH : connect_to(p->path, 1.0);
        if (fd >= 0 || fd == -EAGAIN || fd == -ETIMEDOUT) {
            if (fd >= 0)
                close(fd);
            p->state = "alive";
            program_name(pid, p->name, sizeof p->name);
        } else if (fd == -ESRCH || fd == -ECONNREFUSED || fd == -ENOENT) {
            p->state = st.st_uid == geteuid() && unlink(p->path) == 0 ? "stale (removed)" : "stale";
            snprintf(p->name, sizeof p->name, "?");
        } else {
            p->state = "unreachable";
            program_name(pid, p->name, sizeof p->name);
        }
    }
    if (d)
        closedir(d);
    if (n)
        qsort(procs, n, sizeof *procs, proc_cmp);
    if (json) {
        printf("{\"dir\":");
        st__json_fputs(stdout, dir);
        printf(",\"processes\":[");
        for (size_t i = 0; i < n; i++) {
            printf("%s{\"pid\":%ld,\"program\":", i ? "," : "", procs[i].pid);
            st__json_fputs(stdout, procs[i].name);
            printf(",\"socket\":");
            st__json_fputs(stdout, procs[i].path);
            printf(",\"alive\":%s,\"removed\":%s}", strcmp(procs[i].state, "alive") ? "false" : "true",
                   strcmp(procs[i].state, "stale (removed)") ? "false" : "true");
        }
        printf("]}\n");
    } else if (n) {
        printf("%-8s %-16s %-16s %s\n", "PID", "PROGRAM", "STATE", "SOCKET");
        for (size_t i = 0; i < n; i++)
            printf("%-8ld %-16s %-16s %s\n", procs[i].pid, procs[i].name, procs[i].state, procs[i].path);
    } else {
        fprintf(stderr, PROG ": no traced process serves a monitor in %s\n", dir);
    }
    free(procs);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* --- talking to one process ------------------------------------------------------- */

/* The answer as it arrives. */
struct conn {
    int fd;
    char buf[65536];
    size_t len, off;     /* unread bytes are buf[off, len) */
    struct timespec end; /* give up then */
};

static int remaining_ms(const struct conn *c)
{
    struct timespec now;
    long long ms;

    clock_gettime(CLOCK_MONOTONIC, &now);
    ms = (long long)(c->end.tv_sec - now.tv_sec) * 1000 + (c->end.tv_nsec - now.tv_nsec) / 1000000;
    return ms < 0 ? 0 : ms > 1000000000 ? 1000000000 : (int)ms;
}

/* Reads more into buf. 1, 0 at the end of the answer stream, or -errno (-ETIMEDOUT). */
static int fill(struct conn *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    ssize_t n;

    if (c->off == c->len)
        c->off = c->len = 0;
    if (c->off > 0 && c->len == sizeof c->buf) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
    if (c->len == sizeof c->buf)
        return -E2BIG;
    for (;;) {
        int r = poll(&p, 1, remaining_ms(c));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return -ETIMEDOUT;
        n = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == ECONNRESET ? 0 : -errno;
        c->len += (size_t)n;
        return n > 0;
    }
}

/* Next line (NUL-terminated, newline cut) into *line. 1, 0 (end), or -errno. */
static int next_line(struct conn *c, char **line)
{
    for (;;) {
        char *nl = memchr(c->buf + c->off, '\n', c->len - c->off);
        int r;
        if (nl) {
            *nl = '\0';
            *line = c->buf + c->off;
            c->off = (size_t)(nl - c->buf) + 1;
            return 1;
        }
        r = fill(c);
        if (r <= 0)
            return r;
    }
}

/* Reads exactly n bytes into a new buffer *out. 0 or -errno (-ENODATA for a short stream). */
static int read_bytes(struct conn *c, size_t n, uint8_t **out)
{
    uint8_t *p = malloc(n ? n : 1);
    size_t got = 0;

    if (!p)
        return -ENOMEM;
    while (got < n) {
        size_t have = c->len - c->off, take = have < n - got ? have : n - got;
        int r;
        memcpy(p + got, c->buf + c->off, take);
        got += take;
        c->off += take;
        if (got == n)
            break;
        r = fill(c);
        if (r <= 0) {
            free(p);
            return r < 0 ? r : -ENODATA;
        }
    }
    *out = p;
    return 0;
}

/* A catalog naming the events of a v4 stream, with no arguments (no trace-events given). */
static int names_catalog(const uint8_t *data, size_t len, struct st_catalog **cat, char *err, size_t errlen)
{
    char *text = NULL;
    size_t tlen = 0;
    FILE *m = open_memstream(&text, &tlen);
    int r;

    if (!m)
        return -ENOMEM;
    for (size_t off = 24; off + 20 <= len;) {
        uint64_t type, id;
        uint32_t n;
        memcpy(&type, data + off, 8);
        if (type != 0) {
            uint32_t rlen;
            if (off + 32 > len)
                break;
            memcpy(&rlen, data + off + 24, 4);
            off += 8 + (size_t)rlen;
            continue;
        }
        memcpy(&id, data + off + 8, 8);
        memcpy(&n, data + off + 16, 4);
        if (off + 20 + n > len)
            break;
        fprintf(m, "%.*s(void)\n", (int)n, (const char *)data + off + 20);
        off += 20 + (size_t)n;
    }
    fclose(m);
    r = st_catalog_load_buffer(cat, "info trace", text ? text : "", tlen, err, errlen);
    free(text);
    return r;
}

/* Prints the v4 trace of `info trace` as `simpletrace print` would. 0 or 1. */
static int print_trace(const uint8_t *data, size_t len, const char *decls, size_t decls_len,
                       const struct ctl_opts *o)
{
    struct st_catalog *cat = NULL;
    struct st_reader *r = NULL;
    struct st_formatter *f = NULL;
    struct st_formatter_options fo = {.struct_size = sizeof fo, .format = o->json ? ST_OUTPUT_JSON : ST_OUTPUT_TEXT,
                                      .timestamps = ST_TIMESTAMP_DELTA, .out = stdout};
    struct st_reader_error rerr = {.struct_size = sizeof rerr};
    const struct st_record *rec;
    char err[1024] = "";
    int ret, status = 1;

    if (o->raw)
        return fwrite(data, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : 1;
    if (o->nevents)
        ret = st_catalog_load(&cat, o->events, o->nevents, err, sizeof err);
    else if (decls)
        ret = st_catalog_load_buffer(&cat, "info trace (the program's events)", decls, decls_len, err, sizeof err);
    else
        ret = names_catalog(data, len, &cat, err, sizeof err);
    if (ret < 0) {
        fprintf(stderr, PROG ": %s\n", err[0] ? err : strerror(-ret));
        return 1;
    }
    if (!o->nevents && !decls)
        fprintf(stderr, PROG ": info trace: arguments not shown; give the program's trace-events "
                        "with --trace-events=FILE\n");
    ret = st_reader_open_memory(&r, data, len, "info trace", cat, NULL, &rerr);
    if (ret == 0)
        ret = st_formatter_new(&f, cat, &fo);
    if (ret < 0) {
        fprintf(stderr, PROG ": %s\n", strerror(-ret));
        goto out;
    }
    while ((ret = st_reader_next(r, &rec)) == 1) {
        if (st_formatter_write(f, rec) < 0)
            break;
    }
    st_formatter_flush(f);
    if (ret < 0) {
        st_reader_format_error(r, err, sizeof err);
        fprintf(stderr, PROG ": %s\n", err);
        goto out;
    }
    status = ret == 0 ? 0 : 1;
out:
    st_formatter_free(f);
    st_reader_close(r);
    st_catalog_free(cat);
    return status;
}

/* Reports a failed command (stderr, and as JSON on stdout with --json). */
static int command_failed(const struct ctl_opts *o, const char *msg)
{
    if (o->json) {
        printf("{\"error\":");
        st__json_fputs(stdout, msg);
        printf("}\n");
        fflush(stdout);
    }
    fprintf(stderr, PROG ": %s\n", msg);
    return 1;
}

/* Builds the command line from words; trace-file set gets an absolute PATH. */
static int build_line(char **words, int n, char *line, size_t len)
{
    size_t at = 0;
    char cwd[4096];

    for (int i = 0; i < n; i++) {
        const char *w = words[i];
        int m;
        if (strpbrk(w, "\n\r"))
            return usage_error("a command word holds a line break: '%s'", w);
        if (i == 2 && n >= 3 && !strcmp(words[0], "trace-file") && !strcmp(words[1], "set") && w[0] != '/') {
            /* The program's working directory is not ours: make the path mean what the user sees. */
            if (!getcwd(cwd, sizeof cwd))
                return usage_error("cannot resolve '%s': no current directory", w);
            m = snprintf(line + at, len - at, "%s%s/%s", i ? " " : "", cwd, w);
        } else {
            m = snprintf(line + at, len - at, "%s%s", i ? " " : "", w);
        }
        if (m < 0 || (size_t)m >= len - at)
            return usage_error("%s", "command longer than 4095 bytes");
        at += (size_t)m;
    }
    return 0;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The byte count of a framing line "WORD N" (monitor_proto.h), or SIZE_MAX when l is not one. */
static size_t framing(const char *l, const char *word)
{
    size_t w = strlen(word);
    char *end;
    unsigned long long n;

    if (strncmp(l, word, w) != 0 || l[w] != ' ' || l[w + 1] < '0' || l[w + 1] > '9')
        return SIZE_MAX;
    errno = 0;
    n = strtoull(l + w + 1, &end, 10);
    return *end || errno || n >= SIZE_MAX ? SIZE_MAX : (size_t)n;
}

static int run_command(const char *target, char **words, int nwords, const struct ctl_opts *o)
{
    static struct conn c;
    char line[ST_MON_LINE_MAX], path[256], msg[600];
    bool info_trace = nwords == 2 && !strcmp(words[0], "info") && !strcmp(words[1], "trace");
    uint64_t truncated = 0;
    uint8_t *decls = NULL; /* the program's event declarations, sent with info trace */
    size_t decls_len = 0;
    int r, status = 1, decoded = 0;
    bool done = false;
    size_t n;
    char *l;

    r = build_line(words, nwords, line, sizeof line - 6);
    if (r)
        return r;
    if (strchr(target, '/')) {
        snprintf(path, sizeof path, "%s", target);
    } else {
        char dir[200], *end;
        long pid = strtol(target, &end, 10);
        if (end == target || *end || pid <= 0)
            return usage_error("'%s' is neither a pid nor a socket path", target);
        socket_dir(dir, sizeof dir);
        snprintf(path, sizeof path, "%s/%ld" ST_MON_SOCKET_SUFFIX, dir, pid);
    }
    c.fd = connect_to(path, o->timeout_s);
    if (c.fd < 0) {
        snprintf(msg, sizeof msg, "cannot reach %s: %s%s", path, strerror(-c.fd),
                 c.fd == -ENOENT || c.fd == -ECONNREFUSED ? " (is the program running with monitor=on?)" : "");
        return command_failed(o, msg);
    }
    clock_gettime(CLOCK_MONOTONIC, &c.end);
    c.end.tv_sec += (time_t)o->timeout_s;
    c.end.tv_nsec += (long)((o->timeout_s - (double)(time_t)o->timeout_s) * 1e9);
    if (c.end.tv_nsec >= 1000000000L) {
        c.end.tv_sec++;
        c.end.tv_nsec -= 1000000000L;
    }
    {
        char req[ST_MON_LINE_MAX + 8];
        int len = snprintf(req, sizeof req, "%s%s\n", o->json && !info_trace ? ST_MON_JSON " " : "", line);
        r = send_all(c.fd, req, (size_t)len);
    }
    while (r == 0 && !done) {
        r = next_line(&c, &l);
        if (r != 1)
            break;
        r = 0;
        if (!strcmp(l, ST_MON_OK)) {
            status = 0;
            done = true;
        } else if (!strncmp(l, ST_MON_ERROR, strlen(ST_MON_ERROR))) {
            status = command_failed(o, l + strlen(ST_MON_ERROR));
            done = true;
        } else if (info_trace && (n = framing(l, ST_MON_TRUNCATED)) != SIZE_MAX) {
            truncated = n;
        } else if (info_trace && (n = framing(l, ST_MON_EVENTS)) != SIZE_MAX) {
            free(decls);
            decls = NULL;
            decls_len = n;
            r = read_bytes(&c, decls_len, &decls);
            if (r < 0)
                break;
        } else if (info_trace && (n = framing(l, ST_MON_DATA)) != SIZE_MAX) {
            uint8_t *data = NULL;
            r = read_bytes(&c, n, &data);
            if (r < 0)
                break;
            if (truncated)
                fprintf(stderr, PROG ": info trace: %llu bytes of older records did not fit and are not shown\n",
                        (unsigned long long)truncated);
            decoded = print_trace(data, n, (const char *)decls, decls_len, o);
            free(data);
        } else {
            fputs(l, stdout);
            fputc('\n', stdout);
        }
    }
    if (!done) {
        snprintf(msg, sizeof msg, "%s: %s", path,
                 r == 0 || r == 1 ? "the program closed the connection before answering" : strerror(-r));
        status = command_failed(o, msg);
    } else if (status == 0 && decoded) {
        status = 1; /* the reader said why on stderr */
    }
    close(c.fd);
    free(decls);
    if (fflush(stdout) != 0)
        status = 1;
    return status;
}

int st__cmd_ctl(int argc, char **argv)
{
    struct ctl_opts o = {.timeout_s = 60};
    const char *target = NULL;
    int i;

    signal(SIGPIPE, SIG_IGN);
    for (i = 1; i < argc && !target; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(st__help_ctl, stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            o.json = true;
        } else if (!strcmp(a, "--raw")) {
            o.raw = true;
        } else if (!strncmp(a, "--trace-events=", 15) || !strcmp(a, "--trace-events")) {
            const char *v = a[14] == '=' ? a + 15 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v || !*v)
                return usage_error("%s", "--trace-events needs a file");
            if (o.nevents == sizeof o.events / sizeof o.events[0])
                return usage_error("%s", "too many --trace-events files");
            o.events[o.nevents++] = v;
        } else if (!strncmp(a, "--timeout=", 10)) {
            char *end;
            o.timeout_s = strtod(a + 10, &end);
            if (end == a + 10 || *end || !(o.timeout_s > 0 && o.timeout_s < 1e6))
                return usage_error("bad --timeout '%s' (want seconds, e.g. 5 or 0.5)", a + 10);
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a);
        } else {
            target = a;
        }
    }
    if (!target)
        return usage_error("%s", "need list, or PID|SOCKET and a command");
    if (!strcmp(target, "list")) {
        for (; i < argc; i++) {
            if (!strcmp(argv[i], "--json"))
                o.json = true;
            else
                return usage_error("list takes no argument but --json, not '%s'", argv[i]);
        }
        return cmd_list(o.json);
    }
    /* Options may also come between the target and the command. */
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        if (!strcmp(argv[i], "--json"))
            o.json = true;
        else if (!strcmp(argv[i], "--raw"))
            o.raw = true;
        else if (!strncmp(argv[i], "--trace-events=", 15) && argv[i][15] &&
                 o.nevents < sizeof o.events / sizeof o.events[0])
            o.events[o.nevents++] = argv[i] + 15;
        else
            return usage_error("unknown option '%s' (options go before the command)", argv[i]);
    }
    if (i == argc)
        return usage_error("%s", "need a command after the pid (try 'help')");
    return run_command(target, argv + i, argc - i, &o);
}
