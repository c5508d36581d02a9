/*
 * simpletrace recover [--pid=N] [--trace=FILE] [--keep] [--compress=zstd[:LEVEL]|off] DIR|RING-FILE... -o TRACE
 *
 * The front end of recover (src/recover/recover.h, which says what is
 * recovered and how): finds the ring files (st-*.ring in each DIR), maps
 * them, the --trace file (whose identity chooses the process; plain or
 * compressed) and the names file next to the first ring of the process
 * recovered, prints the module's messages, writes its output (in place
 * once complete; an output that is one of the inputs is refused first;
 * compressed as compress=zstd writes with --compress=zstd or a TRACE
 * named *.zst, out_compress.h), then removes that process's ring files
 * and names file (--keep keeps them).
 *
 * Exit status: 0 done, 1 nothing usable or I/O error, 2 usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "help_texts.h"
#include "crash_format.h"
#include "out_compress.h"
#include "out_file.h"
#include "process_gone.h"
#include "recover.h"

#define PROG "simpletrace recover"

/* A file mapped read-only (len 0: nothing mapped). */
struct mapped {
    char *path;
    const uint8_t *data;
    size_t len;
    uint64_t dev, ino;
};

/* The ring files named on the command line. */
struct files {
    struct mapped *v;
    size_t n, cap;
};

/* Maps path into *m; 0 or -errno. */
static int map_file(const char *path, struct mapped *m)
{
    struct stat st;
    void *p = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC), err;

    memset(m, 0, sizeof *m);
    if (fd < 0 || fstat(fd, &st) != 0)
        goto fail;
    if (st.st_size > 0 && (p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED)
        goto fail;
    m->path = strdup(path);
    if (!m->path) {
        errno = ENOMEM;
        goto fail_unmap;
    }
    close(fd);
    m->data = p;
    m->len = (size_t)st.st_size;
    m->dev = (uint64_t)st.st_dev;
    m->ino = (uint64_t)st.st_ino;
    return 0;
fail_unmap:
    munmap(p, (size_t)st.st_size);
fail:
    err = -errno;
    if (fd >= 0)
        close(fd);
    return err;
}

static void unmap_file(struct mapped *m)
{
    if (m->len)
        munmap((void *)m->data, m->len);
    free(m->path);
    memset(m, 0, sizeof *m);
}

/* Maps one ring file into the list; 0, or -1 (said why). */
static int add_file(struct files *f, const char *path)
{
    int err;

    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        struct mapped *v = realloc(f->v, cap * sizeof *v);
        if (!v) {
            fprintf(stderr, "%s: %s\n", PROG, strerror(ENOMEM));
            return -1;
        }
        f->v = v;
        f->cap = cap;
    }
    if ((err = map_file(path, &f->v[f->n])) < 0) {
        fprintf(stderr, "%s: %s: %s\n", PROG, path, strerror(-err));
        return -1;
    }
    f->n++;
    return 0;
}

static bool is_ring_name(const char *n)
{
    size_t len = strlen(n);

    return strncmp(n, "st-", 3) == 0 && len > 8 && strcmp(n + len - 5, ".ring") == 0;
}

/* Maps every st-*.ring of dir. */
static void add_dir(struct files *f, const char *dir)
{
    struct dirent *e;
    DIR *d = opendir(dir);

    if (!d) {
        fprintf(stderr, "%s: %s: %s\n", PROG, dir, strerror(errno));
        return;
    }
    while ((e = readdir(d))) {
        char path[PATH_MAX];
        if (is_ring_name(e->d_name) && snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
            add_file(f, path);
    }
    closedir(d);
}

/* The hooks' context: the output, once open. */
struct out {
    struct cli_sink sink;
};

static void say(void *ctx, const struct st__recover_msg *m)
{
    (void)ctx;
    fprintf(stderr, "%s: %s\n", PROG, m->text);
}

static int put(void *ctx, const void *p, size_t n)
{
    struct out *o = ctx;

    return cli_sink_write(&o->sink, p, n);
}

/* The names file of the process: st-PID.names next to its first ring. */
static void names_path(const struct st__recover *rec, char *path, size_t len)
{
    const char *first = st__recover_first_name(rec), *slash = strrchr(first, '/');

    snprintf(path, len, "%.*sst-%lu.names", slash ? (int)(slash + 1 - first) : 0, first,
             (unsigned long)st__recover_pid(rec));
}

/* Maps the names file at path (false: none, said why). */
static bool map_names(const char *path, struct mapped *m)
{
    int err;

    if ((err = map_file(path, m)) < 0) {
        fprintf(stderr, "%s: %s: %s (events will be named st_unknown_ID)\n", PROG, path, strerror(-err));
        return false;
    }
    return true;
}

/* --help: doc/simpletrace-recover.1.txt, also the man page. */

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "%s: ", PROG);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'simpletrace recover --help'.\n");
    return 2;
}

