/*
 * The metadata of a uftrace.data directory, written at exit and on every
 * flush (see /work/shared/spec/uftrace-format.md, "writer checklist"):
 *
 *   info           40-byte header + text sections (below), rewritten whole
 *   task.txt       SESS line per process, then one TASK line per thread that
 *                  has records; append-only, so forked children and exec'd
 *                  traced programs add their own lines to the same file
 *   sid-<SID>.map  this process's /proc/self/maps, verbatim (it has the
 *                  [stack] line uftrace needs to tell user from kernel)
 *   <base>.sym     symbols of the executable and of every mapped shared
 *                  object with instrumented code (symfile.h), once each
 *
 * Several processes may share the directory (fork, exec of a traced
 * program): each holds flock() on the directory while it writes, appends
 * its own task.txt lines, and rewrites `info` from the TASK lines of all of
 * them, so the last process to finish leaves a complete `info`. Whole
 * files are written to a temporary name and renamed into place.
 *
 * The directory: created if missing; if it exists it must hold nothing but
 * trace data (uftrace's file names), which is removed, or be joined by a
 * process started from a traced one (SIMPLETRACE_FUNC_JOIN). Anything else
 * is refused rather than mixed with, or deleted.
 *
 * The file formats and their writers are shared with the exporter
 * (uftrace/uftrace_write.h); this file decides what goes in them.
 */
#include <simpletrace/version.h>

#include "elfsym.h"
#include "ft.h"
#include "symfile.h"
#include "uftrace_write.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


/* What the process captured at start-up for the metadata. */
static struct {
    char exe[PATH_MAX];    /* /proc/self/exe */
    char *cmdline;         /* argv joined by spaces (the info writer escapes it) */
    time_t start_wall;     /* record_date */
    uint64_t start_mono;   /* elapsed_time origin, ns */
    bool sess_listed;      /* this process's SESS line is in task.txt */
    char **sym_done;       /* mapped paths already handled (written or not instrumented) */
    size_t nsym_done;
    unsigned char build_id[20];
    bool have_build_id;
} m;

/* --- the directory -------------------------------------------------------- */

/* Removes the trace files of an existing directory, refusing (-EEXIST)
 * when it holds anything else: everything is checked before anything goes. */
ST__NI static int clean_dir(int dirfd, const char *path, char *errbuf, size_t errlen)
{
    char name[256] = "";
    int err = st__uft_dir_check(dirfd, name, sizeof name);
    if (err == -EEXIST) {
        snprintf(errbuf, errlen, "%s exists and holds '%s', which is not trace data; "
                 "not touching it (remove it or choose another SIMPLETRACE_FUNC_DIR)", path, name);
        return err;
    }
    if (!err && (err = st__uft_dir_clear(dirfd, name, sizeof name)) != 0)
        snprintf(errbuf, errlen, "cannot remove %s/%s: %s", path, name, strerror(-err));
    return err;
}

/* mkdir -p; *created is set when the last component was made here. */
ST__NI static int make_dirs(const char *path, bool *created)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return -ENAMETOOLONG;
    *created = false;
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0755) == 0)
            *created = c == '\0';
        else if (errno != EEXIST)
            return -errno;
        *p = c;
        if (c == '\0')
            return 0;
    }
}

/*
 * Makes path usable as the output directory (absolute path in *abs_out,
 * an open descriptor in *dirfd_out). join: another process of this trace
 * owns it, keep its files. Returns 0 or a negative errno with a message.
 */
ST__NI int st__ft_dir_prepare(const char *path, bool join, char **abs_out, int *dirfd_out, bool *created,
                              char *errbuf, size_t errlen)
{
    char abs[PATH_MAX];
    if (path[0] == '/') {
        snprintf(abs, sizeof abs, "%s", path);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd) || snprintf(abs, sizeof abs, "%s/%s", cwd, path) >= (int)sizeof abs) {
            snprintf(errbuf, errlen, "cannot make %s absolute", path);
            return -ENAMETOOLONG;
        }
    }
    int err = make_dirs(abs, created);
    if (err) {
        snprintf(errbuf, errlen, "cannot create %s: %s", abs, strerror(-err));
        return err;
    }
    int fd = open(abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        err = -errno;
        snprintf(errbuf, errlen, "cannot open %s: %s", abs, strerror(errno));
        return err;
    }
    if (!join && !*created && (err = clean_dir(fd, abs, errbuf, errlen)) != 0) {
        close(fd);
        return err;
    }
    char *dup_abs = strdup(abs);
    if (!dup_abs) {
        close(fd);
        return -ENOMEM;
    }
    *abs_out = dup_abs;
    *dirfd_out = fd;
    return 0;
}

/* --- start-up capture ------------------------------------------------------- */

