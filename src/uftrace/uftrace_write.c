/* Writers of the uftrace.data metadata files (uftrace_write.h). */
#include "uftrace_write.h"

#include "json_escape.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

/* --- info ------------------------------------------------------------------ */

ST__UFT_NI static void put_header(FILE *out, const struct st__uft_info *info, uint64_t mask)
{
    unsigned char h[ST_UFT_INFO_HEADER_SIZE] = {0};
    uint32_t version = ST_UFT_INFO_VERSION;
    uint16_t hsize = ST_UFT_INFO_HEADER_SIZE, max_stack = info->max_stack ? info->max_stack : 1024;
    uint64_t feat = info->feat | ST_UFT_FEAT_TASK_SESSION;
    memcpy(h, ST_UFT_INFO_MAGIC, sizeof ST_UFT_INFO_MAGIC); /* with its NUL: 8 bytes */
    memcpy(h + 8, &version, 4);
    memcpy(h + 12, &hsize, 2);
    h[14] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 1 : 2; /* ELFDATA2LSB / MSB */
    h[15] = sizeof(void *) == 8 ? 2 : 1;                         /* ELFCLASS64 / 32 */
    memcpy(h + 16, &feat, 8);
    memcpy(h + 24, &mask, 8);
    memcpy(h + 32, &max_stack, 2);
    fwrite(h, 1, sizeof h, out);
}

/*
 * Bytes of escaped text (json_escape.h) that stand together at p: an
 * escape, a UTF-8 character (only valid ones are copied), or one byte.
 */
ST__UFT_NI static size_t escaped_unit(const char *p)
{
    unsigned char c = (unsigned char)*p;

    if (c == '\\')
        return p[1] == 'u' ? 6 : 2;
    return c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
}

/*
 * The command line JSON-escaped (uftrace pastes it into its chrome JSON
 * verbatim; control bytes escaped, so on one line), cut before
 * ST_UFT_CMDLINE_MAX bytes between two escapes or characters. Nothing
 * when memory is short.
 */
ST__UFT_NI static void put_cmdline(FILE *out, const char *s)
{
    /* Each input byte gives at least one output byte: more could never fit. */
    size_t n = s ? strnlen(s, ST_UFT_CMDLINE_MAX) : 0, len = 0, end, u;
    char *esc = malloc(ST__JSON_ESCAPED_MAX(n) + 1);

    if (!esc)
        return;
    end = (size_t)(st__json_escape(esc, (const uint8_t *)s, n) - esc);
    while (len < end && len + (u = escaped_unit(esc + len)) < ST_UFT_CMDLINE_MAX)
        len += u;
    fwrite(esc, 1, len, out);
    free(esc);
}

ST__UFT_NI static void put_host_before_tasks(FILE *out, const struct st__uft_host *h)
{
    fprintf(out, "cpuinfo:lines=2\ncpuinfo:nr_cpus=%ld / %ld (online/possible)\ncpuinfo:desc=%s\n", h->cpus_online,
            h->cpus_possible, h->cpu_desc);
    fprintf(out, "meminfo:%s\n", h->meminfo);
    fprintf(out, "osinfo:lines=3\nosinfo:kernel=%s\nosinfo:hostname=%s\nosinfo:distro=%s\n", h->kernel, h->hostname,
            h->distro);
}

ST__UFT_NI static void put_host_after_tasks(FILE *out, const struct st__uft_host *h)
{
    const struct rusage *ru = &h->usage;
    fprintf(out,
            "usageinfo:lines=6\n"
            "usageinfo:systime=%ld.%06ld\n"
            "usageinfo:usrtime=%ld.%06ld\n"
            "usageinfo:ctxsw=%ld / %ld (voluntary / involuntary)\n"
            "usageinfo:maxrss=%ld\n"
            "usageinfo:pagefault=%ld / %ld (major / minor)\n"
            "usageinfo:iops=%ld / %ld (read / write)\n",
            (long)ru->ru_stime.tv_sec, (long)ru->ru_stime.tv_usec, (long)ru->ru_utime.tv_sec,
            (long)ru->ru_utime.tv_usec, ru->ru_nvcsw, ru->ru_nivcsw, ru->ru_maxrss, ru->ru_majflt, ru->ru_minflt,
            ru->ru_inblock, ru->ru_oublock);
    fprintf(out, "loadinfo:%.02f / %.02f / %.02f\n", h->load[0], h->load[1], h->load[2]);
}

