/*
 * ELF64 function-symbol reader (see elfsym.h for what it returns).
 *
 * The file is mapped read-only; `struct image` is the mapping plus its
 * size, and every table is reached through image_at(), which checks that
 * [off, off + len) lies inside the file. Names are copied out, so nothing
 * points into the mapping once st__elf_read() returns.
 */
#include "elfsym.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_ELFDATA ELFDATA2LSB
#else
#define HOST_ELFDATA ELFDATA2MSB
#endif

/* Capacities of the growing arrays of a st__elf_syms being filled. */
struct growth {
    size_t funcs_cap;
    size_t names_cap;
};

struct image {
    const unsigned char *base;
    size_t size;
};

/* Pointer to len bytes at off, or NULL when they are not all in the file. */
ST__NI static const void *image_at(const struct image *im, uint64_t off, uint64_t len)
{
    if (off > im->size || len > im->size - off)
        return NULL;
    return im->base + off;
}

/* The section header table: count, with extended numbering resolved. */
ST__NI static const Elf64_Shdr *section_table(const struct image *im, const Elf64_Ehdr *eh, size_t *count)
{
    *count = 0;
    if (eh->e_shoff == 0)
        return NULL;
    if (eh->e_shentsize != sizeof(Elf64_Shdr))
        return NULL;
    const Elf64_Shdr *first = image_at(im, eh->e_shoff, sizeof(Elf64_Shdr));
    if (!first)
        return NULL;
    size_t n = eh->e_shnum ? eh->e_shnum : first->sh_size; /* SHN_UNDEF holds the count if >= 0xff00 */
    if (n > SIZE_MAX / sizeof(Elf64_Shdr) || !image_at(im, eh->e_shoff, n * sizeof(Elf64_Shdr)))
        return NULL;
    *count = n;
    return first;
}

/* Lowest PT_LOAD vaddr and the GNU build-id note from the program headers. */
ST__NI static int scan_segments(const struct image *im, const Elf64_Ehdr *eh, struct st__elf_syms *out)
{
    if (eh->e_phnum == 0)
        return 0;
    if (eh->e_phentsize != sizeof(Elf64_Phdr))
        return -ENOEXEC;
    const Elf64_Phdr *ph = image_at(im, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr));
    if (!ph)
        return -ENOEXEC;
    bool have_load = false;
    for (size_t i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && (!have_load || ph[i].p_vaddr < out->first_load)) {
            out->first_load = ph[i].p_vaddr;
            have_load = true;
        }
        if (ph[i].p_type != PT_NOTE || out->build_id_len)
            continue;
        const unsigned char *note = image_at(im, ph[i].p_offset, ph[i].p_filesz);
        if (!note)
            continue;
        /* Notes: namesz, descsz, type, name (padded to 4), desc (padded to 4). */
        for (uint64_t off = 0; off + 12 <= ph[i].p_filesz;) {
            uint32_t w[3];
            memcpy(w, note + off, sizeof w);
            uint64_t name_len = (w[0] + 3u) & ~3u, desc_len = (w[1] + 3u) & ~3u;
            if (name_len + desc_len > ph[i].p_filesz - off - 12)
                break;
            const unsigned char *name = note + off + 12, *desc = name + name_len;
            if (w[2] == NT_GNU_BUILD_ID && w[0] == 4 && memcmp(name, "GNU", 4) == 0 &&
                w[1] == sizeof out->build_id) {
                memcpy(out->build_id, desc, sizeof out->build_id);
                out->build_id_len = sizeof out->build_id;
                break;
            }
            off += 12 + name_len + desc_len;
        }
    }
    return 0;
}

/* A name we can put on a `.sym` line: non-empty, no blanks or controls. */
ST__NI static bool printable_name(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 0x7f)
            return false;
    return true;
}

