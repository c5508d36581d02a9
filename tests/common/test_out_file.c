/*
 * A file put in place only when complete (src/common/out_file.h): nothing
 * at the path while it is written, the whole file after commit (replacing
 * an old one, mode from the umask), nothing left after discard, and the
 * error of a directory that cannot take it.
 */
#include "tap.h"

#include "out_file.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Files in dir (".", ".." excluded). */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d)
        closedir(d);
    return n;
}

static void slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

int main(void)
{
    char dir[] = "/tmp/st-out-file-XXXXXX", path[256], text[64];
    struct st__out_file f;
    struct stat st;

    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof path, "%s/out.trace", dir);
    umask(022);
    FILE *old = fopen(path, "w");
    fputs("old", old);
    fclose(old);

    is_int(st__out_file_open(&f, path), 0, "open: a temporary file next to the path");
    ok(write(f.fd, "new", 3) == 3, "written");
    slurp(path, text, sizeof text);
    is_str(text, "old", "while it is written, the path holds the old file");
    is_int(entries(dir), 2, "the temporary file is in the same directory");
    is_int(st__out_file_commit(&f), 0, "commit");
    slurp(path, text, sizeof text);
    is_str(text, "new", "after commit, the path holds the new file");
    is_int(entries(dir), 1, "and nothing else is left");
    ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644, "mode 0666 less the umask (mkstemp's is 0600)");

    is_int(st__out_file_open(&f, path), 0, "open again");
    ok(write(f.fd, "partial", 7) == 7, "written in part");
    st__out_file_discard(&f);
    st__out_file_discard(&f);
    slurp(path, text, sizeof text);
    is_str(text, "new", "discard: the path keeps what it had");
    is_int(entries(dir), 1, "and the temporary file is gone (discarding twice is fine)");

    snprintf(path, sizeof path, "%s/missing/out.trace", dir);
    is_int(st__out_file_open(&f, path), -ENOENT, "a directory that does not exist: -ENOENT");
    ok(f.fd == -1 && !f.path && !f.tmp, "nothing held after a failed open");

    snprintf(path, sizeof path, "%s", dir);
    is_int(st__out_file_open(&f, path), -EISDIR, "a directory: -EISDIR at once, not at the rename");
    snprintf(path, sizeof path, "%s/out.trace", dir);
    unlink(path);
    rmdir(dir);
    return done_testing();
}
