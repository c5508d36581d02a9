/*
 * The uftrace.data writer of the exporter, on the shared uftrace writers
 * (uftrace/uftrace_write.h; format in format/uftrace_format.h).
 *
 * What it writes:
 *   TID.dat      per thread: ENTRY/EXIT of calls, EVENT for instant events
 *                (user event id ST_UFT_EVENT_ID_USER + catalog index, no
 *                arguments: uftrace user events cannot carry data), LOST
 *                for dropped-events records (count in addr)
 *   BASE.sym     one synthetic function per pairing name, 16 bytes each
 *                (one file per program name, all alike)
 *   sid-SID.map  per process: the synthetic object (path = its exename) and
 *                a [stack] line
 *   events.txt   "EVENT: ID simpletrace:NAME" for each event used (names, here
 *                and in .sym, cut to ST_UFT_NAME_MAX: uftrace crashes on longer)
 *   task.txt     per process a SESS, then a TASK per thread at its first
 *                record's time (uftrace's layout for several processes)
 *   info         exename, cmdline, the thread list, date and duration
 *
 * The synthetic object: exename is the traced executable's path, as the
 * trace's description records it (uftrace shows it as the exe image and
 * names every task after its basename; our .sym file of that basename gives
 * its symbols, so the real file is never read); else /simpletrace/PROGRAM,
 * or /simpletrace/unknown-program for a trace that does not say (`info`
 * then shows the export command, which names the trace). Mapped at SYM_BASE; function id k lives at SYM_BASE + SYM_FIRST +
 * 16 k. Its .sym file names every function, so uftrace never falls back to
 * reading the "ELF". Each session and its tasks belong to the process id
 * st__ex_process_id() (see export_internal.h). uftrace names files and
 * tasks by thread id and sessions by process id: several processes sharing
 * one (traces of two hosts) cannot be told apart there and are refused.
 *
 * Streaming: records go through per-file buffers; at most max_open_files
 * .dat files are open at once (least recently used closed first, reopened
 * for appending), so thousands of threads need no more descriptors. A
 * thread without an open file collects PEND_BYTES of records before it
 * takes one, so that many threads taking turns cost one open and close
 * per PEND_BYTES / 16 records, not per record.
 *
 * Safety of the output: everything is written into a fresh temporary
 * directory next to DIR (".BASE.tmp-XXXXXX") and renamed into place at the
 * end. An existing DIR is replaced only if it holds nothing but uftrace
 * data (checked before converting and again when swapping); the swap is
 * atomic where the file system can exchange names (renameat2).
 */
#include <simpletrace/version.h>

#include "export_internal.h"
#include "uftrace_write.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#define SLOT_BYTES (64u * 1024u)          /* buffer per open .dat file */
#define PEND_BYTES 512u                   /* records a thread holds while it has no open file */
#define DEFAULT_OPEN_FILES 128u
#define SYM_BASE UINT64_C(0x400000)       /* where the synthetic object is mapped */
#define SYM_FIRST UINT64_C(0x1000)        /* offset of the first function in it */
#define SYM_SIZE UINT64_C(16)             /* bytes per synthetic function */
#define PROVIDER "simpletrace"            /* events.txt: PROVIDER:EVENT */

/* An open .dat file with its buffer. */
struct slot {
    int fd;
    struct st__ex_thread *t; /* whose file it is */
    uint64_t used;           /* tick of its last record: the least recent is closed first */
    size_t len;              /* bytes buffered */
    unsigned char buf[SLOT_BYTES];
};

struct uft {
    struct st__ex_dir out;   /* the output directory, filled under a temporary name */
    struct slot **slots;
    unsigned nslots, maxslots;
    uint64_t tick;
    uint8_t *event_used;     /* per catalog index: in events.txt (grows with the catalog) */
    size_t capused;
};

/* --- output files ---------------------------------------------------------------- */

