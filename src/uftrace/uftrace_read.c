/*
 * The uftrace.data reader (uftrace_read.h). The metadata is parsed as
 * uftrace 0.13 reads it (see /work/shared/spec/uftrace-format.md):
 * task.txt's SESS and TASK lines, each session's sid-SID.map (consecutive
 * lines of one path are one module, starting at its first line), and per
 * module BASE.sym with addresses relative to the module's start, a
 * symbol ending where the next line starts. The records of every thread
 * are merged by a binary heap on (time, thread order).
 */
#include "uftrace_read.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define THREAD_BUF (16u * 1024u)
#define UNRESOLVED_NAME "<unresolved address>"
#define MAX_TEXT (256u << 20) /* a metadata file larger than this is not uftrace's */

/* A function symbol at its absolute address in one session. */
struct sym {
    uint64_t start, end;
    uint32_t func;
};

struct session_syms {
    struct sym *v;
    size_t n, cap;
    bool sorted;
};

struct thread {
    uint32_t tid, pid;
    size_t session;
    int fd;
    char path[64];          /* TID.dat, for messages */
    uint64_t offset;        /* byte offset of buf[pos] in the file */
    unsigned char *buf;
    size_t pos, len;
    uint64_t next_ts;       /* of the record at buf[pos] */
};

struct st__uft_data {
    char *dir;
    struct st__uft_session *sess;
    struct session_syms *syms; /* per session */
    size_t nsess;
    size_t cur;                /* the session st__uft_parse_syms() adds to */
    struct thread *threads;
    size_t nthreads;
    char **funcs;              /* names, the last one UNRESOLVED_NAME once open */
    size_t nfuncs, funcs_cap;
    uint32_t *fhash;           /* open addressing on the name: function index + 1, 0 = empty */
    size_t fhash_mask;
    size_t *heap;              /* thread indexes with a record ready, earliest first */
    size_t nheap;
};

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return ret;
}

/* Appends one element of size sz to *v (n used, cap allocated). */
static int grow(void **v, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    void *p = realloc(*v, c * sz);
    if (!p)
        return -ENOMEM;
    *v = p;
    *cap = c;
    return 0;
}

struct st__uft_data *st__uft_data_new(void)
{
    return calloc(1, sizeof(struct st__uft_data));
}

/* --- function names ------------------------------------------------------------ */

static size_t hash_name(const char *name, size_t len)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)name[i]) * UINT64_C(0x100000001b3);
    return (size_t)h;
}

static int fhash_grow(struct st__uft_data *d)
{
    size_t cap = d->fhash ? (d->fhash_mask + 1) * 2 : 1024;
    uint32_t *v = calloc(cap, sizeof *v);
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < d->nfuncs; i++) {
        size_t h = hash_name(d->funcs[i], strlen(d->funcs[i])) & (cap - 1);
        while (v[h])
            h = (h + 1) & (cap - 1);
        v[h] = (uint32_t)(i + 1);
    }
    free(d->fhash);
    d->fhash = v;
    d->fhash_mask = cap - 1;
    return 0;
}

/* The index of function name (len bytes), added when new: names are shared by every session. */
static int func_id(struct st__uft_data *d, const char *name, size_t len, uint32_t *id)
{
    if ((!d->fhash || (d->nfuncs + 1) * 2 > d->fhash_mask + 1) && fhash_grow(d) < 0)
        return -ENOMEM;
    size_t h = hash_name(name, len) & d->fhash_mask;
    for (; d->fhash[h]; h = (h + 1) & d->fhash_mask) {
        const char *f = d->funcs[d->fhash[h] - 1];
        if (strncmp(f, name, len) == 0 && f[len] == '\0') {
            *id = d->fhash[h] - 1;
            return 0;
        }
    }
    if (grow((void **)&d->funcs, &d->funcs_cap, d->nfuncs, sizeof *d->funcs) < 0 ||
        !(d->funcs[d->nfuncs] = strndup(name, len)))
        return -ENOMEM;
    *id = (uint32_t)d->nfuncs++;
    d->fhash[h] = (uint32_t)d->nfuncs;
    return 0;
}

/* --- text files ------------------------------------------------------------------ */

