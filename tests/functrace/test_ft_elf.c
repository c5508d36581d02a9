/*
 * The ELF symbol reader against `nm` on programs built here: a PIE and a
 * non-PIE instrumented executable, one linked with the shared library, and
 * the C library (stripped: .dynsym only); plus files that are not ELF or
 * are cut short, which must give an error and never a crash.
 *
 *   test_ft_elf NM OBJDUMP PIE_PROG NOPIE_PROG SHARED_PROG
 *
 * PLT entries (which nm does not list) are checked against the
 * `<name@plt>` labels of `objdump -d`.
 */
#include "tap.h"

#include "elfsym.h"
#include "symfile.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

static const char *nm_bin, *objdump_bin;

struct nm_sym {
    unsigned long long addr;
    char type;
    char name[256];
};

/* `nm --defined-only path`, parsed. */
static struct nm_sym *run_nm(const char *path, size_t *count)
{
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "'%s' --defined-only '%s'", nm_bin, path);
    FILE *p = popen(cmd, "r");
    struct nm_sym *v = NULL;
    size_t n = 0, cap = 0;
    char line[1024];
    while (p && fgets(line, sizeof line, p)) {
        struct nm_sym s;
        if (sscanf(line, "%llx %c %255s", &s.addr, &s.type, s.name) != 3)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            v = realloc(v, cap * sizeof *v);
        }
        v[n++] = s;
    }
    if (p)
        pclose(p);
    *count = n;
    return v;
}

/*
 * Whether objdump -t marks name a function (F): nm calls any symbol in
 * .text 't', assembler labels too (STT_NOTYPE: glibc's aarch64 crt1 has
 * __wrap_main), which are no functions to read.
 */
static bool objdump_says_function(const char *path, const char *name)
{
    char cmd[8400], line[1024];
    bool fn = false;
    snprintf(cmd, sizeof cmd, "'%s' -t '%s' 2>/dev/null", objdump_bin, path);
    FILE *p = popen(cmd, "r");
    while (p && fgets(line, sizeof line, p)) {
        char *nl = strchr(line, '\n'), *last;
        if (nl)
            *nl = '\0';
        last = strrchr(line, ' ');
        if (last && strcmp(last + 1, name) == 0 && strlen(line) > 23 && line[23] == 'F')
            fn = true;
    }
    if (p)
        pclose(p);
    return fn;
}

static const struct nm_sym *nm_find(const struct nm_sym *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return &v[i];
    return NULL;
}

/* The nm entry with this name at this address (local names repeat). */
static const struct nm_sym *nm_find_at(const struct nm_sym *v, size_t n, const char *name, unsigned long long addr)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].addr == addr && strcmp(v[i].name, name) == 0)
            return &v[i];
    return NULL;
}

static const struct st__elf_func *find(const struct st__elf_syms *s, const char *name)
{
    for (size_t i = 0; i < s->nfuncs; i++)
        if (strcmp(st__elf_name(s, &s->funcs[i]), name) == 0)
            return &s->funcs[i];
    return NULL;
}

/* Every function we read is in nm's list with the same address, as a text
 * symbol; the program's own functions are all there; the .sym line of main
 * is nm's address minus the map base. */
/* Where binutils' default linker script puts a non-PIE program (SEGMENT_START("text-segment", ...)). */
#if defined(__s390x__)
#define NOPIE_BASE 0x1000000
#elif defined(__powerpc64__)
#define NOPIE_BASE 0x10000000
#elif defined(__riscv)
#define NOPIE_BASE 0x10000
#else /* x86-64, aarch64 */
#define NOPIE_BASE 0x400000
#endif

