/* simpletrace gen (placeholder until its part lands) */
#include <stdio.h>

#include "cli/commands.h"

int st_cmd_gen(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "simpletrace gen: not built yet\n");
    return 2;
}
