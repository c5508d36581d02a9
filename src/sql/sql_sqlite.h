/*
 * SQLite's API as this part sees it. The same sources are built twice: into
 * the `simpletrace` command, which links Debian's libsqlite3 and calls it
 * directly, and into the loadable extension (ST__SQL_EXTENSION), whose
 * every sqlite3_* call goes through the routines table the loading SQLite
 * hands to its entry point (sqlite3ext.h), so it works in whichever SQLite
 * loads it (the sqlite3 shell's, Python's) without linking one itself.
 */
#ifndef ST_SQL_SQLITE_H
#define ST_SQL_SQLITE_H

#ifdef ST__SQL_EXTENSION
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3
#else
#include <sqlite3.h>
#endif

#endif /* ST_SQL_SQLITE_H */
