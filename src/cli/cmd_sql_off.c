/* `simpletrace sql` in a build without SQLite (-Dsql=disabled, or a parent project's subproject). */
#include <stdio.h>

#include "commands.h"

int st__cmd_sql(int argc, char **argv)
{
    (void)argc, (void)argv;
    fputs("simpletrace sql: this simpletrace was built without SQLite (-Dsql=disabled, or as a subproject): "
          "install libsqlite3-dev and build with -Dsql=enabled\n", stderr);
    return 2;
}
