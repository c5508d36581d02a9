/*
 * Exporter internals: the pairing table (pairs.c), the driver with its
 * per-thread stacks (engine.c), the writers behind one interface
 * (uftrace.c, chrome.c, perfetto.c, ctf.c, folded.c, parquet.c) and their outputs (output.c).
 *
 * Who owns what: the engine owns the context, the thread table and every
 * thread; a writer owns its own state (ctx->out) and the output files
 * until finish() installs them or discard() removes them.
 */
#ifndef ST_EXPORT_INTERNAL_H
#define ST_EXPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <simpletrace/reader.h>

#include "out_file.h"
#include "trace_format.h"
#include "write_all.h"

#include "export.h"

/* --- pairing ------------------------------------------------------------------ */

enum st__ex_role {
    ST__EX_INSTANT = 0,
    ST__EX_BEGIN = 1,       /* nests on its thread's stack */
    ST__EX_END = 2,
    ST__EX_KEYED_BEGIN = 3, /* a rule with @ARG: matched by the key's value across the process's threads */
    ST__EX_KEYED_END = 4,
};

struct st__ex_rule;

/* The pairing of a catalog: a role per event, function names by id. Both only grow (pairs.c). */
struct st__ex_pairs {
    uint8_t *role;       /* per catalog index (n entries): enum st__ex_role */
    uint32_t *func;      /* per catalog index: the function id of a BEGIN or END */
    uint8_t *key_arg;    /* per catalog index: the key's argument of a KEYED_BEGIN or KEYED_END */
    size_t n, cap;       /* catalog indices resolved (count + 1 when last grown), entries allocated */
    char **names;        /* function names, by id: new ones are appended */
    size_t nfuncs;
    struct st__ex_rule *rules; /* parsed: the caller's, then the built-in ones */
    size_t nrules, ncaller;
};

/*
 * Parses the rules (caller's, then the built-in ones unless no_defaults;
 * the caller keeps the strings for the run) and resolves them against cat
 * into *p. Returns 0, -EINVAL (a bad rule: err says which) or -ENOMEM.
 */
int st__ex_pairs_build(struct st__ex_pairs *p, const struct st_catalog *cat, const char *const *rules, size_t nrules,
                       bool no_defaults, char *err, size_t errlen);

/*
 * Resolves the rules for the events cat gained since the last call (a
 * catalog read from the trace grows): p->n becomes count + 1, roles given
 * before stay, new functions are appended. 0 or -ENOMEM.
 */
int st__ex_pairs_grow(struct st__ex_pairs *p, const struct st_catalog *cat);

/* The first caller rule that paired nothing so far, or NULL: known at the end of the run. */
const char *st__ex_pairs_unused(const struct st__ex_pairs *p);

/* Every caller rule that paired nothing so far: bit k for rule k (the first 64 rules). */
uint64_t st__ex_pairs_unused_mask(const struct st__ex_pairs *p);

/* Appends n function names name(arg, 0..n) (not deduplicated); *first gets the first one's id. 0 or -ENOMEM. */
int st__ex_pairs_add(struct st__ex_pairs *p, size_t n, const char *(*name)(const void *arg, size_t i), const void *arg,
                     uint32_t *first);

/* Frees what st__ex_pairs_build() allocated (a zeroed struct is fine). */
void st__ex_pairs_free(struct st__ex_pairs *p);

/* --- threads and the context ------------------------------------------------------ */

/*
 * One process: the inputs whose descriptions name the same pid and host
 * (st_reader_input_process()), or one input without a description.
 */