/* What the command line asked for. */
struct args {
    const char *trace, *out;
    long pid;
    bool keep;
    int level; /* the output's compression level, 0: plain */
};

static int parse_pid(const char *arg, long *pid)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(arg, &end, 10);
    if (errno || end == arg || *end || *arg == '-' || v > UINT32_MAX)
        return usage_error("bad process id '%s' (a decimal number)", arg);
    *pid = (long)v;
    return 0;
}

/* Parses options into *a; -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        {"pid", required_argument, NULL, 'p'}, {"trace", required_argument, NULL, 't'},
        {"output", required_argument, NULL, 'o'}, {"keep", no_argument, NULL, 'k'},
        {"compress", required_argument, NULL, 'z'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *compress = NULL;
    int c, ret = 0;

    *a = (struct args){NULL, NULL, -1, false, 0};
    opterr = 0;
    optind = 1;
    while (ret == 0 && (c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'p': ret = parse_pid(optarg, &a->pid); break;
        case 't': a->trace = optarg; break;
        case 'o': a->out = optarg; break;
        case 'k': a->keep = true; break;
        case 'z': compress = optarg; break;
        case 'h': fputs(st__help_recover, stdout); return 0;
        case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (ret)
        return ret;
    if (!a->out)
        return usage_error("%s", "-o TRACE is missing (the file to write the recovered trace to)");
    if (cli_compress_level(compress, a->out, &a->level) < 0)
        return usage_error("invalid --compress '%s': " CLI_COMPRESS_WANT, compress);
    if (optind >= argc)
        return usage_error("%s", "DIR is missing (the crash=DIR directory, or ring files)");
    return -1;
}

/*
 * Writes the recovered trace to a->out through o: a temporary file renamed
 * into place once complete (out_file.h), so a failure leaves a->out as it
 * was and a symbolic link there is replaced, never written through;
 * compressed when asked. 0 or 1 (said why).
 */
static int write_out(struct st__recover *rec, const struct args *a, const struct st__recover_trace *tr,
                     const char *names, struct out *o)
{
    struct mapped nm;
    struct st__recover_image names_img = {0};
    struct st__recover_stats s;
    struct st__out_file of;
    bool have_names = map_names(names, &nm);
    int err, ret = 1;

    if (have_names)
        names_img = (struct st__recover_image){nm.path, nm.data, nm.len};
    if ((err = st__out_file_open(&of, a->out)) < 0) {
        fprintf(stderr, "%s: %s: %s\n", PROG, a->out, strerror(-err));
        goto out;
    }
    cli_sink_init(&o->sink, of.fd, a->level);
    err = st__recover_write(rec, have_names ? &names_img : NULL, a->trace ? tr : NULL, &s);
    if (!err)
        err = cli_sink_finish(&o->sink);
    cli_sink_free(&o->sink);
    if (!err)
        err = st__out_file_commit(&of);
    else
        st__out_file_discard(&of);
    if (err) {
        fprintf(stderr, "%s: writing %s: %s\n", PROG, a->out, strerror(-err));
        goto out;
    }
    fprintf(stderr, "%s: pid %lu: %llu records of %zu threads, %llu dropped, written to %s%s\n", PROG,
            (unsigned long)s.pid, (unsigned long long)s.events, s.threads, (unsigned long long)s.drops, a->out,
            a->level ? " (zstd)" : "");
    ret = 0;
out:
    if (have_names)
        unmap_file(&nm);
    return ret;
}

/* Removes path, adding the space it took to *freed; false (said why) when it cannot. */
static bool remove_file(const char *path, uint64_t *freed)
{
    struct stat st;

    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return true; /* never made (no names file), or gone already */
        fprintf(stderr, "%s: %s: %s (kept)\n", PROG, path, strerror(errno));
        return false;
    }
    if (unlink(path) != 0) {
        fprintf(stderr, "%s: cannot remove %s: %s\n", PROG, path, strerror(errno));
        return false;
    }
    *freed += (uint64_t)st.st_blocks * 512u;
    return true;
}

/*
 * Once the trace is written, the ring files of the process recovered are
 * only space (megabytes each): they are removed with its names file,
 * unless the process still runs (its ring files are in use).
 */
