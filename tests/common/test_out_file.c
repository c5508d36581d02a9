/*
 * A file put in place only when complete (src/common/out_file.h): nothing
 * at the path while it is written, the whole file after commit (replacing
 * an old one, mode from the umask), nothing left after discard, and the
 * error of a directory that cannot take it; a symbolic link replaced, its
 * target untouched; a pipe written as it is, not replaced (as /dev/null
 * must not be). Then st__out_is_input(): an
 * output that names an input by its path, another path, a hard link or a
 * link, a piece of a rotated input (the pieces named by the reader's rule,
 * which the command hands over), a file of an input directory, or a
 * directory output holding an input; and what is none of those.
 */
#include "tap.h"

#include <simpletrace/reader.h>

#include "out_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

static void put(const char *dir, const char *name)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    if ((f = fopen(path, "w"))) {
        fputs(name, f);
        fclose(f);
    }
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

/* The pieces' names as the reader finds them: the rule the command hands st__out_is_input(). */
static const struct st__out_pieces reader_pieces = {st_rotated_piece_name, st_rotated_piece_number};

/* st__out_is_input(out, out_dir, {in, pieces}) run in the current directory; msg gets its message. */
static bool clash(const char *out, bool out_dir, const char *in, bool pieces, char *msg, size_t len)
{
    struct st__out_input v[] = {{"-", NULL}, {NULL, NULL}, {in, pieces ? &reader_pieces : NULL}};

    msg[0] = '\0';
    return st__out_is_input(out, out_dir, v, 3, msg, len);
}

/* A link at the path is replaced; a FIFO there is written to and stays one. */
static void links_and_pipes(void)
{
    char dir[] = "/tmp/st-out-link-XXXXXX", link_path[256], target[256], fifo[256], text[64];
    struct st__out_file f;
    struct stat st;
    int rd = -1;

    if (!mkdtemp(dir))
        return;
    snprintf(target, sizeof target, "%s/target", dir);
    snprintf(link_path, sizeof link_path, "%s/link", dir);
    put(dir, "target");
    ok(symlink("target", link_path) == 0, "a symbolic link to another file");
    is_int(st__out_file_open(&f, link_path), 0, "open the link's path");
    ok(write(f.fd, "new", 3) == 3, "written");
    is_int(st__out_file_commit(&f), 0, "commit");
    slurp(link_path, text, sizeof text);
    ok(lstat(link_path, &st) == 0 && S_ISREG(st.st_mode) && !strcmp(text, "new"), "the link was replaced by the file");
    slurp(target, text, sizeof text);
    is_str(text, "target", "its target is untouched");

    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    ok(mkfifo(fifo, 0600) == 0 && (rd = open(fifo, O_RDONLY | O_NONBLOCK)) >= 0, "a FIFO, a reader on it");
    is_int(st__out_file_open(&f, fifo), 0, "open the FIFO");
    ok(f.tmp == NULL && write(f.fd, "piped", 5) == 5, "written to it directly, no temporary file");
    is_int(st__out_file_commit(&f), 0, "commit");
    ok(read(rd, text, sizeof text) == 5 && !memcmp(text, "piped", 5), "the reader got the bytes");
    ok(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO is still one (not renamed over)");
    is_int(entries(dir), 3, "nothing else was made");
    close(rd);
    nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void is_input(void)
{
    char dir[] = "/tmp/st-out-input-XXXXXX", cwd[512], msg[1024];

    if (!mkdtemp(dir) || !getcwd(cwd, sizeof cwd) || chdir(dir) != 0)
        return;
    put(".", "a");
    put(".", "b");
    put(".", "t");
    put(".", "t.1");
    put(".", "t.2");
    put(".", "t.0");
    put(".", "t.007");
    mkdir("d", 0700);
    put("d", "x");
    mkdir("o", 0700);
    mkdir("o/sub", 0700);
    put("o/sub", "in.trace");
    ok(link("a", "hard") == 0 && symlink("a", "sym") == 0 && link("t.1", "piece") == 0, "files, links, pieces made");

    ok(clash("a", false, "a", false, msg, sizeof msg), "the same path");
    is_str(msg, "output 'a' is the input 'a': refusing to overwrite an input", "the message names both");
    ok(clash("./a", false, "a", false, msg, sizeof msg) && strstr(msg, "'./a'") && strstr(msg, "the same file"),
       "another path to it: %s", msg);
    ok(clash("hard", false, "a", false, msg, sizeof msg), "a hard link to it");
    ok(clash("sym", false, "a", false, msg, sizeof msg), "a symbolic link to it (the name of the same file)");
    ok(clash("new", false, "new", false, msg, sizeof msg), "the same path, neither there yet");
    ok(!clash("b", false, "a", false, msg, sizeof msg) && !msg[0], "another file: no");
    ok(!clash("new", false, "a", false, msg, sizeof msg), "a file not there: no");
    ok(!clash("-", false, "a", false, msg, sizeof msg), "\"-\" (standard output): no");

    ok(clash("t.2", false, "t", true, msg, sizeof msg) && strstr(msg, "a piece of the input 't'"),
       "a piece of a rotated input: %s", msg);
    ok(clash("./piece", false, "t", true, msg, sizeof msg), "a hard link to a piece");
    ok(!clash("t.2", false, "t", false, msg, sizeof msg), "without its pieces read: no");
    ok(!clash("t.9", false, "t", true, msg, sizeof msg), "a piece not there: no");
    ok(!clash("a", false, "t", true, msg, sizeof msg), "another file beside the pieces: no");
    ok(!clash("t.0", false, "t", true, msg, sizeof msg) && !clash("t.007", false, "t", true, msg, sizeof msg),
       "t.0 and t.007, which no reader takes for pieces of t: no");

    ok(clash("d/x", false, "d", false, msg, sizeof msg) && strstr(msg, "in the input directory 'd'"),
       "a file of an input directory: %s", msg);
    ok(clash("./d/../d/x", false, "d", false, msg, sizeof msg), "the same, by another path");
    ok(!clash("d/new", false, "d", false, msg, sizeof msg), "a new file in an input directory: no");

    ok(clash("o", true, "o/sub/in.trace", false, msg, sizeof msg) &&
           strstr(msg, "output directory 'o' holds the input 'o/sub/in.trace'"),
       "a directory output holding an input: %s", msg);
    ok(clash("o/", true, "./o/sub/../sub/in.trace", false, msg, sizeof msg), "the same, by other paths");
    ok(!clash("o", false, "o/sub/in.trace", false, msg, sizeof msg), "a file output (o is no directory output): no");
    ok(!clash("d", true, "o/sub/in.trace", false, msg, sizeof msg), "a directory output not holding it: no");

    if (chdir(cwd) != 0)
        return;
    nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
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
    links_and_pipes();
    is_input();
    return done_testing();
}
