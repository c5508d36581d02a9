/*
 * Replays every *.bin of the given directories (the shared QEMU and edge
 * fixtures, read in place) through the reader's fuzz entry point, so the
 * sanitizer builds see real traces take the fuzzed path.
 *
 * usage: replay_fixtures DIR...
 */
#include <dirent.h>

#include "rd_util.h"
#include "tap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    ok(d != NULL, "%s opens", dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 4 || strcmp(de->d_name + len - 4, ".bin"))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t size;
        char *data = tu_slurp(path, &size);
        ok(data != NULL, "%s read", de->d_name);
        if (data)
            LLVMFuzzerTestOneInput((const uint8_t *)data, size);
        free(data);
        n++;
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    int n = 0;
    for (int i = 1; i < argc; i++)
        n += replay_dir(argv[i]);
    ok(n > 0, "%d trace files replayed without a crash", n);
    return done_testing();
}
