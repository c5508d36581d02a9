/* `simpletrace sql` in a build without SQLite (-Dsql=disabled, a parent project's subproject, a cross build). */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "help_texts.h"

int st__cmd_sql(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) { /* what it would do, still */
        fputs(st__help_sql, stdout);
        return 0;
    }
    fputs("simpletrace sql: this simpletrace was built without SQLite (-Dsql=disabled, a subproject or a cross "
          "build): install libsqlite3-dev and build with -Dsql=enabled\n", stderr);
    return 2;
}