static void check_program(const char *what, const char *path, uint16_t want_type, uint64_t want_base)
{
    struct st__elf_syms s;
    int rc = st__elf_read(path, &s);
    is_int(rc, 0, "%s: read", what);
    ok(s.type == want_type, "%s: ELF type %s", what, want_type == ET_EXEC ? "ET_EXEC" : "ET_DYN");
    ok(s.from_symtab && s.nfuncs > 10, "%s: %zu functions from .symtab", what, s.nfuncs);
    is_u64(st__elf_map_base(&s, 4096), want_base, "%s: map base", what);
    is_int(s.build_id_len, 20, "%s: GNU build-id found", what);

    size_t nn;
    struct nm_sym *nm = run_nm(path, &nn);
    ok(nn > 0, "%s: nm lists %zu symbols", what, nn);
    size_t bad = 0;
    for (size_t i = 0; i < s.nfuncs; i++) {
        if (s.funcs[i].rank == ST__ELF_RANK_PLT)
            continue; /* nm does not list PLT entries: check_plt() does */
        const char *name = st__elf_name(&s, &s.funcs[i]);
        const struct nm_sym *m = nm_find_at(nm, nn, name, s.funcs[i].addr);
        if (!m || !strchr("TtWwi", m->type)) {
            if (bad++ < 5)
                diag("%s: %s at %llx: nm says %s %llx %c", what, name, (unsigned long long)s.funcs[i].addr,
                     m ? "" : "nothing", m ? m->addr : 0, m ? m->type : '-');
        }
    }
    is_int(bad, 0, "%s: every function read matches nm (name, address, text type)", what);
    /* Text symbols nm has that we dropped: only aliases of an address we kept, and labels that are no functions. */
    size_t missing = 0;
    for (size_t i = 0; i < nn; i++) {
        if (nm[i].type != 'T' && nm[i].type != 't')
            continue;
        bool covered = false;
        for (size_t k = 0; k < s.nfuncs && !covered; k++)
            covered = s.funcs[k].addr == nm[i].addr;
        if (!covered && objdump_says_function(path, nm[i].name) && missing++ < 5)
            diag("%s: nm text symbol %s at %llx not read", what, nm[i].name, nm[i].addr);
    }
    is_int(missing, 0, "%s: every nm text symbol's address is a function we read", what);

    static const char *const own[] = {"main", "fib", "leaf", "sum_leaves", "worker"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) {
        const struct st__elf_func *f = find(&s, own[i]);
        const struct nm_sym *m = nm_find(nm, nn, own[i]);
        ok(f && m && f->addr == m->addr && f->size > 0, "%s: %s read at nm's address", what, own[i]);
    }

    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    st__symfile_write(out, &s, 4096);
    fclose(out);
    const struct nm_sym *m = nm_find(nm, nn, "main");
    char line[128];
    snprintf(line, sizeof line, "%016llx T main\n", m ? m->addr - want_base : 0);
    ok(buf && strstr(buf, line), "%s: .sym has `%.*s`", what, (int)strlen(line) - 1, line);
    free(buf);
    free(nm);
    st__elf_free(&s);
}

/* Every `<name@plt>:` label objdump prints is a PLT entry we read. */
static void check_plt(const char *what, const char *path)
{
    struct st__elf_syms s;
    st__elf_read(path, &s);
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "'%s' -d -j .plt -j .plt.sec '%s' 2>/dev/null", objdump_bin, path);
    FILE *p = popen(cmd, "r");
    char line[1024];
    int labels = 0, found = 0;
    while (p && fgets(line, sizeof line, p)) {
        unsigned long long addr;
        char name[256];
        if (!strstr(line, "@plt>:") || sscanf(line, "%llx <%255[^@]@plt>:", &addr, name) != 2)
            continue;
        labels++;
        for (size_t i = 0; i < s.nfuncs; i++)
            if (s.funcs[i].addr == addr && s.funcs[i].rank == ST__ELF_RANK_PLT &&
                strcmp(st__elf_name(&s, &s.funcs[i]), name) == 0) {
                found++;
                break;
            }
    }
    if (p)
        pclose(p);
    ok(labels > 0 && found == labels, "%s: all %d PLT entries objdump shows, named (%d found)", what, labels, found);
    st__elf_free(&s);
}

/* The path of the C library this test runs with. */
static bool libc_path(char *out, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4608];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        char *p = strchr(line, '/');
        if (p && strstr(p, "/libc.so")) {
            p[strcspn(p, "\n")] = '\0';
            snprintf(out, len, "%s", p);
            found = true;
        }
    }
    if (f)
        fclose(f);
    return found;
}

