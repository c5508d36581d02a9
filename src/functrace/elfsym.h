/*
 * A small ELF64 symbol reader: the function symbols of one file, for the
 * `.sym` files uftrace reads and for resolving SIMPLETRACE_FUNC_FILTER.
 *
 * Reads .symtab, or .dynsym when the file is stripped; keeps defined
 * STT_FUNC / STT_GNU_IFUNC symbols with a non-zero value and a printable
 * name. On x86-64 it adds the PLT entries, named after the function they
 * reach (uftrace does the same: instrumented inline wrappers of library
 * functions report those addresses in non-PIE programs). The result is
 * sorted by address with one symbol per address (a global name wins over a
 * weak one over a local one over a PLT entry, then the shorter),
 * and every symbol has a size: its st_size, or up to the next symbol or
 * the end of its section when st_size is 0, cut where the next one starts.
 *
 * Addresses are the file's own (st_value). A loaded copy is mapped
 * starting at page_floor(first_load); uftrace wants symbols relative to
 * the start of that first mapping, i.e. st_value - page_floor(first_load):
 * the nm value for PIE and shared objects, value - 0x400000 for a
 * classic non-PIE executable.
 *
 * Every offset read from the file is bounds-checked: a truncated or
 * corrupt file gives -ENOEXEC, never a crash. Only files of the host's
 * byte order and class are read.
 */
#ifndef ST_FUNCTRACE_ELFSYM_H
#define ST_FUNCTRACE_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef ST__NI
#define ST__NI __attribute__((no_instrument_function))
#endif

/* One function symbol. */
struct st__elf_func {
    uint64_t addr;   /* st_value */
    uint64_t size;   /* bytes, always > 0 */
    uint32_t name;   /* offset of the NUL-terminated name in st__elf_syms.names */
    uint8_t rank;    /* 0 global, 1 weak, 2 local, 3 PLT entry: which name wins an address */
};

#define ST__ELF_RANK_PLT 3

/* What st__elf_read() found in one file. */
struct st__elf_syms {
    uint16_t type;              /* ET_EXEC or ET_DYN */
    uint64_t first_load;        /* lowest p_vaddr of the PT_LOAD segments */
    bool from_symtab;           /* symbols came from .symtab (else .dynsym or none) */
    bool calls_hooks;           /* has an undefined __cyg_profile_func_enter: instrumented code */
    unsigned char build_id[20]; /* NT_GNU_BUILD_ID, valid when build_id_len == 20 */
    size_t build_id_len;
    struct st__elf_func *funcs; /* sorted by addr, unique addrs; owned */
    size_t nfuncs;
    char *names;                /* the names, owned */
    size_t names_len;
};

/*
 * Reads the function symbols of the ELF file at path into *out (zeroed
 * first; free with st__elf_free, also after an error). Returns 0, -ENOEXEC
 * for a file that is not a readable ELF64 of the host's byte order, -ENOMEM,
 * or the -errno of open/mmap. A file without symbol tables gives 0 and no
 * functions.
 */
int st__elf_read(const char *path, struct st__elf_syms *out);

/* Frees what st__elf_read() allocated; *syms is zeroed. */
void st__elf_free(struct st__elf_syms *syms);

/* Name of a function of syms. */
static inline __attribute__((no_instrument_function)) const char *
st__elf_name(const struct st__elf_syms *syms, const struct st__elf_func *f)
{
    return syms->names + f->name;
}

/* The base uftrace subtracts: first_load rounded down to a page. */
static inline __attribute__((no_instrument_function)) uint64_t
st__elf_map_base(const struct st__elf_syms *syms, uint64_t page_size)
{
    return syms->first_load & ~(page_size - 1);
}

#endif /* ST_FUNCTRACE_ELFSYM_H */