/* argv joined by spaces, cut where the info writer would cut it anyway;
 * NULL when memory is short. */
ST__NI static char *read_cmdline(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        return NULL;
    FILE *in = fopen("/proc/self/cmdline", "re");
    bool space = false;
    for (int c; in && (c = fgetc(in)) != EOF;) {
        fflush(out);
        if (len >= ST_UFT_CMDLINE_MAX)
            break;
        if (c == '\0') {
            space = true;
            continue;
        }
        if (space)
            fputc(' ', out);
        space = false;
        fputc(c, out);
    }
    if (in)
        fclose(in);
    fclose(out);
    return buf;
}

/* Captures what the metadata needs from the process start. */
ST__NI void st__ft_meta_start(void)
{
    ssize_t n = readlink("/proc/self/exe", m.exe, sizeof m.exe - 1);
    m.exe[n > 0 ? n : 0] = '\0';
    free(m.cmdline);
    m.cmdline = read_cmdline();
    m.start_wall = time(NULL);
    m.start_mono = st__clock_mono_ns();
    m.sess_listed = false;
}

/* --- task.txt ------------------------------------------------------------ */

/* Appends this process's new SESS/TASK lines in one write. */
ST__NI static int append_tasks(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        return -ENOMEM;
    size_t ntasks;
    struct st__ft_task *tasks = st__ft_tasks(&ntasks);
    if (!m.sess_listed)
        st__uft_task_sess(out, st__ft_sess_ns(), (int)st__ft_g.pid, st__ft_g.sid, m.exe);
    for (size_t i = 0; i < ntasks; i++)
        if (!tasks[i].listed && tasks[i].written != 0)
            st__uft_task_task(out, tasks[i].start_ns, (int)tasks[i].tid, (int)st__ft_g.pid);
    fclose(out);
    int err = 0;
    if (len) {
        int fd = openat(st__ft_g.dirfd, "task.txt", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, buf, len) != (ssize_t)len)
            err = -errno;
        if (fd >= 0)
            close(fd);
    }
    free(buf);
    if (!err) {
        m.sess_listed = true;
        for (size_t i = 0; i < ntasks; i++)
            tasks[i].listed |= tasks[i].written != 0;
    }
    return err;
}

/* The tids of every TASK line of task.txt (all processes), each once, in
 * a malloc'ed array (NULL when there are none or memory is short). */
ST__NI static int *read_tids(size_t *count)
{
    *count = 0;
    int fd = openat(st__ft_g.dirfd, "task.txt", O_RDONLY | O_CLOEXEC);
    FILE *in = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!in && fd >= 0)
        close(fd);
    int *seen = NULL;
    size_t cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    while (in && getline(&line, &lcap, in) > 0) {
        int tid;
        if (strncmp(line, "TASK ", 5) != 0 || !strstr(line, " tid=") ||
            sscanf(strstr(line, " tid=") + 5, "%d", &tid) != 1)
            continue;
        bool dup = false;
        for (size_t i = 0; i < *count && !dup; i++)
            dup = seen[i] == tid;
        if (dup)
            continue;
        if (*count == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            int *v = realloc(seen, ncap * sizeof *v);
            if (!v)
                break;
            seen = v;
            cap = ncap;
        }
        seen[(*count)++] = tid;
    }
    free(line);
    if (in)
        fclose(in);
    return seen;
}

/* --- info ------------------------------------------------------------------ */

/* Writes a whole file of the directory (temporary name, then rename). */
ST__NI static int put_file(const char *name, const char *data, size_t len)
{
    return st__uft_put_file(st__ft_g.dirfd, name, data, len);
}

/*
 * `info`: uftrace 0.13's own set of sections (bits 0-9 and 11-13), the
 * task list from task.txt (every process of the directory).
 */
ST__NI static int write_info(bool exited, int status)
{
    size_t ntids;
    int *tids = read_tids(&ntids);
    struct st__uft_host host;
    st__uft_host_collect(&host);
    char date[64], elapsed[64];
    struct tm tm;
    localtime_r(&m.start_wall, &tm);
    strftime(date, sizeof date, "%a %b %e %H:%M:%S %Y", &tm);
    uint64_t ns = st__clock_mono_ns() - m.start_mono;
    snprintf(elapsed, sizeof elapsed, "%" PRIu64 ".%09" PRIu64 " sec", ns / 1000000000u, ns % 1000000000u);
    struct st__uft_info info = {
        .feat = ST_UFT_FEAT_TASK_SESSION | ST_UFT_FEAT_SYM_REL_ADDR | ST_UFT_FEAT_MAX_STACK,
        .max_stack = (uint16_t)st__ft_g.max_depth,
        .exename = m.exe,
        .build_id = m.have_build_id ? m.build_id : NULL,
        .has_exit_status = true,
        .exit_status = exited ? (status & 0xff) << 8 : 0, /* a wait status, as uftrace gets it */
        .cmdline = m.cmdline ? m.cmdline : "",
        .host = &host,
        .tids = tids,
        .ntids = ntids,
        .record_date = date,
        .elapsed = elapsed,
        .pattern_type = "glob",
        .version = "simpletrace-func " SIMPLETRACE_VERSION_STRING,
    };
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out) {
        free(tids);
        return -ENOMEM;
    }
    int err = st__uft_info_write(out, &info);
    if (fclose(out) != 0 && !err)
        err = -ENOMEM;
    if (!err)
        err = put_file("info", buf, len);
    free(buf);
    free(tids);
    return err;
}