static int slot_flush(struct st__ex_ctx *ctx, struct slot *s)
{
    if (!s->len)
        return 0;
    int ret = st__write_all(s->fd, s->buf, s->len);
    s->len = 0;
    return ret ? st__ex_fail(ctx, ret, "cannot write %u.dat", (unsigned)s->t->tid) : 0;
}

/* Flushes and closes slot s; its thread has no file open afterwards. */
static int slot_close(struct st__ex_ctx *ctx, struct slot *s)
{
    int ret = slot_flush(ctx, s);
    if (close(s->fd) != 0 && ret == 0)
        ret = st__ex_fail(ctx, -errno, "cannot write %u.dat", (unsigned)s->t->tid);
    s->t->slot = -1;
    s->t = NULL;
    s->fd = -1;
    return ret;
}

/* A slot with t's file open for appending: a new one, or the least recently used one. */
static int slot_get(struct st__ex_ctx *ctx, struct uft *u, struct st__ex_thread *t, struct slot **out)
{
    int idx;
    if (u->nslots < u->maxslots) {
        struct slot *s = malloc(sizeof *s);
        if (!s)
            return -ENOMEM;
        s->t = NULL;
        s->len = 0;
        idx = (int)u->nslots;
        u->slots[u->nslots++] = s;
    } else {
        idx = 0;
        for (unsigned i = 1; i < u->nslots; i++)
            if (u->slots[i]->used < u->slots[idx]->used)
                idx = (int)i;
        int ret = slot_close(ctx, u->slots[idx]);
        if (ret < 0)
            return ret;
    }
    struct slot *s = u->slots[idx];
    char name[32];
    snprintf(name, sizeof name, "%u.dat", (unsigned)t->tid);
    s->fd = openat(u->out.dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (s->fd < 0)
        return st__ex_fail(ctx, -errno, "cannot create %s/%s", u->out.tmp, name);
    s->t = t;
    t->slot = idx;
    *out = s;
    return 0;
}

/* Appends len bytes of records to slot s (room made by flushing). */
static int slot_put(struct st__ex_ctx *ctx, struct uft *u, struct slot *s, const void *recs, size_t len)
{
    if (s->len + len > SLOT_BYTES) {
        int ret = slot_flush(ctx, s);
        if (ret < 0)
            return ret;
    }
    memcpy(s->buf + s->len, recs, len);
    s->len += len;
    s->used = ++u->tick;
    return 0;
}

/* Gives t an open file and moves its held records there. */
static int take_slot(struct st__ex_ctx *ctx, struct uft *u, struct st__ex_thread *t)
{
    struct slot *s = NULL;
    int ret = slot_get(ctx, u, t, &s);
    if (ret == 0 && t->npend)
        ret = slot_put(ctx, u, s, t->pend, t->npend);
    t->npend = 0;
    return ret;
}

/* Appends one record to t's file: through its open file, or held until it needs one. */
static int put(struct st__ex_ctx *ctx, struct st__ex_thread *t, uint64_t ts, unsigned type, uint32_t depth,
               uint64_t addr)
{
    struct uft *u = ctx->out;
    uint64_t rec[2] = {ts, st__uft_rec_data(type, depth, addr)};
    t->written++;
    if (t->slot >= 0)
        return slot_put(ctx, u, u->slots[t->slot], rec, sizeof rec);
    if (!t->pend && !(t->pend = malloc(PEND_BYTES)))
        return -ENOMEM;
    memcpy(t->pend + t->npend, rec, sizeof rec);
    t->npend += sizeof rec;
    return t->npend == PEND_BYTES ? take_slot(ctx, u, t) : 0;
}

/* Writes every held record, then closes every file. */
static int close_all_slots(struct st__ex_ctx *ctx, struct uft *u)
{
    int ret = 0;
    for (size_t i = 0; i < ctx->nthreads && ret == 0; i++)
        if (ctx->threads[i]->npend)
            ret = take_slot(ctx, u, ctx->threads[i]);
    for (unsigned i = 0; i < u->nslots; i++)
        if (u->slots[i]->t) {
            int e = slot_close(ctx, u->slots[i]);
            ret = ret ? ret : e;
        }
    return ret;
}

/* --- the writer interface ------------------------------------------------------------ */

/* A session id from the process's trace name and index: stable output for the same input. */
static void make_sid(const struct st__ex_process *p, char sid[17])
{
    uint64_t h = UINT64_C(0xcbf29ce484222325) ^ p->index;
    for (const char *c = p->trace ? p->trace : "-"; *c; c++)
        h = (h ^ (unsigned char)*c) * UINT64_C(0x100000001b3);
    snprintf(sid, 17, "%016" PRIx64, h);
}

/*
 * Whether path can be uftrace's exename: absolute, short enough, and made of
 * bytes that task.txt ("exename=\"PATH\"") and the map lines (fields split
 * on blanks) keep whole.
 */
static bool usable_exe(const char *path)
{
    size_t n = strlen(path);
    if (path[0] != '/' || n >= ST_UFT_NAME_MAX || path[n - 1] == '/')
        return false;
    for (const unsigned char *c = (const unsigned char *)path; *c; c++)
        if (*c <= ' ' || *c == '"' || *c == '\\' || *c == 0x7f)
            return false;
    return true;
}

/* The executable uftrace names p's tasks after: the traced one as recorded, else a path of ours naming the program. */
static void make_exe(const struct st__ex_process *p, char exe[PATH_MAX])
{
    if (p->have_desc && usable_exe(p->exe)) {
        snprintf(exe, PATH_MAX, "%s", p->exe);
        return;
    }
    int n = snprintf(exe, PATH_MAX, "/simpletrace/%.200s", st__ex_program(p));
    for (char *c = exe + 13; c < exe + n; c++)
        if (*c == '/')
            *c = '_';
}

/* An existing directory is replaced only if it holds nothing but uftrace data. */
static bool is_uftrace_file(const char *name)
{
    return st__uft_is_data_file(name);
}

static const struct st__ex_dir_kind uftrace_dir = {.what = "uftrace data", .ours = is_uftrace_file};

/* Open files allowed: the option, within what RLIMIT_NOFILE leaves. */
static unsigned max_slots(const struct st__export_options *o)
{
    unsigned n = o->max_open_files ? o->max_open_files : DEFAULT_OPEN_FILES;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)n + 16)
        n = rl.rlim_cur > 17 ? (unsigned)rl.rlim_cur - 16 : 1;
    return n;
}

