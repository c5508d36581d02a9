/*
 * Writers of the uftrace.data metadata files (format: uftrace_format.h):
 * the `info` file, task.txt lines, map lines, `.sym` files, events.txt
 * lines, and whole-file replacement in a data directory. Used by the
 * function tracer (at exit, from its own threads) and by the exporter.
 *
 * Depends on libc and src/common (the JSON escaper, built without
 * instrumentation too). Every function is no_instrument_function
 * (the function tracer links it), allocates nothing unless said, and
 * writes through the stdio stream it is given: the caller owns streams,
 * descriptors and buffers. Errors are negative errno values.
 */
#ifndef ST_UFTRACE_WRITE_H
#define ST_UFTRACE_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

#include "uftrace_format.h"

#define ST__UFT_NI __attribute__((no_instrument_function))

/* --- info ------------------------------------------------------------------ */

/* Facts about the machine, for the cpuinfo .. loadinfo sections. */
struct st__uft_host {
    long cpus_online, cpus_possible;
    char cpu_desc[256];   /* "model name" of /proc/cpuinfo ("ARM64" on aarch64: uftrace guesses the arch from it) */
    char meminfo[64];     /* "F / T GB (free / total)" */
    char kernel[256];     /* uname: sysname release */
    char hostname[256];
    char distro[256];     /* PRETTY_NAME of /etc/os-release */
    struct rusage usage;  /* of this process, for usageinfo */
    double load[3];       /* getloadavg() */
};

/* Fills *h from /proc, uname, getrusage and getloadavg; unknown facts read "unknown". */
void st__uft_host_collect(struct st__uft_host *h);

/* What goes into `info`. A NULL member leaves its section (and bit) out. */
struct st__uft_info {
    uint64_t feat;                   /* ST_UFT_FEAT_*; TASK_SESSION is always added */
    uint16_t max_stack;              /* header max_stack, 0 = 1024 */
    const char *exename;             /* EXE_NAME, and BUILD_ID with it */
    const unsigned char *build_id;   /* 20 bytes; NULL writes zeros */
    bool has_exit_status;            /* EXIT_STATUS ... */
    int exit_status;                 /* ... a wait status (exit code << 8) */
    const char *cmdline;             /* CMDLINE, raw bytes (JSON-escaped here, cut below
                                        ST_UFT_CMDLINE_MAX); NULL = "" but the section is
                                        always written: uftrace's chrome JSON needs it */
    const struct st__uft_host *host; /* CPUINFO, MEMINFO, OSINFO, USAGEINFO, LOADINFO */
    const int *tids;                 /* TASKINFO (always written): every thread with a TID.dat */
    size_t ntids;
    const char *record_date;         /* RECORD_DATE: the date line ... */
    const char *elapsed;             /* ... and the elapsed_time line (both or neither) */
    const char *pattern_type;        /* PATTERN_TYPE: "regex", "glob" or "simple" */
    const char *version;             /* VERSION: the writer's name and version */
};

/* Writes the 40-byte header and the text sections of info to out. Returns 0 or -EIO. */
int st__uft_info_write(FILE *out, const struct st__uft_info *info);

/* --- task.txt, map, events.txt ------------------------------------------------ */

/* Writes the SESS line of a process (before its TASK lines). */
void st__uft_task_sess(FILE *out, uint64_t ts_ns, int pid, const char *sid, const char *exename);

/* Writes the TASK line of thread tid of process pid. */
void st__uft_task_task(FILE *out, uint64_t ts_ns, int tid, int pid);

/* Writes one map line "START-END PERMS 00000000 00:00 0 PATH" (path without whitespace). */
void st__uft_map_line(FILE *out, uint64_t start, uint64_t end, const char *perms, const char *path);

/* Writes the [stack] map line that tells uftrace where user space ends. */
void st__uft_map_stack(FILE *out);

/* Writes the events.txt line naming user event id as PROVIDER:NAME (no whitespace in either); a NAME
 * longer than ST_UFT_NAME_MAX is cut (uftrace_format.h). True when it was cut. */
bool st__uft_event_line(FILE *out, unsigned id, const char *provider, const char *name);

/* --- .sym files ----------------------------------------------------------------- */

/* A .sym file being written: functions added in address order. */
struct st__uft_symw {
    uint64_t end;  /* end of the last function added */
    size_t count;  /* functions added */
};

/* Adds function name at [addr, addr + size) (relative to the file's first
 * map line, addr >= the previous end), writing an end marker first when
 * the previous function ends before addr. A name longer than
 * ST_UFT_NAME_MAX is cut; true when it was. */
bool st__uft_sym_add(struct st__uft_symw *w, FILE *out, uint64_t addr, uint64_t size, const char *name);

/* Ends the file: the last function's end marker (without it, it never matches). */
void st__uft_sym_finish(struct st__uft_symw *w, FILE *out);

/* --- the directory --------------------------------------------------------------- */

/* True for names uftrace (or our writers, for temporaries) put in a data directory. */
bool st__uft_is_data_file(const char *name);

/*
 * Checks that the directory open at dirfd holds only data files. Returns
 * 0, -EEXIST with the first other entry's name in bad (a subdirectory
 * counts), or -errno of reading it.
 */
int st__uft_dir_check(int dirfd, char *bad, size_t badlen);

/* Removes every data file of the directory at dirfd. Returns 0 or the first -errno (name in bad). */
int st__uft_dir_clear(int dirfd, char *bad, size_t badlen);

/* Writes len bytes as file name in dirfd: to a temporary name, then renamed into place. 0 or -errno. */
int st__uft_put_file(int dirfd, const char *name, const void *data, size_t len);

#endif /* ST_UFTRACE_WRITE_H */