static void check_bad_files(const char *prog)
{
    struct st__elf_syms s;
    is_int(st__elf_read("/nonexistent/file", &s), -ENOENT, "bad: a missing file gives -ENOENT");
    st__elf_free(&s);
    is_int(st__elf_read("/dev/null", &s), -ENOEXEC, "bad: not a regular file gives -ENOEXEC");
    st__elf_free(&s);

    /* The program cut at every power-of-two length, and with its section
     * header offset pointing past the end: errors, never a crash. */
    FILE *in = fopen(prog, "rb");
    char *data = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[65536];
    while (in && (n = fread(chunk, 1, sizeof chunk, in)) > 0) {
        if (len + n > cap) {
            cap = (len + n) * 2;
            data = realloc(data, cap);
        }
        memcpy(data + len, chunk, n);
        len += n;
    }
    if (in)
        fclose(in);
    char tmpl[] = "/tmp/ft-elf-XXXXXX";
    int fd = mkstemp(tmpl);
    bool survived = fd >= 0 && data;
    int errors = 0, tries = 0;
    for (size_t cut = 16; survived && cut < len; cut *= 2, tries++) {
        if (ftruncate(fd, 0) != 0 || pwrite(fd, data, cut, 0) != (ssize_t)cut)
            break;
        errors += st__elf_read(tmpl, &s) != 0;
        st__elf_free(&s);
    }
    ok(survived && tries > 5, "bad: %d truncated copies read without a crash (%d errors)", tries, errors);
    if (survived && len > sizeof(Elf64_Ehdr)) {
        Elf64_Ehdr *eh = (Elf64_Ehdr *)data;
        eh->e_shoff = len - 8;
        if (ftruncate(fd, 0) == 0 && pwrite(fd, data, len, 0) == (ssize_t)len)
            is_int(st__elf_read(tmpl, &s), -ENOEXEC, "bad: section headers past the end give -ENOEXEC");
        st__elf_free(&s);
        eh->e_ident[EI_CLASS] = ELFCLASS32;
        if (ftruncate(fd, 0) == 0 && pwrite(fd, data, len, 0) == (ssize_t)len)
            is_int(st__elf_read(tmpl, &s), -ENOEXEC, "bad: a 32-bit class gives -ENOEXEC");
        st__elf_free(&s);
    }
    if (fd >= 0) {
        close(fd);
        unlink(tmpl);
    }
    free(data);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: test_ft_elf NM OBJDUMP PIE_PROG NOPIE_PROG SHARED_PROG\n");
        return 2;
    }
    nm_bin = argv[1];
    objdump_bin = argv[2];
    argv += 1; /* the programs, as before */
    check_program("pie", argv[2], ET_DYN, 0);
    check_program("nopie", argv[3], ET_EXEC, NOPIE_BASE);
    check_plt("pie", argv[2]);
    check_plt("nopie", argv[3]);
    check_plt("shared", argv[4]);

    struct st__elf_syms s;
    is_int(st__elf_read(argv[4], &s), 0, "shared: read the program linked with the shared library");
    ok(s.calls_hooks, "shared: its undefined __cyg_profile_func_enter marks instrumented code");
    st__elf_free(&s);
    is_int(st__elf_read(argv[2], &s), 0, "pie: read again");
    ok(s.calls_hooks == false, "pie: the hooks are defined in it (static library), not called through the PLT");
    st__elf_free(&s);

    char libc[4096];
    if (libc_path(libc, sizeof libc)) {
        is_int(st__elf_read(libc, &s), 0, "libc: read %s", libc);
        ok(!s.from_symtab && s.nfuncs > 500, "libc: %zu functions from .dynsym (no .symtab)", s.nfuncs);
        ok(!s.calls_hooks, "libc: no instrumented code");
        bool sorted = true;
        for (size_t i = 1; i < s.nfuncs; i++)
            sorted &= s.funcs[i - 1].addr < s.funcs[i].addr &&
                      s.funcs[i - 1].addr + s.funcs[i - 1].size <= s.funcs[i].addr;
        ok(sorted, "libc: functions sorted, one per address, not overlapping");
        st__elf_free(&s);
    } else {
        ok(0, "libc found in /proc/self/maps");
    }
    check_bad_files(argv[2]);
    return done_testing();
}
