/*
 * simpletrace recover [--pid N] [--trace FILE] DIR|RING-FILE... -o TRACE
 *
 * The front end of recover (src/recover/recover.h, which says what is
 * recovered and how): finds the ring files (st-*.ring in each DIR), maps
 * them, the names file next to the first ring of the process recovered and
 * the --trace file, prints the module's messages and writes its output.
 *
 * Exit status: 0 done, 1 nothing usable or I/O error, 2 usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
#include "crash_format.h"
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
    FILE *f;
};

static void say(void *ctx, const struct st__recover_msg *m)
{
    (void)ctx;
    fprintf(stderr, "%s: %s\n", PROG, m->text);
}

static int put(void *ctx, const void *p, size_t n)
{
    struct out *o = ctx;

    errno = 0;
    return fwrite(p, 1, n, o->f) == n ? 0 : -(errno ? errno : EIO);
}

/* Maps the names file next to the first ring of the process (false: none, said why). */
static bool map_names(const struct st__recover *rec, struct mapped *m)
{
    const char *first = st__recover_first_name(rec), *slash = strrchr(first, '/');
    char path[PATH_MAX + 32];
    int err;

    snprintf(path, sizeof path, "%.*sst-%lu.names", slash ? (int)(slash + 1 - first) : 0, first,
             (unsigned long)st__recover_pid(rec));
    if ((err = map_file(path, m)) < 0) {
        fprintf(stderr, "%s: %s: %s (events will be named st_unknown_ID)\n", PROG, path, strerror(-err));
        return false;
    }
    return true;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: %s [--pid N] [--trace FILE] DIR|RING-FILE... -o TRACE\n"
                 "\n"
                 "Rebuilds a v4 trace from the ring files a program wrote with crash=DIR: the\n"
                 "records it had traced but not yet written to its trace file, and its drops.\n"
                 "  --pid N       the process to recover when DIR holds several\n"
                 "  --trace FILE  the program's trace file: records of a write cut by its death\n"
                 "                that reached FILE are left out (FILE + TRACE hold each once)\n"
                 "  -o TRACE      the file to write\n", PROG);
}

/* What the command line asked for. */
struct args {
    const char *trace, *out;
    long pid;
};

/* Parses options into *a; -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        {"pid", required_argument, NULL, 'p'}, {"trace", required_argument, NULL, 't'},
        {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;

    *a = (struct args){NULL, NULL, -1};
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': a->pid = strtol(optarg, NULL, 10); break;
        case 't': a->trace = optarg; break;
        case 'o': a->out = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc || !a->out) {
        usage(stderr);
        return 2;
    }
    return -1;
}

/* Writes the recovered trace to a->out through o; 0 or 1 (said why). */
static int write_out(struct st__recover *rec, const struct args *a, struct out *o)
{
    struct mapped names, trace = {0};
    struct st__recover_image names_img = {0};
    struct st__recover_trace tr;
    struct st__recover_stats s;
    bool have_names = map_names(rec, &names);
    int err, ret = 1;

    if (have_names)
        names_img = (struct st__recover_image){names.path, names.data, names.len};
    if (a->trace && (err = map_file(a->trace, &trace)) < 0) /* recover then says it is not the file written */
        fprintf(stderr, "%s: %s: %s\n", PROG, a->trace, strerror(-err));
    tr = (struct st__recover_trace){{a->trace, trace.data, trace.len}, trace.dev, trace.ino};
    o->f = fopen(a->out, "wb");
    if (!o->f) {
        fprintf(stderr, "%s: %s: %s\n", PROG, a->out, strerror(errno));
        goto out;
    }
    err = st__recover_write(rec, have_names ? &names_img : NULL, a->trace ? &tr : NULL, &s);
    if (fclose(o->f) != 0 && !err)
        err = -errno;
    if (err) {
        fprintf(stderr, "%s: writing %s: %s\n", PROG, a->out, strerror(-err));
        goto out;
    }
    fprintf(stderr, "%s: pid %lu: %llu records of %zu threads, %llu dropped, written to %s\n", PROG,
            (unsigned long)s.pid, (unsigned long long)s.events, s.threads, (unsigned long long)s.drops, a->out);
    ret = 0;
out:
    unmap_file(&trace);
    if (have_names)
        unmap_file(&names);
    return ret;
}

int st_cmd_recover(int argc, char **argv)
{
    struct files files = {0};
    struct st__recover_image *imgs = NULL;
    struct st__recover *rec = NULL;
    struct out o = {NULL};
    struct st__recover_hooks hooks = {.msg = say, .write = put, .ctx = &o};
    struct args a;
    int ret = parse_args(argc, argv, &a), err;

    if (ret >= 0)
        return ret;
    ret = 1;
    for (int i = optind; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            add_dir(&files, argv[i]);
        else
            add_file(&files, argv[i]);
    }
    imgs = calloc(files.n ? files.n : 1, sizeof *imgs);
    if (!imgs) {
        fprintf(stderr, "%s: %s\n", PROG, strerror(ENOMEM));
        goto out;
    }
    for (size_t i = 0; i < files.n; i++)
        imgs[i] = (struct st__recover_image){files.v[i].path, files.v[i].data, files.v[i].len};
    err = st__recover_open(&rec, imgs, files.n, a.pid, &hooks);
    if (err == -ENOENT)
        fprintf(stderr, "%s: no ring file to recover\n", PROG);
    else if (err < 0)
        fprintf(stderr, "%s: %s\n", PROG, strerror(-err));
    if (err < 0)
        goto out;
    ret = write_out(rec, &a, &o);
out:
    st__recover_free(rec);
    free(imgs);
    for (size_t i = 0; i < files.n; i++)
        unmap_file(&files.v[i]);
    free(files.v);
    return ret;
}