static int uft_open(struct st__ex_ctx *ctx)
{
    struct uft *u = calloc(1, sizeof *u);
    if (!u)
        return -ENOMEM;
    ctx->out = u;
    u->out.dirfd = -1;
    if (!ctx->opts->output || !*ctx->opts->output)
        return st__ex_fail(ctx, -EINVAL, "no output directory");
    u->maxslots = max_slots(ctx->opts);
    u->slots = calloc(u->maxslots, sizeof *u->slots);
    if (!u->slots || st__ex_reserve(&u->event_used, &u->capused, ctx->ncat, 1) < 0)
        return -ENOMEM;
    return st__ex_dir_open(ctx, &u->out, ctx->opts->output, &uftrace_dir);
}

static int uft_grow(struct st__ex_ctx *ctx)
{
    struct uft *u = ctx->out;
    return st__ex_reserve(&u->event_used, &u->capused, ctx->ncat, 1);
}

/* -EEXIST, saying that two processes a and b share the id of a thread or process (what). */
static int refuse(struct st__ex_ctx *ctx, const char *what, uint32_t id, const struct st__ex_process *a,
                  const struct st__ex_process *b)
{
    snprintf(ctx->err, ctx->errlen,
             "%s %u is in %s and in %s (traces of two hosts?): uftrace tells them apart only by id; export these traces "
             "separately, or to chrome",
             what, (unsigned)id, a->trace ? a->trace : "-", b->trace ? b->trace : "-");
    return -EEXIST;
}