/* Appends a name to out->names; returns its offset or -1. */
ST__NI static int64_t add_name(struct st__elf_syms *out, size_t *cap, const char *name)
{
    size_t len = strlen(name) + 1;
    if (out->names_len + len > *cap) {
        size_t ncap = *cap ? *cap * 2 : 4096;
        while (ncap < out->names_len + len)
            ncap *= 2;
        char *n = realloc(out->names, ncap);
        if (!n)
            return -1;
        out->names = n;
        *cap = ncap;
    }
    memcpy(out->names + out->names_len, name, len);
    out->names_len += len;
    return (int64_t)(out->names_len - len);
}

ST__NI static int cmp_func(const void *a, const void *b, void *ctx)
{
    const struct st__elf_func *x = a, *y = b;
    const struct st__elf_syms *syms = ctx;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    size_t lx = strlen(syms->names + x->name), ly = strlen(syms->names + y->name);
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return strcmp(syms->names + x->name, syms->names + y->name);
}

/* Room for one more function in out->funcs (cap grows by doubling). */
ST__NI static struct st__elf_func *next_func(struct st__elf_syms *out, size_t *cap)
{
    if (out->nfuncs == *cap) {
        size_t ncap = *cap ? *cap * 2 : 256;
        struct st__elf_func *v = realloc(out->funcs, ncap * sizeof *v);
        if (!v)
            return NULL;
        out->funcs = v;
        *cap = ncap;
    }
    return &out->funcs[out->nfuncs];
}

/* Adds one function; -ENOMEM when memory is short. */
ST__NI static int add_func(struct st__elf_syms *out, struct growth *g, const char *name, uint64_t addr,
                           uint64_t size, uint8_t rank)
{
    struct st__elf_func *f = next_func(out, &g->funcs_cap);
    int64_t off = f ? add_name(out, &g->names_cap, name) : -1;
    if (off < 0)
        return -ENOMEM;
    *f = (struct st__elf_func){.addr = addr, .size = size, .name = (uint32_t)off, .rank = rank};
    out->nfuncs++;
    return 0;
}

/* Sorts, keeps the first symbol of each address, and cuts every symbol
 * where the next one starts (sizes of 0 become "up to the next one"). */
ST__NI static void finish_funcs(struct st__elf_syms *out)
{
    qsort_r(out->funcs, out->nfuncs, sizeof *out->funcs, cmp_func, out);
    size_t n = 0;
    for (size_t i = 0; i < out->nfuncs; i++)
        if (n == 0 || out->funcs[n - 1].addr != out->funcs[i].addr)
            out->funcs[n++] = out->funcs[i];
    out->nfuncs = n;
    for (size_t i = 0; i < n; i++) {
        struct st__elf_func *f = &out->funcs[i];
        if (i + 1 < n && (f->size == 0 || f->addr + f->size > out->funcs[i + 1].addr))
            f->size = out->funcs[i + 1].addr - f->addr;
        if (f->size == 0)
            f->size = 1; /* the last symbol, size unknown: at least its entry resolves */
    }
}

/* A symbol table section and its string table, bounds-checked. */
ST__NI static int open_symtab(const struct image *im, const Elf64_Shdr *sh, size_t nsh, size_t idx,
                              const Elf64_Sym **syms, size_t *nsyms, const char **strtab, size_t *strsize)
{
    const Elf64_Shdr *tab = &sh[idx];
    if (tab->sh_entsize != sizeof(Elf64_Sym) || tab->sh_link >= nsh)
        return -ENOEXEC;
    const Elf64_Shdr *str = &sh[tab->sh_link];
    *syms = image_at(im, tab->sh_offset, tab->sh_size);
    *strtab = image_at(im, str->sh_offset, str->sh_size);
    if (!*syms || !*strtab || str->sh_size == 0 || (*strtab)[str->sh_size - 1] != '\0')
        return -ENOEXEC;
    *nsyms = tab->sh_size / sizeof(Elf64_Sym);
    *strsize = str->sh_size;
    return 0;
}

