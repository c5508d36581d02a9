/*
 * `<basename>.sym`: the symbol file uftrace reads for one mapped file, in
 * the format every uftrace version reads (0.13 ignores the sized format
 * of 0.14+):
 *
 *   line     := ADDR " " TYPE " " NAME "\n"     ADDR: 16 lowercase hex digits
 *   function := ADDR "T" NAME                   ADDR = st_value - map base (elfsym.h)
 *   end      := ADDR "?" "__func_end"           ends the function above it
 *             | ADDR "?" "__sym_end"            ends the last function
 *
 * Lines are sorted by address. uftrace sizes a function up to the next
 * line, so an end line follows every function whose end is not the next
 * function's start, and always the last one (without it the last function
 * has size 0 and never matches). No header lines: a `# path name:` that
 * differs from the map path would make uftrace ignore the file. The lines
 * themselves come from the shared writer (uftrace/uftrace_write.h); this
 * module turns an ELF's functions into them.
 */
#ifndef ST_FUNCTRACE_SYMFILE_H
#define ST_FUNCTRACE_SYMFILE_H

#include <stdint.h>
#include <stdio.h>

#include "elfsym.h"

/* Writes syms as a .sym file to out. Returns the number of functions, or
 * -EIO when a write failed. */
int st__symfile_write(FILE *out, const struct st__elf_syms *syms, uint64_t page_size);

#endif /* ST_FUNCTRACE_SYMFILE_H */
