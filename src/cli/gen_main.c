/*
 * `simpletrace gen` alone, compiled for the build machine in a cross build
 * (src/cli/meson.build): the generator a build runs while the target's
 * `simpletrace` cannot run there. Takes the same arguments as the command.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "gen"))
        return st__cmd_gen(argc - 1, argv + 1);
    fputs("simpletrace-gen-native: only `gen` (the build machine's generator of a cross build)\n", stderr);
    return 2;
}