/* The next line of text[*pos..len): its start and length, without the newline; false at the end. */
static bool next_line(const char *text, size_t len, size_t *pos, const char **line, size_t *n)
{
    if (*pos >= len)
        return false;
    const char *s = text + *pos, *nl = memchr(s, '\n', len - *pos);
    *line = s;
    *n = nl ? (size_t)(nl - s) : len - *pos;
    *pos += *n + (nl ? 1 : 0);
    return true;
}

/* Parses "timestamp=S.N" at *p (advancing it): N is a count of ns, as uftrace reads it. */
static bool parse_ts(const char **p, uint64_t *ts)
{
    char *end;
    if (strncmp(*p, "timestamp=", 10) != 0)
        return false;
    errno = 0;
    uint64_t sec = strtoull(*p + 10, &end, 10);
    if (errno || end == *p + 10 || *end != '.')
        return false;
    const char *f = end + 1;
    uint64_t ns = strtoull(f, &end, 10);
    if (errno || end == f || sec > UINT64_MAX / 1000000000u)
        return false;
    *ts = sec * 1000000000u + ns;
    *p = end;
    return true;
}

/* Parses " KEY=INT" at *p. */
static bool parse_int(const char **p, const char *key, long *v)
{
    size_t k = strlen(key);
    char *end;
    if ((*p)[0] != ' ' || strncmp(*p + 1, key, k) != 0 || (*p)[1 + k] != '=')
        return false;
    errno = 0;
    *v = strtol(*p + 2 + k, &end, 10);
    if (errno || end == *p + 2 + k || *v <= 0 || *v > INT32_MAX)
        return false;
    *p = end;
    return true;
}

static int add_session(struct st__uft_data *d, const char *rest, size_t *cap)
{
    struct st__uft_session s = {0};
    long pid;
    const char *p = rest, *q = strstr(rest, " exename=\"");
    const char *last = strrchr(rest, '"');
    if (!parse_ts(&p, &s.ts) || !parse_int(&p, "pid", &pid) || strncmp(p, " sid=", 5) != 0 || !q || last <= q + 9)
        return -EINVAL;
    size_t sid_len = strcspn(p + 5, " ");
    if (sid_len == 0 || sid_len > 16 || p + 5 + sid_len != q)
        return -EINVAL;
    memcpy(s.sid, p + 5, sid_len);
    s.pid = (int)pid;
    if (grow((void **)&d->sess, cap, d->nsess, sizeof *d->sess) < 0 || !(s.exename = strndup(q + 10, (size_t)(last - q - 10))))
        return -ENOMEM;
    d->sess[d->nsess++] = s;
    return 0;
}

/* The session of process pid at time ts: its latest SESS line at or before ts (or its first). */
static bool find_session(const struct st__uft_data *d, int pid, uint64_t ts, size_t *out)
{
    bool found = false;
    for (size_t i = 0; i < d->nsess; i++)
        if (d->sess[i].pid == pid && (!found || d->sess[i].ts <= ts)) {
            *out = i;
            found = true;
        }
    return found;
}

static int add_thread(struct st__uft_data *d, const char *rest, size_t *cap)
{
    uint64_t ts;
    long tid, pid;
    const char *p = rest;
    if (!parse_ts(&p, &ts) || !parse_int(&p, "tid", &tid) || !parse_int(&p, "pid", &pid))
        return -EINVAL;
    for (size_t i = 0; i < d->nthreads; i++)
        if (d->threads[i].tid == (uint32_t)tid)
            return 0; /* one file per thread id: a second TASK line adds nothing */
    size_t sess = 0;
    if (!find_session(d, (int)pid, ts, &sess))
        return -ESRCH;
    if (grow((void **)&d->threads, cap, d->nthreads, sizeof *d->threads) < 0)
        return -ENOMEM;
    d->threads[d->nthreads++] = (struct thread){.tid = (uint32_t)tid, .pid = (uint32_t)pid, .session = sess, .fd = -1};
    return 0;
}

