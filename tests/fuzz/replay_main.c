/*
 * Runs a libFuzzer target over every file of a corpus directory, so the
 * corpus is replayed (under the sanitizers) in the ordinary test run.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "tap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    size_t got = buf ? fread(buf, 1, size, f) : 0;
    fclose(f);
    if (!buf || got != size) {
        free(buf);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, size);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS-DIR\n", argv[0]);
        return 2;
    }
    DIR *dir = opendir(argv[1]);
    ok(dir != NULL, "corpus %s opens", argv[1]);
    if (!dir)
        return done_testing();
    int files = 0, failures = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], de->d_name);
        if (replay_file(path) != 0)
            failures++;
        files++;
    }
    closedir(dir);
    ok(files > 0, "corpus has inputs (%d)", files);
    ok(failures == 0, "every input was read and replayed without a crash");
    return done_testing();
}