/* The info mask the members of info ask for. */
ST__UFT_NI static uint64_t info_mask(const struct st__uft_info *info)
{
    uint64_t mask = ST_UFT_INFO_CMDLINE | ST_UFT_INFO_TASKINFO;
    if (info->exename)
        mask |= ST_UFT_INFO_EXE_NAME | ST_UFT_INFO_EXE_BUILD_ID;
    if (info->has_exit_status)
        mask |= ST_UFT_INFO_EXIT_STATUS;
    if (info->host)
        mask |= ST_UFT_INFO_CPUINFO | ST_UFT_INFO_MEMINFO | ST_UFT_INFO_OSINFO | ST_UFT_INFO_USAGEINFO |
                ST_UFT_INFO_LOADINFO;
    if (info->record_date && info->elapsed)
        mask |= ST_UFT_INFO_RECORD_DATE;
    if (info->pattern_type)
        mask |= ST_UFT_INFO_PATTERN_TYPE;
    if (info->version)
        mask |= ST_UFT_INFO_VERSION_TEXT;
    return mask;
}

/* Sections strictly in bit order: uftrace reads them one line at a time. */
ST__UFT_NI int st__uft_info_write(FILE *out, const struct st__uft_info *info)
{
    uint64_t mask = info_mask(info);
    put_header(out, info, mask);
    if (info->exename) {
        fprintf(out, "exename:%s\nbuild_id:", info->exename);
        for (size_t i = 0; i < 20; i++)
            fprintf(out, "%02x", info->build_id ? info->build_id[i] : 0);
        fputc('\n', out);
    }
    if (info->has_exit_status)
        fprintf(out, "exit_status:%d\n", info->exit_status);
    fputs("cmdline:", out);
    put_cmdline(out, info->cmdline);
    fputc('\n', out);
    if (info->host)
        put_host_before_tasks(out, info->host);
    fprintf(out, "taskinfo:lines=2\ntaskinfo:nr_tid=%zu\ntaskinfo:tids=", info->ntids);
    for (size_t i = 0; i < info->ntids; i++)
        fprintf(out, "%s%d", i ? "," : "", info->tids[i]);
    fputc('\n', out);
    if (info->host)
        put_host_after_tasks(out, info->host);
    if (mask & ST_UFT_INFO_RECORD_DATE)
        fprintf(out, "record_date:%s\nelapsed_time:%s\n", info->record_date, info->elapsed);
    if (info->pattern_type)
        fprintf(out, "pattern_type:%s\n", info->pattern_type);
    if (info->version)
        fprintf(out, "uftrace_version:%s\n", info->version);
    return ferror(out) ? -EIO : 0;
}

/* First line of a /proc or /etc file whose key matches, value after sep. */
ST__UFT_NI static void file_value(const char *path, const char *key, char sep, char *out, size_t len)
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

ST__UFT_NI void st__uft_host_collect(struct st__uft_host *h)
{
    memset(h, 0, sizeof *h);
    h->cpus_online = sysconf(_SC_NPROCESSORS_ONLN);
    h->cpus_possible = sysconf(_SC_NPROCESSORS_CONF);
#if defined(__aarch64__)
    snprintf(h->cpu_desc, sizeof h->cpu_desc, "ARM64");
#else
    file_value("/proc/cpuinfo", "model name", ':', h->cpu_desc, sizeof h->cpu_desc);
#endif
    struct sysinfo si;
    double gb = 1024.0 * 1024 * 1024;
    if (sysinfo(&si) == 0)
        snprintf(h->meminfo, sizeof h->meminfo, "%.1f / %.1f GB (free / total)",
                 (double)si.freeram * si.mem_unit / gb, (double)si.totalram * si.mem_unit / gb);
    else
        snprintf(h->meminfo, sizeof h->meminfo, "unknown");
    struct utsname u;
    if (uname(&u) != 0)
        memset(&u, 0, sizeof u);
    snprintf(h->kernel, sizeof h->kernel, "%s %s", u.sysname, u.release);
    snprintf(h->hostname, sizeof h->hostname, "%s", u.nodename);
    file_value("/etc/os-release", "PRETTY_NAME=", '=', h->distro, sizeof h->distro);
    if (getrusage(RUSAGE_SELF, &h->usage) != 0)
        memset(&h->usage, 0, sizeof h->usage);
    if (getloadavg(h->load, 3) < 0)
        h->load[0] = h->load[1] = h->load[2] = 0;
}

/* --- task.txt, map, events.txt ------------------------------------------------ */

