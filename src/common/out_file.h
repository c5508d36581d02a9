/*
 * A file that appears at its path only once complete: written under a
 * temporary name next to it (same directory, so the rename is atomic) and
 * renamed into place at the end, or removed. Whoever reads the path sees
 * the old file or the whole new one, never a part; a failure leaves
 * nothing behind. A symbolic link at the path is replaced, its target
 * untouched, and the commit says so in one line on standard error. A path that already is something other than a regular file
 * or a directory (a device such as /dev/null, a pipe, /dev/stdout) is
 * written as it is, directly: a rename would replace that node itself.
 */
#ifndef ST_COMMON_OUT_FILE_H
#define ST_COMMON_OUT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct st__out_file {
    int fd;     /* the temporary file (or the device), open for writing; -1 once committed or discarded */
    char *path; /* where it goes (owned copy) */
    char *tmp;  /* its temporary name, ".BASE.XXXXXX" next to path (owned); NULL for a device */
    bool link;  /* path was a symbolic link when opened: the commit replaces it and says so */
};

/*
 * Creates the temporary file for path (mode as a new file would get, umask
 * applied), or opens the device path is. 0, -EISDIR (path is a directory)
 * or -errno.
 */
int st__out_file_open(struct st__out_file *f, const char *path);

/* Closes the file and renames it to its path (a link there replaced: one notice); on failure removes it. 0 or -errno. Frees f's names. */
int st__out_file_commit(struct st__out_file *f);

/* Closes and removes the temporary file (after st__out_file_open() only; twice is fine). Frees f's names. */
void st__out_file_discard(struct st__out_file *f);

/*
 * How a rotated trace's pieces are named (PATH, PATH.1, PATH.2, ...): a
 * format fact (src/format/piece_format.h), which common may not use, so
 * the caller hands it over; the command gives the reader's public
 * st_rotated_piece_name() and st_rotated_piece_number(), whose contracts
 * these are.
 */
struct st__out_pieces {
    int (*name)(char *buf, size_t len, const char *path, uint64_t k); /* piece k of path into buf: 0 or < 0 */
    uint64_t (*number)(const char *name, size_t *base_len); /* k >= 1 when name is piece k of its base, else 0 */
};

/* A file (or directory) a command reads, for st__out_is_input(). */
struct st__out_input {
    const char *path;                    /* NULL or "-" (standard input): no file, skipped */
    const struct st__out_pieces *pieces; /* a trace read with its rotated pieces (inputs too), named so; else NULL */
};

/*
 * Whether writing out would overwrite one of the inputs in[0..n), asked
 * before anything is written: out names an input (the same path, or the
 * same device and inode: another name for it, a hard link), one of its
 * pieces, or an existing file inside an input directory; with out_dir
 * (out is a directory the command fills and replaces), an input inside
 * out. True with a message naming both in msg (msglen bytes); "-"
 * (standard output) is never an input.
 */
bool st__out_is_input(const char *out, bool out_dir, const struct st__out_input *in, size_t n, char *msg,
                      size_t msglen);

#endif /* ST_COMMON_OUT_FILE_H */