/* Collects the functions of one symbol table (and notes the hook reference). */
ST__NI static int read_symtab(const struct image *im, const Elf64_Shdr *sh, size_t nsh, size_t idx,
                              struct st__elf_syms *out, struct growth *g)
{
    const Elf64_Sym *syms;
    const char *strtab;
    size_t nsyms, strsize;
    int err = open_symtab(im, sh, nsh, idx, &syms, &nsyms, &strtab, &strsize);
    for (size_t i = 1; i < nsyms && !err; i++) {
        const Elf64_Sym *s = &syms[i];
        if (s->st_name >= strsize)
            continue;
        const char *name = strtab + s->st_name;
        unsigned type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
        if (s->st_shndx == SHN_UNDEF) {
            if (strcmp(name, "__cyg_profile_func_enter") == 0)
                out->calls_hooks = true;
            continue;
        }
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s->st_value == 0 ||
            s->st_shndx >= SHN_LORESERVE || !printable_name(name))
            continue;
        uint64_t size = s->st_size;
        if (size == 0 && s->st_shndx < nsh && sh[s->st_shndx].sh_addr + sh[s->st_shndx].sh_size > s->st_value)
            size = sh[s->st_shndx].sh_addr + sh[s->st_shndx].sh_size - s->st_value; /* cut later */
        err = add_func(out, g, name, s->st_value, size, bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2);
    }
    return err;
}

/* The section called name, or NULL. */
ST__NI static const Elf64_Shdr *find_section(const struct image *im, const Elf64_Ehdr *eh, const Elf64_Shdr *sh,
                                             size_t nsh, const char *name)
{
    size_t strndx = eh->e_shstrndx == SHN_XINDEX ? sh[0].sh_link : eh->e_shstrndx;
    if (strndx == SHN_UNDEF || strndx >= nsh)
        return NULL;
    const char *names = image_at(im, sh[strndx].sh_offset, sh[strndx].sh_size);
    size_t len = sh[strndx].sh_size;
    for (size_t i = 1; names && i < nsh; i++)
        if (sh[i].sh_name < len && strncmp(names + sh[i].sh_name, name, len - sh[i].sh_name) == 0)
            return &sh[i];
    return NULL;
}

/*
 * PLT entries, named after the function they jump to. Code built with
 * -finstrument-functions also reports inlined library wrappers (glibc's
 * atoi, for one), and in a non-PIE program the address of an imported
 * function is its PLT entry. Entry i of .rela.plt is the i-th slot after
 * the PLT's header, of the machine's size (below); on x86-64 with IBT the
 * i-th 16-byte slot of .plt.sec instead.
 */
struct plt_layout {
    uint16_t machine;
    uint32_t jump_slot; /* the relocation type of .rela.plt's entries */
    uint64_t header;    /* bytes of .plt before entry 0 */
    uint64_t entry;     /* bytes of one entry */
};

static const struct plt_layout plt_layouts[] = {
    {EM_X86_64, R_X86_64_JUMP_SLOT, 16, 16},
    {EM_AARCH64, R_AARCH64_JUMP_SLOT, 32, 16},
    {EM_S390, R_390_JMP_SLOT, 32, 32},
};