/* uftrace parses the part after '.' as an integer count of ns: always 9 digits. */
ST__UFT_NI static void put_ts(FILE *out, uint64_t ns)
{
    fprintf(out, "timestamp=%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
}

ST__UFT_NI void st__uft_task_sess(FILE *out, uint64_t ts_ns, int pid, const char *sid, const char *exename)
{
    fputs("SESS ", out);
    put_ts(out, ts_ns);
    fprintf(out, " pid=%d sid=%s exename=\"%s\"\n", pid, sid, exename);
}

ST__UFT_NI void st__uft_task_task(FILE *out, uint64_t ts_ns, int tid, int pid)
{
    fputs("TASK ", out);
    put_ts(out, ts_ns);
    fprintf(out, " tid=%d pid=%d\n", tid, pid);
}

ST__UFT_NI void st__uft_map_line(FILE *out, uint64_t start, uint64_t end, const char *perms, const char *path)
{
    fprintf(out, "%08" PRIx64 "-%08" PRIx64 " %s 00000000 00:00 0 %s\n", start, end, perms, path);
}

ST__UFT_NI void st__uft_map_stack(FILE *out)
{
    /* Any [stack] line does: uftrace derives the kernel boundary from its start. */
    fputs("7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0 [stack]\n", out);
}

/* Writes name, cut to ST_UFT_NAME_MAX bytes (its end replaced by ST_UFT_NAME_CUT); true when cut. */
static ST__UFT_NI bool put_name(FILE *out, const char *name)
{
    size_t n = strlen(name);
    if (n <= ST_UFT_NAME_MAX) {
        fputs(name, out);
        return false;
    }
    fprintf(out, "%.*s" ST_UFT_NAME_CUT, (int)(ST_UFT_NAME_MAX - (sizeof ST_UFT_NAME_CUT - 1)), name);
    return true;
}

ST__UFT_NI bool st__uft_event_line(FILE *out, unsigned id, const char *provider, const char *name)
{
    fprintf(out, "EVENT: %u %s:", id, provider);
    bool cut = put_name(out, name);
    fputc('\n', out);
    return cut;
}

/* --- .sym files ----------------------------------------------------------------- */

ST__UFT_NI bool st__uft_sym_add(struct st__uft_symw *w, FILE *out, uint64_t addr, uint64_t size, const char *name)
{
    /* uftrace sizes a symbol up to the next line: a gap needs its own line. */
    if (w->count && w->end != addr)
        fprintf(out, "%016" PRIx64 " ? __func_end\n", w->end);
    fprintf(out, "%016" PRIx64 " T ", addr);
    bool cut = put_name(out, name);
    fputc('\n', out);
    w->end = addr + size;
    w->count++;
    return cut;
}

ST__UFT_NI void st__uft_sym_finish(struct st__uft_symw *w, FILE *out)
{
    if (w->count)
        fprintf(out, "%016" PRIx64 " ? __sym_end\n", w->end);
}

/* --- the directory --------------------------------------------------------------- */

ST__UFT_NI bool st__uft_is_data_file(const char *name)
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

/* Opens a directory stream on a duplicate of dirfd (the caller keeps dirfd). */
ST__UFT_NI static DIR *open_dup(int dirfd)
{
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d && fd >= 0)
        close(fd);
    if (d)
        rewinddir(d); /* the duplicate shares its offset with dirfd */
    return d;
}

ST__UFT_NI static bool dot_or_dotdot(const char *name)
{
    return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

ST__UFT_NI int st__uft_dir_check(int dirfd, char *bad, size_t badlen)
{
    DIR *d = open_dup(dirfd);
    if (!d)
        return -errno;
    int err = 0;
    for (struct dirent *e; !err && (e = readdir(d)) != NULL;) {
        if (dot_or_dotdot(e->d_name))
            continue;
        if (e->d_type == DT_DIR || !st__uft_is_data_file(e->d_name)) {
            snprintf(bad, badlen, "%s", e->d_name);
            err = -EEXIST;
        }
    }
    closedir(d);
    return err;
}

ST__UFT_NI int st__uft_dir_clear(int dirfd, char *bad, size_t badlen)
{
    DIR *d = open_dup(dirfd);
    if (!d)
        return -errno;
    int err = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (dot_or_dotdot(e->d_name) || e->d_type == DT_DIR || !st__uft_is_data_file(e->d_name))
            continue;
        if (unlinkat(dirfd, e->d_name, 0) != 0 && errno != ENOENT && !err) {
            err = -errno;
            snprintf(bad, badlen, "%s", e->d_name);
        }
    }
    closedir(d);
    return err;
}

ST__UFT_NI int st__uft_put_file(int dirfd, const char *name, const void *data, size_t len)
{
    char tmp[300];
    snprintf(tmp, sizeof tmp, ".st-%d-%s.tmp", (int)getpid(), name);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    int err = 0;
    const char *p = data;
    for (size_t off = 0; off < len && !err;) {
        ssize_t n = write(fd, p + off, len - off);
        if (n < 0 && errno != EINTR)
            err = -errno;
        else if (n > 0)
            off += (size_t)n;
    }
    if (close(fd) != 0 && !err)
        err = -errno;
    if (!err && renameat(dirfd, tmp, dirfd, name) != 0)
        err = -errno;
    if (err)
        unlinkat(dirfd, tmp, 0);
    return err;
}