/* Its file is created with its first record; its name, TID.dat, must be its own. */
static int uft_thread_new(struct st__ex_ctx *ctx, struct st__ex_thread *t)
{
    for (size_t i = 0; i < ctx->nthreads; i++) {
        const struct st__ex_thread *o = ctx->threads[i];
        if (o != t && o->tid == t->tid)
            return refuse(ctx, "thread", t->tid, o->proc, t->proc);
    }
    return 0;
}

static uint64_t func_addr(uint32_t func)
{
    return SYM_BASE + SYM_FIRST + SYM_SIZE * func;
}

static int uft_enter(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                     uint32_t depth, uint64_t ts)
{
    (void)rec;
    return put(ctx, t, ts, ST_UFT_REC_ENTRY, depth, func_addr(func));
}

static int uft_exit(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                    uint32_t depth, uint64_t ts)
{
    (void)rec;
    return put(ctx, t, ts, ST_UFT_REC_EXIT, depth, func_addr(func));
}

static int uft_instant(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t depth,
                       uint64_t ts)
{
    struct uft *u = ctx->out;
    u->event_used[rec->event->index] = 1;
    return put(ctx, t, ts, ST_UFT_REC_EVENT, depth, ST_UFT_EVENT_ID_USER + rec->event->index);
}

static int uft_lost(struct st__ex_ctx *ctx, struct st__ex_thread *t, uint64_t count, uint32_t depth, uint64_t ts)
{
    return put(ctx, t, ts, ST_UFT_REC_LOST, depth, count);
}

/* --- metadata --------------------------------------------------------------------------- */

/* Writes what fill() prints into out as file name of the temporary directory. */
static int put_text(struct st__ex_ctx *ctx, const char *name, int (*fill)(struct st__ex_ctx *, FILE *, const void *),
                    const void *arg)
{
    struct uft *u = ctx->out;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        return -ENOMEM;
    int ret = fill(ctx, out, arg);
    if (!ret && ferror(out))
        ret = -ENOMEM;
    if (fclose(out) != 0 && !ret)
        ret = -ENOMEM;
    if (!ret && (ret = st__uft_put_file(u->out.dirfd, name, buf, len)) < 0)
        st__ex_fail(ctx, ret, "cannot write %s/%s", u->out.tmp, name);
    free(buf);
    return ret;
}

static int fill_sym(struct st__ex_ctx *ctx, FILE *out, const void *arg)
{
    (void)arg;
    struct st__uft_symw w = {0};
    for (size_t i = 0; i < ctx->pairs.nfuncs; i++)
        (void)st__uft_sym_add(&w, out, func_addr((uint32_t)i) - SYM_BASE, SYM_SIZE, ctx->pairs.names[i]);
    st__uft_sym_finish(&w, out);
    return 0;
}

/* The map of process arg. */
static int fill_map(struct st__ex_ctx *ctx, FILE *out, const void *arg)
{
    char exe[PATH_MAX];
    uint64_t end = func_addr((uint32_t)ctx->pairs.nfuncs);
    end = (end + 0xfff) & ~UINT64_C(0xfff);
    make_exe(arg, exe);
    st__uft_map_line(out, SYM_BASE, end, "r-xp", exe);
    st__uft_map_stack(out);
    return 0;
}

static int fill_events(struct st__ex_ctx *ctx, FILE *out, const void *arg)
{
    (void)arg;
    struct uft *u = ctx->out;
    size_t dropped = st_catalog_dropped(ctx->cat)->index; /* never an instant: skipped wherever it is */
    for (size_t i = 0; i < ctx->ncat; i++)
        if (u->event_used[i] && i != dropped)
            (void)st__uft_event_line(out, ST_UFT_EVENT_ID_USER + (unsigned)i, PROVIDER,
                                     st_catalog_event(ctx->cat, i)->name);
    return 0;
}

/* The session of p starts no later than any of its threads' first record. */
static uint64_t sess_time(const struct st__ex_ctx *ctx, const struct st__ex_process *p)
{
    uint64_t ts = UINT64_MAX;
    for (size_t i = 0; i < ctx->nthreads; i++)
        if (ctx->threads[i]->proc == p && ctx->threads[i]->first_ts < ts)
            ts = ctx->threads[i]->first_ts;
    return ts == UINT64_MAX ? 0 : ts;
}