struct st__ex_process {
    size_t index;          /* order of first appearance, from 0 */
    bool have_desc;        /* its trace names it: desc_pid, program, cmdline, anchors */
    uint32_t desc_pid;
    char program[256];
    char cmdline[4096];
    char exe[1024];        /* the executable's path, as its description records it ("" if not) */
    char host[256];        /* the host's name, as its description records it ("" if not) */
    uint64_t anchor_mono_ns, anchor_real_ns;
    const char *trace;     /* the name of its first input */
    size_t in_merged_file; /* input + 1 of the file simpletrace merge wrote that holds it with others, else 0 */
    bool started;          /* it had a record: group and first_ts are set */
    uint32_t group;        /* Chrome's pid for its events: streamed before the rest is known (see chrome.c) */
    bool group_is_tid;     /* group is its first record's thread id, not a recorded process id */
    bool group_moved;      /* group is neither: the id it would have is another process's */
    uint32_t lowest_tid;   /* lowest real thread id (not the lost-drops pseudo-thread) ... */
    bool have_tid;         /* ... once a record carried one (v0 records carry none) */
    uint64_t first_ts;     /* its first record's timestamp */
};

/* One thread: a distinct pid field within one process. */
struct st__ex_thread {
    uint32_t tid;
    struct st__ex_process *proc;
    size_t index;          /* order of first appearance, from 0 */
    uint64_t first_ts;     /* its first record's (clamped) timestamp */
    uint64_t last_ts;      /* its latest timestamp: later ones never go below */
    uint32_t depth;        /* open frames: stack[0 .. depth) */
    uint32_t cap;
    uint32_t *stack;       /* function ids of the open frames, outermost first */
    uint64_t overflow;     /* begins beyond max_depth still open */
    int slot;              /* uftrace writer: its open file slot, -1 if none */
    uint64_t written;      /* uftrace writer: records in its .dat */
    uint8_t *pend;         /* uftrace writer: records held while it has no slot (it frees them) */
    uint32_t npend;        /* uftrace writer: bytes in pend */
};

/* --- keyed spans still open (keyed.c) ----------------------------------------------------- */

/* A KEYED_BEGIN waiting for its KEYED_END: same process, function and key value. */
struct st__ex_open {
    uint64_t hash;                 /* 0: an empty slot */
    struct st__ex_process *proc;
    uint32_t func;
    bool is_str;                   /* the key is a string (str, value bytes) ... */
    uint64_t value;                /* ... else this integer or pointer */
    char *str;                     /* owned, NUL-terminated */
    const struct st_arg_info *arg; /* the key's declaration in the begin event (how to show it) */
    struct st__ex_thread *t;       /* the thread of the begin */
    uint64_t begin_ts;
    uint64_t user;                 /* the writer's, set by its async_begin */
};

struct st__ex_keyed {
    struct st__ex_open *slots; /* cap slots, a power of two */
    size_t cap, n;
};

/* The open span of (proc, func, v), or NULL. */
struct st__ex_open *st__ex_keyed_find(const struct st__ex_keyed *k, const struct st__ex_process *proc, uint32_t func,
                                      const struct st_value *v);

/*
 * The open span of (proc, func, v) into *out: 1 when it was open, 0 when it
 * is new (fields beyond the key zeroed, arg set), -ENOMEM. *out is valid
 * until the next change to k.
 */
int st__ex_keyed_get(struct st__ex_keyed *k, struct st__ex_process *proc, uint32_t func, const struct st_value *v,
                     const struct st_arg_info *arg, struct st__ex_open **out);

/* Ends o (a slot of k). */
void st__ex_keyed_remove(struct st__ex_keyed *k, struct st__ex_open *o);

void st__ex_keyed_free(struct st__ex_keyed *k);

/* Why the engine closes a frame itself (ctx->closing). */
enum st__ex_close {
    ST__EX_CLOSE_NEVER_ENDED, /* open at the end of the trace */
    ST__EX_CLOSE_EARLY,       /* an outer frame's end came first */
    ST__EX_CLOSE_KEY_REUSED,  /* a keyed span whose key began again before it ended */
};

struct st__ex_writer;