/* --- map and symbols ------------------------------------------------------ */

ST__NI static char *read_maps(size_t *len)
{
    char *buf = NULL;
    *len = 0;
    FILE *out = open_memstream(&buf, len);
    FILE *in = fopen("/proc/self/maps", "re");
    if (out && in) {
        char chunk[8192];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, in)) > 0)
            fwrite(chunk, 1, n, out);
    }
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    return buf;
}

ST__NI static bool sym_done(const char *path)
{
    for (size_t i = 0; i < m.nsym_done; i++)
        if (strcmp(m.sym_done[i], path) == 0)
            return true;
    return false;
}

ST__NI static void mark_sym_done(const char *path)
{
    char **v = realloc(m.sym_done, (m.nsym_done + 1) * sizeof *v);
    if (!v)
        return;
    m.sym_done = v;
    if ((v[m.nsym_done] = strdup(path)) != NULL)
        m.nsym_done++;
}

/* Writes <basename>.sym for one mapped file if it has instrumented code. */
ST__NI static int write_sym(const char *path, uint64_t page)
{
    struct st__elf_syms syms;
    bool is_exe = strcmp(path, m.exe) == 0;
    int err = st__elf_read(path, &syms);
    if (is_exe && !err && syms.build_id_len == sizeof m.build_id) {
        memcpy(m.build_id, syms.build_id, sizeof m.build_id);
        m.have_build_id = true;
    }
    if (err || (!is_exe && !syms.calls_hooks) || syms.nfuncs == 0) {
        st__elf_free(&syms);
        return 0; /* nothing of ours runs there: uftrace may read the ELF itself */
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out) {
        st__elf_free(&syms);
        return -ENOMEM;
    }
    int n = st__symfile_write(out, &syms, page);
    fclose(out);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char name[NAME_MAX + 1];
    snprintf(name, sizeof name, "%s.sym", base);
    err = n < 0 ? n : put_file(name, buf, len);
    free(buf);
    st__elf_free(&syms);
    return err;
}

/* The map file, and .sym files for mapped files not handled yet. */
ST__NI static int write_map_and_syms(void)
{
    size_t len;
    char *maps = read_maps(&len);
    if (!maps)
        return -ENOMEM;
    char name[64];
    snprintf(name, sizeof name, "sid-%s.map", st__ft_g.sid);
    int err = put_file(name, maps, len);
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    if (!m.exe[0] || !sym_done(m.exe)) { /* the executable first: info needs its build-id */
        int e = write_sym(m.exe, page);
        err = err ? err : e;
        mark_sym_done(m.exe);
    }
    for (char *line = maps, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char perms[8] = "";
        int path_at = 0;
        if (sscanf(line, "%*x-%*x %7s %*x %*x:%*x %*u %n", perms, &path_at) < 1 || !path_at)
            continue;
        const char *path = line + path_at;
        if (path[0] != '/' || !strchr(perms, 'x') || strstr(path, " (deleted)") || sym_done(path))
            continue;
        int e = write_sym(path, page);
        err = err ? err : e;
        mark_sym_done(path);
    }
    free(maps);
    return err;
}

/*
 * Writes (or refreshes) every metadata file of this process. The caller
 * holds pass_lock and has just run a pass. exited: status is the exit
 * status. Returns 0 or the first error.
 */
ST__NI int st__ft_meta_write(bool exited, int status)
{
    /* A descriptor of our own for the lock: a forked child shares the
     * inherited one, and flock() does not exclude the same open file. */
    int lock = openat(st__ft_g.dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock < 0)
        return -errno;
    if (flock(lock, LOCK_EX) != 0) {
        int err = -errno;
        close(lock);
        return err;
    }
    int err = append_tasks();
    int e = write_map_and_syms(); /* before info: it learns the build-id */
    err = err ? err : e;
    e = write_info(exited, status);
    err = err ? err : e;
    close(lock); /* releases the lock */
    st__ft_g.wrote_anything = true;
    return err;
}
