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
 */
#include "functrace/elfsym.h"
#include "functrace/ft.h"
#include "functrace/symfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef ST_FT_VERSION
#define ST_FT_VERSION "unknown"
#endif

/* uftrace `info` header fields (spec section 2). */
#define INFO_MAGIC "Ftrace!"
#define INFO_VERSION 4u
#define INFO_HEADER_SIZE 40u
#define FEAT_TASK_SESSION (1u << 1)
#define FEAT_SYM_REL_ADDR (1u << 5)
#define FEAT_MAX_STACK (1u << 6)
/* Info sections written: bits 0-9 and 11-13, uftrace 0.13's own set. */
#define INFO_MASK UINT64_C(0x3bff)

/* What the process captured at start-up for the metadata. */
static struct {
    char exe[PATH_MAX];    /* /proc/self/exe */
    char *cmdline;         /* argv joined by spaces, JSON-escaped */
    time_t start_wall;     /* record_date */
    uint64_t start_mono;   /* elapsed_time origin, ns */
    bool sess_listed;      /* this process's SESS line is in task.txt */
    char **sym_done;       /* mapped paths already handled (written or not instrumented) */
    size_t nsym_done;
    unsigned char build_id[20];
    bool have_build_id;
} m;

/* --- the directory -------------------------------------------------------- */

/* True for names uftrace (or we, for temporaries) put in a data directory. */
ST__NI static bool is_trace_file(const char *name)
{
    static const char *const patterns[] = {
        "info", "task.txt", "task", "default.opts", "events.txt", "extern.dat", "sid-*.map",
        "*.sym", "*.dbg", "[0-9]*.dat", "perf-cpu*.dat", "kernel-*", ".st-*.tmp",
    };
    for (size_t i = 0; i < sizeof patterns / sizeof *patterns; i++)
        if (fnmatch(patterns[i], name, FNM_PERIOD) == 0 ||
            (patterns[i][0] == '.' && fnmatch(patterns[i], name, 0) == 0))
            return true;
    return false;
}

/* Removes the trace files of an existing directory, refusing (-EEXIST)
 * when it holds anything else. */
ST__NI static int clean_dir(int dirfd, const char *path, char *errbuf, size_t errlen)
{
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -errno;
    }
    int err = 0;
    struct dirent *e;
    /* Check everything before deleting anything. */
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (e->d_type == DT_DIR || !is_trace_file(e->d_name)) {
            snprintf(errbuf, errlen, "%s exists and holds '%s', which is not trace data; "
                     "not touching it (remove it or choose another SIMPLETRACE_FUNC_DIR)", path, e->d_name);
            err = -EEXIST;
            break;
        }
    }
    if (!err) {
        rewinddir(d);
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                unlinkat(dirfd, e->d_name, 0) != 0 && errno != ENOENT && !err) {
                snprintf(errbuf, errlen, "cannot remove %s/%s: %s", path, e->d_name, strerror(errno));
                err = -errno;
            }
    }
    closedir(d);
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

/* Appends s to a growing buffer, JSON-escaped (uftrace pastes cmdline into
 * the chrome JSON verbatim) and always one line. */
ST__NI static void json_escape(FILE *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
}

/* uftrace reads most info lines with a 4096-byte fgets(): a longer line
 * would break the whole file, so the command line is cut well before. */
#define CMDLINE_MAX 3000

/* argv joined by spaces, JSON-escaped; NULL when memory is short. */
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
        if (len > CMDLINE_MAX - 8) /* room for one escape */
            break;
        if (c == '\0') {
            space = true;
            continue;
        }
        if (space)
            fputc(' ', out);
        space = false;
        char ch = (char)c;
        json_escape(out, &ch, 1);
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
    m.start_mono = st__clock_raw(false);
    m.sess_listed = false;
}

/* --- task.txt ------------------------------------------------------------ */