int st__uft_parse_tasks(struct st__uft_data *d, const char *text, size_t len, const char *name, char *err,
                        size_t errlen)
{
    size_t pos = 0, n, lineno = 0, scap = d->nsess, tcap = d->nthreads;
    const char *line;
    while (next_line(text, len, &pos, &line, &n)) {
        char buf[4096];
        lineno++;
        if (n < 5 || (memcmp(line, "SESS ", 5) != 0 && memcmp(line, "TASK ", 5) != 0))
            continue; /* FORK, DLOP and what a newer uftrace adds: nothing we need */
        if (n >= sizeof buf || memchr(line, '\0', n))
            return fail(err, errlen, -EINVAL, "%s:%zu: line too long or not text", name, lineno);
        memcpy(buf, line, n);
        buf[n] = '\0';
        int ret = buf[0] == 'S' ? add_session(d, buf + 5, &scap) : add_thread(d, buf + 5, &tcap);
        if (ret == -ENOMEM)
            return ret;
        if (ret == -ESRCH)
            return fail(err, errlen, -EINVAL, "%s:%zu: a TASK of a process without a SESS line before it", name,
                        lineno);
        if (ret < 0)
            return fail(err, errlen, -EINVAL, "%s:%zu: malformed %.4s line", name, lineno, buf);
    }
    if (d->nsess == 0)
        return fail(err, errlen, -EINVAL, "%s: no SESS line: not a uftrace task list", name);
    if (!(d->syms = calloc(d->nsess, sizeof *d->syms)))
        return -ENOMEM;
    return 0;
}

/* Whether a .sym line ends the previous symbol rather than naming one. */
static bool is_end_marker(char type, const char *name, size_t n)
{
    return type == '?' || (n == 9 && !memcmp(name, "__sym_end", 9)) || (n == 10 && !memcmp(name, "__func_end", 10)) ||
           (n == 12 && !memcmp(name, "__dynsym_end", 12));
}

int st__uft_parse_syms(struct st__uft_data *d, const char *text, size_t len, const char *name, uint64_t start,
                       uint64_t end, char *err, size_t errlen)
{
    struct session_syms *ss = &d->syms[d->cur];
    size_t pos = 0, n, lineno = 0, open = SIZE_MAX, cap = 0; /* open: a symbol whose end is unknown */
    const char *text_line;
    char *line = NULL;
    int ret = 0;
    while (ret == 0 && next_line(text, len, &pos, &text_line, &n)) {
        lineno++;
        if (n + 1 > cap) { /* each line is parsed NUL-terminated, in a copy */
            char *b = realloc(line, cap = n + 1);
            if (!b) {
                ret = -ENOMEM;
                break;
            }
            line = b;
        }
        memcpy(line, text_line, n);
        line[n] = '\0';
        if (n == 0 || line[0] == '#')
            continue;
        char *e;
        errno = 0;
        uint64_t addr = strtoull(line, &e, 16), size = 0;
        const char *p = e;
        if (errno || e == line || *p != ' ') {
            ret = fail(err, errlen, -EINVAL, "%s:%zu: malformed symbol line", name, lineno);
            break;
        }
        if (p[1] >= '0' && p[1] <= '9') { /* the sized format (uftrace 0.14 and later) */
            size = strtoull(p + 1, &e, 16);
            p = e;
        }
        if (p[0] != ' ' || !p[1] || p[2] != ' ') {
            ret = fail(err, errlen, -EINVAL, "%s:%zu: malformed symbol line", name, lineno);
            break;
        }
        char type = p[1];
        const char *sname = p + 3;
        size_t slen = strcspn(sname, "\t");
        uint64_t at = start + addr;
        if (open != SIZE_MAX && ss->v[open].end == 0)
            ss->v[open].end = at; /* a symbol without a size ends where the next line starts */
        open = SIZE_MAX;
        if (is_end_marker(type, sname, slen) || slen == 0 || at >= end || at < start)
            continue;
        if ((ret = grow((void **)&ss->v, &ss->cap, ss->n, sizeof *ss->v)) < 0)
            break;
        struct sym *sy = &ss->v[ss->n];
        *sy = (struct sym){.start = at, .end = size ? at + size : 0};
        if ((ret = func_id(d, sname, slen, &sy->func)) < 0)
            break;
        open = ss->n++;
    }
    free(line);
    if (open != SIZE_MAX && ss->v[open].end == 0)
        ss->n--; /* the last symbol has no end marker: uftrace never matches it either */
    ss->sorted = false;
    return ret;
}

/* --- files of the directory -------------------------------------------------------- */