/* The process id of p's session. */
static int sess_pid(const struct st__ex_ctx *ctx, const struct st__ex_process *p)
{
    int pid = (int)st__ex_process_id(p);
    for (size_t i = 0; pid <= 0 && i < ctx->nthreads; i++)
        if (ctx->threads[i]->proc == p)
            pid = (int)ctx->threads[i]->tid; /* no thread ids (v0): the one stand-in thread */
    return pid > 0 ? pid : 1;
}

/* Sessions are told apart by process id: two processes with one (two hosts) are refused. */
static int check_pids(struct st__ex_ctx *ctx)
{
    for (size_t i = 0; i < ctx->nprocs; i++)
        for (size_t j = 0; j < i; j++)
            if (sess_pid(ctx, ctx->procs[i]) == sess_pid(ctx, ctx->procs[j]))
                return refuse(ctx, "process", (uint32_t)sess_pid(ctx, ctx->procs[i]), ctx->procs[j], ctx->procs[i]);
    return 0;
}

static int fill_tasks(struct st__ex_ctx *ctx, FILE *out, const void *arg)
{
    (void)arg;
    for (size_t k = 0; k < ctx->nprocs; k++) {
        const struct st__ex_process *p = ctx->procs[k];
        char sid[17], exe[PATH_MAX];
        int pid = sess_pid(ctx, p);
        make_sid(p, sid);
        make_exe(p, exe);
        st__uft_task_sess(out, sess_time(ctx, p), pid, sid, exe);
        for (size_t i = 0; i < ctx->nthreads; i++)
            if (ctx->threads[i]->proc == p)
                st__uft_task_task(out, ctx->threads[i]->first_ts, (int)ctx->threads[i]->tid, pid);
    }
    return 0;
}

static bool any_event(const struct st__ex_ctx *ctx)
{
    const struct uft *u = ctx->out;
    for (size_t i = 0; i < ctx->ncat; i++)
        if (u->event_used[i])
            return true;
    return false;
}

static int fill_info(struct st__ex_ctx *ctx, FILE *out, const void *arg)
{
    (void)arg;
    int *tids = malloc((ctx->nthreads + 1) * sizeof *tids);
    if (!tids)
        return -ENOMEM;
    for (size_t i = 0; i < ctx->nthreads; i++)
        tids[i] = (int)ctx->threads[i]->tid;
    /* The recording date: the first record's wall time when the first process's trace has an anchor, else the
     * file's; the duration, first to last record. The program and its command line: the first process's. */
    const struct st__ex_process *first = ctx->procs[0];
    char date[64] = "", elapsed[64], exe[PATH_MAX];
    struct stat st;
    struct tm tm;
    time_t start = first->anchor_real_ns
                       ? (time_t)((first->anchor_real_ns - first->anchor_mono_ns + ctx->first_ts) / 1000000000u)
                       : 0;
    if (!start && ctx->opts->trace_name && stat(ctx->opts->trace_name, &st) == 0)
        start = st.st_mtime;
    if (start && localtime_r(&start, &tm))
        strftime(date, sizeof date, "%a %b %e %H:%M:%S %Y", &tm);
    uint64_t ns = ctx->last_ts - ctx->first_ts;
    snprintf(elapsed, sizeof elapsed, "%" PRIu64 ".%09" PRIu64 " sec", ns / 1000000000u, ns % 1000000000u);
    make_exe(first, exe);
    struct st__uft_info info = {
        .feat = ST_UFT_FEAT_TASK_SESSION | ST_UFT_FEAT_MAX_STACK | (any_event(ctx) ? ST_UFT_FEAT_EVENT : 0),
        .max_stack = (uint16_t)(!ctx->opts->max_depth ? 1024 : ctx->opts->max_depth > 65535 ? 65535
                                                                                            : ctx->opts->max_depth),
        .exename = exe,
        .cmdline = ctx->nprocs == 1 && first->have_desc && first->cmdline[0] ? first->cmdline : ctx->opts->cmdline,
        .tids = tids,
        .ntids = ctx->nthreads,
        .record_date = date[0] ? date : NULL,
        .elapsed = elapsed,
        .version = "simpletrace export " SIMPLETRACE_VERSION_STRING,
    };
    int ret = st__uft_info_write(out, &info);
    free(tids);
    return ret;
}