ST__NI static void print_ts(FILE *out, uint64_t ns)
{
    fprintf(out, "timestamp=%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
}

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
    if (!m.sess_listed) {
        fputs("SESS ", out);
        print_ts(out, st__ft_sess_ns());
        fprintf(out, " pid=%d sid=%s exename=\"%s\"\n", (int)st__ft_g.pid, st__ft_g.sid, m.exe);
    }
    for (size_t i = 0; i < ntasks; i++) {
        if (tasks[i].listed || tasks[i].written == 0)
            continue;
        fputs("TASK ", out);
        print_ts(out, tasks[i].start_ns);
        fprintf(out, " tid=%d pid=%d\n", (int)tasks[i].tid, (int)st__ft_g.pid);
    }
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

/* The tids of every TASK line of task.txt (all processes), comma-separated. */
ST__NI static char *read_tids(unsigned *count)
{
    *count = 0;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        return NULL;
    int fd = openat(st__ft_g.dirfd, "task.txt", O_RDONLY | O_CLOEXEC);
    FILE *in = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!in && fd >= 0)
        close(fd);
    int *seen = NULL;
    size_t nseen = 0, cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    while (in && getline(&line, &lcap, in) > 0) {
        int tid;
        if (strncmp(line, "TASK ", 5) != 0 || !strstr(line, " tid=") ||
            sscanf(strstr(line, " tid=") + 5, "%d", &tid) != 1)
            continue;
        bool dup = false;
        for (size_t i = 0; i < nseen && !dup; i++)
            dup = seen[i] == tid;
        if (dup)
            continue;
        if (nseen == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            int *v = realloc(seen, ncap * sizeof *v);
            if (!v)
                break;
            seen = v;
            cap = ncap;
        }
        seen[nseen++] = tid;
        fprintf(out, "%s%d", *count ? "," : "", tid);
        ++*count;
    }
    free(line);
    free(seen);
    if (in)
        fclose(in);
    fclose(out);
    return buf;
}

/* --- info ------------------------------------------------------------------ */

ST__NI static void put_header(FILE *out)
{
    unsigned char h[INFO_HEADER_SIZE] = {0};
    uint32_t version = INFO_VERSION;
    uint16_t hsize = INFO_HEADER_SIZE, max_stack = (uint16_t)st__ft_g.max_depth;
    uint64_t feat = FEAT_TASK_SESSION | FEAT_SYM_REL_ADDR | FEAT_MAX_STACK, mask = INFO_MASK;
    memcpy(h, INFO_MAGIC, sizeof INFO_MAGIC);  /* with its NUL: 8 bytes */
    memcpy(h + 8, &version, 4);
    memcpy(h + 12, &hsize, 2);
    h[14] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 1 : 2; /* ELFDATA2LSB / MSB */
    h[15] = sizeof(void *) == 8 ? 2 : 1;                         /* ELFCLASS64 / 32 */
    memcpy(h + 16, &feat, 8);
    memcpy(h + 24, &mask, 8);
    memcpy(h + 32, &max_stack, 2);
    fwrite(h, 1, sizeof h, out);
}

/* First line of a /proc or /etc file whose key matches, value after sep. */
ST__NI static void file_value(const char *path, const char *key, char sep, char *out, size_t len)
{
    snprintf(out, len, "unknown");
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[512];
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0)
            continue;
        char *v = strchr(line, sep);
        if (!v)
            continue;
        for (v++; *v == ' ' || *v == '\t'; v++)
            ;
        v[strcspn(v, "\n")] = '\0';
        snprintf(out, len, "%s", v);
        break;
    }
    fclose(f);
}

ST__NI static void put_cpu_mem_os(FILE *out)
{
    char desc[256], distro[256];
#if defined(__aarch64__)
    snprintf(desc, sizeof desc, "ARM64"); /* uftrace guesses the architecture from it */
#else
    file_value("/proc/cpuinfo", "model name", ':', desc, sizeof desc);
#endif
    fprintf(out, "cpuinfo:lines=2\ncpuinfo:nr_cpus=%ld / %ld (online/possible)\ncpuinfo:desc=%s\n",
            sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF), desc);
    struct sysinfo si;
    double gb = 1024.0 * 1024 * 1024;
    if (sysinfo(&si) == 0)
        fprintf(out, "meminfo:%.1f / %.1f GB (free / total)\n", (double)si.freeram * si.mem_unit / gb,
                (double)si.totalram * si.mem_unit / gb);
    else
        fputs("meminfo:unknown\n", out);
    struct utsname u;
    if (uname(&u) != 0)
        memset(&u, 0, sizeof u);
    file_value("/etc/os-release", "PRETTY_NAME=", '=', distro, sizeof distro);
    fprintf(out, "osinfo:lines=3\nosinfo:kernel=%s %s\nosinfo:hostname=%s\nosinfo:distro=%s\n", u.sysname,
            u.release, u.nodename, distro);
}