/* Reads dir/name whole into *text (NUL-terminated); -ENOENT when it is missing. */
static int read_text(const struct st__uft_data *d, const char *name, char **text, size_t *len, char *err,
                     size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", d->dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ENOENT : fail(err, errlen, -errno, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)MAX_TEXT) {
        close(fd);
        return fail(err, errlen, -EINVAL, "%s: not a regular file of at most 256 MiB", path);
    }
    char *buf = malloc((size_t)st.st_size + 1);
    ssize_t got = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    close(fd);
    if (!buf)
        return -ENOMEM;
    if (got != st.st_size) {
        free(buf);
        return fail(err, errlen, -EIO, "cannot read %s", path);
    }
    buf[got] = '\0';
    *text = buf;
    *len = (size_t)got;
    return 0;
}

/* Checks the info header: a uftrace data file of this machine's byte order and word size. */
static int check_info(const struct st__uft_data *d, char *err, size_t errlen)
{
    char path[4096];
    unsigned char h[16];
    snprintf(path, sizeof path, "%s/info", d->dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, -errno, "%s is no uftrace.data directory: cannot open %s: %s", d->dir, path,
                    strerror(errno));
    ssize_t got = read(fd, h, sizeof h);
    close(fd);
    if (got != (ssize_t)sizeof h || memcmp(h, "Ftrace!", 8) != 0)
        return fail(err, errlen, -EINVAL, "%s: byte offset 0: not a uftrace info file (no \"Ftrace!\" magic)", path);
    const uint16_t one = 1;
    unsigned host_endian = *(const unsigned char *)&one ? 1 : 2;
    if (h[14] != host_endian || h[15] != (sizeof(void *) == 8 ? 2 : 1))
        return fail(err, errlen, -EPROTONOSUPPORT, "%s: byte offset 14: recorded with another byte order or word size",
                    path);
    return 0;
}

/* The modules of session s's map: consecutive lines of one path are one, from its first line's start. */
static int load_map(struct st__uft_data *d, size_t s, char *err, size_t errlen)
{
    char name[64], *text;
    size_t len, pos = 0, n, lineno = 0;
    snprintf(name, sizeof name, "sid-%s.map", d->sess[s].sid);
    int ret = read_text(d, name, &text, &len, err, errlen);
    if (ret == -ENOENT)
        return fail(err, errlen, -ENOENT, "%s/%s is missing (the map of process %d)", d->dir, name, d->sess[s].pid);
    if (ret < 0)
        return ret;
    const char *line;
    char path[4096] = "", prev[4096] = "";
    uint64_t mod_start = 0, mod_end = 0;
    d->cur = s;
    while (ret == 0) {
        bool more = next_line(text, len, &pos, &line, &n);
        unsigned long long a = 0, b = 0;
        path[0] = '\0';
        if (more) {
            char buf[4096 + 128];
            lineno++;
            snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf - 1 ? n : sizeof buf - 1), line);
            int off = 0;
            if (sscanf(buf, "%llx-%llx %*s %*s %*s %*s %n", &a, &b, &off) < 2 || b < a) {
                ret = fail(err, errlen, -EINVAL, "%s/%s:%zu: malformed map line", d->dir, name, lineno);
                break;
            }
            snprintf(path, sizeof path, "%s", off ? buf + off : "");
            path[strcspn(path, " \t")] = '\0'; /* uftrace appends " build-id:..." */
        }
        if (prev[0] && strcmp(path, prev) != 0 && prev[0] == '/') {
            /* the previous module is complete: its symbols */
            char sym[4200], *stext;
            size_t slen;
            const char *base = strrchr(prev, '/') + 1;
            snprintf(sym, sizeof sym, "%s.sym", base);
            int r = read_text(d, sym, &stext, &slen, err, errlen);
            if (r == 0) {
                char full[8400];
                snprintf(full, sizeof full, "%s/%s", d->dir, sym);
                r = st__uft_parse_syms(d, stext, slen, full, mod_start, mod_end, err, errlen);
                free(stext);
            }
            if (r < 0 && r != -ENOENT)
                ret = r; /* a module without a .sym file: its addresses stay unresolved, as in uftrace */
        }
        if (!more)
            break;
        if (strcmp(path, prev) != 0)
            mod_start = a;
        mod_end = b;
        snprintf(prev, sizeof prev, "%s", path);
    }
    free(text);
    return ret;
}

