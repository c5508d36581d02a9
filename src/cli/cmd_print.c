/* simpletrace print (placeholder until its part lands) */
#include <stdio.h>

#include "cli/commands.h"

int st_cmd_print(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "simpletrace print: not built yet\n");
    return 2;
}
