/*
 * The loadable extension libsimpletrace_sqlite.so: the module "simpletrace"
 * for any SQLite that loads extensions (the sqlite3 shell's `.load`,
 * Python's Connection.load_extension()):
 *
 *     .load libsimpletrace_sqlite
 *     CREATE VIRTUAL TABLE rec USING simpletrace('app.trace');
 *     CREATE VIRTUAL TABLE jobs USING simpletrace('app.trace', table=job_done);
 *     CREATE VIRTUAL TABLE sp USING simpletrace('app.trace', table=spans, pair='submit:done@req');
 *
 * args.h lists the arguments. SQLite finds the entry point by the file's
 * name (sqlite3_ + "simpletracesqlite" + _init), so none need be named; it
 * is the library's only exported symbol (tests/abi/libsimpletrace_sqlite.symbols).
 */
#include "sql.h"

SQLITE_EXTENSION_INIT1

__attribute__((visibility("default"))) int sqlite3_simpletracesqlite_init(sqlite3 *db, char **pzErrMsg,
                                                                         const sqlite3_api_routines *pApi);

int sqlite3_simpletracesqlite_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi)
{
    SQLITE_EXTENSION_INIT2(pApi);
    int rc = st__sql_register_module(db);
    if (rc != SQLITE_OK && pzErrMsg)
        *pzErrMsg = sqlite3_mprintf("simpletrace: registering the module: %s", sqlite3_errstr(rc));
    return rc;
}