static int cmp_sym(const void *a, const void *b)
{
    const struct sym *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* --- records ------------------------------------------------------------------------ */

/* Makes the next record of t readable at buf[pos]; false at the end of its file. */
static int fill(struct st__uft_data *d, struct thread *t, bool *have, char *err, size_t errlen)
{
    if (t->len - t->pos < ST_UFT_REC_SIZE) {
        size_t left = t->len - t->pos;
        memmove(t->buf, t->buf + t->pos, left);
        t->offset += t->pos;
        t->pos = 0;
        t->len = left;
        while (t->len < THREAD_BUF) {
            ssize_t got = read(t->fd, t->buf + t->len, THREAD_BUF - t->len);
            if (got < 0)
                return fail(err, errlen, -errno, "cannot read %s/%s: %s", d->dir, t->path, strerror(errno));
            if (got == 0)
                break;
            t->len += (size_t)got;
        }
        if (t->len == 0) {
            *have = false;
            return 0;
        }
        if (t->len < ST_UFT_REC_SIZE)
            return fail(err, errlen, -EBADMSG, "%s/%s: byte offset %" PRIu64 ": the file ends inside a record (%zu of 16 bytes)",
                        d->dir, t->path, t->offset, t->len);
    }
    memcpy(&t->next_ts, t->buf + t->pos, 8);
    *have = true;
    return 0;
}

static bool heap_less(const struct st__uft_data *d, size_t a, size_t b)
{
    const struct thread *x = &d->threads[a], *y = &d->threads[b];
    return x->next_ts < y->next_ts || (x->next_ts == y->next_ts && a < b);
}

static void heap_down(struct st__uft_data *d, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < d->nheap && heap_less(d, d->heap[l], d->heap[m]))
            m = l;
        if (l + 1 < d->nheap && heap_less(d, d->heap[l + 1], d->heap[m]))
            m = l + 1;
        if (m == i)
            return;
        size_t tmp = d->heap[i];
        d->heap[i] = d->heap[m];
        d->heap[m] = tmp;
        i = m;
    }
}

static int open_threads(struct st__uft_data *d, char *err, size_t errlen)
{
    if (!(d->heap = calloc(d->nthreads + 1, sizeof *d->heap)))
        return -ENOMEM;
    for (size_t i = 0; i < d->nthreads; i++) {
        struct thread *t = &d->threads[i];
        char path[4200];
        snprintf(t->path, sizeof t->path, "%u.dat", (unsigned)t->tid);
        snprintf(path, sizeof path, "%s/%s", d->dir, t->path);
        t->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (t->fd < 0 && errno == ENOENT)
            continue; /* a task that recorded nothing */
        if (t->fd < 0)
            return fail(err, errlen, -errno, "cannot open %s: %s%s", path, strerror(errno),
                        errno == EMFILE ? " (one file per thread: raise ulimit -n)" : "");
        if (!(t->buf = malloc(THREAD_BUF)))
            return -ENOMEM;
        bool have;
        int ret = fill(d, t, &have, err, errlen);
        if (ret < 0)
            return ret;
        if (have)
            d->heap[d->nheap++] = i;
    }
    for (size_t i = d->nheap / 2; i-- > 0;)
        heap_down(d, i);
    return 0;
}

