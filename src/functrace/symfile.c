/* The .sym writer (format in symfile.h). */
#include "functrace/symfile.h"

#include <errno.h>
#include <inttypes.h>

ST__NI int st__symfile_write(FILE *out, const struct st__elf_syms *syms, uint64_t page_size)
{
    uint64_t base = st__elf_map_base(syms, page_size);
    for (size_t i = 0; i < syms->nfuncs; i++) {
        const struct st__elf_func *f = &syms->funcs[i];
        uint64_t start = f->addr - base, end = start + f->size;
        fprintf(out, "%016" PRIx64 " T %s\n", start, st__elf_name(syms, f));
        if (i + 1 == syms->nfuncs)
            fprintf(out, "%016" PRIx64 " ? __sym_end\n", end);
        else if (syms->funcs[i + 1].addr - base != end)
            fprintf(out, "%016" PRIx64 " ? __func_end\n", end);
    }
    return ferror(out) ? -EIO : (int)syms->nfuncs;
}
