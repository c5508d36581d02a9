/* The .sym writer (format in symfile.h): ELF functions through the shared
 * uftrace .sym writer (uftrace/uftrace_write.h). */
#include "symfile.h"
#include "uftrace_write.h"

#include <errno.h>

ST__NI int st__symfile_write(FILE *out, const struct st__elf_syms *syms, uint64_t page_size)
{
    uint64_t base = st__elf_map_base(syms, page_size);
    struct st__uft_symw w = {0};
    for (size_t i = 0; i < syms->nfuncs; i++) {
        const struct st__elf_func *f = &syms->funcs[i];
        st__uft_sym_add(&w, out, f->addr - base, f->size, st__elf_name(syms, f));
    }
    st__uft_sym_finish(&w, out);
    return ferror(out) ? -EIO : (int)syms->nfuncs;
}