ST__NI static int read_plt(const struct image *im, const Elf64_Ehdr *eh, const Elf64_Shdr *sh, size_t nsh,
                           struct st__elf_syms *out, struct growth *g)
{
    const struct plt_layout *lay = NULL;
    for (size_t i = 0; i < sizeof plt_layouts / sizeof plt_layouts[0]; i++)
        if (plt_layouts[i].machine == eh->e_machine)
            lay = &plt_layouts[i];
    if (!lay)
        return 0;
    const Elf64_Shdr *rela = find_section(im, eh, sh, nsh, ".rela.plt");
    const Elf64_Shdr *plt = find_section(im, eh, sh, nsh, ".plt");
    const Elf64_Shdr *sec = eh->e_machine == EM_X86_64 ? find_section(im, eh, sh, nsh, ".plt.sec") : NULL;
    if (!rela || !plt || rela->sh_entsize != sizeof(Elf64_Rela) || rela->sh_link >= nsh)
        return 0;
    const Elf64_Rela *r = image_at(im, rela->sh_offset, rela->sh_size);
    const Elf64_Sym *syms;
    const char *strtab;
    size_t nsyms, strsize;
    if (!r || open_symtab(im, sh, nsh, rela->sh_link, &syms, &nsyms, &strtab, &strsize) != 0)
        return 0;
    uint64_t first = sec ? sec->sh_addr : plt->sh_addr + lay->header;
    uint64_t end = sec ? sec->sh_addr + sec->sh_size : plt->sh_addr + plt->sh_size;
    uint64_t size = sec ? 16 : lay->entry;
    size_t n = rela->sh_size / sizeof(Elf64_Rela);
    int err = 0;
    for (size_t i = 0; i < n && !err && first + size * (i + 1) <= end; i++) {
        size_t sym = ELF64_R_SYM(r[i].r_info);
        if (ELF64_R_TYPE(r[i].r_info) != lay->jump_slot || sym == 0 || sym >= nsyms ||
            syms[sym].st_name >= strsize || !printable_name(strtab + syms[sym].st_name))
            continue;
        err = add_func(out, g, strtab + syms[sym].st_name, first + size * i, size, ST__ELF_RANK_PLT);
    }
    return err;
}

ST__NI static int parse_image(const struct image *im, struct st__elf_syms *out)
{
    const Elf64_Ehdr *eh = image_at(im, 0, sizeof *eh);
    if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != HOST_ELFDATA)
        return -ENOEXEC;
    out->type = eh->e_type;
    int err = scan_segments(im, eh, out);
    if (err)
        return err;
    size_t nsh;
    const Elf64_Shdr *sh = section_table(im, eh, &nsh);
    if (!sh)
        return eh->e_shoff ? -ENOEXEC : 0;
    size_t symtab = 0, dynsym = 0;
    for (size_t i = 1; i < nsh; i++) {
        if (sh[i].sh_type == SHT_SYMTAB && !symtab)
            symtab = i;
        else if (sh[i].sh_type == SHT_DYNSYM && !dynsym)
            dynsym = i;
    }
    if (!symtab && !dynsym)
        return 0;
    out->from_symtab = symtab != 0;
    struct growth g = {0};
    err = read_symtab(im, sh, nsh, symtab ? symtab : dynsym, out, &g);
    if (!err && symtab && dynsym && !out->calls_hooks) {
        /* A static hook reference only shows in .symtab; a PLT one in both. */
        struct st__elf_syms dyn = {0};
        struct growth dg = {0};
        if (read_symtab(im, sh, nsh, dynsym, &dyn, &dg) == 0)
            out->calls_hooks = dyn.calls_hooks;
        st__elf_free(&dyn);
    }
    if (!err)
        err = read_plt(im, eh, sh, nsh, out, &g);
    if (!err)
        finish_funcs(out);
    return err;
}

ST__NI int st__elf_read(const char *path, struct st__elf_syms *out)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int err = 0;
    if (fstat(fd, &st) != 0) {
        err = -errno;
        goto close_fd;
    }
    if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        err = -ENOEXEC;
        goto close_fd;
    }
    struct image im = {.size = (size_t)st.st_size};
    void *map = mmap(NULL, im.size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        err = -errno;
        goto close_fd;
    }
    im.base = map;
    err = parse_image(&im, out);
    munmap(map, im.size);
close_fd:
    close(fd);
    return err;
}

ST__NI void st__elf_free(struct st__elf_syms *syms)
{
    free(syms->funcs);
    free(syms->names);
    memset(syms, 0, sizeof *syms);
}