/* One export run. */
struct st__ex_ctx {
    const struct st__export_options *opts;
    const struct st_catalog *cat;
    size_t ncat;           /* catalog indices the pairs and the writer cover: count + 1 when last grown */
    struct st__ex_pairs pairs;
    struct st__export_summary *sum;
    bool have_record;      /* first_ts is set */
    uint64_t first_ts;     /* of the whole export */
    uint64_t last_ts;      /* latest timestamp seen: where unfinished frames end */
    struct st__ex_process **procs; /* by index */
    size_t nprocs;
    struct st__ex_process **input_proc; /* by reader input: its process, once it had a record */
    size_t ninputs;
    struct st__ex_thread **threads; /* by index */
    size_t nthreads;
    bool closing;          /* the engine is closing frames itself (never ended, closed early) ... */
    enum st__ex_close close_reason; /* ... for this reason */
    struct st__ex_keyed keyed;      /* keyed spans open now */
    const struct st__ex_writer *w;
    void *out;             /* the writer's state */
    char *err;             /* where writers put their messages */
    size_t errlen;
};

/*
 * A writer. Every function returns 0 or a negative errno (with a message in
 * ctx->err for anything but -ENOMEM). rec is the record being converted
 * (NULL for a call of the function trace, and for frames the engine closes
 * itself: ctx->closing tells those); depth is the frame's depth
 * (0 outermost; an EXIT gets its ENTRY's) or, for instants and marks, the
 * number of open frames.
 *
 * Catalogs that grow (reader.h): the writer's tables per catalog index
 * and per function cover ctx->ncat indices and ctx->pairs.nfuncs
 * functions after open() and after every grow(); the engine calls grow()
 * when a record's event lies beyond them (before that record) and before
 * finish(). Ids and names already written never change: new ones are
 * appended.
 */
struct st__ex_writer {
    int (*open)(struct st__ex_ctx *ctx);
    int (*grow)(struct st__ex_ctx *ctx);    /* ctx->ncat or ctx->pairs.nfuncs grew: extend the tables */
    int (*thread_new)(struct st__ex_ctx *ctx, struct st__ex_thread *t);
    int (*enter)(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                 uint32_t depth, uint64_t ts);
    int (*exit)(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t func,
                uint32_t depth, uint64_t ts);
    int (*instant)(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint32_t depth,
                   uint64_t ts);
    int (*lost)(struct st__ex_ctx *ctx, struct st__ex_thread *t, uint64_t count, uint32_t depth, uint64_t ts);
    /* A keyed span begins (o: its key and begin; the writer may set o->user), and ends: rec is its end
     * record, NULL when the engine closes it (ctx->closing). NULL in writers without async spans: their
     * begin and end records are instants. */
    int (*async_begin)(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                       struct st__ex_open *o, uint64_t ts);
    int (*async_end)(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec,
                     const struct st__ex_open *o, uint64_t ts);
    /* A record the nesting rules leave out (a begin beyond max_depth, an end closing one; never a call of
     * the function trace): writers of every record (ctf) write it; NULL for the others. */
    int (*skipped)(struct st__ex_ctx *ctx, struct st__ex_thread *t, const struct st_record *rec, uint64_t ts);
    int (*finish)(struct st__ex_ctx *ctx);  /* all records done: write the rest, put the output in place */
    void (*discard)(struct st__ex_ctx *ctx); /* after an error, or after finish: remove what is left, free */
};

extern const struct st__ex_writer st__ex_uftrace_writer;
extern const struct st__ex_writer st__ex_chrome_writer;
extern const struct st__ex_writer st__ex_perfetto_writer;
extern const struct st__ex_writer st__ex_ctf_writer;
extern const struct st__ex_writer st__ex_folded_writer;
extern const struct st__ex_writer st__ex_parquet_writer;

/* --- helpers shared by the writers (engine.c) ----------------------------------------- */

/*
 * Makes *arr (elements of size elem, *cap allocated) hold at least n,
 * doubling, the new ones zeroed. 0 or -ENOMEM (*arr unchanged).
 */
int st__ex_reserve(void *arr, size_t *cap, size_t n, size_t elem);

/* Writes a message "what: strerror" into ctx->err and returns err (negative errno). */
int st__ex_fail(struct st__ex_ctx *ctx, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));


/* The last path component of path ("-" gives "stdin"). */
const char *st__ex_basename(const char *path);