static void remove_recovered(const struct st__recover *rec, const char *names)
{
    uint32_t pid = st__recover_pid(rec);
    uint64_t freed = 0;
    size_t n = st__recover_ring_count(rec), removed = 0;

    if (!st__process_gone(pid)) {
        fprintf(stderr, "%s: pid %lu is running (or its id is another process's now): its ring files are kept\n",
                PROG, (unsigned long)pid);
        return;
    }
    for (size_t i = 0; i < n; i++)
        removed += remove_file(st__recover_ring_name(rec, i), &freed);
    bool names_gone = remove_file(names, &freed);
    fprintf(stderr, "%s: removed %zu ring file%s%s%s: %.1f MB freed (--keep keeps them)\n", PROG, removed,
            removed == 1 ? "" : "s", names_gone ? " and " : "", names_gone ? names : "", (double)freed / 1e6);
}

/*
 * Refuses an -o that is one of the inputs: the --trace file, a ring file,
 * or the names file of a ring's process (st-PID.names beside
 * st-PID-TID.ring). 0, or the exit status after the message.
 */
static int check_output(const struct args *a, const struct files *files)
{
    struct st__out_input *v = calloc(2 * files->n + 1, sizeof *v);
    char (*names)[PATH_MAX] = calloc(files->n ? files->n : 1, sizeof *names);
    char msg[3 * PATH_MAX];
    size_t n = 0;
    bool clash = false;

    if (!v || !names) {
        fprintf(stderr, "%s: %s\n", PROG, strerror(ENOMEM));
        free(v);
        free(names);
        return 1;
    }
    v[n++].path = a->trace;
    for (size_t i = 0; i < files->n; i++) {
        const char *path = files->v[i].path, *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
        unsigned long pid;
        v[n++].path = path;
        if (sscanf(base, "st-%lu-", &pid) == 1) {
            snprintf(names[i], sizeof names[i], "%.*sst-%lu.names", (int)(base - path), path, pid);
            v[n++].path = names[i];
        }
    }
    clash = st__out_is_input(a->out, false, v, n, msg, sizeof msg);
    free(v);
    free(names);
    return clash ? usage_error("%s", msg) : 0;
}

int st__cmd_recover(int argc, char **argv)
{
    struct files files = {0};
    struct st__recover_image *imgs = NULL;
    struct st__recover *rec = NULL;
    struct out o = {.sink = {.fd = -1}};
    struct st__recover_hooks hooks = {.msg = say, .write = put, .ctx = &o};
    struct mapped trace = {0};
    struct st__recover_trace tr;
    char names[PATH_MAX + 32];
    struct args a;
    int ret = parse_args(argc, argv, &a), err;

    if (ret >= 0)
        return ret;
    ret = 1;
    /* The trace file first: its identity chooses the process (recover then says it is not the file written). */
    if (a.trace && (err = map_file(a.trace, &trace)) < 0)
        fprintf(stderr, "%s: %s: %s\n", PROG, a.trace, strerror(-err));
    tr = (struct st__recover_trace){{a.trace, trace.data, trace.len}, trace.dev, trace.ino};
    for (int i = optind; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            add_dir(&files, argv[i]);
        else
            add_file(&files, argv[i]);
    }
    if ((ret = check_output(&a, &files)) != 0)
        goto out;
    ret = 1;
    imgs = calloc(files.n ? files.n : 1, sizeof *imgs);
    if (!imgs) {
        fprintf(stderr, "%s: %s\n", PROG, strerror(ENOMEM));
        goto out;
    }
    for (size_t i = 0; i < files.n; i++)
        imgs[i] = (struct st__recover_image){files.v[i].path, files.v[i].data, files.v[i].len};
    err = st__recover_open(&rec, imgs, files.n, a.pid, a.trace ? &tr : NULL, &hooks);
    if (err == -ENOENT && a.pid >= 0)
        fprintf(stderr, "%s: no ring file of pid %ld to recover\n", PROG, a.pid);
    else if (err == -ENOENT)
        fprintf(stderr, "%s: no ring file to recover\n", PROG);
    else if (err < 0)
        fprintf(stderr, "%s: %s\n", PROG, strerror(-err));
    if (err < 0)
        goto out;
    names_path(rec, names, sizeof names);
    ret = write_out(rec, &a, &tr, names, &o);
    if (ret == 0 && !a.keep)
        remove_recovered(rec, names);
out:
    st__recover_free(rec);
    free(imgs);
    for (size_t i = 0; i < files.n; i++)
        unmap_file(&files.v[i]);
    free(files.v);
    unmap_file(&trace);
    return ret;
}