/* The function of addr in session s: the symbol covering it, else the unresolved name. */
static uint32_t resolve(struct st__uft_data *d, size_t s, uint64_t addr)
{
    struct session_syms *ss = &d->syms[s];
    if (!ss->sorted) {
        qsort(ss->v, ss->n, sizeof *ss->v, cmp_sym);
        ss->sorted = true;
    }
    size_t lo = 0, hi = ss->n;
    while (lo < hi) { /* the last symbol starting at or before addr */
        size_t mid = lo + (hi - lo) / 2;
        if (ss->v[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && addr < ss->v[lo - 1].end)
        return ss->v[lo - 1].func;
    return (uint32_t)(d->nfuncs - 1);
}

int st__uft_data_next(struct st__uft_data *d, struct st__uft_call *c, char *err, size_t errlen)
{
    if (d->nheap == 0)
        return 0;
    struct thread *t = &d->threads[d->heap[0]];
    uint64_t data;
    memcpy(&data, t->buf + t->pos + 8, 8);
    if (st__uft_rec_magic(data) != ST_UFT_REC_MAGIC)
        return fail(err, errlen, -EBADMSG, "%s/%s: byte offset %" PRIu64 ": bad record magic %u (not 5)", d->dir,
                    t->path, t->offset + t->pos, st__uft_rec_magic(data));
    if (st__uft_rec_more(data))
        return fail(err, errlen, -EBADMSG, "%s/%s: byte offset %" PRIu64 ": a record with a payload (arguments?): not "
                    "supported", d->dir, t->path, t->offset + t->pos);
    *c = (struct st__uft_call){.ts = t->next_ts, .tid = t->tid, .pid = t->pid, .type = st__uft_rec_type(data),
                               .addr = st__uft_rec_addr(data)};
    if (c->type == ST_UFT_REC_ENTRY || c->type == ST_UFT_REC_EXIT)
        c->func = resolve(d, t->session, c->addr);
    t->pos += ST_UFT_REC_SIZE;
    bool have;
    int ret = fill(d, t, &have, err, errlen);
    if (ret < 0)
        return ret;
    if (!have)
        d->heap[0] = d->heap[--d->nheap];
    heap_down(d, 0);
    return 1;
}

/* --- opening and closing --------------------------------------------------------------- */

int st__uft_data_open(struct st__uft_data **out, const char *dir, char *err, size_t errlen)
{
    struct st__uft_data *d = st__uft_data_new();
    char *text = NULL, name[4200];
    size_t len;
    *out = NULL;
    if (!d || !(d->dir = strdup(dir))) {
        st__uft_data_close(d);
        return -ENOMEM;
    }
    int ret = check_info(d, err, errlen);
    if (ret == 0 && (ret = read_text(d, "task.txt", &text, &len, err, errlen)) == -ENOENT)
        ret = fail(err, errlen, -ENOENT, "%s/task.txt is missing", dir);
    snprintf(name, sizeof name, "%s/task.txt", dir);
    if (ret == 0)
        ret = st__uft_parse_tasks(d, text, len, name, err, errlen);
    free(text);
    for (size_t s = 0; ret == 0 && s < d->nsess; s++)
        ret = load_map(d, s, err, errlen);
    uint32_t unresolved;
    if (ret == 0)
        ret = func_id(d, UNRESOLVED_NAME, strlen(UNRESOLVED_NAME), &unresolved);
    if (ret == 0 && unresolved != d->nfuncs - 1)
        ret = fail(err, errlen, -EINVAL, "%s: a symbol is named %s", dir, UNRESOLVED_NAME);
    if (ret == 0)
        ret = open_threads(d, err, errlen);
    if (ret < 0) {
        if (ret == -ENOMEM && errlen)
            snprintf(err, errlen, "out of memory reading %s", dir);
        st__uft_data_close(d);
        return ret;
    }
    *out = d;
    return 0;
}

size_t st__uft_data_funcs(const struct st__uft_data *d)
{
    return d->nfuncs;
}

const char *st__uft_data_func(const struct st__uft_data *d, size_t i)
{
    return i < d->nfuncs ? d->funcs[i] : UNRESOLVED_NAME;
}

size_t st__uft_data_sessions(const struct st__uft_data *d)
{
    return d->nsess;
}

const struct st__uft_session *st__uft_data_session(const struct st__uft_data *d, size_t i)
{
    return i < d->nsess ? &d->sess[i] : NULL;
}

void st__uft_data_close(struct st__uft_data *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nthreads; i++) {
        if (d->threads[i].fd >= 0)
            close(d->threads[i].fd);
        free(d->threads[i].buf);
    }
    for (size_t i = 0; i < d->nsess; i++)
        free(d->sess[i].exename);
    for (size_t i = 0; d->syms && i < d->nsess; i++)
        free(d->syms[i].v);
    for (size_t i = 0; i < d->nfuncs; i++)
        free(d->funcs[i]);
    free(d->syms);
    free(d->sess);
    free(d->threads);
    free(d->funcs);
    free(d->fhash);
    free(d->heap);
    free(d->dir);
    free(d);
}