/* Whether an earlier process than k has an exename of the same basename: its .sym file is written already. */
static bool sym_written(const struct st__ex_ctx *ctx, size_t k)
{
    char a[PATH_MAX], b[PATH_MAX];
    make_exe(ctx->procs[k], b);
    for (size_t i = 0; i < k; i++) {
        make_exe(ctx->procs[i], a);
        if (!strcmp(st__ex_basename(a), st__ex_basename(b)))
            return true;
    }
    return false;
}

/* The names (functions, and events used) longer than uftrace reads: the writers cut them. */
static uint64_t names_cut(const struct st__ex_ctx *ctx)
{
    struct uft *u = ctx->out;
    uint64_t n = 0;
    for (size_t i = 0; i < ctx->pairs.nfuncs; i++)
        n += strlen(ctx->pairs.names[i]) > ST_UFT_NAME_MAX;
    for (size_t i = 0; i < st_catalog_count(ctx->cat); i++)
        n += u->event_used[i] && strlen(st_catalog_event(ctx->cat, i)->name) > ST_UFT_NAME_MAX;
    return n;
}

/* Per process: its .sym file (one per program) and its map. */
static int put_sessions(struct st__ex_ctx *ctx)
{
    int ret = 0;
    for (size_t k = 0; k < ctx->nprocs && ret == 0; k++) {
        char exe[PATH_MAX], sid[17], sym[NAME_MAX + 1], map[64];
        make_exe(ctx->procs[k], exe);
        make_sid(ctx->procs[k], sid);
        snprintf(sym, sizeof sym, "%s.sym", st__ex_basename(exe));
        snprintf(map, sizeof map, "sid-%s.map", sid);
        if (!sym_written(ctx, k))
            ret = put_text(ctx, sym, fill_sym, NULL);
        if (!ret)
            ret = put_text(ctx, map, fill_map, ctx->procs[k]);
    }
    return ret;
}

static int uft_finish(struct st__ex_ctx *ctx)
{
    struct uft *u = ctx->out;
    int ret = close_all_slots(ctx, u);
    if (!ret)
        ret = check_pids(ctx);
    if (!ret)
        ret = put_sessions(ctx);
    ctx->sum->names_cut = names_cut(ctx);
    if (!ret && any_event(ctx))
        ret = put_text(ctx, "events.txt", fill_events, NULL);
    if (!ret)
        ret = put_text(ctx, "task.txt", fill_tasks, NULL);
    if (!ret)
        ret = put_text(ctx, "info", fill_info, NULL);
    return ret ? ret : st__ex_dir_install(ctx, &u->out);
}

static void uft_discard(struct st__ex_ctx *ctx)
{
    struct uft *u = ctx->out;
    if (!u)
        return;
    for (unsigned i = 0; i < u->nslots; i++) {
        if (u->slots[i]->t) {
            close(u->slots[i]->fd);
            u->slots[i]->t->slot = -1;
        }
        free(u->slots[i]);
    }
    for (size_t i = 0; i < ctx->nthreads; i++) {
        free(ctx->threads[i]->pend);
        ctx->threads[i]->pend = NULL;
    }
    st__ex_dir_discard(&u->out);
    free(u->slots);
    free(u->event_used);
    free(u);
    ctx->out = NULL;
}

const struct st__ex_writer st__ex_uftrace_writer = {
    .open = uft_open,
    .grow = uft_grow,
    .thread_new = uft_thread_new,
    .enter = uft_enter,
    .exit = uft_exit,
    .instant = uft_instant,
    .lost = uft_lost,
    .finish = uft_finish,
    .discard = uft_discard,
};