ST__NI static void put_usage_load(FILE *out)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        memset(&ru, 0, sizeof ru);
    fprintf(out,
            "usageinfo:lines=6\n"
            "usageinfo:systime=%ld.%06ld\n"
            "usageinfo:usrtime=%ld.%06ld\n"
            "usageinfo:ctxsw=%ld / %ld (voluntary / involuntary)\n"
            "usageinfo:maxrss=%ld\n"
            "usageinfo:pagefault=%ld / %ld (major / minor)\n"
            "usageinfo:iops=%ld / %ld (read / write)\n",
            (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, (long)ru.ru_utime.tv_sec,
            (long)ru.ru_utime.tv_usec, ru.ru_nvcsw, ru.ru_nivcsw, ru.ru_maxrss, ru.ru_majflt, ru.ru_minflt,
            ru.ru_inblock, ru.ru_oublock);
    double load[3] = {0, 0, 0};
    getloadavg(load, 3);
    fprintf(out, "loadinfo:%.02f / %.02f / %.02f\n", load[0], load[1], load[2]);
}

/* The info text sections, strictly in bit order (spec 2.3). */
ST__NI static void put_sections(FILE *out, bool exited, int status, const char *tids, unsigned ntids)
{
    fprintf(out, "exename:%s\n", m.exe);
    fputs("build_id:", out);
    for (size_t i = 0; i < sizeof m.build_id; i++)
        fprintf(out, "%02x", m.have_build_id ? m.build_id[i] : 0);
    /* A wait status, as uftrace gets it from waitpid(): exit code << 8. */
    fprintf(out, "\nexit_status:%d\n", exited ? (status & 0xff) << 8 : 0);
    fprintf(out, "cmdline:%s\n", m.cmdline ? m.cmdline : "");
    put_cpu_mem_os(out);
    fprintf(out, "taskinfo:lines=2\ntaskinfo:nr_tid=%u\ntaskinfo:tids=%s\n", ntids, tids ? tids : "");
    put_usage_load(out);
    char date[64];
    struct tm tm;
    localtime_r(&m.start_wall, &tm);
    strftime(date, sizeof date, "%a %b %e %H:%M:%S %Y", &tm);
    uint64_t elapsed = st__clock_raw(false) - m.start_mono;
    fprintf(out, "record_date:%s\nelapsed_time:%" PRIu64 ".%09" PRIu64 " sec\n", date, elapsed / 1000000000u,
            elapsed % 1000000000u);
    fputs("pattern_type:glob\n", out);
    fputs("uftrace_version:simpletrace-func " ST_FT_VERSION "\n", out);
}

/* Writes a whole file under a temporary name, then renames it into place. */
ST__NI static int put_file(const char *name, const char *data, size_t len)
{
    char tmp[300];
    snprintf(tmp, sizeof tmp, ".st-%d-%s.tmp", (int)getpid(), name);
    int fd = openat(st__ft_g.dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int err = 0;
    for (size_t off = 0; off < len && !err;) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0 && errno != EINTR)
            err = -errno;
        else if (n > 0)
            off += (size_t)n;
    }
    if (close(fd) != 0 && !err)
        err = -errno;
    if (!err && renameat(st__ft_g.dirfd, tmp, st__ft_g.dirfd, name) != 0)
        err = -errno;
    if (err)
        unlinkat(st__ft_g.dirfd, tmp, 0);
    return err;
}

ST__NI static int write_info(bool exited, int status)
{
    unsigned ntids;
    char *tids = read_tids(&ntids);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out) {
        free(tids);
        return -ENOMEM;
    }
    put_header(out);
    put_sections(out, exited, status, tids, ntids);
    fclose(out);
    int err = put_file("info", buf, len);
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
