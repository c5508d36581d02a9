/*
 * A file that appears at its path only once complete: written under a
 * temporary name next to it (same directory, so the rename is atomic) and
 * renamed into place at the end, or removed. Whoever reads the path sees
 * the old file or the whole new one, never a part; a failure leaves
 * nothing behind.
 */
#ifndef ST_COMMON_OUT_FILE_H
#define ST_COMMON_OUT_FILE_H

struct st__out_file {
    int fd;     /* the temporary file, open for writing; -1 once committed or discarded */
    char *path; /* where it goes (owned copy) */
    char *tmp;  /* its temporary name, ".BASE.XXXXXX" next to path (owned) */
};

/*
 * Creates the temporary file for path (mode as a new file would get, umask
 * applied). 0, -EISDIR (path is a directory) or -errno.
 */
int st__out_file_open(struct st__out_file *f, const char *path);

/* Closes the file and renames it to its path; on failure removes it. 0 or -errno. Frees f's names. */
int st__out_file_commit(struct st__out_file *f);

/* Closes and removes the temporary file (after st__out_file_open() only; twice is fine). Frees f's names. */
void st__out_file_discard(struct st__out_file *f);

#endif /* ST_COMMON_OUT_FILE_H */
