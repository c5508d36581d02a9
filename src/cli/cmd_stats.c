/* simpletrace stats (placeholder until its part lands) */
#include <stdio.h>

#include "cli/commands.h"

int st_cmd_stats(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "simpletrace stats: not built yet\n");
    return 2;
}