/*
 * The process id shown: the one the trace's description names; for a trace
 * without one (QEMU's, older simpletrace's), the lowest thread id, which is
 * the process id when the main thread traced. 0: neither is known (v0).
 */
uint32_t st__ex_process_id(const struct st__ex_process *p);

/* The program's name: the description's, else ST__EX_PROGRAM. */
const char *st__ex_program(const struct st__ex_process *p);

/*
 * A process's name as the exports show it (in buf, len >= 600), once the
 * whole trace is read: its program; for a trace that does not record its
 * process, "unknown-program (trace NAME)" when its group (the id its
 * tracks are grouped under, streamed before the rest is known) is also its
 * lowest thread id, else a note that the process id is not recorded; and
 * a note when another process had its id (group_moved).
 */
void st__ex_process_label(const struct st__ex_process *p, char *buf, size_t len);

/* --- outputs that appear complete or not at all (output.c) ----------------------------- */

/* A file written under a temporary name next to path and renamed into place (common/out_file.h). */
struct st__ex_file {
    const char *path;        /* the output, as given (the caller keeps it) */
    struct st__out_file out; /* out.fd: the temporary being written, -1 once installed or removed */
};

/* Makes f safe to discard before it is opened. */
void st__ex_file_init(struct st__ex_file *f);

/* Creates f's temporary next to path (a new file's mode). 0 or -errno with a message. */
int st__ex_file_open(struct st__ex_ctx *ctx, struct st__ex_file *f, const char *path);

/* Closes the temporary and renames it to the path. 0 or -errno with a message. */
int st__ex_file_install(struct st__ex_ctx *ctx, struct st__ex_file *f);

/* Closes and removes what is left (nothing after an install). */
void st__ex_file_discard(struct st__ex_file *f);

/* What a writer's output directory holds: an existing one is replaced only if it holds nothing else. */
struct st__ex_dir_kind {
    const char *what;                 /* for messages: "uftrace data", "a CTF trace's file" */
    bool (*ours)(const char *name);   /* a file name the writer writes */
    bool (*ours_dir)(const char *name); /* a directory name it makes (all it holds must be ours too), or NULL */
};

/* A directory filled under a temporary name next to path, then put in its place. */
struct st__ex_dir {
    const char *path;      /* the output, as given (the caller keeps it) */
    char *tmp;             /* the directory being filled (or the old one swapped out); NULL: nothing to remove */
    int dirfd;             /* of tmp while filling, else -1 */
    bool replace;          /* path exists (holding only the kind's files) */
    const struct st__ex_dir_kind *kind;
};

/*
 * Checks what is at path (nothing, or a directory of kind's files only:
 * else -EEXIST or -ENOTDIR with a message) and makes the temporary
 * directory (d->dirfd open on it). 0 or -errno with a message.
 */
int st__ex_dir_open(struct st__ex_ctx *ctx, struct st__ex_dir *d, const char *path,
                    const struct st__ex_dir_kind *kind);

/* Puts the filled directory at its path (checked again; replacing the old one). 0 or -errno with a message. */
int st__ex_dir_install(struct st__ex_ctx *ctx, struct st__ex_dir *d);

/* Removes what is left: the partial output, or the old directory an exchange swapped out. */
void st__ex_dir_discard(struct st__ex_dir *d);

/* The pid field of dropped records for events no thread could take (README "Drops"). */
#define ST__EX_LOST_TID UINT32_C(0xffffffff)

/*
 * The name of a pseudo-thread: the pid field of dropped records that no
 * thread wrote (events no thread could record; records lost because
 * writing the trace file failed, ST_PID_WRITE_LOST), or NULL for a thread.
 */
static inline const char *st__ex_pseudo_thread(uint32_t tid)
{
    if (tid == ST__EX_LOST_TID)
        return "lost events (no thread could record them)";
    if (tid == ST_PID_WRITE_LOST)
        return "lost records (writing the trace file failed)";
    return NULL;
}

/* What exports show as the program of a trace that does not say which it was. */
#define ST__EX_PROGRAM "unknown-program"

#endif /* ST_EXPORT_INTERNAL_H */
